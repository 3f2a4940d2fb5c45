#!/usr/bin/env bash
# Installs nnplug's build and test dependencies from Debian's packages (idempotent; skips apt
# entirely when everything is already there). Usage: scripts/install-deps.sh
# python3-torch serves the Python tests' PyTorch comparisons and DLPack interop, and the
# PyTorch yardstick of the same models (scripts/bench/, scripts/benchmark.sh, which also uses
# python3-matplotlib for its charts); mypy checks the Python package's type hints.
# python3-venv and ninja-build serve scripts/python-package-test.sh (`pip install .` into a
# fresh virtual environment; the wheel's CMake build uses the system's Ninja rather than one
# from PyPI). clang and libclang-rt-dev (libFuzzer and the sanitizer runtimes, only recommended
# by clang) serve the fuzzing phase (scripts/fuzz.sh). libopenmpi-dev and openmpi-bin (mpiexec)
# serve the MPI communication plugin, its tests and nnplug-comm-bench (comm/README.md);
# python3-mpi4py the Python example's data-parallel training and its tests. python3-onnx and
# python3-torchvision serve nnplug.onnx (docs/onnx.md): reading ONNX models, and exporting the
# test models (scripts/make_onnx_models.py, api/python/tests/test_onnx.py).
set -euo pipefail
packages=(build-essential cmake ccache pkg-config ninja-build clang clang-format libclang-rt-dev
          libopenblas-dev libtbb-dev libboost-dev doctest-dev libdlpack-dev zlib1g-dev
          nlohmann-json3-dev libcli11-dev dataset-fashion-mnist libopenmpi-dev openmpi-bin
          python3 python3-numpy python3-pytest python3-matplotlib python3-torch python3-venv
          python3-mpi4py mypy
          python3-onnx python3-torchvision)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
