"""fashion_mnist.py — reads the Fashion-MNIST IDX gzip files (Debian's dataset-fashion-mnist,
/usr/share/datasets/fashion-mnist) as numpy arrays, for the PyTorch yardstick scripts."""
import gzip
import os
import struct

import numpy as np

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def training_set(folder=DEFAULT_DIR, limit=0):
    """(images [N, 1, 28, 28] float32 in [0, 1], labels [N] int64), the first `limit` if > 0."""
    x = read_idx(os.path.join(folder, "train-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(folder, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    if limit:
        x, y = x[:limit], y[:limit]
    return (x.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28), y
