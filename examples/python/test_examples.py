"""Tests of the Python examples: plot_runs.py (PNG from --log and --loss-log CSV files, clear
errors on bad input)
and train.py (a short run that learns, the same losses on sim as on the reference, and clear
errors on a bad backend or data folder; data-parallel runs: --distributed self gives the
single-process losses bit for bit, two MPI ranks give them within float32 rounding, a failing
rank ends the job, and clear errors without a launcher or mpi4py).
Run by CTest (examples/CMakeLists.txt) with NNPLUG_LIBRARY set to the build's libnnplug. The
MPI tests skip, saying why, without mpirun, mpi4py or nnplug's MPI transport
(libnnplug-comm-mpi.so)."""
import csv
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

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


def test_plot_runs_plots_loss_log(tmp_path):
    # the --loss-log format of train: epoch,step,loss, the step counted from 1 in each epoch
    losses = tmp_path / "losses.csv"
    rows = [(e, s, 2.3 / (1 + 0.1 * ((e - 1) * 40 + s))) for e in (1, 2) for s in range(1, 41)]
    losses.write_text("epoch,step,loss\n" + "".join(f"{e},{s},{v:.9g}\n" for e, s, v in rows))
    out = tmp_path / "losses.png"
    r = run(os.path.join(HERE, "plot_runs.py"), str(losses), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "1 per-step run(s)" in r.stdout and "(0 run" not in r.stdout
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # both kinds at once: the per-epoch panels and the per-step one
    epochs = tmp_path / "cpu.csv"
    write_log(epochs, [[1, "mlp", "cpu", 0.6, 0.78, 0.83, 2.0, 30000]])
    r = run(os.path.join(HERE, "plot_runs.py"), str(epochs), str(losses), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "1 run(s), 1 per-step run(s)" in r.stdout
    # a malformed step row is an error naming the line
    bad = tmp_path / "bad-steps.csv"
    bad.write_text("epoch,step,loss\n1,1,0.5\n1,x,0.4\n")
    r = run(os.path.join(HERE, "plot_runs.py"), str(bad), "-o", str(out))
    assert r.returncode != 0 and "bad-steps.csv:3: malformed row" in r.stderr


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


# ------------------------------------------------------------------- distributed runs --
LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")
# Open MPI refuses root and more ranks than cores without these (its --allow-run-as-root and
# --oversubscribe as environment variables, which other MPIs ignore); no CMA in containers.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
RTOL = 1e-4  # float32 sums in another order: shares, then the all-reduce
# A host-memory device (the mpi transport's): CTest's choice (cpu, or reference without it).
MPI_BACKEND = os.environ.get("NNPLUG_TEST_BACKEND", "cpu")


def plain_env(**extra):
    """This environment without an MPI launcher's variables (pytest may itself run under one)."""
    env = {k: v for k, v in os.environ.items()
           if k not in LAUNCHER_VARIABLES and not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    env.update(extra)
    return env


@functools.lru_cache(maxsize=None)
def mpi_missing():
    """Why two-rank runs cannot be tested here, or None."""
    if shutil.which("mpirun") is None:
        return "no mpirun"
    if importlib.util.find_spec("mpi4py") is None:
        return "no mpi4py (Debian: python3-mpi4py)"
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); from mpi4py import MPI; "
             "import nnplug; nnplug.communicator('reference', 'mpi', mpi_comm=MPI.COMM_WORLD)"
             ".destroy()")
    r = subprocess.run([PY, "-c", probe, os.path.join(HERE, "..", "..", "api", "python")],
                       capture_output=True, text=True, timeout=120, env=plain_env())
    if r.returncode != 0:
        return ("no MPI transport: " + (r.stderr.strip().splitlines() or ["?"])[-1])[:300]
    return None


@pytest.fixture
def mpi_ok():
    """Skips the test, saying why, when two-rank runs cannot be made here."""
    why = mpi_missing()
    if why:
        pytest.skip(why)


def needs_mpi(f):
    f = pytest.mark.skipif(not os.path.isdir(DATA), reason="needs dataset-fashion-mnist")(f)
    return pytest.mark.usefixtures("mpi_ok")(f)


def train_cmd(*args):
    return [PY, os.path.join(HERE, "train.py"), *args]


def mpirun(ranks, *args, timeout=300, env=None):
    return subprocess.run(["mpirun", "-np", str(ranks), *args], capture_output=True, text=True,
                          timeout=timeout, env=plain_env(**MPI_ENV, **(env or {})))


def losses(path):
    with open(path, newline="") as f:
        return [float(row["loss"]) for row in csv.DictReader(f)]


@pytest.mark.skipif(not os.path.isdir(DATA), reason="needs dataset-fashion-mnist")
@pytest.mark.parametrize("model", ["mlp", "vit"])
def test_train_distributed_self_matches_single_process(tmp_path, model):
    """--distributed self: buckets, the communication thread, the broadcast, the identity
    check, on one rank with the self transport: the losses of a plain run bit for bit."""
    args = ["--model", model, "--backend", os.environ.get("NNPLUG_TEST_BACKEND", "auto"),
            "--epochs", "1", "--limit", "512" if model == "mlp" else "256", "--batch", "64",
            "--test-limit", "200"]
    out = {}
    for mode in ("none", "self"):
        r = subprocess.run(train_cmd(*args, "--distributed", mode, "--overlap", "on",
                                     "--loss-log", str(tmp_path / f"{mode}.csv")),
                           capture_output=True, text=True, timeout=300, env=plain_env())
        assert r.returncode == 0, r.stderr
        out[mode] = json.loads(r.stdout.strip().splitlines()[-1])
        assert (out[mode]["ranks"], out[mode]["distributed"]) == (1, mode)
    assert "bitwise identical on all 1 rank" in r.stdout
    assert losses(tmp_path / "self.csv") == losses(tmp_path / "none.csv")
    assert out["self"]["test_accuracy"] == out["none"]["test_accuracy"]


@needs_mpi
@pytest.mark.parametrize("model,limit,batch,overlap",
                         [("mlp", 1024, 128, "auto"), ("vit", 384, 96, "on")])
def test_train_two_ranks_match_single_process(tmp_path, model, limit, batch, overlap):
    """mpirun -np 2: each rank trains on half of every global batch (the whole batch's dropout
    masks), the gradients are summed in buckets (after backward with --overlap auto on the cpu,
    during backward with --overlap on); the global loss of every
    step equals the single process's within float32 reduction order, the replicas stay
    bitwise identical, only rank 0 prints, and the JSON line says ranks and distributed.
    The last batch is partial (limit % batch != 0 for the vit)."""
    args = ["--model", model, "--backend", MPI_BACKEND, "--epochs", "1", "--limit", str(limit),
            "--batch", str(batch), "--test-limit", "500"]
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    r1 = subprocess.run(train_cmd(*args, "--threads", "2", "--loss-log", str(one)),
                        capture_output=True, text=True, timeout=300, env=plain_env())
    assert r1.returncode == 0, r1.stderr
    r2 = mpirun(2, *train_cmd(*args, "--threads", "1", "--overlap", overlap, "--loss-log",
                              str(two)))
    assert r2.returncode == 0, r2.stdout + r2.stderr
    s1 = json.loads(r1.stdout.strip().splitlines()[-1])
    s2 = json.loads(r2.stdout.strip().splitlines()[-1])
    assert (s1["ranks"], s1["distributed"]) == (1, "none")
    assert (s2["ranks"], s2["distributed"]) == (2, "mpi")
    assert set(s1) == set(s2) and s2["batch"] == batch
    assert r2.stdout.count('{"model"') == 1  # rank 0 alone prints
    assert "bitwise identical on all 2 ranks" in r2.stdout
    a, b = losses(one), losses(two)
    assert len(a) == len(b) == -(-limit // batch)
    for step, (x, y) in enumerate(zip(a, b), 1):
        assert abs(x - y) <= RTOL * abs(x), f"step {step}: single {x}, two ranks {y}"
    assert abs(s1["test_accuracy"] - s2["test_accuracy"]) <= 0.002  # sharded evaluation


@needs_mpi
def test_train_failing_rank_ends_the_job():
    """An nnplug error on rank 1 (the NNPLUG_TRAIN_FAULT hook) names the rank and the message,
    and MPI_Abort ends rank 0 too instead of leaving it in a collective."""
    t0 = time.monotonic()
    r = mpirun(2, *train_cmd("--backend", MPI_BACKEND, "--epochs", "1", "--limit", "1024",
                             "--test-limit", "100", "--threads", "1"), timeout=120,
               env={"NNPLUG_TRAIN_FAULT": "1:3:error"})
    assert r.returncode != 0
    assert time.monotonic() - t0 < 60
    assert "train: rank 1 of 2: error: INVALID_ARGUMENT: gemm" in r.stderr, r.stderr


def test_train_distributed_mpi_needs_launcher_and_mpi4py(tmp_path):
    r = subprocess.run(train_cmd("--distributed", "mpi", "--limit", "64"), capture_output=True,
                       text=True, timeout=120, env=plain_env())
    assert r.returncode == 1 and "not started by an MPI launcher" in r.stderr, r.stderr
    assert "mpirun -np N" in r.stderr
    # mpi4py missing: a module of that name that cannot be imported comes first on the path
    (tmp_path / "mpi4py.py").write_text("raise ImportError('No module named mpi4py')\n")
    env = plain_env(PYTHONPATH=str(tmp_path), OMPI_COMM_WORLD_SIZE="2")
    for extra in (["--distributed", "mpi"], []):  # asked for, or auto under a launcher
        r = subprocess.run(train_cmd(*extra, "--limit", "64"), capture_output=True, text=True,
                           timeout=120, env=env)
        assert r.returncode == 1 and "needs mpi4py, which cannot be imported" in r.stderr, \
            r.stderr
        assert "apt-get install python3-mpi4py" in r.stderr
