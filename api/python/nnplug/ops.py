"""nnplug.ops — one function per op of nnplug_ops.h. GENERATED from api/ops/ops.toml by api/ops/gen_ops.py: edit the table, not this file.

Every function takes the op's inputs positionally in the C API's order (optional inputs
as keywords), then the tensors it updates in place (running statistics, optimiser
state), and its params as keyword-only arguments with the C defaults. Outputs are
allocated (shapes from nnp_op_infer_shapes, on the inputs' device, of the inputs' kind:
numpy, PyTorch or nnplug.DeviceArray) and returned, or written into `out=` (a tensor, or
a tuple in the C order with None for one to allocate). Optional outputs are computed
when asked for with `return_<name>=True` or given in `out=`.

Where it runs: `stream=` (queued: call stream.synchronize()); else `device=` (a name or
nnplug.Device); else the device of a DeviceArray argument, or the best device whose
memory the tensors live in. Without `stream=` the call waits for the op to finish.

Dtypes: the float tensors of a call share one dtype ("the call's float dtype":
float32 everywhere, float64 on the reference backend, float16/bfloat16 where a backend
says so); labels and indices are int64, masks uint8.

Failures raise nnplug.Error, before any output is written: a subclass per status —
nnplug.InvalidArgumentError (shapes, dtypes, devices, params; the message names the
argument), nnplug.UnsupportedError (the device lacks this op, dtype or case),
nnplug.OutOfMemoryError, nnplug.DeviceError. nnplug.supported(op, ...) takes the same
arguments.
"""
# ruff: noqa: E501
from typing import Any, Optional, Sequence, Union

from . import _ops_generated as _g
from ._call import DeviceLike, OutLike, StreamLike, TensorLike, _Op, _P, _T, execute, supported
from ._comm import Communicator
from ._ops_generated import (Activation, AutoPad, BinaryOp, PoolMode, ReduceOp, Reduction, UnaryOp, OpKind)

__all__ = ["execute", "supported", "gemm", "matmul", "conv2d_forward", "conv2d_backward_data", "conv2d_backward_filter", "conv2d_backward_bias", "conv_forward", "conv_backward_data", "conv_backward_filter", "conv_backward_bias", "conv_transpose_forward", "conv_transpose_backward_data", "conv_transpose_backward_filter", "pool2d_forward", "pool2d_backward", "pool_forward", "pool_backward", "activation_forward", "activation_backward", "softmax_forward", "softmax_backward", "attention_forward", "attention_backward", "softmax_cross_entropy_forward", "softmax_cross_entropy_backward", "nll_loss_forward", "nll_loss_backward", "softmax_cross_entropy_loss_forward", "softmax_cross_entropy_loss_backward", "batch_norm_forward_training", "batch_norm_forward_inference", "batch_norm_backward", "layer_norm_forward", "layer_norm_backward", "dropout_forward", "dropout_backward", "binary", "scale", "fill", "copy", "transpose", "concat", "split", "slice", "gather", "slice_backward", "gather_backward", "cast", "reduce", "cumsum", "sgd_update", "adam_update", "clip", "unary_forward", "unary_backward", "where", "all_reduce", "broadcast", "all_gather"]

_ = (Activation, AutoPad, BinaryOp, PoolMode, ReduceOp, Reduction, UnaryOp)  # referenced by the specs


_gemm = _Op('gemm', OpKind.GEMM, _g.nnp_gemm_params, False, True,
    (_T('A', False, 'float', False, False), _T('B', False, 'float', False, False), _T('C', True, 'float', False, False), ),
    (_T('Y', False, 'float', False, False), ),
    (_P('trans_a', 'trans_a', 'flag', None, None, None), _P('trans_b', 'trans_b', 'flag', None, None, None), _P('alpha', 'alpha', 'double', None, None, None), _P('beta', 'beta', 'double', None, None, None), ))


