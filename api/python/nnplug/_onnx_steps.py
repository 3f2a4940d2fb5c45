"""nnplug.onnx internals: the onnx package (imported on first use), what a plan knows of a value,
and the steps a plan runs (an op call, a view, an Expand), with the pool of reusable buffers."""
import importlib
import inspect
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from . import ops as _ops
from ._abi import BinaryOp, Status
from ._array import DeviceArray, _compact_strides
from ._call import _Op
from ._core import Device, Error, Stream
from ._plan import _fast_key, _plans

_onnx_module: Any = None


def _onnx() -> Any:
    """The onnx package (imported on first use, so that `import nnplug` never needs it)."""
    global _onnx_module
    if _onnx_module is None:
        try:
            for sub in ("helper", "numpy_helper", "shape_inference"):
                importlib.import_module("onnx." + sub)
            _onnx_module = importlib.import_module("onnx")
        except ImportError as e:
            raise ImportError("nnplug.onnx needs the onnx package (Debian: python3-onnx; "
                              "PyPI: onnx)") from e
    return _onnx_module


class _Refuse(Exception):
    """Raised by a mapping: the node cannot be mapped (the message is the reason)."""


# ------------------------------------------------------------------------ tensor facts --
class _Info:
    """What the plan knows of a value: shape, numpy dtype, and its data when it is constant."""
    __slots__ = ("shape", "dtype", "const")

    def __init__(self, shape: Tuple[int, ...], dtype: Any, const: Optional[np.ndarray] = None):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.const = const


def _np_dtype(elem_type: int) -> Any:
    onnx = _onnx()
    helper_fn = getattr(onnx.helper, "tensor_dtype_to_np_dtype", None)
    if helper_fn is not None:
        return np.dtype(helper_fn(elem_type))
    return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type])


# ------------------------------------------------------------------------------ steps --
class _Ref(NamedTuple):
    """A tensor argument of a step: a value by name, seen with `view` as its shape (a reshape of
    the compact tensor) and, for constants, converted to `dtype` when uploaded."""
    name: str
    view: Optional[Tuple[int, ...]] = None
    dtype: Optional[str] = None

    @property
    def key(self) -> str:
        """The run's name of the tensor (a converted constant has its own)."""
        return self.name if self.dtype is None else f"{self.name}\0{self.dtype}"


_Env = Dict[str, DeviceArray]


def _nbytes(shape: Tuple[int, ...], dtype: str) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


_strides_cache: Dict[Tuple[int, ...], Tuple[int, ...]] = {}


