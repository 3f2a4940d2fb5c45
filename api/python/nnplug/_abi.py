"""nnplug._abi — ctypes mirrors of the C structs and enums of nnplug's public headers
(nnplug_types.h, nnplug_ops.h, nnplug.h, nnplug_plugin.h) and of dlpack.h 0.6.

Field names are the C names, so tests/test_abi.py can compare sizes, offsets and enum values
with what the C compiler makes of the headers (tests/abi_dump.c). Params structs set their
`struct_size` to their own size on construction.
"""
import ctypes
from ctypes import (POINTER, Structure, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint8,
                    c_uint16, c_uint64, c_void_p, CFUNCTYPE)
from enum import IntEnum
from typing import Any

from . import _ops_generated as _gen
# The op kinds, op value enums and params structs come from the op table (generated).
from ._ops_generated import (OPS, PARAMS_STRUCTS, Activation, BinaryOp, OpKind,  # noqa: F401
                             PoolMode, ReduceOp, Reduction)
from ._ops_generated import ENUMS as OP_ENUMS

MAX_DIMS = 8  # NNP_MAX_DIMS
ABI_VERSION_MAJOR = 1  # NNP_ABI_VERSION_MAJOR
ABI_VERSION_MINOR = _gen.ABI_VERSION_MINOR  # NNP_ABI_VERSION_MINOR
DLPACK_VERSION = 60


# ------------------------------------------------------------------------------ enums --
class Status(IntEnum):
    OK = 0
    INVALID_ARGUMENT = 1
    UNSUPPORTED = 2
    OUT_OF_MEMORY = 3
    NOT_FOUND = 4
    UNAVAILABLE = 5
    ABI_MISMATCH = 6
    DEVICE_ERROR = 7
    INTERNAL = 8
    LOAD_FAILED = 9
    VENDOR_BASE = 1000


class LoadState(IntEnum):
    UNDEFINED = 0
    LOADED = 1
    REJECTED = 2
    FAILED = 3
    DUPLICATE = 4


class StreamAttribute(IntEnum):
    UNDEFINED = 0
    ALLOW_TF32 = 1


class DLDeviceType(IntEnum):
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLCUDAManaged = 13


class DLDataTypeCode(IntEnum):
    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLBfloat = 4


# ----------------------------------------------------------------------------- dlpack --
class DLDevice(Structure):
    _fields_ = [("device_type", c_int), ("device_id", c_int)]

    def __repr__(self) -> str:
        return f"DLDevice({self.device_type}, {self.device_id})"


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int),
                ("dtype", DLDataType), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p),
                            ("deleter", CFUNCTYPE(None, POINTER(DLManagedTensor)))]


# --------------------------------------------------------------------- public structs --
class _Sized(Structure):
    """A struct whose first field is size_t struct_size, set to sizeof on construction."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.struct_size = ctypes.sizeof(self)


class nnp_device_props(_Sized):
    _fields_ = [("struct_size", c_size_t), ("name", c_char_p), ("plugin_name", c_char_p),
                ("description", c_char_p), ("device_type", c_int32), ("device_id", c_int32),
                ("memory_bytes", c_uint64), ("auto_priority", c_int32),
                ("num_threads", c_int32)]


class nnp_load_record(_Sized):
    _fields_ = [("struct_size", c_size_t), ("path", c_char_p), ("name", c_char_p),
                ("plugin_version", c_char_p), ("abi_version_major", c_int32),
                ("abi_version_minor", c_int32), ("state", c_int32), ("status", c_int32),
                ("reason", c_char_p), ("n_devices", c_int32), ("reserved0", c_int32)]


class nnp_shape(Structure):
    """An output shape from nnp_op_infer_shapes."""
    _fields_ = [("ndim", c_int32), ("dtype", DLDataType), ("dims", c_int64 * MAX_DIMS)]


# ------------------------------------------------- what tests/test_abi.py compares --
globals().update(PARAMS_STRUCTS)  # _abi.nnp_gemm_params etc.

#: C struct name -> ctypes class
STRUCTS = {cls.__name__: cls for cls in (
    DLDevice, DLDataType, DLTensor, DLManagedTensor, nnp_device_props, nnp_load_record,
    nnp_shape)}
STRUCTS.update(PARAMS_STRUCTS)

#: C enum name -> (IntEnum class, prefix stripped from the C enumerator names)
ENUMS = {
    **OP_ENUMS,
    "nnp_status": (Status, "NNP_STATUS_"),
    "nnp_load_state": (LoadState, "NNP_LOAD_"),
    "nnp_stream_attribute": (StreamAttribute, "NNP_STREAM_ATTR_"),
    "DLDeviceType": (DLDeviceType, ""),
    "DLDataTypeCode": (DLDataTypeCode, ""),
}

#: C macro -> value in this package
CONSTANTS = {"NNP_MAX_DIMS": MAX_DIMS, "NNP_ABI_VERSION_MAJOR": ABI_VERSION_MAJOR,
             "NNP_ABI_VERSION_MINOR": ABI_VERSION_MINOR, "DLPACK_VERSION": DLPACK_VERSION}


class CommTransport(IntEnum):
    """nnp_comm_transport (nnplug_types.h, ABI 1.3)."""
    UNDEFINED = 0
    SELF = 1
    MPI = 2
    NCCL = 3


COMM_UNIQUE_ID_BYTES = 128


class nnp_comm_unique_id(Structure):
    _fields_ = [("bytes", c_uint8 * COMM_UNIQUE_ID_BYTES)]


class nnp_comm_config(_Sized):
    _fields_ = [("struct_size", c_size_t), ("transport", c_int32), ("rank", c_int32),
                ("size", c_int32), ("reserved0", c_int32), ("mpi_comm", c_void_p),
                ("unique_id", POINTER(nnp_comm_unique_id))]

