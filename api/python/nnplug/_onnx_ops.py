"""nnplug.onnx internals: the mappings from ONNX nodes to nnplug ops (_MAPPINGS, by op type).
docs/onnx.md, "Adding an op mapping"."""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import ops as _ops
from ._abi import Activation, BinaryOp, PoolMode, ReduceOp
from ._ops_generated import AutoPad, UnaryOp
from ._onnx_steps import (_ExpandStep, _HardSigmoidStep, _Info, _OpStep, _PadStep, _Ref,
                          _Refuse, _SplitViewStep, _Step, _ViewStep)


class _Ctx:
    """A node as a mapping sees it: attributes, input and output facts, helpers."""

    def __init__(self, node: Any, attrs: Dict[str, Any], ins: List[Optional[_Info]],
                 outs: List[Optional[_Info]], opset: int):
        self.node, self.attrs, self.ins, self.outs, self.opset = node, attrs, ins, outs, opset
        self.op = node.op_type

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def has(self, i: int) -> bool:
        return i < len(self.node.input) and self.node.input[i] != ""

    def used(self, i: int) -> bool:
        """Whether output i exists (named)."""
        return i < len(self.node.output) and self.node.output[i] != ""

    def info(self, i: int) -> _Info:
        v = self.ins[i]
        assert v is not None
        return v

    def out(self, i: int = 0) -> _Info:
        v = self.outs[i]
        assert v is not None
        return v

    def ref(self, i: int, view: Optional[Tuple[int, ...]] = None,
            dtype: Optional[str] = None) -> _Ref:
        return _Ref(self.node.input[i], view, dtype)

    def opt(self, i: int) -> Optional[_Ref]:
        return self.ref(i) if self.has(i) else None

    def const(self, i: int, what: str) -> np.ndarray:
        v = self.ins[i]
        if v is None or v.const is None:
            raise _Refuse(f"input {i} ({what}) is computed at run time; nnplug.onnx needs it "
                          "constant when the model is planned")
        return v.const

    def float_dtype(self, i: int = 0) -> str:
        dt = self.info(i).dtype
        if dt.kind != "f":
            raise _Refuse(f"input {i} is {dt.name}: nnplug runs this op on float tensors")
        return dt.name

    def op_step(self, fn: Callable[..., Any], args: Sequence[Union[_Ref, List[_Ref]]],
                n_out: int = 1, **kw: Any) -> _OpStep:
        names = [self.node.output[i] for i in range(n_out)]
        return _OpStep(fn, args, names, [self.out(i).shape for i in range(n_out)],
                       [self.out(i).dtype.name for i in range(n_out)], **kw)


def _ints(v: Any) -> List[int]:
    return [] if v is None else [int(x) for x in np.asarray(v).reshape(-1)]


def _auto_pad(ctx: _Ctx) -> AutoPad:
    name = str(ctx.attr("auto_pad", "NOTSET"))
    try:
        return AutoPad[name]
    except KeyError:
        raise _Refuse(f"auto_pad {name!r} is not an ONNX value") from None


def _map_conv(ctx: _Ctx) -> _Step:
    ctx.float_dtype()
    kw: Dict[str, Any] = dict(group=int(ctx.attr("group", 1)), auto_pad=_auto_pad(ctx),
              kernel_shape=_ints(ctx.attr("kernel_shape")), strides=_ints(ctx.attr("strides")),
              pads=_ints(ctx.attr("pads")), dilations=_ints(ctx.attr("dilations")))
    if ctx.op == "ConvTranspose":
        return ctx.op_step(_ops.conv_transpose_forward, [ctx.ref(0), ctx.ref(1)],
                           tensors={"b": ctx.opt(2)},
                           output_padding=_ints(ctx.attr("output_padding")),
                           output_shape=_ints(ctx.attr("output_shape")), **kw)
    return ctx.op_step(_ops.conv_forward, [ctx.ref(0), ctx.ref(1)], tensors={"b": ctx.opt(2)},
                       **kw)


