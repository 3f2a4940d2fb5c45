#!/usr/bin/python3
"""torch-ddp-bench.py — the PyTorch yardstick of nnplug's data-parallel training: the cnn of
examples/c/train.c (the Keras example: conv 32 3x3, conv 64 3x3, max-pool 2, dropout 0.25,
dense 128, dropout 0.5, dense 10; Adam 1e-3; batch 128) trained for one epoch of Fashion-MNIST
with torch.nn.parallel.DistributedDataParallel over gloo, one process per rank, each global
batch of 128 split across the ranks as nnplug's train splits it. A benchmark, not a test.

  mpirun -np 2 /usr/bin/python3 scripts/torch-ddp-bench.py --threads 1
  /usr/bin/python3 scripts/torch-ddp-bench.py --threads 2          # one process

The ranks find each other through MPI's environment (OMPI_COMM_WORLD_RANK/SIZE) and a TCP
rendezvous on 127.0.0.1 (--port). Rank 0 prints one JSON line: training seconds of the epoch
(the steps only), images/s, ranks, threads, torch version.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Dropout(0.25), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(128, 10))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--threads", type=int, default=1, help="torch threads per process")
    p.add_argument("--batch", type=int, default=128, help="global batch")
    p.add_argument("--limit", type=int, default=0, help="first N training images only")
    p.add_argument("--port", type=int, default=29517)
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args()
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", "1")))
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    x = read_idx(os.path.join(args.data, "train-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(args.data, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    if args.limit:
        x, y = x[:args.limit], y[:args.limit]
    x = torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)
    y = torch.from_numpy(y)
    model = cnn()
    if size > 1:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                                world_size=size)
        model = nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's parameters
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.from_numpy(np.random.default_rng(args.seed).permutation(len(y)))
    n_train = len(y)
    model.train()
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
    seconds = time.perf_counter() - t0
    if rank == 0:
        print(json.dumps({"model": "cnn", "framework": "pytorch-ddp-gloo" if size > 1 else
                          "pytorch", "torch": torch.__version__, "ranks": size,
                          "threads": args.threads, "train_seconds": round(seconds, 3),
                          "images_per_second": round(n_train / seconds, 1)}), flush=True)
    if size > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
