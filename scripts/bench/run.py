#!/usr/bin/python3
"""run.py — the phases of scripts/benchmark.sh after the build: records the machine, times the
ops and trains the three models with nnplug and every PyTorch alternately (--rounds rounds of
each), runs the distributed comparison, writes the raw results (JSON) and then the document and
charts (report.py). Standard library only; PyTorch runs in child processes of --torch-python.

  /usr/bin/python3 scripts/bench/run.py --build build --out build/benchmark [--quick]
      [--rounds 3] [--torch-python /usr/bin/python3 [--torch-python venv/bin/python ...] |
      --no-torch]
"""
import argparse
import csv
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "scripts", "bench")
MODELS = ("mlp", "cnn", "vit")

# Images per epoch of each timed run (each run trains 2 epochs of them: the first is the
# warm-up, the second is timed), per-op repetitions and the nnplug-comm-bench sizes.
# The ONNX models' batch, their bench options and the Python overhead options follow.
FULL = {"limit": {"mlp": 30000, "cnn": 12800, "vit": 12800}, "dist_limit": 12800,
        "test_limit": 1000, "reps": 20, "warmup": 3, "comm": [],
        "onnx_batch": 32, "onnx_bench": ["--min-time", "2"], "onnx_make": [], "overhead": []}
QUICK = {"limit": {"mlp": 1280, "cnn": 256, "vit": 256}, "dist_limit": 256,
         "test_limit": 50, "reps": 2, "warmup": 1,
         "comm": ["--max-bytes", "1048576", "--reps", "5"],
         "onnx_batch": 2, "onnx_bench": ["--min-time", "0", "--repeat", "2", "--warmup", "1"],
         "onnx_make": ["--small"], "overhead": ["--quick"]}
ONNX_MODELS = ("mlp", "cnn", "vit", "resnet18", "mobilenet_v2", "vit_tiny")
# PyTorch's fastest settings on a 2-core CPU (the environment is set before it loads).
TORCH_ENV = {"mlp": {"OMP_WAIT_POLICY": "passive"}, "cnn": {"OPENBLAS_NUM_THREADS": "1"},
             "vit": {"OPENBLAS_NUM_THREADS": "1"}}
MPI_ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


class Runner:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.commands = []  # every command run, as a shell line relative to the repository
        self.t0 = time.monotonic()
        self.phase_t0 = self.t0
        self.phases = []
        self.tmp = tempfile.mkdtemp(prefix="nnplug-bench-")

    def rel(self, path):
        path = str(path)
        if os.path.isabs(path) and (path == ROOT or path.startswith(ROOT + os.sep)):
            return os.path.relpath(path, ROOT)
        if path.startswith(self.tmp + os.sep):
            return os.path.basename(path)
        return path

    def bin(self, name):
        return os.path.join(self.build, "bin", name)

    def phase(self, name):
        now = time.monotonic()
        if self.phases:
            self.phases[-1]["seconds"] = round(now - self.phase_t0, 1)
            print(f"== {self.phases[-1]['name']}: {now - self.phase_t0:.1f} s", flush=True)
        self.phase_t0 = now
        if name:
            self.phases.append({"name": name})
            print(f"== {name} (at {now - self.t0:.0f} s)", flush=True)

    def run(self, cmd, env=None, record=True, check=True):
        """Runs cmd (a list) with extra environment env; returns its stdout."""
        full_env = dict(os.environ)
        full_env.update(env or {})
        line = " ".join(f"{k}={shlex.quote(self.rel(v))}" for k, v in (env or {}).items())
        line = (line + " " if line else "") + " ".join(shlex.quote(self.rel(c)) for c in cmd)
        if record and line not in self.commands:
            self.commands.append(line)
        print("$ " + line, flush=True)
        p = subprocess.run(cmd, env=full_env, cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if check and p.returncode != 0:
            sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
            raise SystemExit(f"benchmark: command failed with status {p.returncode}: {line}")
        return p.stdout

    @staticmethod
    def last_json(text):
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
        raise SystemExit("benchmark: no JSON line in the output:\n" + text[-2000:])


# ---- the machine ------------------------------------------------------------------------------

PROBE_LIBS = r"""
import ctypes, json
out = {}
try:
    ob = ctypes.CDLL("libopenblas.so.0")
    for f in ("openblas_get_config", "openblas_get_corename"):
        fn = getattr(ob, f); fn.restype = ctypes.c_char_p
        out[f] = fn().decode()
    out["openblas_num_threads"] = ob.openblas_get_num_threads()
except (OSError, AttributeError) as e:
    out["openblas_error"] = str(e)
try:
    tbb = ctypes.CDLL("libtbb.so.12")
    tbb.TBB_runtime_version.restype = ctypes.c_char_p
    out["tbb_runtime_version"] = tbb.TBB_runtime_version().decode()
    out["tbb_interface_version"] = tbb.TBB_runtime_interface_version()
except (OSError, AttributeError) as e:
    out["tbb_error"] = str(e)
print(json.dumps(out))
"""

PROBE_TORCH = r"""
import json, torch
cfg = torch.__config__.show()
blas = [l.split("BLAS_INFO=")[1].split(",")[0] for l in cfg.splitlines() if "BLAS_INFO=" in l]
out = {"version": torch.__version__, "threads": torch.get_num_threads(),
       "blas": blas[0] if blas else "", "mkldnn": torch.backends.mkldnn.is_available(),
       "cuda_available": torch.cuda.is_available(), "cuda": torch.version.cuda}
if torch.cuda.is_available():
    out["cudnn"] = torch.backends.cudnn.version()
    out["gpu"] = torch.cuda.get_device_name(0)
print(json.dumps(out))
"""


def cpu_info():
    info = {"model": platform.processor(), "flags": []}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        m = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
        if m:
            info["model"] = m.group(1).strip()
        m = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
        flags = set(m.group(1).split()) if m else set()
        simd = ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                "avx512_bf16", "amx_tile", "neon", "asimd", "sve"]
        info["flags"] = [f for f in simd if f in flags]
        if "avx512f" in flags:
            info["simd"] = "AVX-512"
        elif "avx2" in flags:
            info["simd"] = "AVX2"
        elif "asimd" in flags or "neon" in flags:
            info["simd"] = "NEON"
        else:
            info["simd"] = "SSE or less"
    except OSError:
        pass
    return info


