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
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Protocol,
                    Sequence, Tuple, Union)

from . import _abi
from ._core import (Device, DeviceArray, Error, Stream, _Held, _dtype_code, _dtype_name_of,
                    _DTYPE_NAMES, as_dltensor, check, device as _device, device_for_dldevice)
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
    the has_* field it sets, the count field it sets."""
    py: str
    c: str
    kind: str
    enum: Any
    has: Optional[str]
    counter: Optional[str]


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


def _params_struct(op: "_Op", args: Dict[str, Any]) -> Any:
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
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                try:
                    value = list(value)
                except TypeError:
                    raise _invalid(f"{op.name}: {p.py} must be a sequence of integers, got "
                                   f"{type(value).__name__}") from None
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
        import numpy as np
        a, params_args = self.split_shared(a)
        objs, in_labels = self._inputs(a)
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
        params = _params_struct(self, params_args)
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
        check(lib().nnp_op_execute(st.handle, int(self.kind), pp, len(held_in),
                                   _tensor_array(held_in), len(held_out),
                                   _tensor_array(held_out)))
        st._keep_for_capture(objs + outs)
        if stream is None:
            st.synchronize()
        if staged:  # copy staged numpy outputs back (after success only)
            host_outs = [x for x in self._c_outputs(a, results)]
            for x in host_outs:
                if isinstance(x, np.ndarray) and id(x) in staged:
                    np.copyto(x, staged[id(x)][1].numpy())
        computed = [x for x, w in zip(results, wanted) if w]
        if not computed:
            return None
        return computed[0] if len(computed) == 1 else tuple(computed)

    def _c_outputs(self, a: Dict[str, Any], results: List[Any]) -> List[Any]:
        flat: List[Any] = []
        for x in results:
            flat += x if isinstance(x, list) else [x]
        return flat + [a.get(t.name) for t in self.outputs if t.inplace]


class _ShapeOnly:
    """An output described by shape and dtype only (nnplug.supported without out=)."""

    def __init__(self, shape: Tuple[int, ...], dtype: str, dev: Device):
        self.shape, self.dtype, self.dev = shape, dtype, dev

    def dltensor(self) -> _Held:
        from ._core import _make_dltensor
        return _make_dltensor(None, self.dev.dldevice, _dtype_code(self.dtype), self.shape,
                              None)


def supported(op: Any, *args: Any, **kwargs: Any) -> Optional[str]:
    """nnp_op_supported with an op's own arguments: None when the device (the one the call
    would run on, or device=) runs `op(*args, **kwargs)` as described, else the reason
    (UNSUPPORTED). `op` is a function of nnplug.ops, its name, or an nnplug.OpKind. Outputs
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

