"""nnplug._array — DeviceArray, an array in the memory of an nnplug device, with the dtype
and shape helpers it uses, and the conversion of array-like objects (numpy arrays, DLPack
producers and capsules, DeviceArrays) to a DLTensor (as_dltensor) and to a DeviceArray
(asarray).
"""
from ctypes import byref, c_void_p
from typing import Any, Dict, Optional, Sequence, Tuple

from . import _abi, _core
from ._core import Device, Error, check, device, device_for_dldevice
from ._dlpack import _export_capsule, _from_capsule, _Held, _make_dltensor
from ._lib import lib

_lookup_device = device  # for functions whose `device` argument shadows device()


# ------------------------------------------------------------------------- dtypes --
_DTYPES = {  # numpy dtype name -> (DLDataTypeCode, bits)
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "int8": (0, 8),
    "int16": (0, 16), "int32": (0, 32), "int64": (0, 64), "uint8": (1, 8), "uint16": (1, 16),
    "uint32": (1, 32), "uint64": (1, 64),
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}
_DTYPE_NAMES[(4, 16)] = "bfloat16"
_MAX_BYTES = 2**63 - 1  # the most bytes an array may span (int64 byte offsets in DLPack)


def _dtype_code(dtype: Any) -> Tuple[int, int]:
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
    name = name.replace("torch.", "")
    if name == "bfloat16":
        return (4, 16)
    try:
        return _DTYPES[name]
    except KeyError:
        raise Error(_abi.Status.INVALID_ARGUMENT, f"dtype {name} has no DLPack mapping "
                    f"(supported: {', '.join(list(_DTYPES) + ['bfloat16'])})") from None


