"""nnplug — Python bindings (ctypes, no compiled extension) for libnnplug, the C library of
neural-network ops on run-time loaded backends (reference, cpu, sim, cuda, your plugin).

    import numpy as np, nnplug
    a = np.ones((2, 3), np.float32); b = np.ones((3, 4), np.float32)
    y = nnplug.gemm(a, b)                          # allocated: numpy in, numpy out
    nnplug.gemm(a, b, C=np.ones(4, np.float32), beta=0.5, out=y)   # into existing storage
    dev = nnplug.device("cpu")                     # or "reference", "sim", "cuda", "auto"
    x = dev.to_device(a)                           # nnplug.DeviceArray
    z = nnplug.activation_forward(x, function="relu")   # a DeviceArray on the same device

Every op of the C API is a function of the same name (nnplug.ops, generated from the op
table): inputs positionally in the C order, optional inputs and params as keywords, outputs
returned or written into out=. Tensors: numpy arrays (host memory), nnplug.DeviceArray, any
object with __dlpack__ (PyTorch, CuPy) on its own device; inputs may also be Python or numpy
scalars. nnplug.supported(op, ...) asks whether a device runs a call. Every failure raises
nnplug.Error (InvalidArgumentError, UnsupportedError, ... by status) before any output is
written; PyTorch tensors that require grad make an op warn (nnplug.AutogradWarning: use
nnplug.torch). DeviceArrays take + - * / ** (nnplug.binary on their device). A repeated call
of the same signature reuses what the first one prepared (nnplug._plan: call plans).
nnplug.__version__ is libnnplug's version. `python -m nnplug` prints the libraries, plugins
and devices found.

libnnplug is found through $NNPLUG_LIBRARY, the package's bundled copy, the install or build
tree around this package, or the system loader (see nnplug._lib).
"""
from typing import Any, Optional

from ._abi import (MAX_DIMS, Activation, BinaryOp, DLDataType, DLDevice, DLDeviceType,
                   DLManagedTensor, DLTensor, LoadState, OpKind, PoolMode, ReduceOp, Reduction,
                   Status, StreamAttribute)
from ._ops_generated import AutoPad, UnaryOp
from ._core import (Device, DeviceError, Error, InvalidArgumentError, LoadRecord,
                    NotFoundError, OutOfMemoryError, Stream, Graph, Capture, UnavailableError,
                    UnsupportedError, device, devices, get_version, load_plugin, load_records,
                    memcpy, op_kind_name, shutdown, status_string, version)
from ._array import DeviceArray, as_dltensor, asarray
from ._comm import Communicator, communicator, nccl_unique_id
from ._lib import lib_path
from ._shortcuts import add, div, mul, sub
from ._call import AutogradWarning
from .ops import *  # noqa: F401,F403 — every op
from .ops import __all__ as _ops_all

__all__ = [
    "Communicator", "communicator", "nccl_unique_id", "MAX_DIMS", "Activation", "AutoPad",
    "BinaryOp", "DLDataType", "DLDevice", "DLDeviceType",
    "DLManagedTensor", "DLTensor", "LoadState", "OpKind", "PoolMode", "ReduceOp", "Reduction",
    "Status", "StreamAttribute", "UnaryOp", "Device", "DeviceArray", "DeviceError", "Error",
    "InvalidArgumentError", "LoadRecord", "NotFoundError", "OutOfMemoryError", "Stream", "Graph",
    "Capture", "UnavailableError", "UnsupportedError", "as_dltensor", "asarray", "device", "devices",
    "get_version", "load_plugin", "load_records", "memcpy", "op_kind_name", "shutdown",
    "status_string", "version", "lib_path", "add", "sub", "mul", "div", "AutogradWarning",
] + list(_ops_all)

_version: "Optional[str]" = None


def __getattr__(name: str) -> Any:
    """nnplug.__version__: libnnplug's version as run (nnplug.version(); the project's
    version, project(nnplug VERSION ...) in CMakeLists.txt), read on first use. Without a
    loadable libnnplug it is an AttributeError that says why."""
    global _version
    if name == "__version__":
        if _version is None:
            try:
                _version = version()
            except OSError as e:
                raise AttributeError(f"nnplug.__version__: {e}") from None
        return _version
    raise AttributeError(f"module 'nnplug' has no attribute {name!r}")
