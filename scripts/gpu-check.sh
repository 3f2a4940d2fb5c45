#!/usr/bin/env bash
# gpu-check.sh — the one command that checks nnplug's CUDA backend on a machine with an NVIDIA
# GPU, sized for one short stretch of GPU time (docs/cuda-backend.md, "The GPU check"). It builds
# on a machine with the CUDA toolkit (no GPU needed) into ONE folder to carry, and runs from that
# folder, with nothing compiled, on the GPU machine:
#
#   CUDA_ARCHS=90 scripts/gpu-check.sh --build-only   # toolkit machine: build, then fill the
#                                                     # carry folder (default .device-carry)
#   scripts/gpu-check.sh --prebuilt .device-carry     # GPU machine: every step, from that folder
#   scripts/gpu-check.sh                              # both on one machine (toolkit + GPU)
#   options: --build-dir DIR (default build-gpu), --carry DIR, --out DIR (default gpu-check-out),
#            --cases LIST (default full), --bench (also the side-by-side PyTorch yardsticks),
#            --budget SECONDS (the steps' whole time, default 420)
#
# The carry folder holds bin/ and lib/ of the build (libnnplug, the plugins, the programs),
# share/nnplug/conformance (case lists and tolerances), data/fashion-mnist, python/ (the nnplug
# package, its op tests, the ONNX and PyTorch-bridge checks, the repository's PyTorch trainer
# torch_train.py) and bench/ (the PyTorch yardsticks
# from TORCH_BENCH_DIR, when set); --build-only fails if it is over 60 MiB.
#
# Steps (each under its own time limit, all within --budget; a step that ran nothing FAILS):
#   probe      the plugin's load test sees cuda:0 (else its reason), and load/shutdown/reload
#   nccl       one NCCL rank on cuda:0 (exact all_reduce, broadcast, all_gather)
#   conformance  nnplug-conformance --backend cuda --cases LIST: fails on any failed check, and
#              when no case ran or a case list is missing (the runner fails on that itself);
#              then the attention cases with cuDNN and each kernel forced, and the conv cases
#              (ci lists) with the few-tap forward left out (cuDNN's path)
#   python     the package's op tests and nnplug.torch-on-CUDA tests on cuda (pytest;
#              NNPLUG_TEST_BACKENDS=cuda, cuda required)
#   bench      nnplug-bench --backend cuda: unsupported rows are listed, failed rows fail
#   train      mlp, cnn, vit on cuda:0, eager and --graph, GPU_CHECK_EPOCHS epochs (default 2)
#   onnx       the six models of make_onnx_models.py on cuda:0 (scripts/bench/onnx_gpu_rows.py):
#              outputs within rtol 1e-3 / atol 1e-4 of PyTorch on the GPU and of onnxruntime,
#              top-1 equal on 64 inputs; latency at batch 32 beside PyTorch eager
#   twins      scripts/torch_twins_check.py --device cuda: a model with nnplug.torch twins trains
#              on CUDA tensors to the unswapped model's losses (50 steps, within 1e-3)
#   yardstick  (--bench) the same models and ops in PyTorch on the same GPU, FP32 and TF32, and
#              the models in bfloat16 mixed precision (train --precision bfloat16 against
#              scripts/bench/torch_train.py --precision bfloat16, PyTorch's autocast)
# Writes OUT/summary.txt (one line per step, the versions of GPU, driver, CUDA, cuBLAS, cuDNN and
# PyTorch) and every step's log in OUT; exits non-zero if any step failed.
#
# Environment: CUDA_ARCHS (CMAKE_CUDA_ARCHITECTURES, default "native"), NNPLUG_JOBS (build
# parallelism, default nproc), PYTHON (default python3), FASHION_MNIST_DIR (default
# /usr/share/datasets/fashion-mnist), TORCH_BENCH_DIR (the yardstick scripts: torch_ops.py,
# torch_fashion_mnist.py and their helpers), GPU_CHECK_EPOCHS, NNPLUG_WERROR (default OFF).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2

