"""nnplug.ops — one Python function per op of nnplug_ops.h, over nnp_op_execute.

Every op takes its tensors in the C API's order (nnplug.h's typed wrappers), inputs first, then
outputs; outputs are written in place and returned. Tensors are numpy arrays (host memory, so
any CPU device), nnplug.DeviceArray, or anything with __dlpack__ (PyTorch, CuPy). Optional
tensors are None.

Where it runs: `stream=` (an nnplug.Stream: queued, call stream.synchronize()); else
`device=` (a name or nnplug.Device) on that device's default stream; else the device of a
DeviceArray argument, or the best device whose memory the tensors live in (cpu over reference
for host memory). Without `stream=` the call waits for the op to finish, so numpy results are
ready when it returns.

Failures raise nnplug.Error(status, message): INVALID_ARGUMENT for bad shapes or dtypes,
UNSUPPORTED when the backend does not implement the op or dtype, and so on (nnplug.h).
"""
import ctypes

from . import _abi
from ._abi import (Activation, BinaryOp, OpKind, PoolMode, ReduceOp, Reduction)
from ._core import DeviceArray, Error, as_dltensor, check, device as _device, devices
from ._lib import lib

__all__ = [
    "execute", "supported", "gemm", "conv2d_forward", "conv2d_backward_data",
    "conv2d_backward_filter", "conv2d_backward_bias", "pool2d_forward", "pool2d_backward",
    "activation_forward", "activation_backward", "softmax_forward", "softmax_backward",
    "softmax_cross_entropy_forward", "softmax_cross_entropy_backward",
    "batch_norm_forward_training", "batch_norm_forward_inference", "batch_norm_backward",
    "layer_norm_forward", "layer_norm_backward", "dropout_forward", "dropout_backward",
    "binary", "add", "sub", "mul", "div", "scale", "fill", "copy", "transpose", "cast",
    "reduce", "sgd_update", "adam_update",
]


# -------------------------------------------------------------------------- dispatch --
def _pick_device(held, args):
    for a in args:
        if isinstance(a, DeviceArray):
            return a.device
        if getattr(a, "device_array", None) is not None:  # a DeviceArray.view()
            return a.device_array.device
    dl = next((h.dldevice for h in held if h is not None), None)
    if dl is None:
        return _device("auto")
    try:
        best = _device("auto")
        if best.dldevice == dl:
            return best
    except Error:
        pass
    matching = [d for d in devices() if d.dldevice == dl]
    if not matching:
        raise Error(_abi.Status.NOT_FOUND,
                    f"no device of a loaded plugin uses memory of DLPack device {dl}")
    return max(matching, key=lambda d: d.auto_priority)


def _tensor_array(held):
    n = len(held)
    arr = (ctypes.POINTER(_abi.DLTensor) * max(n, 1))()
    for i, h in enumerate(held):
        arr[i] = ctypes.pointer(h.tensor) if h is not None else None
    return arr


def _prepare(inputs, outputs, stream, device):
    held_in = [None if x is None else as_dltensor(x) for x in inputs]
    held_out = [None if x is None else as_dltensor(x) for x in outputs]
    if stream is not None:
        return held_in, held_out, stream, False
    dev = _device(device) if device is not None else _pick_device(
        held_in + held_out, list(inputs) + list(outputs))
    return held_in, held_out, dev.default_stream(), True


def _stage(dev, inputs, outputs):
    """numpy arguments of an op on a device whose memory the host cannot address (a GPU, the
    sim backend): device copies of them, one per distinct array so that an output that is
    also an input stays aliased, and the (host, device) pairs of outputs to copy back."""
    import numpy as np
    staged = {}

    def put(x):
        if not isinstance(x, np.ndarray):
            return x
        if id(x) not in staged:
            staged[id(x)] = (x, dev.to_device(x))
        return staged[id(x)][1]

    new_in, new_out = [put(x) for x in inputs], [put(x) for x in outputs]
    backs = [staged[id(x)] for x in outputs if isinstance(x, np.ndarray)]
    return new_in, new_out, backs


