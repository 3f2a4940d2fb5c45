"""nnplug.torch — a PyTorch autograd bridge: conv2d, linear, layer norm, scaled dot-product
attention, cross-entropy and NLL loss as ``torch.autograd.Function``s whose forward *and*
backward run nnplug ops, plus ``torch.nn`` module twins to swap a layer of a model.

    import torch, nnplug.torch as nt
    model.fc = nt.from_module(model.fc)            # same parameters, nnplug forward/backward
    y = nt.conv2d(x, w, b, stride=2, padding=1)    # as torch.nn.functional.conv2d
    nt.set_device("reference")                     # float64 runs on the reference backend
    torch.autograd.gradcheck(lambda x, w: nt.linear(x, w), (x64, w64))

Semantics: every function takes the arguments of its ``torch.nn.functional`` namesake and gives
its results (PyTorch's conventions: NCHW activations, OIHW filters, a Linear weight
``[out, in]``, attention in ``[B, H, T, D]``); the losses follow ONNX
(SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss), whose formulas are PyTorch's. The ops are
called through ``nnplug.ops.execute`` (docs/ops.md has their formulas).

Tensors: torch tensors (strided layout) on the CPU or on one CUDA device ("On the GPU"
below), all of a call on the same device (else INVALID_ARGUMENT, naming the argument). CPU
tensors pass zero-copy through DLPack on a CPU device (cpu, reference); on a device whose
memory the host cannot address (sim, cuda) they are staged there and back by ``execute`` (numpy
views of the same memory; the call is synchronous). Inputs that are not contiguous are copied
to contiguous memory first. All floating-point tensors of a call share one dtype: float32 runs
on every backend, float64 on reference and sim (the cpu backend answers UNSUPPORTED), float16
and bfloat16 on cuda and sim (bfloat16 CPU tensors cannot be staged to sim: numpy has no
bfloat16); class targets are int64 (``torch.long``).

On the GPU: a call on CUDA tensors of ``cuda:N`` runs on the nnplug device of that memory
(``cuda:N``; a ``device=`` or module default other than "auto" must be that device, else
INVALID_ARGUMENT), forward and backward, with the tensors passed zero-copy through DLPack and
outputs allocated by PyTorch on the same device. It is queued, never waited for: on an nnplug
stream of its own (one per nnplug device, created on first use, kept for the process), ordered
with CUDA events — an event recorded on PyTorch's current stream that the nnplug stream waits
for, then one recorded on the nnplug stream that PyTorch's current stream waits for — and every
tensor the op touches is ``record_stream``-ed on it (PyTorch's caching allocator does not reuse
its memory early). So it composes with PyTorch's streams like any PyTorch op; the cost is two
event record/wait pairs per call. nnplug keeps its own stream (its handles, scratch and graph
capture stay the plugin's; PyTorch's stream is never written by nnplug): docs/abi.md, "Native
streams". Checks raise at once; errors of the queued work surface at the next
``nnplug.torch.synchronize()`` (PyTorch's own synchronisation waits for the results but does
not see nnplug's errors). A class target outside [0, C) gives NaN there instead of
INVALID_ARGUMENT (checking it would wait for the device). ``nnplug.shutdown()`` destroys the
bridge's streams: free the CUDA tensors its calls touched first (when PyTorch's allocator frees
one, it records an event on the streams ``record_stream`` named).

Device: ``device=`` on each function (a name such as "cpu", "reference", "sim:0", or an
``nnplug.Device``), else the module default set with ``set_device`` ("auto" at first: the best
device of the loaded plugins, usually cpu). Modules take ``nnplug_device=`` (``device=`` is
PyTorch's own factory keyword there).

Errors: ``nnplug.Error`` with an ``nnplug.Status``. INVALID_ARGUMENT for what is malformed
(wrong dtypes or shapes, a target class out of range), naming the argument; UNSUPPORTED for
what PyTorch accepts but this bridge or the backend does not (tensors neither on the CPU nor
on a CUDA device, dropout in attention, label smoothing, class-probability targets, float64 on
cpu); errors that the ops themselves report come through with the op's message, prefixed with
the function's name.

Mixed precision: inside ``torch.autocast`` (CUDA or CPU) the functions cast their floating
arguments as CUDA autocast's op lists do: ``conv2d``, ``linear`` and
``scaled_dot_product_attention`` to the region's dtype (float16 or bfloat16), ``layer_norm``,
``cross_entropy`` and ``nll_loss`` to float32; float64 tensors are left as they are. The casts
are differentiable, so float32 parameters get float32 gradients, as with PyTorch's own ops. A
device must run the dtype (cuda runs float16 and bfloat16 GEMMs, convolutions and attention;
cpu and reference answer UNSUPPORTED).

Limitations: double backward is not supported (each backward is ``once_differentiable``: a
gradient taken with ``create_graph=True`` carries no graph through nnplug's backward, and
differentiating one that depends on a differentiable upstream gradient raises). No gradient
flows to an attention mask or to loss class weights (a tensor there that requires grad is
refused). An attention row whose every key is masked gives zeros (nnplug's documented rule),
where PyTorch gives NaN. The module default device is process-wide (not per thread).
"""
from __future__ import annotations

import copy
import math
from typing import Any, List, Optional, Sequence, Tuple, Type, TypeVar, Union

import torch
from torch.autograd.function import once_differentiable

from . import _abi, _torch_cuda
from ._abi import OpKind, ReduceOp, Reduction, Status
from ._core import Device, Error
from ._core import device as _nnp_device
from .ops import execute

__all__ = [
    "DeviceLike", "set_device", "get_device", "synchronize", "conv2d", "linear", "layer_norm",
    "scaled_dot_product_attention", "cross_entropy", "nll_loss", "Conv2d", "Linear",
    "LayerNorm", "from_module", "convert",
]