def machine(r, torch_pythons):
    m = {"cpu": cpu_info(), "hardware_threads": os.cpu_count(),
         "usable_cpus": len(os.sched_getaffinity(0)), "os": platform.platform(),
         "python": platform.python_version(),
         "env": {k: os.environ.get(k, "") for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
                                                      "OMP_NUM_THREADS", "NNPLUG_NUM_THREADS")}}
    try:
        with open("/proc/meminfo") as f:
            kib = int(re.search(r"MemTotal:\s*(\d+)", f.read()).group(1))
        m["memory_gib"] = round(kib / 2**20, 1)
    except (OSError, AttributeError):
        pass
    m["libraries"] = r.last_json(r.run([sys.executable, "-c", PROBE_LIBS], record=False))
    if shutil.which("nvidia-smi"):
        q = r.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                   "--format=csv,noheader"], record=False, check=False).strip()
        head = r.run(["nvidia-smi"], record=False, check=False)
        cv = re.search(r"CUDA Version:\s*([0-9.]+)", head)
        m["gpu"] = {"nvidia_smi": q.splitlines(), "cuda_driver_api": cv.group(1) if cv else ""}
    hello = r.run([r.bin("hello")], record=False, check=False)
    m["nnplug_devices"] = [ln.strip() for ln in hello.splitlines()
                           if re.match(r"\s+\S+:\d+\s", ln)]
    # plugin paths relative to the repository (the record speaks of the project only)
    m["nnplug_plugins"] = [ln.strip().replace(ROOT + os.sep, "") for ln in hello.splitlines()
                           if re.match(r"\s+\S+\s+(loaded|skipped|failed|refused)", ln)]
    m["torches"] = []
    for py in torch_pythons:
        out = r.run([py, "-c", PROBE_TORCH], record=False, check=False)
        try:
            t = r.last_json(out)
        except SystemExit:
            continue
        t["python"] = r.rel(py)  # the interpreter, relative: commands run with cwd = the repository
        m["torches"].append(t)
    # the first PyTorch that imports (the distributed phase falls back on it)
    m["torch"] = m["torches"][0] if m["torches"] else None
    git = ["git", "-C", ROOT]
    # tracked files that differ from the commit when the run starts (their names, so that the
    # page can say which)
    changed = [line[3:] for line in r.run(git + ["status", "--porcelain", "--untracked-files=no"],
                                          record=False, check=False).splitlines() if line.strip()]
    m["git"] = {
        "commit": r.run(git + ["rev-parse", "HEAD"], record=False, check=False).strip(),
        "commit_date": r.run(git + ["show", "-s", "--format=%cs", "HEAD"], record=False,
                             check=False).strip(),
        "dirty": bool(changed), "changed": changed}
    m["date"] = time.strftime("%Y-%m-%d", time.gmtime())
    return m