def _map_pool(ctx: _Ctx) -> _Step:
    ctx.float_dtype()
    mode = PoolMode.MAX if "Max" in ctx.op else PoolMode.AVERAGE
    if ctx.op.startswith("Global"):
        return ctx.op_step(_ops.pool_forward, [ctx.ref(0)], mode=mode, global_=True)
    kw: Dict[str, Any] = dict(
        mode=mode, auto_pad=_auto_pad(ctx), ceil_mode=bool(ctx.attr("ceil_mode", 0)),
        kernel_shape=_ints(ctx.attr("kernel_shape")), strides=_ints(ctx.attr("strides")),
        pads=_ints(ctx.attr("pads")), dilations=_ints(ctx.attr("dilations")))
    if mode == PoolMode.AVERAGE:
        kw["count_include_pad"] = bool(ctx.attr("count_include_pad", 0))
        return ctx.op_step(_ops.pool_forward, [ctx.ref(0)], **kw)
    kw["storage_order"] = bool(ctx.attr("storage_order", 0))
    if ctx.used(1):
        return ctx.op_step(_ops.pool_forward, [ctx.ref(0)], 2, return_indices=True, **kw)
    return ctx.op_step(_ops.pool_forward, [ctx.ref(0)], **kw)


def _map_gemm(ctx: _Ctx) -> _Step:
    ctx.float_dtype()
    return ctx.op_step(_ops.gemm, [ctx.ref(0), ctx.ref(1)], tensors={"C": ctx.opt(2)},
                       trans_a=bool(ctx.attr("transA", 0)), trans_b=bool(ctx.attr("transB", 0)),
                       alpha=float(ctx.attr("alpha", 1.0)), beta=float(ctx.attr("beta", 1.0)))


def _map_matmul(ctx: _Ctx) -> _Step:
    ctx.float_dtype()
    return ctx.op_step(_ops.matmul, [ctx.ref(0), ctx.ref(1)])


_ACTIVATIONS = {"Relu": (Activation.RELU, None), "Sigmoid": (Activation.SIGMOID, None),
                "Tanh": (Activation.TANH, None), "LeakyRelu": (Activation.LEAKY_RELU, 0.01),
                "Elu": (Activation.ELU, 1.0), "Gelu": (Activation.GELU_ERF, None)}


def _map_activation(ctx: _Ctx) -> _Step:
    ctx.float_dtype()
    function, alpha = _ACTIVATIONS[ctx.op]
    if ctx.op == "Gelu":
        approx = str(ctx.attr("approximate", "none"))
        if approx not in ("none", "tanh"):
            raise _Refuse(f"approximate={approx!r} is not an ONNX value")
        function = Activation.GELU_TANH if approx == "tanh" else Activation.GELU_ERF
    kw: Dict[str, Any] = {} if alpha is None else {"alpha": float(ctx.attr("alpha", alpha))}
    return ctx.op_step(_ops.activation_forward, [ctx.ref(0)], function=function, **kw)


_UNARY = {"Exp": UnaryOp.EXP, "Log": UnaryOp.LOG, "Sqrt": UnaryOp.SQRT, "Abs": UnaryOp.ABS,
          "Neg": UnaryOp.NEG, "Reciprocal": UnaryOp.RECIPROCAL, "Floor": UnaryOp.FLOOR,
          "Ceil": UnaryOp.CEIL, "Sin": UnaryOp.SIN, "Cos": UnaryOp.COS, "Erf": UnaryOp.ERF}


def _map_unary(ctx: _Ctx) -> _Step:
    ctx.float_dtype()
    return ctx.op_step(_ops.unary_forward, [ctx.ref(0)], op=_UNARY[ctx.op])


_BINARY = {"Add": BinaryOp.ADD, "Sub": BinaryOp.SUB, "Mul": BinaryOp.MUL, "Div": BinaryOp.DIV,
           "Pow": BinaryOp.POW}


def _map_binary(ctx: _Ctx) -> _Step:
    dt = ctx.float_dtype(0)
    b = ctx.ref(1)
    if ctx.op == "Pow" and ctx.info(1).dtype != ctx.info(0).dtype:
        if ctx.info(1).const is None:  # ONNX allows an integer exponent tensor
            raise _Refuse(f"the exponent is a {ctx.info(1).dtype.name} tensor computed at run "
                          f"time; nnplug's pow takes one float dtype ({dt})")
        b = ctx.ref(1, dtype=dt)
    return ctx.op_step(_ops.binary, [ctx.ref(0), b], op=_BINARY[ctx.op])