build_dir=build-gpu
carry_dir=.device-carry
prebuilt=""
build_only=0
bench=0
budget=420
out_dir=gpu-check-out
cases=full
py=${PYTHON:-python3}
data_src=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
train_epochs=${GPU_CHECK_EPOCHS:-2}

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
need_value() { [[ $# -ge 2 ]] || { echo "gpu-check: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --prebuilt) need_value "$@"; prebuilt=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --build-dir) need_value "$@"; build_dir=$2; shift 2 ;;
    --carry) need_value "$@"; carry_dir=$2; shift 2 ;;
    --out) need_value "$@"; out_dir=$2; shift 2 ;;
    --cases) need_value "$@"; cases=$2; shift 2 ;;
    --bench) bench=1; shift ;;
    --budget) need_value "$@"; budget=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
if [[ -n "$prebuilt" && $build_only -eq 1 ]]; then
  echo "gpu-check: --prebuilt and --build-only exclude each other" >&2
  exit 2
fi
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "gpu-check: --budget takes seconds" >&2; exit 2; }

declare -a summary=()
failed=0
step_t0=$(date +%s)
record() {  # record NAME STATUS DETAIL (with the seconds since the previous record)
  local now
  now=$(date +%s)
  summary+=("$(printf '%-16s %-5s %4ss  %s' "$1" "$2" "$((now - step_t0))" "$3")")
  step_t0=$now
  [[ "$2" == "FAIL" ]] && failed=1
  return 0
}
phase() { echo; echo "=== gpu-check: $*"; }
summary_file=""
print_summary() {
  {
    echo "=== gpu-check summary${1:+ ($1)}"
    for line in "${summary[@]}"; do echo "  $line"; done
    if [[ $failed -ne 0 ]]; then echo "gpu-check: FAILED"; else echo "gpu-check: OK"; fi
  } | if [[ -n "$summary_file" ]]; then tee -a "$summary_file"; else cat; fi
  exit $((failed != 0))
}