def backends(m):
    """The nnplug backends to time: cpu always, cuda when a cuda device exists."""
    names = [d.split()[0] for d in m["nnplug_devices"]]
    if "cpu:0" not in names:
        raise SystemExit("benchmark: the cpu backend has no device (build/bin/hello lists: "
                         + ", ".join(names or ["none"]) + "); build nnplug-cpu")
    return ["cpu"] + (["cuda"] if "cuda:0" in names else [])


# ---- phases -----------------------------------------------------------------------------------

def merge_rounds(runs):
    """One result from the same per-op run repeated: each row's median_us is the median of the
    rounds' medians, its rounds' values kept in rounds_us, its rate scaled to that median."""
    if not runs:
        return None
    out = dict(runs[0])
    rows = []
    for row in runs[0]["rows"]:
        us = [x["median_us"] for run in runs for x in run["rows"] if x["name"] == row["name"]]
        med = statistics.median(us)
        merged = dict(row, median_us=med, rounds_us=us)
        if row.get("rate") and row["median_us"] > 0 and med > 0:
            merged["rate"] = row["rate"] * row["median_us"] / med
        rows.append(merged)
    out["rows"] = rows
    out["rounds"] = len(runs)
    return out


def per_op(r, cfg, bks, torches, threads):
    """nnplug-bench on every backend and torch_ops.py with every PyTorch, alternated over the
    rounds (the order rotating each round); each row's figure is the median of its rounds. Per
    row, "torch" holds the fastest PyTorch's figure (its version in the row's "torch"), every
    PyTorch's in "torch_all"."""
    res = {"nnplug": {}, "torch": {}, "torch_all": {}, "limits": None}
    common = ["--reps", str(cfg["reps"]), "--warmup", str(cfg["warmup"])]
    n_rounds, t_rounds = {b: [] for b in bks}, {}
    contenders = ["nnplug"] + list(torches)
    for rnd in range(r.args.rounds):
        k = rnd % len(contenders)
        for who in contenders[k:] + contenders[:k]:
            if who == "nnplug":
                for b in bks:
                    out = os.path.join(r.tmp, f"ops-{b}.json")
                    r.run([r.bin("nnplug-bench"), "--backend", b, "--set", "all", *common,
                           "--json", out])
                    with open(out) as f:
                        n_rounds[b].append(json.load(f))
                continue
            devs = ["cpu"] + (["cuda"] if "cuda" in bks and who.get("cuda_available") else [])
            for d in devs:
                # all threads for PyTorch's BLAS here (single ops, no inter-op pool to share)
                text = r.run([who["python"], os.path.join(HERE, "torch_ops.py"), "--threads",
                              str(threads), "--set", "all", "--device", d, *common],
                             env={"OPENBLAS_NUM_THREADS": str(threads)})
                t_rounds.setdefault(who["version"], {}).setdefault(d, []).append(
                    r.last_json(text))
    res["nnplug"] = {b: merge_rounds(v) for b, v in n_rounds.items()}
    res["torch_all"] = {ver: {d: merge_rounds(v) for d, v in devs.items()}
                        for ver, devs in t_rounds.items()}
    for d in sorted({d for devs in res["torch_all"].values() for d in devs}):
        best = {}
        for ver, devs in res["torch_all"].items():
            for row in (devs.get(d) or {}).get("rows", []):
                if row["name"] not in best or row["median_us"] < best[row["name"]]["median_us"]:
                    best[row["name"]] = dict(row, torch=ver)
        res["torch"][d] = {"rows": list(best.values())}
    out = os.path.join(r.tmp, "limits.json")
    r.run([r.bin("nnplug-bench"), "--backend", "cpu", "--limits", *common, "--json", out])
    with open(out) as f:
        res["limits"] = json.load(f)
    return res


