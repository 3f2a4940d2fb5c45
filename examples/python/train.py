#!/usr/bin/python3
"""train.py — the mlp and the vit of examples/c/train.c, through the nnplug Python package.

  /usr/bin/python3 examples/python/train.py --epochs 5 --backend cpu
  /usr/bin/python3 examples/python/train.py --model vit --epochs 3 --backend cpu

mlp: 784 -> 512 -> ReLU -> dropout 0.2 -> 512 -> ReLU -> dropout 0.2 -> 10; vit: the Vision
Transformer of vit.py. Softmax cross-entropy (mean), Adam (lr 1e-3, betas 0.9/0.999, eps 1e-8),
Glorot-uniform weights, zero biases, pixels scaled to [0, 1]. Every layer is an nnplug op on
the chosen device; the parameters, the test set and the activations live in device memory (nnplug.DeviceArray). The training set stays on
the host: each batch is gathered with numpy into a staging array and copied to the device in
one go (the C program gathers on the device instead); the last partial batch is kept. Reads the
same flags as the C program where they apply, prints per-epoch lines and ends with the same
one-line JSON summary.
"""
import argparse
import gzip
import importlib.util
import json
import math
import os
import struct
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if importlib.util.find_spec("nnplug") is None:  # not installed (pip install .): source tree
    sys.path.insert(0, os.path.join(HERE, "..", "..", "api", "python"))

import nnplug  # noqa: E402
from vit import ViT  # noqa: E402


def fail(msg):
    print(f"train: error: {msg}", file=sys.stderr)
    sys.exit(1)


# ------------------------------------------------------------------------- epoch log --
EPOCH_HEADER = ("epoch,model,backend,train_loss,train_accuracy,test_accuracy,seconds,"
                "images_per_second,epochs\n")


class EpochLog:
    """The --log CSV (the C program's columns), appended to: line-buffered so that a killed run
    leaves whole lines; every row names the planned epoch count, so a run is complete when its
    last row has epoch == epochs. A write or close that fails is fatal."""

    def __init__(self, path):
        self.path = path
        first = ""  # the header of an existing regular file (not of /dev/null, a pipe, ...)
        try:
            if os.path.isfile(path):
                with open(path) as f:
                    first = f.readline(len(EPOCH_HEADER) + 1)
        except OSError as e:
            fail(f"cannot read --log {path}: {e.strerror}")
        if first and first != EPOCH_HEADER:
            fail(f"--log {path} has another header than this program writes "
                 f"({first.strip()}); use a new file")
        try:
            self.f = open(path, "a", buffering=1)
        except OSError as e:
            fail(f"cannot open --log {path}: {e.strerror}")
        if not first:
            self.write(EPOCH_HEADER)

    def write(self, line):
        try:
            self.f.write(line)
            self.f.flush()
        except OSError as e:
            fail(f"cannot write --log {self.path}: {e.strerror}")

    def close(self):
        try:
            self.f.close()
        except OSError as e:
            fail(f"cannot write --log {self.path}: {e.strerror}")


# ----------------------------------------------------------------------------- data --
def read_idx(path, magic, ndims):
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        fail(f"cannot open {path}: no such file\n  Install the data set with `apt-get install "
             "dataset-fashion-mnist`, or point --data at a folder with the four *-ubyte.gz "
             "files.")
    except (OSError, EOFError) as e:
        fail(f"{path}: cannot read: {e} (truncated or corrupt gzip?)")
    if len(data) < 4 + 4 * ndims:
        fail(f"{path}: truncated: the file ends inside the IDX header")
    got = struct.unpack(">I", data[:4])[0]
    if got != magic:
        fail(f"{path}: not an IDX {'image' if ndims == 3 else 'label'} file: magic "
             f"{got:#010x}, expected {magic:#010x}")
    dims = struct.unpack(">" + "I" * ndims, data[4:4 + 4 * ndims])
    if ndims == 3 and dims[1:] != (28, 28):
        fail(f"{path}: images are {dims[1]}x{dims[2]}, expected 28x28")
    payload = np.frombuffer(data, np.uint8, offset=4 + 4 * ndims)
    if payload.size != int(np.prod(dims)):
        fail(f"{path}: truncated: {payload.size} bytes of data, the header says {dims}")
    return payload.reshape(dims)


