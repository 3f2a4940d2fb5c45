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

Data-parallel (ddp.py, examples/python/README.md): under mpirun, or with --distributed mpi,
every rank runs this loop on its contiguous share of each global batch (and of the test set)
with the whole batch's dropout masks; the gradients are summed across the ranks in buckets
during backward, so every rank takes the same Adam step; losses and counts are summed so that
rank 0 prints and logs global figures.

  mpirun -np 2 /usr/bin/python3 examples/python/train.py --backend cpu --threads 1
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
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if importlib.util.find_spec("nnplug") is None:  # not installed (pip install .): source tree
    sys.path.insert(0, os.path.join(HERE, "..", "..", "api", "python"))

import nnplug  # noqa: E402
import ddp  # noqa: E402
from ddp import GradientStorage  # noqa: E402
from vit import ViT  # noqa: E402

GROUP = None  # the ddp.Group once the distributed mode is known


def fail(msg):
    """Prints the error and ends the run; under MPI it names the rank and ends every rank
    (MPI_Abort), so that no rank waits for this one in a collective."""
    if GROUP is not None and GROUP.mode == "mpi":
        print(f"train: rank {GROUP.rank} of {GROUP.size}: error: {msg}", file=sys.stderr)
        GROUP.abort(1)
    print(f"train: error: {msg}", file=sys.stderr)
    sys.exit(1)


# ------------------------------------------------------------------------- epoch log --
EPOCH_HEADER = ("epoch,model,backend,train_loss,train_accuracy,test_accuracy,seconds,"
                "images_per_second,epochs\n")


class EpochLog:
    """The --log CSV (the C program's columns), appended to: line-buffered so that a killed run
    leaves whole lines; every row names the planned epoch count, so a run is complete when its
    last row has epoch == epochs. A write or close that fails is fatal."""

    flag = "--log"  # the option that names the file, in messages

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
            fail(f"cannot write {self.flag} {self.path}: {e.strerror}")

    def close(self):
        try:
            self.f.close()
        except OSError as e:
            fail(f"cannot write {self.flag} {self.path}: {e.strerror}")


