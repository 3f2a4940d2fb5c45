"""nnplug._ops_generated — GENERATED from api/ops/ops.toml by api/ops/gen_ops.py: edit the table, not this file.

The op kinds, value enums and params structs of nnplug_ops.h as ctypes classes, and each
op's signature (tensor names, which are optional, dtype rules, params defaults)."""
from ctypes import Structure, c_double, c_int32, c_int64, c_size_t, c_uint64, c_void_p, sizeof
from enum import IntEnum
from typing import Any, Dict

MAX_DIMS = 8
MAX_VARIADIC = 64
ABI_VERSION_MINOR = 10


class OpKind(IntEnum):
    UNDEFINED = 0
    GEMM = 1
    MATMUL = 2
    CONV2D_FORWARD = 10
    CONV2D_BACKWARD_DATA = 11
    CONV2D_BACKWARD_FILTER = 12
    CONV2D_BACKWARD_BIAS = 13
    CONV_FORWARD = 14
    CONV_BACKWARD_DATA = 15
    CONV_BACKWARD_FILTER = 16
    CONV_BACKWARD_BIAS = 17
    CONV_TRANSPOSE_FORWARD = 120
    CONV_TRANSPOSE_BACKWARD_DATA = 121
    CONV_TRANSPOSE_BACKWARD_FILTER = 122
    POOL2D_FORWARD = 20
    POOL2D_BACKWARD = 21
    POOL_FORWARD = 22
    POOL_BACKWARD = 23
    ACTIVATION_FORWARD = 30
    ACTIVATION_BACKWARD = 31
    SOFTMAX_FORWARD = 40
    SOFTMAX_BACKWARD = 41
    ATTENTION_FORWARD = 130
    ATTENTION_BACKWARD = 131
    SOFTMAX_CROSS_ENTROPY_FORWARD = 50
    SOFTMAX_CROSS_ENTROPY_BACKWARD = 51
    NLL_LOSS_FORWARD = 52
    NLL_LOSS_BACKWARD = 53
    SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD = 54
    SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD = 55
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
    CONCAT = 86
    SPLIT = 87
    SLICE = 88
    GATHER = 89
    SLICE_BACKWARD = 140
    GATHER_BACKWARD = 141
    CAST = 85
    REDUCE = 90
    CUMSUM = 91
    SGD_UPDATE = 100
    ADAM_UPDATE = 101
    CLIP = 110
    UNARY_FORWARD = 111
    UNARY_BACKWARD = 112
    WHERE = 114
    ALL_REDUCE = 150
    BROADCAST = 151
    ALL_GATHER = 152


class PoolMode(IntEnum):
    """Pooling modes."""
    UNDEFINED = 0
    MAX = 1
    AVERAGE = 2


class Activation(IntEnum):
    """Activation functions (ONNX Relu, LeakyRelu, Sigmoid, Tanh, Gelu, Elu)."""
    UNDEFINED = 0
    RELU = 1
    LEAKY_RELU = 2
    SIGMOID = 3
    TANH = 4
    GELU_ERF = 5
    GELU_TANH = 6
    ELU = 7


class Reduction(IntEnum):
    """Loss reductions (ONNX reduction attribute)."""
    UNDEFINED = 0
    MEAN = 1
    SUM = 2
    NONE = 3


class BinaryOp(IntEnum):
    """Elementwise binary functions (ONNX Add, Sub, Mul, Div, Pow)."""
    UNDEFINED = 0
    ADD = 1
    SUB = 2
    MUL = 3
    DIV = 4
    POW = 5


class ReduceOp(IntEnum):
    """Reduction functions (ONNX ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL2, ReduceL1, ReduceSumSquare, ReduceLogSumExp, opset 18)."""
    UNDEFINED = 0
    SUM = 1
    MEAN = 2
    MAX = 3
    MIN = 4
    L2 = 5
    L1 = 6
    SUM_SQUARE = 7
    LOG_SUM_EXP = 8