# ---- build and carry folder (not with --prebuilt) -----------------------------------------------
if [[ -z "$prebuilt" ]]; then
  phase "configure + build in $build_dir (CUDA architectures ${CUDA_ARCHS:-native})"
  jobs=${NNPLUG_JOBS:-$(nproc)}
  # NNPLUG_WERROR=OFF by default: another compiler's new warnings must not stop the check.
  if cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-native}" -DNNPLUG_WITH_CUDA=ON \
       -DNNPLUG_WITH_CPU=OFF -DNNPLUG_BUILD_CONFORMANCE=ON -DNNPLUG_BUILD_EXAMPLES=ON \
       -DNNPLUG_WERROR="${NNPLUG_WERROR:-OFF}" &&
     cmake --build "$build_dir" -j"$jobs"; then
    record build PASS "$build_dir"
  else
    record build FAIL "configure or build failed in $build_dir"
    print_summary "build"
  fi
  [[ -f "$build_dir/lib/nnplug/plugins/libnnplug-cuda.so" ]] ||
    { record plugin FAIL "libnnplug-cuda.so was not built (nvcc found?)"; print_summary "build"; }
  phase "carry folder $carry_dir"
  rm -rf "$carry_dir"
  mkdir -p "$carry_dir/share/nnplug" "$carry_dir/data" "$carry_dir/python"
  cp -a "$build_dir/bin" "$build_dir/lib" "$carry_dir/" &&
    cp -a "$build_dir/share/nnplug/conformance" "$carry_dir/share/nnplug/" &&
    cp -a api/python/nnplug api/python/tests scripts/torch_gpu_rows.py \
      scripts/make_onnx_models.py scripts/torch_twins_check.py "$carry_dir/python/" &&
    mkdir -p "$carry_dir/python/bench" &&
    cp -a scripts/bench/torch_models.py scripts/bench/onnx_gpu_rows.py \
      scripts/bench/torch_train.py scripts/bench/fashion_mnist.py "$carry_dir/python/bench/" ||
    { record carry FAIL "copying the build into $carry_dir failed"; print_summary "build"; }
  rm -rf "$carry_dir/python/tests/__pycache__" "$carry_dir/python/nnplug/__pycache__"
  if [[ -f "$data_src/train-images-idx3-ubyte.gz" ]]; then
    mkdir -p "$carry_dir/data/fashion-mnist" &&
      cp "$data_src"/*-ubyte.gz "$carry_dir/data/fashion-mnist/"
  else
    echo "gpu-check: no Fashion-MNIST in $data_src: the train step will fail there" >&2
  fi
  if [[ -n "${TORCH_BENCH_DIR:-}" && -f "$TORCH_BENCH_DIR/torch_ops.py" ]]; then
    mkdir -p "$carry_dir/bench" && cp "$TORCH_BENCH_DIR"/*.py "$carry_dir/bench/"
  fi
  git rev-parse HEAD >"$carry_dir/COMMIT" 2>/dev/null || echo unknown >"$carry_dir/COMMIT"
  size_kib=$(du -sk "$carry_dir" | cut -f1)
  if [[ $size_kib -gt $((60 * 1024)) ]]; then
    record carry FAIL "$carry_dir is $((size_kib / 1024)) MiB, over 60 MiB"
  else
    record carry PASS "$carry_dir: $((size_kib / 1024)) MiB (commit $(cat "$carry_dir/COMMIT"))"
  fi
  if [[ $build_only -eq 1 ]]; then
    echo "carry $carry_dir to the GPU machine and run there: scripts/gpu-check.sh --prebuilt $carry_dir"
    print_summary "build only"
  fi
  prebuilt=$carry_dir
fi

dir=$(cd "$prebuilt" 2>/dev/null && pwd) ||
  { echo "gpu-check: $prebuilt not found" >&2; exit 2; }
[[ -d "$dir/bin" && -d "$dir/lib" ]] ||
  { echo "gpu-check: $dir/bin and $dir/lib are needed (a folder of --build-only)" >&2; exit 2; }
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
summary_file="$out_dir/summary.txt"
: >"$summary_file"
start=$(date +%s)
deadline=$((start + budget))
# limit CAP: seconds a step may take, at most what is left of the budget (at least 1).
limit() {
  local left=$((deadline - $(date +%s)))
  [[ $left -lt 1 ]] && left=1
  echo $(($1 < left ? $1 : left))
}
left() { echo $((deadline - $(date +%s))); }
# run_step LOG CAP CMD...: runs CMD under `timeout`, output to LOG and the terminal; returns its
# status (124: out of time).
run_step() {
  local log=$1 cap
  cap=$(limit "$2")
  shift 2
  timeout --kill-after=10 "$cap" "$@" 2>&1 | tee "$log"
  return "${PIPESTATUS[0]}"
}
timed_out() { [[ $1 -eq 124 || $1 -eq 137 ]]; }
# record_result NAME RC LOG LINE_RE COUNT_RE: the last line of LOG that matches LINE_RE is the
# step's detail; NAME passes when RC is 0 and that line matches COUNT_RE (a nonzero count).
record_result() {
  local name=$1 rc=$2 log=$3 line
  line=$(grep -E "$4" "$log" | tail -n 1)
  if [[ $rc -eq 0 ]] && grep -qE "$5" <<<"$line"; then
    record "$name" PASS "$line"
  else
    record "$name" FAIL "${line:-rc $rc, see $(basename "$log")}"
  fi
}

# ---- environment -------------------------------------------------------------------------------
phase "environment"
{
  echo "commit: $(cat "$dir/COMMIT" 2>/dev/null || echo unknown)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)"
    echo "cuda (driver): $(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -n 1)"
  else
    echo "gpu: nvidia-smi not found"
  fi
} | tee -a "$summary_file"
# The programs of a build made elsewhere carry that machine's absolute RUNPATH: find libnnplug
# through LD_LIBRARY_PATH (the plugins are found next to it, in lib/nnplug/plugins).
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# cuDNN / cuBLAS / NCCL of a Python environment (site-packages/nvidia/*/lib): the plugins find
# them themselves (docs/cuda-backend.md); the versions go into the summary.
"$py" - <<'PYEOF' 2>/dev/null | tee -a "$summary_file"
import importlib.metadata as md
for name in ("torch", "nvidia-cublas", "nvidia-cudnn-cu13", "nvidia-nccl-cu13", "numpy", "onnxruntime"):
    try:
        print(f"{name}: {md.version(name)}")
    except Exception:
        pass