def load_split(folder, split, limit):
    images = read_idx(os.path.join(folder, f"{split}-images-idx3-ubyte.gz"), 0x803, 3)
    labels = read_idx(os.path.join(folder, f"{split}-labels-idx1-ubyte.gz"), 0x801, 1)
    if images.shape[0] != labels.shape[0]:
        fail(f"{folder}/{split}: {images.shape[0]} images but {labels.shape[0]} labels")
    if labels.max() >= 10:
        fail(f"{folder}/{split}-labels: labels must be in [0, 9]")
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = (images.reshape(len(images), 784).astype(np.float32) / np.float32(255.0))
    return np.ascontiguousarray(x), labels.astype(np.int64)


# ----------------------------------------------------------------------------- model --
class Dense:
    """y = x @ w + b with w [in, out] (Glorot uniform) and b [out] (zero); Adam state."""

    def __init__(self, dev, n_in, n_out, rng):
        limit = math.sqrt(6.0 / (n_in + n_out))
        w = rng.uniform(-limit, limit, (n_in, n_out)).astype(np.float32)
        self.w, self.b = dev.to_device(w), dev.zeros((n_out,))
        self.params = [self.w, self.b]
        self.grads = [dev.empty(p.shape) for p in self.params]
        self.m = [dev.zeros(p.shape) for p in self.params]
        self.v = [dev.zeros(p.shape) for p in self.params]

    def forward(self, x, y, s):
        nnplug.gemm(x, self.w, C=self.b, out=y, stream=s)

    def backward(self, x, dy, dx, s):
        gw, gb = self.grads
        nnplug.gemm(x, dy, trans_a=True, out=gw, stream=s)
        nnplug.reduce(dy, op="sum", axes=(0,), keepdims=False, out=gb, stream=s)
        if dx is not None:
            nnplug.gemm(dy, self.w, trans_b=True, out=dx, stream=s)

    def adam(self, step, lr, s):
        for p, g, m, v in zip(self.params, self.grads, self.m, self.v):
            nnplug.adam_update(g, p, m, v, step=step, lr=lr, beta1=0.9, beta2=0.999,
                               epsilon=1e-8, stream=s)