def _strides(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    """The compact strides (elements) of shape, computed once per shape."""
    st = _strides_cache.get(shape)
    if st is None:
        st = _strides_cache[shape] = _compact_strides(shape)
    return st


def _as(a: DeviceArray, shape: Tuple[int, ...]) -> DeviceArray:
    """Compact a seen with `shape` (as many elements: the plan checked the shapes)."""
    return a if a.shape == shape else a._compact_view(shape, _strides(shape))


class _Pool:
    """Device buffers no later step reads, by (bytes, dtype), for outputs of the same size.
    Reuse is safe in stream order: the buffer's last reader was queued before the new writer."""

    def __init__(self) -> None:
        self.free: Dict[Tuple[int, str], List[DeviceArray]] = {}

    def put(self, a: DeviceArray) -> None:
        if a.nbytes:
            self.free.setdefault((a.nbytes, a.dtype), []).append(a)

    def merge(self, other: "_Pool") -> None:
        for key, bufs in other.free.items():
            self.free.setdefault(key, []).extend(bufs)

    def take(self, shape: Tuple[int, ...], dtype: str, nbytes: int) -> Optional[DeviceArray]:
        bufs = self.free.get((nbytes, dtype))
        if not bufs:
            return None
        return _as(bufs.pop(), shape)  # buffers in the pool are compact

    def buffer(self, dev: Device, shape: Tuple[int, ...], dtype: str,
               nbytes: int) -> DeviceArray:
        """A buffer of that shape and dtype (nbytes: its size): from the pool, else a new one
        on dev."""
        out = self.take(shape, dtype, nbytes)
        return dev.empty(shape, dtype) if out is None else out


class _Step:
    """One node as the run sees it."""
    node = ""
    op_type = ""
    inputs: List[str] = []  # values read (for lifetimes)
    outputs: List[str] = []  # values written ("" for outputs not computed)
    owns_outputs = True  # False: the outputs are views or aliases of the first input

    def check(self, dev: Device, infos: Dict[str, _Info]) -> Optional[str]:
        return None

    def run(self, env: _Env, stream: Stream, pool: _Pool) -> None:
        raise NotImplementedError


def _supported(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Optional[str]:
    """nnplug.supported(fn, *args, **kwargs): None, or why the device refuses the call (an
    argument error too, named after the op function)."""
    try:
        result: Optional[str] = _ops.supported(fn, *args, **kwargs)
    except Error as e:
        return f"{fn.__name__}: {e.message}"
    return result


def _placeholder(info: _Info, ref: _Ref) -> np.ndarray:
    """A numpy array standing for a tensor in nnplug.supported (only its shape and dtype
    count; np.empty does not touch the memory)."""
    return np.empty(ref.view if ref.view is not None else info.shape, dtype=ref.dtype or
                    info.dtype)


class _Bound(NamedTuple):
    """A step's call plan (nnplug._plan._Plan, made by the step's first call on a stream) and
    what a later call must find to use it directly: the signature (DeviceArray._sig) of each
    run value it reads, in the op's input order, and of its output buffer."""
    plan: Any
    refs: Tuple[_Ref, ...]
    sigs: Tuple[Any, ...]
    out_sig: Any
    epoch: int


class _OpStep(_Step):
    """One call of an nnplug op function. `args` are positional tensors (a list for a variadic
    one), `tensors` keyword tensors (None = absent), `kwargs` the params; the call's results
    are the node outputs `outputs` in order, each seen with `out_views[i]` as its shape when
    set. `shapes` are the shapes the op itself returns (checked on every run).

    Outputs take their buffers from the run's pool: a single output always; several only with
    pool_parts=True, for a call that writes every one of them into the buffers given with out=
    (split's parts: its out_shape is then left out, the buffers say it)."""

    def __init__(self, fn: Callable[..., Any], args: Sequence[Union[_Ref, List[_Ref]]],
                 outputs: Sequence[str], shapes: Sequence[Tuple[int, ...]],
                 dtypes: Sequence[str], tensors: Optional[Dict[str, Optional[_Ref]]] = None,
                 out_views: Optional[Sequence[Optional[Tuple[int, ...]]]] = None,
                 pool_parts: bool = False, **kwargs: Any):
        self.fn, self.args, self.kwargs = fn, list(args), kwargs
        self.tensors = dict(tensors or {})
        self.outputs = list(outputs)
        self.shapes = [tuple(s) for s in shapes]
        self.dtypes = list(dtypes)
        self.out_views = list(out_views) if out_views is not None else [None] * len(outputs)
        refs: List[_Ref] = []
        for a in self.args:
            refs += a if isinstance(a, list) else [a]
        refs += [r for r in self.tensors.values() if r is not None]
        self.refs = refs
        self.inputs = [r.name for r in refs]
        self.poolable = (len(self.outputs) == 1 and "out_shape" not in kwargs) or \
            (pool_parts and all(self.outputs))
        self.nbytes = [_nbytes(sh, dt) for sh, dt in zip(self.shapes, self.dtypes)] \
            if self.poolable else []
        self.pooled_kwargs = {k: v for k, v in kwargs.items() if k != "out_shape"}
        # A single pooled output whose op has per-signature plans: from its second call on a
        # stream the step calls that plan itself (_run_bound), without the op function's
        # argument handling; by stream id (a run has a stream of its own).
        op = getattr(_ops, "_" + fn.__name__, None)
        self.op: Optional[_Op] = op if isinstance(op, _Op) and op.fastable and \
            len(self.outputs) == 1 and self.poolable else None
        self.bound: Dict[int, _Bound] = {}
        self.bind_failures = 0  # a step that fails to bind 3 times stops trying

    def check(self, dev: Device, infos: Dict[str, _Info]) -> Optional[str]:
        def ph(r: _Ref) -> np.ndarray:
            return _placeholder(infos[r.name], r)
        args = [[ph(r) for r in a] if isinstance(a, list) else ph(a) for a in self.args]
        tensors = {k: (None if r is None else ph(r)) for k, r in self.tensors.items()}
        return _supported(self.fn, *args, **tensors, **self.kwargs, device=dev)

    def run(self, env: _Env, stream: Stream, pool: _Pool) -> None:
        b = self.bound.get(id(stream)) if self.op is not None else None
        if b is not None and self._run_bound(b, env, stream, pool):
            return
        args, tensors = self._call_args(env)
        out: Any = None
        kwargs = self.kwargs
        binding = None
        if self.op is not None:
            out = pool.buffer(stream.device, self.shapes[0], self.dtypes[0], self.nbytes[0])
            if self.bind_failures < 3:
                binding = self._binding(env, args, tensors, out, stream)
        elif self.poolable:
            outs = [pool.take(sh, dt, n) for sh, dt, n in zip(self.shapes, self.dtypes,
                                                               self.nbytes)]
            if len(outs) == 1:
                out = outs[0]
            elif all(o is not None for o in outs):
                out, kwargs = tuple(outs), self.pooled_kwargs
            else:  # not every part has a buffer: the call allocates them all
                for o in outs:
                    if o is not None:
                        pool.put(o)
        res = self.fn(*args, **tensors, **kwargs, out=out, stream=stream)
        if binding is not None:
            self._bind(binding, stream)
        results = list(res) if isinstance(res, (tuple, list)) else [res]
        for name, y, shape, view in zip(self.outputs, results, self.shapes, self.out_views):
            if tuple(y.shape) != shape:
                raise Error(Status.INVALID_ARGUMENT,
                            f"node {self.node} ({self.op_type}): {self.fn.__name__} gave "
                            f"shape {tuple(y.shape)}, ONNX shape inference {shape}")
            env[name] = y if view is None else _as(y, view)

    def _call_args(self, env: _Env) -> Tuple[List[Any], Dict[str, Optional[DeviceArray]]]:
        """The op function's tensor arguments: positional, then keyword."""
        def get(r: _Ref) -> DeviceArray:
            a = env[r.key]
            return a if r.view is None else _as(a, r.view)
        args = [[get(r) for r in a] if isinstance(a, list) else get(a) for a in self.args]
        return args, {k: (None if r is None else get(r)) for k, r in self.tensors.items()}

    def _arguments(self, args: List[Any], tensors: Dict[str, Any], out: Any,
                   stream: Stream) -> Dict[str, Any]:
        """The op function's arguments as its body sees them (locals(): every parameter)."""
        ba = inspect.signature(self.fn).bind(*args, **tensors, **self.kwargs, out=out,
                                             stream=stream)
        ba.apply_defaults()
        return dict(ba.arguments)

    def _binding(self, env: _Env, args: List[Any], tensors: Dict[str, Any],
                 out: DeviceArray, stream: Stream) -> Optional[Tuple[Any, ...]]:
        """Before the step's call on `stream` through the op function, which leaves a plan for
        the call's signature (nnplug._plan): that signature's key, and the run values and
        signatures a later call must find to use the plan itself (_Bound). None when the call
        has no plan (a variadic input)."""
        assert self.op is not None
        names = inspect.signature(self.fn).bind_partial(*self.args, **self.tensors).arguments
        refs = tuple(names.get(n) for n in self.op._in_names)
        fk = None if any(isinstance(r, list) for r in refs) else \
            _fast_key(self.op, self._arguments(args, tensors, out, stream))
        if fk is None:
            self.bind_failures += 1
            return None
        present = tuple(r for r in refs if r is not None)
        return (fk[0], present, tuple(env[r.key]._sig for r in present), out._sig)

    def _bind(self, binding: Tuple[Any, ...], stream: Stream) -> None:
        """After that call: binds the plan it left to the step for `stream`."""
        key, refs, sigs, out_sig = binding
        plan = _plans().get(key)
        if plan is not None and plan.usable(stream) and not plan.allocs and \
                plan.given_at == 0:
            self.bound[id(stream)] = _Bound(plan, refs, sigs, out_sig, _core._epoch)
        else:
            self.bind_failures += 1

    def _run_bound(self, b: _Bound, env: _Env, stream: Stream, pool: _Pool) -> bool:
        """The step's call through its bound plan: False (nothing done) when the run's values
        are not those the plan was made for, or the plan cannot serve the call now."""
        plan = b.plan
        if b.epoch != _core._epoch or not plan.usable(stream):
            del self.bound[id(stream)]
            return False
        generation = _core._generation
        addrs: List[Any] = []
        for r, sig in zip(b.refs, b.sigs):
            x = env[r.key]
            p = x.ptr
            if x._sig != sig or x._generation != generation or (p is None and x.nbytes):
                return False
            addrs.append((p, x.byte_offset))
        out = pool.buffer(stream.device, self.shapes[0], self.dtypes[0], self.nbytes[0])
        if out._sig != b.out_sig:
            pool.put(out)
            return False
        addrs.append((out.ptr, out.byte_offset))
        status = plan.execute_at(addrs)
        if status:
            assert self.op is not None
            args, tensors = self._call_args(env)
            raise self.op._error(status, self._arguments(args, tensors, out, stream),
                                 stream.device, True)
        view = self.out_views[0]
        env[self.outputs[0]] = out if view is None else _as(out, view)
        return True


class _ViewStep(_Step):
    """Reshape, Flatten, Squeeze, Unsqueeze: the same memory with another shape."""
    owns_outputs = False

    def __init__(self, src: str, dst: str, shape: Optional[Tuple[int, ...]]):
        self.inputs, self.outputs, self.shape = [src], [dst], shape

    def run(self, env: _Env, stream: Stream, pool: _Pool) -> None:
        x = env[self.inputs[0]]
        env[self.outputs[0]] = x if self.shape is None else _as(x, self.shape)


class _SplitViewStep(_Step):
    """Split along an axis with nothing but unit dimensions before it: each part is a
    contiguous range of the (compact) input, so the parts are views of it."""
    owns_outputs = False

    def __init__(self, src: str, dsts: Sequence[str], shapes: Sequence[Tuple[int, ...]]):
        self.inputs, self.outputs = [src], list(dsts)
        self.shapes = [tuple(s) for s in shapes]
        self.offsets = [0]
        for shp in self.shapes[:-1]:
            self.offsets.append(self.offsets[-1] + int(np.prod(shp, dtype=np.int64)))

    def run(self, env: _Env, stream: Stream, pool: _Pool) -> None:
        x = env[self.inputs[0]]
        for name, shape, offset in zip(self.outputs, self.shapes, self.offsets):
            env[name] = x._compact_view(shape, _strides(shape), offset)


class _ExpandStep(_Step):
    """Expand: a copy of a view whose broadcast dimensions have stride 0."""

    def __init__(self, src: str, dst: str, in_shape: Tuple[int, ...],
                 shape: Tuple[int, ...], dtype: str):
        self.inputs, self.outputs = [src], [dst]
        self.in_shape, self.shape, self.dtype = in_shape, shape, dtype
        pad = (1,) * (len(shape) - len(in_shape)) + in_shape
        compact = [int(np.prod(pad[i + 1:], dtype=np.int64)) for i in range(len(pad))]
        self.strides = tuple(0 if d == 1 and t != 1 else s
                             for d, t, s in zip(pad, shape, compact))

    def check(self, dev: Device, infos: Dict[str, _Info]) -> Optional[str]:
        x = np.empty(self.in_shape, dtype=self.dtype)
        return _supported(_ops.copy, np.broadcast_to(x, self.shape), device=dev)

    def run(self, env: _Env, stream: Stream, pool: _Pool) -> None:
        v = env[self.inputs[0]].view(self.shape, 0, self.strides)
        out = pool.take(self.shape, self.dtype, _nbytes(self.shape, self.dtype))
        env[self.outputs[0]] = _ops.copy(v, out=out, stream=stream)


class _HardSigmoidStep(_Step):
    """HardSigmoid, y = max(0, min(1, alpha x + beta)), and HardSwish, y = x HardSigmoid(x)
    with alpha = 1/6 and beta = 1/2 (ONNX), as nnplug calls writing the output's buffer in
    place: fill (a one-element tensor of beta), scale, binary add, clip, and for HardSwish a
    binary multiply by x. alpha x + beta rounds twice in the input's dtype, as ONNX's formula
    written out."""

    def __init__(self, src: str, dst: str, shape: Tuple[int, ...], dtype: str, alpha: float,
                 beta: float, swish: bool):
        self.inputs, self.outputs = [src], [dst]
        self.shape, self.dtype = shape, dtype
        self.alpha, self.beta, self.swish = alpha, beta, swish
        self.nbytes, self.nbytes_c = _nbytes(shape, dtype), _nbytes((1,), dtype)

    def check(self, dev: Device, infos: Dict[str, _Info]) -> Optional[str]:
        x, c = np.empty(self.shape, self.dtype), np.empty((1,), self.dtype)
        calls: List[Tuple[Callable[..., Any], Tuple[Any, ...], Dict[str, Any]]] = [
            (_ops.fill, (), dict(out_shape=[1], dtype=self.dtype, value=self.beta)),
            (_ops.scale, (x,), dict(alpha=self.alpha)),
            (_ops.binary, (x, c), dict(op=BinaryOp.ADD)),
            (_ops.clip, (x,), dict(min=0.0, max=1.0))]
        if self.swish:
            calls.append((_ops.binary, (x, x), dict(op=BinaryOp.MUL)))
        for fn, args, kw in calls:
            why = _supported(fn, *args, **kw, device=dev)
            if why is not None:
                return why
        return None

    def run(self, env: _Env, stream: Stream, pool: _Pool) -> None:
        x = env[self.inputs[0]]
        y = pool.buffer(stream.device, self.shape, self.dtype, self.nbytes)
        c = pool.buffer(stream.device, (1,), self.dtype, self.nbytes_c)
        _ops.fill(value=self.beta, out=c, stream=stream)
        _ops.scale(x, alpha=self.alpha, out=y, stream=stream)
        _ops.binary(y, c, op=BinaryOp.ADD, out=y, stream=stream)
        _ops.clip(y, min=0.0, max=1.0, out=y, stream=stream)
        if self.swish:
            _ops.binary(x, y, op=BinaryOp.MUL, out=y, stream=stream)
        pool.put(c)  # its last reader is queued: stream order makes reuse safe
        env[self.outputs[0]] = y


class _PadStep(_Step):
    """Pad in constant mode (ONNX): the output filled with the value, then the input copied into
    the output's interior, a strided view of it (nnplug's copy takes any strides). A negative pad
    crops: the copy then reads a strided view of the input."""

    def __init__(self, src: str, dst: str, in_shape: Tuple[int, ...],
                 out_shape: Tuple[int, ...], dtype: str, begins: Sequence[int], value: float):
        self.inputs, self.outputs = [src], [dst]
        self.out_shape, self.dtype, self.value = out_shape, dtype, value
        self.nbytes = _nbytes(out_shape, dtype)
        in_st, out_st = _compact_strides(in_shape), _compact_strides(out_shape)
        self.in_strides, self.out_strides = in_st, out_st
        crop = [max(-b, 0) for b in begins]  # input elements a negative begin pad drops
        # the copied block: the input's elements that land in the output
        self.part = tuple(max(min(i - c, o - max(b, 0)), 0)
                          for i, o, b, c in zip(in_shape, out_shape, begins, crop))
        self.src_offset = sum(c * s for c, s in zip(crop, in_st))
        self.dst_offset = sum(max(b, 0) * s for b, s in zip(begins, out_st))
        self.copies = all(d > 0 for d in self.part)

    def check(self, dev: Device, infos: Dict[str, _Info]) -> Optional[str]:
        why = _supported(_ops.fill, out_shape=list(self.out_shape), dtype=self.dtype,
                         value=self.value, device=dev)
        if why is None and self.copies:
            why = _supported(_ops.copy, np.empty(self.part, self.dtype), device=dev)
        return why

    def run(self, env: _Env, stream: Stream, pool: _Pool) -> None:
        x = env[self.inputs[0]]
        y = pool.buffer(stream.device, self.out_shape, self.dtype, self.nbytes)
        _ops.fill(value=self.value, out=y, stream=stream)
        if self.copies:
            _ops.copy(x.view(self.part, self.src_offset, self.in_strides),
                      out=y.view(self.part, self.dst_offset, self.out_strides), stream=stream)
        env[self.outputs[0]] = y
