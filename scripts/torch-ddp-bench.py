#!/usr/bin/python3
"""torch-ddp-bench.py — the PyTorch yardstick of nnplug's data-parallel training: the cnn of
examples/c/train.c (the Keras example: conv 32 3x3, conv 64 3x3, max-pool 2, dropout 0.25,
dense 128, dropout 0.5, dense 10; Adam 1e-3; batch 128) trained for one epoch of Fashion-MNIST
with torch.nn.parallel.DistributedDataParallel over gloo, one process per rank, each global
batch of 128 split across the ranks as nnplug's train splits it. A benchmark, not a test.
The network is scripts/bench/torch_models.py's cnn.

  mpirun -np 2 /usr/bin/python3 scripts/torch-ddp-bench.py --threads 1
  /usr/bin/python3 scripts/torch-ddp-bench.py --threads 2          # one process

The ranks find each other through MPI's environment (OMPI_COMM_WORLD_RANK/SIZE) and a TCP
rendezvous on 127.0.0.1 (--port). Rank 0 prints one JSON line: the training seconds of
every epoch (the steps only), train_seconds and images/s of the last one, ranks, threads, torch
version. With --epochs 2 the first epoch is a warm-up (scripts/benchmark.sh does so).
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
import fashion_mnist  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch_models  # noqa: E402
from torch import nn  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--threads", type=int, default=1, help="torch threads per process")
    p.add_argument("--batch", type=int, default=128, help="global batch")
    p.add_argument("--limit", type=int, default=0, help="first N training images only")
    p.add_argument("--epochs", type=int, default=1, help="epochs; the last one is reported")
    p.add_argument("--port", type=int, default=29517)
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args()
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", "1")))
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.epochs < 1:
        p.error("--epochs must be >= 1")
    x, y = fashion_mnist.training_set(args.data, args.limit)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    model = torch_models.build("cnn")
    if size > 1:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                                world_size=size)
        model = nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's parameters
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(args.seed)
    n_train = len(y)
    model.train()
    epoch_seconds = []
    for _ in range(args.epochs):
        epoch_seconds.append(epoch(args, model, opt, loss_fn, x, y, rank, size,
                                   torch.from_numpy(rng.permutation(n_train))))
    seconds = epoch_seconds[-1]
    if rank == 0:
        print(json.dumps({"model": "cnn", "framework": "pytorch-ddp-gloo" if size > 1 else
                          "pytorch", "torch": torch.__version__, "ranks": size,
                          "threads": args.threads,
                          "epoch_seconds": [round(s, 4) for s in epoch_seconds],
                          "train_seconds": round(seconds, 3),
                          "images_per_second": round(n_train / seconds, 1)}), flush=True)
    if size > 1:
        dist.destroy_process_group()


def epoch(args, model, opt, loss_fn, x, y, rank, size, perm):
    """One epoch over perm; its seconds (the steps only, between barriers)."""
    n_train = len(perm)
    if size > 1:
        dist.barrier()
    t0 = time.perf_counter()
    for start in range(0, n_train, args.batch):
        idx = perm[start:start + args.batch]
        n = len(idx)
        # rank r's contiguous share of the global batch, the first n % size ranks one more
        lo = rank * (n // size) + min(rank, n % size)
        hi = lo + n // size + (1 if rank < n % size else 0)
        share = idx[lo:hi]
        opt.zero_grad(set_to_none=True)
        # DDP averages the ranks' gradients; the shares' losses are weighted so that uneven
        # shares still give the whole batch's mean
        loss = loss_fn(model(x[share]), y[share]) * (len(share) * size / n)
        loss.backward()
        opt.step()
    if size > 1:
        dist.barrier()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
