#!/usr/bin/python3
"""check_train_logs.py — CTest helper: the train examples' output files under failure.

  check_train_logs.py WORKDIR BACKEND -- COMMAND...

COMMAND is the C program (build/bin/train) or the Python one (python3 examples/python/train.py);
the checks that need --loss-log run for the C program only (the Python one has no such flag):
  - a log that cannot be written (/dev/full: --log, --loss-log, the standard output) ends the
    run with a non-zero status and a message naming it, never status 0 with nothing written;
  - every --log row names the planned epoch count, so a complete run (last row's epoch equals
    it) can be told from an interrupted one; a log with another header is refused;
  - after SIGTERM in the middle of a run, the loss log and the epoch log hold whole lines only.
"""
import csv
import os
import signal
import subprocess
import sys
import time

HEADER = ["epoch", "model", "backend", "train_loss", "train_accuracy", "test_accuracy",
          "seconds", "images_per_second", "epochs"]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    return r.returncode, r.stdout, r.stderr


def main():
    workdir, backend = sys.argv[1:3]
    assert sys.argv[3] == "--", "usage: check_train_logs.py WORKDIR BACKEND -- COMMAND..."
    prog = sys.argv[4:]
    is_c = not prog[0].endswith("python3")
    tag = "c" if is_c else "py"
    short = ["--backend", backend, "--epochs", "1", "--limit", "256", "--test-limit", "64"]

    # 1. writes that fail are fatal, with a message naming the file
    flags = [("--log", "cannot write --log /dev/full")]
    if is_c:
        flags.append(("--loss-log", "cannot write --loss-log /dev/full"))
    for flag, message in flags:
        code, _, err = run(prog + short + [flag, "/dev/full"])
        assert code != 0, f"{flag} /dev/full: exit status 0"
        assert message in err, f"{flag} /dev/full: stderr {err!r}"
    with open("/dev/full", "w") as full:
        r = subprocess.run(prog + short, stdout=full, stderr=subprocess.PIPE, text=True,
                           timeout=300)
    assert r.returncode != 0, "standard output /dev/full: exit status 0"
    assert "standard output" in r.stderr, f"standard output /dev/full: stderr {r.stderr!r}"

    # 2. the completion marker, and another program's header refused
    log = os.path.join(workdir, f"train_logs_{tag}_{backend}.csv")
    if os.path.exists(log):
        os.remove(log)
    code, out, err = run(prog + short[:3] + ["2"] + short[4:] + ["--log", log])
    assert code == 0, f"exit status {code}: {err}"
    with open(log, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == HEADER, rows[0]
    assert [r[0] for r in rows[1:]] == ["1", "2"] and all(r[-1] == "2" for r in rows[1:]), rows
    other = os.path.join(workdir, f"train_logs_{tag}_other.csv")
    with open(other, "w") as f:
        f.write("epoch,model,backend,train_loss\n1,mlp,cpu,2.3\n")
    code, _, err = run(prog + short + ["--log", other])
    assert code != 0 and "another header" in err, f"foreign header: {code} {err!r}"
    with open(other) as f:
        assert f.read() == "epoch,model,backend,train_loss\n1,mlp,cpu,2.3\n", "file changed"

    # 3. SIGTERM in the middle of a run leaves whole lines
    log2 = os.path.join(workdir, f"train_logs_{tag}_{backend}_killed.csv")
    losses = os.path.join(workdir, f"train_logs_{tag}_{backend}_losses.csv")
    for path in (log2, losses):
        if os.path.exists(path):
            os.remove(path)
    cmd = prog + ["--backend", backend, "--epochs", "50", "--limit", "2048", "--batch", "16",
                  "--test-limit", "64", "--log", log2] + (["--loss-log", losses] if is_c else [])
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    watched = losses if is_c else log2
    while time.monotonic() < deadline and p.poll() is None:
        if os.path.exists(watched) and os.path.getsize(watched) > (4000 if is_c else 300):
            break
        time.sleep(0.02)
    assert p.poll() is None, "the run ended before it could be interrupted"
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=60)
    for path, fields in ((log2, len(HEADER)), (losses, 3)):
        if not is_c and path == losses:
            continue
        with open(path, newline="") as f:
            text = f.read()
        assert text.endswith("\n"), f"{path} ends mid-line: {text[-40:]!r}"
        for line in text.splitlines():
            assert len(line.split(",")) == fields, f"{path}: partial line {line!r}"
    with open(log2, newline="") as f:
        rows = list(csv.reader(f))[1:]
    assert all(int(r[0]) < int(r[-1]) for r in rows), "an interrupted run looks complete"
    print("ok")


if __name__ == "__main__":
    main()
