#!/usr/bin/python3
"""check_distributed.py — CTest helper for train's data-parallel mode (docs/distributed.md).

  check_distributed.py self   --train BIN --workdir DIR [--model M --limit N ...]
  check_distributed.py parity --train BIN --workdir DIR --mpiexec CMD [--ranks 2] [...]
  check_distributed.py fault  --train BIN --workdir DIR --mpiexec CMD --kind exit|error|mismatch
  check_distributed.py flags  --train BIN --workdir DIR --mpiexec CMD --flag=--batch=32

flags: two ranks started with different flags (rank 1 gets --flag on top of the others, with
the launcher's `:` form) must both stop at start-up naming the flag, in bounded time: train
gathers every rank's model, batch, seed, epochs, lr, bucket size and data sizes first.

self: `--distributed self` (the distributed code path on one rank: buckets, the communication
thread, the self communicator) gives the losses of `--distributed none` bit for bit
(--overlap: train's, for the distributed run; the CTest hands buckets over during backward).

parity: `mpiexec -n RANKS train` with a global batch of --batch gives, step by step, the
losses of a single process with the same batch and seed, within RTOL. Shuffling, the weights
and the dropout masks are the same (each rank draws the masks of its images at their positions
in the global batch); what differs is float32 rounding: each rank sums its share's gradients,
the transport sums the shares, and each share's loss is a mean weighted by its size, where the
single process sums all images at once. Adam can amplify such differences in rarely updated
weights over the steps (compare_losses.py), hence the same margin as reference vs cpu. The
run must also end with its replicas bitwise identical (train checks and prints it) and the
JSON line must say "ranks" and "distributed".

fault: rank 1 meets NNPLUG_TRAIN_FAULT=1:STEP:KIND: exits at once (exit), fails an nnplug call
(error: the message names the rank and MPI_Abort ends the job), or issues a collective that
does not match the other rank's (mismatch: the default collective check gives every rank
INVALID_ARGUMENT). The job must end with a non-zero status within BOUND seconds, not hang.
"""
import argparse
import csv
import json
import os
import shlex
import subprocess
import sys
import time

RTOL = 1e-4
BOUND = 60.0


def train_args(args, log):
    return ["--model", args.model, "--backend", args.backend, "--epochs", str(args.epochs),
            "--limit", str(args.limit), "--test-limit", str(args.test_limit),
            "--batch", str(args.batch), "--seed", str(args.seed), "--loss-log", log,
            "--precision", args.precision]


def run(cmd, timeout, env=None):
    print("$", " ".join(shlex.quote(c) for c in cmd), flush=True)
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(
            errors="replace")
        print(out)
        sys.exit(f"no exit within {timeout:.0f} s: the job hangs")
    seconds = time.monotonic() - t0
    print(r.stdout, r.stderr, sep="", flush=True)
    return r, seconds


def losses(log):
    with open(log, newline="") as f:
        return [float(row["loss"]) for row in csv.DictReader(f)]


