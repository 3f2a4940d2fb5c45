"""Tests of the Python examples: plot_runs.py (PNG from CSV logs, clear errors on bad input)
and train.py (a short run that learns, the same losses on sim as on the reference, and clear
errors on a bad backend or data folder).
Run by CTest (examples/CMakeLists.txt) with NNPLUG_LIBRARY set to the build's libnnplug."""
import csv
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
DATA = "/usr/share/datasets/fashion-mnist"


def run(*args, timeout=300):
    return subprocess.run([PY, *args], capture_output=True, text=True, timeout=timeout)


def write_log(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["epoch", "model", "backend", "train_loss", "train_accuracy",
                    "test_accuracy", "seconds", "images_per_second"])
        w.writerows(rows)


def test_plot_runs_writes_png(tmp_path):
    a, b = tmp_path / "cpu.csv", tmp_path / "ref.csv"
    write_log(a, [[1, "mlp", "cpu", 0.6, 0.78, 0.83, 2.0, 30000],
                  [2, "mlp", "cpu", 0.4, 0.85, 0.86, 2.0, 30000],
                  [1, "mlp", "cpu", 0.61, 0.77, 0.82, 2.1, 29000]])  # a second run appended
    write_log(b, [[1, "cnn", "reference", 0.5, 0.8, 0.87, 300, 200]])
    out = tmp_path / "runs.png"
    r = run(os.path.join(HERE, "plot_runs.py"), str(a), str(b), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "3 run(s)" in r.stdout
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_runs_rejects_bad_input(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    r = run(os.path.join(HERE, "plot_runs.py"), str(bad), "-o", str(tmp_path / "x.png"))
    assert r.returncode != 0 and "missing columns" in r.stderr
    r = run(os.path.join(HERE, "plot_runs.py"), str(tmp_path / "nope.csv"))
    assert r.returncode != 0 and "cannot open" in r.stderr


@pytest.mark.skipif(not os.path.isdir(DATA), reason="needs dataset-fashion-mnist")
def test_train_mlp_short_run_learns(tmp_path):
    log = tmp_path / "log.csv"
    r = run(os.path.join(HERE, "train.py"), "--backend", os.environ.get(
        "NNPLUG_TEST_BACKEND", "auto"), "--epochs", "2", "--limit", "2048", "--test-limit",
        "1000", "--log", str(log))
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["model"] == "mlp" and summary["epochs"] == 2
    assert summary["test_accuracy"] > 0.65  # 10 classes: chance is 0.1
    rows = list(csv.DictReader(open(log)))
    assert len(rows) == 2 and float(rows[1]["train_loss"]) < float(rows[0]["train_loss"])


@pytest.mark.skipif(not os.path.isdir(DATA), reason="needs dataset-fashion-mnist")
def test_train_mlp_sim_matches_reference():
    """The sim backend computes with the reference kernels: the same run gives the same loss
    and accuracy to the last digit, or the Python host code reads device memory too early."""
    out = {}
    for backend in ("reference", "sim"):
        r = run(os.path.join(HERE, "train.py"), "--backend", backend, "--epochs", "1",
                "--limit", "1024", "--test-limit", "200")
        assert r.returncode == 0, r.stderr
        out[backend] = json.loads(r.stdout.strip().splitlines()[-1])
    for key in ("final_loss", "test_accuracy"):
        assert out["sim"][key] == out["reference"][key], key


@pytest.mark.skipif(not os.path.isdir(DATA), reason="needs dataset-fashion-mnist")
def test_train_vit_learns_and_sim_matches_reference():
    """The vit from Python: it learns, and sim (the reference kernels behind device memory)
    gives the reference's loss and accuracy exactly."""
    out = {}
    for backend in ("reference", "sim"):
        r = run(os.path.join(HERE, "train.py"), "--model", "vit", "--backend", backend,
                "--epochs", "1", "--limit", "256", "--batch", "64", "--test-limit", "64")
        assert r.returncode == 0, r.stderr
        out[backend] = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["reference"]["model"] == "vit"
    for key in ("final_loss", "test_accuracy"):
        assert out["sim"][key] == out["reference"][key], key
    r = run(os.path.join(HERE, "train.py"), "--model", "vit", "--backend", os.environ.get(
        "NNPLUG_TEST_BACKEND", "auto"), "--epochs", "1", "--limit", "2048", "--test-limit", "500")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["test_accuracy"] > 0.4  # chance: 0.1


def test_train_mlp_bad_backend_and_data(tmp_path):
    r = run(os.path.join(HERE, "train.py"), "--backend", "no_such_backend", "--limit", "64")
    assert r.returncode == 1 and "unknown backend 'no_such_backend'" in r.stderr
    r = run(os.path.join(HERE, "train.py"), "--data", str(tmp_path))
    assert r.returncode == 1 and "apt-get install dataset-fashion-mnist" in r.stderr