#: An nnplug device: a name ("auto", "cpu", "reference", "sim:0", ...) or an nnplug.Device.
DeviceLike = Union[str, Device]
IntPair = Union[int, Tuple[int, int], Sequence[int]]

_default_device: DeviceLike = "auto"


# ------------------------------------------------------------------------------ device --
def set_device(device: DeviceLike) -> DeviceLike:
    """Sets the nnplug device that functions and modules use when given none, and returns the
    previous setting (to restore it). The name is checked now: an unknown or unavailable
    device raises nnplug.Error (NOT_FOUND / UNAVAILABLE)."""
    global _default_device
    _nnp_device(device)
    previous, _default_device = _default_device, device
    return previous


def get_device(device: Optional[DeviceLike] = None) -> Device:
    """The nnplug.Device a call with ``device=`` runs on (None: the module default)."""
    return _nnp_device(_default_device if device is None else device)


def synchronize(device: Optional[DeviceLike] = None) -> None:
    """Waits for the work that calls on CUDA tensors queued on the nnplug stream of `device`
    (None: of every nnplug device used so far) and raises the first error of that work as
    nnplug.Error (each error once). Such calls return once their op is queued: their checks
    raise at once, the errors of the queued work here. A no-op for CPU tensors' calls."""
    _torch_cuda.synchronize(None if device is None else _nnp_device(device))


# ------------------------------------------------------------------------------ checks --
def _fail(status: Status, fn: str, message: str) -> Error:
    return Error(status, f"nnplug.torch.{fn}: {message}")


