#!/usr/bin/env bash
# The main job (the README's first command): installs dependencies, builds nnplug in Release and
# trains the cnn on Fashion-MNIST for one epoch on the best available backend ("auto";
# NNPLUG_BACKEND=cpu|cuda|reference overrides). Extra arguments go to `train`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"${NNPLUG_JOBS:-$(nproc)}"
exec build/bin/train --model cnn --epochs 1 --backend auto "$@"
