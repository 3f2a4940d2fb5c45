"""nnplug._abi — ctypes mirrors of the C structs and enums of nnplug's public headers
(nnplug_types.h, nnplug_ops.h, nnplug.h, nnplug_plugin.h) and of dlpack.h 0.6.

Field names are the C names, so tests/test_abi.py can compare sizes, offsets and enum values
with what the C compiler makes of the headers (tests/abi_dump.c). Params structs set their
`struct_size` to their own size on construction.
"""
import ctypes
from ctypes import (POINTER, Structure, c_char_p, c_double, c_int, c_int32, c_int64,
                    c_size_t, c_uint8, c_uint16, c_uint64, c_void_p, CFUNCTYPE)
from enum import IntEnum

MAX_DIMS = 8  # NNP_MAX_DIMS
ABI_VERSION_MAJOR = 1  # NNP_ABI_VERSION_MAJOR
ABI_VERSION_MINOR = 0  # NNP_ABI_VERSION_MINOR
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


class OpKind(IntEnum):
    UNDEFINED = 0
    GEMM = 1
    CONV2D_FORWARD = 10
    CONV2D_BACKWARD_DATA = 11
    CONV2D_BACKWARD_FILTER = 12
    CONV2D_BACKWARD_BIAS = 13
    POOL2D_FORWARD = 20
    POOL2D_BACKWARD = 21
    ACTIVATION_FORWARD = 30
    ACTIVATION_BACKWARD = 31
    SOFTMAX_FORWARD = 40
    SOFTMAX_BACKWARD = 41
    SOFTMAX_CROSS_ENTROPY_FORWARD = 50
    SOFTMAX_CROSS_ENTROPY_BACKWARD = 51
    BATCH_NORM_FORWARD_TRAINING = 60
    BATCH_NORM_FORWARD_INFERENCE = 61
    BATCH_NORM_BACKWARD = 62
    LAYER_NORM_FORWARD = 65
    LAYER_NORM_BACKWARD = 66
    DROPOUT_FORWARD = 70
    DROPOUT_BACKWARD = 71
    BINARY = 80
    SCALE = 81
    FILL = 82
    COPY = 83
    TRANSPOSE = 84
    CAST = 85
    REDUCE = 90
    SGD_UPDATE = 100
    ADAM_UPDATE = 101
    VENDOR_BASE = 0x10000


class PoolMode(IntEnum):
    UNDEFINED = 0
    MAX = 1
    AVERAGE = 2


class Activation(IntEnum):
    UNDEFINED = 0
    RELU = 1
    LEAKY_RELU = 2
    SIGMOID = 3
    TANH = 4
    GELU_ERF = 5
    GELU_TANH = 6
    ELU = 7


class Reduction(IntEnum):
    UNDEFINED = 0
    MEAN = 1
    SUM = 2
    NONE = 3


class BinaryOp(IntEnum):
    UNDEFINED = 0
    ADD = 1
    SUB = 2
    MUL = 3
    DIV = 4


class ReduceOp(IntEnum):
    UNDEFINED = 0
    SUM = 1
    MEAN = 2
    MAX = 3


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

    def __repr__(self):
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

    def __init__(self, **kwargs):
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
                ("reason", c_char_p), ("n_devices", c_int32)]


class nnp_gemm_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("trans_a", c_int32), ("trans_b", c_int32),
                ("alpha", c_double), ("beta", c_double)]


class nnp_conv2d_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("stride_h", c_int32), ("stride_w", c_int32),
                ("pad_top", c_int32), ("pad_bottom", c_int32), ("pad_left", c_int32),
                ("pad_right", c_int32), ("dilation_h", c_int32), ("dilation_w", c_int32),
                ("groups", c_int32)]


class nnp_pool2d_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("mode", c_int32), ("window_h", c_int32),
                ("window_w", c_int32), ("stride_h", c_int32), ("stride_w", c_int32),
                ("pad_top", c_int32), ("pad_bottom", c_int32), ("pad_left", c_int32),
                ("pad_right", c_int32), ("ceil_mode", c_int32), ("count_include_pad", c_int32),
                ("global", c_int32)]


class nnp_activation_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("function", c_int32), ("reserved0", c_int32),
                ("alpha", c_double)]


class nnp_softmax_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("axis", c_int32), ("log", c_int32)]


class nnp_softmax_cross_entropy_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("reduction", c_int32),
                ("has_ignore_index", c_int32), ("ignore_index", c_int64)]


class nnp_batch_norm_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("epsilon", c_double), ("momentum", c_double)]


class nnp_layer_norm_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("axis", c_int32), ("reserved0", c_int32),
                ("epsilon", c_double)]


class nnp_dropout_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("ratio", c_double), ("seed", c_uint64),
                ("offset", c_uint64)]


class nnp_binary_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("op", c_int32)]


class nnp_scale_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("alpha", c_double)]


class nnp_fill_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("value", c_double)]


class nnp_transpose_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("perm", c_int32 * MAX_DIMS)]


class nnp_reduce_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("op", c_int32), ("keepdims", c_int32),
                ("n_axes", c_int32), ("axes", c_int32 * MAX_DIMS)]


class nnp_sgd_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("lr", c_double), ("momentum", c_double),
                ("dampening", c_double), ("weight_decay", c_double), ("nesterov", c_int32),
                ("reserved0", c_int32)]


class nnp_adam_params(_Sized):
    _fields_ = [("struct_size", c_size_t), ("lr", c_double), ("beta1", c_double),
                ("beta2", c_double), ("epsilon", c_double), ("weight_decay", c_double),
                ("step", c_int64), ("adamw", c_int32), ("reserved0", c_int32)]


# ------------------------------------------------- what tests/test_abi.py compares --
#: C struct name -> ctypes class
STRUCTS = {cls.__name__: cls for cls in (
    DLDevice, DLDataType, DLTensor, DLManagedTensor, nnp_device_props, nnp_load_record,
    nnp_gemm_params, nnp_conv2d_params, nnp_pool2d_params, nnp_activation_params,
    nnp_softmax_params, nnp_softmax_cross_entropy_params, nnp_batch_norm_params,
    nnp_layer_norm_params, nnp_dropout_params, nnp_binary_params, nnp_scale_params,
    nnp_fill_params, nnp_transpose_params, nnp_reduce_params, nnp_sgd_params,
    nnp_adam_params)}

#: C enum name -> (IntEnum class, prefix stripped from the C enumerator names)
ENUMS = {
    "nnp_status": (Status, "NNP_STATUS_"),
    "nnp_load_state": (LoadState, "NNP_LOAD_"),
    "nnp_op_kind": (OpKind, "NNP_OP_"),
    "nnp_pool_mode": (PoolMode, "NNP_POOL_"),
    "nnp_activation": (Activation, "NNP_ACTIVATION_"),
    "nnp_reduction": (Reduction, "NNP_REDUCTION_"),
    "nnp_binary_op": (BinaryOp, "NNP_BINARY_"),
    "nnp_reduce_op": (ReduceOp, "NNP_REDUCE_"),
    "nnp_stream_attribute": (StreamAttribute, "NNP_STREAM_ATTR_"),
    "DLDeviceType": (DLDeviceType, ""),
    "DLDataTypeCode": (DLDataTypeCode, ""),
}

#: C macro -> value in this package
CONSTANTS = {"NNP_MAX_DIMS": MAX_DIMS, "NNP_ABI_VERSION_MAJOR": ABI_VERSION_MAJOR,
             "NNP_ABI_VERSION_MINOR": ABI_VERSION_MINOR, "DLPACK_VERSION": DLPACK_VERSION}