def nnplug_train(r, model, backend, limit, test_limit, mpi=None):
    log = os.path.join(r.tmp, f"train-{model}-{backend}{'-mpi' if mpi else ''}.csv")
    if os.path.exists(log):
        os.remove(log)  # train appends to its --log
    cmd = [r.bin("train"), "--model", model, "--backend", backend, "--epochs", "2", "--limit",
           str(limit), "--test-limit", str(test_limit), "--log", log]
    env = None
    if mpi:
        cmd = mpi + cmd + ["--threads", "1"]
        env = MPI_ROOT_ENV if os.geteuid() == 0 else None
    text = r.run(cmd, env=env)
    summary = r.last_json(text)
    with open(log) as f:
        rows = list(csv.DictReader(f))
    last = rows[-1]
    m = re.search(r"\((\d+) parameters\)", text)
    return {"images_per_second": float(last["images_per_second"]),
            "seconds": float(last["seconds"]),
            "epoch_seconds": [float(x["seconds"]) for x in rows],
            "parameters": int(m.group(1)) if m else None,
            "test_accuracy": summary.get("test_accuracy"), "ranks": summary.get("ranks", 1)}


def torch_train(r, torch_python, model, device, limit, threads):
    env = dict(TORCH_ENV[model]) if device == "cpu" else {}
    out = r.last_json(r.run([torch_python, os.path.join(HERE, "torch_train.py"), "--model", model,
                             "--device", device, "--threads", str(threads), "--limit", str(limit),
                             "--epochs", "2"], env=env))
    return {"images_per_second": out["images_per_second"], "seconds": out["train_seconds"],
            "epoch_seconds": out["epoch_seconds"], "parameters": out["parameters"],
            "torch": out["torch"], "env": env}


def training(r, cfg, bks, torches, threads):
    """Every model on every backend, nnplug and each PyTorch (torches: the probed interpreters)
    in turn, the order rotating each round. The table compares nnplug with the fastest
    PyTorch of each model and backend (its runs become "torch"); every PyTorch's runs stay in
    "torch_all"."""
    runs = {}
    for rnd in range(r.args.rounds):
        for model in MODELS:
            for b in bks:
                key = f"{model}/{b}"
                v = runs.setdefault(key, {"nnplug": [], "torch_all": {}})
                tdev = "cuda" if b == "cuda" else "cpu"
                contenders = ["nnplug"] + [t for t in torches
                                           if tdev == "cpu" or t.get("cuda_available")]
                k = rnd % len(contenders)
                for who in contenders[k:] + contenders[:k]:
                    if who == "nnplug":
                        v["nnplug"].append(nnplug_train(r, model, b, cfg["limit"][model],
                                                        cfg["test_limit"]))
                    else:
                        v["torch_all"].setdefault(who["version"], []).append(
                            torch_train(r, who["python"], model, tdev, cfg["limit"][model],
                                        threads))
    for key, v in runs.items():
        pn = {x["parameters"] for x in v["nnplug"]}
        for version, tr in v["torch_all"].items():
            pt = {x["parameters"] for x in tr}
            if pn != pt:
                raise SystemExit(f"benchmark: {key}: nnplug has {pn} parameters, PyTorch "
                                 f"{version} {pt}")
        ips = [x["images_per_second"] for x in v["nnplug"]]
        v["nnplug_median"] = statistics.median(ips)
        medians = {ver: statistics.median(x["images_per_second"] for x in tr)
                   for ver, tr in v["torch_all"].items()}
        v["torch_medians"] = medians
        best = max(medians, key=medians.get) if medians else None
        v["torch_version"] = best
        v["torch"] = v["torch_all"][best] if best else []
        v["torch_median"] = medians[best] if best else None
        v["images"] = cfg["limit"][key.split("/")[0]]
    return runs