def execute(kind, params, inputs, outputs, stream=None, device=None):
    """nnp_op_execute: runs op `kind` (nnplug.OpKind) with a params struct (or None) on the
    given input and output tensors. Returns the outputs (a single one unwrapped).
    With device= a device whose memory the host cannot address, numpy arguments are copied to
    the device and numpy outputs back (the call is synchronous then anyway)."""
    backs = []
    call_in, call_out = inputs, outputs
    if stream is None and device is not None:
        device = _device(device)
        if not device.is_cpu:
            call_in, call_out, backs = _stage(device, inputs, outputs)
    held_in, held_out, st, wait = _prepare(call_in, call_out, stream, device)
    check(lib().nnp_op_execute(st.handle, int(kind),
                               ctypes.byref(params) if params is not None else None,
                               len(held_in), _tensor_array(held_in), len(held_out),
                               _tensor_array(held_out)))
    if wait:
        st.synchronize()
    if backs:
        import numpy as np
        for host, dev_array in backs:
            np.copyto(host, dev_array.numpy())
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def supported(kind, params, inputs, outputs, device=None):
    """nnp_op_supported: None if `device` runs the call as described, else the reason
    (UNSUPPORTED). Raises Error for an invalid description."""
    held_in, held_out, st, _ = _prepare(inputs, outputs, None, device)
    if not st.device.is_cpu:  # numpy arrays only describe shapes and dtypes here
        for h in held_in + held_out:
            if h is not None and h.dldevice == (int(_abi.DLDeviceType.kDLCPU), 0):
                h.tensor.device.device_type, h.tensor.device.device_id = st.device.dldevice
    status = lib().nnp_op_supported(st.device.handle, int(kind),
                                    ctypes.byref(params) if params is not None else None,
                                    len(held_in), _tensor_array(held_in), len(held_out),
                                    _tensor_array(held_out))
    if status == _abi.Status.UNSUPPORTED:
        return (lib().nnp_last_error_message() or b"").decode(errors="replace")
    check(status)
    return None


def _enum(cls, value, what):
    if isinstance(value, str):
        try:
            return cls[value.upper()]
        except KeyError:
            names = ", ".join(m.name.lower() for m in cls if m.value)
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"unknown {what} {value!r}; expected one of {names}") from None
    return cls(value)


def _pair(v, what):
    if isinstance(v, int):
        return (v, v)
    v = tuple(v)
    if len(v) != 2:
        raise Error(_abi.Status.INVALID_ARGUMENT, f"{what} must be an int or a pair")
    return v


def _padding4(p):
    """int, (h, w) or (top, bottom, left, right)."""
    if isinstance(p, int):
        return (p, p, p, p)
    p = tuple(p)
    if len(p) == 2:
        return (p[0], p[0], p[1], p[1])
    if len(p) == 4:
        return p
    raise Error(_abi.Status.INVALID_ARGUMENT,
                "padding must be an int, (h, w) or (top, bottom, left, right)")


# ------------------------------------------------------------------------------- GEMM --
def gemm(a, b, y, c=None, *, trans_a=False, trans_b=False, alpha=1.0, beta=1.0, stream=None,
         device=None):
    """y = alpha * op(a) @ op(b) + beta * c  (c optional: [N], [M, N] or [batch, M, N])."""
    p = _abi.nnp_gemm_params(trans_a=int(bool(trans_a)), trans_b=int(bool(trans_b)),
                             alpha=alpha, beta=beta)
    return execute(OpKind.GEMM, p, [a, b, c], [y], stream, device)


# ------------------------------------------------------------------------ convolution --
def conv2d_params(stride=1, padding=0, dilation=1, groups=1):
    """nnp_conv2d_params from PyTorch-style arguments (padding: int, (h, w) or 4 sides)."""
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    pt, pb, pl, pr = _padding4(padding)
    return _abi.nnp_conv2d_params(stride_h=sh, stride_w=sw, pad_top=pt, pad_bottom=pb,
                                  pad_left=pl, pad_right=pr, dilation_h=dh, dilation_w=dw,
                                  groups=groups)


def conv2d_forward(x, w, y, b=None, *, stride=1, padding=0, dilation=1, groups=1, stream=None,
                   device=None):
    """y[N,K,P,Q] = conv(x[N,C,H,W], w[K,C/groups,R,S]) + b[K] (cross-correlation)."""
    p = conv2d_params(stride, padding, dilation, groups)
    return execute(OpKind.CONV2D_FORWARD, p, [x, w, b], [y], stream, device)


def conv2d_backward_data(dy, w, dx, *, stride=1, padding=0, dilation=1, groups=1, stream=None,
                         device=None):
    """dx (x's shape) = gradient of conv2d_forward with respect to x."""
    p = conv2d_params(stride, padding, dilation, groups)
    return execute(OpKind.CONV2D_BACKWARD_DATA, p, [dy, w], [dx], stream, device)


def conv2d_backward_filter(x, dy, dw, *, stride=1, padding=0, dilation=1, groups=1,
                           stream=None, device=None):
    """dw (w's shape) = gradient of conv2d_forward with respect to w."""
    p = conv2d_params(stride, padding, dilation, groups)
    return execute(OpKind.CONV2D_BACKWARD_FILTER, p, [x, dy], [dw], stream, device)