def _tensor(fn: str, name: str, t: Any, dtype: Optional[torch.dtype] = None,
            integer: bool = False, boolean: bool = False, like: Optional[torch.Tensor] = None,
            like_name: str = "input") -> torch.Tensor:
    """t checked as a CPU or CUDA tensor that nnplug can take: of `dtype` when given, else
    int64 (integer), bool (boolean) or any floating dtype; on like's device when given."""
    if not isinstance(t, torch.Tensor):
        raise _fail(Status.INVALID_ARGUMENT, fn,
                    f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type not in ("cpu", "cuda"):
        raise _fail(Status.UNSUPPORTED, fn,
                    f"{name} is on device {t.device}: nnplug.torch takes CPU and CUDA tensors "
                    "(move it with .cpu() or .cuda())")
    if like is not None and t.device != like.device:
        raise _fail(Status.INVALID_ARGUMENT, fn,
                    f"{name} is on device {t.device} but {like_name} is on {like.device}: the "
                    "tensors of a call share one device (the CPU, or one CUDA device)")
    if t.layout != torch.strided:
        raise _fail(Status.UNSUPPORTED, fn, f"{name} has layout {t.layout}: only dense "
                    "(torch.strided) tensors are supported")
    if boolean:
        pass
    elif integer:
        if t.dtype != torch.int64:
            raise _fail(Status.INVALID_ARGUMENT, fn,
                        f"{name} has dtype {t.dtype}: class indices must be torch.int64")
    elif dtype is None:
        if not t.is_floating_point():
            raise _fail(Status.INVALID_ARGUMENT, fn,
                        f"{name} has dtype {t.dtype}: expected a floating-point tensor")
    elif t.dtype != dtype:
        raise _fail(Status.INVALID_ARGUMENT, fn,
                    f"{name} has dtype {t.dtype} but the input has {dtype}: every "
                    "floating-point tensor of a call shares one dtype")
    return t


def _optional(fn: str, name: str, t: Any, x: torch.Tensor) -> Optional[torch.Tensor]:
    """t (None, or a tensor of x's dtype on x's device, x being the input)."""
    return None if t is None else _tensor(fn, name, t, x.dtype, like=x)


def _autocast_dtype(t: Any) -> Optional[torch.dtype]:
    """The dtype of an enabled ``torch.autocast`` region for t's device type (cuda, cpu), or
    None outside one."""
    if not isinstance(t, torch.Tensor) or t.device.type not in ("cuda", "cpu"):
        return None
    kind = t.device.type
    if hasattr(torch, "get_autocast_dtype"):  # PyTorch 2.4 and later
        enabled = torch.is_autocast_enabled(kind)  # type: ignore[call-arg]  # (older stubs)
        return torch.get_autocast_dtype(kind) if enabled else None
    if kind == "cuda":
        return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None
    return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None


def _autocast(lower: bool, *tensors: Any) -> Tuple[Any, ...]:
    """PyTorch's autocast for one call, by its CUDA op lists: inside ``torch.autocast``, the
    floating tensors other than float64 are cast (differentiably: their gradients come back in
    their own dtype) to the region's dtype for the ops autocast runs in lower precision (lower:
    conv2d, linear, scaled_dot_product_attention), and to float32 for those it runs in float32
    (layer_norm, cross_entropy, nll_loss). Outside a region they are returned as they are."""
    dt = _autocast_dtype(tensors[0])
    if dt is None:
        return tensors
    to = dt if lower else torch.float32
    return tuple(t.to(to) if isinstance(t, torch.Tensor) and t.is_floating_point()
                 and t.dtype != torch.float64 else t for t in tensors)


def _device_of(fn: str, device: Optional[DeviceLike], x: torch.Tensor) -> Device:
    """The nnplug device of a call whose first tensor is x: for CPU tensors get_device's; for
    CUDA tensors the nnplug device of their memory (a setting other than "auto" must be it)."""
    if x.device.type == "cuda":
        return _torch_cuda.call_device(fn, _default_device if device is None else device, x)
    return get_device(device)


def _shape_error(fn: str, message: str) -> Error:
    return _fail(Status.INVALID_ARGUMENT, fn, message)


def _params(struct: str, **fields: Any) -> Any:
    """An nnplug params struct (nnplug._abi, field names of nnplug_ops.h) with these fields
    set and the others at the op table's defaults."""
    return getattr(_abi, struct)(**fields)


def _run(fn: str, dev: Device, kind: OpKind, params: Any,
         inputs: Sequence[Optional[torch.Tensor]],
         outputs: Sequence[Optional[torch.Tensor]]) -> None:
    """Runs one op on dev. Outputs are fresh contiguous tensors written in place; inputs must
    be contiguous. CUDA tensors go to _torch_cuda.run (queued, ordered by events); on a CPU
    device the tensors pass through DLPack; elsewhere as numpy views of the same memory, which
    execute() stages to the device and (outputs) back."""
    if any(t is not None and t.device.type == "cuda" for t in inputs):
        return _torch_cuda.run(fn, dev, kind, params, inputs, outputs)

    def arg(t: Optional[torch.Tensor]) -> Any:
        if t is None:
            return None
        t = t.detach()
        if dev.is_cpu and (t.numel() != 0 or t.dtype == torch.bfloat16):
            return t
        # Empty tensors go as numpy arrays too: PyTorch exports them through DLPack with
        # strides that nnplug does not take as compact ([1, 1] for [0, 4]).
        try:
            return t.numpy()
        except TypeError as e:  # bfloat16 has no numpy dtype
            raise _fail(Status.UNSUPPORTED, fn, f"cannot stage {t.dtype} tensors to "
                        f"{dev.name}, whose memory the host cannot address: {e}") from None
    try:
        execute(kind, params, [arg(t) for t in inputs], [arg(t) for t in outputs], device=dev)
    except Error as e:
        raise Error(e.status, f"nnplug.torch.{fn} on {dev.name}: {e.message}") from None


def _pair(fn: str, name: str, v: IntPair) -> Tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    t = tuple(v)
    if len(t) == 1:
        return (int(t[0]), int(t[0]))
    if len(t) != 2 or not all(isinstance(i, int) for i in t):
        raise _fail(Status.INVALID_ARGUMENT, fn, f"{name} must be an int or a pair of ints, "
                    f"got {v!r}")
    return (int(t[0]), int(t[1]))


def _reduction(fn: str, reduction: str, size_average: Optional[bool],
               reduce: Optional[bool]) -> str:
    """PyTorch's reduction string, from the deprecated size_average / reduce when given."""
    if size_average is not None or reduce is not None:
        reduce = True if reduce is None else reduce
        size_average = True if size_average is None else size_average
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in ("mean", "sum", "none"):
        raise _fail(Status.INVALID_ARGUMENT, fn, f"reduction must be 'mean', 'sum' or 'none', "
                    f"got {reduction!r}")
    return reduction


_REDUCTIONS = {"mean": Reduction.MEAN, "sum": Reduction.SUM, "none": Reduction.NONE}


# ----------------------------------------------------------------------------- conv2d --
class _Conv2d(torch.autograd.Function):
    """y = conv2d(x, w) + b by NNP_OP_CONV2D_FORWARD; dx, dw, db by its backward ops."""

    @staticmethod
    def forward(ctx: Any,  # type: ignore[override]  # (the typed form of *args)
                x: torch.Tensor, w: torch.Tensor,
                b: Optional[torch.Tensor], conf: Tuple[int, ...], out_hw: Tuple[int, int],
                dev: Device) -> torch.Tensor:
        x, w = x.contiguous(), w.contiguous()
        b = None if b is None else b.contiguous()
        p = _conv_params(conf)
        y = x.new_empty((x.shape[0], w.shape[0]) + out_hw)
        _run("conv2d", dev, OpKind.CONV2D_FORWARD, p, [x, w, b], [y])
        ctx.save_for_backward(x, w)
        ctx.conf, ctx.dev, ctx.b_shape = conf, dev, None if b is None else b.shape
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dy: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        x, w = ctx.saved_tensors
        dy = dy.contiguous()
        p = _conv_params(ctx.conf)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = torch.empty_like(x)
            _run("conv2d", ctx.dev, OpKind.CONV2D_BACKWARD_DATA, p, [dy, w], [dx])
        if ctx.needs_input_grad[1]:
            dw = torch.empty_like(w)
            _run("conv2d", ctx.dev, OpKind.CONV2D_BACKWARD_FILTER, p, [x, dy], [dw])
        if ctx.b_shape is not None and ctx.needs_input_grad[2]:
            db = x.new_empty(ctx.b_shape)
            _run("conv2d", ctx.dev, OpKind.CONV2D_BACKWARD_BIAS, None, [dy], [db])
        return dx, dw, db, None, None, None


def _conv_params(conf: Tuple[int, ...]) -> Any:
    sh, sw, pt, pb, pl, pr, dh, dw, groups = conf
    return _params("nnp_conv2d_params", stride_h=sh, stride_w=sw, pad_top=pt, pad_bottom=pb,
                   pad_left=pl, pad_right=pr, dilation_h=dh, dilation_w=dw, groups=groups)


def conv2d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           stride: IntPair = 1, padding: Union[str, IntPair] = 0, dilation: IntPair = 1,
           groups: int = 1, *, device: Optional[DeviceLike] = None) -> torch.Tensor:
    """2-D convolution as ``torch.nn.functional.conv2d`` (cross-correlation), forward and
    backward on nnplug (NNP_OP_CONV2D_FORWARD / _BACKWARD_DATA / _FILTER / _BIAS).

    input ``[N, C, H, W]`` (or unbatched ``[C, H, W]``), weight ``[K, C/groups, R, S]``,
    bias ``[K]`` or None, one floating dtype. stride, dilation: int or (h, w); padding: int,
    (h, w), or "valid" / "same" (PyTorch's: stride 1, the odd padding at the end). Returns
    ``[N, K, P, Q]`` with ``P = (H + 2*pad_h - dilation_h*(R-1) - 1) // stride_h + 1`` (Q
    likewise). Zero padding only (the Conv2d module pads other modes with torch first).
    Gradients for input, weight and bias; no double backward."""
    fn = "conv2d"
    input, weight, bias = _autocast(True, input, weight, bias)
    x = _tensor(fn, "input", input)
    w = _tensor(fn, "weight", weight, x.dtype, like=x)
    b = _optional(fn, "bias", bias, x)
    if x.dim() not in (3, 4):
        raise _shape_error(fn, f"input must be [N, C, H, W] or [C, H, W], got shape "
                           f"{list(x.shape)}")
    if w.dim() != 4:
        raise _shape_error(fn, f"weight must be [out_channels, in_channels/groups, kH, kW], "
                           f"got shape {list(w.shape)}")
    if b is not None and (b.dim() != 1 or b.shape[0] != w.shape[0]):
        raise _shape_error(fn, f"bias must be [{w.shape[0]}] (out_channels), got shape "
                           f"{list(b.shape)}")
    if not isinstance(groups, int) or groups < 1:
        raise _shape_error(fn, f"groups must be an int >= 1, got {groups!r}")
    unbatched = x.dim() == 3
    if unbatched:
        x = x.unsqueeze(0)
    sh, sw = _pair(fn, "stride", stride)
    dh, dw = _pair(fn, "dilation", dilation)
    R, S = w.shape[2], w.shape[3]
    if isinstance(padding, str):
        if padding == "valid":
            pads = (0, 0, 0, 0)
        elif padding == "same":
            if (sh, sw) != (1, 1):
                raise _shape_error(fn, "padding='same' needs stride 1 (as PyTorch)")
            th, tw = dh * (R - 1), dw * (S - 1)
            pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
        else:
            raise _shape_error(fn, f"padding must be an int, a pair, 'valid' or 'same', got "
                               f"{padding!r}")
    else:
        ph, pw = _pair(fn, "padding", padding)
        pads = (ph, ph, pw, pw)
    if min(sh, sw, dh, dw) < 1 or min(pads) < 0:
        raise _shape_error(fn, f"stride ({sh}, {sw}) and dilation ({dh}, {dw}) must be >= 1 "
                           f"and padding {pads} >= 0")
    H, W = x.shape[2], x.shape[3]
    P = (H + pads[0] + pads[1] - dh * (R - 1) - 1) // sh + 1
    Q = (W + pads[2] + pads[3] - dw * (S - 1) - 1) // sw + 1
    if P < 1 or Q < 1:
        raise _shape_error(fn, f"output size {P} x {Q} is below 1: input {H} x {W}, padding "
                           f"{pads}, kernel {R} x {S}, dilation ({dh}, {dw}), stride ({sh}, {sw})")
    conf = (sh, sw, pads[0], pads[1], pads[2], pads[3], dh, dw, groups)
    y = _Conv2d.apply(x, w, b, conf, (P, Q), _device_of(fn, device, x))
    return y.squeeze(0) if unbatched else y


