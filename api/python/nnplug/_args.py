"""nnplug._args — the arguments of an op call, checked and converted: the params struct with
range checks (_params_struct), tensor arguments (kind, dtype, rank, scalars as 0-d tensors,
variadic lists, writable outputs), the DLTensor arrays of a call, the device a call runs on,
and the staging of numpy arrays for devices the host cannot address.
"""
import ctypes
import numbers
import operator
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from . import _abi
from ._array import DeviceArray, _dtype_name_of, as_dltensor
from ._core import Device, Error, device_for_dldevice
from ._core import device as _device
from ._dlpack import _Held
from ._ops_generated import MAX_VARIADIC

if TYPE_CHECKING:
    from ._call import _Op, _P


_INT_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1),
               "uint64": (0, 2**64 - 1), "int32[NNP_MAX_DIMS]": (-2**31, 2**31 - 1),
               "int64[NNP_MAX_DIMS]": (-2**63, 2**63 - 1)}


def _invalid(message: str) -> Error:
    return Error(_abi.Status.INVALID_ARGUMENT, message)


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


def _spatial_list(op: str, p: "_P", value: Any, k: int, x_label: str) -> Any:
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