def conv2d_backward_bias(dy, db, *, stream=None, device=None):
    """db[k] = sum over n, p, q of dy[n, k, p, q]."""
    return execute(OpKind.CONV2D_BACKWARD_BIAS, None, [dy], [db], stream, device)


# ---------------------------------------------------------------------------- pooling --
def pool2d_params(mode="max", window=2, stride=None, padding=0, ceil_mode=False,
                  count_include_pad=False, global_pool=False):
    wh, ww = _pair(window, "window")
    sh, sw = _pair(window if stride is None else stride, "stride")
    pt, pb, pl, pr = _padding4(padding)
    return _abi.nnp_pool2d_params(mode=_enum(PoolMode, mode, "pool mode"), window_h=wh,
                                  window_w=ww, stride_h=sh, stride_w=sw, pad_top=pt,
                                  pad_bottom=pb, pad_left=pl, pad_right=pr,
                                  ceil_mode=int(bool(ceil_mode)),
                                  count_include_pad=int(bool(count_include_pad)),
                                  **{"global": int(bool(global_pool))})


def pool2d_forward(x, y, *, mode="max", window=2, stride=None, padding=0, ceil_mode=False,
                   count_include_pad=False, global_pool=False, stream=None, device=None):
    """Max or average pooling; stride defaults to the window."""
    p = pool2d_params(mode, window, stride, padding, ceil_mode, count_include_pad, global_pool)
    return execute(OpKind.POOL2D_FORWARD, p, [x], [y], stream, device)


def pool2d_backward(x, y, dy, dx, *, mode="max", window=2, stride=None, padding=0,
                    ceil_mode=False, count_include_pad=False, global_pool=False, stream=None,
                    device=None):
    """dx (x's shape); y must be the forward's output."""
    p = pool2d_params(mode, window, stride, padding, ceil_mode, count_include_pad, global_pool)
    return execute(OpKind.POOL2D_BACKWARD, p, [x, y, dy], [dx], stream, device)


# ------------------------------------------------------------------------- activation --
def _act(function, alpha):
    return _abi.nnp_activation_params(function=_enum(Activation, function, "activation"),
                                      alpha=alpha)


def activation_forward(x, y, *, function="relu", alpha=0.0, stream=None, device=None):
    """y = f(x): relu, leaky_relu (alpha), sigmoid, tanh, gelu_erf, gelu_tanh, elu (alpha)."""
    return execute(OpKind.ACTIVATION_FORWARD, _act(function, alpha), [x], [y], stream, device)


def activation_backward(x, dy, dx, *, function="relu", alpha=0.0, stream=None, device=None):
    """dx = f'(x) * dy."""
    return execute(OpKind.ACTIVATION_BACKWARD, _act(function, alpha), [x, dy], [dx], stream,
                   device)


# ---------------------------------------------------------------------------- softmax --
def softmax_forward(x, y, *, axis=-1, log=False, stream=None, device=None):
    p = _abi.nnp_softmax_params(axis=axis, log=int(bool(log)))
    return execute(OpKind.SOFTMAX_FORWARD, p, [x], [y], stream, device)


def softmax_backward(y, dy, dx, *, axis=-1, log=False, stream=None, device=None):
    p = _abi.nnp_softmax_params(axis=axis, log=int(bool(log)))
    return execute(OpKind.SOFTMAX_BACKWARD, p, [y, dy], [dx], stream, device)


def _sce(reduction, ignore_index):
    return _abi.nnp_softmax_cross_entropy_params(
        reduction=_enum(Reduction, reduction, "reduction"),
        has_ignore_index=int(ignore_index is not None),
        ignore_index=0 if ignore_index is None else ignore_index)


def softmax_cross_entropy_forward(logits, labels, loss, log_prob=None, *, reduction="mean",
                                  ignore_index=None, stream=None, device=None):
    """loss ([] for mean/sum, [N] for none) of logits [N, C] against int64 labels [N]."""
    return execute(OpKind.SOFTMAX_CROSS_ENTROPY_FORWARD, _sce(reduction, ignore_index),
                   [logits, labels], [loss, log_prob], stream, device)


def softmax_cross_entropy_backward(logits, labels, dloss, dlogits, *, reduction="mean",
                                   ignore_index=None, stream=None, device=None):
    return execute(OpKind.SOFTMAX_CROSS_ENTROPY_BACKWARD, _sce(reduction, ignore_index),
                   [logits, labels, dloss], [dlogits], stream, device)


