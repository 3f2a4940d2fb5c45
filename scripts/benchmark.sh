#!/usr/bin/env bash
# The benchmark: one command, run on an otherwise idle machine, that builds nnplug in Release
# (as scripts/run-main.sh does), records the machine, times the ops on every backend present
# (cpu; cuda when a cuda device exists) beside the machine's limits (direct cblas_sgemm,
# copy/triad bandwidth), trains mlp, cnn and vit with nnplug and PyTorch alternately, runs the
# 2-rank data-parallel comparison and nnplug-comm-bench (when mpirun and the MPI transport are
# there), and writes docs/benchmarks.md, docs/benchmarks.json and docs/figures/benchmarks_*.png
# (scripts/bench/). PyTorch serves the comparison only: without it the figures are nnplug's.
#
#   scripts/benchmark.sh [--quick] [--out DIR] [--rounds N] [--no-build] [--build-dir DIR]
#                        [--torch-python PATH ... | --no-torch]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
here=$PWD

usage() {
  cat <<'USAGE'
usage: scripts/benchmark.sh [options]
  --quick              tiny step counts and repetitions, 1 round (a smoke test, not figures)
  --out DIR            where benchmarks.md, benchmarks.json and figures/ go (default: docs)
  --rounds N           alternated nnplug/PyTorch training rounds, medians reported (default 3)
  --no-build           use the existing build folder instead of building Release first
  --build-dir DIR      the build folder (default: build)
  --torch-python PATH  a Python interpreter that runs PyTorch (default /usr/bin/python3);
                       repeatable: training compares nnplug with the fastest of them per
                       model, per-op times use the first
  --no-torch           skip the PyTorch comparison
  -h, --help           this text
USAGE
}

quick=0 build=1 out="$root/docs" rounds=3 build_dir="$root/build" no_torch=0
torch_pythons=()
args=("$@")
need() { [[ $# -ge 2 && -n $2 ]] || { echo "benchmark.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1 ;;
    --no-build) build=0 ;;
    --no-torch) no_torch=1 ;;
    --out) need "$@"; out=$(cd "$here" && realpath -m -- "$2"); shift ;;
    --rounds) need "$@"; rounds=$2; shift ;;
    --build-dir) need "$@"; build_dir=$(cd "$here" && realpath -m -- "$2"); shift ;;
    --torch-python) need "$@"; torch_pythons+=("$2"); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "benchmark.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "benchmark.sh: --rounds needs a positive integer, not '$rounds'" >&2
  exit 2
fi
((${#torch_pythons[@]})) || torch_pythons=(/usr/bin/python3)
if ((no_torch == 0)); then
  for py in "${torch_pythons[@]}"; do
    if ! command -v "$py" >/dev/null; then
      echo "benchmark.sh: --torch-python $py is not an executable (or use --no-torch)" >&2
      exit 2
    fi
  done
fi

cd "$root"
start=$SECONDS
if ((build)); then
  echo "== build (Release, $build_dir)"
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$build_dir" -j"${NNPLUG_JOBS:-$(nproc)}" --target nnplug nnplug-cpu \
    nnplug-bench nnplug-train nnplug-hello
  # the MPI transport and nnplug-comm-bench exist only where CMake found MPI
  cmake --build "$build_dir" -j"${NNPLUG_JOBS:-$(nproc)}" --target nnplug-comm-mpi \
    nnplug-comm-bench 2>/dev/null || echo "benchmark.sh: no MPI targets (the distributed phase is skipped)"
  # the cuda backend, where it is configured
  cmake --build "$build_dir" -j"${NNPLUG_JOBS:-$(nproc)}" --target nnplug-cuda 2>/dev/null || true
  echo "== build: $((SECONDS - start)) s"
fi
for exe in train nnplug-bench hello; do
  if [[ ! -x $build_dir/bin/$exe ]]; then
    echo "benchmark.sh: $build_dir/bin/$exe is missing: build first (drop --no-build)" >&2
    exit 1
  fi
done

opts=(--build "$build_dir" --out "$out" --rounds "$rounds")
for py in "${torch_pythons[@]}"; do opts+=(--torch-python "$py"); done
((quick)) && opts+=(--quick)
((no_torch)) && opts+=(--no-torch)
/usr/bin/python3 scripts/bench/run.py "${opts[@]}" \
  --command "scripts/benchmark.sh${args[*]:+ ${args[*]}}"
echo "benchmark.sh: total $((SECONDS - start)) s"