try:
    import torch
    print(f"torch cuda {torch.version.cuda}, cudnn {torch.backends.cudnn.version()}, "
          f"device {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none'}")
except Exception as e:
    print(f"torch: not importable ({e.__class__.__name__})")
PYEOF
plugin="$dir/lib/nnplug/plugins/libnnplug-cuda.so"
bin="$dir/bin"

# ---- probe: is cuda:0 there? (tests/cuda_load_test.c: device props, a stream with TF32) ---------
phase "probe"
have_device=0
if [[ -x "$bin/nnplug-cuda-load-test" && -f "$plugin" ]]; then
  run_step "$out_dir/probe.log" 60 env NNPLUG_LOG=info "$bin/nnplug-cuda-load-test" "$plugin" --print-log
  rc=$?
  if [[ $rc -eq 0 ]] && grep -q 'device(s); cuda:0 = ' "$out_dir/probe.log"; then
    have_device=1
    record probe PASS "$(grep 'device(s); cuda:0 = ' "$out_dir/probe.log" | head -n 1)"
    grep -E 'cuBLAS from|cuDNN from|cuBLAS [0-9]|cuDNN [0-9]' "$out_dir/probe.log" |
      sed 's/^/  /' >>"$summary_file"
  else
    record probe FAIL "$(tail -n 3 "$out_dir/probe.log" | tr '\n' ' ')"
  fi
else
  record probe FAIL "$bin/nnplug-cuda-load-test or $plugin missing"
fi
if [[ -x "$bin/nnplug-cuda-reload-test" ]]; then
  if run_step "$out_dir/reload.log" 60 "$bin/nnplug-cuda-reload-test" "$plugin"; then
    record reload PASS "$(tail -n 2 "$out_dir/reload.log" | head -n 1)"
  else
    record reload FAIL "$(tail -n 3 "$out_dir/reload.log" | tr '\n' ' ')"
  fi
else
  record reload FAIL "$bin/nnplug-cuda-reload-test missing"
fi
if [[ $have_device -ne 1 ]]; then
  record cuda FAIL "no cuda device: nothing else can run"
  print_summary "outputs in $out_dir"
fi

# ---- NCCL: one rank on cuda:0 (comm/nccl/tests/nccl_one_rank.cpp) --------------------------------
phase "nccl (one rank)"
if [[ ! -f "$dir/lib/nnplug/plugins/libnnplug-comm-nccl.so" ]]; then
  record nccl SKIP "libnnplug-comm-nccl.so was not built (no nccl.h where it was built)"
elif run_step "$out_dir/nccl.log" 60 env NNPLUG_LOG=info "$bin/nnplug-nccl-one-rank" &&
     grep -qx 'PASS' "$out_dir/nccl.log"; then
  record nccl PASS "$(grep '^communicator: ' "$out_dir/nccl.log" | head -n 1)"
else
  record nccl FAIL "$(tail -n 3 "$out_dir/nccl.log" | tr '\n' ' ')"
fi

# ---- conformance ---------------------------------------------------------------------------------
phase "conformance (cases $cases)"
export NNPLUG_CONFORMANCE_DATA="$dir/share/nnplug/conformance"
run_step "$out_dir/conformance.log" 200 "$bin/nnplug-conformance" --backend cuda --cases "$cases" \
  --report "$out_dir/conformance-cuda.json"