# ---------------------------------------------------------------------- normalisation --
def batch_norm_forward_training(x, scale, bias, y, running_mean, running_var, saved_mean,
                                saved_inv_std, *, epsilon=1e-5, momentum=0.9, stream=None,
                                device=None):
    p = _abi.nnp_batch_norm_params(epsilon=epsilon, momentum=momentum)
    return execute(OpKind.BATCH_NORM_FORWARD_TRAINING, p, [x, scale, bias],
                   [y, running_mean, running_var, saved_mean, saved_inv_std], stream, device)


def batch_norm_forward_inference(x, scale, bias, mean, var, y, *, epsilon=1e-5, momentum=0.9,
                                 stream=None, device=None):
    p = _abi.nnp_batch_norm_params(epsilon=epsilon, momentum=momentum)
    return execute(OpKind.BATCH_NORM_FORWARD_INFERENCE, p, [x, scale, bias, mean, var], [y],
                   stream, device)


def batch_norm_backward(x, dy, scale, saved_mean, saved_inv_std, dx, dscale, dbias, *,
                        epsilon=1e-5, momentum=0.9, stream=None, device=None):
    p = _abi.nnp_batch_norm_params(epsilon=epsilon, momentum=momentum)
    return execute(OpKind.BATCH_NORM_BACKWARD, p, [x, dy, scale, saved_mean, saved_inv_std],
                   [dx, dscale, dbias], stream, device)


def layer_norm_forward(x, scale, y, bias=None, mean=None, inv_std=None, *, axis=-1,
                       epsilon=1e-5, stream=None, device=None):
    p = _abi.nnp_layer_norm_params(axis=axis, epsilon=epsilon)
    return execute(OpKind.LAYER_NORM_FORWARD, p, [x, scale, bias], [y, mean, inv_std], stream,
                   device)


def layer_norm_backward(x, dy, scale, mean, inv_std, dx, dscale, dbias=None, *, axis=-1,
                        epsilon=1e-5, stream=None, device=None):
    p = _abi.nnp_layer_norm_params(axis=axis, epsilon=epsilon)
    return execute(OpKind.LAYER_NORM_BACKWARD, p, [x, dy, scale, mean, inv_std],
                   [dx, dscale, dbias], stream, device)


# ---------------------------------------------------------------------------- dropout --
def dropout_forward(x, y, mask=None, *, ratio, seed, offset=0, stream=None, device=None):
    """Philox dropout; the same (seed, offset) gives the same mask on every backend. Advance
    offset by ceil(x.size / 4) between calls that must differ."""
    p = _abi.nnp_dropout_params(ratio=ratio, seed=seed, offset=offset)
    return execute(OpKind.DROPOUT_FORWARD, p, [x], [y, mask], stream, device)


def dropout_backward(dy, dx, *, ratio, seed, offset=0, stream=None, device=None):
    p = _abi.nnp_dropout_params(ratio=ratio, seed=seed, offset=offset)
    return execute(OpKind.DROPOUT_BACKWARD, p, [dy], [dx], stream, device)


# ----------------------------------------------------------------------- elementwise --
def binary(a, b, y, *, op="add", stream=None, device=None):
    """y = a (add|sub|mul|div) b with numpy broadcasting."""
    p = _abi.nnp_binary_params(op=_enum(BinaryOp, op, "binary op"))
    return execute(OpKind.BINARY, p, [a, b], [y], stream, device)


def add(a, b, y, **kw):
    return binary(a, b, y, op="add", **kw)


def sub(a, b, y, **kw):
    return binary(a, b, y, op="sub", **kw)


def mul(a, b, y, **kw):
    return binary(a, b, y, op="mul", **kw)


def div(a, b, y, **kw):
    return binary(a, b, y, op="div", **kw)


def scale(x, y, *, alpha, stream=None, device=None):
    return execute(OpKind.SCALE, _abi.nnp_scale_params(alpha=alpha), [x], [y], stream, device)


def fill(y, *, value, stream=None, device=None):
    return execute(OpKind.FILL, _abi.nnp_fill_params(value=value), [], [y], stream, device)


def copy(x, y, *, stream=None, device=None):
    """y = x element by element; both may be strided (e.g. numpy views)."""
    return execute(OpKind.COPY, None, [x], [y], stream, device)


def transpose(x, y, *, perm, stream=None, device=None):
    perm = list(perm)
    p = _abi.nnp_transpose_params()
    for i, v in enumerate(perm[:_abi.MAX_DIMS]):
        p.perm[i] = v
    return execute(OpKind.TRANSPOSE, p, [x], [y], stream, device)


def cast(x, y, *, stream=None, device=None):
    return execute(OpKind.CAST, None, [x], [y], stream, device)


