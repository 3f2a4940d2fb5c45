"""nnplug communicators (ABI 1.3; nnplug.h "communicators", docs/distributed.md).

A Communicator binds this process (one rank of a group) to one device; the collective ops
nnplug.all_reduce, nnplug.broadcast and nnplug.all_gather take it as `comm=` and run on a
stream of that device like any op:

    from mpi4py import MPI                    # MPI initialised by mpi4py (thread level MULTIPLE)
    dev = nnplug.device("cpu")
    comm = nnplug.communicator(dev, "mpi", mpi_comm=MPI.COMM_WORLD)
    nnplug.all_reduce(grad, comm=comm, op="mean", out=grad)   # in place

Transports: "self" (one rank, built in, any device), "mpi" (host-memory devices; the MPI of
mpi4py must be the one libnnplug-comm-mpi.so was built with), "nccl" (cuda devices; rank 0
makes an id with nnplug.nccl_unique_id(dev) and sends its bytes to the others).
"""
from ctypes import byref, c_int32, c_void_p
from typing import Any, Optional

from . import _abi
from ._core import Device, Error, _generation_now, _s, check, device
from ._lib import lib

_TRANSPORTS = {"self": _abi.CommTransport.SELF, "mpi": _abi.CommTransport.MPI,
               "nccl": _abi.CommTransport.NCCL}


def _transport(name: Any) -> int:
    if isinstance(name, _abi.CommTransport):
        return int(name)
    try:
        return int(_TRANSPORTS[str(name).lower()])
    except KeyError:
        raise Error(_abi.Status.INVALID_ARGUMENT,
                    f"transport {name!r} is not one of self, mpi, nccl") from None


def _mpi_comm_address(mpi_comm: Any) -> int:
    """The address of the MPI_Comm handle of an mpi4py communicator (or an int address)."""
    if isinstance(mpi_comm, int):
        return mpi_comm
    try:
        from mpi4py import MPI
    except ImportError:
        raise Error(_abi.Status.INVALID_ARGUMENT,
                    "mpi_comm must be an mpi4py communicator (mpi4py is not installed) or the "
                    "address of an MPI_Comm") from None
    if not isinstance(mpi_comm, MPI.Comm):
        raise Error(_abi.Status.INVALID_ARGUMENT,
                    f"mpi_comm must be an mpi4py communicator, got {type(mpi_comm).__name__}")
    return int(MPI._addressof(mpi_comm))


class Communicator:
    """One rank of a communicator (nnp_comm), bound to `device`. Use nnplug.communicator()."""

    def __init__(self, dev: Any, transport: Any = "self", *, mpi_comm: Any = None,
                 unique_id: Optional[bytes] = None, rank: int = 0, size: int = 1):
        self.device: Device = device(dev)
        cfg = _abi.nnp_comm_config()
        cfg.transport = _transport(transport)
        self._mpi = None
        uid = None
        if cfg.transport == _abi.CommTransport.MPI:
            if mpi_comm is None:
                raise Error(_abi.Status.INVALID_ARGUMENT, "the mpi transport needs mpi_comm=")
            self._mpi = mpi_comm  # keeps the caller's communicator alive during creation
            cfg.mpi_comm = c_void_p(_mpi_comm_address(mpi_comm))
        elif cfg.transport == _abi.CommTransport.NCCL:
            if unique_id is None or len(unique_id) != _abi.COMM_UNIQUE_ID_BYTES:
                raise Error(_abi.Status.INVALID_ARGUMENT,
                            f"the nccl transport needs unique_id= ({_abi.COMM_UNIQUE_ID_BYTES} "
                            "bytes from nnplug.nccl_unique_id)")
            uid = _abi.nnp_comm_unique_id()
            uid.bytes[:] = list(unique_id)
            cfg.unique_id = _abi.POINTER(_abi.nnp_comm_unique_id)(uid)
            cfg.rank, cfg.size = int(rank), int(size)
        self._generation = _generation_now()
        self._handle = c_void_p()
        check(lib().nnp_comm_create(self.device.handle, byref(cfg), byref(self._handle)))
        r, n = c_int32(), c_int32()
        check(lib().nnp_comm_get_rank(self._handle, byref(r), byref(n)))
        self.rank, self.size = r.value, n.value
        self.description = _s(lib().nnp_comm_description(self._handle))

    @property
    def handle(self) -> c_void_p:
        if self._generation != _generation_now() or not self._handle:
            raise Error(_abi.Status.INVALID_ARGUMENT, "communicator is destroyed")
        return self._handle

    def destroy(self) -> None:
        """nnp_comm_destroy (collective for MPI and NCCL: every rank calls it)."""
        if self._handle and self._generation == _generation_now():
            h, self._handle = self._handle, c_void_p()
            check(lib().nnp_comm_destroy(h))

    def __enter__(self) -> "Communicator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return (f"<nnplug.Communicator rank {self.rank} of {self.size} on {self.device.name}: "
                f"{self.description}>")


def communicator(dev: Any, transport: Any = "self", **kwargs: Any) -> Communicator:
    """nnp_comm_create: this process's rank of a communicator bound to `dev`. transport
    "self" (one rank), "mpi" (mpi_comm=an mpi4py communicator), or "nccl" (unique_id=bytes,
    rank=, size=). Raises nnplug.Error: InvalidArgumentError (bad config, MPI not
    initialised, wrong device for the transport), NotFoundError (transport plugin not
    installed), ... with the library's message."""
    return Communicator(dev, transport, **kwargs)


def nccl_unique_id(dev: Any) -> bytes:
    """nnp_comm_get_unique_id for the nccl transport, on the rank that shares it."""
    uid = _abi.nnp_comm_unique_id()
    check(lib().nnp_comm_get_unique_id(device(dev).handle, int(_abi.CommTransport.NCCL),
                                       byref(uid)))
    return bytes(uid.bytes)

