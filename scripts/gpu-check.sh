#!/usr/bin/env bash
# gpu-check.sh — the one command that checks nnplug's CUDA backend on a machine with an NVIDIA
# GPU. Run it from the repository root:
#
#   scripts/gpu-check.sh                      # configure + build (Release) in build-gpu, then run
#   scripts/gpu-check.sh --prebuilt DIR       # skip configure/build: run from an existing build
#   scripts/gpu-check.sh --build-dir DIR --out DIR
#
# Steps: (1) probe: libnnplug must find device cuda:0 (prints it, or the plugin's reason), and
# the plugin's own load test; (2) nnplug-conformance --backend cuda --cases full
# --report OUT/conformance-cuda.json (fails if no cuda case ran); (3) nnplug-bench --backend cuda --json OUT/bench-cuda.json;
# (4) if PyTorch with CUDA is importable: the PyTorch yardstick torch_ops.py --device cuda
#     (from the folder $TORCH_BENCH_DIR names; skipped when unset) into OUT/torch-ops-cuda.json.
# cuDNN / cuBLAS shipped in a Python environment (site-packages/nvidia/*/lib) are put on
# LD_LIBRARY_PATH when present. Prints a summary; exits non-zero if any step failed.
#
# Environment: CUDA_ARCHS (CMAKE_CUDA_ARCHITECTURES, default "native"), OUT_DIR (default
# gpu-check-out), NNPLUG_JOBS (build parallelism, default nproc), PYTHON (default python3),
# GPU_CHECK_CASES (conformance case list, default full), NNPLUG_WITH_CPU (default OFF),
# TORCH_BENCH_DIR (folder of the PyTorch yardstick scripts, holding torch_ops.py; no default).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2

build_dir=build-gpu
prebuilt=""
out_dir=${OUT_DIR:-gpu-check-out}
cases=${GPU_CHECK_CASES:-full}
py=${PYTHON:-python3}

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --prebuilt) prebuilt=$2; build_dir=$2; shift 2 ;;
    --prebuilt=*) prebuilt=${1#*=}; build_dir=$prebuilt; shift ;;
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
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)

declare -a summary=()
failed=0
record() {  # record NAME STATUS DETAIL
  summary+=("$(printf '%-14s %-5s %s' "$1" "$2" "$3")")
  [[ "$2" == "FAIL" ]] && failed=1
  return 0
}
phase() { echo; echo "=== gpu-check: $*"; }

# ---- environment -------------------------------------------------------------------------------
phase "environment"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
else
  echo "nvidia-smi not found"
fi
if command -v "$py" >/dev/null 2>&1; then
  pylibs=$("$py" - <<'PYEOF' 2>/dev/null
import glob, os, site, sys
dirs = []
try:
    dirs += site.getsitepackages()
except Exception:
    pass
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
dirs += [p for p in sys.path if p.endswith("site-packages")]
seen = []
for d in dirs:
    for lib in sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib"))):
        if lib not in seen:
            seen.append(lib)
print(":".join(seen))
PYEOF
  )
  if [[ -n "$pylibs" ]]; then
    export LD_LIBRARY_PATH="$pylibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "LD_LIBRARY_PATH += $pylibs"
  fi
fi

# ---- build -------------------------------------------------------------------------------------
if [[ -z "$prebuilt" ]]; then
  phase "configure + build in $build_dir (CUDA architectures ${CUDA_ARCHS:-native})"
  jobs=${NNPLUG_JOBS:-$(nproc)}
  if cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-native}" -DNNPLUG_WITH_CUDA=ON \
       -DNNPLUG_WITH_CPU="${NNPLUG_WITH_CPU:-OFF}" -DNNPLUG_BUILD_CONFORMANCE=ON \
       -DNNPLUG_BUILD_EXAMPLES=ON &&
     cmake --build "$build_dir" -j"$jobs"; then
    record build PASS "$build_dir"
  else
    record build FAIL "configure or build failed in $build_dir"
  fi
else
  phase "prebuilt: using $build_dir"
  [[ -d "$build_dir" ]] || { echo "gpu-check: no such directory: $build_dir" >&2; exit 2; }
fi
plugin="$build_dir/lib/nnplug/plugins/libnnplug-cuda.so"
if [[ -f "$plugin" ]]; then
  echo "plugin: $plugin"
  ldd "$plugin" | grep -E "cudart|cublas|cudnn|not found" || true
  if ldd "$plugin" | grep -q "not found"; then
    record plugin FAIL "libnnplug-cuda.so has missing libraries (see ldd above)"
  fi
else
  record plugin FAIL "$plugin not found (was the CUDA backend built?)"
fi

# ---- probe: is cuda:0 there? --------------------------------------------------------------------
phase "probe"
probe_src="$out_dir/probe.c"
cat >"$probe_src" <<'CEOF'
#include <stdio.h>
#include <nnplug/nnplug.h>
int main(void) {
  nnp_device* d = NULL;
  nnp_status st = nnp_get_device("cuda:0", &d);
  if (st != NNP_STATUS_OK) {
    printf("cuda:0 not available: %s: %s\n", nnp_status_string(st), nnp_last_error_message());
    nnp_shutdown();
    return 1;
  }
  nnp_device_props p;
  p.struct_size = sizeof(p);
  if (nnp_device_get_props(d, &p) == NNP_STATUS_OK)
    printf("%s: %s, %.1f GiB, %d SMs\n", p.name, p.description,
           (double)p.memory_bytes / (1024.0 * 1024.0 * 1024.0), p.num_threads);
  nnp_shutdown();
  return 0;
}
CEOF
cc_bin=$(command -v cc || command -v gcc || true)
if [[ -n "$cc_bin" && -f "$build_dir/lib/libnnplug.so" ]]; then
  if "$cc_bin" -std=c99 -I api/include -I "$build_dir/api/include" "$probe_src" \
       -o "$out_dir/probe" -L "$build_dir/lib" -lnnplug -Wl,-rpath,"$(cd "$build_dir/lib" && pwd)" &&
     probe_out=$("$out_dir/probe" 2>&1); then
    echo "$probe_out"
    record probe PASS "$probe_out"
  else
    echo "${probe_out:-probe did not build}"
    record probe FAIL "${probe_out:-probe did not build}"
  fi
else
  record probe SKIP "no C compiler or no libnnplug.so in $build_dir/lib"
fi

# ---- plugin load test (tests/cuda_load_test.c: device props, a stream with TF32) -------------
load_test="$build_dir/bin/nnplug-cuda-load-test"
if [[ -x "$load_test" && -f "$plugin" ]]; then
  if load_out=$("$load_test" "$plugin" 2>&1); then
    record load-test PASS "$(echo "$load_out" | head -n 1)"
  else
    echo "$load_out"
    record load-test FAIL "$(echo "$load_out" | tail -n 3 | tr '\n' ' ')"
  fi
else
  record load-test SKIP "$load_test not built"
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

# ---- summary --------------------------------------------------------------------------------------
echo
echo "=== gpu-check summary (outputs in $out_dir)"
for line in "${summary[@]}"; do echo "  $line"; done
if [[ $failed -ne 0 ]]; then
  echo "gpu-check: FAILED"
  exit 1
fi
echo "gpu-check: OK"
