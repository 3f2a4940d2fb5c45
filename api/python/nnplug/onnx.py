"""nnplug.onnx — runs ONNX models (opset 13 and later) on an nnplug device.

    import numpy as np, nnplug.onnx
    model = nnplug.onnx.load("resnet18.onnx", device="cpu")  # refuses unsupported nodes here
    y = model.run({"input": np.random.rand(8, 3, 224, 224).astype(np.float32)})["logits"]

    python -m nnplug.onnx run MODEL.onnx --backend cpu --input x=x.npy --output out.npz
    python -m nnplug.onnx check MODEL.onnx --backend sim      # against onnxruntime or reference
    python -m nnplug.onnx bench MODEL.onnx --backend cpu --batch 1,8,32

Loading reads the model with the `onnx` package (Debian: python3-onnx), folds what is static
(initializers, Constant nodes, Shape and Size of tensors of known shape, and any node whose
inputs are all constants and that numpy can compute: the shape arithmetic of exported models),
maps every other node to nnplug ops and asks the device, with nnplug.supported, whether it runs
each of them with its shapes and dtypes. Any node without a mapping, or that the device does
not run, refuses the whole model before anything runs: ModelRefusedError (an
nnplug.UnsupportedError) lists every such node with its name, op type and reason.

Running uploads the initializers a model needs once (they stay on the device with the Model),
copies the inputs in, queues every node on a stream of the run's own (a finished run's stream
serves later runs, whose op calls then use their per-signature call plans) with its tensors on
the device (nnplug.DeviceArray; Reshape, Flatten, Squeeze and Unsqueeze are views; Identity and inference
Dropout are the same array), synchronises once and copies the outputs back. Buffers whose last
reader has been queued are reused, in stream order, for later outputs of the same size, and a
finished run's buffers serve the next run of the same input shapes.

load(..., graphs=True) makes every run after the first of given input shapes one launch of a
graph captured from the steps (docs/graphs.md), without the cost of a Python call per node.

Shapes: the inputs' shapes fix every other shape. ONNX shape inference gives each node's output
shapes when the plan for a set of input shapes is made (once per set of shapes: a model with a
dynamic batch dimension is planned again for each new batch size); the ops allocate their outputs
from libnnplug's shape inference (nnp_op_infer_shapes) and the run checks that both agree.

docs/onnx.md has the op list, what is refused, and how to add a mapping. This module holds the
public names and the command line; the Model (loading, planning, running) is in _onnx_plan.py,
the node-to-op mappings (_MAPPINGS) in _onnx_ops.py, constant folding in _onnx_fold.py and the
steps a plan runs in _onnx_steps.py.
"""
import argparse
import importlib
import importlib.util
import json
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._core import Error
from ._onnx_ops import _MAPPINGS
from ._onnx_plan import MIN_OPSET, Model, ModelRefusedError, Refusal

__all__ = ["Model", "ModelRefusedError", "Refusal", "load", "main", "supported_op_types",
           "MIN_OPSET"]

for _public in (Model, ModelRefusedError, Refusal):  # defined in _onnx_plan, public here
    _public.__module__ = "nnplug.onnx"  # also under `python -m nnplug.onnx` (__main__)


def supported_op_types() -> List[str]:
    """ONNX op types with a mapping to nnplug ops (the device decides per node)."""
    return sorted(_MAPPINGS)


def load(model: Any, device: Any = "auto",
         input_shapes: Optional[Dict[str, Sequence[int]]] = None, graphs: bool = False,
         fuse: bool = True) -> Model:
    """Loads an ONNX model (a path, the bytes of one, or an onnx.ModelProto) for `device` (a
    name such as "cpu", "sim", "cuda:0", "reference", or an nnplug.Device) and checks every
    node against the device with the declared input shapes (symbolic dimensions taken as 1
    unless input_shapes gives them). Raises ModelRefusedError listing every node the device
    cannot run, and why.

    graphs=True: from the second run with given input shapes on, a run is one launch of a
    graph captured from the steps (nnplug's Stream.capture; docs/graphs.md), which saves the
    Python and validation cost of every op call; the inputs are copied into, and the outputs
    out of, buffers the graph keeps (runs of one Model are then serialised).

    fuse=True: chains of nodes that one nnplug call computes run as that call (a GELU written
    as Div/Erf/Add/Mul/Mul, MatMul + bias Add, attention written as MatMul/Mul/Softmax/MatMul;
    docs/onnx.md, "Fusions"); fuse=False runs every node as its own call."""
    return Model(model, device, input_shapes, graphs, fuse)


