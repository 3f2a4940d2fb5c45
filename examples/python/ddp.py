"""ddp.py — data-parallel training for train.py, as PyTorch's DistributedDataParallel does it
(docs/distributed.md, "Python"; examples/c/dist.c is the C program's twin of this module).

One process (rank) per device. Every rank holds a full replica of the model and draws the same
permutation of the training set; each global batch is split into contiguous shares (rank r
takes rows [r*n//size, (r+1)*n//size), `shard`). Each rank weights its share's mean loss by
n_r / n, so the gradients summed over the ranks are those of the whole batch's mean loss, the
last partial batch included, and every rank takes the same optimizer step.

The pieces:

- `init(mode)`: the process group for host-side values (`Group`: rank, size, sums of host
  scalars, the final identity check, abort on error). "mpi" imports mpi4py (which initialises
  MPI at thread level MULTIPLE), "self" is one rank through the same code path, "none" a plain
  single-process run; "auto" is "mpi" when an MPI launcher started this process.
- `GradientStorage`: every parameter's gradient as a view of one flat device buffer, the
  parameters in reverse order (about the order backward completes them), each 256-byte
  aligned, the padding zero; a bucket is then one contiguous range of it and one all_reduce.
- `GradientReducer(comm, storage, bucket_bytes, train_stream)`: the buckets (parameters in
  reverse order join the open bucket, which closes once it holds bucket_bytes or more, as
  DistributedDataParallel's rule) and a communication thread with its own nnplug stream on the
  same device. Backward calls `ready(grad)` as each gradient is written; once a bucket's last
  gradient is ready the bucket is handed to the thread, which all-reduces (SUM, in place) the
  buckets in bucket order, the same order on every rank, while backward goes on: ctypes
  releases the GIL for the length of every nnplug call, so the thread's all_reduce and the
  main thread's next backward op really run at the same time. `wait()` hands over whatever is
  left and returns when every bucket is summed; the optimizer runs after it. Without the hook
  (train.py --overlap off, the default on host-compute devices) `wait()` hands over every
  bucket after backward.
- `broadcast_parameters(comm, params, stream)`: rank 0's values on every rank, in place.

Threads and MPI: the communication thread is the only one that uses the nnplug communicator
while training runs (nnplug.h: one thread at a time per communicator); the main thread calls
mpi4py (MPI_COMM_WORLD) only between steps, when the thread is idle, and the MPI transport
works on its own duplicate of the communicator. So MPI_THREAD_SERIALIZED would do;
mpi4py's default, MPI_THREAD_MULTIPLE, is more.
"""
import hashlib
import os
import sys
import threading

import numpy as np

import nnplug

LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")
ALIGN_BYTES = 256  # cudaMalloc's alignment: every gradient a well-aligned tensor


class DistributedError(Exception):
    """A distributed run cannot start (no launcher, no mpi4py, ...); the message says why."""


def launcher_variable():
    """The environment variable by which an MPI launcher announced this process, or None."""
    for name in LAUNCHER_VARIABLES:
        if os.environ.get(name):
            return name
    return None


def shard(n, rank, size):
    """Rank `rank`'s contiguous share of n items: (first, count), rows [r*n//size,
    (r+1)*n//size). Shares differ by one item at most; a rank may get none when n < size."""
    first = rank * n // size
    return first, (rank + 1) * n // size - first


