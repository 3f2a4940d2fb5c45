#!/usr/bin/env python3
"""onnx_gpu_rows.py — the six ONNX models of scripts/make_onnx_models.py (mlp, cnn, vit,
resnet18, mobilenet_v2, vit_tiny; random weights, full size) run by nnplug.onnx on an nnplug
device beside PyTorch eager on the same GPU: the outputs compared (docs/onnx.md's acceptance:
rtol 1e-3 / atol 1e-4 and equal top-1 on a batch of --check-batch inputs) and the latency timed.

    python3 scripts/bench/onnx_gpu_rows.py [--device cuda:0] [--batch 32] [--check-batch 64]
                                           [--min-time 1] [--json FILE] [NAME ...]

For each model: PyTorch builds it (make_onnx_models.build), exports it to ONNX in memory, and
nnplug.onnx loads it for --device. Check: the same inputs through nnplug (eager) and through
the PyTorch module on CUDA in exact float32 (TF32 off), and through onnxruntime's CPU execution
provider when it is installed. Timing: host arrays in and out on both sides (nnplug.onnx's
Model.run, eager and with graphs=True; PyTorch: the copy to the GPU, the module under
torch.no_grad(), the copy back), median of the runs of at least --min-time seconds after two
warm-up runs. Prints one line per model and, last, one JSON object with every row; exits 1
when a model's outputs are beyond the tolerances or a model is refused.

--float16: the models converted to float16 (make_onnx_models.to_float16) against the PyTorch
module in float16 on the GPU (float32 accumulation in its GEMMs, as nnplug's cuBLAS calls; in
float32 where PyTorch has no GPU), default tolerances rtol 1e-2 / atol 1e-3 and equal top-1; no onnxruntime check (its CPU
provider has few float16 kernels). A refused model fails in float16 too: the six run on cuda
(the vits' LayerNormalization in float16 with float32 statistics, ABI 1.10).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # scripts/: make_onnx_models
import make_onnx_models as mom  # noqa: E402

import nnplug  # noqa: E402
import nnplug.onnx as nonnx  # noqa: E402


def timed_ms(fn, min_time):
    for _ in range(2):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def compare(got, want, rtol, atol):
    """nnplug.onnx check's figures (max_abs, max_rel, max_expected, top1_agree of n, ok)."""
    if got.shape != want.shape:
        return {"ok": False, "shape": list(got.shape), "expected_shape": list(want.shape)}
    return nonnx._differences(got, want, rtol, atol)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(mom.NAMES))
    ap.add_argument("--device", default="cuda:0", help="nnplug device (default cuda:0)")
    ap.add_argument("--batch", type=int, default=32, help="timed batch (default 32)")
    ap.add_argument("--check-batch", type=int, default=64, help="checked batch (default 64)")
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--rtol", type=float, help="default 1e-3 (float16: 1e-2)")
    ap.add_argument("--atol", type=float, help="default 1e-4 (float16: 1e-3)")
    ap.add_argument("--float16", action="store_true", help="the models in float16")
    ap.add_argument("--no-timing", action="store_true", help="check only")
    ap.add_argument("--json", metavar="FILE", help="also write the JSON object to FILE")
    args = ap.parse_args()
    if args.rtol is None:
        args.rtol = 1e-2 if args.float16 else 1e-3
    if args.atol is None:
        args.atol = 1e-3 if args.float16 else 1e-4
    dt = np.float16 if args.float16 else np.float32
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    tdev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if args.float16:
        ort = None
    dev = nnplug.device(args.device)
    rows, failed = [], False
    for name in args.names:
        row = {"model": name, "device": dev.name, "dtype": np.dtype(dt).name}
        model, shape = mom.build(name)
        rng = np.random.default_rng(7)
        x = rng.standard_normal((args.check_batch,) + shape).astype(np.float32)
        t0 = time.perf_counter()
        data = mom.export_bytes(model, torch.from_numpy(x[:2]))
        if args.float16:
            data = mom.to_float16(data)
        x = x.astype(dt)
        row["export_s"] = round(time.perf_counter() - t0, 2)
        try:
            nm = nonnx.load(data, dev)
        except nonnx.ModelRefusedError as e:
            row["refused"] = str(e)
            failed = True
            rows.append(row)
            print(f"{name}: refused: {e}", flush=True)
            continue
        out_name = mom.OUTPUT_NAME
        got = nm.run({mom.INPUT_NAME: x})[out_name]
        # PyTorch in float16 on the GPU (in float32 without one: its CPU kernels lack float16)
        tdt = torch.float16 if args.float16 and tdev.type == "cuda" else torch.float32
        row["torch_dtype"] = str(tdt).replace("torch.", "")
        tmodel = model.to(tdev, tdt)
        with torch.no_grad():
            want = tmodel(torch.from_numpy(x).to(tdev, tdt)).float().cpu().numpy()
        row["check_torch"] = compare(got, want, args.rtol, args.atol)
        ok = row["check_torch"]["ok"]
        if ort is not None:
            sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
            row["check_onnxruntime"] = compare(got, sess.run(None, {mom.INPUT_NAME: x})[0],
                                               args.rtol, args.atol)
            ok = ok and row["check_onnxruntime"]["ok"]
        failed = failed or not ok
        if not args.no_timing:
            xb = x[:args.batch] if args.batch <= x.shape[0] else \
                rng.standard_normal((args.batch,) + shape).astype(dt)
            row["batch"] = int(xb.shape[0])
            row["nnplug_ms"] = timed_ms(lambda: nm.run({mom.INPUT_NAME: xb}), args.min_time)
            ng = nonnx.load(data, dev, graphs=True)
            row["nnplug_graphs_ms"] = timed_ms(lambda: ng.run({mom.INPUT_NAME: xb}),
                                               args.min_time)

            def torch_run():
                with torch.no_grad():
                    return tmodel(torch.from_numpy(xb).to(tdev, tdt)).cpu()
            row["torch_ms"] = timed_ms(torch_run, args.min_time)
        rows.append(row)
        print(f"{name}: {'ok' if ok else 'MISMATCH'} {json.dumps(row)}", flush=True)
    result = {"bench": "onnx_gpu_rows", "torch": torch.__version__,
              "onnxruntime": ort.__version__ if ort is not None else None,
              "device": dev.name, "description": dev.description,
              "torch_device": torch.cuda.get_device_name(0) if tdev.type == "cuda" else "cpu",
              "dtype": np.dtype(dt).name, "rtol": args.rtol, "atol": args.atol, "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps(result))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