def summary(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def compare(name_a, a, name_b, b, rtol):
    if len(a) != len(b) or not a:
        sys.exit(f"step counts differ or are zero: {name_a} {len(a)}, {name_b} {len(b)}")
    worst, bad = 0.0, 0
    for i, (x, y) in enumerate(zip(a, b), 1):
        rel = abs(x - y) / max(abs(x), 1e-12)
        worst = max(worst, rel)
        bad += rel > rtol
        flag = "  <-- exceeds tolerance" if rel > rtol else ""
        print(f"step {i:3d}: {name_a} {x:.8f}  {name_b} {y:.8f}  relative gap {rel:.2e}{flag}")
    print(f"worst relative gap {worst:.2e} (tolerance {rtol:.0e})")
    if len(a) > 1 and min(a[1:]) >= a[0]:
        sys.exit("the loss never went below its first value: the model does not learn")
    if bad:
        sys.exit(f"{bad} step(s) beyond the tolerance")


def mpi_cmd(args, n):
    return shlex.split(args.mpiexec) + [args.np_flag, str(n)] + [args.train]


def check_self(args):
    tag = f"{args.model}_{args.limit}_{args.backend}_{args.precision}"
    log_none = os.path.join(args.workdir, f"dist_self_{tag}_none.csv")
    log_self = os.path.join(args.workdir, f"dist_self_{tag}_self.csv")
    r1, _ = run([args.train] + train_args(args, log_none) + ["--distributed", "none"], 600)
    r2, _ = run([args.train] + train_args(args, log_self) +
                ["--distributed", "self", "--overlap", args.overlap], 600)
    assert r1.returncode == 0 and r2.returncode == 0, (r1.returncode, r2.returncode)
    s1, s2 = summary(r1.stdout), summary(r2.stdout)
    assert (s1["ranks"], s1["distributed"]) == (1, "none"), s1
    assert (s2["ranks"], s2["distributed"]) == (1, "self"), s2
    assert "bitwise identical on all 1 rank" in r2.stdout
    compare("none", losses(log_none), "self", losses(log_self), 0.0)


def check_parity(args):
    tag = f"{args.model}_{args.limit}_{args.ranks}_{args.overlap}_{args.backend}_{args.precision}"
    log_one = os.path.join(args.workdir, f"dist_parity_{tag}_single.csv")
    log_mpi = os.path.join(args.workdir, f"dist_parity_{tag}_mpi.csv")
    # One after the other: each uses the cores it was given (--threads), and a 2-core machine
    # runs the ranks at the same time as each other, not as the single process too.
    r1, _ = run([args.train] + train_args(args, log_one) +
                ["--distributed", "none", "--threads", str(args.ranks * args.threads)], 600)
    assert r1.returncode == 0, f"single process: exit status {r1.returncode}"
    r2, _ = run(mpi_cmd(args, args.ranks) + train_args(args, log_mpi) +
                ["--threads", str(args.threads), "--overlap", args.overlap], 600)
    assert r2.returncode == 0, f"{args.ranks} ranks: exit status {r2.returncode}"
    s1, s2 = summary(r1.stdout), summary(r2.stdout)
    assert (s1["ranks"], s1["distributed"]) == (1, "none"), s1
    assert (s2["ranks"], s2["distributed"]) == (args.ranks, "mpi"), s2
    assert s1["batch"] == s2["batch"] == min(args.batch, args.limit), (s1, s2)
    assert set(s1) == set(s2), (sorted(s1), sorted(s2))
    assert f"bitwise identical on all {args.ranks} ranks" in r2.stdout, "no identity check line"
    compare("single", losses(log_one), f"{args.ranks}-ranks", losses(log_mpi), args.rtol)


def check_fault(args):
    env = dict(os.environ, NNPLUG_TRAIN_FAULT=f"1:{args.step}:{args.kind}")
    env.pop("NNPLUG_COMM_CHECK", None)  # mismatch: the default collective check reports it
    log = os.path.join(args.workdir, f"dist_fault_{args.kind}.csv")
    cmd = mpi_cmd(args, 2) + train_args(args, log) + ["--threads", "1"]
    r, seconds = run(cmd, BOUND * 2, env)
    out = r.stdout + r.stderr
    print(f"exit status {r.returncode} after {seconds:.1f} s (bound {BOUND:.0f} s)")
    assert r.returncode != 0, "the job ended with status 0"
    assert seconds < BOUND, f"the job took {seconds:.1f} s to end"
    assert f"NNPLUG_TRAIN_FAULT: {args.kind} at step {args.step}" in out, "the hook did not fire"
    if args.kind == "error":
        assert "train: rank 1 of 2: error: " in out, "no message naming the rank"
    if args.kind == "mismatch":
        assert "the ranks disagree on the call (NNPLUG_COMM_CHECK)" in out, out[-2000:]
    if not any(x in out for x in ("rank 1 of 2: error", "exited", "exit code", "MPI_ABORT",
                                  "non-zero")):
        sys.exit("no word from the launcher or the rank about the failure")
    print("ok")


def check_flags(args):
    log = os.path.join(args.workdir, "dist_flags.csv")
    common = train_args(args, log) + ["--threads", "1", "--distributed", "mpi"]
    launcher = shlex.split(args.mpiexec)
    cmd = (launcher + [args.np_flag, "1", args.train] + common + [":"] +
           [args.np_flag, "1", args.train] + common + [args.flag])
    r, seconds = run(cmd, BOUND * 2)
    out = r.stdout + r.stderr
    name = args.flag.split("=")[0]
    print(f"exit status {r.returncode} after {seconds:.1f} s (bound {BOUND:.0f} s)")
    assert r.returncode != 0, "the job ended with status 0"
    assert seconds < BOUND, f"the job took {seconds:.1f} s to end"
    said = [line for line in out.splitlines() if "the ranks disagree on" in line]
    assert said and name in said[0], out[-2000:]
    assert "epoch 1/" not in out, "the ranks trained before the check"
    print("ok")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["self", "parity", "fault", "flags"])
    p.add_argument("--train", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--mpiexec", default="mpiexec", help="the launcher and its flags, one string")
    p.add_argument("--np-flag", default="-n")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="cpu threads per rank")
    p.add_argument("--model", default="cnn")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--precision", default="float32", choices=["float32", "bfloat16"],
                   help="train --precision of every run")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--limit", type=int, default=1347)
    p.add_argument("--test-limit", type=int, default=200)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--rtol", type=float, default=RTOL)
    p.add_argument("--kind", choices=["exit", "error", "mismatch"], default="exit")
    p.add_argument("--step", type=int, default=3)
    p.add_argument("--flag", default="--batch=32", help="flags: rank 1's extra flag")
    p.add_argument("--overlap", choices=["auto", "on", "off"], default="auto",
                   help="train's --overlap for the distributed run")
    args = p.parse_args()
    {"self": check_self, "parity": check_parity, "fault": check_fault,
     "flags": check_flags}[args.mode](args)


if __name__ == "__main__":
    main()