def max_share(n, size):
    """The largest share of n items over `size` ranks (ceil(n / size))."""
    return -(-n // size)


# ------------------------------------------------------------------------------ groups --
class Group:
    """The ranks of a run, for host-side values. mode "none" or "self": one rank."""

    def __init__(self, mode, mpi=None):
        self.mode, self.mpi = mode, mpi
        self.world = mpi.COMM_WORLD if mpi else None
        self.rank = self.world.Get_rank() if mpi else 0
        self.size = self.world.Get_size() if mpi else 1

    @property
    def distributed(self):
        """True for "self" and "mpi": the gradients go through a communicator."""
        return self.mode != "none"

    def communicator(self, dev):
        """This rank's nnplug communicator on dev (transport "mpi" or "self")."""
        if self.mode == "mpi":
            return nnplug.communicator(dev, "mpi", mpi_comm=self.world)
        return nnplug.communicator(dev, "self")

    def sum(self, values):
        """The sum over the ranks of a few host numbers, in float64 (every rank gets it)."""
        v = np.asarray(values, np.float64)
        if self.world is None:
            return v.copy()
        out = np.empty_like(v)
        self.world.Allreduce(v, out, op=self.mpi.SUM)
        return out

    def allgather(self, obj):
        """Every rank's obj, in rank order (every rank gets the list)."""
        return [obj] if self.world is None else self.world.allgather(obj)

    def abort(self, status=1):
        """Ends the whole job: MPI_Abort under MPI (mpirun then stops every rank), else exit."""
        sys.stderr.flush()
        sys.stdout.flush()
        if self.world is not None:
            self.world.Abort(status)
        sys.exit(status)


def init(mode):
    """The Group for --distributed `mode` (auto, none, self, mpi). Raises DistributedError
    when mpi is asked for (or implied by a launcher) and cannot be had."""
    launcher = launcher_variable()
    why = "--distributed mpi needs"
    if mode == "auto":
        if launcher is None:
            return Group("none")
        mode = "mpi"
        why = (f"this process was started by an MPI launcher ({launcher} is set), so "
               "--distributed auto means mpi, and that needs")
        size = os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE")
        if size == "1" and _mpi4py_missing():  # one rank under mpirun: a plain run will do
            return Group("none")
    if mode in ("none", "self"):
        return Group(mode)
    if mode != "mpi":
        raise DistributedError(f"--distributed must be auto, none, self or mpi, got '{mode}'")
    if launcher is None:
        raise DistributedError(
            "--distributed mpi: this process was not started by an MPI launcher (none of "
            f"{', '.join(LAUNCHER_VARIABLES)} is set); run it as `mpirun -np N "
            f"{sys.executable} {' '.join(sys.argv)}`, or pass --distributed none")
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise DistributedError(
            f"{why} mpi4py, which cannot be imported ({e}); install it (Debian: "
            "apt-get install python3-mpi4py) for the MPI that mpirun belongs to, or pass "
            "--distributed none") from None
    return Group("mpi", MPI)


def _mpi4py_missing():
    import importlib.util
    return importlib.util.find_spec("mpi4py") is None


# -------------------------------------------------------------------- gradient storage --
class GradientStorage:
    """Every parameter's gradient as a view of one flat float32 device buffer (zeroed), laid
    out in reverse parameter order, each gradient at a 256-byte aligned offset."""

    def __init__(self, dev, shapes):
        align = ALIGN_BYTES // 4
        n = len(shapes)
        self.offset, self.end = [0] * n, [0] * n  # [offset, end): padding included
        pos = 0
        for i in reversed(range(n)):
            self.offset[i] = pos
            pos += -(-int(np.prod(shapes[i], dtype=np.int64)) // align) * align
            self.end[i] = pos
        self.numel = pos
        self.flat = dev.zeros((max(pos, 1),))
        self.grads = [self.flat.view(tuple(shape), self.offset[i])
                      for i, shape in enumerate(shapes)]

    def zero(self, stream):
        nnplug.fill(value=0.0, out=self.flat, stream=stream)


# -------------------------------------------------------------------- gradient reducer --
class _Bucket:
    __slots__ = ("offset", "numel", "params", "pending", "view")


class GradientReducer:
    """Sums the gradients of `storage` over the ranks of `comm` in buckets of about
    bucket_bytes, on a communication thread, while backward still runs (see the module
    docstring). train_stream: the stream backward runs on; it is synchronised before a bucket
    is handed over, so that the thread's stream sees finished gradients on devices whose
    streams are asynchronous (a no-op wait on cpu and reference)."""

    def __init__(self, comm, storage, bucket_bytes, train_stream):
        self.comm, self.storage, self.train_stream = comm, storage, train_stream
        self.stream = comm.device.stream()
        n = len(storage.grads)
        self._index = {id(g): i for i, g in enumerate(storage.grads)}
        self.buckets, self._bucket_of, cur = [], [0] * n, None
        for i in reversed(range(n)):
            if cur is None:
                cur = _Bucket()
                cur.offset, cur.numel, cur.params = storage.offset[i], 0, []
                self.buckets.append(cur)
            cur.numel += storage.end[i] - storage.offset[i]
            cur.params.append(i)
            self._bucket_of[i] = len(self.buckets) - 1
            if cur.numel * 4 >= bucket_bytes:
                cur = None
        for b in self.buckets:
            b.view = storage.flat.view((b.numel,), b.offset)
        self._ready = [False] * n
        self.when = "after"  # "during" once train installs ready() as backward's hook
        self._cv = threading.Condition()
        self._handed = [False] * len(self.buckets)  # under _cv
        self._next = 0       # the next bucket the thread reduces (under _cv)
        self._error = None   # the thread's exception (under _cv)
        self._stop = False
        self._reset()
        self._thread = threading.Thread(target=self._run, name="nnplug-gradient-reducer",
                                        daemon=True)
        self._thread.start()

    def describe(self):
        sizes = " ".join(f"{b.numel * 4 / 1024:.1f}" for b in self.buckets)
        return (f"{len(self.buckets)} gradient bucket{'s' if len(self.buckets) != 1 else ''} "
                f"(KiB: {sizes}) all-reduced {self.when} backward by a communication thread")

    def _reset(self):
        for b in self.buckets:
            b.pending = len(b.params)
        self._ready = [False] * len(self._ready)
        with self._cv:
            self._handed = [False] * len(self.buckets)
            self._next = 0

    # ------------------------------------------------------------------- main thread --
    def ready(self, grad):
        """Backward's hook: `grad` (one of storage.grads) is complete for this step. Hands its
        bucket to the communication thread once every gradient of the bucket is ready."""
        self._mark(self._index[id(grad)])

    def _mark(self, i):
        if self._ready[i]:
            return
        self._ready[i] = True
        k = self._bucket_of[i]
        b = self.buckets[k]
        b.pending -= 1
        if b.pending:
            return
        self.train_stream.synchronize()
        with self._cv:
            self._handed[k] = True
            self._cv.notify_all()

    def wait(self):
        """After backward: hands over every bucket not handed over yet (a rank without images
        in this batch, after storage.zero), waits until all are summed over the ranks and
        readies the reducer for the next step. Raises the communication thread's error."""
        for i in reversed(range(len(self._ready))):
            self._mark(i)
        with self._cv:
            while self._next < len(self.buckets) and self._error is None:
                self._cv.wait()
            if self._error is not None:
                raise self._error
        self._reset()

    def close(self):
        """Stops the thread and destroys its stream (the communicator is the caller's)."""
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        self._thread.join()
        self.stream.destroy()

    # ----------------------------------------------------------- communication thread --
    def _run(self):
        while True:
            with self._cv:
                while not self._stop and not (self._next < len(self.buckets)
                                              and self._handed[self._next]):
                    self._cv.wait()
                if self._stop:
                    return
                k = self._next
            try:
                v = self.buckets[k].view
                nnplug.all_reduce(v, comm=self.comm, op="sum", out=v, stream=self.stream)
                self.stream.synchronize()
            except BaseException as e:  # noqa: BLE001 — handed to wait() on the main thread
                with self._cv:
                    self._error = e
                    self._cv.notify_all()
                return
            with self._cv:
                self._next = k + 1
                self._cv.notify_all()


def broadcast_parameters(comm, params, stream):
    """Rank 0's values of every parameter on every rank, in place (as DistributedDataParallel
    does at construction; the same seed gives the same values already)."""
    for p in params:
        nnplug.broadcast(p, comm=comm, root=0, out=p, stream=stream)
    stream.synchronize()


def checksum(array):
    """A digest of a device array's bytes (for the final check that replicas are identical)."""
    return hashlib.blake2b(np.ascontiguousarray(array.numpy()).tobytes(),
                           digest_size=16).hexdigest()
