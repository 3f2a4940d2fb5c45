#!/usr/bin/python3
"""torch_ops.py — PyTorch's time per call on the shapes of nnplug-bench's per-op rows, under the
same row names (scripts/benchmark.sh divides nnplug's time by these). Each row: --warmup untimed
calls, then the median and minimum of --reps timed calls (each synchronised on a GPU). Rows
without a PyTorch counterpart of the same work are left out. Prints one JSON object.

  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 scripts/bench/torch_ops.py --threads 2 --set all

Where the work differs from nnplug's, the row's "note" says so: the attention backward takes
autograd's saved probabilities (nnplug recomputes them from the saved log-sum-exp), and the
allocating PyTorch calls (relu, dropout, softmax cross-entropy) include their allocation.
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F

# nnplug-bench's model GEMMs (model_gemms in conformance/perf/bench_blas.cpp): the dense
# layers at batch 128 (the vit's on 128 * 17 token rows, its embedding on 128 * 16 patches).
LAYERS = [("mlp.fc1", 128, 784, 512), ("mlp.fc2", 128, 512, 512), ("mlp.fc3", 128, 512, 10),
          ("cnn.fc1", 128, 9216, 128), ("cnn.fc2", 128, 128, 10), ("vit.embed", 2048, 49, 64),
          ("vit.q/k/v/proj", 2176, 64, 64), ("vit.fc1", 2176, 64, 128),
          ("vit.fc2", 2176, 128, 64), ("vit.head", 128, 64, 10)]
ATTENTION = {"vit": (128, 4, 17, 16), "T256": (8, 8, 256, 64), "T1024": (2, 8, 1024, 64)}


class Bench:
    def __init__(self, dev, reps, warmup, filt):
        self.dev, self.reps, self.warmup, self.filter = dev, reps, warmup, filt
        self.rows = []
        self.sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def rand(self, *shape, scale=1.0):
        return (torch.rand(*shape, device=self.dev) * 2 - 1) * scale

    def measure(self, name, shape, fn, note=""):
        if self.filter and self.filter not in name:
            return
        for _ in range(self.warmup):
            fn()
        self.sync()
        us = []
        for _ in range(self.reps):
            t0 = time.perf_counter()
            fn()
            self.sync()
            us.append((time.perf_counter() - t0) * 1e6)
        row = {"name": name, "shape": shape, "median_us": statistics.median(us),
               "min_us": min(us)}
        if note:
            row["note"] = note
        self.rows.append(row)
        print(f"{name:34s} {shape:28s} {row['median_us']:12.1f} {row['min_us']:12.1f}",
              file=sys.stderr, flush=True)


def model_ops(b):
    for what, rows, fin, fout in LAYERS:
        # forward X.W, backward-data dY.W^T, backward-weights X^T.dY (W stored [in, out])
        for kind, m, n, k, ta, tb in (("fwd", rows, fout, fin, 0, 0),
                                      ("bwd_x", rows, fin, fout, 0, 1),
                                      ("bwd_w", fin, fout, rows, 1, 0)):
            a = b.rand(k, m) if ta else b.rand(m, k)
            w = b.rand(n, k) if tb else b.rand(k, n)
            y = torch.empty(m, n, device=b.dev)
            aa, ww = (a.t() if ta else a), (w.t() if tb else w)
            b.measure(f"gemm {what} {kind}", f"M={m} N={n} K={k}",
                      lambda aa=aa, ww=ww, y=y: torch.mm(aa, ww, out=y))
    bh, t, d = 128 * 4, 17, 16
    q, kt, k = b.rand(bh, t, d), b.rand(bh, d, t), b.rand(bh, t, d)
    s, v, o = torch.empty(bh, t, t, device=b.dev), b.rand(bh, t, d), torch.empty(bh, t, d,
                                                                                device=b.dev)
    b.measure("matmul attention q.kT", f"{bh}x{t}x{d} x {bh}x{d}x{t}",
              lambda: torch.bmm(q, kt, out=s))
    b.measure("matmul attention q.k trans_b", f"{bh}x{t}x{d} x {bh}x{t}x{d} tb1",
              lambda: torch.bmm(q, k.transpose(1, 2), out=s))
    b.measure("matmul attention p.v", f"{bh}x{t}x{t} x {bh}x{t}x{d}",
              lambda: torch.bmm(s, v, out=o))
    for name, c, h, kk in (("cnn.conv1", 1, 28, 32), ("cnn.conv2", 32, 26, 64)):
        conv(b, name, 128, c, h, kk, 0, f"128x{c}x{h}x{h} k{kk} 3x3")
    batch = 128
    x, dy = b.rand(batch, 64, 24, 24), b.rand(batch, 64, 12, 12)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    shape = f"{batch}x64x24x24"
    b.measure("maxpool2 fwd", shape, lambda: F.max_pool2d(x, 2))
    b.measure("maxpool2 bwd", shape, lambda: torch.ops.aten.max_pool2d_with_indices_backward(
        dy, x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx))
    out = torch.empty_like(x)
    b.measure("relu fwd", shape, lambda: torch.clamp(x, min=0, out=out))
    b.measure("relu bwd", shape, lambda: torch.ops.aten.threshold_backward(out, x, 0),
              "allocates its output")
    b.measure("dropout fwd", f"{batch}x9216", lambda: F.dropout(y, 0.25, training=True),
              "allocates its output and mask")
    rows = 128 * 17
    xl, dyl = b.rand(rows, 64), b.rand(rows, 64)
    scale, bias = b.rand(64), b.rand(64, scale=0.1)
    _, mean, rstd = torch.native_layer_norm(xl, [64], scale, bias, 1e-5)
    b.measure("layer_norm fwd vit", f"{rows}x64",
              lambda: torch.native_layer_norm(xl, [64], scale, bias, 1e-5))
    b.measure("layer_norm bwd vit", f"{rows}x64", lambda: torch.ops.aten.native_layer_norm_backward(
        dyl, xl, [64], mean, rstd, scale, bias, [True, True, True]))
    h, dh = b.rand(rows, 128, scale=0.5), b.rand(rows, 128)
    b.measure("gelu fwd vit", f"{rows}x128", lambda: F.gelu(h))
    b.measure("gelu bwd vit", f"{rows}x128", lambda: torch.ops.aten.gelu_backward(dh, h))
    logits = b.rand(batch, 10, scale=2.0)
    labels = torch.randint(0, 10, (batch,), device=b.dev)
    b.measure("softmax_xent fwd", f"{batch}x10", lambda: F.cross_entropy(logits, labels))
    n = 32 * 9 + 32 + 64 * 32 * 9 + 64 + 9216 * 128 + 128 + 128 * 10 + 10
    w = torch.nn.Parameter(b.rand(n, scale=0.1))
    w.grad = b.rand(n, scale=0.01)
    opt = torch.optim.Adam([w], lr=1e-3)
    b.measure("adam", f"{n} params", opt.step)


def conv(b, name, n, c, h, k, pad, shape):
    x, w, bias = b.rand(n, c, h, h), b.rand(k, c, 3, 3, scale=0.1), b.rand(k, scale=0.1)
    y = F.conv2d(x, w, bias, padding=pad)
    dy = b.rand(*y.shape)
    cb = torch.ops.aten.convolution_backward

    def bwd(mask):
        return lambda: cb(dy, x, w, [k], [1, 1], [pad, pad], [1, 1], False, [0, 0], 1, mask)
    b.measure(f"conv fwd {name}", shape, lambda: F.conv2d(x, w, bias, padding=pad))
    b.measure(f"conv bwd_data {name}", shape, bwd([True, False, False]))
    b.measure(f"conv bwd_filter {name}", shape, bwd([False, True, False]))


def attention(b, names):
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    for name in names:
        bb, hh, t, d = ATTENTION[name]
        q, k, v = (b.rand(bb, hh, t, d).requires_grad_() for _ in range(3))
        dy = b.rand(bb, hh, t, d)

        def fwd(q=q, k=k, v=v, d=d):
            if sdpa is not None:
                return sdpa(q, k, v)
            s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            return torch.matmul(torch.softmax(s, dim=-1), v)
        shape = f"{bb}x{hh}x{t}x{d}"
        with torch.no_grad():
            b.measure(f"attention fwd {name}", shape, fwd,
                      "" if sdpa else "matmul, softmax, matmul (PyTorch has no fused attention)")
        y = fwd()
        b.measure(f"attention bwd {name}", shape,
                  lambda y=y, q=q, k=k, v=v, dy=dy: torch.autograd.grad(y, (q, k, v), dy,
                                                                        retain_graph=True),
                  "autograd; uses the forward's saved tensors")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--set", choices=["models", "large", "all"], default="models")
    p.add_argument("--filter", default="", help="only rows whose name contains this text")
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    if args.threads < 1 or args.reps < 1 or args.warmup < 0:
        p.error("--threads and --reps must be >= 1, --warmup >= 0")
    torch.set_num_threads(args.threads)
    torch.manual_seed(1234)
    b = Bench(torch.device(args.device), args.reps, args.warmup, args.filter)
    models, large = args.set != "large", args.set != "models"
    with torch.no_grad():
        if models:
            model_ops(b)
        for n in (1024, 2048, 4096) if large else (1024,):
            x, w, y = b.rand(n, n), b.rand(n, n), torch.empty(n, n, device=b.dev)
            b.measure(f"gemm {n}", f"M=N=K={n}", lambda x=x, w=w, y=y: torch.mm(x, w, out=y))
        if large:
            conv(b, "resnet56", 8, 64, 56, 64, 1, "8x64x56x56 k64 3x3 p1")
    attention(b, (["vit"] if models else []) + ["T256", "T1024"])
    print(json.dumps({"framework": "pytorch", "torch": torch.__version__, "device": args.device,
                      "threads": torch.get_num_threads(), "reps": args.reps,
                      "warmup": args.warmup, "rows": b.rows}))


if __name__ == "__main__":
    main()