class LossLog(EpochLog):
    """The --loss-log CSV (the C program's): epoch,step,loss of every step, a new file.
    Written and closed as EpochLog."""

    flag = "--loss-log"

    def __init__(self, path):
        self.path = path
        try:
            self.f = open(path, "w", buffering=1)
        except OSError as e:
            fail(f"cannot open --loss-log {path}: {e.strerror}")
        self.write("epoch,step,loss\n")


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
    """y = x @ w + b with w [in, out] (Glorot uniform) and b [out] (zero); Adam state. The
    gradients are views of the model's GradientStorage (set by MLP)."""

    def __init__(self, dev, n_in, n_out, rng):
        limit = math.sqrt(6.0 / (n_in + n_out))
        w = rng.uniform(-limit, limit, (n_in, n_out)).astype(np.float32)
        self.w, self.b = dev.to_device(w), dev.zeros((n_out,))
        self.params = [self.w, self.b]
        self.grads = None
        self.m = [dev.zeros(p.shape) for p in self.params]
        self.v = [dev.zeros(p.shape) for p in self.params]

    def forward(self, x, y, s):
        nnplug.gemm(x, self.w, C=self.b, out=y, stream=s)

    def backward(self, x, dy, dx, s, ready):
        gw, gb = self.grads
        nnplug.gemm(x, dy, trans_a=True, out=gw, stream=s)
        nnplug.reduce(dy, op="sum", axes=(0,), keepdims=False, out=gb, stream=s)
        ready(gw)  # complete: a distributed run may sum them while dx is computed
        ready(gb)
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
        self.names = [f"fc{i}.{kind}" for i in (1, 2, 3) for kind in ("weight", "bias")]
        self.params = [p for layer in self.layers for p in layer.params]
        self.adam_state = [mv for layer in self.layers for mv in zip(layer.m, layer.v)]
        self.grads = GradientStorage(dev, [p.shape for p in self.params])
        for k, layer in enumerate(self.layers):
            layer.grads = self.grads.grads[2 * k:2 * k + 2]
        self.grad_ready = lambda grad: None  # backward's hook (ddp.GradientReducer.ready)
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

    def forward(self, x, n, s, training, first=0, n_global=None):
        """Logits of the n rows of x. These rows may be rows [first, first + n) of a global
        batch of n_global (a distributed run): dropout then draws the masks those rows get in
        the whole batch (512 elements per row: a whole number of Philox counters)."""
        v = self.views(n)
        l1, l2, l3 = self.layers
        self.drop = []
        for layer, inp, out in ((l1, x, v["a1"]), (l2, v["a1"], v["a2"])):
            layer.forward(inp, out, s)
            nnplug.activation_forward(out, function="relu", out=out, stream=s)
            if training:
                kw = dict(ratio=0.2, seed=self.seed, offset=self.offset + first * 512 // 4)
                self.offset += ((n if n_global is None else n_global) * 512 + 3) // 4
                nnplug.dropout_forward(out, out=out, stream=s, **kw)
                self.drop.append(kw)
        l3.forward(v["a2"], v["logits"], s)

    def skip_dropout(self, n_global):
        """Advances the Philox offset as a training forward pass over a global batch of
        n_global rows would (a rank without rows in this batch)."""
        self.offset += 2 * ((n_global * 512 + 3) // 4)

    def backward(self, x, labels, n, s):
        v = self.views(n)
        l1, l2, l3 = self.layers
        nnplug.softmax_cross_entropy_forward(v["logits"], labels, out=self.loss, stream=s)
        nnplug.softmax_cross_entropy_backward(v["logits"], labels, self.dloss,
                                              out=v["dlogits"], stream=s)
        ready = self.grad_ready
        l3.backward(v["a2"], v["dlogits"], v["d2"], s, ready)
        nnplug.dropout_backward(v["d2"], out=v["d2"], stream=s, **self.drop[1])
        nnplug.activation_backward(v["a2"], v["d2"], function="relu", out=v["d2"], stream=s)
        l2.backward(v["a1"], v["d2"], v["d1"], s, ready)
        nnplug.dropout_backward(v["d1"], out=v["d1"], stream=s, **self.drop[0])
        nnplug.activation_backward(v["a1"], v["d1"], function="relu", out=v["d1"], stream=s)
        l1.backward(x, v["d1"], None, s, ready)

    def adam(self, step, lr, s):
        for layer in self.layers:
            layer.adam(step, lr, s)


def evaluate(model, test_x, test_y, batch, s):
    """The number of correct predictions on the images test_x (device) with labels test_y."""
    correct = 0
    n_test = len(test_y)
    for start in range(0, n_test, batch):
        n = min(batch, n_test - start)
        model.forward(test_x.view((n, 784), start * 784), n, s, training=False)
        s.synchronize()
        host = np.empty((n, 10), np.float32)
        nnplug.memcpy(host.ctypes.data, model.logits.ptr, host.nbytes, None, model.dev)
        correct += int((host.argmax(axis=1) == test_y[start:start + n]).sum())
    return correct


def parse_fault():
    """The test hook NNPLUG_TRAIN_FAULT=RANK:STEP:KIND (as the C program's, dist.c): rank RANK
    exits at once (exit) or makes a refused nnplug call (error) at training step STEP."""
    env = os.environ.get("NNPLUG_TRAIN_FAULT")
    if not env:
        return None
    try:
        r, st, kind = env.split(":")
        if kind not in ("exit", "error"):
            raise ValueError
        return int(r), int(st), kind
    except ValueError:
        fail(f"NNPLUG_TRAIN_FAULT expects RANK:STEP:exit|error, got '{env}'")


def check_replicas(group, model, s):
    """Every parameter and Adam moment must be bitwise identical on every rank: compares
    per-tensor checksums across the ranks and fails naming the first that differs. Returns the
    number of tensors checked."""
    s.synchronize()
    named = []
    for name, p, (m, v) in zip(model.names, model.params, model.adam_state):
        named += [(f"parameter {name}", p), (f"the Adam first moment of {name}", m),
                  (f"the Adam second moment of {name}", v)]
    ranks = group.allgather([ddp.checksum(t) for _, t in named])
    for j, (what, _) in enumerate(named):
        differ = [r for r in range(group.size) if ranks[r][j] != ranks[0][j]]
        if differ:
            fail(f"{what} differs between rank 0 and rank {differ[0]} after training: the "
                 "replicas diverged")
    return len(named)


def main():
    global GROUP
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["mlp", "vit"], default="mlp")
    p.add_argument("--backend", default=os.environ.get("NNPLUG_BACKEND") or "auto")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=128,
                   help="global batch (split across the ranks of a distributed run)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--log", help="append one CSV row per epoch (the C program's columns)")
    p.add_argument("--loss-log", help="write the (global) loss of every step: epoch,step,loss")
    p.add_argument("--limit", type=int, default=0, help="first N training images only")
    p.add_argument("--test-limit", type=int, default=0, help="first N test images only")
    p.add_argument("--threads", type=int, default=0,
                   help="worker threads of the cpu backend, per process (NNPLUG_NUM_THREADS)")
    p.add_argument("--distributed", choices=["auto", "none", "mpi", "self"], default="auto",
                   help="auto (default): mpi when started by mpirun, else none; mpi: "
                        "data-parallel over the MPI ranks (needs mpi4py); self: the "
                        "distributed code path on one rank")
    p.add_argument("--bucket-kib", type=int, default=256,
                   help="gradient bucket size of distributed runs (KiB)")
    p.add_argument("--overlap", choices=["auto", "on", "off"], default="auto",
                   help="all-reduce each bucket during backward (on), all after backward (off), "
                        "or auto: on for devices whose ops run asynchronously, off for "
                        "host-compute devices such as cpu")
    args = p.parse_args()
    if args.epochs < 1 or args.batch < 1 or args.limit < 0 or args.test_limit < 0:
        fail("--epochs and --batch must be >= 1, --limit and --test-limit >= 0")
    if not args.lr > 0:
        fail("--lr must be positive")
    if args.threads < 0 or args.bucket_kib < 1:
        fail("--threads must be >= 1 and --bucket-kib >= 1")
    if args.threads:  # read by the cpu backend when it loads (at the first device lookup)
        os.environ["NNPLUG_NUM_THREADS"] = str(args.threads)
    try:
        GROUP = group = ddp.init(args.distributed)
    except ddp.DistributedError as e:
        fail(str(e))
    rank, size = group.rank, group.size
    root = rank == 0  # prints and writes the logs

    train_x, train_y = load_split(args.data, "train", args.limit)
    test_x, test_y = load_split(args.data, "t10k", args.test_limit)
    try:
        dev = nnplug.device(args.backend)
    except nnplug.Error as e:
        what = ("unknown backend" if e.status == nnplug.Status.NOT_FOUND
                else "backend has no usable device")
        avail = ", ".join(d.name for d in nnplug.devices())
        fail(f"{what} '{args.backend}': {e.message}\n  available devices: {avail} (and auto)")

    n_train, n_test = len(train_y), len(test_y)
    batch = min(args.batch, n_train)  # the global batch
    local_batch = ddp.max_share(batch, size)  # this rank's largest share of it
    test_first, test_n = ddp.shard(n_test, rank, size)  # this rank's share of the test set
    try:
        model = (ViT if args.model == "vit" else MLP)(dev, local_batch, args.seed)
        d_test_x = dev.to_device(test_x[test_first:test_first + test_n]) if test_n else None
        x_stage = np.empty((local_batch, 784), np.float32)
        y_stage = np.empty(local_batch, np.int64)
        d_x, d_y = dev.empty((local_batch, 784)), dev.empty((local_batch,), "int64")
    except nnplug.Error as e:
        hint = "; try a smaller --batch" if e.status == nnplug.Status.OUT_OF_MEMORY else ""
        fail(f"cannot allocate on {dev.name}: {e}{hint}")
    s = dev.stream()
    comm = reducer = None
    if group.distributed:
        comm = group.communicator(dev)
        if (comm.rank, comm.size) != (rank, size):
            fail(f"the communicator says rank {comm.rank} of {comm.size}, MPI rank {rank} of "
                 f"{size}")
        s.synchronize()
        ddp.broadcast_parameters(comm, model.params, s)
        reducer = ddp.GradientReducer(comm, model.grads, args.bucket_kib * 1024, s)
        # overlap auto: during backward where ops run asynchronously (memory the host cannot
        # address); on host-compute devices the thread's wait in MPI takes the backward's core
        # (docs/distributed.md), so the buckets go after backward (reducer.wait hands them over)
        if args.overlap == "on" or (args.overlap == "auto" and not dev.is_cpu):
            model.grad_ready = reducer.ready
            reducer.when = "during"
    steps = (n_train + batch - 1) // batch
    if root:
        print(f"nnplug {nnplug.version()} (Python): device {dev.name} ({dev.description}), "
              f"model {args.model}, {n_train} training / {n_test} test images, batch {batch}, "
              f"{steps} steps per epoch", flush=True)
        if reducer is not None:
            print(f"distributed: {comm.description}, {size} rank{'s' if size > 1 else ''}, "
                  f"shares of at most {local_batch} images per step; {reducer.describe()}",
                  flush=True)
    log = loss_log = None
    if args.log and root:
        log = EpochLog(args.log)
    if args.loss_log and root:
        loss_log = LossLog(args.loss_log)
    shuffle_rng = np.random.default_rng(args.seed + 1)
    total_s, step, final_loss, acc = 0.0, 0, float("nan"), float("nan")
    host_logits, host_loss = np.empty((local_batch, 10), np.float32), np.empty((), np.float32)
    dloss = 1.0  # the value in model.dloss: this share's weight n_local / n
    fault = parse_fault()
    tty = sys.stderr.isatty()
    for epoch in range(1, args.epochs + 1):
        perm = shuffle_rng.permutation(n_train)  # the same on every rank
        loss_sum, correct = 0.0, 0
        t0 = time.perf_counter()
        for i, start in enumerate(range(0, n_train, batch)):
            n = min(batch, n_train - start)  # the global batch
            first, n_local = ddp.shard(n, rank, size)  # this rank's rows of it
            idx = perm[start + first:start + first + n_local]
            step += 1
            if fault and fault[:2] == (rank, step):
                print(f"train: rank {rank} of {size}: NNPLUG_TRAIN_FAULT: {fault[2]} at step "
                      f"{step}", file=sys.stderr, flush=True)
                if fault[2] == "exit":
                    os._exit(3)
                nnplug.gemm(d_x, d_x, stream=s)  # refused: the inner dimensions differ
            if n_local:
                np.take(train_x, idx, axis=0, out=x_stage[:n_local])
                np.take(train_y, idx, out=y_stage[:n_local])
                nnplug.memcpy(d_x.ptr, x_stage.ctypes.data, n_local * 784 * 4, dev, None)
                nnplug.memcpy(d_y.ptr, y_stage.ctypes.data, n_local * 8, dev, None)
                xv, yv = d_x.view((n_local, 784)), d_y.view((n_local,))
                # The loss is the mean over this share; weighted by n_local / n the gradients
                # summed over the ranks are those of the whole batch's mean (1: one rank).
                if n_local / n != dloss:
                    dloss = n_local / n
                    nnplug.fill(value=dloss, out=model.dloss, stream=s)
                model.forward(xv, n_local, s, training=True, first=first, n_global=n)
                model.backward(xv, yv, n_local, s)
            else:  # more ranks than images in this batch: zero gradients, the same masks
                model.skip_dropout(n)
                model.grads.zero(s)
            if reducer is not None:
                reducer.wait()  # every rank now holds the gradients of the whole batch
            model.adam(step, args.lr, s)
            s.synchronize()
            local = [0.0, 0.0]
            if n_local:
                nnplug.memcpy(host_loss.ctypes.data, model.loss.ptr, 4, None, dev)
                nnplug.memcpy(host_logits.ctypes.data, model.logits.ptr, n_local * 40, None, dev)
                local = [float(host_loss) * n_local,
                         int((host_logits[:n_local].argmax(axis=1) == y_stage[:n_local]).sum())]
            if size == 1:
                step_loss, step_sums = float(host_loss), local
            else:  # the whole batch's loss: the shares' means weighted by their sizes
                step_sums = group.sum(local)
                step_loss = step_sums[0] / n
            if not math.isfinite(step_loss):
                fail(f"the loss is {step_loss} at epoch {epoch} step {i + 1}")
            loss_sum += step_sums[0]
            correct += int(step_sums[1])
            if loss_log:
                loss_log.write(f"{epoch},{i + 1},{step_loss:.9g}\n")
            done = i + 1
            if not root:
                pass
            elif tty:
                print(f"\repoch {epoch}/{args.epochs} {done}/{steps} loss "
                      f"{loss_sum / (start + n):.4f} {time.perf_counter() - t0:.1f}s ",
                      end="", file=sys.stderr, flush=True)
            elif done % max(1, steps // 10) == 0 or done == steps:
                print(f"epoch {epoch}/{args.epochs} step {done}/{steps} loss "
                      f"{loss_sum / (start + n):.4f}", file=sys.stderr, flush=True)
        dt = time.perf_counter() - t0
        if tty and root:
            print("\r" + " " * 70 + "\r", end="", file=sys.stderr)
        total_s += dt
        final_loss = loss_sum / n_train
        train_acc = correct / n_train
        test_correct = evaluate(model, d_test_x, test_y[test_first:test_first + test_n],
                                local_batch, s) if test_n else 0
        acc = float(group.sum([test_correct])[0]) / n_test
        if not root:
            continue
        print(f"epoch {epoch}/{args.epochs}: train loss {final_loss:.4f}, train accuracy "
              f"{train_acc:.4f}, test accuracy {acc:.4f}, {dt:.2f} s, {n_train / dt:.0f} "
              "images/s", flush=True)
        if log:
            log.write(f"{epoch},{args.model},{dev.plugin_name},{final_loss:.6f},{train_acc:.6f},"
                      f"{acc:.6f},{dt:.4f},{n_train / dt:.1f},{args.epochs}\n")
    if reducer is not None:
        checked = check_replicas(group, model, s)  # the replicas must not have diverged
        reducer.close()
        comm.destroy()
        if root:
            print(f"{checked} tensors (parameters and Adam moments) are bitwise identical on "
                  f"all {size} rank{'s' if size > 1 else ''}", flush=True)
    if log:
        log.close()
    if loss_log:
        loss_log.close()
    if root:
        print(json.dumps({"model": args.model, "backend": dev.plugin_name, "device": dev.name,
                          "epochs": args.epochs, "batch": batch,
                          "train_seconds": round(total_s, 3),
                          "images_per_second": round(n_train * args.epochs / total_s, 1),
                          "test_accuracy": round(acc, 4), "final_loss": round(final_loss, 6),
                          "ranks": size, "distributed": group.mode}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except nnplug.Error as e:  # a failed nnplug call on this rank
        fail(str(e))
    except OSError as e:  # a write to the standard output failed (a full disk, /dev/full)
        fail(f"{e.strerror or e}" + (f": {e.filename}" if e.filename else
                                     " (writing the standard output)"))
    except Exception:  # a bug: under MPI the other ranks must not wait for this one forever
        if GROUP is None or GROUP.mode != "mpi":
            raise
        traceback.print_exc()
        fail("unexpected error (traceback above)")