# -------------------------------------------------------------------------------- CLI --
def _read_inputs(specs: Sequence[str], model: Model) -> Dict[str, np.ndarray]:
    feeds: Dict[str, np.ndarray] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = "", spec
        data = np.load(path)
        if isinstance(data, np.ndarray):
            if not name:
                if len(model.inputs) != 1:
                    raise SystemExit(f"--input {spec}: the model has inputs "
                                     f"{list(model.inputs)}; write NAME=FILE.npy")
                name = next(iter(model.inputs))
            feeds[name] = data
        else:  # .npz: the arrays named as inputs
            with data:
                for k in data.files:
                    if k in model.inputs and (not name or k == name):
                        feeds[k] = data[k]
    return feeds


def _random_inputs(model: Model, batch: int, seed: int = 0) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape in model.default_shapes(batch=batch).items():
        dtype = model.inputs[name][1]
        feeds[name] = rng.standard_normal(shape).astype(dtype) if dtype.kind == "f" else \
            np.zeros(shape, dtype)
    return feeds


def _inputs_for(args: argparse.Namespace, model: Model) -> Dict[str, np.ndarray]:
    feeds: Dict[str, np.ndarray] = {}
    expected = getattr(args, "expected", None)
    if expected:
        feeds.update(_read_inputs([expected], model))
    if args.input:
        feeds.update(_read_inputs(args.input, model))
    rest = _random_inputs(model, args.batch) if len(feeds) < len(model.inputs) else {}
    for k, v in rest.items():
        feeds.setdefault(k, v)
    return feeds