def gemm(
    A: TensorLike, B: TensorLike, *, C: Optional[TensorLike] = None, trans_a: bool = False, trans_b: bool = False, alpha: float = 1.0,
    beta: float = 1.0, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_GEMM (1; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Y = alpha * op(A) * op(B) + beta * C   (BLAS sgemm / ONNX Gemm, batched).

    A rank-2 operand is broadcast over the batch; two rank-3 operands must agree on batch.
    With C absent, beta is ignored. op(X) is X or its transpose. C broadcasts unidirectionally to
    Y (ONNX Gemm, opset 13): its shape, aligned right, has each dimension equal to Y's or 1, and
    rank <= Y's rank (ABI 1.2; before, only [N], [M, N] and [batch, M, N]).

    Inputs:
        A: [M, K] (trans_a = 0) or [K, M] (trans_a = 1); or rank 3 [batch, ., .] (the call's float dtype)
        B: [K, N] (trans_b = 0) or [N, K] (trans_b = 1); or rank 3 [batch, ., .] (the call's float dtype)
        C (optional keyword): any shape that broadcasts unidirectionally to Y's (ONNX): rank 0, [1], [N], [1, N], [M, 1], [M, N]; batched also [batch, M, N], [batch, 1, N], ... (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        Y: [M, N], or [batch, M, N] when A or B has rank 3 (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        trans_a (bool): 0 or 1; 0: A is [M, K]; 1: A is [K, M]; default 0
        trans_b (bool): 0 or 1; 0: B is [K, N]; 1: B is [N, K]; default 0
        alpha (float): finite; default 1.0
        beta (float): finite when C is given; ignored without C (ONNX default 1); default 1.0

    Returns: Y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _gemm.run(locals())


_matmul = _Op('matmul', OpKind.MATMUL, _g.nnp_matmul_params, False, True,
    (_T('A', False, 'float', False, False), _T('B', False, 'float', False, False), ),
    (_T('Y', False, 'float', False, False), ),
    (_P('trans_a', 'trans_a', 'flag', None, None, None), _P('trans_b', 'trans_b', 'flag', None, None, None), ))


def matmul(
    A: TensorLike, B: TensorLike, *, trans_a: bool = False, trans_b: bool = False, out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_MATMUL (2; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    Y = op(A) @ op(B), numpy matmul (ONNX MatMul, opset 13) with optional transposes of the last
    two dimensions of each operand. Zeroed params (trans_a = trans_b = 0) are ONNX MatMul. The
    transposes are nnplug's extension (ONNX has none): they make the backward two matmuls,
    dA = dY @ op(B)^T and dB = op(A)^T @ dY, then a reduce over broadcast batch dimensions.

    numpy matmul (ONNX MatMul, opset 13): A is [..., M, K] and B is [..., K, N] (after the
    transposes); the batch dimensions (all but the last two) broadcast with numpy rules and Y is
    [broadcast batch..., M, N]. A 1-D A is [K], promoted to [1, K]; a 1-D B is [K], promoted to
    [K, 1]; the added dimension is removed from Y (so [K] @ [K] gives a rank-0 Y). Rank 0
    operands are refused (ONNX). K = 0 gives zeros.

    Inputs:
        A: [..., M, K] (trans_a = 0), [..., K, M] (trans_a = 1) or [K] (the call's float dtype)
        B: [..., K, N] (trans_b = 0), [..., N, K] (trans_b = 1) or [K] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        Y: [broadcast batch..., M, N], without M when A is 1-D and without N when B is 1-D (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        trans_a (bool): 0 or 1; 1: A's last two dimensions are [K, M] (op(A) = A^T); ignored when A is 1-D; default 0; ABI 1.2
        trans_b (bool): 0 or 1; 1: B's last two dimensions are [N, K] (op(B) = B^T); ignored when B is 1-D; default 0; ABI 1.2

    Returns: Y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _matmul.run(locals())


_conv2d_forward = _Op('conv2d_forward', OpKind.CONV2D_FORWARD, _g.nnp_conv2d_params, False, True,
    (_T('x', False, 'float', False, False), _T('w', False, 'float', False, False), _T('b', True, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('stride_h', 'stride_h', 'int32', None, None, None), _P('stride_w', 'stride_w', 'int32', None, None, None), _P('pad_top', 'pad_top', 'int32', None, None, None), _P('pad_bottom', 'pad_bottom', 'int32', None, None, None), _P('pad_left', 'pad_left', 'int32', None, None, None), _P('pad_right', 'pad_right', 'int32', None, None, None), _P('dilation_h', 'dilation_h', 'int32', None, None, None), _P('dilation_w', 'dilation_w', 'int32', None, None, None), _P('groups', 'groups', 'int32', None, None, None), ))


def conv2d_forward(
    x: TensorLike, w: TensorLike, *, b: Optional[TensorLike] = None, stride_h: int = 1, stride_w: int = 1, pad_top: int = 0,
    pad_bottom: int = 0, pad_left: int = 0, pad_right: int = 0, dilation_h: int = 1, dilation_w: int = 1, groups: int = 1,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV2D_FORWARD (10; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Convolution parameters, shared by the four NNP_OP_CONV2D_* kinds (cuDNN / ONNX Conv;
    cross-correlation, no filter flip).

    Shapes: x [N, C, H, W], w [K, C/groups, R, S], b [K], y [N, K, P, Q] with
      P = floor((H + pad_top + pad_bottom - dilation_h*(R-1) - 1) / stride_h) + 1
      Q = floor((W + pad_left + pad_right - dilation_w*(S-1) - 1) / stride_w) + 1
      y[n,k,p,q] = b[k] + sum_{c,r,s} x[n, g*C/groups + c, p*stride_h - pad_top + r*dilation_h,
                                       q*stride_w - pad_left + s*dilation_w] * w[k,c,r,s]
      where g = k / (K/groups) and out-of-range x reads are 0.
    C and K must be divisible by groups; P >= 1 and Q >= 1. A stride, dilation or groups of 0
    means 1, so zeroed params (struct_size set) are a dense, unpadded, ungrouped convolution with
    stride 1; plugins receive the 1.

    Inputs:
        x: [N, C, H, W] (the call's float dtype)
        w: [K, C/groups, R, S] (the call's float dtype)
        b (optional keyword): [K] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: [N, K, P, Q] (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        stride_h (int): >= 0; 0 means 1; default 1
        stride_w (int): >= 0; 0 means 1; default 1
        pad_top (int): >= 0; default 0
        pad_bottom (int): >= 0; default 0
        pad_left (int): >= 0; default 0
        pad_right (int): >= 0; default 0
        dilation_h (int): >= 0; 1 = dense; 0 means 1; default 1
        dilation_w (int): >= 0; 1 = dense; 0 means 1; default 1
        groups (int): >= 0; 0 means 1; default 1

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv2d_forward.run(locals())


_conv2d_backward_data = _Op('conv2d_backward_data', OpKind.CONV2D_BACKWARD_DATA, _g.nnp_conv2d_params, False, False,
    (_T('dy', False, 'float', False, False), _T('w', False, 'float', False, False), ),
    (_T('dx', False, 'float', False, False), ),
    (_P('stride_h', 'stride_h', 'int32', None, None, None), _P('stride_w', 'stride_w', 'int32', None, None, None), _P('pad_top', 'pad_top', 'int32', None, None, None), _P('pad_bottom', 'pad_bottom', 'int32', None, None, None), _P('pad_left', 'pad_left', 'int32', None, None, None), _P('pad_right', 'pad_right', 'int32', None, None, None), _P('dilation_h', 'dilation_h', 'int32', None, None, None), _P('dilation_w', 'dilation_w', 'int32', None, None, None), _P('groups', 'groups', 'int32', None, None, None), ))


def conv2d_backward_data(
    dy: TensorLike, w: TensorLike, *, stride_h: int = 1, stride_w: int = 1, pad_top: int = 0, pad_bottom: int = 0, pad_left: int = 0,
    pad_right: int = 0, dilation_h: int = 1, dilation_w: int = 1, groups: int = 1, out_shape: Optional[Sequence[Any]] = None,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV2D_BACKWARD_DATA (11; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_conv2d_params): see nnplug.conv2d_forward.

    Inputs:
        dy: [N, K, P, Q] (the call's float dtype)
        w: [K, C/groups, R, S] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: x's shape [N, C, H, W] (not inferable: several H give one P) (the call's float dtype)

    Params (keyword-only; the C struct's fields): stride_h, stride_w, pad_top, pad_bottom, pad_left, pad_right, dilation_h, dilation_w, groups, as in nnplug.conv2d_forward.

    Other keywords:
        out_shape: the output's shape (a list of shapes for a variadic output), needed without out= because the inputs do not determine it
        return_<name>: also compute and return that optional output

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv2d_backward_data.run(locals())


_conv2d_backward_filter = _Op('conv2d_backward_filter', OpKind.CONV2D_BACKWARD_FILTER, _g.nnp_conv2d_params, False, False,
    (_T('x', False, 'float', False, False), _T('dy', False, 'float', False, False), ),
    (_T('dw', False, 'float', False, False), ),
    (_P('stride_h', 'stride_h', 'int32', None, None, None), _P('stride_w', 'stride_w', 'int32', None, None, None), _P('pad_top', 'pad_top', 'int32', None, None, None), _P('pad_bottom', 'pad_bottom', 'int32', None, None, None), _P('pad_left', 'pad_left', 'int32', None, None, None), _P('pad_right', 'pad_right', 'int32', None, None, None), _P('dilation_h', 'dilation_h', 'int32', None, None, None), _P('dilation_w', 'dilation_w', 'int32', None, None, None), _P('groups', 'groups', 'int32', None, None, None), ))


def conv2d_backward_filter(
    x: TensorLike, dy: TensorLike, *, stride_h: int = 1, stride_w: int = 1, pad_top: int = 0, pad_bottom: int = 0, pad_left: int = 0,
    pad_right: int = 0, dilation_h: int = 1, dilation_w: int = 1, groups: int = 1, out_shape: Optional[Sequence[Any]] = None,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV2D_BACKWARD_FILTER (12; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_conv2d_params): see nnplug.conv2d_forward.

    Inputs:
        x: [N, C, H, W] (the call's float dtype)
        dy: [N, K, P, Q] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dw: w's shape [K, C/groups, R, S] (not inferable: several R give one P) (the call's float dtype)

    Params (keyword-only; the C struct's fields): stride_h, stride_w, pad_top, pad_bottom, pad_left, pad_right, dilation_h, dilation_w, groups, as in nnplug.conv2d_forward.

    Other keywords:
        out_shape: the output's shape (a list of shapes for a variadic output), needed without out= because the inputs do not determine it
        return_<name>: also compute and return that optional output

    Returns: dw.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv2d_backward_filter.run(locals())


_conv2d_backward_bias = _Op('conv2d_backward_bias', OpKind.CONV2D_BACKWARD_BIAS, _g.nnp_conv2d_params, True, True,
    (_T('dy', False, 'float', False, False), ),
    (_T('db', False, 'float', False, False), ),
    ())


def conv2d_backward_bias(
    dy: TensorLike, *, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV2D_BACKWARD_BIAS (13; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    db[k] = sum over n,p,q of dy[n,k,p,q]; params may be NULL.

    Inputs:
        dy: [N, K, P, Q] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        db: [K] (the call's float dtype)

    Returns: db.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv2d_backward_bias.run(locals())


_conv_forward = _Op('conv_forward', OpKind.CONV_FORWARD, _g.nnp_conv_params, False, True,
    (_T('x', False, 'float', False, False), _T('w', False, 'float', False, False), _T('b', True, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('group', 'group', 'int32', None, None, None), _P('auto_pad', 'auto_pad', 'enum', _g.AutoPad, None, None), _P('kernel_shape', 'kernel_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('strides', 'strides', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('pads', 'pads', 'int32[NNP_MAX_DIMS]', None, None, None, 2), _P('dilations', 'dilations', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('clip_min', 'clip_min', 'double', None, 'has_clip_min', None), _P('clip_max', 'clip_max', 'double', None, 'has_clip_max', None), _P('max_pool', 'max_pool', 'int32', None, None, None), ))


def conv_forward(
    x: TensorLike, w: TensorLike, *, b: Optional[TensorLike] = None, group: int = 1, auto_pad: Union[str, int] = 'notset',
    kernel_shape: Union[int, Sequence[int]] = (), strides: Union[int, Sequence[int]] = (), pads: Union[int, Sequence[int]] = (),
    dilations: Union[int, Sequence[int]] = (), clip_min: Optional[float] = None, clip_max: Optional[float] = None, max_pool: int = 0,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV_FORWARD (14; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    N-D convolution parameters (ONNX Conv, opset 22; cross-correlation, no filter flip), shared
    by the four NNP_OP_CONV_* kinds. k = 1, 2 or 3 spatial dimensions, taken from x's rank (3..5).
    Each array's first k entries are used (pads: the first 2k) and the rest must be 0; zeroed
    params are valid and mean ONNX's defaults (stride 1, no padding, dilation 1, group 1).

    Shapes: x [N, C, D1..Dk], w [K, C/group, R1..Rk], b [K], y [N, K, O1..Ok] with
      O_i = floor((D_i + pad_begin_i + pad_end_i - dilation_i*(R_i-1) - 1) / stride_i) + 1
      y[n,m,o] = b[m] + sum_{c,r} x[n, g*C/group + c, o*stride - pad_begin + r*dilation] * w[m,c,r]
      (o, r multi-indices, componentwise), g = m / (K/group), out-of-range x reads are 0.
    auto_pad (ONNX): SAME_UPPER / SAME_LOWER give O_i = ceil(D_i / stride_i) with total padding
    max(0, (O_i-1)*stride_i + dilation_i*(R_i-1) + 1 - D_i), split begin = floor(total/2) (UPPER)
    or ceil(total/2) (LOWER); VALID is no padding; pads must then be all 0. C and K must be
    divisible by group (group = C, K = m*C: depthwise with channel multiplier m); every O_i >= 1.

    Fused clamp (ABI 1.7; NNP_OP_CONV_FORWARD only): with has_clip_min and/or has_clip_max set,
    the forward's output is y = min(max(y, clip_min), clip_max) after the bias, each bound only
    where its flag is 1: ONNX Conv followed by ONNX Clip (opset 13; both bounds with clip_min >
    clip_max give clip_max everywhere; NaN stays NaN), in one pass. Relu is has_clip_min = 1,
    clip_min = 0; ReLU6 (MobileNet's Clip(0, 6)) sets both. The backward kinds refuse the flags
    (INVALID_ARGUMENT): the clamp's gradient is the caller's (ReLU's is activation_backward(RELU)
    with the clamped y as its x, as y > 0 exactly where the unclamped output was).

    Fused max pooling (ABI 1.8; NNP_OP_CONV_FORWARD only): with max_pool = p >= 2, the forward's
    output (after the bias and the clamp) is then max-pooled over non-overlapping p x .. x p
    windows, and only the pooled tensor is written: y [N, K, P1..Pk] with P_i = floor(O_i / p)
    (every O_i >= p), y[n,m,q] = max over 0 <= s_i < p of conv(n, m, q*p + s), NaN if any of them
    is NaN. That is ONNX Conv [-> Clip/Relu] -> MaxPool with kernel_shape = strides = [p]*k, no
    padding, dilations 1, ceil_mode 0, one output, in one pass: the full-size output is never
    stored (on the cpu, a 2 x 2 pool after a Winograd convolution is taken from each 2 x 2 output
    tile in registers). max_pool 0 or 1: no pooling. The backward kinds refuse it (INVALID_ARGUMENT):
    max pooling's gradient needs the unpooled output. A backend may answer UNSUPPORTED for it
    (nnp_op_supported says so), and a plugin built for an earlier minor never receives it.

    N-D convolution (ONNX Conv), 1 to 3 spatial dimensions; nnp_conv_params has the formula.

    Inputs:
        x: [N, C, D1..Dk], k = 1..3 (the call's float dtype)
        w: [K, C/group, R1..Rk] (the call's float dtype)
        b (optional keyword): [K] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: [N, K, O1..Ok]; [N, K, floor(O1/p)..floor(Ok/p)] with max_pool = p >= 2 (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        group (int): >= 0; ONNX group; 0 means 1; default 1; ABI 1.2
        auto_pad (Union[str, int]): nnp_auto_pad; ONNX auto_pad; not NOTSET: pads must be 0; default NOTSET; ABI 1.2; one of notset, same_upper, same_lower, valid (or nnplug.AutoPad)
        kernel_shape (Union[int, Sequence[int]]): ONNX kernel_shape: all 0 = taken from w, else must equal w's R1..Rk; default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused
        strides (Union[int, Sequence[int]]): ONNX strides, >= 0 (0 means 1); default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused
        pads (Union[int, Sequence[int]]): ONNX pads, >= 0: [begin_1..begin_k, end_1..end_k]; default 0; ABI 1.2; 2k entries [begins..., ends...] (ONNX), k entries (begin = end on each axis, as PyTorch's padding), or an int for every begin and end; () = all 0; other lengths are refused
        dilations (Union[int, Sequence[int]]): ONNX dilations, >= 0 (0 means 1); default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused
        clip_min (Optional[float]): lower bound (not NaN) when has_clip_min = 1; default 0.0; ABI 1.7; None leaves has_clip_min = 0
        clip_max (Optional[float]): upper bound (not NaN) when has_clip_max = 1; default 0.0; ABI 1.7; None leaves has_clip_max = 0
        max_pool (int): >= 0; p >= 2: the forward's y is max-pooled over non-overlapping windows of p along every spatial axis (conv_forward only); 0 or 1: none; default 0; ABI 1.8

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv_forward.run(locals())


_conv_backward_data = _Op('conv_backward_data', OpKind.CONV_BACKWARD_DATA, _g.nnp_conv_params, False, False,
    (_T('dy', False, 'float', False, False), _T('w', False, 'float', False, False), ),
    (_T('dx', False, 'float', False, False), ),
    (_P('group', 'group', 'int32', None, None, None), _P('auto_pad', 'auto_pad', 'enum', _g.AutoPad, None, None), _P('kernel_shape', 'kernel_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('strides', 'strides', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('pads', 'pads', 'int32[NNP_MAX_DIMS]', None, None, None, 2), _P('dilations', 'dilations', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('clip_min', 'clip_min', 'double', None, 'has_clip_min', None), _P('clip_max', 'clip_max', 'double', None, 'has_clip_max', None), _P('max_pool', 'max_pool', 'int32', None, None, None), ))


def conv_backward_data(
    dy: TensorLike, w: TensorLike, *, group: int = 1, auto_pad: Union[str, int] = 'notset', kernel_shape: Union[int, Sequence[int]] = (),
    strides: Union[int, Sequence[int]] = (), pads: Union[int, Sequence[int]] = (), dilations: Union[int, Sequence[int]] = (),
    clip_min: Optional[float] = None, clip_max: Optional[float] = None, max_pool: int = 0, out_shape: Optional[Sequence[Any]] = None,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV_BACKWARD_DATA (15; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_conv_params): see nnplug.conv_forward.

    dx = dL/dx of NNP_OP_CONV_FORWARD: dx[n, g*C/group + c, d] = sum over m in group g, r and o
    with d = o*stride - pad_begin + r*dilation of dy[n,m,o] * w[m,c,r].

    Inputs:
        dy: [N, K, O1..Ok] (the call's float dtype)
        w: [K, C/group, R1..Rk] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: x's shape [N, C, D1..Dk] (not inferable: several D give one O) (the call's float dtype)

    Params (keyword-only; the C struct's fields): group, auto_pad, kernel_shape, strides, pads, dilations, clip_min, clip_max, max_pool, as in nnplug.conv_forward.

    Other keywords:
        out_shape: the output's shape (a list of shapes for a variadic output), needed without out= because the inputs do not determine it
        return_<name>: also compute and return that optional output

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv_backward_data.run(locals())


_conv_backward_filter = _Op('conv_backward_filter', OpKind.CONV_BACKWARD_FILTER, _g.nnp_conv_params, False, False,
    (_T('x', False, 'float', False, False), _T('dy', False, 'float', False, False), ),
    (_T('dw', False, 'float', False, False), ),
    (_P('group', 'group', 'int32', None, None, None), _P('auto_pad', 'auto_pad', 'enum', _g.AutoPad, None, None), _P('kernel_shape', 'kernel_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('strides', 'strides', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('pads', 'pads', 'int32[NNP_MAX_DIMS]', None, None, None, 2), _P('dilations', 'dilations', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('clip_min', 'clip_min', 'double', None, 'has_clip_min', None), _P('clip_max', 'clip_max', 'double', None, 'has_clip_max', None), _P('max_pool', 'max_pool', 'int32', None, None, None), ))


def conv_backward_filter(
    x: TensorLike, dy: TensorLike, *, group: int = 1, auto_pad: Union[str, int] = 'notset', kernel_shape: Union[int, Sequence[int]] = (),
    strides: Union[int, Sequence[int]] = (), pads: Union[int, Sequence[int]] = (), dilations: Union[int, Sequence[int]] = (),
    clip_min: Optional[float] = None, clip_max: Optional[float] = None, max_pool: int = 0, out_shape: Optional[Sequence[Any]] = None,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV_BACKWARD_FILTER (16; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_conv_params): see nnplug.conv_forward.

    dw = dL/dw of NNP_OP_CONV_FORWARD:
    dw[m,c,r] = sum over n, o of x[n, g*C/group + c, o*stride - pad_begin + r*dilation] * dy[n,m,o]
    with g = m / (K/group).

    Inputs:
        x: [N, C, D1..Dk] (the call's float dtype)
        dy: [N, K, O1..Ok] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dw: w's shape [K, C/group, R1..Rk] (not inferable: several R give one O) (the call's float dtype)

    Params (keyword-only; the C struct's fields): group, auto_pad, kernel_shape, strides, pads, dilations, clip_min, clip_max, max_pool, as in nnplug.conv_forward.

    Other keywords:
        out_shape: the output's shape (a list of shapes for a variadic output), needed without out= because the inputs do not determine it
        return_<name>: also compute and return that optional output

    Returns: dw.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv_backward_filter.run(locals())


_conv_backward_bias = _Op('conv_backward_bias', OpKind.CONV_BACKWARD_BIAS, _g.nnp_conv_params, True, True,
    (_T('dy', False, 'float', False, False), ),
    (_T('db', False, 'float', False, False), ),
    ())


def conv_backward_bias(
    dy: TensorLike, *, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV_BACKWARD_BIAS (17; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    db[m] = sum over n and every spatial position o of dy[n,m,o]; params may be NULL. The bias
    gradient of NNP_OP_CONV_FORWARD and of NNP_OP_CONV_TRANSPOSE_FORWARD alike (the same
    formula: the bias is added to every output position of channel m).

    Inputs:
        dy: [N, K, O1..Ok], k = 1..3 (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        db: [K] (the call's float dtype)

    Returns: db.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv_backward_bias.run(locals())


_conv_transpose_forward = _Op('conv_transpose_forward', OpKind.CONV_TRANSPOSE_FORWARD, _g.nnp_conv_transpose_params, False, True,
    (_T('x', False, 'float', False, False), _T('w', False, 'float', False, False), _T('b', True, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('group', 'group', 'int32', None, None, None), _P('auto_pad', 'auto_pad', 'enum', _g.AutoPad, None, None), _P('kernel_shape', 'kernel_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('strides', 'strides', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('pads', 'pads', 'int32[NNP_MAX_DIMS]', None, None, None, 2), _P('dilations', 'dilations', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('output_padding', 'output_padding', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('output_shape', 'output_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), ))


def conv_transpose_forward(
    x: TensorLike, w: TensorLike, *, b: Optional[TensorLike] = None, group: int = 1, auto_pad: Union[str, int] = 'notset',
    kernel_shape: Union[int, Sequence[int]] = (), strides: Union[int, Sequence[int]] = (), pads: Union[int, Sequence[int]] = (),
    dilations: Union[int, Sequence[int]] = (), output_padding: Union[int, Sequence[int]] = (), output_shape: Union[int, Sequence[int]] = (),
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV_TRANSPOSE_FORWARD (120; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    N-D transposed convolution parameters (ONNX ConvTranspose, opset 22), shared by the
    NNP_OP_CONV_TRANSPOSE_* kinds; the gradient of Conv with respect to its input, plus bias.
    k = 1, 2 or 3 spatial dimensions, taken from x's rank (3..5). Each array's first k entries are
    used (pads: the first 2k) and the rest must be 0; zeroed params are valid (ONNX's defaults).

    Shapes: x [N, C, D1..Dk], w [C, K/group, R1..Rk] (ONNX's layout), b [K], y [N, K, O1..Ok] with
      O_i = stride_i*(D_i-1) + output_padding_i + dilation_i*(R_i-1) + 1 - pad_begin_i - pad_end_i
      y[n,m,o] = b[m] + sum over c in group g, d, r with o = d*stride - pad_begin + r*dilation of
                 x[n,c,d] * w[c, m - g*K/group, r],   g = m / (K/group) = c / (C/group)
    Padding, as ONNX says: output_shape given (its first k entries all >= 1): O = output_shape and
    total_i = stride_i*(D_i-1) + output_padding_i + dilation_i*(R_i-1) + 1 - O_i (negative: outputs
    that no input reaches, which get only b), split pad_begin = floor(total/2) for SAME_UPPER, else
    pad_begin = total - floor(total/2) (pads must be 0). Otherwise SAME_UPPER / SAME_LOWER give
    O_i = D_i * stride_i by the same split (pads must be 0); VALID is no padding; NOTSET uses pads.
    C must be divisible by group; every O_i >= 1.

    N-D transposed convolution (ONNX ConvTranspose), 1 to 3 spatial dimensions;
    nnp_conv_transpose_params has the formula and the padding rules. Its bias gradient is
    NNP_OP_CONV_BACKWARD_BIAS (the same formula).

    Inputs:
        x: [N, C, D1..Dk], k = 1..3 (the call's float dtype)
        w: [C, K/group, R1..Rk] (the call's float dtype)
        b (optional keyword): [K] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: [N, K, O1..Ok] (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        group (int): >= 0; ONNX group: C and K in group groups; 0 means 1; default 1; ABI 1.2
        auto_pad (Union[str, int]): nnp_auto_pad; ONNX auto_pad (SAME_*: output = input * stride); not NOTSET: pads must be 0; default NOTSET; ABI 1.2; one of notset, same_upper, same_lower, valid (or nnplug.AutoPad)
        kernel_shape (Union[int, Sequence[int]]): ONNX kernel_shape: all 0 = w's R1..Rk, else must equal them; default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused
        strides (Union[int, Sequence[int]]): ONNX strides, >= 0 (0 means 1): the output step per input position; default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused
        pads (Union[int, Sequence[int]]): ONNX pads, >= 0: [begin_1..begin_k, end_1..end_k], removed from the full output; default 0; ABI 1.2; 2k entries [begins..., ends...] (ONNX), k entries (begin = end on each axis, as PyTorch's padding), or an int for every begin and end; () = all 0; other lengths are refused
        dilations (Union[int, Sequence[int]]): ONNX dilations of w, >= 0 (0 means 1); default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused
        output_padding (Union[int, Sequence[int]]): ONNX output_padding, >= 0: extra output rows at the end of each axis; default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused
        output_shape (Union[int, Sequence[int]]): ONNX output_shape (spatial O1..Ok): all 0 = not given; else every entry >= 1 and it sets the pads; default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv_transpose_forward.run(locals())


_conv_transpose_backward_data = _Op('conv_transpose_backward_data', OpKind.CONV_TRANSPOSE_BACKWARD_DATA, _g.nnp_conv_transpose_params, False, False,
    (_T('dy', False, 'float', False, False), _T('w', False, 'float', False, False), ),
    (_T('dx', False, 'float', False, False), ),
    (_P('group', 'group', 'int32', None, None, None), _P('auto_pad', 'auto_pad', 'enum', _g.AutoPad, None, None), _P('kernel_shape', 'kernel_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('strides', 'strides', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('pads', 'pads', 'int32[NNP_MAX_DIMS]', None, None, None, 2), _P('dilations', 'dilations', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('output_padding', 'output_padding', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('output_shape', 'output_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), ))


def conv_transpose_backward_data(
    dy: TensorLike, w: TensorLike, *, group: int = 1, auto_pad: Union[str, int] = 'notset', kernel_shape: Union[int, Sequence[int]] = (),
    strides: Union[int, Sequence[int]] = (), pads: Union[int, Sequence[int]] = (), dilations: Union[int, Sequence[int]] = (),
    output_padding: Union[int, Sequence[int]] = (), output_shape: Union[int, Sequence[int]] = (), out_shape: Optional[Sequence[Any]] = None,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA (121; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_conv_transpose_params): see nnplug.conv_transpose_forward.

    dx = dL/dx of NNP_OP_CONV_TRANSPOSE_FORWARD: the forward convolution of dy with w (as
    NNP_OP_CONV_FORWARD with w read as [C, K/group, R..]):
    dx[n,c,d] = sum over m in c's group g and r of
                dy[n, m, d*stride - pad_begin + r*dilation] * w[c, m - g*K/group, r].

    Inputs:
        dy: [N, K, O1..Ok] (the call's float dtype)
        w: [C, K/group, R1..Rk] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: x's shape [N, C, D1..Dk] (not inferable: the pads may depend on D) (the call's float dtype)

    Params (keyword-only; the C struct's fields): group, auto_pad, kernel_shape, strides, pads, dilations, output_padding, output_shape, as in nnplug.conv_transpose_forward.

    Other keywords:
        out_shape: the output's shape (a list of shapes for a variadic output), needed without out= because the inputs do not determine it
        return_<name>: also compute and return that optional output

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv_transpose_backward_data.run(locals())


_conv_transpose_backward_filter = _Op('conv_transpose_backward_filter', OpKind.CONV_TRANSPOSE_BACKWARD_FILTER, _g.nnp_conv_transpose_params, False, False,
    (_T('x', False, 'float', False, False), _T('dy', False, 'float', False, False), ),
    (_T('dw', False, 'float', False, False), ),
    (_P('group', 'group', 'int32', None, None, None), _P('auto_pad', 'auto_pad', 'enum', _g.AutoPad, None, None), _P('kernel_shape', 'kernel_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('strides', 'strides', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('pads', 'pads', 'int32[NNP_MAX_DIMS]', None, None, None, 2), _P('dilations', 'dilations', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('output_padding', 'output_padding', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('output_shape', 'output_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), ))


def conv_transpose_backward_filter(
    x: TensorLike, dy: TensorLike, *, group: int = 1, auto_pad: Union[str, int] = 'notset', kernel_shape: Union[int, Sequence[int]] = (),
    strides: Union[int, Sequence[int]] = (), pads: Union[int, Sequence[int]] = (), dilations: Union[int, Sequence[int]] = (),
    output_padding: Union[int, Sequence[int]] = (), output_shape: Union[int, Sequence[int]] = (), out_shape: Optional[Sequence[Any]] = None,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER (122; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_conv_transpose_params): see nnplug.conv_transpose_forward.

    dw = dL/dw of NNP_OP_CONV_TRANSPOSE_FORWARD:
    dw[c,m,r] = sum over n, d of x[n,c,d] * dy[n, g*K/group + m, d*stride - pad_begin + r*dilation]
    with g = c / (C/group).

    Inputs:
        x: [N, C, D1..Dk] (the call's float dtype)
        dy: [N, K, O1..Ok] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dw: w's shape [C, K/group, R1..Rk] (not inferable: several R give one O) (the call's float dtype)

    Params (keyword-only; the C struct's fields): group, auto_pad, kernel_shape, strides, pads, dilations, output_padding, output_shape, as in nnplug.conv_transpose_forward.

    Other keywords:
        out_shape: the output's shape (a list of shapes for a variadic output), needed without out= because the inputs do not determine it
        return_<name>: also compute and return that optional output

    Returns: dw.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _conv_transpose_backward_filter.run(locals())


_pool2d_forward = _Op('pool2d_forward', OpKind.POOL2D_FORWARD, _g.nnp_pool2d_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('mode', 'mode', 'enum', _g.PoolMode, None, None), _P('window_h', 'window_h', 'int32', None, None, None), _P('window_w', 'window_w', 'int32', None, None, None), _P('stride_h', 'stride_h', 'int32', None, None, None), _P('stride_w', 'stride_w', 'int32', None, None, None), _P('pad_top', 'pad_top', 'int32', None, None, None), _P('pad_bottom', 'pad_bottom', 'int32', None, None, None), _P('pad_left', 'pad_left', 'int32', None, None, None), _P('pad_right', 'pad_right', 'int32', None, None, None), _P('ceil_mode', 'ceil_mode', 'flag', None, None, None), _P('count_include_pad', 'count_include_pad', 'flag', None, None, None), _P('global_', 'global', 'flag', None, None, None), ))


def pool2d_forward(
    x: TensorLike, *, mode: Union[str, int] = 'max', window_h: int = 2, window_w: int = 2, stride_h: int = 2, stride_w: int = 2,
    pad_top: int = 0, pad_bottom: int = 0, pad_left: int = 0, pad_right: int = 0, ceil_mode: bool = False, count_include_pad: bool = False,
    global_: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_POOL2D_FORWARD (20; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Pooling (ONNX MaxPool / AveragePool, PyTorch's output-size rule for ceil_mode).
      P = floor_or_ceil((H + pad_top + pad_bottom - window_h) / stride_h) + 1, and with ceil_mode
      the last window must start inside the input or the top padding: if (P-1)*stride_h >=
      H + pad_top then P -= 1. Likewise Q.
    Max: padding never wins (acts as -inf); backward routes dy to the first maximum in
    row-major window order. y is read by backends that need it (cuDNN) and must be the
    forward's output.
    Average: window clipped to [-pad, H+pad_bottom) for the divisor when count_include_pad = 1,
    to the input when 0; the sum always covers only input elements.
    global = 1: window = (H, W), stride 1, padding 0; the other window fields are ignored.
    Unless global: window >= 1, stride >= 1, 0 <= pad < window on each side.

    Inputs:
        x: [N, C, H, W] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: [N, C, P, Q] (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        mode (Union[str, int]): nnp_pool_mode; default MAX; one of max, average (or nnplug.PoolMode)
        window_h (int): default 2
        window_w (int): default 2
        stride_h (int): default 2
        stride_w (int): default 2
        pad_top (int): default 0
        pad_bottom (int): default 0
        pad_left (int): default 0
        pad_right (int): default 0
        ceil_mode (bool): 0 or 1; default 0
        count_include_pad (bool): 0 or 1; average only; default 0
        global_ (bool): 0 or 1; default 0

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _pool2d_forward.run(locals())


_pool2d_backward = _Op('pool2d_backward', OpKind.POOL2D_BACKWARD, _g.nnp_pool2d_params, False, True,
    (_T('x', False, 'float', False, False), _T('y', False, 'float', False, False), _T('dy', False, 'float', False, False), ),
    (_T('dx', False, 'float', False, False), ),
    (_P('mode', 'mode', 'enum', _g.PoolMode, None, None), _P('window_h', 'window_h', 'int32', None, None, None), _P('window_w', 'window_w', 'int32', None, None, None), _P('stride_h', 'stride_h', 'int32', None, None, None), _P('stride_w', 'stride_w', 'int32', None, None, None), _P('pad_top', 'pad_top', 'int32', None, None, None), _P('pad_bottom', 'pad_bottom', 'int32', None, None, None), _P('pad_left', 'pad_left', 'int32', None, None, None), _P('pad_right', 'pad_right', 'int32', None, None, None), _P('ceil_mode', 'ceil_mode', 'flag', None, None, None), _P('count_include_pad', 'count_include_pad', 'flag', None, None, None), _P('global_', 'global', 'flag', None, None, None), ))


def pool2d_backward(
    x: TensorLike, y: TensorLike, dy: TensorLike, *, mode: Union[str, int] = 'max', window_h: int = 2, window_w: int = 2, stride_h: int = 2,
    stride_w: int = 2, pad_top: int = 0, pad_bottom: int = 0, pad_left: int = 0, pad_right: int = 0, ceil_mode: bool = False,
    count_include_pad: bool = False, global_: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_POOL2D_BACKWARD (21; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_pool2d_params): see nnplug.pool2d_forward.

    Inputs:
        x: [N, C, H, W] (the call's float dtype)
        y: [N, C, P, Q], the forward's output (the call's float dtype)
        dy: [N, C, P, Q] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: x's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields): mode, window_h, window_w, stride_h, stride_w, pad_top, pad_bottom, pad_left, pad_right, ceil_mode, count_include_pad, global_, as in nnplug.pool2d_forward.

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _pool2d_backward.run(locals())


_pool_forward = _Op('pool_forward', OpKind.POOL_FORWARD, _g.nnp_pool_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), _T('indices', True, 'int64', False, False), ),
    (_P('mode', 'mode', 'enum', _g.PoolMode, None, None), _P('auto_pad', 'auto_pad', 'enum', _g.AutoPad, None, None), _P('ceil_mode', 'ceil_mode', 'flag', None, None, None), _P('count_include_pad', 'count_include_pad', 'flag', None, None, None), _P('global_', 'global', 'flag', None, None, None), _P('storage_order', 'storage_order', 'flag', None, None, None), _P('kernel_shape', 'kernel_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('strides', 'strides', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('pads', 'pads', 'int32[NNP_MAX_DIMS]', None, None, None, 2), _P('dilations', 'dilations', 'int32[NNP_MAX_DIMS]', None, None, None, 1), ))


def pool_forward(
    x: TensorLike, *, mode: Union[str, int] = 'max', auto_pad: Union[str, int] = 'notset', ceil_mode: bool = False,
    count_include_pad: bool = False, global_: bool = False, storage_order: bool = False, kernel_shape: Union[int, Sequence[int]] = (),
    strides: Union[int, Sequence[int]] = (), pads: Union[int, Sequence[int]] = (), dilations: Union[int, Sequence[int]] = (),
    return_indices: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_POOL_FORWARD (22; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    N-D pooling (ONNX MaxPool / AveragePool, opset 22; GlobalMaxPool / GlobalAveragePool with
    global = 1), ABI 1.2. x is [N, C, D1..Dk] with k = rank(x) - 2 in {1, 2, 3}; the per-dimension
    arrays use their first k entries (pads its first 2k), the rest must be 0.
    Per spatial dimension i: effective kernel ek = dilations[i] * (kernel_shape[i] - 1) + 1,
    output O_i, pads b_i = pads[i] (begin), e_i = pads[k + i] (end), stride s:
      auto_pad NOTSET: O = floor((D + b + e - ek) / s) + 1 (ceil with ceil_mode; ONNX rule: a
        last window that would start in the end padding is dropped: if (O-1)*s >= D + b, O -= 1)
      SAME_UPPER / SAME_LOWER: O = ceil(D / s); total pad = max(0, (O-1)*s + ek - D), split
        total/2 at the begin (UPPER; the extra at the end) or at the end (LOWER); pads must be 0
      VALID: O = floor((D - ek) / s) + 1, no padding; pads must be 0
      (with auto_pad, ceil_mode has no effect: ONNX's ceil and floor formulas agree there)
    Window of output o: taps t_j = o*s - b + j*dilation, j = 0..kernel-1 (per dimension).
    Max: y = the largest tap inside x (padding never wins); NaN propagates (the first NaN wins);
    ties go to the first tap in row-major window order. Average: y = sum of the taps inside x /
    divisor; divisor = the taps inside x (count_include_pad = 0) or the taps inside the padded
    extent [-b, D + e) (count_include_pad = 1; a ceil_mode window running past it is clipped,
    as PyTorch and ONNX Runtime). A window with no tap inside x (possible only with dilations)
    gives -inf (max, Indices -1) or 0/0 = NaN (average without count_include_pad).
    global = 1: window = (D1..Dk), stride 1, no padding, dilation 1; kernel_shape, strides,
    pads, dilations, auto_pad and ceil_mode are ignored.
    Unless global: kernel_shape >= 1, strides and dilations >= 0 (0 means 1),
    0 <= pad < ek, and every O_i >= 1.

    N-D max / average pooling (ONNX MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool);
    nnp_pool_params has the formulas. indices (max only; NULL for average) is ONNX's Indices: the
    flat index of each output's maximum in x, (n*C + c) * D1*..*Dk + the spatial index, which is
    row-major (storage_order 0) or column-major within the spatial dimensions (storage_order 1:
    i1 + i2*D1 + i3*D1*D2), as ONNX's reference and ONNX Runtime; -1 for a window with no tap
    inside x.

    Inputs:
        x: [N, C, D1..Dk], k in {1, 2, 3} (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: [N, C, O1..Ok] (the call's float dtype)
        indices (optional: return_indices=True or out=): [N, C, O1..Ok], max pooling only (int64)

    Params (keyword-only; the C struct's fields):
        mode (Union[str, int]): nnp_pool_mode; MAX (ONNX MaxPool) or AVERAGE (ONNX AveragePool); default MAX; ABI 1.2; one of max, average (or nnplug.PoolMode)
        auto_pad (Union[str, int]): nnp_auto_pad; ONNX auto_pad; default NOTSET; ABI 1.2; one of notset, same_upper, same_lower, valid (or nnplug.AutoPad)
        ceil_mode (bool): 0 or 1; ONNX ceil_mode, with ONNX's rule for the last window; default 0; ABI 1.2
        count_include_pad (bool): 0 or 1; ONNX count_include_pad; average only; default 0; ABI 1.2
        global_ (bool): 0 or 1; 1: ONNX GlobalMaxPool / GlobalAveragePool; default 0; ABI 1.2
        storage_order (bool): 0 or 1; ONNX storage_order for Indices: 0 row-major, 1 column-major; default 0; ABI 1.2
        kernel_shape (Union[int, Sequence[int]]): ONNX kernel_shape (required unless global), k entries >= 1; default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused
        strides (Union[int, Sequence[int]]): ONNX strides, k entries; 0 means 1 (the ONNX default); default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused
        pads (Union[int, Sequence[int]]): ONNX pads, 2k entries [b_1..b_k, e_1..e_k]; 0 <= pad < ek; default 0; ABI 1.2; 2k entries [begins..., ends...] (ONNX), k entries (begin = end on each axis, as PyTorch's padding), or an int for every begin and end; () = all 0; other lengths are refused
        dilations (Union[int, Sequence[int]]): ONNX dilations, k entries; 0 means 1 (the ONNX default); default 0; ABI 1.2; k entries (one per spatial axis), or an int for all k; () = all 0; other lengths are refused

    Other keywords:
        return_<name>: also compute and return that optional output

    Returns: the computed outputs among (y, indices) in that order; a single one unwrapped.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _pool_forward.run(locals())


_pool_backward = _Op('pool_backward', OpKind.POOL_BACKWARD, _g.nnp_pool_params, False, True,
    (_T('x', False, 'float', False, False), _T('y', False, 'float', False, False), _T('dy', False, 'float', False, False), ),
    (_T('dx', False, 'float', False, False), ),
    (_P('mode', 'mode', 'enum', _g.PoolMode, None, None), _P('auto_pad', 'auto_pad', 'enum', _g.AutoPad, None, None), _P('ceil_mode', 'ceil_mode', 'flag', None, None, None), _P('count_include_pad', 'count_include_pad', 'flag', None, None, None), _P('global_', 'global', 'flag', None, None, None), _P('storage_order', 'storage_order', 'flag', None, None, None), _P('kernel_shape', 'kernel_shape', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('strides', 'strides', 'int32[NNP_MAX_DIMS]', None, None, None, 1), _P('pads', 'pads', 'int32[NNP_MAX_DIMS]', None, None, None, 2), _P('dilations', 'dilations', 'int32[NNP_MAX_DIMS]', None, None, None, 1), ))


def pool_backward(
    x: TensorLike, y: TensorLike, dy: TensorLike, *, mode: Union[str, int] = 'max', auto_pad: Union[str, int] = 'notset',
    ceil_mode: bool = False, count_include_pad: bool = False, global_: bool = False, storage_order: bool = False,
    kernel_shape: Union[int, Sequence[int]] = (), strides: Union[int, Sequence[int]] = (), pads: Union[int, Sequence[int]] = (),
    dilations: Union[int, Sequence[int]] = (), out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_POOL_BACKWARD (23; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_pool_params): see nnplug.pool_forward.

    dx of N-D pooling (no ONNX op; PyTorch max_poolNd / avg_poolNd backward, cuDNN's
    cudnnPoolingBackward operands): the forward's params, x, its output y and dy. Max routes each
    dy to the first maximum of its window in row-major window order (the tap forward's indices
    names; padding never wins; a window with no tap inside x routes nothing); dx sums over
    overlapping windows. Average spreads dy / divisor over the window's taps inside x, with the
    forward's divisor. y must be the forward's output; backends may read it (cuDNN) or recompute
    from x (reference, cpu).

    Inputs:
        x: [N, C, D1..Dk] (the call's float dtype)
        y: [N, C, O1..Ok], the forward's output (the call's float dtype)
        dy: [N, C, O1..Ok] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: x's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields): mode, auto_pad, ceil_mode, count_include_pad, global_, storage_order, kernel_shape, strides, pads, dilations, as in nnplug.pool_forward.

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _pool_backward.run(locals())


_activation_forward = _Op('activation_forward', OpKind.ACTIVATION_FORWARD, _g.nnp_activation_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('function', 'function', 'enum', _g.Activation, None, None), _P('alpha', 'alpha', 'double', None, None, None), ))


def activation_forward(
    x: TensorLike, *, function: Union[str, int] = 'relu', alpha: float = 0.0, out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_ACTIVATION_FORWARD (30; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Activation: y = f(x) elementwise; all tensors have one shape, any rank.

    Inputs:
        x: see the op (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        function (Union[str, int]): nnp_activation; default RELU; one of relu, leaky_relu, sigmoid, tanh, gelu_erf, gelu_tanh, elu (or nnplug.Activation)
        alpha (float): leaky_relu slope / elu scale (finite); ignored by the others; default 0.0

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _activation_forward.run(locals())


_activation_backward = _Op('activation_backward', OpKind.ACTIVATION_BACKWARD, _g.nnp_activation_params, False, True,
    (_T('x', False, 'float', False, False), _T('dy', False, 'float', False, False), ),
    (_T('dx', False, 'float', False, False), ),
    (_P('function', 'function', 'enum', _g.Activation, None, None), _P('alpha', 'alpha', 'double', None, None, None), ))


def activation_backward(
    x: TensorLike, dy: TensorLike, *, function: Union[str, int] = 'relu', alpha: float = 0.0, out: OutLike = None,
    stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_ACTIVATION_BACKWARD (31; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_activation_params): see nnplug.activation_forward.

    dx = f'(x) * dy.

    Inputs:
        x: see the op (the call's float dtype)
        dy: x's shape (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: x's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields): function, alpha, as in nnplug.activation_forward.

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _activation_backward.run(locals())


_softmax_forward = _Op('softmax_forward', OpKind.SOFTMAX_FORWARD, _g.nnp_softmax_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('axis', 'axis', 'int32', None, None, None), _P('log', 'log', 'flag', None, None, None), ))


def softmax_forward(
    x: TensorLike, *, axis: int = -1, log: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_SOFTMAX_FORWARD (40; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Softmax / log-softmax along one axis (ONNX Softmax / LogSoftmax, opset 13).
      log-softmax: y = (x - max) - log(sum exp(x - max)), in that order (no rounding of max + log)
      softmax backward:     dx = y * (dy - sum_axis(dy * y))
      log-softmax backward: dx = dy - exp(y) * sum_axis(dy)

    Inputs:
        x: see the op (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        axis (int): in [-rank, rank); negative counts from the end; default -1
        log (bool): 0 or 1; 0 softmax, 1 log-softmax; default 0

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _softmax_forward.run(locals())


_softmax_backward = _Op('softmax_backward', OpKind.SOFTMAX_BACKWARD, _g.nnp_softmax_params, False, True,
    (_T('y', False, 'float', False, False), _T('dy', False, 'float', False, False), ),
    (_T('dx', False, 'float', False, False), ),
    (_P('axis', 'axis', 'int32', None, None, None), _P('log', 'log', 'flag', None, None, None), ))


def softmax_backward(
    y: TensorLike, dy: TensorLike, *, axis: int = -1, log: bool = False, out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_SOFTMAX_BACKWARD (41; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_softmax_params): see nnplug.softmax_forward.

    Inputs:
        y: the forward's output (the call's float dtype)
        dy: y's shape (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: y's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields): axis, log, as in nnplug.softmax_forward.

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _softmax_backward.run(locals())


_attention_forward = _Op('attention_forward', OpKind.ATTENTION_FORWARD, _g.nnp_attention_params, False, True,
    (_T('Q', False, 'float', False, False), _T('K', False, 'float', False, False), _T('V', False, 'float', False, False), _T('attn_mask', True, 'float', False, False), ),
    (_T('Y', False, 'float', False, False), _T('softmax_lse', True, 'accumulation', False, False), ),
    (_P('is_causal', 'is_causal', 'flag', None, None, None), _P('q_num_heads', 'q_num_heads', 'int32', None, None, None), _P('kv_num_heads', 'kv_num_heads', 'int32', None, None, None), _P('scale', 'scale', 'double', None, None, None), ))


def attention_forward(
    Q: TensorLike, K: TensorLike, V: TensorLike, *, attn_mask: Optional[TensorLike] = None, is_causal: bool = False, q_num_heads: int = 0,
    kv_num_heads: int = 0, scale: float = 0.0, return_softmax_lse: bool = False, out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_ATTENTION_FORWARD (130; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    Scaled dot-product attention (ONNX Attention, opset 23; Vaswani et al., "Attention is all you
    need", NeurIPS 2017), one op so that a backend can fuse it (FlashAttention, cuDNN SDPA).
    Two layouts, chosen by the rank of Q (K, V and Y follow it):
      rank 4: Q [B, Hq, Tq, D], K [B, Hkv, Tk, D], V [B, Hkv, Tk, Dv], Y [B, Hq, Tq, Dv];
              q_num_heads / kv_num_heads are 0 or equal to Hq / Hkv.
      rank 3: Q [B, Tq, Hq*D], K [B, Tk, Hkv*D], V [B, Tk, Hkv*Dv], Y [B, Tq, Hq*Dv] (the
              heads side by side in the last dimension: the layout of a Linear's output and of the
              output projection's input); q_num_heads and kv_num_heads are required.
    Hq must be a multiple of Hkv (grouped-query attention: query head h reads kv head
    h / (Hq/Hkv)). For every batch b and query head h, with s = scale (0: 1/sqrt(D), ONNX's
    default):
      S = s * Q K^T + mask     [Tq, Tk]  (mask: the optional additive attn_mask, broadcast
                                          numpy-style from its shape to [B, Hq, Tq, Tk]; with
                                          is_causal = 1, also -inf where j > i: ONNX's upper-left
                                          aligned causal mask)
      lse = log(sum_j exp(S - max_j S)) + max_j S   (per row; the optional softmax_lse output)
      P = exp(S - lse)                   (softmax over the keys, computed as x - max - log(sum))
      Y = P V
    Backward (FlashAttention-2, Dao 2023), from Y, lse and dY:
      dV = P^T dY;  dP = dY V^T;  delta_i = sum_d dY[i,d] Y[i,d];  dS = P * (dP - delta)
      dQ = s * dS K;  dK = s * dS^T Q   (dK and dV summed over the query heads of a group)
    A row whose every score is -inf (fully masked) gives Y = 0, lse = -inf and zero gradients,
    where the plain composition gives NaN (nnplug differs from ONNX here on purpose, as fused
    kernels do). No gradient flows to attn_mask. ONNX's softcap, qk_matmul_output_mode,
    past/present key-value cache and softmax_precision are not covered (float32 accumulation).

    Inputs:
        Q: [B, Hq, Tq, D] or [B, Tq, Hq*D] (the call's float dtype)
        K: [B, Hkv, Tk, D] or [B, Tk, Hkv*D] (the call's float dtype)
        V: [B, Hkv, Tk, Dv] or [B, Tk, Hkv*Dv] (the call's float dtype)
        attn_mask (optional keyword): additive, broadcastable to [B, Hq, Tq, Tk] (rank <= 4) (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        Y: [B, Hq, Tq, Dv] or [B, Tq, Hq*Dv] (the call's float dtype)
        softmax_lse (optional: return_softmax_lse=True or out=): [B, Hq, Tq]: each score row's log-sum-exp, for the backward (float32 in a float16/bfloat16 call (ABI 1.9), else the call's float dtype)

    Params (keyword-only; the C struct's fields):
        is_causal (bool): 0 or 1; 1: mask keys after the query (j > i), ONNX is_causal; default 0; ABI 1.2
        q_num_heads (int): >= 0; Hq; required (>= 1) for rank-3 tensors, 0 or Hq for rank 4; default 0; ABI 1.2
        kv_num_heads (int): >= 0; Hkv; required (>= 1) for rank-3 tensors, 0 or Hkv for rank 4; default 0; ABI 1.2
        scale (float): >= 0, finite; multiplies Q K^T; 0 means 1/sqrt(D) (ONNX default); default 0.0; ABI 1.2

    Other keywords:
        return_<name>: also compute and return that optional output

    Returns: the computed outputs among (Y, softmax_lse) in that order; a single one unwrapped.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _attention_forward.run(locals())


_attention_backward = _Op('attention_backward', OpKind.ATTENTION_BACKWARD, _g.nnp_attention_params, False, True,
    (_T('Q', False, 'float', False, False), _T('K', False, 'float', False, False), _T('V', False, 'float', False, False), _T('attn_mask', True, 'float', False, False), _T('Y', False, 'float', False, False), _T('dY', False, 'float', False, False), _T('softmax_lse', False, 'accumulation', False, False), ),
    (_T('dQ', False, 'float', False, False), _T('dK', False, 'float', False, False), _T('dV', False, 'float', False, False), ),
    (_P('is_causal', 'is_causal', 'flag', None, None, None), _P('q_num_heads', 'q_num_heads', 'int32', None, None, None), _P('kv_num_heads', 'kv_num_heads', 'int32', None, None, None), _P('scale', 'scale', 'double', None, None, None), ))


def attention_backward(
    Q: TensorLike, K: TensorLike, V: TensorLike, Y: TensorLike, dY: TensorLike, softmax_lse: TensorLike, *,
    attn_mask: Optional[TensorLike] = None, is_causal: bool = False, q_num_heads: int = 0, kv_num_heads: int = 0, scale: float = 0.0,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_ATTENTION_BACKWARD (131; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_attention_params): see nnplug.attention_forward.

    The forward's params and mask; Y and softmax_lse are the forward's outputs.

    Inputs:
        Q: see the op (the call's float dtype)
        K: see the op (the call's float dtype)
        V: see the op (the call's float dtype)
        Y: the forward's output (the call's float dtype)
        dY: Y's shape (the call's float dtype)
        softmax_lse: [B, Hq, Tq], the forward's (float32 in a float16/bfloat16 call (ABI 1.9), else the call's float dtype)
        attn_mask (optional keyword): the forward's mask (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dQ: Q's shape (the call's float dtype)
        dK: K's shape (the call's float dtype)
        dV: V's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields): is_causal, q_num_heads, kv_num_heads, scale, as in nnplug.attention_forward.

    Returns: the computed outputs among (dQ, dK, dV) in that order; a single one unwrapped.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _attention_backward.run(locals())


_softmax_cross_entropy_forward = _Op('softmax_cross_entropy_forward', OpKind.SOFTMAX_CROSS_ENTROPY_FORWARD, _g.nnp_softmax_cross_entropy_params, False, True,
    (_T('logits', False, 'float', False, False), _T('labels', False, 'int64', False, False), ),
    (_T('loss', False, 'float', False, False), _T('log_prob', True, 'float', False, False), ),
    (_P('reduction', 'reduction', 'enum', _g.Reduction, None, None), _P('ignore_index', 'ignore_index', 'int64', None, 'has_ignore_index', None), ))


def softmax_cross_entropy_forward(
    logits: TensorLike, labels: TensorLike, *, reduction: Union[str, int] = 'mean', ignore_index: Optional[int] = None,
    return_log_prob: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD (50; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Softmax cross-entropy (ONNX SoftmaxCrossEntropyLoss without weights, 2-D).
      loss_i = -log_softmax(logits_i)[labels_i]; 0 where labels_i == ignore_index.
      mean divides by the count of non-ignored samples (0/0 gives NaN, as ONNX).
      A label outside [0, C) that is not ignored contributes NaN.
      backward: dlogits_i = (softmax(logits_i) - onehot(labels_i)) * dloss_i (/ count for mean);
      rows with ignored labels are 0.

    Inputs:
        logits: [N, C] (the call's float dtype)
        labels: [N] (int64)

    Outputs (returned; storage may be passed with out=, in this order):
        loss: [] (rank 0) for mean/sum, [N] for none (the call's float dtype)
        log_prob (optional: return_log_prob=True or out=): [N, C] (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        reduction (Union[str, int]): nnp_reduction; default MEAN; one of mean, sum, none (or nnplug.Reduction)
        ignore_index (Optional[int]): used when has_ignore_index = 1; default -100; None leaves has_ignore_index = 0

    Other keywords:
        return_<name>: also compute and return that optional output

    Returns: the computed outputs among (loss, log_prob) in that order; a single one unwrapped.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _softmax_cross_entropy_forward.run(locals())


_softmax_cross_entropy_backward = _Op('softmax_cross_entropy_backward', OpKind.SOFTMAX_CROSS_ENTROPY_BACKWARD, _g.nnp_softmax_cross_entropy_params, False, True,
    (_T('logits', False, 'float', False, False), _T('labels', False, 'int64', False, False), _T('dloss', False, 'float', False, False), ),
    (_T('dlogits', False, 'float', False, False), ),
    (_P('reduction', 'reduction', 'enum', _g.Reduction, None, None), _P('ignore_index', 'ignore_index', 'int64', None, 'has_ignore_index', None), ))


def softmax_cross_entropy_backward(
    logits: TensorLike, labels: TensorLike, dloss: TensorLike, *, reduction: Union[str, int] = 'mean', ignore_index: Optional[int] = None,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD (51; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_softmax_cross_entropy_params): see nnplug.softmax_cross_entropy_forward.

    Inputs:
        logits: [N, C] (the call's float dtype)
        labels: [N] (int64)
        dloss: loss's shape (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dlogits: [N, C] (the call's float dtype)

    Params (keyword-only; the C struct's fields): reduction, ignore_index, as in nnplug.softmax_cross_entropy_forward.

    Returns: dlogits.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _softmax_cross_entropy_backward.run(locals())


_nll_loss_forward = _Op('nll_loss_forward', OpKind.NLL_LOSS_FORWARD, _g.nnp_nll_loss_params, False, True,
    (_T('input', False, 'float', False, False), _T('target', False, 'int64', False, False), _T('weight', True, 'float', False, False), ),
    (_T('loss', False, 'float', False, False), ),
    (_P('reduction', 'reduction', 'enum', _g.Reduction, None, None), _P('ignore_index', 'ignore_index', 'int64', None, 'has_ignore_index', None), ))


def nll_loss_forward(
    input: TensorLike, target: TensorLike, *, weight: Optional[TensorLike] = None, reduction: Union[str, int] = 'mean',
    ignore_index: Optional[int] = None, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_NLL_LOSS_FORWARD (52; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    Negative log-likelihood loss (ONNX NegativeLogLikelihoodLoss, opset 22), ABI 1.2.
    input holds log-probabilities [N, C, d1..dk] (k >= 0), target int64 [N, d1..dk], weight
    optional [C] (absent: every weight 1). For every position j = (n, d1..dk), t = target[j]:
      w_j = 0 if t == ignore_index (when has_ignore_index), else weight[t]
      loss_j = -input[n, t, d1..dk] * w_j
      none: loss = loss_j ([N, d1..dk]);  sum: sum_j loss_j;  mean: sum_j loss_j / sum_j w_j
    (ONNX's weighted mean; without weight the divisor is the count of non-ignored positions; a
    divisor of 0 gives 0/0 = NaN, as ONNX). A target outside [0, C) that is not ignored gives
    loss_j = NaN and w_j = NaN (so sum and mean are NaN): devices cannot raise errors.
    Backward: dinput[n, c, d] = -w_j * g_j where c == t, else 0; g_j = dloss[j] (none), dloss
    (sum) or dloss / sum_j w_j (mean); ignored positions are 0, out-of-range ones NaN over c.

    Inputs:
        input: log-probabilities [N, C] or [N, C, d1..dk] (the call's float dtype)
        target: [N] or [N, d1..dk] (int64)
        weight (optional keyword): [C], per-class weights (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        loss: [] (rank 0) for mean/sum, [N, d1..dk] for none (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        reduction (Union[str, int]): an nnp_reduction value, or 0 (UNDEFINED) for MEAN, the ONNX default, so that zeroed params are valid; default MEAN; ABI 1.2; one of mean, sum, none (or nnplug.Reduction)
        ignore_index (Optional[int]): any value, negative or outside [0, C) included; used when has_ignore_index = 1; default -100; ABI 1.2; None leaves has_ignore_index = 0

    Returns: loss.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _nll_loss_forward.run(locals())


_nll_loss_backward = _Op('nll_loss_backward', OpKind.NLL_LOSS_BACKWARD, _g.nnp_nll_loss_params, False, True,
    (_T('input', False, 'float', False, False), _T('target', False, 'int64', False, False), _T('dloss', False, 'float', False, False), _T('weight', True, 'float', False, False), ),
    (_T('dinput', False, 'float', False, False), ),
    (_P('reduction', 'reduction', 'enum', _g.Reduction, None, None), _P('ignore_index', 'ignore_index', 'int64', None, 'has_ignore_index', None), ))


def nll_loss_backward(
    input: TensorLike, target: TensorLike, dloss: TensorLike, *, weight: Optional[TensorLike] = None, reduction: Union[str, int] = 'mean',
    ignore_index: Optional[int] = None, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_NLL_LOSS_BACKWARD (53; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_nll_loss_params): see nnplug.nll_loss_forward.

    Inputs:
        input: [N, C, d1..dk], the forward's input (the call's float dtype)
        target: [N, d1..dk] (int64)
        dloss: loss's shape (the call's float dtype)
        weight (optional keyword): [C] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dinput: input's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields): reduction, ignore_index, as in nnplug.nll_loss_forward.

    Returns: dinput.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _nll_loss_backward.run(locals())


_softmax_cross_entropy_loss_forward = _Op('softmax_cross_entropy_loss_forward', OpKind.SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD, _g.nnp_softmax_cross_entropy_loss_params, False, True,
    (_T('scores', False, 'float', False, False), _T('labels', False, 'int64', False, False), _T('weights', True, 'float', False, False), ),
    (_T('loss', False, 'float', False, False), _T('log_prob', True, 'float', False, False), ),
    (_P('reduction', 'reduction', 'enum', _g.Reduction, None, None), _P('ignore_index', 'ignore_index', 'int64', None, 'has_ignore_index', None), ))


def softmax_cross_entropy_loss_forward(
    scores: TensorLike, labels: TensorLike, *, weights: Optional[TensorLike] = None, reduction: Union[str, int] = 'mean',
    ignore_index: Optional[int] = None, return_log_prob: bool = False, out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD (54; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    Softmax cross-entropy loss (ONNX SoftmaxCrossEntropyLoss, opset 13), ABI 1.2: the NLL loss
    (nnp_nll_loss_params, the same formulas, weights, reductions and ignore rule) of
      log_prob = log_softmax(scores, axis = 1) = x - max_c x - log(sum_c exp(x - max_c x))
    (computed in that order). Backward: dscores[n, c, d] = (softmax(scores)[n, c, d] -
    onehot(t)[c]) * w_j * g_j, g_j as for NLL; ignored positions are 0, out-of-range ones NaN.

    Inputs:
        scores: [N, C] or [N, C, d1..dk] (the call's float dtype)
        labels: [N] or [N, d1..dk] (int64)
        weights (optional keyword): [C], per-class weights (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        loss: [] (rank 0) for mean/sum, [N, d1..dk] for none (the call's float dtype)
        log_prob (optional: return_log_prob=True or out=): scores' shape (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        reduction (Union[str, int]): an nnp_reduction value, or 0 (UNDEFINED) for MEAN, the ONNX default, so that zeroed params are valid; default MEAN; ABI 1.2; one of mean, sum, none (or nnplug.Reduction)
        ignore_index (Optional[int]): any value, negative or outside [0, C) included; used when has_ignore_index = 1; default -100; ABI 1.2; None leaves has_ignore_index = 0

    Other keywords:
        return_<name>: also compute and return that optional output

    Returns: the computed outputs among (loss, log_prob) in that order; a single one unwrapped.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _softmax_cross_entropy_loss_forward.run(locals())


_softmax_cross_entropy_loss_backward = _Op('softmax_cross_entropy_loss_backward', OpKind.SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD, _g.nnp_softmax_cross_entropy_loss_params, False, True,
    (_T('scores', False, 'float', False, False), _T('labels', False, 'int64', False, False), _T('dloss', False, 'float', False, False), _T('weights', True, 'float', False, False), ),
    (_T('dscores', False, 'float', False, False), ),
    (_P('reduction', 'reduction', 'enum', _g.Reduction, None, None), _P('ignore_index', 'ignore_index', 'int64', None, 'has_ignore_index', None), ))


def softmax_cross_entropy_loss_backward(
    scores: TensorLike, labels: TensorLike, dloss: TensorLike, *, weights: Optional[TensorLike] = None, reduction: Union[str, int] = 'mean',
    ignore_index: Optional[int] = None, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD (55; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_softmax_cross_entropy_loss_params): see nnplug.softmax_cross_entropy_loss_forward.

    Inputs:
        scores: [N, C, d1..dk], the forward's input (the call's float dtype)
        labels: [N, d1..dk] (int64)
        dloss: loss's shape (the call's float dtype)
        weights (optional keyword): [C] (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dscores: scores' shape (the call's float dtype)

    Params (keyword-only; the C struct's fields): reduction, ignore_index, as in nnplug.softmax_cross_entropy_loss_forward.

    Returns: dscores.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _softmax_cross_entropy_loss_backward.run(locals())


_batch_norm_forward_training = _Op('batch_norm_forward_training', OpKind.BATCH_NORM_FORWARD_TRAINING, _g.nnp_batch_norm_params, False, True,
    (_T('x', False, 'float', False, False), _T('scale', False, 'accumulation', False, False), _T('bias', False, 'accumulation', False, False), ),
    (_T('y', False, 'float', False, False), _T('running_mean', False, 'accumulation', False, True), _T('running_var', False, 'accumulation', False, True), _T('saved_mean', False, 'accumulation', False, False), _T('saved_inv_std', False, 'accumulation', False, False), ),
    (_P('epsilon', 'epsilon', 'double', None, None, None), _P('momentum', 'momentum', 'double', None, None, None), _P('running_var_rule', 'running_var_rule', 'flag', None, None, None), ))


def batch_norm_forward_training(
    x: TensorLike, scale: TensorLike, bias: TensorLike, running_mean: TensorLike, running_var: TensorLike, *, epsilon: float = 1e-05,
    momentum: float = 0.9, running_var_rule: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_BATCH_NORM_FORWARD_TRAINING (60; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Batch normalisation over N (and H, W) per channel (ONNX BatchNormalization, cuDNN spatial
    mode). x is [N, C] or [N, C, H, W]; per-channel tensors are [C]. M = N*H*W. x, y, dy and dx
    have the call's dtype; every per-channel tensor (scale, bias, the running, saved and given
    statistics, dscale, dbias) is float32 in a float16/bfloat16 call (ABI 1.10; ONNX's T1 and T2
    may differ from T, and cuDNN and PyTorch keep them in float32 for 16-bit inputs), else the
    call's dtype; the sums are computed in float32 or wider.
      mean_c = sum x / M;  var_c = sum (x - mean_c)^2 / M (biased);  inv_std = 1/sqrt(var + eps)
      y = scale * (x - mean) * inv_std + bias
    Training: running_mean = momentum * running_mean + (1 - momentum) * mean            (ONNX)
              running_var  = momentum * running_var  + (1 - momentum) * var * M/(M-1)  (unbiased,
              as cuDNN and PyTorch; M = 1 uses var); with running_var_rule = 1 the population
              var (ONNX). saved_* are for backward.
    Inference: inv_std = 1/sqrt(var + eps) from the given mean and var.
    Backward: dbias = sum dy; dscale = sum dy * xhat;
      dx = scale * inv_std / M * (M*dy - dbias - xhat * dscale), xhat = (x - mean) * inv_std

    Inputs:
        x: see the op (the call's float dtype)
        scale: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        bias: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)

    Updated in place (read and written; never allocated):
        running_mean: [C], read and written (in place) (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        running_var: [C], read and written (in place) (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (the call's float dtype)
        saved_mean: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        saved_inv_std: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)

    Params (keyword-only; the C struct's fields):
        epsilon (float): > 0, finite; > 0, ONNX default 1e-5; default 1e-05
        momentum (float): in [0,1]; weight of the old running value; ONNX default 0.9; default 0.9
        running_var_rule (bool): 0 or 1; training's running_var update: 0 (the default, today's rule and that of PyTorch and cuDNN, kept for ABI stability) the unbiased var * M/(M-1); 1 ONNX BatchNormalization's population var; default 0; ABI 1.2

    Returns: the computed outputs among (y, saved_mean, saved_inv_std) in that order; a single one unwrapped.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _batch_norm_forward_training.run(locals())


_batch_norm_forward_inference = _Op('batch_norm_forward_inference', OpKind.BATCH_NORM_FORWARD_INFERENCE, _g.nnp_batch_norm_params, False, True,
    (_T('x', False, 'float', False, False), _T('scale', False, 'accumulation', False, False), _T('bias', False, 'accumulation', False, False), _T('mean', False, 'accumulation', False, False), _T('var', False, 'accumulation', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('epsilon', 'epsilon', 'double', None, None, None), _P('momentum', 'momentum', 'double', None, None, None), _P('running_var_rule', 'running_var_rule', 'flag', None, None, None), ))


def batch_norm_forward_inference(
    x: TensorLike, scale: TensorLike, bias: TensorLike, mean: TensorLike, var: TensorLike, *, epsilon: float = 1e-05, momentum: float = 0.9,
    running_var_rule: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_BATCH_NORM_FORWARD_INFERENCE (61; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_batch_norm_params): see nnplug.batch_norm_forward_training.

    Inputs:
        x: see the op (the call's float dtype)
        scale: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        bias: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        mean: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        var: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields): epsilon, momentum, running_var_rule, as in nnplug.batch_norm_forward_training.

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _batch_norm_forward_inference.run(locals())


_batch_norm_backward = _Op('batch_norm_backward', OpKind.BATCH_NORM_BACKWARD, _g.nnp_batch_norm_params, False, True,
    (_T('x', False, 'float', False, False), _T('dy', False, 'float', False, False), _T('scale', False, 'accumulation', False, False), _T('saved_mean', False, 'accumulation', False, False), _T('saved_inv_std', False, 'accumulation', False, False), ),
    (_T('dx', False, 'float', False, False), _T('dscale', False, 'accumulation', False, False), _T('dbias', False, 'accumulation', False, False), ),
    (_P('epsilon', 'epsilon', 'double', None, None, None), _P('momentum', 'momentum', 'double', None, None, None), _P('running_var_rule', 'running_var_rule', 'flag', None, None, None), ))


def batch_norm_backward(
    x: TensorLike, dy: TensorLike, scale: TensorLike, saved_mean: TensorLike, saved_inv_std: TensorLike, *, epsilon: float = 1e-05,
    momentum: float = 0.9, running_var_rule: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_BATCH_NORM_BACKWARD (62; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_batch_norm_params): see nnplug.batch_norm_forward_training.

    Inputs:
        x: see the op (the call's float dtype)
        dy: x's shape (the call's float dtype)
        scale: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        saved_mean: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        saved_inv_std: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: x's shape (the call's float dtype)
        dscale: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        dbias: [C] (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)

    Params (keyword-only; the C struct's fields): epsilon, momentum, running_var_rule, as in nnplug.batch_norm_forward_training.

    Returns: the computed outputs among (dx, dscale, dbias) in that order; a single one unwrapped.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _batch_norm_backward.run(locals())


_layer_norm_forward = _Op('layer_norm_forward', OpKind.LAYER_NORM_FORWARD, _g.nnp_layer_norm_params, False, True,
    (_T('x', False, 'float', False, False), _T('scale', False, 'float', False, False), _T('bias', True, 'float', False, False), ),
    (_T('y', False, 'float', False, False), _T('mean', True, 'accumulation', False, False), _T('inv_std', True, 'accumulation', False, False), ),
    (_P('axis', 'axis', 'int32', None, None, None), _P('epsilon', 'epsilon', 'double', None, None, None), ))


def layer_norm_forward(
    x: TensorLike, scale: TensorLike, *, bias: Optional[TensorLike] = None, axis: int = -1, epsilon: float = 1e-05,
    return_mean: bool = False, return_inv_std: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_LAYER_NORM_FORWARD (65; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Layer normalisation over the trailing dimensions [axis, rank) (ONNX LayerNormalization).
    Outer shape O = x.shape[0:axis]; normalised shape I = x.shape[axis:]; stats tensors have
    ONNX's shape: x's rank with 1 in the normalised dimensions (O + [1]*len(I)), and its
    stash_type = 1 dtype: float32 in a float16/bfloat16 call (ABI 1.10), computed in float32 or
    wider; x, scale, bias, y and the gradients have the call's dtype.
      mean = sum x / |I|;  var = sum (x - mean)^2 / |I|;  inv_std = 1/sqrt(var + eps)
      y = (x - mean) * inv_std * scale + bias

    Inputs:
        x: see the op (the call's float dtype)
        scale: I (the call's float dtype)
        bias (optional keyword): I (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (the call's float dtype)
        mean (optional: return_mean=True or out=): O + [1]*len(I) (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        inv_std (optional: return_inv_std=True or out=): O + [1]*len(I) (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)

    Params (keyword-only; the C struct's fields):
        axis (int): in [-rank, rank); ONNX default -1; default -1
        epsilon (float): >= 0, finite; default 1e-05

    Other keywords:
        return_<name>: also compute and return that optional output

    Returns: the computed outputs among (y, mean, inv_std) in that order; a single one unwrapped.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _layer_norm_forward.run(locals())


_layer_norm_backward = _Op('layer_norm_backward', OpKind.LAYER_NORM_BACKWARD, _g.nnp_layer_norm_params, False, True,
    (_T('x', False, 'float', False, False), _T('dy', False, 'float', False, False), _T('scale', False, 'float', False, False), _T('mean', False, 'accumulation', False, False), _T('inv_std', False, 'accumulation', False, False), ),
    (_T('dx', False, 'float', False, False), _T('dscale', False, 'float', False, False), _T('dbias', True, 'float', False, False), ),
    (_P('axis', 'axis', 'int32', None, None, None), _P('epsilon', 'epsilon', 'double', None, None, None), ))


def layer_norm_backward(
    x: TensorLike, dy: TensorLike, scale: TensorLike, mean: TensorLike, inv_std: TensorLike, *, axis: int = -1, epsilon: float = 1e-05,
    return_dbias: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_LAYER_NORM_BACKWARD (66; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_layer_norm_params): see nnplug.layer_norm_forward.

    Inputs:
        x: see the op (the call's float dtype)
        dy: x's shape (the call's float dtype)
        scale: I (the call's float dtype)
        mean: O + [1]*len(I) (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)
        inv_std: O + [1]*len(I) (float32 in a float16/bfloat16 call (ABI 1.10), else the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: x's shape (the call's float dtype)
        dscale: I (the call's float dtype)
        dbias (optional: return_dbias=True or out=): I (the call's float dtype)

    Params (keyword-only; the C struct's fields): axis, epsilon, as in nnplug.layer_norm_forward.

    Other keywords:
        return_<name>: also compute and return that optional output

    Returns: the computed outputs among (dx, dscale, dbias) in that order; a single one unwrapped.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _layer_norm_backward.run(locals())


_dropout_forward = _Op('dropout_forward', OpKind.DROPOUT_FORWARD, _g.nnp_dropout_params, False, True,
    (_T('x', False, 'float', False, False), _T('step', True, 'float32', False, False), ),
    (_T('y', False, 'float', False, False), _T('mask', True, 'uint8', False, False), ),
    (_P('ratio', 'ratio', 'double', None, None, None), _P('seed', 'seed', 'uint64', None, None, None), _P('offset', 'offset', 'uint64', None, None, None), _P('offset_per_step', 'offset_per_step', 'uint64', None, None, None), ))


def dropout_forward(
    x: TensorLike, *, step: Optional[TensorLike] = None, ratio: float = 0.5, seed: int = 0, offset: int = 0, offset_per_step: int = 0,
    return_mask: bool = False, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_DROPOUT_FORWARD (70; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Dropout with a counter-based mask, identical on every backend (Philox4x32-10, Salmon et al.,
    "Parallel random numbers: as easy as 1, 2, 3", SC'11; the Random123 constants).

    For element i (row-major linear index) the mask bit comes from
      (r0, r1, r2, r3) = philox4x32_10(counter = {lo32(c), hi32(c), 0, 0},
                                       key     = {lo32(seed), hi32(seed)}),  c = offset + i / 4
      u = r_{i % 4} >> 8                   (24 random bits)
      keep_i = u >= threshold,  threshold = (uint32_t)(ratio * 16777216.0)  (computed in double)
      y_i = keep_i ? x_i * scale : 0,      scale = (T)(1.0 / (1.0 - ratio))  (T = x's dtype)
    A caller that draws several masks from one seed advances offset by ceil(numel / 4) per call.
    The backward op takes the same params: the mask is regenerated.

    Step counter on the device (ABI 1.4): with the optional input `step` (float32, 1 element, on
    the call's device) the counter offset is
      offset + step * offset_per_step      (uint64 arithmetic, modulo 2^64)
    with step's value read on the device when the op runs, in stream order: an op queued before
    (binary ADD step += one, in place) may update it. One counter can so drive every dropout layer
    of a training step and adam_update's bias corrections: with offset_per_step = the counter
    blocks a layer draws per step, a step replayed with the same params draws exactly the masks of
    calls whose offset was advanced by hand (bit for bit). step must hold a whole number >= 0
    (float32 holds every whole number up to 2^24 exactly): every backend refuses other values
    with NNP_STATUS_INVALID_ARGUMENT and leaves y and the mask untouched: the reference and cpu
    backends when the op runs; sim and cuda, whose kernels read the value on the device, at the
    stream's next synchronize. Without a step tensor offset_per_step is not used (any value is
    accepted).

    Inputs:
        x: see the op (the call's float dtype)
        step (optional keyword): 1 element ([] or [1]): the step counter; the offset used is offset + step * offset_per_step (float32; ABI 1.4)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (the call's float dtype)
        mask (optional: return_mask=True or out=): x's shape, 0/1 (uint8)

    Params (keyword-only; the C struct's fields):
        ratio (float): in [0,1); probability of dropping an element; default 0.5
        seed (int): default 0
        offset (int): Philox counter offset, in units of 4 elements; default 0
        offset_per_step (int): counter blocks added to offset per unit of the step input; not used without it; default 0; ABI 1.4

    Other keywords:
        return_<name>: also compute and return that optional output

    Returns: the computed outputs among (y, mask) in that order; a single one unwrapped.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _dropout_forward.run(locals())


_dropout_backward = _Op('dropout_backward', OpKind.DROPOUT_BACKWARD, _g.nnp_dropout_params, False, True,
    (_T('dy', False, 'float', False, False), _T('step', True, 'float32', False, False), ),
    (_T('dx', False, 'float', False, False), ),
    (_P('ratio', 'ratio', 'double', None, None, None), _P('seed', 'seed', 'uint64', None, None, None), _P('offset', 'offset', 'uint64', None, None, None), _P('offset_per_step', 'offset_per_step', 'uint64', None, None, None), ))


def dropout_backward(
    dy: TensorLike, *, step: Optional[TensorLike] = None, ratio: float = 0.5, seed: int = 0, offset: int = 0, offset_per_step: int = 0,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_DROPOUT_BACKWARD (71; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_dropout_params): see nnplug.dropout_forward.

    Inputs:
        dy: see the op (the call's float dtype)
        step (optional keyword): 1 element ([] or [1]): the step counter, as in dropout_forward (float32; ABI 1.4)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: dy's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields): ratio, seed, offset, offset_per_step, as in nnplug.dropout_forward.

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _dropout_backward.run(locals())


_binary = _Op('binary', OpKind.BINARY, _g.nnp_binary_params, False, True,
    (_T('a', False, 'float', False, False), _T('b', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('op', 'op', 'enum', _g.BinaryOp, None, None), ))


def binary(
    a: TensorLike, b: TensorLike, *, op: Union[str, int] = 'add', out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_BINARY (80; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    y = a (op) b with numpy (multidirectional) broadcasting; y has the broadcast shape.

    Inputs:
        a: see the op (the call's float dtype)
        b: see the op (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: the broadcast shape; may alias a or b when it has that operand's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        op (Union[str, int]): nnp_binary_op; default ADD; one of add, sub, mul, div, pow (or nnplug.BinaryOp)

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _binary.run(locals())


_scale = _Op('scale', OpKind.SCALE, _g.nnp_scale_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('alpha', 'alpha', 'double', None, None, None), ))


def scale(
    x: TensorLike, *, alpha: float = 1.0, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_SCALE (81; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    y = alpha * x (same shape).

    Inputs:
        x: see the op (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        alpha (float): default 1.0

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _scale.run(locals())


_fill = _Op('fill', OpKind.FILL, _g.nnp_fill_params, False, False,
    (),
    (_T('y', False, 'float', False, False), ),
    (_P('value', 'value', 'double', None, None, None), ))


def fill(
    *, value: float = 0.0, out_shape: Optional[Sequence[Any]] = None, dtype: Optional[str] = 'float32', out: OutLike = None,
    stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_FILL (82; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Every element of y = value (rounded to y's dtype).

    Inputs:

    Outputs (returned; storage may be passed with out=, in this order):
        y: any shape (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        value (float): default 0.0

    Other keywords:
        out_shape: the output's shape (a list of shapes for a variadic output), needed without out= because the inputs do not determine it
        dtype: the output dtype when it is allocated (numpy name)
        return_<name>: also compute and return that optional output

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _fill.run(locals())


_copy = _Op('copy', OpKind.COPY, None, True, True,
    (_T('x', False, 'same_as_input0', False, False), ),
    (_T('y', False, 'same_as_input0', False, False), ),
    ())


def copy(
    x: TensorLike, *, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_COPY (83; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    y = x element by element; same shape and dtype (any dtype); both may have arbitrary
    (non-negative) strides; they must not overlap. params may be NULL.

    Inputs:
        x: see the op (any dtype, that of the first input)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (any dtype, that of the first input)

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _copy.run(locals())


_transpose = _Op('transpose', OpKind.TRANSPOSE, _g.nnp_transpose_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('perm', 'perm', 'int32[NNP_MAX_DIMS]', None, None, None), ))


def transpose(
    x: TensorLike, *, perm: Sequence[int], out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_TRANSPOSE (84; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    ONNX Transpose: y.shape[i] = x.shape[perm[i]], y[j0..jr] = x[i] with i[perm[k]] = j[k].
    perm is a permutation of 0..rank-1 in its first rank entries; the rest must be 0.

    Inputs:
        x: see the op (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x.shape permuted by perm (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        perm (Sequence[int]): default identity

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _transpose.run(locals())


_concat = _Op('concat', OpKind.CONCAT, _g.nnp_concat_params, False, True,
    (_T('xs', False, 'same_as_input0', True, False), ),
    (_T('y', False, 'same_as_input0', False, False), ),
    (_P('axis', 'axis', 'int32', None, None, None), ))


def concat(
    xs: Sequence[TensorLike], *, axis: int = 0, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CONCAT (86; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    ONNX Concat (opset 13): y = the inputs joined along `axis`, in order. Every input has y's
    rank and y's dims except along axis; y.shape[axis] = sum of the inputs' dims there (an input
    may have 0 there). Split with the inputs' extents is its backward.

    Inputs:
        xs: a list of 1..64 tensors; one rank and dtype, equal dims except along axis (any dtype, that of the first input)

    Outputs (returned; storage may be passed with out=, in this order):
        y: the inputs' shape with the sum of their dims along axis (any dtype, that of the first input)

    Params (keyword-only; the C struct's fields):
        axis (int): in [-rank, rank); negative counts from the end (ONNX requires it: 0 is nnplug's default); default 0; ABI 1.2

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _concat.run(locals())


_split = _Op('split', OpKind.SPLIT, _g.nnp_split_params, False, False,
    (_T('x', False, 'same_as_input0', False, False), ),
    (_T('ys', False, 'same_as_input0', True, False), ),
    (_P('axis', 'axis', 'int32', None, None, None), _P('num_outputs', 'num_outputs', 'int32', None, None, None), ))


def split(
    x: TensorLike, *, axis: int = 0, num_outputs: int = 0, out_shape: Optional[Sequence[Any]] = None, out: OutLike = None,
    stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_SPLIT (87; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    ONNX Split (opset 18): x cut along `axis` into the outputs, in order; every output has x's
    dims except along axis. The sizes along axis (ONNX's optional `split` input) are the outputs'
    own extents, given by the caller; they must add up to x.shape[axis]. num_outputs > 0 selects
    ONNX's num_outputs attribute instead: then there are exactly num_outputs outputs, each
    ceil(x.shape[axis] / num_outputs) long except the last, which gets the rest (ONNX's rule for
    uneven splits; a negative rest is refused), and nnp_op_infer_shapes gives the outputs'
    shapes. Split of dy is the backward of concat.

    Not inferable unless num_outputs > 0: the split sizes are the outputs' extents.

    Inputs:
        x: see the op (any dtype, that of the first input)

    Outputs (returned; storage may be passed with out=, in this order):
        ys: a list of 1..64 tensors; x's shape except along axis, where their extents add up to x's (any dtype, that of the first input)

    Params (keyword-only; the C struct's fields):
        axis (int): in [-rank, rank); negative counts from the end; ONNX default 0; default 0; ABI 1.2
        num_outputs (int): 0: the outputs' extents are the split sizes; > 0: ONNX num_outputs (must equal the number of outputs); default 0; ABI 1.2

    Other keywords:
        out_shape: the output's shape (a list of shapes for a variadic output), needed without out= because the inputs do not determine it
        return_<name>: also compute and return that optional output

    Returns: ys (a list).

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _split.run(locals())


_slice = _Op('slice', OpKind.SLICE, _g.nnp_slice_params, False, True,
    (_T('x', False, 'same_as_input0', False, False), ),
    (_T('y', False, 'same_as_input0', False, False), ),
    (_P('starts', 'starts', 'int64[NNP_MAX_DIMS]', None, None, 'n_axes'), _P('ends', 'ends', 'int64[NNP_MAX_DIMS]', None, None, 'n_axes'), _P('axes', 'axes', 'int64[NNP_MAX_DIMS]', None, 'has_axes', 'n_axes'), _P('steps', 'steps', 'int64[NNP_MAX_DIMS]', None, 'has_steps', 'n_axes'), ))


def slice(
    x: TensorLike, *, starts: Sequence[int] = (), ends: Sequence[int] = (), axes: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_SLICE (88; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    ONNX Slice (opset 13), with starts, ends, axes and steps as params (ONNX passes them as
    int64 tensors). For i < n_axes: axis a = axes[i] (axes = 0..n_axes-1 when has_axes = 0),
    step s = steps[i] (1 when has_steps = 0), d = x.shape[a]:
      start = starts[i] (+ d if < 0), end = ends[i] (+ d if < 0), then clamped:
      s > 0: start, end in [0, d];        s < 0: start in [0, d-1], end in [-1, d-1];
      y.shape[a] = max(0, ceil((end - start) / s)),  y[.., j, ..] = x[.., start + j*s, ..].
    INT64_MAX / INT64_MIN as end mean "to the end" (forward / backward). Axes not named keep
    their extent. n_axes = 0 gives y = x. Repeated axes and zero steps are refused.

    Inputs:
        x: see the op (any dtype, that of the first input)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape with the sliced axes' counts (any dtype, that of the first input)

    Params (keyword-only; the C struct's fields):
        starts (Sequence[int]): ONNX starts; negative counts from the end; default 0; ABI 1.2; its length sets n_axes
        ends (Sequence[int]): ONNX ends (exclusive); negative counts from the end; INT64_MAX / INT64_MIN = to the end; default 0; ABI 1.2; its length sets n_axes
        axes (Optional[Sequence[int]]): ONNX axes, in [-rank, rank), no repeats; read when has_axes = 1; default 0; ABI 1.2; None leaves has_axes = 0; its length sets n_axes
        steps (Optional[Sequence[int]]): ONNX steps, non-zero; read when has_steps = 1; default 0; ABI 1.2; None leaves has_steps = 0; its length sets n_axes

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _slice.run(locals())


_gather = _Op('gather', OpKind.GATHER, _g.nnp_gather_params, False, True,
    (_T('data', False, 'same_as_input0', False, False), _T('indices', False, 'int64', False, False), ),
    (_T('y', False, 'same_as_input0', False, False), ),
    (_P('axis', 'axis', 'int32', None, None, None), ))


def gather(
    data: TensorLike, indices: TensorLike, *, axis: int = 0, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_GATHER (89; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    ONNX Gather (opset 13): with a = axis, r = rank(data), q = rank(indices),
      y.shape = data.shape[:a] + indices.shape + data.shape[a+1:]   (rank q + r - 1)
      y[i_0..i_{a-1}, j_0..j_{q-1}, k_{a+1}..] = data[i_0..i_{a-1}, idx(j), k_{a+1}..],
      idx(j) = indices[j] + (indices[j] < 0 ? data.shape[a] : 0).
    An index outside [-data.shape[a], data.shape[a]) is an error in ONNX. The reference and cpu
    backends check every index before writing and fail with NNP_STATUS_INVALID_ARGUMENT naming
    the first bad one (outputs untouched). A device that cannot raise from a kernel writes zeros
    for the slices of such indices (gather) and drops their rows of dy (gather_backward).
    gather_backward scatter-adds dy into a zeroed dx of data's shape (deterministic: every element
    of dx sums its contributions in the order of indices); it is the embedding-lookup gradient.

    Inputs:
        data: rank r >= 1 (any dtype, that of the first input)
        indices: any rank q (0 included) (int64)

    Outputs (returned; storage may be passed with out=, in this order):
        y: data.shape[:axis] + indices.shape + data.shape[axis+1:] (any dtype, that of the first input)

    Params (keyword-only; the C struct's fields):
        axis (int): in [-r, r); negative counts from the end; ONNX default 0; default 0; ABI 1.2

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _gather.run(locals())


_slice_backward = _Op('slice_backward', OpKind.SLICE_BACKWARD, _g.nnp_slice_params, False, False,
    (_T('dy', False, 'same_as_input0', False, False), ),
    (_T('dx', False, 'same_as_input0', False, False), ),
    (_P('starts', 'starts', 'int64[NNP_MAX_DIMS]', None, None, 'n_axes'), _P('ends', 'ends', 'int64[NNP_MAX_DIMS]', None, None, 'n_axes'), _P('axes', 'axes', 'int64[NNP_MAX_DIMS]', None, 'has_axes', 'n_axes'), _P('steps', 'steps', 'int64[NNP_MAX_DIMS]', None, 'has_steps', 'n_axes'), ))


def slice_backward(
    dy: TensorLike, *, starts: Sequence[int] = (), ends: Sequence[int] = (), axes: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None, out_shape: Optional[Sequence[Any]] = None, out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_SLICE_BACKWARD (140; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_slice_params): see nnplug.slice.

    dx = 0 except the elements the forward slice read, which get dy (params the forward's).

    Inputs:
        dy: the forward's y shape (any dtype, that of the first input)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: the forward's x shape (not inferable) (any dtype, that of the first input)

    Params (keyword-only; the C struct's fields): starts, ends, axes, steps, as in nnplug.slice.

    Other keywords:
        out_shape: the output's shape (a list of shapes for a variadic output), needed without out= because the inputs do not determine it
        return_<name>: also compute and return that optional output

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _slice_backward.run(locals())


_gather_backward = _Op('gather_backward', OpKind.GATHER_BACKWARD, _g.nnp_gather_params, False, False,
    (_T('dy', False, 'float', False, False), _T('indices', False, 'int64', False, False), ),
    (_T('dx', False, 'float', False, False), ),
    (_P('axis', 'axis', 'int32', None, None, None), ))


def gather_backward(
    dy: TensorLike, indices: TensorLike, *, axis: int = 0, out_shape: Optional[Sequence[Any]] = None, out: OutLike = None,
    stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_GATHER_BACKWARD (141; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_gather_params): see nnplug.gather.

    dx = 0, then dx[.., idx(j), ..] += dy[.., j, ..] in the order of j (deterministic).

    Inputs:
        dy: the forward's y shape (the call's float dtype)
        indices: the forward's indices (int64)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: data's shape (not inferable: data.shape[axis] is not in dy) (the call's float dtype)

    Params (keyword-only; the C struct's fields): axis, as in nnplug.gather.

    Other keywords:
        out_shape: the output's shape (a list of shapes for a variadic output), needed without out= because the inputs do not determine it
        return_<name>: also compute and return that optional output

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _gather_backward.run(locals())


_cast = _Op('cast', OpKind.CAST, None, True, True,
    (_T('x', False, 'any_float', False, False), ),
    (_T('y', False, 'any_float', False, False), ),
    ())


def cast(
    x: TensorLike, *, dtype: Optional[str] = None, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_CAST (85; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Same shape, any two float dtypes (float16, bfloat16, float32, float64); rounds to nearest
    even. params may be NULL. nnp_op_infer_shapes gives y's shape; its dtype is the caller's.

    Inputs:
        x: see the op (any float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (any float dtype)

    Other keywords:
        dtype: the output dtype when it is allocated (numpy name)
        return_<name>: also compute and return that optional output

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _cast.run(locals())


_reduce = _Op('reduce', OpKind.REDUCE, _g.nnp_reduce_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('op', 'op', 'enum', _g.ReduceOp, None, None), _P('keepdims', 'keepdims', 'flag', None, None, None), _P('axes', 'axes', 'int32[NNP_MAX_DIMS]', None, None, 'n_axes'), _P('noop_with_empty_axes', 'noop_with_empty_axes', 'flag', None, None, None), ))


def reduce(
    x: TensorLike, *, op: Union[str, int] = 'sum', keepdims: bool = True, axes: Sequence[int] = (), noop_with_empty_axes: bool = False,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_REDUCE (90; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Reduces over axes[0..n_axes) (each in [-rank, rank), no repeats) (ONNX ReduceSum, ReduceMean,
    ReduceMax; ABI 1.2 also ReduceMin, ReduceL2, ReduceL1, ReduceSumSquare, ReduceLogSumExp;
    opset 18). n_axes = 0 reduces over every axis, unless noop_with_empty_axes = 1: then y = x
    (ONNX). keepdims = 1 keeps reduced axes as 1, keepdims = 0 drops them (reducing everything
    then gives rank 0). An empty reduction gives 0 (sum, l1, l2, sum_square), NaN (mean), -inf
    (max, log_sum_exp) or +inf (min). Max and min propagate NaN.

    Inputs:
        x: see the op (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape with reduced axes as 1 (keepdims) or dropped (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        op (Union[str, int]): nnp_reduce_op; default SUM; one of sum, mean, max, min, l2, l1, sum_square, log_sum_exp (or nnplug.ReduceOp)
        keepdims (bool): 0 or 1; default 1
        axes (Sequence[int]): default 0; its length sets n_axes
        noop_with_empty_axes (bool): 0 or 1; ONNX: with n_axes = 0, 1 makes the op the identity; default 0; ABI 1.1

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _reduce.run(locals())


_cumsum = _Op('cumsum', OpKind.CUMSUM, _g.nnp_cumsum_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('axis', 'axis', 'int32', None, None, None), _P('exclusive', 'exclusive', 'flag', None, None, None), _P('reverse', 'reverse', 'flag', None, None, None), ))


def cumsum(
    x: TensorLike, *, axis: int = 0, exclusive: bool = False, reverse: bool = False, out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_CUMSUM (91; ABI 1.5): see nnplug_ops.h and docs/ops.md.

    ONNX CumSum (opset 14), ABI 1.5, with axis as a param (ONNX passes it as a 0-d tensor): y has
    x's shape and dtype. Along axis, for each line x[0..n) (n = x.shape[axis], the other indices
    fixed):
      exclusive = 0, reverse = 0:  y[i] = sum_{j <= i} x[j]
      exclusive = 1, reverse = 0:  y[i] = sum_{j < i}  x[j]    (y[0] = 0)
      exclusive = 0, reverse = 1:  y[i] = sum_{j >= i} x[j]
      exclusive = 1, reverse = 1:  y[i] = sum_{j > i}  x[j]    (y[n-1] = 0)
    Order and precision, on every backend: one running sum per line, adding x[j] in the order of
    j (from j = 0 up, or from j = n-1 down with reverse = 1), in float64 for float32 and float64
    x; each y[i] is that sum rounded once to x's dtype. NaN and Inf carry on to the rest of the
    line (IEEE). n = 0 gives an empty y. The backward is a cumsum too: dx = cumsum(dy) with the
    same axis and exclusive and reverse flipped, so there is no backward op: an autograd bridge
    runs cumsum on dy.

    Inputs:
        x: see the op (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape; in place when it is x (each line's x[i] is read before y[i] is written) (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        axis (int): in [-rank, rank); negative counts from the end (ONNX requires it: 0 is nnplug's default); default 0; ABI 1.5
        exclusive (bool): 0 or 1; 1: y[i] leaves x[i] out (ONNX exclusive); default 0; ABI 1.5
        reverse (bool): 0 or 1; 1: sums run from the end of the axis (ONNX reverse); default 0; ABI 1.5

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _cumsum.run(locals())


_sgd_update = _Op('sgd_update', OpKind.SGD_UPDATE, _g.nnp_sgd_params, False, True,
    (_T('grad', False, 'float', False, False), ),
    (_T('param', False, 'float', False, True), _T('momentum_buffer', True, 'float', False, True), ),
    (_P('lr', 'lr', 'double', None, None, None), _P('momentum', 'momentum', 'double', None, None, None), _P('dampening', 'dampening', 'double', None, None, None), _P('weight_decay', 'weight_decay', 'double', None, None, None), _P('nesterov', 'nesterov', 'flag', None, None, None), ))


def sgd_update(
    grad: TensorLike, param: TensorLike, *, momentum_buffer: Optional[TensorLike] = None, lr: float = 0.01, momentum: float = 0.0,
    dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False, out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_SGD_UPDATE (100; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    SGD (PyTorch torch.optim.SGD; momentum buffer zero-initialised by the caller)
      g = grad + weight_decay * param
      if momentum != 0: buf = momentum * buf + (1 - dampening) * g;
                        g = nesterov ? g + momentum * buf : buf
      param -= lr * g
    With dampening = 0 a zero buffer equals PyTorch's first step.

    All tensors have param's shape.

    Inputs:
        grad: see the op (the call's float dtype)

    Updated in place (read and written; never allocated):
        param: read and written (in place) (the call's float dtype)
        momentum_buffer (optional keyword): read and written; required if momentum != 0 (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        lr (float): finite; default 0.01
        momentum (float): finite; default 0.0
        dampening (float): finite; default 0.0
        weight_decay (float): finite; default 0.0
        nesterov (bool): 0 or 1; requires momentum > 0 and dampening = 0; default 0

    Returns: None (the update is in place).

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _sgd_update.run(locals())


_adam_update = _Op('adam_update', OpKind.ADAM_UPDATE, _g.nnp_adam_params, False, True,
    (_T('grad', False, 'float', False, False), _T('step', True, 'float32', False, False), _T('lr', True, 'float', False, False), ),
    (_T('param', False, 'float', False, True), _T('m', False, 'float', False, True), _T('v', False, 'float', False, True), ),
    (_P('lr', 'lr', 'double', None, None, None), _P('beta1', 'beta1', 'double', None, None, None), _P('beta2', 'beta2', 'double', None, None, None), _P('epsilon', 'epsilon', 'double', None, None, None), _P('weight_decay', 'weight_decay', 'double', None, None, None), _P('step', 'step', 'int64', None, None, None), _P('adamw', 'adamw', 'flag', None, None, None), ))


def adam_update(
    grad: TensorLike, param: TensorLike, m: TensorLike, v: TensorLike, *, lr: Union[float, TensorLike] = 0.001, beta1: float = 0.9,
    beta2: float = 0.999, epsilon: float = 1e-08, weight_decay: float = 0.0, step: Union[int, TensorLike] = 1, adamw: bool = False,
    out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_ADAM_UPDATE (101; ABI 1.0): see nnplug_ops.h and docs/ops.md.

    Adam / AdamW (Kingma & Ba 2015; AdamW: Loshchilov & Hutter 2019; PyTorch's formulas)
      adamw = 0: g = grad + weight_decay * param;   adamw = 1: param *= 1 - lr * weight_decay
      m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
      param -= lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + epsilon)
    step is the 1-based count of this update.

    grad, param, m and v have param's shape; m and v start at zero.
    Per-step values on the device (ABI 1.4; PyTorch's "capturable" Adam): the optional inputs
    step and lr hold 1 element each (shape [] or [1]) on the call's device and are read there
    when the op runs, in stream order: an op queued before may update them (binary ADD step +=
    one, in place), so a replayed sequence of calls needs no new params. Given, step's value
    replaces params->step in the bias corrections (params->step is then not read), and lr's
    value replaces params->lr (in the update and in AdamW's decay). step is float32 whatever the
    call's dtype: it counts whole steps exactly up to 2^24. Its value must be a whole number >= 1:
    every backend refuses others with NNP_STATUS_INVALID_ARGUMENT and leaves param, m and v
    untouched: the reference and cpu backends when the op runs; sim and cuda, whose kernels read
    the value on the device, at the stream's next synchronize (or graph launch's). lr's value is
    used as it is.

    Inputs:
        grad: see the op (the call's float dtype)
        step (optional keyword, shared with params->step: a tensor is this input, a number sets the field): 1 element ([] or [1]): the 1-based step count; replaces params->step (float32; ABI 1.4)
        lr (optional keyword, shared with params->lr: a tensor is this input, a number sets the field): 1 element ([] or [1]): the learning rate; replaces params->lr (the call's float dtype; ABI 1.4)

    Updated in place (read and written; never allocated):
        param: read and written (in place) (the call's float dtype)
        m: read and written (in place) (the call's float dtype)
        v: read and written (in place) (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        lr (float): finite; default 0.001; a tensor instead is the input lr (the field keeps its default)
        beta1 (float): in [0,1); default 0.9
        beta2 (float): in [0,1); default 0.999
        epsilon (float): >= 0, finite; default 1e-08
        weight_decay (float): finite; default 0.0
        step (int): >= 1; default 1; a tensor instead is the input step (the field keeps its default)
        adamw (bool): 0 or 1; 0 Adam (L2 in the gradient), 1 AdamW (decoupled decay); default 0

    Returns: None (the update is in place).

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _adam_update.run(locals())


_clip = _Op('clip', OpKind.CLIP, _g.nnp_clip_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('min', 'min', 'double', None, 'has_min', None), _P('max', 'max', 'double', None, 'has_max', None), ))


def clip(
    x: TensorLike, *, min: Optional[float] = None, max: Optional[float] = None, out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_CLIP (110; ABI 1.1): see nnplug_ops.h and docs/ops.md.

    y = min(max(x, min), max) elementwise (ONNX Clip, opset 13). A bound applies only when its
    has_* flag is 1. When both apply and min > max, every element becomes max (ONNX). NaN in x
    stays NaN. ONNX passes the bounds as optional 0-d input tensors; nnplug takes them as params
    (the same results, no device scalars to read).

    Inputs:
        x: see the op (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        min (Optional[float]): lower bound (not NaN) when has_min = 1; default 0.0; ABI 1.1; None leaves has_min = 0
        max (Optional[float]): upper bound (not NaN) when has_max = 1; default 0.0; ABI 1.1; None leaves has_max = 0

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _clip.run(locals())


_unary_forward = _Op('unary_forward', OpKind.UNARY_FORWARD, _g.nnp_unary_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('op', 'op', 'enum', _g.UnaryOp, None, None), ))


def unary_forward(
    x: TensorLike, *, op: Union[str, int] = 'exp', out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_UNARY_FORWARD (111; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    y = f(x) elementwise for f = op (nnp_unary_op: ONNX Exp, Log, Sqrt, Abs, Neg, Reciprocal,
    Floor, Ceil, Sin, Cos, Erf). The backward is dx = f'(x) * dy, for the differentiable ops.

    Inputs:
        x: see the op (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        op (Union[str, int]): nnp_unary_op; default EXP; ABI 1.2; one of exp, log, sqrt, abs, neg, reciprocal, floor, ceil, sin, cos, erf (or nnplug.UnaryOp)

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _unary_forward.run(locals())


_unary_backward = _Op('unary_backward', OpKind.UNARY_BACKWARD, _g.nnp_unary_params, False, True,
    (_T('x', False, 'float', False, False), _T('dy', False, 'float', False, False), ),
    (_T('dx', False, 'float', False, False), ),
    (_P('op', 'op', 'enum', _g.UnaryOp, None, None), ))


def unary_backward(
    x: TensorLike, dy: TensorLike, *, op: Union[str, int] = 'exp', out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_UNARY_BACKWARD (112; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    The formulas and params (nnp_unary_params): see nnplug.unary_forward.

    dx = f'(x) * dy for op EXP, LOG, SQRT, ABS, NEG, RECIPROCAL, SIN, COS, ERF (nnp_unary_op gives
    each f'); FLOOR and CEIL, piecewise constant, are refused (INVALID_ARGUMENT).

    Inputs:
        x: see the op (the call's float dtype)
        dy: x's shape (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        dx: x's shape (the call's float dtype)

    Params (keyword-only; the C struct's fields): op, as in nnplug.unary_forward.

    Returns: dx.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _unary_backward.run(locals())


_where = _Op('where', OpKind.WHERE, None, True, True,
    (_T('condition', False, 'uint8', False, False), _T('x', False, 'float', False, False), _T('y', False, 'float', False, False), ),
    (_T('output', False, 'float', False, False), ),
    ())


def where(
    condition: TensorLike, x: TensorLike, y: TensorLike, *, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_WHERE (114; ABI 1.2): see nnplug_ops.h and docs/ops.md.

    output = condition ? x : y elementwise (ONNX Where, opset 16), with numpy (multidirectional)
    broadcasting of all three inputs. condition is uint8: 0 is false, any other value true. params
    may be NULL.

    Inputs:
        condition: broadcasts with x and y (uint8)
        x: taken where condition != 0 (the call's float dtype)
        y: taken where condition == 0 (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        output: the broadcast shape of condition, x and y; may alias x or y when it has that operand's shape (the call's float dtype)

    Returns: output.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _where.run(locals())


_all_reduce = _Op('all_reduce', OpKind.ALL_REDUCE, _g.nnp_all_reduce_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('comm', 'comm', 'comm', None, None, None), _P('op', 'op', 'enum', _g.ReduceOp, None, None), ))


def all_reduce(
    x: TensorLike, *, comm: Communicator, op: Union[str, int] = 'sum', out: OutLike = None, stream: StreamLike = None,
    device: DeviceLike = None,
) -> Any:
    """NNP_OP_ALL_REDUCE (150; ABI 1.3): see nnplug_ops.h and docs/ops.md.

    All-reduce across the ranks of a communicator (MPI_Allreduce, ncclAllReduce), ABI 1.3:
      y = op(x_0, x_1, ..., x_{size-1}) elementwise over the ranks' x, on every rank.
      SUM adds, MEAN adds then divides by size (NCCL's ncclAvg), MAX and MIN take the largest and
      smallest (NaN handling is the transport's). The order of the additions is the transport's
      (ranks' results agree bitwise within one transport and size; they may differ from a
      single-process sum in the last bits). comm, dtype and shape must be the same on every rank.

    Inputs:
        x: any shape; the same on every rank (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape; in place when it is x (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        comm (Communicator): required: a live communicator; the communicator; bound to the stream's device; ABI 1.3
        op (Union[str, int]): SUM, MEAN, MAX or MIN; default SUM; ABI 1.3; one of sum, mean, max, min, l2, l1, sum_square, log_sum_exp (or nnplug.ReduceOp)

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _all_reduce.run(locals())


_broadcast = _Op('broadcast', OpKind.BROADCAST, _g.nnp_broadcast_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('comm', 'comm', 'comm', None, None, None), _P('root', 'root', 'int32', None, None, None), ))


def broadcast(
    x: TensorLike, *, comm: Communicator, root: int = 0, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_BROADCAST (151; ABI 1.3): see nnplug_ops.h and docs/ops.md.

    Broadcast from one rank (MPI_Bcast, ncclBroadcast), ABI 1.3: y = x of rank `root`, on every
    rank (x of the other ranks is not read; root's y = its x). comm, root, dtype and shape must be
    the same on every rank.

    Inputs:
        x: any shape; read on the root only (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: x's shape; in place when it is x (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        comm (Communicator): required: a live communicator; the communicator; bound to the stream's device; ABI 1.3
        root (int): the rank whose x is sent, in [0, size); default 0; ABI 1.3

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _broadcast.run(locals())


_all_gather = _Op('all_gather', OpKind.ALL_GATHER, _g.nnp_all_gather_params, False, True,
    (_T('x', False, 'float', False, False), ),
    (_T('y', False, 'float', False, False), ),
    (_P('comm', 'comm', 'comm', None, None, None), ))


def all_gather(
    x: TensorLike, *, comm: Communicator, out: OutLike = None, stream: StreamLike = None, device: DeviceLike = None,
) -> Any:
    """NNP_OP_ALL_GATHER (152; ABI 1.3): see nnplug_ops.h and docs/ops.md.

    All-gather (MPI_Allgather, ncclAllGather), ABI 1.3: y = the ranks' x concatenated along axis 0
    in rank order, on every rank: y[r * n + i, ...] = x_r[i, ...] for x of shape [n, ...]. comm,
    dtype and x's shape must be the same on every rank.

    Inputs:
        x: [n, d1..dk], rank >= 1; the same shape on every rank (the call's float dtype)

    Outputs (returned; storage may be passed with out=, in this order):
        y: [size * n, d1..dk] (the call's float dtype)

    Params (keyword-only; the C struct's fields):
        comm (Communicator): required: a live communicator; the communicator; bound to the stream's device; ABI 1.3

    Returns: y.

    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.
    """
    return _all_gather.run(locals())

