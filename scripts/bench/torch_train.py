#!/usr/bin/python3
"""torch_train.py — the PyTorch yardstick of `train`: trains torch_models' mlp, cnn or vit on the
first --limit Fashion-MNIST training images for --epochs epochs (batch 128, Adam 1e-3, cross
entropy, a fresh permutation each epoch, the last partial batch kept, as nnplug's train) and
prints one JSON line: the seconds of every epoch, and of the last one as train_seconds and
images_per_second. The epochs before the last are the warm-up (scripts/benchmark.sh runs 2 and
reports the second). Thread settings come from the environment the caller sets before PyTorch
loads (OMP_WAIT_POLICY, OPENBLAS_NUM_THREADS) and --threads (torch.set_num_threads).

  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 scripts/bench/torch_train.py --model cnn --limit 12800
"""
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
    args = p.parse_args()
    if args.epochs < 1 or args.batch < 1 or args.threads < 1 or args.limit < 0:
        p.error("--epochs, --batch and --threads must be >= 1, --limit >= 0")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    x, y = fashion_mnist.training_set(args.data, args.limit)
    x, y = torch.from_numpy(x).to(dev), torch.from_numpy(y).to(dev)
    model = torch_models.build(args.model).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(args.seed)
    n = len(y)
    model.train()
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    seconds = []
    for _ in range(args.epochs):
        perm = torch.from_numpy(rng.permutation(n)).to(dev)
        sync()
        t0 = time.perf_counter()
        for start in range(0, n, args.batch):
            idx = perm[start:start + args.batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            loss.item()  # nnplug's train reads the loss back every step too
        sync()
        seconds.append(time.perf_counter() - t0)
    env = {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
           if k in os.environ}
    print(json.dumps({"model": args.model, "framework": "pytorch", "torch": torch.__version__,
                      "device": str(dev), "threads": args.threads,
                      "parameters": torch_models.count(model), "images": n,
                      "epoch_seconds": [round(s, 4) for s in seconds],
                      "train_seconds": round(seconds[-1], 4),
                      "images_per_second": round(n / seconds[-1], 1), "env": env}), flush=True)


if __name__ == "__main__":
    main()
