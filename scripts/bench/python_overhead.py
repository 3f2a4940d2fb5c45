#!/usr/bin/python3
"""python_overhead.py — the time one nnplug op call costs in Python, for small ops whose work is
negligible: the package's per-call overhead (argument conversion, shape inference, output
allocation, the ctypes calls) plus libnnplug's own validation and dispatch.

One row per case: the op, the kind of the inputs (nnplug.DeviceArray, numpy, torch; "+out"
when the output is passed with out=), the device, the median microseconds per call of wall
time and its spread over the repeats (10th to 90th percentile), the median of the calling
thread's CPU time per call, and the target. A case is --repeats batches of --number calls
after a warm-up, the cases taking turns batch by batch; each batch's time divided by --number
is one sample, and the median of the samples is the row's figure. Batches are short (100 calls: about a millisecond), so that on a
shared machine most of them run without losing the core; those that do land in the spread.
On a loaded machine the wall time includes the waits for a core; the CPU time does not, and
--clock cpu checks the targets against it. The header gives the load average. Rows
"torch.mm" and "numpy @" are the same product without nnplug, for scale.

  NNPLUG_LIBRARY=build/lib/libnnplug.so.0 PYTHONPATH=api/python \\
      /usr/bin/python3 scripts/bench/python_overhead.py [--check] [--quick] [--json FILE]

--check exits with status 1 when a row misses its target (DeviceArray inputs 15 us, numpy and
torch inputs 30 us); --quick runs few calls (a smoke test: its figures are not meaningful).
Devices that are not present (no cpu plugin) are skipped with a note.
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.append(os.path.join(ROOT, "api", "python"))  # after $PYTHONPATH

import numpy as np  # noqa: E402

import nnplug  # noqa: E402

try:
    import torch
except ImportError:  # the torch rows are skipped
    torch = None

#: microseconds per call a row may take (issue: "a Python API ... and fast calls")
TARGETS = {"device": 15.0, "device+out": 15.0, "numpy": 30.0, "numpy+out": 30.0,
           "torch": 30.0, "torch+out": 30.0}


def _percentile(values, q):
    v = sorted(values)
    i = min(len(v) - 1, max(0, round(q * (len(v) - 1))))
    return v[i]


def measure(fns, number, repeats, warmup):
    """For each callable of fns: the median, 10th and 90th percentile of the wall-time
    microseconds per call, and the median of the calling thread's CPU time per call. The cases
    take turns, one batch each per round, so that a slower stretch of the machine (a busy
    neighbour, a clock change) falls on every case alike rather than on the rows measured
    during it."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    samples = [[] for _ in fns]
    cpu = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            for _ in range(number):
                fn()
            t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            samples[i].append((t1 - t0) / number / 1000.0)
            cpu[i].append((c1 - c0) / number / 1000.0)
    return [(statistics.median(s), _percentile(s, 0.1), _percentile(s, 0.9),
             statistics.median(c)) for s, c in zip(samples, cpu)]


def cases(dev_name):
    """(op, input kind, callable) for one device."""
    dev = nnplug.device(dev_name)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4)).astype(np.float32)
    b = rng.standard_normal((4, 4)).astype(np.float32)
    y = np.empty((4, 4), np.float32)
    da, db, dy = dev.to_device(a), dev.to_device(b), dev.empty((4, 4))
    out = [
        ("gemm 4x4", "device", lambda: nnplug.gemm(da, db)),
        ("gemm 4x4", "device+out", lambda: nnplug.gemm(da, db, out=dy)),
        ("gemm 4x4", "numpy", lambda: nnplug.gemm(a, b, device=dev)),
        ("gemm 4x4", "numpy+out", lambda: nnplug.gemm(a, b, out=y, device=dev)),
        ("relu 4x4", "device", lambda: nnplug.activation_forward(da, function="relu")),
        ("add 4x4", "device", lambda: nnplug.add(da, db)),
        ("add 4x4", "numpy", lambda: nnplug.add(a, b, device=dev)),
    ]
    if torch is not None:
        ta, tb, ty = torch.from_numpy(a), torch.from_numpy(b), torch.empty(4, 4)
        out += [("gemm 4x4", "torch", lambda: nnplug.gemm(ta, tb, device=dev)),
                ("gemm 4x4", "torch+out", lambda: nnplug.gemm(ta, tb, out=ty, device=dev))]
    return out


def baselines():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4)).astype(np.float32)
    rows = [("numpy @", "numpy", "-", lambda: a @ a)]
    if torch is not None:
        t = torch.from_numpy(a)
        rows.append(("torch.mm", "torch", "-", lambda: torch.mm(t, t)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", default="cpu,reference",
                    help="comma-separated nnplug devices (default: cpu,reference)")
    ap.add_argument("--number", type=int, default=100,
                    help="calls per timed batch (short: a batch seldom loses its core)")
    ap.add_argument("--repeats", type=int, default=201, help="timed batches per case")
    ap.add_argument("--quick", action="store_true",
                    help="few calls: checks that every case runs (timings not meaningful)")
    ap.add_argument("--check", action="store_true",
                    help="exit with status 1 when a case misses its target")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="the time --check compares with the targets (default: wall)")
    ap.add_argument("--json", help="also write the rows to this file as JSON")
    args = ap.parse_args(argv)
    number, repeats, warmup = args.number, args.repeats, max(args.number // 10, 10)
    if args.quick:
        number, repeats, warmup = 20, 3, 5
    if torch is not None:
        torch.set_num_threads(1)  # the torch.mm baseline: no thread pool for a 4x4 product

    rows, missed = [], []
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# {number} calls x {repeats} repeats per case; load average {load:.1f} on "
          f"{os.cpu_count()} cores; nnplug {nnplug.version()} from "
          f"{os.path.dirname(nnplug.__file__)}; targets on {args.clock} time")
    print(f"{'op':<10} {'inputs':<11} {'device':<10} {'median us':>10} {'p10-p90 us':>14} "
          f"{'cpu us':>8} {'target us':>10}")
    todo = [(op, kind, "-", fn) for op, kind, _, fn in baselines()]
    for name in args.devices.split(","):
        try:
            todo += [(op, kind, name, fn) for op, kind, fn in cases(name)]
        except nnplug.Error as e:
            print(f"# device {name} skipped: {e}")
    figures = measure([fn for _, _, _, fn in todo], number, repeats, warmup)
    for (op, kind, dev, _), (med, lo, hi, cpu) in zip(todo, figures):
        target = TARGETS.get(kind) if dev != "-" else None
        ok = target is None or (cpu if args.clock == "cpu" else med) <= target
        if not ok:
            missed.append(f"{op} {kind} {dev}")
        rows.append(dict(op=op, inputs=kind, device=dev, median_us=round(med, 2),
                         p10_us=round(lo, 2), p90_us=round(hi, 2), cpu_us=round(cpu, 2),
                         target_us=target, ok=ok))
        tgt = f"{target:.0f}" if target is not None else "-"
        print(f"{op:<10} {kind:<11} {dev:<10} {med:>10.2f} {f'{lo:.1f}-{hi:.1f}':>14} "
              f"{cpu:>8.2f} {tgt:>10}{'' if ok else '  MISSED'}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"number": number, "repeats": repeats, "load_average": load,
                       "clock": args.clock, "rows": rows}, f, indent=1)
    if args.check and missed:
        print(f"python_overhead: {len(missed)} case(s) missed the target: {', '.join(missed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