class UnaryOp(IntEnum):
    """Elementwise unary functions (ONNX Exp, Log, Sqrt, Abs, Neg, Reciprocal, Floor, Ceil, Sin, Cos, Erf; ABI 1.2). IEEE semantics at the edges, as C's <math.h>."""
    UNDEFINED = 0
    EXP = 1
    LOG = 2
    SQRT = 3
    ABS = 4
    NEG = 5
    RECIPROCAL = 6
    FLOOR = 7
    CEIL = 8
    SIN = 9
    COS = 10
    ERF = 11


class AutoPad(IntEnum):
    """ONNX auto_pad for convolution and pooling (ABI 1.2). UNDEFINED (0) is NOTSET: explicit pads."""
    NOTSET = 0
    SAME_UPPER = 1
    SAME_LOWER = 2
    VALID = 3


class _Params(Structure):
    """A params struct: struct_size is set to sizeof on construction, and every field
    starts at the op table's default."""
    _defaults_: Dict[str, Any] = {}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self.struct_size = sizeof(self)
        for name, value in {**self._defaults_, **kwargs}.items():
            if isinstance(value, (list, tuple)):  # an int32/int64[MAX_DIMS] field
                field = getattr(self, name)
                if len(value) > len(field):
                    raise ValueError(f"{name}: at most {len(field)} values")
                for i, v in enumerate(value):
                    field[i] = v
            else:
                setattr(self, name, value)


class nnp_gemm_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("trans_a", c_int32), ("trans_b", c_int32), ("alpha", c_double), ("beta", c_double)]
    _defaults_: Dict[str, Any] = {'alpha': 1.0, 'beta': 1.0}


class nnp_conv2d_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("stride_h", c_int32), ("stride_w", c_int32), ("pad_top", c_int32), ("pad_bottom", c_int32), ("pad_left", c_int32), ("pad_right", c_int32), ("dilation_h", c_int32), ("dilation_w", c_int32), ("groups", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {'stride_h': 1, 'stride_w': 1, 'dilation_h': 1, 'dilation_w': 1, 'groups': 1}


class nnp_conv_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("group", c_int32), ("auto_pad", c_int32), ("kernel_shape", c_int32 * MAX_DIMS), ("strides", c_int32 * MAX_DIMS), ("pads", c_int32 * MAX_DIMS), ("dilations", c_int32 * MAX_DIMS), ("has_clip_min", c_int32), ("has_clip_max", c_int32), ("clip_min", c_double), ("clip_max", c_double), ("max_pool", c_int32), ("reserved1", c_int32)]
    _defaults_: Dict[str, Any] = {'group': 1}


class nnp_conv_transpose_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("group", c_int32), ("auto_pad", c_int32), ("kernel_shape", c_int32 * MAX_DIMS), ("strides", c_int32 * MAX_DIMS), ("pads", c_int32 * MAX_DIMS), ("dilations", c_int32 * MAX_DIMS), ("output_padding", c_int32 * MAX_DIMS), ("output_shape", c_int32 * MAX_DIMS)]
    _defaults_: Dict[str, Any] = {'group': 1}


class nnp_pool2d_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("mode", c_int32), ("window_h", c_int32), ("window_w", c_int32), ("stride_h", c_int32), ("stride_w", c_int32), ("pad_top", c_int32), ("pad_bottom", c_int32), ("pad_left", c_int32), ("pad_right", c_int32), ("ceil_mode", c_int32), ("count_include_pad", c_int32), ("global", c_int32)]
    _defaults_: Dict[str, Any] = {'mode': 1, 'window_h': 2, 'window_w': 2, 'stride_h': 2, 'stride_w': 2}