# ----------------------------------------------------------------------------- linear --
class _Linear(torch.autograd.Function):
    """Y = X W^T + b by one NNP_OP_GEMM (trans_b, C = b); dX, dW by GEMMs, db by REDUCE."""

    @staticmethod
    def forward(ctx: Any,  # type: ignore[override]  # (the typed form of *args)
                x: torch.Tensor, w: torch.Tensor,
                b: Optional[torch.Tensor], dev: Device) -> torch.Tensor:
        x2 = x.reshape(math.prod(x.shape[:-1]), x.shape[-1]).contiguous()
        w = w.contiguous()
        b = None if b is None else b.contiguous()
        y = x.new_empty((x2.shape[0], w.shape[0]))
        p = _params("nnp_gemm_params", trans_a=0, trans_b=1, alpha=1.0,
                    beta=0.0 if b is None else 1.0)
        _run("linear", dev, OpKind.GEMM, p, [x2, w, b], [y])
        ctx.save_for_backward(x2, w)
        ctx.x_shape, ctx.dev, ctx.has_bias = x.shape, dev, b is not None
        return y.reshape(tuple(x.shape[:-1]) + (w.shape[0],))

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dy: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        x2, w = ctx.saved_tensors
        dy2 = dy.reshape(x2.shape[0], w.shape[0]).contiguous()
        dx = dw = db = None
        if ctx.needs_input_grad[0]:  # dX = dY W
            dx2 = torch.empty_like(x2)
            _run("linear", ctx.dev, OpKind.GEMM, _params("nnp_gemm_params"), [dy2, w], [dx2])
            dx = dx2.reshape(ctx.x_shape)
        if ctx.needs_input_grad[1]:  # dW = dY^T X
            dw = torch.empty_like(w)
            _run("linear", ctx.dev, OpKind.GEMM, _params("nnp_gemm_params", trans_a=1),
                 [dy2, x2], [dw])
        if ctx.has_bias and ctx.needs_input_grad[2]:  # db = sum over rows of dY
            db = dy2.new_empty((w.shape[0],))
            p = _params("nnp_reduce_params", op=int(ReduceOp.SUM), keepdims=0, n_axes=1,
                        axes=[0])
            _run("linear", ctx.dev, OpKind.REDUCE, p, [dy2], [db])
        return dx, dw, db, None


