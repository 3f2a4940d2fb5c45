#!/usr/bin/env bash
# gpu-check.sh — the one command that checks nnplug's CUDA backend on a machine with an NVIDIA
# GPU. Run it from the repository root. The documented way (docs/cuda-backend.md) builds on a
# machine with the toolkit and runs, with nothing compiled, on the GPU machine:
#
#   CUDA_ARCHS=90 scripts/gpu-check.sh --build-only   # toolkit machine: configure + build only
#   scripts/gpu-check.sh --prebuilt build-gpu         # GPU machine: run from that build's bin/ + lib/
#   scripts/gpu-check.sh                              # both on one machine (toolkit + GPU)
#   options: --build-dir DIR (default build-gpu), --out DIR, --cases LIST
#
# Steps: (1) probe: the plugin's load test must see device cuda:0 (prints it, or the plugin's
# reason, e.g. "cuDNN not found: ..."), and the reload test (load, nnp_shutdown, load again);
# (1b) nccl: one NCCL rank on cuda:0 (nnplug-nccl-one-rank: all_reduce, broadcast, all_gather in
# float32 and float16, exact results; skipped when the nccl plugin was not built);
# (2) nnplug-conformance --backend cuda --cases full --report OUT/conformance-cuda.json (fails if
# no cuda case ran); (3) nnplug-bench --backend cuda --json OUT/bench-cuda.json; (3b) train the
# mlp, the cnn and the vit on cuda:0, eagerly and with --graph (GPU_CHECK_EPOCHS, default 1; the
# JSON line of each into the summary; the build copies Fashion-MNIST from FASHION_MNIST_DIR, default
# /usr/share/datasets/fashion-mnist, into BUILD/data so that it travels with it); (4) if PyTorch
# with CUDA is importable: the PyTorch yardstick torch_ops.py --device cuda (from the folder
# $TORCH_BENCH_DIR names; skipped when unset) into OUT/torch-ops-cuda.json.
# The GPU machine needs only the NVIDIA driver, cuBLAS 13 and cuDNN 9 for CUDA 13 (the CUDA
# runtime is linked into the plugin), and NCCL 2 for the nccl step: cuDNN / cuBLAS / NCCL of a
# Python environment (site-packages/nvidia/{cudnn,cu13,cublas,nccl}/lib) are put on
# LD_LIBRARY_PATH when a python answers; the plugins also find them themselves
# (docs/cuda-backend.md, "Finding cuBLAS and cuDNN", "NCCL").
# Prints a summary; exits non-zero if any step failed.
#
# Environment: CUDA_ARCHS (CMAKE_CUDA_ARCHITECTURES, default "native"), OUT_DIR (default
# gpu-check-out), NNPLUG_JOBS (build parallelism, default nproc), PYTHON (default python3),
# GPU_CHECK_CASES (conformance case list, default full), NNPLUG_WITH_CPU (default OFF),
# TORCH_BENCH_DIR (folder of the PyTorch yardstick scripts, holding torch_ops.py; no default),
# FASHION_MNIST_DIR, GPU_CHECK_EPOCHS.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2

build_dir=build-gpu
prebuilt=""
build_only=0
out_dir=${OUT_DIR:-gpu-check-out}
cases=${GPU_CHECK_CASES:-full}
py=${PYTHON:-python3}
data_src=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
train_epochs=${GPU_CHECK_EPOCHS:-1}

usage() { sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --prebuilt) prebuilt=$2; build_dir=$2; shift 2 ;;
    --prebuilt=*) prebuilt=${1#*=}; build_dir=$prebuilt; shift ;;
    --build-only) build_only=1; shift ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --build-dir=*) build_dir=${1#*=}; shift ;;
    --out) out_dir=$2; shift 2 ;;
    --out=*) out_dir=${1#*=}; shift ;;
    --cases) cases=$2; shift 2 ;;
    --cases=*) cases=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
if [[ -n "$prebuilt" && $build_only -eq 1 ]]; then
  echo "gpu-check: --prebuilt and --build-only exclude each other" >&2
  exit 2
fi

