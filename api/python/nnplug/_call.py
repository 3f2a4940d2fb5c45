"""nnplug._call — how a Python call becomes an nnp_op_execute: argument conversion, device
choice, output allocation from nnp_op_infer_shapes, params structs with range checks, staging
of numpy arrays for devices the host cannot address, and nnp_op_supported with the same
arguments (nnplug.supported).

The functions of nnplug.ops are generated from the op table; each calls _Op.run(locals()).
"""
import ctypes
import inspect
import numbers
import operator
import os
import re
import sys
import threading
import warnings
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Protocol,
                    Sequence, Tuple, Union)

from . import _abi, _core
from ._core import (Device, DeviceArray, Error, InvalidArgumentError, Stream, _Held,
                    _dtype_code, _dtype_name_of, _DTYPE_NAMES, as_dltensor, check,
                    device as _device, device_for_dldevice)
from ._lib import lib
from ._ops_generated import MAX_VARIADIC

if TYPE_CHECKING:
    import numpy


class SupportsDLPack(Protocol):
    """An array of another library that nnplug reads and writes in place (PyTorch, CuPy, JAX)."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...

    def __dlpack_device__(self) -> Tuple[int, int]: ...


#: What an op takes as a tensor: a numpy array, an nnplug.DeviceArray, any DLPack producer;
#: for an input also a Python or numpy scalar (a 0-d tensor of the call's dtype).
TensorLike = Union["numpy.ndarray[Any, Any]", DeviceArray, SupportsDLPack, float, int]
#: out=: one tensor, or a sequence in the C order (None: allocate that one)
OutLike = Union[None, TensorLike, Sequence[Optional[TensorLike]]]
StreamLike = Optional[Stream]
DeviceLike = Union[None, str, Device]


class _T(NamedTuple):
    """A tensor of an op: name, optional, dtype rule, variadic, inplace (outputs only)."""
    name: str
    optional: bool
    dtype: str
    variadic: bool
    inplace: bool


class _P(NamedTuple):
    """A Python keyword of a params struct: its name, the C field, the kind (flag, enum,
    int32, int64, uint64, double, int32[NNP_MAX_DIMS], int64[NNP_MAX_DIMS], comm), the enum class,
    the has_* field it sets, the count field it sets, and for a per-spatial-axis array of the
    N-D conv and pool params 1 (k entries) or 2 (pads: 2k), k = the first input's rank - 2."""
    py: str
    c: str
    kind: str
    enum: Any
    has: Optional[str]
    counter: Optional[str]
    spatial: int = 0


_INT_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1),
               "uint64": (0, 2**64 - 1), "int32[NNP_MAX_DIMS]": (-2**31, 2**31 - 1),
               "int64[NNP_MAX_DIMS]": (-2**63, 2**63 - 1)}


def _invalid(message: str) -> Error:
    return Error(_abi.Status.INVALID_ARGUMENT, message)


class AutogradWarning(UserWarning):
    """An nnplug op was called on PyTorch tensors that require grad while autograd records:
    the op is not recorded, so its result has no grad_fn and no gradient flows through it.
    nnplug.torch has autograd twins (conv2d, linear, layer_norm, scaled_dot_product_attention,
    cross_entropy, nll_loss); call under torch.no_grad() or on .detach()ed tensors when no
    gradient is wanted."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_stacklevel() -> int:
    """warnings.warn's stacklevel that points at the first frame outside this package (the
    user's call site), for the function that calls this one."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and \
            os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _PACKAGE_DIR:
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _warn_requires_grad(op: str, objs: Sequence[Any]) -> None:
    """AutogradWarning when a PyTorch tensor argument requires grad and autograd records (an
    op of nnplug.ops is not an autograd Function: its result would silently have no
    grad_fn)."""
    for x in objs:
        if x is not None and getattr(x, "requires_grad", False) is True and \
                _kind(x) == "torch":
            import torch
            if torch.is_grad_enabled():
                warnings.warn(AutogradWarning(
                    f"nnplug.{op}: a PyTorch tensor argument requires grad, but nnplug.{op} is "
                    "not recorded by autograd: its result has no grad_fn and no gradient flows "
                    "through it. Use the autograd twins of nnplug.torch (conv2d, linear, "
                    "layer_norm, scaled_dot_product_attention, cross_entropy, nll_loss), or "
                    "call it under torch.no_grad() or on .detach()ed tensors"),
                    stacklevel=_user_stacklevel())
            return


_LABEL = re.compile(r"\b(inputs|outputs)\[(\d+)\] \((\w+)\)")


def _strides_hint(op: str, message: str) -> str:
    """What to do about a strided tensor an op takes only compact (libnnplug's "expected
    compact row-major strides"): a transposed operand of gemm/matmul is its compact array with
    trans_a/trans_b; anything else is made compact first."""
    m = _LABEL.search(message)
    name = m.group(3) if m else "the tensor"
    compact = ("make it compact first: numpy.ascontiguousarray(a), t.contiguous() (PyTorch) or "
               "nnplug.copy into a contiguous DeviceArray")
    if op in ("gemm", "matmul") and name in ("A", "B"):
        flag = "trans_a" if name == "A" else "trans_b"
        return (f"; {name} is a strided view: for a transpose (a.T, t.t()), pass the compact "
                f"array it views and {flag}=True (no copy); otherwise {compact}")
    return f"; {name} is a strided view, and {op} takes compact tensors: {compact}"