def linear(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           *, device: Optional[DeviceLike] = None) -> torch.Tensor:
    """``y = input @ weight.T + bias`` as ``torch.nn.functional.linear``, forward and backward
    on nnplug (NNP_OP_GEMM; the bias gradient by NNP_OP_REDUCE).

    input ``[..., in_features]`` (any number of leading dimensions, 1-D included), weight
    ``[out_features, in_features]`` (PyTorch's layout), bias ``[out_features]`` or None, one
    floating dtype. Returns ``[..., out_features]``. Gradients for all three; no double
    backward."""
    fn = "linear"
    input, weight, bias = _autocast(True, input, weight, bias)
    x = _tensor(fn, "input", input)
    w = _tensor(fn, "weight", weight, x.dtype, like=x)
    b = _optional(fn, "bias", bias, x)
    if w.dim() != 2:
        raise _shape_error(fn, f"weight must be 2-D [out_features, in_features], got shape "
                           f"{list(w.shape)}")
    if x.dim() == 0 or x.shape[-1] != w.shape[1]:
        raise _shape_error(fn, f"input's last dimension must be in_features = {w.shape[1]} "
                           f"(weight {list(w.shape)}), got input shape {list(x.shape)}")
    if b is not None and (b.dim() != 1 or b.shape[0] != w.shape[0]):
        raise _shape_error(fn, f"bias must be [{w.shape[0]}] (out_features), got shape "
                           f"{list(b.shape)}")
    return _Linear.apply(x, w, b, _device_of(fn, device, x))


def _accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of a statistic under the op table's accumulation rule (attention's
    softmax_lse, ABI 1.9; the normalisations' statistics, ABI 1.10): float32 in a float16 or
    bfloat16 call, else the call's dtype."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


# ------------------------------------------------------------------------- layer norm --
class _LayerNorm(torch.autograd.Function):
    """NNP_OP_LAYER_NORM_FORWARD (y, mean, inv_std) and NNP_OP_LAYER_NORM_BACKWARD."""

    @staticmethod
    def forward(ctx: Any,  # type: ignore[override]  # (the typed form of *args)
                x: torch.Tensor, scale: Optional[torch.Tensor],
                bias: Optional[torch.Tensor], axis: int, eps: float,
                dev: Device) -> torch.Tensor:
        x = x.contiguous()
        norm_shape = tuple(x.shape[axis:])
        s = x.new_ones(norm_shape) if scale is None else scale.contiguous()
        b = None if bias is None else bias.contiguous()
        stats = tuple(x.shape[:axis]) + (1,) * len(norm_shape)
        acc = _accumulation_dtype(x.dtype)
        y, mean, inv_std = torch.empty_like(x), x.new_empty(stats, dtype=acc), \
            x.new_empty(stats, dtype=acc)
        p = _params("nnp_layer_norm_params", axis=axis, epsilon=eps)
        _run("layer_norm", dev, OpKind.LAYER_NORM_FORWARD, p, [x, s, b], [y, mean, inv_std])
        ctx.save_for_backward(x, s, mean, inv_std)
        ctx.axis, ctx.eps, ctx.dev = axis, eps, dev
        ctx.has_scale, ctx.has_bias = scale is not None, bias is not None
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dy: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        x, s, mean, inv_std = ctx.saved_tensors
        dx, dscale = torch.empty_like(x), torch.empty_like(s)  # both outputs are required
        want_db = ctx.has_bias and ctx.needs_input_grad[2]
        dbias = torch.empty_like(s) if want_db else None
        p = _params("nnp_layer_norm_params", axis=ctx.axis, epsilon=ctx.eps)
        _run("layer_norm", ctx.dev, OpKind.LAYER_NORM_BACKWARD, p,
             [x, dy.contiguous(), s, mean, inv_std], [dx, dscale, dbias])
        return (dx if ctx.needs_input_grad[0] else None,
                dscale if ctx.has_scale and ctx.needs_input_grad[1] else None,
                dbias, None, None, None)


