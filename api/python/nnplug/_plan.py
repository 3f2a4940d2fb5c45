"""nnplug._plan — the per-signature call plans of the op functions: a call whose signature
(_fast_key) was seen before on this thread runs through the plan (_Plan) its first call left,
without the conversions and checks of nnplug._call's _Op._run.
"""
import ctypes
import sys
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from . import _abi, _core
from ._array import _DTYPE_NAMES, DeviceArray
from ._core import Device, Error, Stream, check
from ._dlpack import _Held
from ._lib import lib

if TYPE_CHECKING:
    from ._call import _Op


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


def _fast_key(op: "_Op", a: Dict[str, Any]) -> Optional[Tuple[Any, List[Any], bool]]:
    """The call's signature (op, per tensor its kind, shape, strides, dtype and device,
    every other keyword's value and type), the data of its tensors (inputs, then out=: an
    address, or for a DeviceArray its pointer and byte offset), and whether a PyTorch
    tensor requires grad; None when the call cannot use a plan (an argument of another kind,
    a freed or read-only array, a stream= that is not an nnplug.Stream, ...). A call with
    stream= has a signature of its own per stream (its plan queues on that stream and does not
    synchronise, as the full path does)."""
    stream = a["stream"]
    types = _FAST_TYPES
    sig: List[Any] = []
    if stream is not None:
        if type(stream) is not Stream:
            return None
        sig.append((8, id(stream)))  # the plan checks that it is this very stream
    addrs: List[Any] = []
    grad = False
    generation = _core._generation
    try:
        for name in op._in_names:
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
    other = op._other
    if other is None:
        # stream= is in the signature by identity only (above): the key holds no stream
        other = op._other = tuple(n for n in a
                                  if n not in op._in_names and n not in ("out", "stream"))
    vals = [a[n] for n in other]
    kinds = tuple(map(type, vals))
    if op._arrays:
        vals = [(tuple(v), tuple(map(type, v))) if type(v) in (list, tuple) else v
                for v in vals]
    return (op.kind, tuple(sig), tuple(vals), kinds), addrs, grad


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

    def __init__(self, op: "_Op", a: Dict[str, Any], dev: Device, st: Stream, params: Any,
                 objs: List[Any], held_in: List[Optional[_Held]],
                 held_out: List[Optional[_Held]], given: List[Any], wanted: List[bool],
                 like: str, torch_device: Any, explicit_stream: Optional[Stream] = None):
        import numpy as np
        self.busy = False
        self.dev, self.params = dev, params
        # The device's default stream (synchronised after each call, held: it lives as long as
        # the device), or the caller's stream= (not synchronised; held weakly, so that a plan
        # never keeps a stream the caller dropped).
        self.sync = explicit_stream is None
        self._stream = st if self.sync else None
        self._stream_ref = None if self.sync else weakref.ref(st)
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

    def usable(self, stream: Optional[Stream]) -> bool:
        """Whether this plan serves a call with stream= `stream` (None: the default stream):
        not while this thread is in it already (an op called from a finaliser during a call),
        and not when its stream is another, was destroyed or is capturing (the full path
        handles those)."""
        st = self._stream if self._stream_ref is None else self._stream_ref()
        return st is not None and (stream is None or st is stream) and not self.busy and \
            st._handle is self.stream_handle and st._capture_keep is None

    def execute_at(self, addrs: List[Any]) -> int:
        """nnp_op_execute with the tensors at `addrs` (in _fast_key's order: an address, or a
        DeviceArray's pointer and byte offset), every output given (no allocation, no
        synchronisation): its status. For callers that checked themselves that the tensors
        have the signature of this plan (nnplug.onnx's bound steps)."""
        self.busy = True
        try:
            self._patch(addrs)
            status: int = self.execute(self.stream_handle, self.kind, self.pp, self.n_in,
                                       self.arr_in, self.n_out, self.arr_out)
            return status
        finally:
            self.busy = False

    def _patch(self, addrs: List[Any]) -> None:
        for t, p in zip(self.patch, addrs):
            if p.__class__ is tuple:  # a DeviceArray's pointer and byte offset
                t.data, t.byte_offset = p
            else:
                t.data = p

    def call(self, op: "_Op", a: Dict[str, Any], addrs: List[Any]) -> Any:
        self.busy = True
        try:
            self._patch(addrs)
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
                raise op._error(status, a, self.dev, not self.sync)
            if self.sync:
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