def _shape_tuple(shape: Any, what: str) -> Tuple[int, ...]:
    import operator
    if isinstance(shape, (int,)) or hasattr(shape, "__index__"):
        shape = (shape,)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise Error(_abi.Status.INVALID_ARGUMENT,
                    f"{what}: a shape is a sequence of integers, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise Error(_abi.Status.INVALID_ARGUMENT, f"{what}: negative dimension in {dims}")
    if any(d > 2**63 - 1 for d in dims):  # DLPack's int64_t: a larger value would wrap
        raise Error(_abi.Status.INVALID_ARGUMENT,
                    f"{what}: {dims} has a value above 2**63 - 1 (int64)")
    if len(dims) > _abi.MAX_DIMS:
        raise Error(_abi.Status.INVALID_ARGUMENT,
                    f"{what}: rank {len(dims)} exceeds NNP_MAX_DIMS = {_abi.MAX_DIMS}")
    return dims


def _compact_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


# --------------------------------------------------------------------- device memory --
class DeviceArray:
    """An array in the memory of an nnplug device: allocated with nnp_malloc (Device.empty,
    zeros, to_device; freed with nnp_free when the last array using it is garbage-collected),
    a view of one (view, reshape, flatten, T, share the memory), or memory of another library
    taken without a copy (nnplug.asarray of a DLPack producer, kept alive as long as needed).

    shape and strides are in elements (DLPack's and PyTorch's convention; numpy's strides are
    bytes); dtype is a numpy dtype name ("float32"; "bfloat16" has no numpy type). Pass it to
    any op; copy it to the host with .numpy(); hand it to PyTorch or numpy without a copy with
    torch.from_dlpack(a) / numpy.from_dlpack(a) (host-memory devices for numpy)."""

    def __init__(self, dev: Any, shape: Any, dtype: Any = "float32"):
        self.device = device(dev)
        self.shape = _shape_tuple(shape, "DeviceArray")
        self.dtype = _dtype_name_of(dtype)
        self._dltype = _dtype_code(self.dtype)
        self.itemsize = self._dltype[1] // 8
        self.strides = _compact_strides(self.shape)
        self.size = 1
        for d in self.shape:
            self.size *= d
        nbytes = self.size * self.itemsize
        if nbytes > _MAX_BYTES:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"DeviceArray: shape {self.shape} of {self.dtype} is {nbytes} bytes, "
                        f"more than the {_MAX_BYTES} an array may span")
        self.nbytes = nbytes
        self.byte_offset = 0
        self._generation = _core._generation
        self._base: Any = None  # what owns the memory when this array does not
        self._span = nbytes  # bytes addressable from ptr (bounds of views)
        ptr = c_void_p()
        if nbytes:
            check(lib().nnp_malloc(self.device.handle, nbytes, byref(ptr)))
        self.ptr: Optional[int] = ptr.value
        self._owns = bool(nbytes)
        self._sig = (0, self.shape, self.strides, self.dtype, self.device._handle.value)

    @classmethod
    def _wrap(cls, dev: "Device", ptr: Optional[int], shape: Tuple[int, ...], dtype: str,
              strides: Tuple[int, ...], byte_offset: int, span: int, base: Any) -> "DeviceArray":
        a = cls.__new__(cls)
        a.device, a.shape, a.dtype = dev, shape, dtype
        a._dltype = _dtype_code(dtype)
        a.itemsize = a._dltype[1] // 8
        a.strides = strides
        a.size = 1
        for d in shape:
            a.size *= d
        a.nbytes = a.size * a.itemsize
        a.byte_offset, a._span, a._base = byte_offset, span, base
        a._generation = _core._generation
        a.ptr, a._owns = ptr, False
        a._sig = (0, shape, strides, dtype, dev._handle.value)
        return a

    @staticmethod
    def _fresh_attrs(dev: "Device", shape: Tuple[int, ...], dtype: str) -> Dict[str, Any]:
        """The attributes of a new compact array of that shape and dtype on dev, but its
        memory: computed once for _fresh (an op call's plan allocates its outputs so)."""
        dltype = _dtype_code(dtype)
        size = 1
        for d in shape:
            size *= d
        strides = _compact_strides(shape)
        nbytes = size * dltype[1] // 8
        return dict(device=dev, shape=shape, dtype=dtype, _dltype=dltype,
                    itemsize=dltype[1] // 8, strides=strides, size=size, nbytes=nbytes,
                    byte_offset=0, _span=nbytes, _base=None, _generation=_core._generation,
                    ptr=None, _owns=False, _sig=(0, shape, strides, dtype, dev._handle.value))

    @classmethod
    def _fresh(cls, attrs: Dict[str, Any]) -> "DeviceArray":
        """A new array with the attributes of _fresh_attrs and memory from nnp_malloc."""
        a = cls.__new__(cls)
        a.__dict__.update(attrs)
        nbytes = attrs["nbytes"]
        if nbytes:
            ptr = c_void_p()
            status = lib().nnp_malloc(attrs["device"]._handle, nbytes, byref(ptr))
            if status:
                check(status)
            a.ptr, a._owns = ptr.value, True
        return a

    # -- properties -----------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """Row-major compact (dimensions of extent 1 may have any stride; an array without
        elements is contiguous whatever its strides, as numpy says)."""
        c = self.__dict__.get("_contiguous")
        if c is None:
            c = self._contiguous = 0 in self.shape or all(d == 1 or st == cs for d, st, cs in zip(
                self.shape, self.strides, _compact_strides(self.shape)))
        return c

    @property
    def T(self) -> "DeviceArray":
        """The transpose as a view (reversed shape and strides), as numpy's .T."""
        return self.view(self.shape[::-1], 0, self.strides[::-1])

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    # -- arithmetic -----------------------------------------------------------------------
    # a + b, a - b, a * b, a / b, a ** b with another DeviceArray, a numpy array or a Python
    # or numpy scalar (a 0-d tensor of this array's dtype), numpy broadcasting: nnplug.binary
    # on this array's device (the result is a DeviceArray there); a += b and the others write
    # into a (out=a: the broadcast shape must be a's). Other operands: NotImplemented (so
    # Python raises TypeError, or tries the other operand's method).
    def _binary(self, other: Any, op: str, reverse: bool = False, inplace: bool = False
                ) -> Any:
        if not _is_operand(other):
            return NotImplemented
        from .ops import binary
        a, b = (other, self) if reverse else (self, other)
        return binary(a, b, op=op, out=self if inplace else None, device=self.device)

    def __add__(self, other: Any) -> Any:
        return self._binary(other, "add")

    def __radd__(self, other: Any) -> Any:
        return self._binary(other, "add", reverse=True)

    def __iadd__(self, other: Any) -> Any:
        return self._binary(other, "add", inplace=True)

    def __sub__(self, other: Any) -> Any:
        return self._binary(other, "sub")

    def __rsub__(self, other: Any) -> Any:
        return self._binary(other, "sub", reverse=True)

    def __isub__(self, other: Any) -> Any:
        return self._binary(other, "sub", inplace=True)

    def __mul__(self, other: Any) -> Any:
        return self._binary(other, "mul")

    def __rmul__(self, other: Any) -> Any:
        return self._binary(other, "mul", reverse=True)

    def __imul__(self, other: Any) -> Any:
        return self._binary(other, "mul", inplace=True)

    def __truediv__(self, other: Any) -> Any:
        return self._binary(other, "div")

    def __rtruediv__(self, other: Any) -> Any:
        return self._binary(other, "div", reverse=True)

    def __itruediv__(self, other: Any) -> Any:
        return self._binary(other, "div", inplace=True)

    def __pow__(self, other: Any) -> Any:
        return self._binary(other, "pow")

    def __rpow__(self, other: Any) -> Any:
        return self._binary(other, "pow", reverse=True)

    def __ipow__(self, other: Any) -> Any:
        return self._binary(other, "pow", inplace=True)

    def __neg__(self) -> Any:
        return self._binary(-1, "mul")

    # -- views ----------------------------------------------------------------------------
    def view(self, shape: Any, offset: int = 0, strides: Optional[Sequence[int]] = None
             ) -> "DeviceArray":
        """A view of `shape` starting `offset` elements after this array's first element, with
        `strides` in elements (>= 0; default compact), e.g. a slice of rows of a resident data
        set, or one token of every sequence. Every element it addresses must lie in the memory
        this array may address. It shares the memory and keeps it alive."""
        shape = _shape_tuple(shape, "view")
        if strides is None:
            st = _compact_strides(shape)
        else:
            st = _shape_tuple(strides, "view strides")
            if len(st) != len(shape):
                raise Error(_abi.Status.INVALID_ARGUMENT,
                            f"view: {len(st)} strides for a shape of rank {len(shape)}")
        import operator
        offset = operator.index(offset)
        n = 1
        for d in shape:
            n *= d
        last = sum((d - 1) * s for d, s in zip(shape, st)) if n else -1
        start = self.byte_offset + offset * self.itemsize
        end = start + (last + 1) * self.itemsize if n else start
        if offset < 0 or start < 0 or end > self._span or end > _MAX_BYTES:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"view {shape} with strides {st} at offset {offset} addresses bytes "
                        f"[{start}, {end}) of memory that holds {self._span}")
        return DeviceArray._wrap(self.device, self.ptr, shape, self.dtype, st, start,
                                 self._span, self if self._owns else self._base)

    def _compact_view(self, shape: Tuple[int, ...], strides: Tuple[int, ...],
                      offset: int = 0) -> "DeviceArray":
        """view(shape, offset) without its checks, for callers that know the view lies in
        this array's memory and that `strides` are shape's compact strides (nnplug.onnx's
        plans, whose shapes were checked when they were made)."""
        return DeviceArray._wrap(self.device, self.ptr, shape, self.dtype, strides,
                                 self.byte_offset + offset * self.itemsize, self._span,
                                 self if self._owns else self._base)

    def reshape(self, *shape: Any) -> "DeviceArray":
        """The same elements in another shape (one dimension may be -1), as a view; needs a
        contiguous array (copy a strided one with nnplug.copy first)."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        dims = list(shape)
        if dims.count(-1) > 1:
            raise Error(_abi.Status.INVALID_ARGUMENT, f"reshape {tuple(dims)}: at most one -1")
        if -1 in dims:
            known = 1
            for d in dims:
                known *= d if d != -1 else 1
            if known == 0 or self.size % known:
                raise Error(_abi.Status.INVALID_ARGUMENT,
                            f"reshape {tuple(dims)}: cannot infer -1 for {self.size} elements")
            dims[dims.index(-1)] = self.size // known
        new = _shape_tuple(dims, "reshape")
        n = 1
        for d in new:
            n *= d
        if n != self.size:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"reshape: {self.shape} has {self.size} elements, {new} has {n}")
        if not self.is_contiguous:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"reshape: the array (strides {self.strides}) is not contiguous")
        return self.view(new, 0)

    def flatten(self) -> "DeviceArray":
        """A 1-D view (contiguous arrays only)."""
        return self.reshape(-1)

    # -- host copies ----------------------------------------------------------------------
    def _data(self) -> Optional[int]:
        if self.nbytes and (self.ptr is None or self._generation != _core._generation):
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        "DeviceArray was freed, or belongs to a session ended by "
                        "nnplug.shutdown()")
        return None if self.ptr is None else self.ptr + self.byte_offset

    def numpy(self) -> Any:
        """A host copy as a numpy array (synchronous); strided views are copied compact."""
        import numpy as np
        data = self._data()
        out = np.empty(self.shape, dtype=self.dtype)
        if not self.nbytes:
            return out
        if self.is_contiguous:
            check(lib().nnp_memcpy(None, c_void_p(out.ctypes.data), self.device.handle,
                                   c_void_p(data), self.nbytes))
            return out
        last = sum((d - 1) * s for d, s in zip(self.shape, self.strides))
        span = np.empty(last + 1, dtype=self.dtype)
        check(lib().nnp_memcpy(None, c_void_p(span.ctypes.data), self.device.handle,
                               c_void_p(data), span.nbytes))
        view = np.lib.stride_tricks.as_strided(
            span, self.shape, tuple(s * self.itemsize for s in self.strides))
        out[...] = view
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def copy_from(self, array: Any) -> "DeviceArray":
        """Copies a host array of the same number of elements in (synchronous; contiguous
        arrays only)."""
        import numpy as np
        if not self.is_contiguous:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        "copy_from: the array is a strided view; copy into a contiguous one")
        host = np.ascontiguousarray(array, dtype=self.dtype)
        if host.size != self.size:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"copy_from: {host.size} elements into an array of {self.size}")
        data = self._data()
        if self.nbytes:
            check(lib().nnp_memcpy(self.device.handle, c_void_p(data), None,
                                   c_void_p(host.ctypes.data), self.nbytes))
        return self

    # -- DLPack ---------------------------------------------------------------------------
    def dltensor(self) -> "_Held":
        """The DLTensor of this array (built once: shape, strides and memory never change)."""
        self._data()  # refuses a freed array
        h = self.__dict__.get("_held")
        if h is None:
            h = _make_dltensor(self.ptr, self.device.dldevice, self._dltype, self.shape,
                               None if self.is_contiguous else self.strides)
            h.tensor.byte_offset = self.byte_offset
            self._held = h
        return h

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self.device.dldevice

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        """A DLPack 0.x capsule ("dltensor") of this array: the consumer shares the memory
        and keeps this array alive until it calls the deleter. Ops queued on nnplug streams
        must have finished (synchronize) before the consumer reads. copy=True is refused."""
        if copy:
            raise BufferError("nnplug.DeviceArray.__dlpack__: copy=True is not supported")
        if dl_device is not None and tuple(dl_device) != self.device.dldevice:
            raise BufferError(f"nnplug.DeviceArray.__dlpack__: the array lives on DLPack device "
                              f"{self.device.dldevice}, not {tuple(dl_device)}")
        return _export_capsule(self)

    # -- lifetime -------------------------------------------------------------------------
    def free(self) -> None:
        """Frees the memory now (arrays that own it only; views and borrowed memory are
        released with the objects)."""
        if self._owns and self.ptr and self._generation == _core._generation:
            p, self.ptr = self.ptr, None
            check(lib().nnp_free(self.device.handle, c_void_p(p)))
        self.ptr = None

    def __del__(self) -> None:
        try:
            if self.__dict__.get("_owns") and self.ptr and self._generation == _core._generation:
                p, self.ptr = self.ptr, None
                lib().nnp_free(self.device._handle, p)  # (free(), without its checks)
        except Exception:  # noqa: BLE001 — never raise from a finaliser
            pass

    def __repr__(self) -> str:
        view = "" if self._owns else ", view"
        return (f"<nnplug.DeviceArray {self.shape} {self.dtype} on {self.device.name}"
                f"{'' if self.is_contiguous else f', strides {self.strides}'}{view}>")


def _is_operand(x: Any) -> bool:
    """Whether DeviceArray arithmetic takes x: a DeviceArray, a numpy array or a real scalar."""
    import numbers
    if isinstance(x, (DeviceArray, numbers.Real)):
        return True
    import numpy as np
    return isinstance(x, (np.ndarray, np.generic)) and not isinstance(x, np.complexfloating)


def _dtype_name_of(dtype: Any) -> str:
    if isinstance(dtype, str):
        name = dtype
    else:
        name = getattr(dtype, "name", None) or str(dtype)
    name = name.replace("torch.", "")
    if name not in _DTYPES and name != "bfloat16":
        try:
            import numpy as np
            name = np.dtype(dtype).name
        except TypeError:
            pass
    _dtype_code(name)
    return name


# ------------------------------------------------------------ array-like -> DLTensor --
def as_dltensor(obj: Any) -> _Held:
    """Describes an array-like as a DLTensor without copying: an nnplug.DeviceArray, a numpy
    array (host memory: any CPU device), an object with __dlpack__ (PyTorch, CuPy, JAX), or a
    DLPack capsule. Returns a holder whose .tensor is the DLTensor."""
    if isinstance(obj, _Held):
        return obj
    if isinstance(obj, DeviceArray):
        return obj.dltensor()
    np: Any
    try:
        import numpy as np
    except ImportError:  # pragma: no cover — numpy is a soft dependency
        np = None
    if np is not None and isinstance(obj, np.ndarray):
        item = obj.itemsize
        if any(s % item for s in obj.strides):
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        "numpy array strides are not a multiple of its item size")
        strides = None if obj.flags.c_contiguous else [s // item for s in obj.strides]
        h = _make_dltensor(obj.ctypes.data, (1, 0), _dtype_code(obj.dtype), obj.shape, strides)
        h.keep = (h.keep, obj)
        return h
    if hasattr(obj, "__dlpack__"):
        if getattr(obj, "requires_grad", False) and hasattr(obj, "detach"):
            obj = obj.detach()  # PyTorch refuses to export a tensor that requires grad
        try:
            capsule = obj.__dlpack__()
        except (RuntimeError, BufferError, TypeError, ValueError) as e:  # e.g. torch.bool
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"cannot use a {type(obj).__name__} as a tensor: its __dlpack__ "
                        f"refused: {e}") from None
        return _from_capsule(capsule, obj)
    if type(obj).__name__ == "PyCapsule":
        return _from_capsule(obj, None)
    raise Error(_abi.Status.INVALID_ARGUMENT,
                f"cannot use a {type(obj).__name__} as a tensor: pass a numpy array, an "
                "nnplug.DeviceArray or an object with __dlpack__")


def asarray(obj: Any, device: Any = None, dtype: Any = None) -> DeviceArray:
    """An nnplug.DeviceArray over `obj`, without a copy where the memory allows:
      - a DeviceArray: itself (a copy through the host when `device` differs);
      - an object with __dlpack__ (a PyTorch tensor, ...): its memory, shared (zero-copy) on the
        device that uses that memory (or `device`, which must use it): writes by ops show in
        the tensor; the tensor is kept alive;
      - anything numpy.asarray takes: its host memory, shared, on a device that uses host
        memory (cpu, reference), or copied to `device` when that one does not (sim, cuda).
    dtype converts numpy input (a copy when it differs). Raises nnplug.Error."""
    if isinstance(obj, DeviceArray):
        if device is None or _lookup_device(device) == obj.device:
            return obj
        return _lookup_device(device).to_device(obj.numpy())
    dev = None if device is None else _lookup_device(device)
    import numpy as np
    # numpy arrays have __dlpack__ too (numpy >= 1.22) but take the numpy path: a copy for a
    # device that cannot address host memory, and read-only arrays stay usable as inputs
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__") and dtype is None \
            and not isinstance(obj, np.ndarray):
        dl = tuple(int(v) for v in obj.__dlpack_device__())
        if dev is None:
            dev = device_for_dldevice(dl)  # type: ignore[arg-type]
        if dev.dldevice != dl:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"asarray: the tensor lives on DLPack device {dl}; device "
                        f"{dev.name} uses {dev.dldevice}")
        h = as_dltensor(obj)
        t = h.tensor
        shape = tuple(t.shape[i] for i in range(t.ndim))
        strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else \
            _compact_strides(shape)
        dt = _DTYPE_NAMES.get((t.dtype.code, t.dtype.bits))
        if dt is None or t.dtype.lanes != 1:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"asarray: DLPack dtype code {t.dtype.code}, {t.dtype.bits} bits, "
                        f"{t.dtype.lanes} lanes has no nnplug equivalent")
        itemsize = t.dtype.bits // 8
        if any(s < 0 for s in strides):
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"asarray: negative strides {strides} are not supported")
        n = 1
        for d in shape:
            n *= d
        span = t.byte_offset + (sum((d - 1) * s for d, s in zip(shape, strides)) + 1) * \
            itemsize if n else t.byte_offset
        return DeviceArray._wrap(dev, t.data, shape, dt, strides, t.byte_offset, span, h)
    host = np.asarray(obj, dtype=dtype)
    if dev is None:
        dev = device_for_dldevice((int(_abi.DLDeviceType.kDLCPU), 0))
    if not dev.is_cpu:
        return dev.to_device(host)
    item = host.itemsize
    if any(s < 0 or s % item for s in host.strides):
        host = np.ascontiguousarray(host)
    strides = tuple(s // item for s in host.strides)
    last = sum((d - 1) * s for d, s in zip(host.shape, strides)) + 1 if host.size else 0
    return DeviceArray._wrap(dev, host.ctypes.data if host.size else None, host.shape,
                             _dtype_name_of(host.dtype), strides, 0, last * item, host)