def layer_norm(input: torch.Tensor, normalized_shape: Union[int, Sequence[int]],
               weight: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
               eps: float = 1e-5, *, device: Optional[DeviceLike] = None) -> torch.Tensor:
    """Layer normalisation as ``torch.nn.functional.layer_norm`` (ONNX LayerNormalization
    with axis = -len(normalized_shape)), forward and backward on nnplug
    (NNP_OP_LAYER_NORM_FORWARD / _BACKWARD).

    input ``[*, *normalized_shape]``; weight and bias ``normalized_shape`` or None (a None
    weight is ones), one floating dtype; eps >= 0. ``y = (x - mean) / sqrt(var + eps) * weight
    + bias`` with the biased variance over the trailing dimensions. Returns input's shape.
    Gradients for input, weight and bias; no double backward."""
    fn = "layer_norm"
    input, weight, bias = _autocast(False, input, weight, bias)
    x = _tensor(fn, "input", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or x.dim() < len(shape) or tuple(x.shape[x.dim() - len(shape):]) != shape:
        raise _shape_error(fn, f"input's trailing dimensions must be normalized_shape "
                           f"{list(shape)}, got input shape {list(x.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        t = _optional(fn, name, t, x)
        if t is not None and tuple(t.shape) != shape:
            raise _shape_error(fn, f"{name} must have normalized_shape {list(shape)}, got "
                               f"{list(t.shape)}")
    return _LayerNorm.apply(x, weight, bias, x.dim() - len(shape), float(eps),
                            _device_of(fn, device, x))


# -------------------------------------------------------------------------- attention --
class _Attention(torch.autograd.Function):
    """NNP_OP_ATTENTION_FORWARD (Y, softmax_lse) and NNP_OP_ATTENTION_BACKWARD, rank 4."""

    @staticmethod
    def forward(ctx: Any,  # type: ignore[override]  # (the typed form of *args)
                q: torch.Tensor, k: torch.Tensor,
                v: torch.Tensor, mask: Optional[torch.Tensor], is_causal: bool, scale: float,
                dev: Device) -> torch.Tensor:
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        mask = None if mask is None else mask.contiguous()
        y = q.new_empty(tuple(q.shape[:3]) + (v.shape[3],))
        lse = q.new_empty(tuple(q.shape[:3]), dtype=_accumulation_dtype(q.dtype))
        p = _params("nnp_attention_params", is_causal=int(is_causal), scale=scale)
        _run("scaled_dot_product_attention", dev, OpKind.ATTENTION_FORWARD, p,
             [q, k, v, mask], [y, lse])
        ctx.save_for_backward(q, k, v, mask, y, lse)
        ctx.is_causal, ctx.scale, ctx.dev = is_causal, scale, dev
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dy: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        q, k, v, mask, y, lse = ctx.saved_tensors
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        p = _params("nnp_attention_params", is_causal=int(ctx.is_causal), scale=ctx.scale)
        _run("scaled_dot_product_attention", ctx.dev, OpKind.ATTENTION_BACKWARD, p,
             [q, k, v, mask, y, dy.contiguous(), lse], [dq, dk, dv])
        g = ctx.needs_input_grad
        return (dq if g[0] else None, dk if g[1] else None, dv if g[2] else None,
                None, None, None, None)


def scaled_dot_product_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                 attn_mask: Optional[torch.Tensor] = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: Optional[float] = None, enable_gqa: bool = False, *,
                                 device: Optional[DeviceLike] = None) -> torch.Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` as PyTorch's
    ``torch.nn.functional.scaled_dot_product_attention`` (ONNX Attention), forward and
    backward on nnplug (NNP_OP_ATTENTION_FORWARD / _BACKWARD, rank-4 layout).

    query ``[..., Hq, L, E]``, key ``[..., Hkv, S, E]``, value ``[..., Hkv, S, Ev]``, the same
    leading (batch) dimensions; PyTorch's ``[B, H, T, D]`` is the op's layout as it is, other
    ranks are reshaped to it. ``Hkv`` equals ``Hq``, is 1, or (with ``enable_gqa``, PyTorch's
    grouped-query flag) divides ``Hq``: query head h reads key/value head h // (Hq / Hkv).
    attn_mask: broadcastable to ``[..., Hq, L, S]``; boolean (True = attend) or additive with
    query's dtype; it gets no gradient (one that requires grad is refused). is_causal: keys
    after the query are masked (upper-left aligned, ``tril(ones(L, S))``), on top of attn_mask
    if both are given. scale: None gives ``1 / sqrt(E)``; it must be > 0. dropout_p must be 0
    (UNSUPPORTED otherwise). Returns ``[..., Hq, L, Ev]``. A row whose every key is masked gives
    zeros (PyTorch: NaN). Gradients for query, key and value; no double backward."""
    fn = "scaled_dot_product_attention"
    query, key, value, attn_mask = _autocast(True, query, key, value, attn_mask)
    q = _tensor(fn, "query", query)
    k = _tensor(fn, "key", key, q.dtype, like=q, like_name="query")
    v = _tensor(fn, "value", value, q.dtype, like=q, like_name="query")
    if dropout_p != 0.0:
        raise _fail(Status.UNSUPPORTED, fn, f"dropout_p = {dropout_p}: only 0 is supported "
                    "(apply dropout outside)")
    if scale is not None and not scale > 0:
        raise _fail(Status.UNSUPPORTED if scale == 0 else Status.INVALID_ARGUMENT, fn,
                    f"scale must be > 0 (nnplug reads 0 as 1/sqrt(E)), got {scale}")
    if q.dim() < 2 or k.dim() != q.dim() or v.dim() != q.dim():
        raise _shape_error(fn, f"query, key and value must have one rank >= 2, got shapes "
                           f"{list(q.shape)}, {list(k.shape)}, {list(v.shape)}")
    if k.shape[-1] != q.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise _shape_error(fn, f"key must be [..., S, E] with query's E = {q.shape[-1]} and "
                           f"value [..., S, Ev]; got query {list(q.shape)}, key "
                           f"{list(k.shape)}, value {list(v.shape)}")
    if k.shape[:-3] != q.shape[:-3] or v.shape[:-2] != k.shape[:-2] or (
            q.dim() >= 3 and k.shape[-3] != q.shape[-3] and k.shape[-3] != 1
            and not (enable_gqa and q.shape[-3] % k.shape[-3] == 0)):
        raise _shape_error(fn, f"key and value must have query's batch dimensions and its "
                           f"heads (or 1, or with enable_gqa a divisor of them); got query "
                           f"{list(q.shape)}, key {list(k.shape)}, value {list(v.shape)}")
    mask: Optional[torch.Tensor] = None
    if attn_mask is not None:
        is_bool = isinstance(attn_mask, torch.Tensor) and attn_mask.dtype == torch.bool
        m = _tensor(fn, "attn_mask", attn_mask, None if is_bool else q.dtype, boolean=is_bool,
                    like=q, like_name="query")
        if m.requires_grad and torch.is_grad_enabled():
            raise _fail(Status.UNSUPPORTED, fn, "attn_mask requires grad: no gradient flows "
                        "to the mask in nnplug's attention")
        if m.dim() > q.dim():
            raise _shape_error(fn, f"attn_mask {list(m.shape)} has more dimensions than "
                               f"query {list(q.shape)}")
        if m.dtype == torch.bool:
            m = torch.zeros(m.shape, dtype=q.dtype, device=m.device).masked_fill_(~m, -math.inf)
        mask = m.detach()
    L, E, S = q.shape[-2], q.shape[-1], k.shape[-2]
    lead = tuple(q.shape[:-2])
    if len(lead) <= 2:  # [L, E] or [B, L, E]: leading 1s (the mask aligns right as before)
        ones = (1,) * (2 - len(lead))
        q4, k4, v4 = (t.reshape(ones + tuple(t.shape)) for t in (q, k, v))
    else:  # [b1, .., bn, H, L, E]: one batch dimension
        q4 = q.reshape(-1, q.shape[-3], L, E)
        k4 = k.reshape(-1, k.shape[-3], S, E)
        v4 = v.reshape(-1, v.shape[-3], S, v.shape[-1])
        if mask is not None:
            try:
                mask = mask.expand(lead + (L, S)).reshape(-1, q.shape[-3], L, S)
            except RuntimeError:
                raise _shape_error(fn, f"attn_mask {list(mask.shape)} does not broadcast to "
                                   f"{list(lead + (L, S))}") from None
    y = _Attention.apply(q4, k4, v4, mask, bool(is_causal), 0.0 if scale is None else
                         float(scale), _device_of(fn, device, q))
    return y.reshape(lead + (L, v.shape[-1]))


# ------------------------------------------------------------------------------ losses --
class _Loss(torch.autograd.Function):
    """An ONNX loss op pair (forward, backward) over (input, target, weight)."""

    @staticmethod
    def forward(ctx: Any,  # type: ignore[override]  # (the typed form of *args)
                x: torch.Tensor, target: torch.Tensor,
                weight: Optional[torch.Tensor], kinds: Tuple[OpKind, OpKind, str],
                conf: Tuple[int, int], dev: Device) -> torch.Tensor:
        fwd, _, struct = kinds
        x = x.contiguous()
        target = target.contiguous()
        weight = None if weight is None else weight.contiguous()
        reduction, ignore_index = conf
        shape = tuple(target.shape) if reduction == Reduction.NONE else ()
        loss = x.new_empty(shape)
        p = _params(struct, reduction=reduction, has_ignore_index=1, ignore_index=ignore_index)
        name = "nll_loss" if fwd == OpKind.NLL_LOSS_FORWARD else "cross_entropy"
        _run(name, dev, fwd, p, [x, target, weight], [loss])
        ctx.save_for_backward(x, target, weight)
        ctx.kinds, ctx.conf, ctx.dev, ctx.name = kinds, conf, dev, name
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dloss: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        x, target, weight = ctx.saved_tensors
        _, bwd, struct = ctx.kinds
        reduction, ignore_index = ctx.conf
        dx = torch.empty_like(x)
        p = _params(struct, reduction=reduction, has_ignore_index=1, ignore_index=ignore_index)
        _run(ctx.name, ctx.dev, bwd, p, [x, target, dloss.contiguous(), weight], [dx])
        return dx, None, None, None, None, None


def _loss(fn: str, kinds: Tuple[OpKind, OpKind, str], input: Any, target: Any, weight: Any,
          ignore_index: int, reduction: str, device: Optional[DeviceLike]) -> torch.Tensor:
    input, weight = _autocast(False, input, weight)
    x = _tensor(fn, "input", input)
    if isinstance(target, torch.Tensor) and target.is_floating_point():
        raise _fail(Status.UNSUPPORTED, fn, "target holds class probabilities (a floating "
                    "tensor): only int64 class indices are supported")
    t = _tensor(fn, "target", target, integer=True, like=x)
    w = _optional(fn, "weight", weight, x)
    if x.dim() == 0:
        raise _shape_error(fn, "input must be [N, C, d1..dk] or [C], got a 0-d tensor")
    unbatched = x.dim() == 1
    if unbatched:
        x, t = x.unsqueeze(0), t.unsqueeze(0)
    C = x.shape[1]
    if tuple(t.shape) != (x.shape[0],) + tuple(x.shape[2:]):
        raise _shape_error(fn, f"target must be [N, d1..dk] = "
                           f"{[x.shape[0]] + list(x.shape[2:])} for input {list(x.shape)}, got "
                           f"{list(t.shape)}")
    if w is not None:
        if w.dim() != 1 or w.shape[0] != C:
            raise _shape_error(fn, f"weight must be [{C}] (one per class), got shape "
                               f"{list(w.shape)}")
        if w.requires_grad and torch.is_grad_enabled():
            raise _fail(Status.UNSUPPORTED, fn, "weight requires grad: class weights get no "
                        "gradient (as in PyTorch); pass weight.detach()")
        w = w.detach()
    if t.device.type == "cpu":  # (CUDA tensors: no host synchronisation; NaN there instead)
        bad = (t != ignore_index) & ((t < 0) | (t >= C))
        if bool(bad.any()):
            raise _shape_error(fn, f"target holds class {int(t[bad][0])}, outside [0, {C}) and "
                               f"not ignore_index {ignore_index}")
    red = _REDUCTIONS[reduction]
    loss = _Loss.apply(x, t, w, kinds, (int(red), int(ignore_index)), _device_of(fn, device, x))
    return loss.squeeze(0) if unbatched and red == Reduction.NONE else loss


def cross_entropy(input: torch.Tensor, target: torch.Tensor,
                  weight: Optional[torch.Tensor] = None, size_average: Optional[bool] = None,
                  ignore_index: int = -100, reduce: Optional[bool] = None,
                  reduction: str = "mean", label_smoothing: float = 0.0, *,
                  device: Optional[DeviceLike] = None) -> torch.Tensor:
    """Softmax cross-entropy as ``torch.nn.functional.cross_entropy`` with class-index targets
    (ONNX SoftmaxCrossEntropyLoss), forward and backward on nnplug
    (NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD / _BACKWARD).

    input: unnormalised scores ``[N, C]``, ``[N, C, d1..dk]`` or unbatched ``[C]``; target:
    int64 ``[N]``, ``[N, d1..dk]`` or ``[]``, each in [0, C) or ignore_index (else
    INVALID_ARGUMENT, where PyTorch raises too); weight: ``[C]`` class weights (no gradient) or
    None. ``loss_j = -weight[t_j] * log_softmax(input)[n, t_j, d]``, 0 where t_j ==
    ignore_index; reduction "none" (target's shape), "sum", or "mean" (divided by the sum of
    the weights of the non-ignored targets; all ignored gives NaN, as PyTorch). size_average
    and reduce are PyTorch's deprecated forms of reduction. Class-probability targets and
    label_smoothing != 0 are UNSUPPORTED. Gradient for input only; no double backward."""
    fn = "cross_entropy"
    if label_smoothing != 0.0:
        raise _fail(Status.UNSUPPORTED, fn, f"label_smoothing = {label_smoothing}: only 0 is "
                    "supported")
    reduction = _reduction(fn, reduction, size_average, reduce)
    return _loss(fn, (OpKind.SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD,
                      OpKind.SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD,
                      "nnp_softmax_cross_entropy_loss_params"),
                 input, target, weight, ignore_index, reduction, device)


def nll_loss(input: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor] = None,
             size_average: Optional[bool] = None, ignore_index: int = -100,
             reduce: Optional[bool] = None, reduction: str = "mean", *,
             device: Optional[DeviceLike] = None) -> torch.Tensor:
    """Negative log-likelihood loss as ``torch.nn.functional.nll_loss`` (ONNX
    NegativeLogLikelihoodLoss), forward and backward on nnplug (NNP_OP_NLL_LOSS_FORWARD /
    _BACKWARD).

    input: log-probabilities ``[N, C]``, ``[N, C, d1..dk]`` or unbatched ``[C]``; target,
    weight, ignore_index and reduction as for ``cross_entropy``:
    ``loss_j = -weight[t_j] * input[n, t_j, d]``, the mean divides by the sum of the gathered
    weights. Gradient for input only; no double backward."""
    fn = "nll_loss"
    reduction = _reduction(fn, reduction, size_average, reduce)
    return _loss(fn, (OpKind.NLL_LOSS_FORWARD, OpKind.NLL_LOSS_BACKWARD,
                      "nnp_nll_loss_params"),
                 input, target, weight, ignore_index, reduction, device)


# ----------------------------------------------------------------------------- modules --
class _OnNnplug(torch.nn.Module):
    """The nnplug part of the module wrappers: an ``nnplug_device`` keyword (None: the module
    default of set_device) kept as an attribute and shown in the module's repr."""

    nnplug_device: Optional[DeviceLike]

    def __init__(self, *args: Any, nnplug_device: Optional[DeviceLike] = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.nnplug_device = nnplug_device

    def extra_repr(self) -> str:
        return super().extra_repr() + f", nnplug_device={self.nnplug_device!r}"


class Conv2d(_OnNnplug, torch.nn.Conv2d):
    """``torch.nn.Conv2d`` whose forward runs ``nnplug.torch.conv2d`` (every padding_mode:
    non-zero modes pad with torch first, as torch.nn.Conv2d does). ``nnplug_device``: the
    nnplug device (None: the module default of set_device)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.padding_mode != "zeros":
            input = torch.nn.functional.pad(input, self._reversed_padding_repeated_twice,
                                            mode=self.padding_mode)
            return conv2d(input, self.weight, self.bias, self.stride, 0, self.dilation,
                          self.groups, device=self.nnplug_device)
        return conv2d(input, self.weight, self.bias, self.stride, self.padding,
                      self.dilation, self.groups, device=self.nnplug_device)


class Linear(_OnNnplug, torch.nn.Linear):
    """``torch.nn.Linear`` whose forward runs ``nnplug.torch.linear``. ``nnplug_device``: the
    nnplug device (None: the module default of set_device)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return linear(input, self.weight, self.bias, device=self.nnplug_device)


class LayerNorm(_OnNnplug, torch.nn.LayerNorm):
    """``torch.nn.LayerNorm`` whose forward runs ``nnplug.torch.layer_norm``.
    ``nnplug_device``: the nnplug device (None: the module default of set_device)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return layer_norm(input, self.normalized_shape, self.weight,
                          getattr(self, "bias", None), self.eps, device=self.nnplug_device)


_TWINS: List[Tuple[type, Type[torch.nn.Module]]] = [
    (torch.nn.Conv2d, Conv2d), (torch.nn.Linear, Linear), (torch.nn.LayerNorm, LayerNorm)]
M = TypeVar("M", bound=torch.nn.Module)


def _twin(module: torch.nn.Module) -> Optional[Type[torch.nn.Module]]:
    for base, twin in _TWINS:
        if type(module) in (base, twin):
            return twin
    return None


def from_module(module: torch.nn.Module, device: Optional[DeviceLike] = None) -> torch.nn.Module:
    """The nnplug twin of a ``torch.nn.Conv2d``, ``Linear`` or ``LayerNorm`` (exactly those
    classes, or this module's twins): a ``Conv2d`` / ``Linear`` / ``LayerNorm`` of this module
    holding the *same* Parameter and buffer objects (an optimiser built on the original keeps
    working), its hyperparameters and training mode, with ``nnplug_device = device``. Swap a
    layer with ``model.fc = nnplug.torch.from_module(model.fc)``. Other classes (subclasses
    included, whose forward may differ) raise nnplug.Error(UNSUPPORTED)."""
    twin = _twin(module)
    if twin is None:
        supported = ", ".join(f"torch.nn.{b.__name__}" for b, _ in _TWINS)
        raise Error(Status.UNSUPPORTED, f"nnplug.torch.from_module: no nnplug twin for "
                    f"{type(module).__module__}.{type(module).__qualname__} (supported: "
                    f"{supported})")
    new = twin.__new__(twin)
    # The module's state, with its own dicts and sets (parameters, buffers, hooks), so that
    # later changes to one module do not show in the other; the tensors are shared.
    new.__dict__.update({k: copy.copy(v) if isinstance(v, (dict, set)) else v
                         for k, v in module.__dict__.items()})
    new.__dict__["nnplug_device"] = device
    return new


def convert(module: M, device: Optional[DeviceLike] = None) -> M:
    """Replaces, in place, every submodule of ``module`` that ``from_module`` takes with its
    nnplug twin (recursively), and returns ``module``; a module that is itself such a layer
    is returned converted (a new object)."""
    if _twin(module) is not None:
        return from_module(module, device)  # type: ignore[return-value]
    for name, child in list(module.named_children()):
        setattr(module, name, convert(child, device))
    return module