def _map_sum(ctx: _Ctx) -> _Step:
    n = len([i for i in ctx.node.input if i])
    if n == 1:
        return _ViewStep(ctx.node.input[0], ctx.node.output[0], None)
    if n != 2:
        raise _Refuse(f"Sum of {n} inputs (nnplug.onnx maps one or two: binary add)")
    ctx.float_dtype()
    return ctx.op_step(_ops.binary, [ctx.ref(0), ctx.ref(1)], op=BinaryOp.ADD)


def _map_softmax(ctx: _Ctx) -> _Step:
    ctx.float_dtype()
    return ctx.op_step(_ops.softmax_forward, [ctx.ref(0)], axis=int(ctx.attr("axis", -1)),
                       log=ctx.op == "LogSoftmax")


def _map_batch_norm(ctx: _Ctx) -> _Step:
    dt = ctx.float_dtype()
    if int(ctx.attr("training_mode", 0)) or any(ctx.used(i) for i in (1, 2)):
        raise _Refuse("training mode (running statistics as outputs); nnplug.onnx runs "
                      "inference")
    shape = ctx.info(0).shape
    view = None
    if len(shape) not in (2, 4):  # nnplug's batch norm takes [N, C] or [N, C, H, W]
        if len(shape) < 2:
            raise _Refuse(f"input of rank {len(shape)}; ONNX needs [N, C, ...]")
        view = (shape[0], shape[1], int(np.prod(shape[2:], dtype=np.int64)), 1)
    # scale, B, mean and var: float32 in a float16/bfloat16 call (the op table's accumulation
    # rule, as cuDNN's; ONNX lets their types differ from X's), converted when uploaded
    params = [ctx.ref(i) for i in range(1, 5)]
    if dt in ("float16", "bfloat16"):
        names = ("scale", "B", "input_mean", "input_var")
        for i, name in enumerate(names, start=1):
            if ctx.info(i).dtype.name != "float32":
                ctx.const(i, f"{name}, converted to float32 for a {dt} batch norm")
        params = [ctx.ref(i, dtype="float32") for i in range(1, 5)]
    return _OpStep(_ops.batch_norm_forward_inference, [ctx.ref(0, view)] + params,
                   [ctx.node.output[0]], [view or shape], [ctx.out().dtype.name],
                   out_views=[shape if view else None],
                   epsilon=float(ctx.attr("epsilon", 1e-5)))


def _map_layer_norm(ctx: _Ctx) -> _Step:
    dt = ctx.float_dtype()
    n_out = 3 if ctx.used(2) else 2 if ctx.used(1) else 1
    if n_out == 3 and not ctx.used(1):  # outputs come back in order: mean is computed too
        raise _Refuse("InvStdDev without Mean (nnplug.onnx maps leading outputs only)")
    # Mean and InvStdDev: float32 in a float16/bfloat16 call, else X's dtype (the op table's
    # accumulation rule): ONNX's default stash_type = 1 (float), or X's own dtype.
    stash = int(ctx.attr("stash_type", 1))
    if n_out > 1 and dt in ("float16", "bfloat16") and stash != 1:
        raise _Refuse(f"stash_type {stash} with Mean or InvStdDev used (nnplug keeps the "
                      f"statistics of a {dt} LayerNormalization in float32, stash_type 1)")
    return ctx.op_step(_ops.layer_norm_forward, [ctx.ref(0), ctx.ref(1)], n_out,
                       tensors={"bias": ctx.opt(2)}, axis=int(ctx.attr("axis", -1)),
                       epsilon=float(ctx.attr("epsilon", 1e-5)), return_mean=n_out > 1,
                       return_inv_std=n_out > 2)


def _map_view(ctx: _Ctx) -> _Step:
    if ctx.op in ("Dropout",):
        if ctx.used(1):
            raise _Refuse("the mask output (nnplug.onnx runs inference: Dropout is the "
                          "identity)")
        if ctx.has(2) and bool(np.asarray(ctx.const(2, "training_mode")).reshape(-1)[0]):
            raise _Refuse("training_mode is true (nnplug.onnx runs inference)")
    return _ViewStep(ctx.node.input[0], ctx.node.output[0], ctx.out().shape)