rc=$?
counts=$(grep -E '^\[nnplug-conformance\] cuda:0: ' "$out_dir/conformance.log" | tail -n 1 |
           sed 's/^\[nnplug-conformance\] //')
if timed_out $rc; then
  record conformance FAIL "out of time ($(limit 200) s) ${counts}"
elif ! grep -qE 'cuda:0: [1-9][0-9]* passed' <<<"$counts"; then
  record conformance FAIL "no cuda case ran: ${counts:-see conformance.log}"
elif [[ $rc -ne 0 ]]; then
  record conformance FAIL "$counts (re-run lines in conformance.log)"
else
  record conformance PASS "$counts"
fi

# The attention cases once more with each other path forced wherever it runs (the default
# leaves short sequences to the short-sequence kernels, long ones to the tiled kernels, and
# 16-bit calls to cuDNN's fused attention where it takes them), so every path meets every case
# it can take: with an own kernel forced, 16-bit calls run it on float32 copies; with cuDNN
# forced, what cuDNN refuses is UNSUPPORTED (and float32 is). Then the convolution cases with the
# few-tap forward left out, so cuDNN's path meets the few-channel cases too.
for path in "attention cudnn" "attention tiled" "attention mma" "attention rows" "conv cudnn"; do
  [[ $(left) -gt 60 ]] || break
  case "$path" in
    "attention cudnn") setting=NNPLUG_CUDA_ATTENTION_KERNEL=cudnn; filter='*attention*' ;;
    "attention tiled") setting=NNPLUG_CUDA_ATTENTION_KERNEL=tiled; filter='*attention*' ;;
    "attention mma") setting=NNPLUG_CUDA_ATTENTION_KERNEL=mma; filter='*attention*' ;;
    "attention rows") setting=NNPLUG_CUDA_ATTENTION_KERNEL=rows; filter='*attention*' ;;
    *) setting=NNPLUG_CUDA_CONV_SMALL=0; filter='*conv*' ;;
  esac
  log="$out_dir/conformance-${path// /-}.log"
  # cuDNN measures its algorithms for every new shape: the ci lists keep that step short.
  list=$cases
  [[ $path == "conv cudnn" ]] && list=ci
  run_step "$log" 90 env "$setting" \
    "$bin/nnplug-conformance" --backend cuda --cases "$list" -tc="$filter"
  rc=$?
  counts=$(grep -E '^\[nnplug-conformance\] cuda:0: ' "$log" | tail -n 1 |
             sed 's/^\[nnplug-conformance\] //')
  if [[ $rc -eq 0 ]] && grep -qE 'cuda:0: [1-9][0-9]* passed' <<<"$counts"; then
    record "$path" PASS "$counts"
  else
    record "$path" FAIL "rc $rc: ${counts:-see $log}"
  fi
done

# ---- the Python package's op tests on cuda -------------------------------------------------------
phase "python op tests on cuda"
if [[ -d "$dir/python/tests" ]]; then
  run_step "$out_dir/python.log" 90 env NNPLUG_LIBRARY="$dir/lib/libnnplug.so.0" \
    PYTHONPATH="$dir/python" NNPLUG_TEST_BACKENDS=cuda NNPLUG_TEST_REQUIRE=cuda \
    "$py" -m pytest -q -p no:cacheprovider -rs "$dir/python/tests/test_ops.py" \
    "$dir/python/tests/test_torch_cuda.py" -k "not twins"
  record_result python $? "$out_dir/python.log" '[0-9]+ (passed|failed)' '[1-9][0-9]* passed'
else
  record python FAIL "$dir/python/tests missing"
fi

# ---- benchmark ------------------------------------------------------------------------------------
phase "benchmark"
run_step "$out_dir/bench.log" 60 "$bin/nnplug-bench" --backend cuda --reps 10 \
  --json "$out_dir/bench-cuda.json"