declare -a summary=()
failed=0
record() {  # record NAME STATUS DETAIL
  summary+=("$(printf '%-14s %-5s %s' "$1" "$2" "$3")")
  [[ "$2" == "FAIL" ]] && failed=1
  return 0
}
phase() { echo; echo "=== gpu-check: $*"; }
print_summary() {
  echo
  echo "=== gpu-check summary${1:+ ($1)}"
  for line in "${summary[@]}"; do echo "  $line"; done
  if [[ $failed -ne 0 ]]; then
    echo "gpu-check: FAILED"
    exit 1
  fi
  echo "gpu-check: OK"
  exit 0
}

# ---- build (not with --prebuilt) ----------------------------------------------------------------
if [[ -z "$prebuilt" ]]; then
  phase "configure + build in $build_dir (CUDA architectures ${CUDA_ARCHS:-native})"
  jobs=${NNPLUG_JOBS:-$(nproc)}
  # NNPLUG_WERROR=OFF: another compiler's new warnings must not stop the check.
  if cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-native}" -DNNPLUG_WITH_CUDA=ON \
       -DNNPLUG_WITH_CPU="${NNPLUG_WITH_CPU:-OFF}" -DNNPLUG_BUILD_CONFORMANCE=ON \
       -DNNPLUG_BUILD_EXAMPLES=ON -DNNPLUG_WERROR=OFF &&
     cmake --build "$build_dir" -j"$jobs"; then
    record build PASS "$build_dir"
  else
    record build FAIL "configure or build failed in $build_dir"
  fi
  # The data set travels with the build (the GPU machine may have neither it nor a network).
  if [[ -d "$data_src" && ! -d "$build_dir/data/fashion-mnist" ]]; then
    mkdir -p "$build_dir/data/fashion-mnist" &&
      cp "$data_src"/*-ubyte.gz "$build_dir/data/fashion-mnist/" &&
      echo "data: Fashion-MNIST copied into $build_dir/data/fashion-mnist"
  fi
  if [[ $build_only -eq 1 ]]; then
    if [[ -f "$build_dir/lib/nnplug/plugins/libnnplug-cuda.so" ]]; then
      if [[ -f "$build_dir/lib/nnplug/plugins/libnnplug-comm-nccl.so" ]]; then
        echo "nccl plugin: built"
      else
        echo "nccl plugin: not built (nccl.h not found; the nccl step will be skipped)"
      fi
      echo "carry $build_dir/bin and $build_dir/lib to the GPU machine, then run there:"
      echo "  scripts/gpu-check.sh --prebuilt $build_dir"
    else
      record plugin FAIL "$build_dir/lib/nnplug/plugins/libnnplug-cuda.so was not built (nvcc found?)"
    fi
    print_summary "build only"
  fi
else
  phase "prebuilt: using $build_dir (nothing is compiled)"
  [[ -d "$build_dir/bin" && -d "$build_dir/lib" ]] ||
    { echo "gpu-check: $build_dir/bin and $build_dir/lib are needed" >&2; exit 2; }
fi
build_dir=$(cd "$build_dir" && pwd)
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)

# ---- environment -------------------------------------------------------------------------------
phase "environment"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
else
  echo "nvidia-smi not found"
fi
# The programs of a build made elsewhere carry that machine's absolute RUNPATH: find libnnplug
# through LD_LIBRARY_PATH (the plugins are found next to it, in lib/nnplug/plugins).
export LD_LIBRARY_PATH="$build_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
pylibs=""
for cand in "$py" python3 /usr/bin/python3; do
  command -v "$cand" >/dev/null 2>&1 || continue
  found=$("$cand" - <<'PYEOF' 2>/dev/null
import glob, os, site, sys
dirs = []
try:
    import nvidia
    dirs += [os.path.dirname(p) for p in nvidia.__path__]
except Exception:
    pass
try:
    dirs += site.getsitepackages()
except Exception:
    pass
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
seen = []
for d in dirs:
    for sub in ("cudnn", "cu13", "cublas", "nccl"):
        lib = os.path.realpath(os.path.join(d, "nvidia", sub, "lib"))
        if os.path.isdir(lib) and lib not in seen:
            seen.append(lib)
print(":".join(seen))
PYEOF
  )
  [[ -n "$found" ]] && pylibs="${pylibs:+$pylibs:}$found"
done
if [[ -n "$pylibs" ]]; then
  export LD_LIBRARY_PATH="$pylibs:$LD_LIBRARY_PATH"
  echo "LD_LIBRARY_PATH += $pylibs (cuDNN / cuBLAS / NCCL wheels)"
fi
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
plugin="$build_dir/lib/nnplug/plugins/libnnplug-cuda.so"
if [[ -f "$plugin" ]]; then
  echo "plugin: $plugin"
  # Only libc/libstdc++ are linked; cuBLAS and cuDNN are opened at run time (see the probe).
  for f in "$plugin" "$build_dir/lib/libnnplug.so" "$build_dir/bin/nnplug-conformance"; do
    [[ -f "$f" ]] || continue
    if ldd "$f" | grep -q "not found"; then
      ldd "$f"
      record libraries FAIL "$(basename "$f") has missing libraries (see ldd above)"
    fi
  done
else
  record plugin FAIL "$plugin not found (was the CUDA backend built?)"
fi

# ---- probe: is cuda:0 there? (tests/cuda_load_test.c: device props, a stream with TF32) ---------
phase "probe"
load_test="$build_dir/bin/nnplug-cuda-load-test"
have_device=0
if [[ -x "$load_test" && -f "$plugin" ]]; then
  load_out=$("$load_test" "$plugin" --print-log 2>&1)
  load_rc=$?
  echo "$load_out"
  if [[ $load_rc -eq 0 ]] && grep -q 'device(s); cuda:0 = ' <<<"$load_out"; then
    have_device=1
    record probe PASS "$(grep 'device(s); cuda:0 = ' <<<"$load_out" | head -n 1)"
  elif [[ $load_rc -eq 0 ]]; then
    record probe FAIL "$(grep '0 devices' <<<"$load_out" | head -n 1)"
  else
    record probe FAIL "$(tail -n 3 <<<"$load_out" | tr '\n' ' ')"
  fi
else
  record probe FAIL "$load_test not built"
fi
reload_test="$build_dir/bin/nnplug-cuda-reload-test"
if [[ -x "$reload_test" && -f "$plugin" ]]; then
  if reload_out=$("$reload_test" "$plugin" 2>&1); then
    record reload PASS "$(tail -n 2 <<<"$reload_out" | head -n 1)"
  else
    echo "$reload_out"
    record reload FAIL "$(tail -n 3 <<<"$reload_out" | tr '\n' ' ')"
  fi
else
  record reload SKIP "$reload_test not built"
fi

# ---- NCCL: one rank on cuda:0 (comm/nccl/tests/nccl_one_rank.cpp) --------------------------------
phase "nccl (one rank)"
nccl_plugin="$build_dir/lib/nnplug/plugins/libnnplug-comm-nccl.so"
nccl_test="$build_dir/bin/nnplug-nccl-one-rank"
if [[ ! -f "$nccl_plugin" ]]; then
  record nccl SKIP "libnnplug-comm-nccl.so was not built (no nccl.h where it was built)"
elif [[ ! -x "$nccl_test" ]]; then
  record nccl FAIL "$nccl_test not built"
elif [[ $have_device -ne 1 ]]; then
  record nccl SKIP "no cuda device (see the probe)"
else
  # NNPLUG_LOG=info: where the plugin found NCCL ("comm-nccl: NCCL from ...").
  nccl_out=$(NNPLUG_LOG=info "$nccl_test" 2>&1)
  nccl_rc=$?
  echo "$nccl_out" | tee "$out_dir/nccl-one-rank.log"
  if [[ $nccl_rc -eq 0 ]] && grep -qx 'PASS' <<<"$nccl_out"; then
    record nccl PASS "$(grep '^communicator: ' <<<"$nccl_out" | head -n 1)"
  else
    record nccl FAIL "$(tail -n 3 <<<"$nccl_out" | tr '\n' ' ')"
  fi
fi

# ---- conformance ---------------------------------------------------------------------------------
phase "conformance (cases $cases)"
conf_bin="$build_dir/bin/nnplug-conformance"
if [[ -x "$conf_bin" ]]; then
  if "$conf_bin" --backend cuda --cases "$cases" --report "$out_dir/conformance-cuda.json" \
       2>&1 | tee "$out_dir/conformance-cuda.log"; then
    # The runner succeeds when a backend has no device; a GPU check must not.
    counts=$(grep -E '^\[nnplug-conformance\] cuda:0: ' "$out_dir/conformance-cuda.log" |
               sed 's/^\[nnplug-conformance\] //' | tr '\n' ' ')
    if grep -q 'cuda: no device' "$out_dir/conformance-cuda.log" ||
       ! grep -qE 'cuda:0: [1-9][0-9]* passed' "$out_dir/conformance-cuda.log"; then
      record conformance FAIL "no cuda case ran: ${counts:-see $out_dir/conformance-cuda.log}"
    else
      record conformance PASS "${counts}-> $out_dir/conformance-cuda.json"
    fi
  else
    record conformance FAIL "see $out_dir/conformance-cuda.log and .json"
  fi
else
  record conformance FAIL "$conf_bin not found"
fi

# ---- benchmark ------------------------------------------------------------------------------------
phase "benchmark"
bench_bin="$build_dir/bin/nnplug-bench"
if [[ -x "$bench_bin" ]]; then
  if "$bench_bin" --backend cuda --json "$out_dir/bench-cuda.json" 2>&1 |
       tee "$out_dir/bench-cuda.log"; then
    record bench PASS "$out_dir/bench-cuda.json"
  else
    record bench FAIL "see $out_dir/bench-cuda.log"
  fi
else
  record bench FAIL "$bench_bin not found"
fi

# ---- training ------------------------------------------------------------------------------------
phase "train mlp, cnn, vit on cuda:0 ($train_epochs epoch(s) each)"
train_bin="$build_dir/bin/train"
data_dir=""
for d in "$build_dir/data/fashion-mnist" "$data_src"; do
  if [[ -f "$d/train-images-idx3-ubyte.gz" ]]; then data_dir=$d; break; fi
done
if [[ ! -x "$train_bin" ]]; then
  record train FAIL "$train_bin not found"
elif [[ -z "$data_dir" ]]; then
  record train SKIP "no Fashion-MNIST (FASHION_MNIST_DIR, or $build_dir/data/fashion-mnist from the build)"
else
  for model in mlp cnn vit; do
    # Eagerly, then with the step captured into a CUDA graph (train --graph, docs/graphs.md).
    for mode in eager graph; do
      flag=""
      [[ $mode == graph ]] && flag="--graph"
      log="$out_dir/train-$model-cuda-$mode.log"
      if "$train_bin" --model "$model" --backend cuda --epochs "$train_epochs" --data "$data_dir" \
           $flag 2>&1 | tee "$log"; then
        record "train $model $mode" PASS "$(tail -n 1 "$log")"
      else
        record "train $model $mode" FAIL "see $log"
      fi
    done
  done
fi

# ---- PyTorch yardstick ----------------------------------------------------------------------------
phase "PyTorch yardstick"
torch_ops=""
if [[ -n "${TORCH_BENCH_DIR:-}" && -f "$TORCH_BENCH_DIR/torch_ops.py" ]]; then
  torch_ops="$TORCH_BENCH_DIR/torch_ops.py"
fi
if [[ -z "$torch_ops" ]]; then
  record torch SKIP "torch_ops.py not found (set TORCH_BENCH_DIR to the yardstick scripts' folder)"
elif ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
       >/dev/null 2>&1; then
  record torch SKIP "PyTorch with CUDA is not importable by $py"
elif "$py" "$torch_ops" --device cuda 2>&1 | tee "$out_dir/torch-ops-cuda.log"; then
  tail -n 1 "$out_dir/torch-ops-cuda.log" >"$out_dir/torch-ops-cuda.json"
  record torch PASS "$out_dir/torch-ops-cuda.json"
else
  record torch FAIL "see $out_dir/torch-ops-cuda.log"
fi

print_summary "outputs in $out_dir"