def _map_cast(ctx: _Ctx) -> _Step:
    src, dst = ctx.info(0).dtype, ctx.out().dtype
    if src == dst:
        return _ViewStep(ctx.node.input[0], ctx.node.output[0], None)
    if src.kind != "f" or dst.kind != "f":
        raise _Refuse(f"Cast from {src.name} to {dst.name} of a tensor computed at run time "
                      "(nnplug casts between float dtypes)")
    return ctx.op_step(_ops.cast, [ctx.ref(0)], dtype=dst.name)


def _map_transpose(ctx: _Ctx) -> _Step:
    rank = len(ctx.info(0).shape)
    perm = _ints(ctx.attr("perm")) or list(range(rank))[::-1]
    return ctx.op_step(_ops.transpose, [ctx.ref(0)], perm=perm)


def _map_concat(ctx: _Ctx) -> _Step:
    refs = [ctx.ref(i) for i in range(len(ctx.node.input)) if ctx.has(i)]
    return ctx.op_step(_ops.concat, [refs], axis=int(ctx.attr("axis")))


def _map_split(ctx: _Ctx) -> _Step:
    n = len(ctx.node.output)
    axis = int(ctx.attr("axis", 0))
    shape = ctx.info(0).shape
    if -len(shape) <= axis < len(shape) and all(d == 1 for d in shape[:axis % len(shape)]):
        return _SplitViewStep(ctx.node.input[0], list(ctx.node.output),
                              [ctx.out(i).shape for i in range(n)])
    if not all(ctx.used(i) for i in range(n)):
        raise _Refuse("an unnamed output (nnplug's split writes every part)")
    return _OpStep(_ops.split, [ctx.ref(0)], list(ctx.node.output),
                   [ctx.out(i).shape for i in range(n)],
                   [ctx.out(i).dtype.name for i in range(n)], axis=int(ctx.attr("axis", 0)),
                   out_shape=[ctx.out(i).shape for i in range(n)], pool_parts=True)


def _map_slice(ctx: _Ctx) -> _Step:
    starts = _ints(ctx.const(1, "starts"))
    ends = _ints(ctx.const(2, "ends"))
    axes = _ints(ctx.const(3, "axes")) if ctx.has(3) else None
    steps = _ints(ctx.const(4, "steps")) if ctx.has(4) else None
    return ctx.op_step(_ops.slice, [ctx.ref(0)], starts=starts, ends=ends, axes=axes,
                       steps=steps)


def _map_gather(ctx: _Ctx) -> _Step:
    idx = ctx.info(1)
    ref = ctx.ref(1)
    if idx.dtype != np.int64:
        if idx.const is None:
            raise _Refuse(f"{idx.dtype.name} indices computed at run time (nnplug's gather "
                          "takes int64)")
        ref = ctx.ref(1, dtype="int64")
    return ctx.op_step(_ops.gather, [ctx.ref(0), ref], axis=int(ctx.attr("axis", 0)))


_REDUCE = {"ReduceSum": ReduceOp.SUM, "ReduceMean": ReduceOp.MEAN, "ReduceMax": ReduceOp.MAX,
           "ReduceMin": ReduceOp.MIN, "ReduceL2": ReduceOp.L2, "ReduceL1": ReduceOp.L1,
           "ReduceSumSquare": ReduceOp.SUM_SQUARE, "ReduceLogSumExp": ReduceOp.LOG_SUM_EXP}


def _map_reduce(ctx: _Ctx) -> _Step:
    ctx.float_dtype()
    axes_input = ctx.op == "ReduceSum" or ctx.opset >= 18
    axes = _ints(ctx.const(1, "axes")) if axes_input and ctx.has(1) else \
        _ints(ctx.attr("axes"))
    noop = bool(ctx.attr("noop_with_empty_axes", 0))
    if not axes and noop:
        return _ViewStep(ctx.node.input[0], ctx.node.output[0], None)
    return ctx.op_step(_ops.reduce, [ctx.ref(0)], op=_REDUCE[ctx.op],
                       keepdims=bool(ctx.attr("keepdims", 1)), axes=axes)