class nnp_pool_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("mode", c_int32), ("auto_pad", c_int32), ("ceil_mode", c_int32), ("count_include_pad", c_int32), ("global", c_int32), ("storage_order", c_int32), ("kernel_shape", c_int32 * MAX_DIMS), ("strides", c_int32 * MAX_DIMS), ("pads", c_int32 * MAX_DIMS), ("dilations", c_int32 * MAX_DIMS)]
    _defaults_: Dict[str, Any] = {'mode': 1}


class nnp_activation_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("function", c_int32), ("reserved0", c_int32), ("alpha", c_double)]
    _defaults_: Dict[str, Any] = {'function': 1}


class nnp_softmax_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("axis", c_int32), ("log", c_int32)]
    _defaults_: Dict[str, Any] = {'axis': -1}


class nnp_attention_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("is_causal", c_int32), ("q_num_heads", c_int32), ("kv_num_heads", c_int32), ("reserved0", c_int32), ("scale", c_double)]
    _defaults_: Dict[str, Any] = {}


class nnp_softmax_cross_entropy_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("reduction", c_int32), ("has_ignore_index", c_int32), ("ignore_index", c_int64)]
    _defaults_: Dict[str, Any] = {'reduction': 1, 'ignore_index': -100}


class nnp_nll_loss_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("reduction", c_int32), ("has_ignore_index", c_int32), ("ignore_index", c_int64)]
    _defaults_: Dict[str, Any] = {'reduction': 1, 'ignore_index': -100}


class nnp_softmax_cross_entropy_loss_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("reduction", c_int32), ("has_ignore_index", c_int32), ("ignore_index", c_int64)]
    _defaults_: Dict[str, Any] = {'reduction': 1, 'ignore_index': -100}


class nnp_batch_norm_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("epsilon", c_double), ("momentum", c_double), ("running_var_rule", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {'epsilon': 1e-05, 'momentum': 0.9}


class nnp_layer_norm_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("axis", c_int32), ("reserved0", c_int32), ("epsilon", c_double)]
    _defaults_: Dict[str, Any] = {'axis': -1, 'epsilon': 1e-05}


class nnp_dropout_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("ratio", c_double), ("seed", c_uint64), ("offset", c_uint64), ("offset_per_step", c_uint64)]
    _defaults_: Dict[str, Any] = {'ratio': 0.5}


class nnp_binary_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("op", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {'op': 1}


class nnp_scale_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("alpha", c_double)]
    _defaults_: Dict[str, Any] = {'alpha': 1.0}


class nnp_fill_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("value", c_double)]
    _defaults_: Dict[str, Any] = {}


class nnp_transpose_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("perm", c_int32 * MAX_DIMS)]
    _defaults_: Dict[str, Any] = {}


class nnp_concat_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("axis", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {}


class nnp_split_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("axis", c_int32), ("num_outputs", c_int32)]
    _defaults_: Dict[str, Any] = {}


class nnp_slice_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("n_axes", c_int32), ("has_axes", c_int32), ("has_steps", c_int32), ("reserved0", c_int32), ("starts", c_int64 * MAX_DIMS), ("ends", c_int64 * MAX_DIMS), ("axes", c_int64 * MAX_DIMS), ("steps", c_int64 * MAX_DIMS)]
    _defaults_: Dict[str, Any] = {}


class nnp_gather_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("axis", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {}


class nnp_reduce_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("op", c_int32), ("keepdims", c_int32), ("n_axes", c_int32), ("axes", c_int32 * MAX_DIMS), ("noop_with_empty_axes", c_int32)]
    _defaults_: Dict[str, Any] = {'op': 1, 'keepdims': 1}