def distributed(r, cfg, torch_python):
    plugin = os.path.join(r.build, "lib", "nnplug", "plugins", "libnnplug-comm-mpi.so")
    mpirun = shutil.which("mpirun")
    if not mpirun or not os.path.exists(plugin):
        return {"skipped": "no mpirun" if not mpirun else
                "the MPI transport plugin (libnnplug-comm-mpi.so) is not built"}
    mpi = ["mpirun", "--oversubscribe", "-np", "2"]
    env_root = MPI_ROOT_ENV if os.geteuid() == 0 else {}
    res = {"nnplug": [], "torch": [], "images": cfg["dist_limit"]}
    for rnd in range(r.args.rounds):
        order = ["nnplug", "torch"] if rnd % 2 == 0 else ["torch", "nnplug"]
        for who in order:
            if who == "nnplug":
                res["nnplug"].append(nnplug_train(r, "cnn", "cpu", cfg["dist_limit"],
                                                  cfg["test_limit"], mpi=mpi))
            elif torch_python:
                env = dict(env_root)
                env["OPENBLAS_NUM_THREADS"] = "1"
                text = r.run(mpi + [torch_python, os.path.join(ROOT, "scripts",
                                                               "torch-ddp-bench.py"),
                                    "--threads", "1", "--limit", str(cfg["dist_limit"]),
                                    "--epochs", "2"], env=env)
                out = r.last_json(text)
                res["torch"].append({"images_per_second": out["images_per_second"],
                                     "seconds": out["train_seconds"],
                                     "epoch_seconds": out["epoch_seconds"]})
    for who in ("nnplug", "torch"):
        ips = [x["images_per_second"] for x in res[who]]
        res[who + "_median"] = statistics.median(ips) if ips else None
    text = r.run(["mpiexec", "--oversubscribe", "-n", "2", r.bin("nnplug-comm-bench"),
                  *cfg["comm"]], env=env_root or None)
    rows = []
    for line in text.splitlines():
        f = line.split()
        if len(f) == 8 and f[0].isdigit():
            rows.append({"bytes": int(f[0]), "size": f[1] + " " + f[2], "reps": int(f[3]),
                         "nnplug_us": float(f[4]), "mpi_us": float(f[5]), "ratio": float(f[6]),
                         "gb_per_s": float(f[7])})
    res["comm"] = {"header": text.splitlines()[0] if text else "", "rows": rows}
    return res


def nnplug_python_env(r):
    """The environment under which a Python runs this checkout's nnplug package against the
    build's libnnplug."""
    return {"NNPLUG_LIBRARY": os.path.join(r.build, "lib", "libnnplug.so.0"),
            "PYTHONPATH": os.path.join(ROOT, "api", "python")}