class MLP:
    def __init__(self, dev, max_batch, seed):
        rng = np.random.default_rng(seed)
        self.dev, self.seed = dev, seed
        self.layers = [Dense(dev, 784, 512, rng), Dense(dev, 512, 512, rng),
                       Dense(dev, 512, 10, rng)]
        B = max_batch
        self.a1, self.a2 = dev.empty((B, 512)), dev.empty((B, 512))
        self.d1, self.d2 = dev.empty((B, 512)), dev.empty((B, 512))
        self.logits, self.dlogits = dev.empty((B, 10)), dev.empty((B, 10))
        self.loss, self.dloss = dev.empty(()), dev.to_device(np.float32(1.0))
        self.offset = 0  # Philox counter offset, advanced by every dropout call
        self._views = {}

    def views(self, n):
        """Views of the buffers for a batch of n rows, built once per n."""
        v = self._views.get(n)
        if v is None:
            v = self._views[n] = {name: getattr(self, name).view((n,) + tuple(getattr(
                self, name).shape[1:])) for name in ("a1", "a2", "d1", "d2", "logits",
                                                       "dlogits")}
        return v

    def forward(self, x, n, s, training):
        v = self.views(n)
        l1, l2, l3 = self.layers
        self.drop = []
        for layer, inp, out in ((l1, x, v["a1"]), (l2, v["a1"], v["a2"])):
            layer.forward(inp, out, s)
            nnplug.activation_forward(out, function="relu", out=out, stream=s)
            if training:
                kw = dict(ratio=0.2, seed=self.seed, offset=self.offset)
                self.offset += (n * 512 + 3) // 4
                nnplug.dropout_forward(out, out=out, stream=s, **kw)
                self.drop.append(kw)
        l3.forward(v["a2"], v["logits"], s)

    def backward(self, x, labels, n, s):
        v = self.views(n)
        l1, l2, l3 = self.layers
        nnplug.softmax_cross_entropy_forward(v["logits"], labels, out=self.loss, stream=s)
        nnplug.softmax_cross_entropy_backward(v["logits"], labels, self.dloss,
                                              out=v["dlogits"], stream=s)
        l3.backward(v["a2"], v["dlogits"], v["d2"], s)
        nnplug.dropout_backward(v["d2"], out=v["d2"], stream=s, **self.drop[1])
        nnplug.activation_backward(v["a2"], v["d2"], function="relu", out=v["d2"], stream=s)
        l2.backward(v["a1"], v["d2"], v["d1"], s)
        nnplug.dropout_backward(v["d1"], out=v["d1"], stream=s, **self.drop[0])
        nnplug.activation_backward(v["a1"], v["d1"], function="relu", out=v["d1"], stream=s)
        l1.backward(x, v["d1"], None, s)

    def adam(self, step, lr, s):
        for layer in self.layers:
            layer.adam(step, lr, s)