def _ort_session(path: str, threads: Optional[int] = None) -> Any:
    try:
        ort = importlib.import_module("onnxruntime")
    except ImportError:
        return None
    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def _differences(got: np.ndarray, want: np.ndarray, rtol: float, atol: float
                 ) -> Dict[str, Any]:
    """How far got is from want (same shape): the largest absolute difference, the largest
    relative one where |want| > atol, the largest |want|, for 2-D outputs of several columns
    how many rows' top-1 classes agree (top1_agree of n), and ok: every element within
    atol + rtol |want| and every top-1 class equal."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    diff = np.abs(g - w)
    rel = np.divide(diff, np.abs(w), out=np.zeros_like(diff), where=np.abs(w) > atol)
    d: Dict[str, Any] = {"max_abs": float(diff.max()) if diff.size else 0.0,
                         "max_rel": float(rel.max()) if rel.size else 0.0,
                         "max_expected": float(np.abs(w).max()) if w.size else 0.0,
                         "ok": bool(np.all(diff <= atol + rtol * np.abs(w)))}
    if got.ndim == 2 and got.shape[1] > 1:
        d["top1_agree"] = int(np.sum(got.argmax(1) == want.argmax(1)))
        d["n"] = int(got.shape[0])
        d["ok"] = d["ok"] and d["top1_agree"] == d["n"]
    return d


def _compare(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float
             ) -> Tuple[bool, str]:
    if got.shape != want.shape:
        return False, f"{name}: shape {got.shape}, expected {want.shape}"
    d = _differences(got, want, rtol, atol)
    line = (f"{name}: shape {got.shape}, max abs diff {d['max_abs']:.3g}, max rel diff "
            f"{d['max_rel']:.3g} (where |expected| > {atol:g}), max |expected| "
            f"{d['max_expected']:.3g}")
    if "top1_agree" in d:
        line += f", top-1 agrees {d['top1_agree']}/{d['n']}"
    ok = bool(d["ok"])
    return ok, line + ("" if ok else f"  BEYOND rtol {rtol:g} / atol {atol:g}")


def _cmd_run(args: argparse.Namespace) -> int:
    model = load(args.model, args.backend, fuse=not args.no_fuse)
    feeds = _inputs_for(args, model)
    out = model.run(feeds)
    if args.output:
        np.savez(args.output, **out)
    for k, v in out.items():
        line = f"{k}: {v.dtype} {tuple(v.shape)}"
        if v.ndim == 2 and v.shape[1] > 1:
            line += f", argmax {v.argmax(1).tolist()[:16]}"
        print(line)
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    model = load(args.model, args.backend, fuse=not args.no_fuse)
    feeds = _inputs_for(args, model)
    got = model.run(feeds)
    want: Dict[str, np.ndarray] = {}
    against = args.against
    if against == "auto":
        against = "expected" if args.expected else \
            "onnxruntime" if _ort_session_available() else "reference"
    if against == "expected":
        if not args.expected:
            raise SystemExit("--against expected needs --expected FILE.npz")
        with np.load(args.expected) as data:
            want = {k[len("expected:"):]: data[k] for k in data.files
                    if k.startswith("expected:")}
        what = f"{args.expected} (expected outputs)"
    elif against == "onnxruntime":
        sess = _ort_session(args.model)
        if sess is None:
            raise SystemExit("onnxruntime is not installed")
        want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        what = "onnxruntime (CPU execution provider)"
    else:
        want = load(args.model, "reference").run(feeds)
        what = "nnplug's reference backend"
    print(f"{args.model} on {model.device.name} against {what}, inputs "
          + ", ".join(f"{k} {tuple(v.shape)}" for k, v in feeds.items()))
    ok = True
    for name, v in got.items():
        if name not in want:
            print(f"{name}: no expected value")
            continue
        good, line = _compare(name, v, want[name], args.rtol, args.atol)
        ok = ok and good
        print(line)
    return 0 if ok else 1


def _ort_session_available() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


def _time(fn: Callable[[], Any], warmup: int, repeat: int, min_seconds: float) -> List[float]:
    for _ in range(warmup):
        fn()
    times: List[float] = []
    start = time.perf_counter()
    while len(times) < repeat or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


# Alternated timing: seconds per block of one side's runs, and the untimed pause before each
# block (see _time_alternated).
_BLOCK_SECONDS = 0.25
_SETTLE_SECONDS = 0.05


def _time_alternated(fns: Sequence[Callable[[], Any]], warmup: int, repeat: int,
                     min_seconds: float) -> List[List[float]]:
    """Times each of fns (the same work on different engines) in alternating blocks of about
    _BLOCK_SECONDS, until each has at least `repeat` timed runs and about min_seconds of them,
    and returns each one's run times in seconds. Alternating makes a machine whose speed drifts
    (other tenants, clock changes) weigh on every side alike; timing one side after the other
    gave the cnn's ratio against onnxruntime anywhere from 0.64 to 1.32 on one 2-core VM.
    Each block begins with one untimed run, which warms the caches the other side's block
    evicted, unless one run takes longer than a block (such a model's tensors outgrow the
    caches within a run); then every run is timed, one per block.
    Before each block the process sleeps _SETTLE_SECONDS, untimed, so that the other side's
    idle worker threads have gone to sleep: onnxruntime's spin-wait after a run for more work
    (session.intra_op.allow_spinning, on by default) and oneTBB's. Without the pause the first
    run of a block shares the cores with them: on the 2-core machine, MobileNetV2 at batch 32
    (one run per block) took nnplug 308-314 ms a run beside an onnxruntime session that did not
    spin and 328-330 ms beside one that did."""
    once = []
    for fn in fns:
        for _ in range(max(warmup, 1)):
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
        once.append(dt)
    times: List[List[float]] = [[] for _ in fns]
    spent = [0.0 for _ in fns]
    while any(len(t) < repeat or s < min_seconds for t, s in zip(times, spent)):
        for i, fn in enumerate(fns):
            time.sleep(_SETTLE_SECONDS)
            if once[i] < _BLOCK_SECONDS:
                fn()  # this block's warm-up run
            block_start = time.perf_counter()
            while True:
                t0 = time.perf_counter()
                fn()
                t1 = time.perf_counter()
                times[i].append(t1 - t0)
                spent[i] += t1 - t0
                if t1 - block_start >= _BLOCK_SECONDS:
                    break
    return times


def _cmd_bench(args: argparse.Namespace) -> int:
    model = load(args.model, args.backend, graphs=args.graphs, fuse=not args.no_fuse)
    sess = None if args.no_onnxruntime else _ort_session(args.model, args.threads)
    batches = [int(b) for b in args.batch.split(",")]
    print(f"{args.model} on {model.device.name} ({model.device.description}); median of "
          f">= {args.repeat} runs after {args.warmup} warm-up, host arrays in and out"
          f"{'; alternating with onnxruntime in blocks of %g s' % _BLOCK_SECONDS if sess else ''}"
          f"{', graph launches' if args.graphs else ''}")
    header = f"{'batch':>6} {'nnplug ms':>10} {'items/s':>10}"
    if sess is not None:
        header += f" {'onnxruntime ms':>15} {'items/s':>10} {'ratio':>6}"
    print(header)
    rows: List[Dict[str, Any]] = []
    for b in batches:
        feeds = _random_inputs(model, b)
        if sess is None:
            t = statistics.median(_time(lambda: model.run(feeds), args.warmup, args.repeat,
                                        args.min_time))
        else:
            s = sess
            ours, theirs = _time_alternated([lambda: model.run(feeds),
                                             lambda: s.run(None, feeds)],
                                            args.warmup, args.repeat, args.min_time)
            t, to = statistics.median(ours), statistics.median(theirs)
        line = f"{b:>6} {t * 1e3:>10.3f} {b / t:>10.1f}"
        row: Dict[str, Any] = {"batch": b, "nnplug_ms": t * 1e3}
        if sess is not None:
            line += f" {to * 1e3:>15.3f} {b / to:>10.1f} {t / to:>6.2f}"
            row["onnxruntime_ms"] = to * 1e3
        rows.append(row)
        print(line, flush=True)
    if args.json:
        ort_version = None
        if sess is not None:
            ort_version = importlib.import_module("onnxruntime").__version__
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "device": model.device.name,
                       "description": model.device.description, "graphs": bool(args.graphs),
                       "onnxruntime": ort_version, "threads": args.threads, "rows": rows},
                      f, indent=1)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m nnplug.onnx {run,check,bench} MODEL.onnx ...`; --help for the options."""
    ap = argparse.ArgumentParser(prog="python -m nnplug.onnx",
                                 description="Run ONNX models on an nnplug device.")
    sub = ap.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("model", help="the .onnx file")
        p.add_argument("--backend", default="auto",
                       help="nnplug device: cpu, reference, sim, cuda:0, auto (default)")
        p.add_argument("--no-fuse", action="store_true",
                       help="run every node as its own call (nnplug.onnx.load(fuse=False))")

    def inputs(p: argparse.ArgumentParser) -> None:
        p.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                       help="an input from a .npy file (NAME= may be left out for a model of "
                       "one input), or the arrays of an .npz named as inputs; repeatable. "
                       "Inputs not given are random normal")
        p.add_argument("--batch", type=int, default=1,
                       help="symbolic (batch) dimensions of random inputs (default 1)")

    p = sub.add_parser("run", help="run the model once")
    common(p)
    inputs(p)
    p.add_argument("--output", metavar="FILE.npz", help="write the outputs (by name)")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("check", help="compare the outputs with another implementation and "
                       "print the largest absolute and relative differences per output")
    common(p)
    inputs(p)
    p.add_argument("--expected", metavar="FILE.npz",
                   help="inputs and expected outputs ('expected:NAME' arrays), as "
                   "scripts/make_onnx_models.py writes them")
    p.add_argument("--against", choices=("auto", "onnxruntime", "reference", "expected"),
                   default="auto", help="auto: --expected when given, else onnxruntime when "
                   "installed, else nnplug's reference backend")
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--atol", type=float, default=1e-4)
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("bench", help="median latency and throughput per batch size (against "
                       "onnxruntime's CPU execution provider when installed)")
    common(p)
    p.add_argument("--batch", default="1,8,32", help="comma-separated batch sizes")
    p.add_argument("--repeat", type=int, default=10, help="timed runs at least (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    p.add_argument("--min-time", type=float, default=1.0,
                   help="time each side for at least this many seconds per batch size "
                   "(default 1); with onnxruntime the two alternate in blocks of 0.25 s, each "
                   "after an untimed pause of 0.05 s")
    p.add_argument("--threads", type=int, help="onnxruntime's intra-op threads")
    p.add_argument("--no-onnxruntime", action="store_true", help="skip onnxruntime")
    p.add_argument("--graphs", action="store_true",
                   help="run as graph launches (nnplug.onnx.load(graphs=True); the first of "
                   "the warm-up runs is eager, the second captures)")
    p.add_argument("--json", metavar="FILE",
                   help="also write the figures to FILE: model, device, graphs, onnxruntime "
                   "(its version, or null when it was not timed) and rows of batch, "
                   "nnplug_ms and onnxruntime_ms (medians, milliseconds per run)")
    p.set_defaults(func=_cmd_bench)

    args = ap.parse_args(argv)
    try:
        return int(args.func(args))
    except ModelRefusedError as e:
        print(f"refused: {e.message}", file=sys.stderr)
        return 2
    except Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