record_result bench $? "$out_dir/bench.log" '^nnplug-bench: [0-9]+ rows measured' \
  ' [1-9][0-9]* rows measured'

# ---- training ------------------------------------------------------------------------------------
phase "train mlp, cnn, vit on cuda:0 ($train_epochs epochs each, eager and --graph)"
data_dir="$dir/data/fashion-mnist"
train_json() { grep '^{"model"' "$1" | tail -n 1; }
if [[ ! -f "$data_dir/train-images-idx3-ubyte.gz" ]]; then
  record train FAIL "no Fashion-MNIST in $data_dir"
else
  for model in mlp cnn vit; do
    for mode in eager graph; do
      flag=()
      [[ $mode == graph ]] && flag=(--graph)
      log="$out_dir/train-$model-$mode.log"
      run_step "$log" 40 "$bin/train" --model "$model" --backend cuda --epochs "$train_epochs" \
        --data "$data_dir" "${flag[@]}"
      rc=$?
      if [[ $rc -eq 0 && -n "$(train_json "$log")" ]]; then
        record "train $model $mode" PASS "$(train_json "$log")"
      else
        record "train $model $mode" FAIL "rc $rc: $(tail -n 2 "$log" | tr '\n' ' ')"
      fi
    done
  done
fi

# ---- ONNX models and the PyTorch bridge on cuda:0 (Python, PyTorch on the same GPU) -------------
py_env=(env NNPLUG_LIBRARY="$dir/lib/libnnplug.so.0" PYTHONPATH="$dir/python" PYTHONUNBUFFERED=1)
phase "onnx: the six models of make_onnx_models.py on cuda:0 against PyTorch and onnxruntime"
if [[ -f "$dir/python/bench/onnx_gpu_rows.py" ]]; then
  run_step "$out_dir/onnx.log" 180 "${py_env[@]}" "$py" "$dir/python/bench/onnx_gpu_rows.py" \
    --device cuda:0 --min-time 0.5 --json "$out_dir/onnx-cuda.json"
  rc=$?
  n_ok=$(grep -cE '^[a-z0-9_]+: ok ' "$out_dir/onnx.log")
  if [[ $rc -eq 0 && $n_ok -eq 6 ]]; then
    record onnx PASS "6 models within rtol 1e-3 / atol 1e-4 of PyTorch (and onnxruntime), top-1 equal"
  else
    record onnx FAIL "rc $rc, $n_ok of 6 models ok: $(grep -E '^[a-z0-9_]+: (MISMATCH|refused)' "$out_dir/onnx.log" | cut -c1-120 | tr '\n' ' ')"
  fi
else
  record onnx FAIL "$dir/python/bench/onnx_gpu_rows.py missing"
fi
phase "nnplug.torch twins training on CUDA tensors (50 steps against the unswapped model)"
if [[ -f "$dir/python/torch_twins_check.py" ]]; then
  run_step "$out_dir/twins.log" 90 "${py_env[@]}" "$py" "$dir/python/torch_twins_check.py" \
    --device cuda --steps 50
  rc=$?
  if [[ $rc -eq 0 ]] && grep -q '^{' "$out_dir/twins.log"; then
    record twins PASS "$(grep '^{' "$out_dir/twins.log" | tail -n 1)"
  else
    record twins FAIL "rc $rc: $(tail -n 3 "$out_dir/twins.log" | tr '\n' ' ')"
  fi
else
  record twins FAIL "$dir/python/torch_twins_check.py missing"
fi

