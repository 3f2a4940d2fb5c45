#!/usr/bin/env bash
# Python package test: `pip install .` into a fresh virtual environment of /usr/bin/python3,
# then, from a folder outside the repository with no NNPLUG_* variable and no PYTHONPATH:
#  - the package imported is the installed one and holds exactly the wheel layout
#    (api/python/tests/smoke_installed.py also checks that libnnplug and every plugin come
#    from inside the package, and a GEMM on reference and cpu against numpy);
#  - `python -m nnplug` lists the reference and cpu devices;
#  - examples/python/train.py trains the mlp and the vit briefly on cpu.
# The CMake build of the wheel is kept in build/pip (pyproject.toml), so a second run only
# rebuilds what changed. Needs network access to PyPI (scikit-build-core for the build, numpy
# as the package's dependency). Environment: NNPLUG_JOBS (build parallelism, default nproc);
# NNPLUG_WITH_CUDA=ON builds the cuda plugin into the wheel (pyproject.toml).
# Usage: scripts/python-package-test.sh
set -euo pipefail
start=$(date +%s)
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/build/python-package-venv"
export CMAKE_BUILD_PARALLEL_LEVEL=${NNPLUG_JOBS:-$(nproc)}
step() { echo "python-package-test: $* ($(($(date +%s) - start)) s)"; }

step "fresh virtual environment in ${venv#"$root"/}"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
py="$venv/bin/python"
pip=("$py" -m pip install --quiet --disable-pip-version-check --no-compile)

step "pip install . (CMake build in build/pip; numpy as its dependency)"
(cd "$root" && "${pip[@]}" .)

# From here on: the installed package alone.
unset PYTHONPATH
while read -r var; do unset "$var"; done < <(compgen -e | grep '^NNPLUG_' || true)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

step "installed files"
"$py" - "$venv" <<'EOF'
import os, re, sys
from importlib import metadata

import nnplug

venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(nnplug.__file__)
if not where.startswith(venv + os.sep):
    sys.exit(f"python-package-test: nnplug imported from {where}, not from {venv}")
# The files the wheel installed (--no-compile: no .pyc added by pip either).
allowed = re.compile(r"nnplug/[a-z_]+\.py|nnplug/lib/libnnplug\.so\.0"
                     r"|nnplug/lib/nnplug/plugins/libnnplug-(comm-)?[a-z0-9_]+\.so"
                     r"|nnplug-[0-9.]+\.dist-info/[A-Za-z_.]+")
files = sorted(str(f) for f in metadata.files("nnplug"))
bad = [f for f in files if not allowed.fullmatch(f)]
if bad:
    sys.exit(f"python-package-test: unexpected files in the wheel: {bad}")
for must in ("nnplug/__init__.py", "nnplug/__main__.py", "nnplug/lib/libnnplug.so.0",
             "nnplug/lib/nnplug/plugins/libnnplug-reference.so",
             "nnplug/lib/nnplug/plugins/libnnplug-cpu.so"):
    if must not in files:
        sys.exit(f"python-package-test: {must} missing from the wheel")
print(f"  nnplug {metadata.version('nnplug')} at {os.path.dirname(where)}: {len(files)} files")
EOF

step "python -m nnplug"
listing=$("$py" -m nnplug)
echo "$listing"
for dev in reference cpu; do
  if ! grep -Eq "^  $dev:0 " <<<"$listing"; then
    echo "python-package-test: python -m nnplug lists no $dev device" >&2
    exit 1
  fi
done

step "smoke test"
"$py" "$root/api/python/tests/smoke_installed.py"

step "examples/python/train.py (mlp, vit)"
"$py" "$root/examples/python/train.py" --model mlp --backend cpu --epochs 1 --limit 2000 \
  --test-limit 1000
"$py" "$root/examples/python/train.py" --model vit --backend cpu --epochs 1 --limit 256 \
  --test-limit 256

elapsed=$(($(date +%s) - start))
echo "python-package-test: OK in ${elapsed} s"
