#!/usr/bin/python3
"""compare_losses.py — CTest helper: the same seed on the reference and another backend gives the
same first-epoch loss curve.

  compare_losses.py --train BIN --workdir DIR --model mlp --limit 1024 [--batch 128]
                    [--backend cpu] [--baseline reference] [--graph] [--rtol 1e-4]
                    [--precision float32|bfloat16] [--baseline-precision float32|bfloat16]

Runs `train --epochs 1 --loss-log ...` on --baseline (the reference unless given) and on
--backend with the same seed and compares the loss of every step. With --graph the run on
--backend captures its step into a graph (train --graph) and the baseline runs eagerly: with
every batch full (--limit a multiple of --batch) the losses must be equal bit for bit
(--rtol 0), since a launch replays the recorded calls.

The sim backend computes with the reference kernels, so its losses must be equal bit for bit
(--backend sim --rtol 0): any difference is host code that reads device memory too early or
reuses a buffer too soon.

For the cpu backend: Initial weights, shuffling and dropout masks (Philox, defined bit-exactly
by nnplug_ops.h) are identical, so the only difference is float32 rounding: the cpu backend
sums in a different order (blocked OpenBLAS GEMM, im2col convolution, tree reductions) than the
reference (plain loops, double accumulation). The gap starts near 1e-7 relative and could grow
with each Adam step, which divides by sqrt(v) and so turns small absolute gradient differences
in rarely-updated weights into relative ones. Tolerance: |cpu - reference| <= RTOL * |reference|
per step with RTOL 1e-4; measured worst gaps are 1.1e-7 (mlp, 1000 images, 8 steps) and 0
(cnn, 80 images, 3 steps). A real bug (a wrong gradient, mask, transpose or bias) moves the
loss by more than 1e-2 within two steps.

Mixed precision (--precision bfloat16 on --backend, the baseline in float32): the layers
compute in bfloat16, whose 8 significant bits round each activation, weight copy and gradient
by up to 2^-9 relative; the loss stays close to float32's without being equal. Tolerance
BF16_RTOL (3e-2) per step; see docs/training.md for the measured gaps. A mixed-precision bug
that keeps the layers from learning (stale bfloat16 weights, gradients never cast back) shows as
a loss curve that stops falling, which the learning check below catches too.
"""
import argparse
import concurrent.futures
import csv
import os
import subprocess
import sys

RTOL = 1e-4
BF16_RTOL = 3e-2


def run(train, backend, args, workdir, precision, graph=False):
    # One file per comparison and run: tests run in parallel.
    tag = (f"{args.baseline}_{args.baseline_precision}_{args.backend}_{args.precision}"
           f"{'_graph' if args.graph else ''}")
    log = os.path.join(workdir, f"losses_{args.model}_{args.limit}_{tag}_{backend}_{precision}"
                                f"{'_graph' if graph else ''}.csv")
    cmd = [train, "--model", args.model, "--backend", backend, "--epochs", "1",
           "--limit", str(args.limit), "--test-limit", str(args.test_limit),
           "--batch", str(args.batch), "--seed", str(args.seed), "--loss-log", log,
           "--precision", precision]
    if graph:
        cmd.append("--graph")
    print("$", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    print(r.stdout, r.stderr, sep="", flush=True)
    if r.returncode != 0:
        sys.exit(f"train on {backend} failed with exit status {r.returncode}")
    with open(log, newline="") as f:
        return [float(row["loss"]) for row in csv.DictReader(f)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--model", default="mlp")
    p.add_argument("--limit", type=int, default=1024)
    p.add_argument("--test-limit", type=int, default=200)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--backend", default="cpu", help="the backend compared with the baseline")
    p.add_argument("--baseline", default="reference", help="the backend compared with")
    p.add_argument("--graph", action="store_true",
                   help="run --backend with train --graph (the baseline runs eagerly)")
    p.add_argument("--precision", default="float32", choices=["float32", "bfloat16"],
                   help="train --precision of the run on --backend")
    p.add_argument("--baseline-precision", default="float32", choices=["float32", "bfloat16"],
                   help="train --precision of the baseline run")
    p.add_argument("--rtol", type=float, help="relative tolerance per step (default: RTOL, or "
                                              "BF16_RTOL when only one run is mixed precision)")
    args = p.parse_args()
    if args.rtol is None:
        args.rtol = BF16_RTOL if args.precision != args.baseline_precision else RTOL
    # The two runs at once (each is single-threaded on the reference kernels or uses the cpu
    # backend's threads; either way the wall time is about that of the slower one).
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        ref_run = pool.submit(run, args.train, args.baseline, args, args.workdir,
                              args.baseline_precision)
        other_run = pool.submit(run, args.train, args.backend, args, args.workdir, args.precision,
                                args.graph)
        ref, other = ref_run.result(), other_run.result()
    name = args.backend + (" (graph)" if args.graph else "")
    base = args.baseline
    if args.precision != args.baseline_precision:
        name += f" {args.precision}"
        base += f" {args.baseline_precision}"
    if len(ref) != len(other) or not ref:
        sys.exit(f"step counts differ or are zero: {base} {len(ref)}, {name} {len(other)}")
    worst = 0.0
    bad = 0
    for i, (a, b) in enumerate(zip(other, ref), 1):
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst = max(worst, rel)
        flag = "" if rel <= args.rtol else "  <-- exceeds tolerance"
        bad += rel > args.rtol
        print(f"step {i:3d}: {base} {b:.7f}  {name} {a:.7f}  relative gap {rel:.2e}{flag}")
    print(f"worst relative gap {worst:.2e} (tolerance {args.rtol:.0e})")
    if len(ref) > 1 and min(ref[1:]) >= ref[0]:
        sys.exit("the loss never went below its first value: the model does not learn")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