def reduce(x, y, *, op="sum", axes=None, keepdims=False, stream=None, device=None):
    """Sum, mean or max over `axes` (None or () reduces every axis)."""
    axes = [] if axes is None else ([axes] if isinstance(axes, int) else list(axes))
    if len(axes) > _abi.MAX_DIMS:
        raise Error(_abi.Status.INVALID_ARGUMENT, f"at most {_abi.MAX_DIMS} axes")
    p = _abi.nnp_reduce_params(op=_enum(ReduceOp, op, "reduce op"), keepdims=int(bool(keepdims)),
                               n_axes=len(axes))
    for i, a in enumerate(axes):
        p.axes[i] = a
    return execute(OpKind.REDUCE, p, [x], [y], stream, device)


# ------------------------------------------------------------------------- optimisers --
def sgd_update(grad, param, momentum_buffer=None, *, lr, momentum=0.0, dampening=0.0,
               weight_decay=0.0, nesterov=False, stream=None, device=None):
    """In place on param (and momentum_buffer), as torch.optim.SGD."""
    p = _abi.nnp_sgd_params(lr=lr, momentum=momentum, dampening=dampening,
                            weight_decay=weight_decay, nesterov=int(bool(nesterov)))
    return execute(OpKind.SGD_UPDATE, p, [grad], [param, momentum_buffer], stream, device)


def adam_update(grad, param, m, v, *, step, lr=1e-3, beta1=0.9, beta2=0.999, epsilon=1e-8,
                weight_decay=0.0, adamw=False, stream=None, device=None):
    """In place on param, m, v, as torch.optim.Adam / AdamW; step counts from 1."""
    p = _abi.nnp_adam_params(lr=lr, beta1=beta1, beta2=beta2, epsilon=epsilon,
                             weight_decay=weight_decay, step=step, adamw=int(bool(adamw)))
    return execute(OpKind.ADAM_UPDATE, p, [grad], [param, m, v], stream, device)


# ------------------------------------------------------------- ops from the op table --
def _variadic(op, name, tensors):
    """The tensors of a variadic argument: a list or tuple (an array would be one tensor)."""
    if not isinstance(tensors, (list, tuple)):
        raise Error(_abi.Status.INVALID_ARGUMENT,
                    f"{op}: {name} is variadic: expected a list or tuple of tensors, got "
                    f"{type(tensors).__name__}")
    return list(tensors)


def _table_wrapper(name, kind, params_cls, inputs, outputs):
    """The wrapper of an op the table defines and this module has no hand-written function for
    (so a new op reaches Python with no edit here): tensors positionally in the C API's order,
    inputs then outputs (trailing optional ones may be left out or None); a variadic tensor
    (the table's last input or output, `variadic = true`) is one positional argument holding a
    sequence of 1..MAX_VARIADIC tensors; params as keywords named as the C struct's fields,
    with the table's defaults (nnplug_ops.h); an int32/int64[MAX_DIMS] field takes a list."""
    names = [t[0] for t in inputs] + [t[0] for t in outputs]
    required = [i for i, t in enumerate(list(inputs) + list(outputs)) if not t[1]]
    fields = [f for f, _ in params_cls._fields_ if f != "struct_size"] if params_cls else []

    def op(*tensors, stream=None, device=None, **params):
        if len(tensors) > len(names) or any(i >= len(tensors) or tensors[i] is None
                                            for i in required):
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"{name}({', '.join(names)}): got {len(tensors)} tensor(s)")
        unknown = sorted(set(params) - set(fields))
        if unknown:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"{name}: unknown params {unknown}; its params are {fields}")
        p = params_cls(**params) if params_cls is not None else None
        padded = list(tensors) + [None] * (len(names) - len(tensors))
        ins, outs = padded[:len(inputs)], padded[len(inputs):]
        if inputs and inputs[-1][3]:
            ins = ins[:-1] + _variadic(name, inputs[-1][0], ins[-1])
        if outputs and outputs[-1][3]:
            outs = outs[:-1] + _variadic(name, outputs[-1][0], outs[-1])
        return execute(kind, p, ins, outs, stream, device)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"{name}({', '.join(names)}, *, {', '.join(fields + ['stream', 'device'])})"
                  f": NNP_OP_{name.upper()} (nnplug_ops.h), generated from the op table.")
    return op


for _name, (_kind, _params_cls, _, _inputs, _outputs) in _abi.OPS.items():
    if _name not in globals():
        globals()[_name] = _table_wrapper(_name, _kind, _params_cls, _inputs, _outputs)
        __all__.append(_name)
