"""smoke_installed.py — checks a pip-installed nnplug (scripts/python-package-test.sh runs it
with the virtual environment's python, outside the repository, no NNPLUG_* variable set):

  - the package, libnnplug and every loaded plugin are the ones bundled in the installed
    package (nnplug/lib/libnnplug.so.0, nnplug/lib/nnplug/plugins/), not a build tree's;
  - the reference and cpu devices are there and a GEMM through the low-level
    nnplug.execute(OpKind.GEMM, ...) on each matches numpy's a @ b;
  - the op functions: an allocated GEMM with its bias, one into out=, a DeviceArray chain
    (gemm, relu, softmax) on each device, and a refused call raising InvalidArgumentError.

Not a pytest file (the source-tree pytest run does not collect it). Exit status 0 on success.
"""
import os
import sys

import numpy as np

import nnplug


def inside(path, folder):
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


def main():
    for var in sorted(os.environ):
        if var.startswith("NNPLUG_"):
            sys.exit(f"smoke_installed: {var} is set; this test checks the bundled defaults")
    pkg = os.path.dirname(os.path.abspath(nnplug.__file__))
    if not inside(pkg, sys.prefix) or sys.prefix == sys.base_prefix:
        sys.exit(f"smoke_installed: nnplug comes from {pkg}, not from a virtual environment's "
                 f"site-packages (sys.prefix {sys.prefix})")

    bundled = os.path.join(pkg, "lib")
    lib = nnplug.lib_path()
    if os.path.realpath(lib) != os.path.realpath(os.path.join(bundled, "libnnplug.so.0")):
        sys.exit(f"smoke_installed: libnnplug loaded from {lib}, not the bundled {bundled}")

    records = nnplug.load_records()
    plugins = os.path.join(bundled, "nnplug", "plugins")
    loaded = {r.name: r for r in records if r.state == nnplug.LoadState.LOADED}
    for r in records:
        if not inside(r.path, plugins):
            sys.exit(f"smoke_installed: plugin candidate {r.path} lies outside {plugins}")
    for name in ("reference", "cpu"):
        if name not in loaded:
            sys.exit(f"smoke_installed: plugin {name} not loaded; records: {records}")

    rng = np.random.default_rng(0)
    a = rng.standard_normal((33, 17)).astype(np.float32)
    b = rng.standard_normal((17, 29)).astype(np.float32)
    expected = a @ b
    params = nnplug._abi.nnp_gemm_params(trans_a=0, trans_b=0, alpha=1.0, beta=0.0)
    names = [d.name for d in nnplug.devices()]
    for name in ("reference", "cpu"):
        dev = nnplug.device(name)
        y = np.full((33, 29), np.nan, np.float32)
        nnplug.execute(nnplug.OpKind.GEMM, params, [a, b, None], [y], device=dev)
        err = float(np.max(np.abs(y - expected)))
        if not np.allclose(y, expected, rtol=1e-4, atol=1e-4):
            sys.exit(f"smoke_installed: GEMM on {dev.name}: max |error| {err:.3g}")
        print(f"smoke_installed: GEMM on {dev.name} matches numpy (max |error| {err:.2g})")
        c = rng.standard_normal(29).astype(np.float32)
        y = nnplug.gemm(a, b, C=c, device=dev)  # allocated, C in the C order as a keyword
        if not np.allclose(y, expected + c, rtol=1e-4, atol=1e-4):
            sys.exit(f"smoke_installed: nnplug.gemm(a, b, C=c) on {dev.name} is wrong")
        out = np.full((33, 29), np.nan, np.float32)
        if nnplug.gemm(a, b, out=out, device=dev) is not out or \
                not np.allclose(out, expected, rtol=1e-4, atol=1e-4):
            sys.exit(f"smoke_installed: nnplug.gemm(a, b, out=y) on {dev.name} is wrong")
        da, db = dev.to_device(a), dev.to_device(b)
        p = nnplug.softmax_forward(nnplug.activation_forward(nnplug.gemm(da, db),
                                                             function="relu"))
        if not isinstance(p, nnplug.DeviceArray) or p.device != dev or \
                not np.allclose(p.numpy().sum(axis=1), 1.0, atol=1e-5):
            sys.exit(f"smoke_installed: a DeviceArray chain on {dev.name} is wrong: {p!r}")
        try:
            nnplug.gemm(a, a, device=dev)
            sys.exit("smoke_installed: gemm of [33, 17] by [33, 17] was accepted")
        except nnplug.InvalidArgumentError as e:
            if "inputs[1] (B)" not in e.message:
                sys.exit(f"smoke_installed: the error does not name B: {e}")
    print(f"smoke_installed: OK: nnplug {nnplug.version()} from {pkg}; devices {names}")


if __name__ == "__main__":
    main()
