"""nnplug — Python bindings (ctypes, no compiled extension) for libnnplug, the C library of
neural-network ops on run-time loaded backends (reference, cpu, cuda, your plugin).

    import numpy as np, nnplug
    dev = nnplug.device("cpu")                      # or "reference", "cuda", "auto"
    a = np.ones((2, 3), np.float32); b = np.ones((3, 4), np.float32)
    y = np.empty((2, 4), np.float32)
    nnplug.gemm(a, b, y, device=dev)                # numpy arrays pass zero-copy on CPU devices

Tensors: numpy arrays (host memory: any CPU device), nnplug.DeviceArray (dev.empty(),
dev.to_device(np_array), .numpy()), or any object with __dlpack__ (PyTorch, CuPy) on its own
device. Every failure raises nnplug.Error(status, message).

libnnplug is found through $NNPLUG_LIBRARY, the install or build tree around this package,
or the system loader (see nnplug._lib).
"""
from ._abi import (MAX_DIMS, Activation, BinaryOp, DLDataType, DLDevice, DLDeviceType,
                   DLManagedTensor, DLTensor, LoadState, OpKind, PoolMode, ReduceOp, Reduction,
                   Status, StreamAttribute)
from ._core import (Device, DeviceArray, Error, LoadRecord, Stream, as_dltensor, device,
                    devices, get_version, load_plugin, load_records, memcpy, op_kind_name,
                    shutdown, status_string, version)
from ._lib import lib_path
from .ops import *  # noqa: F401,F403 — every op wrapper
from .ops import __all__ as _ops_all

__all__ = [
    "MAX_DIMS", "Activation", "BinaryOp", "DLDataType", "DLDevice", "DLDeviceType",
    "DLManagedTensor", "DLTensor", "LoadState", "OpKind", "PoolMode", "ReduceOp", "Reduction",
    "Status", "StreamAttribute", "Device", "DeviceArray", "Error", "LoadRecord", "Stream",
    "as_dltensor", "device", "devices", "get_version", "load_plugin", "load_records", "memcpy",
    "op_kind_name", "shutdown", "status_string", "version", "lib_path",
] + list(_ops_all)
