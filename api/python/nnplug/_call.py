"""nnplug._call — how a Python call becomes an nnp_op_execute: the op description the generated
functions hold (_Op, with its tensors _T and params keywords _P), device choice, output
allocation from nnp_op_infer_shapes, the call itself, the low-level execute(), and
nnp_op_supported with the same arguments (nnplug.supported).

The functions of nnplug.ops are generated from the op table; each calls _Op.run(locals()).
Argument checks and conversions (the params struct, tensors, staging of numpy arrays for
devices the host cannot address) are in nnplug._args; the per-signature call plans that repeated
calls reuse are in nnplug._plan.
"""
import ctypes
import inspect
import operator
import os
import re
import sys
import warnings
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Protocol,
                    Sequence, Tuple, Union)

from . import _abi, _core
from ._args import (_check_tensor, _check_writable, _dtype_arg, _dtype_name, _invalid,
                    _is_scalar, _kind, _ndim, _params_struct, _pick_device, _scalar_tensor,
                    _stage, _tensor_array, _variadic)
from ._array import _DTYPE_NAMES, DeviceArray, _dtype_code, as_dltensor
from ._core import Device, Error, InvalidArgumentError, Stream, check, devices
from ._core import device as _device
from ._dlpack import _Held, _make_dltensor
from ._lib import lib
from ._plan import _MAX_PLANS, _fast_key, _Plan, _plans, _refresh_fast_types, _tls

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


# ----------------------------------------------------------------------------- execute --
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
        # Calls of the same signature reuse a plan (nnplug._plan): ops whose tensors are all
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
            fk = _fast_key(self, a)
            if fk is not None:
                key, addrs, grad = fk
                plans = getattr(_tls, "plans", None)
                if plans is None or _tls.epoch != _core._epoch:
                    plans = _plans()
                try:
                    plan = plans.get(key)
                except TypeError:  # an unhashable keyword value: no plan
                    return self._run_hinted(a, mode, None)
                if plan is not None and plan.usable(a["stream"]):
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

    def _run(self, a: Dict[str, Any], mode: str, key: Any) -> Any:
        """The call in full: every argument converted and checked in Python, then libnnplug.
        With a key (from nnplug._plan._fast_key), a successful call leaves a plan for the next
        ones."""
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
                        else {"int64": "int64", "uint8": "uint8", "float32": "float32",
                              "accumulation": "float32" if float_dt in ("float16", "bfloat16")
                              else float_dt,
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
        if key is not None and st._capture_keep is None and \
                not any(id(original[n]) in staged for n in self._in_names + ("out",)):
            plans = _plans()
            if len(plans) >= _MAX_PLANS:
                plans.clear()
            plans[key] = _Plan(self, original, dev, st, params, objs, held_in, held_out, given,
                               wanted, like, torch_device, stream)
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


class _ShapeOnly:
    """An output described by shape and dtype only (nnplug.supported without out=)."""

    def __init__(self, shape: Tuple[int, ...], dtype: str, dev: Device):
        self.shape, self.dtype, self.dev = shape, dtype, dev

    def dltensor(self) -> _Held:
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
