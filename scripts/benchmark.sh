#!/usr/bin/env bash
# The benchmark: one command, run on an otherwise idle machine, that builds nnplug in Release
# (as scripts/run-main.sh does), sets up its PyTorch yardsticks, records the machine, times the
# ops on every backend present (cpu; cuda when a cuda device exists) beside the machine's limits
# (direct cblas_sgemm, copy/triad bandwidth), trains mlp, cnn and vit with nnplug and PyTorch
# alternately, runs the 2-rank data-parallel comparison and nnplug-comm-bench (when mpirun and
# the MPI transport are there), runs the six ONNX models of scripts/make_onnx_models.py beside
# onnxruntime, times a small op called from Python, and writes benchmarks.md, benchmarks.json and
# figures/benchmarks_*.png (scripts/bench/) into build/benchmark/, or into docs/ with --out docs.
#
# The yardsticks: Debian's PyTorch (/usr/bin/python3, python3-torch) and the current PyTorch
# from PyPI's CPU wheels in a virtual environment, build/torch-venv, created on the first run
# (a download of several hundred MB; PyPI's torch, with CUDA libraries, where the CPU wheels'
# index is out of reach) and reused after; every comparison takes the faster of
# the two. --torch-python names other interpreters instead; without any PyTorch the figures are
# nnplug's alone.
#
#   scripts/benchmark.sh [--quick] [--out DIR] [--rounds N] [--no-build] [--build-dir DIR]
#                        [--torch-venv DIR | --torch-python PATH ... | --no-torch]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
here=$PWD

usage() {
  cat <<'USAGE'
usage: scripts/benchmark.sh [options]
  --quick              tiny step counts and repetitions, 1 round (a smoke test, not figures)
  --out DIR            where benchmarks.md, benchmarks.json and figures/ go
                       (default: build/benchmark; `--out docs` writes the tracked page)
  --rounds N           alternated nnplug/PyTorch rounds, medians reported and the noise
                       threshold taken from their spread (default 3)
  --no-build           use the existing build folder instead of building Release first
  --build-dir DIR      the build folder (default: build)
  --torch-venv DIR     the virtual environment of PyTorch from PyPI (CPU wheels), created
                       when it does not import torch (default: build/torch-venv)
  --torch-python PATH  a Python interpreter that runs PyTorch, instead of the two defaults
                       (/usr/bin/python3 and the venv's); repeatable: every comparison takes
                       the fastest of them
  --no-torch           skip the PyTorch comparison
  -h, --help           this text
USAGE
}

quick=0 build=1 out="$root/build/benchmark" rounds=3 build_dir="$root/build" no_torch=0
torch_venv="$root/build/torch-venv"
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
    --torch-venv) need "$@"; torch_venv=$(cd "$here" && realpath -m -- "$2"); shift ;;
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

# The PyPI yardsticks: a venv with PyTorch's CPU wheels (download.pytorch.org/whl/cpu; PyPI's
# torch where that index is out of reach), numpy, and onnx + onnxruntime for the ONNX models
# (PyPI), made in place the first time and reused while it imports torch. onnxruntime is
# optional: without it the ONNX section has nnplug's figures alone.
add_onnxruntime() {
  "$1/bin/python" -c "import onnx, onnxruntime" 2>/dev/null ||
    "$1/bin/python" -m pip install --quiet --disable-pip-version-check onnx onnxruntime ||
    echo "== onnx/onnxruntime could not be installed into $1: no onnxruntime comparison"
}
setup_torch_venv() {
  local dir=$1
  if [[ -x $dir/bin/python ]] && "$dir/bin/python" -c "import torch, numpy" 2>/dev/null; then
    add_onnxruntime "$dir"
    return 0
  fi
  if [[ -e $dir && ! -f $dir/pyvenv.cfg ]]; then
    echo "benchmark.sh: --torch-venv $dir exists and is not a virtual environment" >&2
    exit 2
  fi
  echo "== PyTorch from PyPI (CPU wheels) into $dir"
  if ! { rm -rf -- "$dir" && /usr/bin/python3 -m venv "$dir" &&
         { "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --retries 1 \
             --timeout 20 torch --index-url https://download.pytorch.org/whl/cpu ||
           { echo "== download.pytorch.org is out of reach: PyTorch from PyPI (with its CUDA" \
                  "libraries, a few GB)"
             "$dir/bin/python" -m pip install --quiet --disable-pip-version-check torch; }; } &&
         "$dir/bin/python" -m pip install --quiet --disable-pip-version-check numpy &&
         "$dir/bin/python" -c "import torch, numpy"; }; then
    rm -rf -- "$dir"
    echo "benchmark.sh: could not install PyTorch into $dir (it needs download.pytorch.org" \
         "and PyPI); use --torch-python /usr/bin/python3 to compare with Debian's alone," \
         "or --no-torch" >&2
    exit 1
  fi
  add_onnxruntime "$dir"
}

if ((no_torch == 0)); then
  if ((${#torch_pythons[@]} == 0)); then
    setup_torch_venv "$torch_venv"
    torch_pythons=(/usr/bin/python3 "$torch_venv/bin/python")
  fi
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