# ----------------------------------------------------------------------------- params --
def _int(op: str, name: str, value: Any, kind: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        try:
            if isinstance(value, bool):
                raise TypeError
            value = operator.index(value)
        except TypeError:
            raise _invalid(f"{op}: {name} must be an integer, got {type(value).__name__} "
                           f"{value!r}") from None
    lo, hi = _INT_RANGES[kind]
    v = int(value)
    if not lo <= v <= hi:
        raise _invalid(f"{op}: {name} = {v} is outside the range of the C field "
                       f"({kind.split('[')[0]}: [{lo}, {hi}])")
    return v


def _float(op: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _invalid(f"{op}: {name} must be a real number, got {type(value).__name__} "
                       f"{value!r}")
    return float(value)


def _enum_value(op: str, name: str, cls: Any, value: Any) -> int:
    if isinstance(value, str):
        try:
            return int(cls[value.upper()])
        except KeyError:
            names = ", ".join(m.name.lower() for m in cls if m.name != "UNDEFINED")
            raise _invalid(f"{op}: {name} = {value!r} is not one of {names}") from None
    v = _int(op, name, value, "int32")
    try:
        return int(cls(v))
    except ValueError:
        names = ", ".join(f"{m.name.lower()} ({int(m)})" for m in cls if m.name != "UNDEFINED")
        raise _invalid(f"{op}: {name} = {v} is not one of {names}") from None


def _as_sequence(value: Any, what: str) -> Any:
    """value as a sequence: itself (str and bytes excepted), or list(value) for any other
    iterable; else INVALID_ARGUMENT with `what` and the type given."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return value
    try:
        return list(value)
    except TypeError:
        raise _invalid(f"{what}, got {type(value).__name__}") from None


def _spatial_list(op: str, p: _P, value: Any, k: int, x_label: str) -> Any:
    """A per-spatial-axis array keyword (conv and pool: kernel_shape, strides, pads,
    dilations, output_padding, output_shape) as the C field's k (pads: 2k) entries. The C
    struct takes the first k entries and zero-fills the rest, so a short list would silently
    mean 0 (ONNX's default) on the axes it leaves out: only these forms are accepted:
      - an int: that value on every spatial axis (pads: every begin and end);
      - k entries, one per axis; for pads also 2k, ONNX's [begin_1..begin_k, end_1..end_k],
        and k meaning begin = end on each axis (PyTorch's padding);
      - an empty sequence: every entry 0 (the C default: ONNX's defaults).
    Anything else raises INVALID_ARGUMENT naming the keyword, the length given and the lengths
    accepted."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return [value] * (k * p.spatial)
    value = _as_sequence(value, f"{op}: {p.py} must be an integer or a sequence of integers")
    n = len(value)
    if n == 0 or n == k * p.spatial:
        return value
    if p.spatial == 2 and n == k:
        return list(value) + list(value)
    axes = f"{x_label} has {k} spatial ax{'is' if k == 1 else 'es'} (rank {k + 2})"
    if p.spatial == 2:
        accepted = (f"{2 * k} ([begins..., ends...], ONNX), {k} (begin = end on each axis) or "
                    "a single integer")
    else:
        accepted = f"{k} (one per axis) or a single integer"
    raise _invalid(f"{op}: {p.py} has {n} entr{'y' if n == 1 else 'ies'} {list(value)!r}; "
                   f"{axes}, so {p.py} takes {accepted}")


def _params_struct(op: "_Op", args: Dict[str, Any], spatial_rank: int = 0,
                   x_label: str = "x") -> Any:
    """The C params struct of a call, every value range-checked first. spatial_rank: k for the
    per-spatial-axis arrays (0: the first input's rank is outside 3..5, which the library
    refuses; the arrays are then passed as given)."""
    if op.params_cls is None or op.params_optional:
        return None
    fields: Dict[str, Any] = {}
    counts: Dict[str, Tuple[str, int]] = {}
    for p in op.params:
        value = args[p.py]
        if p.has:
            fields[p.has] = int(value is not None)
            if value is None:
                continue
        if p.kind == "comm":
            from ._comm import Communicator
            if not isinstance(value, Communicator):
                raise _invalid(f"{op.name}: {p.py} must be an nnplug.Communicator "
                               f"(nnplug.communicator(...)), got {type(value).__name__}")
            fields[p.c] = value.handle
        elif p.kind == "flag":
            if not isinstance(value, (bool, numbers.Integral)) or int(value) not in (0, 1):
                raise _invalid(f"{op.name}: {p.py} must be a bool, got {value!r}")
            fields[p.c] = int(value)
        elif p.kind == "enum":
            fields[p.c] = _enum_value(op.name, p.py, p.enum, value)
        elif p.kind == "double":
            fields[p.c] = _float(op.name, p.py, value)
        elif p.kind.endswith("]"):
            if value is None:
                raise _invalid(f"{op.name}: {p.py} is required (a sequence of integers)")
            if p.spatial:
                value = _spatial_list(op.name, p, value, spatial_rank, x_label) \
                    if spatial_rank else [value] if isinstance(value, numbers.Integral) else value
            value = _as_sequence(value, f"{op.name}: {p.py} must be a sequence of integers")
            if len(value) > _abi.MAX_DIMS:
                raise _invalid(f"{op.name}: {p.py} has {len(value)} entries; at most "
                               f"{_abi.MAX_DIMS} (NNP_MAX_DIMS)")
            fields[p.c] = [_int(op.name, f"{p.py}[{i}]", v, p.kind) for i, v in enumerate(value)]
            if p.counter:
                if p.counter in counts and counts[p.counter][1] != len(value):
                    other, n = counts[p.counter]
                    raise _invalid(f"{op.name}: {p.py} has {len(value)} entries but {other} has "
                                   f"{n}; they must have the same length")
                counts[p.counter] = (p.py, len(value))
                fields[p.counter] = len(value)
        else:
            fields[p.c] = _int(op.name, p.py, value, p.kind)
    return op.params_cls(**fields)


# ----------------------------------------------------------------------------- tensors --
def _is_scalar(x: Any) -> bool:
    if isinstance(x, DeviceArray):
        return False
    if isinstance(x, (numbers.Number, bool)):
        return True
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return False
    return isinstance(x, np.generic)


def _dtype_name(x: Any) -> Optional[str]:
    """The dtype name of an array argument (numpy naming), or None."""
    if isinstance(x, DeviceArray):
        return x.dtype
    dt = getattr(x, "dtype", None)
    if dt is None:
        return None
    name = getattr(dt, "name", None) or str(dt)
    return name.replace("torch.", "")


def _ndim(x: Any) -> int:
    """The rank of a tensor argument (numpy, DeviceArray, PyTorch, any DLPack producer)."""
    shape = getattr(x, "shape", None)
    if isinstance(shape, tuple):  # numpy, DeviceArray, torch.Size
        return len(shape)
    return int(as_dltensor(x).tensor.ndim)


def _kind(x: Any) -> str:
    if isinstance(x, DeviceArray):
        return "device"
    if type(x).__module__.split(".")[0] == "torch":
        return "torch"
    try:
        import numpy as np
        if isinstance(x, np.ndarray):
            return "numpy"
    except ImportError:  # pragma: no cover
        pass
    return "other"


def _scalar_tensor(op: str, name: str, value: Any, dtype: str) -> Any:
    import numpy as np
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise _invalid(f"{op}: {name} = {value!r} cannot be a 0-d {dtype} tensor: {e}") from None


def _dtype_arg(op: str, dtype: Any) -> str:
    """The dtype= keyword as a dtype name ("float64", "bfloat16"): a name, a numpy dtype or
    type, or a torch dtype."""
    try:
        return _dtype_name_of(dtype)
    except Error:
        raise _invalid(f"{op}: dtype = {dtype!r} is not a dtype nnplug knows (float16, "
                       "bfloat16, float32, float64, int8..int64, uint8..uint64)") from None


def _variadic(op: str, name: str, tensors: Any) -> List[Any]:
    if not isinstance(tensors, (list, tuple)):
        raise _invalid(f"{op}: {name} is variadic: expected a list or tuple of 1.."
                       f"{MAX_VARIADIC} tensors, got {type(tensors).__name__}")
    if not 1 <= len(tensors) <= MAX_VARIADIC:
        raise _invalid(f"{op}: {name}: {len(tensors)} tensors; expected 1.."
                       f"{MAX_VARIADIC}")
    return list(tensors)


def _check_tensor(op: str, label: str, x: Any) -> None:
    """x must be something as_dltensor takes; else an error that names the argument."""
    if isinstance(x, (DeviceArray, _Held)) or hasattr(x, "__dlpack__") or \
            _kind(x) == "numpy" or type(x).__name__ == "PyCapsule":
        return
    raise _invalid(f"{op}: {label}: cannot use a {type(x).__name__} as a tensor: pass a numpy "
                   "array, an nnplug.DeviceArray or an object with __dlpack__")


def _check_writable(op: str, label: str, x: Any) -> None:
    """Outputs must be writable and must not address one element twice (a 0 stride over an
    extent > 1: numpy.broadcast_to, torch.expand)."""
    base = x
    while isinstance(base, DeviceArray):  # nnplug.asarray of a numpy array: that array
        base = base._base
    if getattr(getattr(base, "flags", None), "writeable", True) is False:
        raise _invalid(f"{op}: {label} is a read-only array; outputs must be writable")
    if isinstance(x, DeviceArray):
        if any(d > 1 and st == 0 for d, st in zip(x.shape, x.strides)):
            raise _invalid(f"{op}: {label} has stride 0 over a dimension of more than one "
                           f"element (shape {x.shape}, strides {x.strides}): its elements "
                           "overlap; outputs must not alias themselves")
        return
    held = as_dltensor(x)
    t = held.tensor
    if t.strides:
        for i in range(t.ndim):
            if t.shape[i] > 1 and t.strides[i] == 0:
                raise _invalid(f"{op}: {label} has stride 0 over a dimension of {t.shape[i]}: "
                               "its elements overlap; outputs must not alias themselves")


def _tensor_array(held: Sequence[Optional[_Held]]) -> Any:
    arr = (ctypes.POINTER(_abi.DLTensor) * max(len(held), 1))()
    for i, h in enumerate(held):
        if h is not None:  # else NULL
            arr[i] = ctypes.pointer(h.tensor)
    return arr


def _pick_device(held: Sequence[Optional[_Held]], objs: Sequence[Any]) -> Device:
    for a in objs:
        if isinstance(a, DeviceArray):
            return a.device
    dl = next((h.dldevice for h in held if h is not None), None)
    if dl is None:
        return _device("auto")
    return device_for_dldevice(dl)


def _same_view(a: Any, b: Any) -> bool:
    return bool(a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and
                a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


def _overlap(a: Any, b: Any) -> bool:
    import numpy as np
    if not np.may_share_memory(a, b):
        return False
    too_hard = getattr(getattr(np, "exceptions", np), "TooHardError", ValueError)
    try:
        return bool(np.shares_memory(a, b, max_work=1_000_000))
    except too_hard:
        return True  # too costly to tell: treated as overlapping


def _stage(dev: Device, objs: List[Any], staged: Dict[int, Any],
           outputs: bool = False) -> List[Any]:
    """numpy arrays among objs as device copies, one per distinct view of memory (recorded in
    staged: id(host) -> (host, device copy), the host kept alive so that its id is not reused
    by a later array), so that an output that is also an input stays aliased. Copies would
    hide any other overlap of an output with the arrays staged before it, which libnnplug
    refuses for host memory: refused here the same way."""
    import numpy as np
    out = []
    for x in objs:
        if isinstance(x, np.ndarray):
            if id(x) not in staged:
                twin = next((h for h, _ in staged.values() if _same_view(h, x)), None)
                if twin is not None:
                    staged[id(x)] = (x, staged[id(twin)][1])
                else:
                    if outputs and any(_overlap(h, x) for h, _ in staged.values()):
                        raise _invalid("an output overlaps another argument in part (numpy "
                                       "arrays over the same memory); outputs may only be "
                                       "exactly an input (in-place ops) or apart from it")
                    staged[id(x)] = (x, dev.to_device(x))
            x = staged[id(x)][1]
        out.append(x)
    return out


def execute(kind: int, params: Any, inputs: Sequence[Any], outputs: Sequence[Any],
            stream: StreamLike = None, device: DeviceLike = None) -> Any:
    """nnp_op_execute, the low-level entry point: runs op `kind` (nnplug.OpKind) with a params
    struct (an nnplug._abi params class, or None) on input and output tensors (None for an
    absent optional one) that already exist; outputs are written in place. Returns the outputs
    (a single one unwrapped). With a device whose memory the host cannot address, numpy
    arguments are copied to the device and numpy outputs back (the call is synchronous then)."""
    import numpy as np
    for i, x in enumerate(outputs):  # as the op functions do: before anything is written
        if x is not None:
            _check_writable("execute", f"outputs[{i}]", x)
    dev = stream.device if stream is not None else (_device(device) if device is not None
                                                     else None)
    staged: Dict[int, Any] = {}
    call_in, call_out = list(inputs), list(outputs)
    if dev is not None and not dev.is_cpu and stream is None:
        call_in = _stage(dev, call_in, staged)
        call_out = _stage(dev, call_out, staged, outputs=True)
    held_in = [None if x is None else as_dltensor(x) for x in call_in]
    held_out = [None if x is None else as_dltensor(x) for x in call_out]
    if dev is None:
        dev = _pick_device(held_in + held_out, call_in + call_out)
    st = stream if stream is not None else dev.default_stream()
    check(lib().nnp_op_execute(st.handle, int(kind),
                               ctypes.byref(params) if params is not None else None,
                               len(held_in), _tensor_array(held_in), len(held_out),
                               _tensor_array(held_out)))
    st._keep_for_capture(call_in + call_out)
    if stream is None:
        st.synchronize()
    for x in outputs:
        if isinstance(x, np.ndarray) and id(x) in staged:
            np.copyto(x, staged[id(x)][1].numpy())
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


# ---------------------------------------------------------------------------------- op --
class _Op:
    """One op of the table as the generated function sees it."""

    def __init__(self, name: str, kind: int, params_cls: Any, params_optional: bool,
                 infer: bool, inputs: Tuple[_T, ...], outputs: Tuple[_T, ...],
                 params: Tuple[_P, ...]):
        self.name, self.kind, self.params_cls = name, kind, params_cls
        self.params_optional, self.infer = params_optional, infer
        self.inputs, self.outputs, self.params = inputs, outputs, params
        self.results = [t for t in outputs if not t.inplace]
        self.function: Optional[Callable[..., Any]] = None  # set by nnplug.ops
        # Keywords that name both an optional input and a params field (adam_update's step and
        # lr, ABI 1.4: a device tensor that replaces the field): see split_shared.
        self.shared = {t.name for t in inputs if t.optional and not t.variadic} & \
            {p.py for p in params}
        # The params have per-spatial-axis arrays (conv, pool): k comes from the first input.
        self.spatial = any(p.spatial for p in params)
        # Calls of the same signature reuse a plan (see _Plan): ops whose tensors are all
        # fixed in number and allocated from nnp_op_infer_shapes.
        self.fastable = infer and not self.shared and \
            not any(t.variadic or t.inplace for t in inputs + outputs) and \
            not any(p.kind == "comm" for p in params) and bool(self.results)
        self._in_names = tuple(t.name for t in inputs)
        self._arrays = any(p.kind.endswith("]") for p in params)
        self._other: Optional[Tuple[str, ...]] = None  # the keywords that are not tensors

    def split_shared(self, a: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """The arguments as the inputs see them and as the params see them. A shared keyword
        given a tensor is that input, and its params field keeps the table's default; given a
        number (or None) it sets the field, and the input is absent."""
        if not self.shared:
            return a, a
        ins, pars = dict(a), dict(a)
        for name in self.shared:
            value = a.get(name)
            p = next(p for p in self.params if p.py == name)
            default = None if p.has else self.params_cls._defaults_.get(p.c, 0)
            if value is not None and not _is_scalar(value):
                pars[name] = default  # the tensor is the input
            else:
                ins[name] = None
                if value is None:
                    pars[name] = default
        return ins, pars

    # -- arguments --------------------------------------------------------------------
    def _inputs(self, a: Dict[str, Any]) -> Tuple[List[Any], List[str]]:
        """The input objects in C order (a variadic one expanded) and their labels."""
        objs: List[Any] = []
        labels: List[str] = []
        for t in self.inputs:
            if t.variadic:
                xs = _variadic(self.name, t.name, a[t.name])
                objs += xs
                labels += [f"{t.name}[{i}]" for i in range(len(xs))]
            else:
                objs.append(a[t.name])
                labels.append(t.name)
        # scalars become 0-d tensors of the dtype their rule gives
        floats = [_dtype_name(x) for x, t in zip(objs, self._in_rules(a))
                  if t.dtype == "float" and x is not None and not _is_scalar(x)]
        first = next((_dtype_name(x) for x in objs if x is not None and not _is_scalar(x)),
                     None)
        for i, (x, t) in enumerate(zip(objs, self._in_rules(a))):
            if x is None:
                if not t.optional:
                    raise _invalid(f"{self.name}: {labels[i]} is required (got None)")
                continue
            if _is_scalar(x):
                dt = {"float": floats[0] if floats else "float32", "int64": "int64",
                      "uint8": "uint8", "float32": "float32"}.get(t.dtype, first or "float32")
                objs[i] = _scalar_tensor(self.name, labels[i], x, dt or "float32")
                continue
            _check_tensor(self.name, labels[i], x)
            if t.dtype == "uint8" and _dtype_name(x) == "bool" and _kind(x) == "numpy":
                objs[i] = x.view("uint8")
        return objs, labels

    def _like(self, a: Dict[str, Any]) -> Optional[str]:
        """The kind of the first input tensor as the caller passed it (before scalars became
        0-d numpy arrays and numpy arrays were staged to a device): the kind of allocated
        outputs."""
        for t in self.inputs:
            v = a[t.name]
            for x in (v if t.variadic and isinstance(v, (list, tuple)) else [v]):
                if x is not None and not _is_scalar(x):
                    return _kind(x)
        return None

    def _in_rules(self, a: Dict[str, Any]) -> List[_T]:
        rules: List[_T] = []
        for t in self.inputs:
            rules += [t] * (len(a[t.name]) if t.variadic and isinstance(a[t.name], (list, tuple))
                            else 1)
        return rules

    def _out_slots(self, a: Dict[str, Any]) -> Tuple[List[Any], List[bool]]:
        """The user's storage for each result (None: allocate) and whether each is wanted."""
        out = a.get("out")
        n = len(self.results)
        if n == 1 and self.results[0].variadic:
            if out is None:
                return [None], [True]
            return [_variadic(self.name, "out", out)], [True]
        if out is None:
            given: List[Any] = [None] * n
        elif isinstance(out, (list, tuple)):
            if len(out) > n:
                raise _invalid(f"{self.name}: out has {len(out)} entries; the op has {n} "
                               f"outputs ({', '.join(t.name for t in self.results)})")
            given = list(out) + [None] * (n - len(out))
        else:
            if n == 0:
                raise _invalid(f"{self.name}: the op has no outputs to pass in out= (it "
                               "updates its arguments in place)")
            given = [out] + [None] * (n - 1)
        wanted = [not t.optional or given[i] is not None or bool(a.get(f"return_{t.name}"))
                  for i, t in enumerate(self.results)]
        return given, wanted

    # -- shapes -------------------------------------------------------------------------
    def _infer(self, params: Any, held_in: List[Optional[_Held]], n: int
               ) -> List[Tuple[Tuple[int, ...], Tuple[int, int]]]:
        """(shape, dtype code) of the first n outputs, from nnp_op_infer_shapes."""
        shapes = (_abi.nnp_shape * max(n, 1))()
        pp = ctypes.byref(params) if params is not None else None
        check(lib().nnp_op_infer_shapes(int(self.kind), pp, len(held_in), _tensor_array(held_in),
                                        n, shapes))
        return [(tuple(s.dims[:s.ndim]), (s.dtype.code, s.dtype.bits)) for s in shapes[:n]]

    def _given_shapes(self, a: Dict[str, Any], objs: List[Any]) -> List[Tuple[int, ...]]:
        """The out_shape= keyword (ops whose outputs the inputs do not determine)."""
        shape = a.get("out_shape")
        variadic = bool(self.results) and self.results[0].variadic
        if shape is None and self.name == "split" and a.get("num_outputs", 0) > 0:
            x = objs[0]
            held = as_dltensor(x)
            rank = held.tensor.ndim
            axis = a["axis"] + rank if a["axis"] < 0 else a["axis"]
            if not 0 <= axis < rank:
                raise _invalid(f"split: axis = {a['axis']} is outside [-{rank}, {rank})")
            dims = list(held.tensor.shape[:rank])
            n = a["num_outputs"]
            chunk = -(-dims[axis] // n)  # ONNX Split 18: ceil; the last chunk is smaller
            sizes = [min(chunk, max(dims[axis] - i * chunk, 0)) for i in range(n)]
            return [tuple(dims[:axis] + [s] + dims[axis + 1:]) for s in sizes]
        if shape is None:
            what = "a list of shapes" if variadic else "a shape"
            raise _invalid(f"{self.name}: the inputs do not determine the output shape: pass "
                           f"out= or out_shape= ({what})")
        shapes = list(shape) if variadic else [shape]
        result = []
        for s in shapes:
            try:
                result.append(tuple(operator.index(d) for d in s))
            except TypeError:
                raise _invalid(f"{self.name}: out_shape must be {'a list of shapes' if variadic else 'a shape'}"
                               f" (sequences of integers), got {shape!r}") from None
        return result

    def _alloc(self, like: str, dev: Device, shape: Tuple[int, ...], dtype: str,
               torch_device: Any) -> Any:
        too_big = Error(_abi.Status.OUT_OF_MEMORY,
                        f"{self.name}: cannot allocate an output of shape {shape} ({dtype})")
        if like == "torch":
            import torch
            try:
                return torch.empty(shape, dtype=getattr(torch, dtype), device=torch_device)
            except (RuntimeError, MemoryError):  # torch's out-of-memory and size errors
                raise too_big from None
        if like == "numpy":
            import numpy as np
            try:
                return np.empty(shape, dtype=dtype)
            except TypeError:
                raise _invalid(f"{self.name}: numpy has no dtype {dtype}; pass DeviceArrays or "
                               "PyTorch tensors") from None
            except (ValueError, MemoryError):  # "array is too big", or no memory
                raise too_big from None
        return dev.empty(shape, dtype)

    # -- the call -------------------------------------------------------------------------
    def run(self, a: Dict[str, Any], mode: str = "execute") -> Any:
        """The call with the generated function's arguments `a` (its locals()): executes it
        ("execute") or asks nnp_op_supported ("supported")."""
        if mode == "execute" and self.fastable:
            fk = self._fast_key(a)
            if fk is not None:
                key, addrs, grad = fk
                plans = getattr(_tls, "plans", None)
                if plans is None or _tls.epoch != _core._epoch:
                    plans = _plans()
                try:
                    plan = plans.get(key)
                except TypeError:  # an unhashable keyword value: no plan
                    return self._run_hinted(a, mode, None)
                # A plan serves unless this thread is in it already (an op called from a
                # finaliser during a call) or its stream was destroyed or is capturing (the
                # full path handles those).
                if plan is not None and not plan.busy and \
                        plan.stream._handle is plan.stream_handle and \
                        plan.stream._capture_keep is None:
                    if grad:
                        _warn_requires_grad(self.name, [a[n] for n in self._in_names])
                    return plan.call(self, a, addrs)
                return self._run_hinted(a, mode, key)
            if _refresh_fast_types():  # PyTorch was imported since: try again
                return self.run(a, mode)
        return self._run_hinted(a, mode, None)

    def _run_hinted(self, a: Dict[str, Any], mode: str, key: Any) -> Any:
        """_run, with a hint added to libnnplug's refusal of a strided view (which
        nnp_op_infer_shapes may give before nnp_op_execute runs)."""
        try:
            return self._run(a, mode, key)
        except InvalidArgumentError as e:
            if "expected compact row-major strides" not in e.message:
                raise
            raise Error(e.status, e.message + _strides_hint(self.name, e.message)) from None

    def _fast_key(self, a: Dict[str, Any]) -> Optional[Tuple[Any, List[Any], bool]]:
        """The call's signature (op, per tensor its kind, shape, strides, dtype and device,
        every other keyword's value and type), the data of its tensors (inputs, then out=: an
        address, or for a DeviceArray its pointer and byte offset), and whether a PyTorch
        tensor requires grad; None when the call cannot use a plan (a stream, an argument of
        another kind, a freed or read-only array, ...)."""
        if a["stream"] is not None:
            return None
        types = _FAST_TYPES
        sig: List[Any] = []
        addrs: List[Any] = []
        grad = False
        generation = _core._generation
        try:
            for name in self._in_names:
                x = a[name]
                if x is None:
                    sig.append(None)
                    continue
                k = types.get(type(x))
                if k == _DA:
                    p = x.ptr
                    if x._generation != generation or (p is None and x.nbytes):
                        return None  # freed: the slow path says so
                    sig.append(x._sig)
                    addrs.append((p, x.byte_offset))  # as DeviceArray.dltensor() gives them
                elif k == _NP:
                    sig.append((1, x.shape, x.strides, x.dtype))
                    addrs.append(_np_address(x))
                elif k == _TORCH:
                    sig.append((2, x.shape, x.stride(), x.dtype, x.device))
                    addrs.append(x.data_ptr())
                    grad = grad or x.requires_grad
                elif type(x) is float:
                    sig.append((3, x.hex()))  # hex: -0.0 and 0.0 differ
                elif type(x) is int:
                    sig.append((4, x))
                else:
                    return None
            out = a["out"]
            if out is not None:
                k = types.get(type(out))
                if k == _DA:
                    p = out.ptr
                    if (p is None and out.nbytes) or out._generation != generation:
                        return None
                    base = out._base
                    while isinstance(base, DeviceArray):
                        base = base._base
                    if base is not None and \
                            getattr(getattr(base, "flags", None), "writeable", True) is False:
                        return None
                    sig.append((5, out._sig))
                    addrs.append((p, out.byte_offset))
                elif k == _NP:
                    if not out.flags.writeable:
                        return None
                    sig.append((6, out.shape, out.strides, out.dtype))
                    addrs.append(_np_address(out))
                elif k == _TORCH:
                    sig.append((7, out.shape, out.stride(), out.dtype, out.device))
                    addrs.append(out.data_ptr())
                    grad = grad or out.requires_grad
                else:
                    return None  # a tuple, or another kind
        except (RuntimeError, AttributeError):  # e.g. a sparse torch tensor has no strides
            return None
        other = self._other
        if other is None:
            other = self._other = tuple(n for n in a if n not in self._in_names and n != "out")
        vals = [a[n] for n in other]
        kinds = tuple(map(type, vals))
        if self._arrays:
            vals = [(tuple(v), tuple(map(type, v))) if type(v) in (list, tuple) else v
                    for v in vals]
        return (self.kind, tuple(sig), tuple(vals), kinds), addrs, grad

    def _run(self, a: Dict[str, Any], mode: str, key: Any) -> Any:
        """The call in full: every argument converted and checked in Python, then libnnplug.
        With a key (from _fast_key), a successful call leaves a plan for the next ones."""
        import numpy as np
        original = a
        a, params_args = self.split_shared(a)
        objs, in_labels = self._inputs(a)
        if mode == "execute":
            _warn_requires_grad(self.name, objs)
        inplace = [(t, a.get(t.name)) for t in self.outputs if t.inplace]
        for t, x in inplace:
            if x is None and not t.optional:
                raise _invalid(f"{self.name}: {t.name} is required (updated in place)")
        given, wanted = self._out_slots(a)
        for t, g in zip(self.results, given):
            for j, x in enumerate(g if isinstance(g, list) else [g]):
                if x is not None:
                    _check_tensor(self.name, f"out[{j}]" if t.variadic else f"{t.name} (out)",
                                  x)
        for t, x in inplace:
            if x is not None:
                _check_tensor(self.name, t.name, x)
        stream = a.get("stream")
        if stream is not None and not isinstance(stream, Stream):
            raise _invalid(f"{self.name}: stream must be an nnplug.Stream, got "
                           f"{type(stream).__name__}")
        # the device
        user_outs = [x for g in given for x in (g if isinstance(g, list) else [g])
                     if x is not None] + [x for _, x in inplace if x is not None]
        comm = next((a[p.py] for p in self.params if p.kind == "comm"), None)
        if stream is not None:
            dev = stream.device
        elif a.get("device") is not None:
            dev = _device(a["device"])
        elif comm is not None and hasattr(comm, "device"):
            dev = comm.device  # a collective runs on its communicator's device
        else:
            held = [None if x is None else as_dltensor(x) for x in objs + user_outs]
            if any(h is not None for h in held):
                dev = _pick_device(held, objs + user_outs)
            else:
                dev = _device("auto")
        k = 0
        if self.spatial and objs and objs[0] is not None:
            rank = _ndim(objs[0])
            k = rank - 2 if 3 <= rank <= 5 else 0
        params = _params_struct(self, params_args, k, in_labels[0] if in_labels else "x")
        # shape-only description for nnp_op_supported: numpy arguments stand for tensors of
        # the device
        staged: Dict[int, Any] = {}
        if not dev.is_cpu and mode == "execute" and stream is None:
            objs = _stage(dev, objs, staged)
        held_in = [None if x is None else as_dltensor(x) for x in objs]
        # outputs
        like = self._like(a) or ("numpy" if dev.is_cpu else "device")
        if like == "other":
            like = "numpy" if dev.is_cpu else "device"
        torch_device = next((x.device for x in objs if _kind(x) == "torch"), None)
        need = [i for i, t in enumerate(self.results) if wanted[i] and given[i] is None]
        shapes: List[Tuple[Tuple[int, ...], str]] = []
        if need:
            float_dt = next((_dtype_name(x) for x, t in zip(objs, self._in_rules(a))
                             if t.dtype == "float" and x is not None), None)
            if self.infer:
                # Only the outputs up to the last one wanted: a later optional output may not be
                # inferable for this call (pool_forward's indices with average pooling).
                n_inf = len(self.outputs)
                if not any(t.variadic for t in self.outputs):
                    n_inf = max(self.outputs.index(self.results[i]) for i in need) + 1
                inferred = self._infer(params, held_in, n_inf)
                for i in range(len(self.results)):
                    t = self.results[i]
                    k = self.outputs.index(t)
                    if k >= n_inf:  # not wanted: never allocated
                        shapes.append(((), "float32"))
                        continue
                    shp, code = inferred[k]
                    dt = _DTYPE_NAMES.get(code) if code != (0, 0) else None
                    if dt is None:
                        dt = a.get("dtype")
                        if dt is None:
                            raise _invalid(f"{self.name}: pass dtype= (the output dtype) or "
                                           "out=")
                        dt = _dtype_arg(self.name, dt)
                    shapes.append((shp, dt))
            else:
                for shp in self._given_shapes(a, objs):
                    t = self.results[0]
                    dt = _dtype_arg(self.name, a["dtype"]) if a.get("dtype") is not None \
                        else {"int64": "int64", "uint8": "uint8",
                              "same_as_input0": _dtype_name(objs[0]) if objs
                              else None}.get(t.dtype, float_dt) or "float32"
                    shapes.append((shp, dt))
        results: List[Any] = []
        for i, t in enumerate(self.results):
            if not wanted[i]:
                results.append(None)
            elif given[i] is not None:
                results.append(given[i])
            elif t.variadic:
                results.append([self._alloc(like, dev, s, d, torch_device) if mode == "execute"
                                else _ShapeOnly(s, d, dev) for s, d in shapes])
            else:
                s, d = shapes[i] if self.infer else shapes[0]
                results.append(self._alloc(like, dev, s, d, torch_device) if mode == "execute"
                               else _ShapeOnly(s, d, dev))
        # the C order of outputs, with labels
        outs: List[Any] = []
        out_labels: List[str] = []
        r = 0
        for t in self.outputs:
            if t.inplace:
                outs.append(a.get(t.name))
                out_labels.append(t.name)
            else:
                x = results[r]
                r += 1
                if t.variadic:
                    outs += x
                    out_labels += [f"out[{j}]" for j in range(len(x))]
                else:
                    outs.append(x)
                    out_labels.append(f"{t.name} (out)")
        for x, label in zip(outs, out_labels):
            if x is not None and not isinstance(x, _ShapeOnly):
                _check_writable(self.name, label, x)
        if mode == "execute" and not dev.is_cpu and stream is None:
            outs = _stage(dev, outs, staged, outputs=True)
        held_out = [None if x is None else x.dltensor() if isinstance(x, _ShapeOnly)
                    else as_dltensor(x) for x in outs]
        pp = ctypes.byref(params) if params is not None else None
        if mode == "supported":
            for x, h in zip(objs + outs, held_in + held_out):
                if h is not None and _kind(x) == "numpy":  # a fresh DLTensor of its own
                    h.tensor.device.device_type, h.tensor.device.device_id = dev.dldevice
            status = lib().nnp_op_supported(dev.handle, int(self.kind), pp, len(held_in),
                                            _tensor_array(held_in), len(held_out),
                                            _tensor_array(held_out))
            if status == _abi.Status.UNSUPPORTED:
                return (lib().nnp_last_error_message() or b"").decode(errors="replace")
            check(status)
            return None
        st = stream if stream is not None else dev.default_stream()
        status = lib().nnp_op_execute(st.handle, int(self.kind), pp, len(held_in),
                                      _tensor_array(held_in), len(held_out),
                                      _tensor_array(held_out))
        if status:
            raise self._error(status, original, dev, stream is not None)
        st._keep_for_capture(objs + outs)
        if stream is None:
            st.synchronize()
        if staged:  # copy staged numpy outputs back (after success only)
            host_outs = [x for x in self._c_outputs(a, results)]
            for x in host_outs:
                if isinstance(x, np.ndarray) and id(x) in staged:
                    np.copyto(x, staged[id(x)][1].numpy())
        # A plan, unless the user's numpy arrays were staged to the device (a scalar's 0-d
        # array staged there is kept by the plan)
        if key is not None and stream is None and st._capture_keep is None and \
                not any(id(original[n]) in staged for n in self._in_names + ("out",)):
            plans = _plans()
            if len(plans) >= _MAX_PLANS:
                plans.clear()
            plans[key] = _Plan(self, original, dev, st, params, objs, held_in, held_out, given,
                               wanted, like, torch_device)
        computed = [x for x, w in zip(results, wanted) if w]
        if not computed:
            return None
        return computed[0] if len(computed) == 1 else tuple(computed)

    def _error(self, status: int, a: Dict[str, Any], dev: Device, on_stream: bool) -> Error:
        """The Error of a failed nnp_op_execute, with a hint where one helps: for UNSUPPORTED
        the other devices present that run the same call (nnp_op_supported; e.g. float64 on
        the reference device)."""
        message = (lib().nnp_last_error_message() or b"").decode(errors="replace")
        if status == _abi.Status.UNSUPPORTED:
            from ._core import devices
            able = []
            for d in devices():
                if d == dev:
                    continue
                try:
                    if self.run(dict(a, device=d, stream=None), mode="supported") is None:
                        able.append(d.name)
                except Error:
                    pass
            if able:
                names = ", ".join(able)
                how = f'device="{able[0]}"' + (" (or a stream of that device)" if on_stream
                                                else "")
                message += f"; devices present that run this call: {names}: pass {how}"
            else:
                message += "; no other device present runs this call either"
        return Error(status, message)

    def _c_outputs(self, a: Dict[str, Any], results: List[Any]) -> List[Any]:
        flat: List[Any] = []
        for x in results:
            flat += x if isinstance(x, list) else [x]
        return flat + [a.get(t.name) for t in self.outputs if t.inplace]


# ------------------------------------------------------------------------ call plans --
# A call whose signature was seen before (the same op, the same kinds, shapes, strides, dtypes
# and devices of tensors, the same keyword values) skips the conversions and Python checks of
# _Op._run: its plan holds what they produced (the device and its stream, the params struct,
# the shapes of the outputs from nnp_op_infer_shapes, DLTensors with their shape and strides
# arrays), and a call fills in the tensors' data addresses, allocates the outputs and calls
# nnp_op_execute, which checks the call in full as always. Plans are per thread (their
# DLTensors are written by each call) and dropped by nnplug.shutdown() and load_plugin().
_DA, _NP, _TORCH = 0, 1, 2
_FAST_TYPES: Dict[type, int] = {DeviceArray: _DA}
_MAX_PLANS = 512  # per thread; the cache starts over when full
_tls = threading.local()


def _np_address_interface(x: Any) -> int:
    """The address of a numpy array's first element."""
    return int(x.__array_interface__["data"][0])


class _PyArrayInterface(ctypes.Structure):
    """numpy's __array_struct__ (the array interface, C side): its data field is read without
    building __array_interface__'s dict."""
    _fields_ = [("two", ctypes.c_int), ("nd", ctypes.c_int), ("typekind", ctypes.c_char),
                ("itemsize", ctypes.c_int), ("flags", ctypes.c_int),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("data", ctypes.c_void_p)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_DATA_OFFSET = _PyArrayInterface.data.offset
_void_at = ctypes.c_void_p.from_address


def _np_address_struct(x: Any) -> Optional[int]:
    """The address of a numpy array's first element, from __array_struct__ (the same value
    as _np_address_interface, about twice as fast)."""
    return _void_at(_capsule_pointer(x.__array_struct__, None) + _DATA_OFFSET).value


_np_address: Callable[[Any], Optional[int]] = _np_address_interface


def _refresh_fast_types() -> bool:
    """Registers numpy's and (once it is imported) PyTorch's array types; True if any was
    new."""
    global _np_address
    added = False
    np = sys.modules.get("numpy")
    if np is not None and getattr(np, "ndarray", None) is not None and \
            np.ndarray not in _FAST_TYPES:
        probe = np.arange(3.0)[1:]
        try:  # the array interface's layout, checked once
            if _np_address_struct(probe) == _np_address_interface(probe):
                _np_address = _np_address_struct
        except (AttributeError, ValueError, TypeError):
            pass
        _FAST_TYPES[np.ndarray] = _NP
        added = True
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None) if torch is not None else None
    if tensor is not None and tensor not in _FAST_TYPES:
        param = getattr(getattr(torch, "nn", None), "Parameter", None)
        if param is None:
            return added  # torch is still being imported
        _FAST_TYPES[tensor] = _TORCH
        _FAST_TYPES[param] = _TORCH
        added = True
    return added


def _plans() -> Dict[Any, "_Plan"]:
    plans: Optional[Dict[Any, _Plan]] = getattr(_tls, "plans", None)
    if plans is None or _tls.epoch != _core._epoch:
        plans = _tls.plans = {}
        _tls.epoch = _core._epoch
    return plans


def _clone_dltensor(t: Any) -> Tuple[Any, Any]:
    """A DLTensor with t's device, dtype, shape and strides (in arrays of its own), no data."""
    n = t.ndim
    shape = (ctypes.c_int64 * max(n, 1))(*t.shape[:n])
    strides = (ctypes.c_int64 * max(n, 1))(*t.strides[:n]) if t.strides else None
    c = _abi.DLTensor()
    c.device = _abi.DLDevice(t.device.device_type, t.device.device_id)
    c.ndim = n
    c.dtype = _abi.DLDataType(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    c.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    if strides is not None:
        c.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    c.byte_offset = 0
    return c, (shape, strides)


class _Plan:
    """What a call of one signature needs again (see above)."""

    def __init__(self, op: _Op, a: Dict[str, Any], dev: Device, st: Stream, params: Any,
                 objs: List[Any], held_in: List[Optional[_Held]],
                 held_out: List[Optional[_Held]], given: List[Any], wanted: List[bool],
                 like: str, torch_device: Any):
        import numpy as np
        self.busy = False
        self.dev, self.stream, self.params = dev, st, params
        self.stream_handle = st.handle
        self.pp = ctypes.byref(params) if params is not None else None
        self.kind = int(op.kind)
        self.execute = lib().nnp_op_execute
        self.synchronize = lib().nnp_stream_synchronize
        self.keep: List[Any] = []  # shape arrays, 0-d arrays of scalars
        self.patch: List[Any] = []  # DLTensors whose data each call sets, in _fast_key's order
        n_in, n_out = len(held_in), len(held_out)
        self.n_in, self.n_out = n_in, n_out
        self.arr_in = (ctypes.POINTER(_abi.DLTensor) * max(n_in, 1))()
        self.arr_out = (ctypes.POINTER(_abi.DLTensor) * max(n_out, 1))()
        for i, (name, h) in enumerate(zip(op._in_names, held_in)):
            if h is None:
                continue
            t, arrays = _clone_dltensor(h.tensor)
            self.keep.append(arrays)
            self.arr_in[i] = ctypes.pointer(t)
            if type(a[name]) in (float, int):  # the 0-d array of the scalar: fixed
                t.data, t.byte_offset = h.tensor.data, h.tensor.byte_offset
                self.keep.append(objs[i])
            else:
                self.patch.append(t)
        # outputs: (index among results, how to allocate, shape, dtype, its DLTensor)
        self.allocs: List[Tuple[str, Tuple[int, ...], Any, Any]] = []
        self.wanted = wanted
        self.given_at = -1  # the index among the returned outputs of out= (-1: none)
        for j, h in enumerate(held_out):
            if h is None or not wanted[j]:
                continue
            t, arrays = _clone_dltensor(h.tensor)
            self.keep.append(arrays)
            self.arr_out[j] = ctypes.pointer(t)
            if given[j] is not None:
                self.given_at = sum(wanted[:j])
                self.patch.append(t)
                continue
            shape = tuple(h.tensor.shape[d] for d in range(h.tensor.ndim))
            code = (h.tensor.dtype.code, h.tensor.dtype.bits)
            dtype = _DTYPE_NAMES[code]
            if like == "torch":
                import torch
                spec: Any = (getattr(torch, dtype), torch_device)
            elif like == "numpy":
                spec = np.dtype(dtype)
            else:
                spec = DeviceArray._fresh_attrs(dev, shape, dtype)
            self.allocs.append((like, shape, spec, t))

    def call(self, op: _Op, a: Dict[str, Any], addrs: List[Any]) -> Any:
        self.busy = True
        try:
            for t, p in zip(self.patch, addrs):
                if p.__class__ is tuple:  # a DeviceArray's pointer and byte offset
                    t.data, t.byte_offset = p
                else:
                    t.data = p
            outs = []
            for like, shape, spec, t in self.allocs:
                if like == "numpy":
                    try:
                        y = _np_empty(shape, spec)
                    except (ValueError, MemoryError):  # as _Op._alloc says it
                        raise Error(_abi.Status.OUT_OF_MEMORY, f"{op.name}: cannot allocate "
                                    f"an output of shape {shape} ({spec})") from None
                    t.data = _np_address(y)
                elif like == "torch":
                    try:
                        y = _torch_empty(shape, spec)
                    except (RuntimeError, MemoryError):
                        raise Error(_abi.Status.OUT_OF_MEMORY, f"{op.name}: cannot allocate "
                                    f"an output of shape {shape} ({spec[0]})") from None
                    t.data = y.data_ptr()
                else:
                    y = DeviceArray._fresh(spec)
                    t.data = y.ptr
                outs.append(y)
            status = self.execute(self.stream_handle, self.kind, self.pp, self.n_in,
                                  self.arr_in, self.n_out, self.arr_out)
            if status:
                raise op._error(status, a, self.dev, False)
            check(self.synchronize(self.stream_handle))
        finally:
            self.busy = False
        if self.given_at >= 0:
            outs.insert(self.given_at, a["out"])
        # the outputs wanted, in the order of the results; a single one unwrapped
        return outs[0] if len(outs) == 1 else tuple(outs)


def _np_empty(shape: Tuple[int, ...], dtype: Any) -> Any:
    import numpy as np
    return np.empty(shape, dtype)


def _torch_empty(shape: Tuple[int, ...], spec: Any) -> Any:
    import torch
    return torch.empty(shape, dtype=spec[0], device=spec[1])


class _ShapeOnly:
    """An output described by shape and dtype only (nnplug.supported without out=)."""

    def __init__(self, shape: Tuple[int, ...], dtype: str, dev: Device):
        self.shape, self.dtype, self.dev = shape, dtype, dev

    def dltensor(self) -> _Held:
        from ._core import _make_dltensor
        return _make_dltensor(None, self.dev.dldevice, _dtype_code(self.dtype), self.shape,
                              None)


def supported(op: Any, /, *args: Any, **kwargs: Any) -> Optional[str]:
    """nnp_op_supported with an op's own arguments: None when the device (the one the call
    would run on, or device=) runs `op(*args, **kwargs)` as described, else the reason
    (UNSUPPORTED). `op` is a function of nnplug.ops, its name, or an nnplug.OpKind; it is
    positional-only, so the ops' own `op=` keyword (binary, unary, reduce) passes through. Outputs
    need not exist: their shapes come from nnp_op_infer_shapes. Raises nnplug.Error for an
    invalid description (INVALID_ARGUMENT, as the op itself would)."""
    from . import ops
    if isinstance(op, str):
        fn = getattr(ops, op, None)
    elif callable(op):
        fn = op
    else:
        name = lib().nnp_op_kind_name(int(op))
        fn = getattr(ops, name.decode(), None) if name else None
    spec = getattr(ops, "_" + getattr(fn, "__name__", ""), None)
    if fn is None or not isinstance(spec, _Op):
        raise _invalid(f"supported: {op!r} is not an op of nnplug.ops")
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise _invalid(f"supported: {spec.name}: {e}") from None
    bound.apply_defaults()
    return spec.run(dict(bound.arguments), mode="supported")