def imports(python, modules):
    code = "import " + ", ".join(modules)
    return subprocess.run([python, "-c", code], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def python_overhead(r, cfg):
    """scripts/bench/python_overhead.py (a small op called from Python with DeviceArray, numpy
    and torch inputs, against its targets) under /usr/bin/python3, whose torch rows use
    Debian's PyTorch when it is installed."""
    out = os.path.join(r.tmp, "overhead.json")
    r.run([sys.executable, os.path.join(HERE, "python_overhead.py"), *cfg["overhead"],
           "--json", out], env=nnplug_python_env(r))
    with open(out) as f:
        return json.load(f)


def onnx_models(r, cfg, pythons):
    """The six ONNX models of scripts/make_onnx_models.py (exported by the first Python that
    imports torch and torchvision) run by `python -m nnplug.onnx bench` on cpu at one batch
    size, eagerly and as graph launches, each beside onnxruntime's CPU execution provider in
    the same process (the two alternate in blocks: `bench` without --no-onnxruntime), run by
    the first Python that imports onnx and onnxruntime (or onnx alone: nnplug's figures only),
    --rounds times; each figure is the median of its rounds."""
    maker = next((py for py in pythons if imports(py, ["torch", "torchvision", "onnx"])),
                 None)
    runner = next((py for py in pythons if imports(py, ["onnx", "onnxruntime", "numpy"])),
                  None)
    with_ort = runner is not None
    runner = runner or next((py for py in [sys.executable] + pythons
                             if imports(py, ["onnx", "numpy"])), None)
    if maker is None or runner is None:
        return {"skipped": "no Python here imports " + ("torch, torchvision and onnx"
                                                         if maker is None else "onnx")}
    models_dir = os.path.join(r.tmp, "onnx-models")
    r.run([maker, os.path.join(ROOT, "scripts", "make_onnx_models.py"), *cfg["onnx_make"],
           "--out", models_dir])
    env = nnplug_python_env(r)
    res = {"batch": cfg["onnx_batch"], "runner": r.rel(runner), "onnxruntime": None,
           "models": {}}
    for rnd in range(r.args.rounds):
        for name in ONNX_MODELS:
            v = res["models"].setdefault(name, {"eager_ms": [], "graphs_ms": [],
                                                "onnxruntime_ms": [],
                                                "graphs_onnxruntime_ms": []})
            for graphs in ((False, True) if rnd % 2 == 0 else (True, False)):
                out = os.path.join(r.tmp, f"onnx-{name}.json")
                cmd = [runner, "-m", "nnplug.onnx", "bench",
                       os.path.join(models_dir, name + ".onnx"), "--backend", "cpu",
                       "--batch", str(cfg["onnx_batch"]), *cfg["onnx_bench"], "--json", out]
                if graphs:
                    cmd += ["--graphs"]
                if not with_ort:
                    cmd += ["--no-onnxruntime"]
                r.run(cmd, env=env)
                with open(out) as f:
                    got = json.load(f)
                row = got["rows"][0]
                v["graphs_ms" if graphs else "eager_ms"].append(row["nnplug_ms"])
                if "onnxruntime_ms" in row:  # timed in the same process, alternating
                    v["graphs_onnxruntime_ms" if graphs else "onnxruntime_ms"].append(
                        row["onnxruntime_ms"])
                    res["onnxruntime"] = got["onnxruntime"]
    for v in res["models"].values():
        for k in ("eager_ms", "graphs_ms", "onnxruntime_ms", "graphs_onnxruntime_ms"):
            v[k.replace("_ms", "_median")] = statistics.median(v[k]) if v[k] else None
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default=os.path.join(ROOT, "build", "benchmark"))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--torch-python", action="append", default=None,
                   help="a Python that imports PyTorch (repeatable: every row compares with the "
                        "fastest of them); default /usr/bin/python3")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--command", default="", help="the command line to state in the document")
    args = p.parse_args()
    if args.rounds < 1:
        p.error("--rounds must be >= 1")
    if args.quick:
        args.rounds = 1
    for exe in ("hello", "train", "nnplug-bench"):
        path = os.path.join(args.build, "bin", exe)
        if not os.access(path, os.X_OK):
            raise SystemExit(f"benchmark: {path} is missing: build first (without --no-build)")
    cfg = QUICK if args.quick else FULL
    r = Runner(args)

    r.phase("machine")
    torch_skipped, pythons = None, []
    if args.no_torch:
        torch_skipped = "--no-torch was given"
    else:
        for py in args.torch_python or ["/usr/bin/python3"]:
            found = shutil.which(py) or (py if os.access(py, os.X_OK) else None)
            if found is None:
                raise SystemExit(f"benchmark: --torch-python {py} was not found")
            pythons.append(found)
    m = machine(r, pythons)
    if pythons and not m["torches"]:
        torch_skipped = "PyTorch cannot be imported by " + ", ".join(pythons)
    torches = m["torches"]
    bks = backends(m)
    results = {"machine": m, "quick": args.quick, "rounds": args.rounds, "backends": bks,
               "config": cfg, "torch_skipped": torch_skipped, "command": args.command}

    r.phase("per-op times and limits")
    probe = os.path.join(r.tmp, "threads.json")
    r.run([r.bin("nnplug-bench"), "--backend", "cpu", "--filter", "dispatch", "--reps", "1",
           "--json", probe], record=False)
    with open(probe) as f:
        threads = json.load(f)["num_threads"]
    results["threads"] = threads
    results["ops"] = per_op(r, cfg, bks, torches, threads)

    r.phase("training")
    results["training"] = training(r, cfg, bks, torches, threads)

    r.phase("distributed")
    # PyTorch DDP with the PyTorch that trained the cnn fastest in one process
    cnn = results["training"].get("cnn/cpu", {})
    ddp = next((t for t in torches if t["version"] == cnn.get("torch_version")),
               m.get("torch"))
    results["distributed"] = distributed(r, cfg, ddp["python"] if ddp else None)
    if ddp:
        results["distributed"]["torch_version"] = ddp["version"]

    r.phase("ONNX models")
    results["onnx"] = onnx_models(r, cfg, pythons)

    r.phase("Python call overhead")
    results["python_overhead"] = python_overhead(r, cfg)

    r.phase("report")
    results["commands"] = r.commands
    os.makedirs(args.out, exist_ok=True)
    out_json = os.path.join(args.out, "benchmarks.json")
    results["phases"] = r.phases
    with open(out_json, "w") as f:
        json.dump(results, f, indent=1)
    sys.path.insert(0, HERE)
    import report
    report.write(results, args.out)
    r.phase(None)
    results["phases"] = r.phases
    results["total_seconds"] = round(time.monotonic() - r.t0, 1)
    with open(out_json, "w") as f:
        json.dump(results, f, indent=1)
    shutil.rmtree(r.tmp, ignore_errors=True)
    print(f"benchmark: wrote {out_json}, {os.path.join(args.out, 'benchmarks.md')} and "
          f"{os.path.join(args.out, 'figures')}; total {results['total_seconds']:.0f} s")


if __name__ == "__main__":
    main()