def _map_clip(ctx: _Ctx) -> _Step:
    ctx.float_dtype()
    lo = float(ctx.const(1, "min").reshape(-1)[0]) if ctx.has(1) else None
    hi = float(ctx.const(2, "max").reshape(-1)[0]) if ctx.has(2) else None
    return ctx.op_step(_ops.clip, [ctx.ref(0)], min=lo, max=hi)


def _map_where(ctx: _Ctx) -> _Step:
    cond = ctx.info(0)
    if cond.const is None:
        raise _Refuse("a condition computed at run time (bool tensors: nnplug's where takes "
                      "a uint8 condition, and no nnplug op makes one)")
    ctx.float_dtype(1)
    return ctx.op_step(_ops.where, [ctx.ref(0, dtype="uint8"), ctx.ref(1), ctx.ref(2)])


def _map_expand(ctx: _Ctx) -> _Step:
    ctx.const(1, "shape")
    return _ExpandStep(ctx.node.input[0], ctx.node.output[0], ctx.info(0).shape,
                       ctx.out().shape, ctx.info(0).dtype.name)


def _map_hard_sigmoid(ctx: _Ctx) -> _Step:
    dtype = ctx.float_dtype()
    swish = ctx.op == "HardSwish"
    alpha = 1.0 / 6.0 if swish else float(ctx.attr("alpha", 0.2))
    beta = 0.5 if swish else float(ctx.attr("beta", 0.5))
    return _HardSigmoidStep(ctx.node.input[0], ctx.node.output[0], ctx.out().shape, dtype,
                            alpha, beta, swish)


def _map_pad(ctx: _Ctx) -> _Step:
    dtype = ctx.float_dtype()
    mode = str(ctx.attr("mode", "constant"))
    if mode != "constant":
        raise _Refuse(f"mode {mode!r} (nnplug.onnx pads with a constant only)")
    shape = ctx.info(0).shape
    rank = len(shape)
    pads = _ints(ctx.const(1, "pads"))
    axes = [a + rank if a < 0 else a for a in _ints(ctx.const(3, "axes"))] if ctx.has(3) \
        else list(range(rank))
    if len(pads) != 2 * len(axes) or any(not 0 <= a < rank for a in axes):
        raise _Refuse(f"pads {pads} and axes {axes} do not fit an input of rank {rank}")
    begins = [0] * rank
    for a, b in zip(axes, pads):
        begins[a] = b
    value = float(ctx.const(2, "constant_value").reshape(-1)[0]) if ctx.has(2) else 0.0
    return _PadStep(ctx.node.input[0], ctx.node.output[0], shape, ctx.out().shape, dtype,
                    begins, value)


# ONNX op type -> mapping. A mapping turns a node (its _Ctx) into a step or raises _Refuse with
# the reason; docs/onnx.md, "Adding an op mapping".
_MAPPINGS: Dict[str, Callable[[_Ctx], _Step]] = {
    "Conv": _map_conv, "ConvTranspose": _map_conv,
    "MaxPool": _map_pool, "AveragePool": _map_pool, "GlobalAveragePool": _map_pool,
    "GlobalMaxPool": _map_pool,
    "Gemm": _map_gemm, "MatMul": _map_matmul,
    **{op: _map_activation for op in _ACTIVATIONS},
    **{op: _map_unary for op in _UNARY},
    **{op: _map_binary for op in _BINARY},
    "Sum": _map_sum,
    "Softmax": _map_softmax, "LogSoftmax": _map_softmax,
    "BatchNormalization": _map_batch_norm, "LayerNormalization": _map_layer_norm,
    "Reshape": _map_view, "Flatten": _map_view, "Squeeze": _map_view, "Unsqueeze": _map_view,
    "Identity": _map_view, "Dropout": _map_view,
    "Cast": _map_cast, "Transpose": _map_transpose, "Concat": _map_concat, "Split": _map_split,
    "Slice": _map_slice, "Gather": _map_gather,
    **{op: _map_reduce for op in _REDUCE},
    "HardSigmoid": _map_hard_sigmoid, "HardSwish": _map_hard_sigmoid, "Pad": _map_pad,
    "Clip": _map_clip, "Where": _map_where, "Expand": _map_expand,
}