# ---- PyTorch yardsticks, side by side (--bench) --------------------------------------------------
if [[ $bench -eq 1 ]]; then
  phase "yardsticks: nnplug and PyTorch on the same GPU (left: $(left) s)"
  tb="$dir/bench"
  if [[ ! -f "$tb/torch_ops.py" ]] || ! "$py" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())'; then
    record yardstick FAIL "no $tb/torch_ops.py, or no PyTorch with CUDA for $py"
  else
    ys="$out_dir/yardstick.txt"
    : >"$ys"
    # yard NAME CAP CMD...: one measurement; its last line (a JSON object) into yardstick.txt.
    yard() {
      local name=$1 cap=$2
      shift 2
      if [[ $(left) -lt 15 ]]; then
        echo "$name SKIP out of time" >>"$ys"
        return
      fi
      run_step "$out_dir/y-$name.log" "$cap" "$@" >/dev/null
      echo "$name $(grep '^{' "$out_dir/y-$name.log" | tail -n 1)" >>"$ys"
    }
    tfm=(--data-dir "$data_dir" --device cuda --epochs 2)
    # In order of what the comparison needs most; what no longer fits the budget is skipped.
    for model in mlp cnn vit; do
      yard "torch-$model-graph-fp32" 40 "$py" "$tb/torch_fashion_mnist.py" --model "$model" \
        "${tfm[@]}" --cuda-graph --no-tf32
    done
    for model in cnn vit; do
      yard "nnplug-$model-b1024" 40 "$bin/train" --model "$model" --backend cuda --epochs 2 \
        --batch 1024 --data "$data_dir"
      yard "torch-$model-b1024-fp32" 40 "$py" "$tb/torch_fashion_mnist.py" --model "$model" \
        "${tfm[@]}" --batch 1024 --no-tf32
    done
    # PyTorch's GEMM, attention and layer-norm rows, and the attention rows on the tensor-core
    # kernels (NNPLUG_CUDA_ATTENTION_KERNEL=mma, not the default until measured) beside them.
    [[ -f "$dir/python/torch_gpu_rows.py" ]] &&
      yard "torch-gpu-rows" 60 "$py" "$dir/python/torch_gpu_rows.py"
    yard "nnplug-bench-attention-mma" 40 env NNPLUG_CUDA_ATTENTION_KERNEL=mma \
      "$bin/nnplug-bench" --backend cuda --reps 10 --filter attention
    # Mixed precision (train --precision bfloat16) against PyTorch's autocast in bfloat16
    # (scripts/bench/torch_train.py): batch 128 with graphs on both sides, and batch 1024 eager.
    tt=(--data "$data_dir" --device cuda --epochs 2 --precision bfloat16 --no-tf32)
    if [[ -f "$dir/python/bench/torch_train.py" ]]; then
      for model in mlp cnn vit; do
        yard "nnplug-$model-graph-bf16" 40 "$bin/train" --model "$model" --backend cuda \
          --epochs 2 --data "$data_dir" --graph --precision bfloat16
        yard "torch-$model-graph-bf16" 40 "$py" "$dir/python/bench/torch_train.py" \
          --model "$model" "${tt[@]}" --cuda-graph
      done
      for model in cnn vit; do
        yard "nnplug-$model-b1024-bf16" 40 "$bin/train" --model "$model" --backend cuda \
          --epochs 2 --batch 1024 --data "$data_dir" --precision bfloat16
        yard "torch-$model-b1024-bf16" 40 "$py" "$dir/python/bench/torch_train.py" \
          --model "$model" "${tt[@]}" --batch 1024
      done
    fi
    # The ONNX models converted to float16 against PyTorch in float16 (the vits' layer norms in
    # float16 with float32 statistics, ABI 1.10).
    [[ -f "$dir/python/bench/onnx_gpu_rows.py" ]] &&
      yard "onnx-f16" 90 "${py_env[@]}" "$py" "$dir/python/bench/onnx_gpu_rows.py" --float16 \
        --device cuda:0 --min-time 0.5
    # The linear layers' bias in cuBLASLt's epilogue against a broadcast kernel and beta = 1.
    yard "nnplug-vit-graph-nolt" 40 env NNPLUG_CUDA_GEMM_LT=0 "$bin/train" \
      --model vit --backend cuda --epochs 2 --data "$data_dir" --graph
    # The few-tap convolution forward against cuDNN + bias + clip passes, in the same run.
    yard "nnplug-bench-conv-nosmall" 30 env NNPLUG_CUDA_CONV_SMALL=0 \
      "$bin/nnplug-bench" --backend cuda --reps 10 --filter conv
    yard "nnplug-cnn-graph-nosmall" 40 env NNPLUG_CUDA_CONV_SMALL=0 "$bin/train" \
      --model cnn --backend cuda --epochs 2 --data "$data_dir" --graph
    # What the convolutions' non-finite guard costs: the same rows and the cnn without it.
    yard "nnplug-bench-conv-noguard" 30 env NNPLUG_CUDA_CONV_NONFINITE_GUARD=0 \
      "$bin/nnplug-bench" --backend cuda --reps 10 --filter conv
    yard "nnplug-cnn-graph-noguard" 40 env NNPLUG_CUDA_CONV_NONFINITE_GUARD=0 "$bin/train" \
      --model cnn --backend cuda --epochs 2 --data "$data_dir" --graph
    yard "torch-cnn-graph-tf32" 40 "$py" "$tb/torch_fashion_mnist.py" --model cnn "${tfm[@]}" \
      --cuda-graph
    yard "nnplug-cnn-graph-tf32" 40 "$bin/train" --model cnn --backend cuda --epochs 2 \
      --data "$data_dir" --graph --tf32
    # The attention rows with the per-row kernels forced, and with the tiled kernels wherever
    # they run (the vit's T = 17 too); the vit with the per-row kernels (the short-sequence
    # kernels' predecessor at T = 17).
    yard "nnplug-bench-attention-rows" 40 env NNPLUG_CUDA_ATTENTION_KERNEL=rows \
      "$bin/nnplug-bench" --backend cuda --reps 10 --filter attention
    yard "nnplug-bench-attention-tiled" 40 env NNPLUG_CUDA_ATTENTION_KERNEL=tiled \
      "$bin/nnplug-bench" --backend cuda --reps 10 --filter attention
    yard "nnplug-vit-graph-attention-rows" 40 env NNPLUG_CUDA_ATTENTION_KERNEL=rows \
      "$bin/train" --model vit --backend cuda --epochs 2 --data "$data_dir" --graph
    yard "nnplug-bench-large" 60 "$bin/nnplug-bench" --backend cuda --set large --reps 10
    yard "torch-ops-fp32" 40 "$py" "$tb/torch_ops.py" --device cuda --no-tf32
    yard "torch-ops-tf32" 40 "$py" "$tb/torch_ops.py" --device cuda
    for model in mlp cnn vit; do
      yard "torch-$model-eager-fp32" 40 "$py" "$tb/torch_fashion_mnist.py" --model "$model" \
        "${tfm[@]}" --no-tf32
    done
    # Where the GPU time of a training step goes: each kernel's duration (Nsight Compute), over
    # a window of launches after the first steps, eager, batch 128.
    if command -v ncu >/dev/null 2>&1; then
      for model in vit cnn; do
        [[ $(left) -lt 30 ]] && { echo "ncu-$model SKIP out of time" >>"$ys"; continue; }
        run_step "$out_dir/ncu-$model.csv" 35 ncu --csv --metrics gpu__time_duration.sum \
          --launch-skip 400 --launch-count 400 --print-summary per-kernel "$bin/train" \
          --model "$model" --backend cuda --epochs 1 --limit 2560 --test-limit 256 \
          --data "$data_dir" >/dev/null
        echo "ncu-$model rc $?" >>"$ys"
      done
    fi
    record yardstick PASS "$(grep -vc 'SKIP' "$ys") measurements, $(grep -c 'SKIP' "$ys") skipped -> yardstick.txt"
  fi
fi

echo "elapsed: $(($(date +%s) - start)) s of a $budget s budget" | tee -a "$summary_file"
print_summary "outputs in $out_dir"
