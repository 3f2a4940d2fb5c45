#!/usr/bin/python3
"""torch_train.py — the PyTorch yardstick of `train`: trains torch_models' mlp, cnn or vit on the
first --limit Fashion-MNIST training images for --epochs epochs (batch 128, Adam 1e-3, cross
entropy, a fresh permutation each epoch, the last partial batch kept, as nnplug's train) and
prints one JSON line: the seconds of every epoch, and of the last one as train_seconds and
images_per_second. The epochs before the last are the warm-up (scripts/benchmark.sh runs 2 and
reports the second). Thread settings come from the environment the caller sets before PyTorch
loads (OMP_WAIT_POLICY, OPENBLAS_NUM_THREADS) and --threads (torch.set_num_threads).

--precision bfloat16 is PyTorch's automatic mixed precision in the form of train --precision
bfloat16: forward and loss under torch.autocast(dtype=torch.bfloat16) (GEMMs, convolutions and
attention in bfloat16; LayerNorm, softmax and the loss in float32 by autocast's op lists),
float32 parameters and Adam, no loss scaling (bfloat16 has float32's exponent range). On a GPU,
--no-tf32 keeps float32 GEMMs and convolutions exact (train's default), and --cuda-graph
captures one whole step (forward, loss, backward, Adam with capturable=True) after 3 warm-up
steps and replays it for every full batch; the last partial batch runs eagerly, as in train
--graph.

  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 scripts/bench/torch_train.py --model cnn --limit 12800
  python3 scripts/bench/torch_train.py --model vit --device cuda --precision bfloat16 --cuda-graph
"""
import contextlib
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402
import torch  # noqa: E402
import torch_models  # noqa: E402
from torch import nn  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["mlp", "cnn", "vit"], required=True)
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    p.add_argument("--limit", type=int, default=0, help="first N training images (0: all)")
    p.add_argument("--epochs", type=int, default=2, help="epochs; the last one is reported")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--data", default=fashion_mnist.DEFAULT_DIR)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--no-tf32", action="store_true", help="exact float32 GEMMs and convolutions")
    p.add_argument("--cuda-graph", action="store_true", help="replay one captured step (cuda)")
    args = p.parse_args()
    if args.epochs < 1 or args.batch < 1 or args.threads < 1 or args.limit < 0:
        p.error("--epochs, --batch and --threads must be >= 1, --limit >= 0")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    if args.cuda_graph and dev.type != "cuda":
        p.error("--cuda-graph needs --device cuda")
    if dev.type == "cuda":
        tf32 = not args.no_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    x, y = fashion_mnist.training_set(args.data, args.limit)
    x, y = torch.from_numpy(x).to(dev), torch.from_numpy(y).to(dev)
    model = torch_models.build(args.model).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=args.cuda_graph)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(args.seed)
    n = len(y)
    model.train()
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def autocast():
        if args.precision == "float32":
            return contextlib.nullcontext()
        return torch.autocast(device_type=dev.type, dtype=torch.bfloat16, cache_enabled=False)

    def step(xb, yb):
        opt.zero_grad(set_to_none=not args.cuda_graph)
        with autocast():
            loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    graph = None
    if args.cuda_graph:
        static_x, static_y = x[:args.batch].clone(), y[:args.batch].clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step(static_x, static_y)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = step(static_x, static_y)
    seconds = []
    for _ in range(args.epochs):
        perm = torch.from_numpy(rng.permutation(n)).to(dev)
        sync()
        t0 = time.perf_counter()
        for start in range(0, n, args.batch):
            idx = perm[start:start + args.batch]
            if graph is not None and len(idx) == args.batch:
                static_x.copy_(x[idx])
                static_y.copy_(y[idx])
                graph.replay()
                static_loss.item()
            else:
                step(x[idx], y[idx]).item()  # train reads the loss back every step too
        sync()
        seconds.append(time.perf_counter() - t0)
    env = {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
           if k in os.environ}
    print(json.dumps({"model": args.model, "framework": "pytorch", "torch": torch.__version__,
                      "device": str(dev), "threads": args.threads, "batch": args.batch,
                      "precision": args.precision, "cuda_graph": args.cuda_graph,
                      "tf32": dev.type == "cuda" and not args.no_tf32,
                      "parameters": torch_models.count(model), "images": n,
                      "epoch_seconds": [round(s, 4) for s in seconds],
                      "train_seconds": round(seconds[-1], 4),
                      "images_per_second": round(n / seconds[-1], 1), "env": env}), flush=True)


if __name__ == "__main__":
    main()