class nnp_sgd_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("lr", c_double), ("momentum", c_double), ("dampening", c_double), ("weight_decay", c_double), ("nesterov", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {'lr': 0.01}


class nnp_adam_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("lr", c_double), ("beta1", c_double), ("beta2", c_double), ("epsilon", c_double), ("weight_decay", c_double), ("step", c_int64), ("adamw", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {'lr': 0.001, 'beta1': 0.9, 'beta2': 0.999, 'epsilon': 1e-08, 'step': 1}


class nnp_clip_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("has_min", c_int32), ("has_max", c_int32), ("min", c_double), ("max", c_double)]
    _defaults_: Dict[str, Any] = {}


class nnp_matmul_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("trans_a", c_int32), ("trans_b", c_int32)]
    _defaults_: Dict[str, Any] = {}


class nnp_unary_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("op", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {'op': 1}


class nnp_cumsum_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("axis", c_int32), ("exclusive", c_int32), ("reverse", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {}


class nnp_all_reduce_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("comm", c_void_p), ("op", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {'op': 1}


class nnp_broadcast_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("comm", c_void_p), ("root", c_int32), ("reserved0", c_int32)]
    _defaults_: Dict[str, Any] = {}


class nnp_all_gather_params(_Params):
    _fields_ = [("struct_size", c_size_t), ("comm", c_void_p)]
    _defaults_: Dict[str, Any] = {}


#: op name -> (kind, params class or None, params optional, inputs, outputs)
#: inputs/outputs: tuples (name, optional, dtype rule, variadic); a variadic tensor
#: (the last of its list) stands for 1..MAX_VARIADIC tensors
OPS = {
    'gemm': (OpKind.GEMM, nnp_gemm_params, False, (('A', False, 'float', False), ('B', False, 'float', False), ('C', True, 'float', False)), (('Y', False, 'float', False),)),
    'matmul': (OpKind.MATMUL, nnp_matmul_params, False, (('A', False, 'float', False), ('B', False, 'float', False)), (('Y', False, 'float', False),)),
    'conv2d_forward': (OpKind.CONV2D_FORWARD, nnp_conv2d_params, False, (('x', False, 'float', False), ('w', False, 'float', False), ('b', True, 'float', False)), (('y', False, 'float', False),)),
    'conv2d_backward_data': (OpKind.CONV2D_BACKWARD_DATA, nnp_conv2d_params, False, (('dy', False, 'float', False), ('w', False, 'float', False)), (('dx', False, 'float', False),)),
    'conv2d_backward_filter': (OpKind.CONV2D_BACKWARD_FILTER, nnp_conv2d_params, False, (('x', False, 'float', False), ('dy', False, 'float', False)), (('dw', False, 'float', False),)),
    'conv2d_backward_bias': (OpKind.CONV2D_BACKWARD_BIAS, nnp_conv2d_params, True, (('dy', False, 'float', False),), (('db', False, 'float', False),)),
    'conv_forward': (OpKind.CONV_FORWARD, nnp_conv_params, False, (('x', False, 'float', False), ('w', False, 'float', False), ('b', True, 'float', False)), (('y', False, 'float', False),)),
    'conv_backward_data': (OpKind.CONV_BACKWARD_DATA, nnp_conv_params, False, (('dy', False, 'float', False), ('w', False, 'float', False)), (('dx', False, 'float', False),)),
    'conv_backward_filter': (OpKind.CONV_BACKWARD_FILTER, nnp_conv_params, False, (('x', False, 'float', False), ('dy', False, 'float', False)), (('dw', False, 'float', False),)),
    'conv_backward_bias': (OpKind.CONV_BACKWARD_BIAS, nnp_conv_params, True, (('dy', False, 'float', False),), (('db', False, 'float', False),)),
    'conv_transpose_forward': (OpKind.CONV_TRANSPOSE_FORWARD, nnp_conv_transpose_params, False, (('x', False, 'float', False), ('w', False, 'float', False), ('b', True, 'float', False)), (('y', False, 'float', False),)),
    'conv_transpose_backward_data': (OpKind.CONV_TRANSPOSE_BACKWARD_DATA, nnp_conv_transpose_params, False, (('dy', False, 'float', False), ('w', False, 'float', False)), (('dx', False, 'float', False),)),
    'conv_transpose_backward_filter': (OpKind.CONV_TRANSPOSE_BACKWARD_FILTER, nnp_conv_transpose_params, False, (('x', False, 'float', False), ('dy', False, 'float', False)), (('dw', False, 'float', False),)),
    'pool2d_forward': (OpKind.POOL2D_FORWARD, nnp_pool2d_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'pool2d_backward': (OpKind.POOL2D_BACKWARD, nnp_pool2d_params, False, (('x', False, 'float', False), ('y', False, 'float', False), ('dy', False, 'float', False)), (('dx', False, 'float', False),)),
    'pool_forward': (OpKind.POOL_FORWARD, nnp_pool_params, False, (('x', False, 'float', False),), (('y', False, 'float', False), ('indices', True, 'int64', False))),
    'pool_backward': (OpKind.POOL_BACKWARD, nnp_pool_params, False, (('x', False, 'float', False), ('y', False, 'float', False), ('dy', False, 'float', False)), (('dx', False, 'float', False),)),
    'activation_forward': (OpKind.ACTIVATION_FORWARD, nnp_activation_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'activation_backward': (OpKind.ACTIVATION_BACKWARD, nnp_activation_params, False, (('x', False, 'float', False), ('dy', False, 'float', False)), (('dx', False, 'float', False),)),
    'softmax_forward': (OpKind.SOFTMAX_FORWARD, nnp_softmax_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'softmax_backward': (OpKind.SOFTMAX_BACKWARD, nnp_softmax_params, False, (('y', False, 'float', False), ('dy', False, 'float', False)), (('dx', False, 'float', False),)),
    'attention_forward': (OpKind.ATTENTION_FORWARD, nnp_attention_params, False, (('Q', False, 'float', False), ('K', False, 'float', False), ('V', False, 'float', False), ('attn_mask', True, 'float', False)), (('Y', False, 'float', False), ('softmax_lse', True, 'accumulation', False))),
    'attention_backward': (OpKind.ATTENTION_BACKWARD, nnp_attention_params, False, (('Q', False, 'float', False), ('K', False, 'float', False), ('V', False, 'float', False), ('attn_mask', True, 'float', False), ('Y', False, 'float', False), ('dY', False, 'float', False), ('softmax_lse', False, 'accumulation', False)), (('dQ', False, 'float', False), ('dK', False, 'float', False), ('dV', False, 'float', False))),
    'softmax_cross_entropy_forward': (OpKind.SOFTMAX_CROSS_ENTROPY_FORWARD, nnp_softmax_cross_entropy_params, False, (('logits', False, 'float', False), ('labels', False, 'int64', False)), (('loss', False, 'float', False), ('log_prob', True, 'float', False))),
    'softmax_cross_entropy_backward': (OpKind.SOFTMAX_CROSS_ENTROPY_BACKWARD, nnp_softmax_cross_entropy_params, False, (('logits', False, 'float', False), ('labels', False, 'int64', False), ('dloss', False, 'float', False)), (('dlogits', False, 'float', False),)),
    'nll_loss_forward': (OpKind.NLL_LOSS_FORWARD, nnp_nll_loss_params, False, (('input', False, 'float', False), ('target', False, 'int64', False), ('weight', True, 'float', False)), (('loss', False, 'float', False),)),
    'nll_loss_backward': (OpKind.NLL_LOSS_BACKWARD, nnp_nll_loss_params, False, (('input', False, 'float', False), ('target', False, 'int64', False), ('dloss', False, 'float', False), ('weight', True, 'float', False)), (('dinput', False, 'float', False),)),
    'softmax_cross_entropy_loss_forward': (OpKind.SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD, nnp_softmax_cross_entropy_loss_params, False, (('scores', False, 'float', False), ('labels', False, 'int64', False), ('weights', True, 'float', False)), (('loss', False, 'float', False), ('log_prob', True, 'float', False))),
    'softmax_cross_entropy_loss_backward': (OpKind.SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD, nnp_softmax_cross_entropy_loss_params, False, (('scores', False, 'float', False), ('labels', False, 'int64', False), ('dloss', False, 'float', False), ('weights', True, 'float', False)), (('dscores', False, 'float', False),)),
    'batch_norm_forward_training': (OpKind.BATCH_NORM_FORWARD_TRAINING, nnp_batch_norm_params, False, (('x', False, 'float', False), ('scale', False, 'accumulation', False), ('bias', False, 'accumulation', False)), (('y', False, 'float', False), ('running_mean', False, 'accumulation', False), ('running_var', False, 'accumulation', False), ('saved_mean', False, 'accumulation', False), ('saved_inv_std', False, 'accumulation', False))),
    'batch_norm_forward_inference': (OpKind.BATCH_NORM_FORWARD_INFERENCE, nnp_batch_norm_params, False, (('x', False, 'float', False), ('scale', False, 'accumulation', False), ('bias', False, 'accumulation', False), ('mean', False, 'accumulation', False), ('var', False, 'accumulation', False)), (('y', False, 'float', False),)),
    'batch_norm_backward': (OpKind.BATCH_NORM_BACKWARD, nnp_batch_norm_params, False, (('x', False, 'float', False), ('dy', False, 'float', False), ('scale', False, 'accumulation', False), ('saved_mean', False, 'accumulation', False), ('saved_inv_std', False, 'accumulation', False)), (('dx', False, 'float', False), ('dscale', False, 'accumulation', False), ('dbias', False, 'accumulation', False))),
    'layer_norm_forward': (OpKind.LAYER_NORM_FORWARD, nnp_layer_norm_params, False, (('x', False, 'float', False), ('scale', False, 'float', False), ('bias', True, 'float', False)), (('y', False, 'float', False), ('mean', True, 'accumulation', False), ('inv_std', True, 'accumulation', False))),
    'layer_norm_backward': (OpKind.LAYER_NORM_BACKWARD, nnp_layer_norm_params, False, (('x', False, 'float', False), ('dy', False, 'float', False), ('scale', False, 'float', False), ('mean', False, 'accumulation', False), ('inv_std', False, 'accumulation', False)), (('dx', False, 'float', False), ('dscale', False, 'float', False), ('dbias', True, 'float', False))),
    'dropout_forward': (OpKind.DROPOUT_FORWARD, nnp_dropout_params, False, (('x', False, 'float', False), ('step', True, 'float32', False)), (('y', False, 'float', False), ('mask', True, 'uint8', False))),
    'dropout_backward': (OpKind.DROPOUT_BACKWARD, nnp_dropout_params, False, (('dy', False, 'float', False), ('step', True, 'float32', False)), (('dx', False, 'float', False),)),
    'binary': (OpKind.BINARY, nnp_binary_params, False, (('a', False, 'float', False), ('b', False, 'float', False)), (('y', False, 'float', False),)),
    'scale': (OpKind.SCALE, nnp_scale_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'fill': (OpKind.FILL, nnp_fill_params, False, (), (('y', False, 'float', False),)),
    'copy': (OpKind.COPY, None, True, (('x', False, 'same_as_input0', False),), (('y', False, 'same_as_input0', False),)),
    'transpose': (OpKind.TRANSPOSE, nnp_transpose_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'concat': (OpKind.CONCAT, nnp_concat_params, False, (('xs', False, 'same_as_input0', True),), (('y', False, 'same_as_input0', False),)),
    'split': (OpKind.SPLIT, nnp_split_params, False, (('x', False, 'same_as_input0', False),), (('ys', False, 'same_as_input0', True),)),
    'slice': (OpKind.SLICE, nnp_slice_params, False, (('x', False, 'same_as_input0', False),), (('y', False, 'same_as_input0', False),)),
    'gather': (OpKind.GATHER, nnp_gather_params, False, (('data', False, 'same_as_input0', False), ('indices', False, 'int64', False)), (('y', False, 'same_as_input0', False),)),
    'slice_backward': (OpKind.SLICE_BACKWARD, nnp_slice_params, False, (('dy', False, 'same_as_input0', False),), (('dx', False, 'same_as_input0', False),)),
    'gather_backward': (OpKind.GATHER_BACKWARD, nnp_gather_params, False, (('dy', False, 'float', False), ('indices', False, 'int64', False)), (('dx', False, 'float', False),)),
    'cast': (OpKind.CAST, None, True, (('x', False, 'any_float', False),), (('y', False, 'any_float', False),)),
    'reduce': (OpKind.REDUCE, nnp_reduce_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'cumsum': (OpKind.CUMSUM, nnp_cumsum_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'sgd_update': (OpKind.SGD_UPDATE, nnp_sgd_params, False, (('grad', False, 'float', False),), (('param', False, 'float', False), ('momentum_buffer', True, 'float', False))),
    'adam_update': (OpKind.ADAM_UPDATE, nnp_adam_params, False, (('grad', False, 'float', False), ('step', True, 'float32', False), ('lr', True, 'float', False)), (('param', False, 'float', False), ('m', False, 'float', False), ('v', False, 'float', False))),
    'clip': (OpKind.CLIP, nnp_clip_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'unary_forward': (OpKind.UNARY_FORWARD, nnp_unary_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'unary_backward': (OpKind.UNARY_BACKWARD, nnp_unary_params, False, (('x', False, 'float', False), ('dy', False, 'float', False)), (('dx', False, 'float', False),)),
    'where': (OpKind.WHERE, None, True, (('condition', False, 'uint8', False), ('x', False, 'float', False), ('y', False, 'float', False)), (('output', False, 'float', False),)),
    'all_reduce': (OpKind.ALL_REDUCE, nnp_all_reduce_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'broadcast': (OpKind.BROADCAST, nnp_broadcast_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
    'all_gather': (OpKind.ALL_GATHER, nnp_all_gather_params, False, (('x', False, 'float', False),), (('y', False, 'float', False),)),
}

#: every params struct, by C name
PARAMS_STRUCTS = {cls.__name__: cls for cls in (nnp_gemm_params, nnp_conv2d_params, nnp_conv_params, nnp_conv_transpose_params, nnp_pool2d_params, nnp_pool_params, nnp_activation_params, nnp_softmax_params, nnp_attention_params, nnp_softmax_cross_entropy_params, nnp_nll_loss_params, nnp_softmax_cross_entropy_loss_params, nnp_batch_norm_params, nnp_layer_norm_params, nnp_dropout_params, nnp_binary_params, nnp_scale_params, nnp_fill_params, nnp_transpose_params, nnp_concat_params, nnp_split_params, nnp_slice_params, nnp_gather_params, nnp_reduce_params, nnp_sgd_params, nnp_adam_params, nnp_clip_params, nnp_matmul_params, nnp_unary_params, nnp_cumsum_params, nnp_all_reduce_params, nnp_broadcast_params, nnp_all_gather_params)}

#: C enum name -> (IntEnum class, prefix of the C enumerator names)
ENUMS = {"nnp_op_kind": (OpKind, "NNP_OP_"), "nnp_pool_mode": (PoolMode, "NNP_POOL_"), "nnp_activation": (Activation, "NNP_ACTIVATION_"), "nnp_reduction": (Reduction, "NNP_REDUCTION_"), "nnp_binary_op": (BinaryOp, "NNP_BINARY_"), "nnp_reduce_op": (ReduceOp, "NNP_REDUCE_"), "nnp_unary_op": (UnaryOp, "NNP_UNARY_"), "nnp_auto_pad": (AutoPad, "NNP_AUTO_PAD_")}