def evaluate(model, test_x, test_y, batch, s):
    correct = 0
    n_test = len(test_y)
    for start in range(0, n_test, batch):
        n = min(batch, n_test - start)
        model.forward(test_x.view((n, 784), start * 784), n, s, training=False)
        s.synchronize()
        host = np.empty((n, 10), np.float32)
        nnplug.memcpy(host.ctypes.data, model.logits.ptr, host.nbytes, None, model.dev)
        correct += int((host.argmax(axis=1) == test_y[start:start + n]).sum())
    return correct / n_test


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["mlp", "vit"], default="mlp")
    p.add_argument("--backend", default=os.environ.get("NNPLUG_BACKEND") or "auto")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--log", help="append one CSV row per epoch (the C program's columns)")
    p.add_argument("--limit", type=int, default=0, help="first N training images only")
    p.add_argument("--test-limit", type=int, default=0, help="first N test images only")
    args = p.parse_args()
    if args.epochs < 1 or args.batch < 1 or args.limit < 0 or args.test_limit < 0:
        fail("--epochs and --batch must be >= 1, --limit and --test-limit >= 0")
    if not args.lr > 0:
        fail("--lr must be positive")

    train_x, train_y = load_split(args.data, "train", args.limit)
    test_x, test_y = load_split(args.data, "t10k", args.test_limit)
    try:
        dev = nnplug.device(args.backend)
    except nnplug.Error as e:
        what = ("unknown backend" if e.status == nnplug.Status.NOT_FOUND
                else "backend has no usable device")
        avail = ", ".join(d.name for d in nnplug.devices())
        fail(f"{what} '{args.backend}': {e.message}\n  available devices: {avail} (and auto)")

    n_train = len(train_y)
    batch = min(args.batch, n_train)
    try:
        model = (ViT if args.model == "vit" else MLP)(dev, batch, args.seed)
        d_test_x = dev.to_device(test_x)  # the test set stays on the device
        x_stage, y_stage = np.empty((batch, 784), np.float32), np.empty(batch, np.int64)
        d_x, d_y = dev.empty((batch, 784)), dev.empty((batch,), "int64")
    except nnplug.Error as e:
        hint = "; try a smaller --batch" if e.status == nnplug.Status.OUT_OF_MEMORY else ""
        fail(f"cannot allocate on {dev.name}: {e}{hint}")
    s = dev.stream()
    steps = (n_train + batch - 1) // batch
    print(f"nnplug {nnplug.version()} (Python): device {dev.name} ({dev.description}), "
          f"model {args.model}, {n_train} training / {len(test_y)} test images, batch {batch}, "
          f"{steps} steps per epoch", flush=True)
    log = None
    if args.log:
        log = EpochLog(args.log)
    shuffle_rng = np.random.default_rng(args.seed + 1)
    total_s, step, final_loss, acc = 0.0, 0, float("nan"), float("nan")
    host_logits, host_loss = np.empty((batch, 10), np.float32), np.empty((), np.float32)
    tty = sys.stderr.isatty()
    for epoch in range(1, args.epochs + 1):
        perm = shuffle_rng.permutation(n_train)
        loss_sum, correct = 0.0, 0
        t0 = time.perf_counter()
        for i, start in enumerate(range(0, n_train, batch)):
            idx = perm[start:start + batch]
            n = len(idx)
            np.take(train_x, idx, axis=0, out=x_stage[:n])
            np.take(train_y, idx, out=y_stage[:n])
            nnplug.memcpy(d_x.ptr, x_stage.ctypes.data, n * 784 * 4, dev, None)
            nnplug.memcpy(d_y.ptr, y_stage.ctypes.data, n * 8, dev, None)
            xv, yv = d_x.view((n, 784)), d_y.view((n,))
            step += 1
            model.forward(xv, n, s, training=True)
            model.backward(xv, yv, n, s)
            model.adam(step, args.lr, s)
            s.synchronize()
            nnplug.memcpy(host_loss.ctypes.data, model.loss.ptr, 4, None, dev)
            nnplug.memcpy(host_logits.ctypes.data, model.logits.ptr, n * 40, None, dev)
            if not math.isfinite(float(host_loss)):
                fail(f"the loss is {float(host_loss)} at epoch {epoch} step {i + 1}")
            loss_sum += float(host_loss) * n
            correct += int((host_logits[:n].argmax(axis=1) == y_stage[:n]).sum())
            done = i + 1
            if tty:
                print(f"\repoch {epoch}/{args.epochs} {done}/{steps} loss "
                      f"{loss_sum / (start + n):.4f} {time.perf_counter() - t0:.1f}s ",
                      end="", file=sys.stderr, flush=True)
            elif done % max(1, steps // 10) == 0 or done == steps:
                print(f"epoch {epoch}/{args.epochs} step {done}/{steps} loss "
                      f"{loss_sum / (start + n):.4f}", file=sys.stderr, flush=True)
        dt = time.perf_counter() - t0
        if tty:
            print("\r" + " " * 70 + "\r", end="", file=sys.stderr)
        total_s += dt
        final_loss = loss_sum / n_train
        train_acc = correct / n_train
        acc = evaluate(model, d_test_x, test_y, batch, s)
        print(f"epoch {epoch}/{args.epochs}: train loss {final_loss:.4f}, train accuracy "
              f"{train_acc:.4f}, test accuracy {acc:.4f}, {dt:.2f} s, {n_train / dt:.0f} "
              "images/s", flush=True)
        if log:
            log.write(f"{epoch},{args.model},{dev.plugin_name},{final_loss:.6f},{train_acc:.6f},"
                      f"{acc:.6f},{dt:.4f},{n_train / dt:.1f},{args.epochs}\n")
    if log:
        log.close()
    print(json.dumps({"model": args.model, "backend": dev.plugin_name, "device": dev.name,
                      "epochs": args.epochs, "batch": batch, "train_seconds": round(total_s, 3),
                      "images_per_second": round(n_train * args.epochs / total_s, 1),
                      "test_accuracy": round(acc, 4), "final_loss": round(final_loss, 6)}),
          flush=True)


if __name__ == "__main__":
    try:
        main()
    except OSError as e:  # a write to the standard output failed (a full disk, /dev/full)
        fail(f"{e.strerror or e}" + (f": {e.filename}" if e.filename else
                                     " (writing the standard output)"))
