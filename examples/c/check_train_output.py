#!/usr/bin/python3
"""check_train_output.py — CTest helper: a short `train` run prints one line per epoch and ends
with the one-line JSON summary, and its --log CSV has the documented header and one row per
epoch (appending a second run adds rows without a second header). A single process says
"ranks": 1 and "distributed": "none", an eager run "graph": false, a run without --tf32
"tf32": false, one without --precision "precision": "float32", and "last_epoch_seconds" is the last epoch's share of "train_seconds".

  check_train_output.py TRAIN_BINARY WORKDIR BACKEND
"""
import csv
import json
import os
import subprocess
import sys

HEADER = ["epoch", "model", "backend", "train_loss", "train_accuracy", "test_accuracy",
          "seconds", "images_per_second", "epochs"]
KEYS = {"model", "backend", "device", "epochs", "batch", "train_seconds", "images_per_second",
        "test_accuracy", "final_loss", "ranks", "distributed", "graph", "tf32",
        "precision", "last_epoch_seconds"}


def main():
    train, workdir, backend = sys.argv[1:4]
    log = os.path.join(workdir, f"train_output_{backend}.csv")
    if os.path.exists(log):
        os.remove(log)
    cmd = [train, "--backend", backend, "--epochs", "2", "--limit", "300", "--batch", "64",
           "--test-limit", "100", "--log", log]
    for run in (1, 2):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        print(r.stdout, r.stderr, sep="")
        assert r.returncode == 0, f"exit status {r.returncode}"
        lines = r.stdout.strip().splitlines()
        summary = json.loads(lines[-1])
        assert set(summary) == KEYS, f"JSON keys {sorted(summary)}"
        assert summary["model"] == "mlp" and summary["epochs"] == 2 and summary["batch"] == 64
        assert summary["backend"] == backend and summary["device"] == f"{backend}:0"
        assert summary["ranks"] == 1 and summary["distributed"] == "none", summary
        assert summary["graph"] is False and summary["tf32"] is False, summary
        assert summary["precision"] == "float32", summary
        assert 0 < summary["last_epoch_seconds"] <= summary["train_seconds"], summary
        assert 0.0 <= summary["test_accuracy"] <= 1.0 and summary["final_loss"] > 0
        epoch_lines = [x for x in lines if x.startswith("epoch ")]
        assert len(epoch_lines) == 2 and "test accuracy" in epoch_lines[1], epoch_lines
        # 300 images in batches of 64: 5 steps, the last one of 44 images
        assert "5 steps per epoch (last batch 44 images)" in r.stdout
    with open(log, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == HEADER, rows[0]
    assert len(rows) == 1 + 4, f"{len(rows) - 1} rows, expected 4 (2 runs x 2 epochs)"
    assert [r[0] for r in rows[1:]] == ["1", "2", "1", "2"]
    assert all(r[1] == "mlp" and r[2] == backend for r in rows[1:])
    assert rows[1][3:] and float(rows[2][3]) < float(rows[1][3]), "loss did not fall"
    print("ok")


if __name__ == "__main__":
    main()
