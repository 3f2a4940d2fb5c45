#!/usr/bin/env python3
"""torch_gpu_rows.py — PyTorch on the GPU at the shapes of nnplug-bench's GEMM, attention and
layer-norm rows (conformance/perf/bench_ops.cpp), for side-by-side figures
(docs/benchmarks.md). Each row is timed as nnplug-bench times it: the call, then
torch.cuda.synchronize(), wall clock, median of --reps after --warmup calls. Prints one JSON
object (the last line).

  python3 scripts/torch_gpu_rows.py [--reps 20] [--warmup 3]

Rows: GEMM M=N=K in {1024, 2048, 4096} in exact float32, in TF32, and in float16 and bfloat16
with float32 accumulation (PyTorch's reduced-precision reductions off, as nnplug's cuBLAS calls
compute in float32); F.scaled_dot_product_attention
forward and forward+backward in float32, float16 and bfloat16 (rows named " f16", " bf16") at the
vit's shape (128 x 4 heads x 17 x 16) and at 8 x 8 x 256 x 64 and 2 x 8 x 1024 x 64 (layout
[B, H, T, D]); F.layer_norm forward and backward at [2176, 64] in the same three dtypes.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


def timed(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    us = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        us.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(us), min(us)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch_gpu_rows: PyTorch sees no CUDA device")
    dev = torch.device("cuda")
    torch.manual_seed(0)
    rows = []

    def add(name, shape, fn, flop=0.0):
        med, mn = timed(fn, a.reps, a.warmup)
        rows.append({"name": name, "shape": shape, "median_us": round(med, 1), "min_us": round(mn, 1),
                     "gflops": round(flop / (med * 1e3), 1) if flop else None})
        print(f"{name:<34} {shape:<28} {med:10.1f} us" + (f" {flop / (med * 1e3):10.1f} GFLOP/s" if flop else ""),
              flush=True)

    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for n in (1024, 2048, 4096):
            x = torch.randn(n, n, device=dev)
            y = torch.randn(n, n, device=dev)
            add(f"gemm {n} {'tf32' if tf32 else 'fp32'}", f"M=N=K={n}", lambda: torch.mm(x, y), 2.0 * n ** 3)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    for suffix, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        for n in (1024, 2048, 4096):
            x = torch.randn(n, n, device=dev, dtype=dtype)
            y = torch.randn(n, n, device=dev, dtype=dtype)
            add(f"gemm {n} {suffix}", f"M=N=K={n}", lambda: torch.mm(x, y), 2.0 * n ** 3)

    for label, (b, h, t, d) in (("vit", (128, 4, 17, 16)), ("T256", (8, 8, 256, 64)),
                                ("T1024", (2, 8, 1024, 64))):
        for suffix, dtype in (("", torch.float32), (" f16", torch.float16),
                              (" bf16", torch.bfloat16)):
            q, k, v = (torch.randn(b, h, t, d, device=dev, dtype=dtype, requires_grad=True)
                       for _ in range(3))
            g = torch.randn(b, h, t, d, device=dev, dtype=dtype)
            flop_f = 4.0 * b * h * t * t * d
            shape = f"{b}x{h}x{t}x{d}"
            add(f"sdpa fwd {label}{suffix}", shape,
                lambda: F.scaled_dot_product_attention(q, k, v), flop_f)

            def fwd_bwd():
                out = F.scaled_dot_product_attention(q, k, v)
                torch.autograd.grad(out, (q, k, v), g)
            add(f"sdpa fwd+bwd {label}{suffix}", shape, fwd_bwd, 3.5 * flop_f)

    for suffix, dtype in (("", torch.float32), (" f16", torch.float16),
                          (" bf16", torch.bfloat16)):
        x = torch.randn(2176, 64, device=dev, dtype=dtype, requires_grad=True)
        w = torch.randn(64, device=dev, dtype=dtype, requires_grad=True)
        bias = torch.randn(64, device=dev, dtype=dtype, requires_grad=True)
        gy = torch.randn(2176, 64, device=dev, dtype=dtype)
        add(f"layer_norm fwd vit{suffix}", "2176x64", lambda: F.layer_norm(x, (64,), w, bias))

        def ln_fwd_bwd():
            out = F.layer_norm(x, (64,), w, bias)
            torch.autograd.grad(out, (x, w, bias), gy)
        add(f"layer_norm fwd+bwd vit{suffix}", "2176x64", ln_fwd_bwd)

    print(json.dumps({"bench": "torch_gpu_rows", "torch": torch.__version__,
                      "device": torch.cuda.get_device_name(0), "reps": a.reps, "rows": rows}))


if __name__ == "__main__":
    main()
