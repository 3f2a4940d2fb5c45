"""nnplug._core — errors, plugins and load records, devices, streams, device memory and the
conversion of array-like objects (numpy arrays, DLPack producers, nnplug arrays) to DLTensor.
"""
import ctypes
import dataclasses
from ctypes import byref, c_int32, c_int64, c_size_t, c_void_p

from . import _abi
from ._lib import lib


class Error(Exception):
    """A failed nnplug call: `status` (nnplug.Status) and libnnplug's `message`."""

    def __init__(self, status, message):
        try:
            status = _abi.Status(status)
        except ValueError:
            pass
        self.status = status
        self.message = message
        name = status.name if isinstance(status, _abi.Status) else str(status)
        super().__init__(f"{name}: {message}")


def check(status):
    """Raises Error(status, last error message) unless status is OK."""
    if status != 0:
        raise Error(status, (lib().nnp_last_error_message() or b"").decode(errors="replace"))


def _s(b):
    return b.decode(errors="replace") if b is not None else ""


def version():
    """libnnplug's version as run, e.g. "0.1.0"."""
    return _s(lib().nnp_version_string())


def status_string(status):
    return _s(lib().nnp_status_string(int(status)))


def op_kind_name(kind):
    """Lower-case name of an op kind ("conv2d_forward"), or None if unknown."""
    name = lib().nnp_op_kind_name(int(kind))
    return None if name is None else _s(name)


# ----------------------------------------------------------------------- load records --
@dataclasses.dataclass(frozen=True)
class LoadRecord:
    """One plugin candidate examined by the loader (nnp_load_record)."""
    path: str
    name: str
    plugin_version: str
    abi_version_major: int
    abi_version_minor: int
    state: _abi.LoadState
    status: _abi.Status
    reason: str
    n_devices: int


def load_plugin(path):
    """Loads the plugin at `path`; returns its name."""
    handle = c_void_p()
    check(lib().nnp_load_plugin(str(path).encode(), byref(handle)))
    return _s(lib().nnp_plugin_name(handle))


def load_records():
    """Every plugin candidate examined so far (loads the default plugins first)."""
    check(lib().nnp_load_default_plugins())
    n = c_size_t(0)
    check(lib().nnp_get_load_records(None, byref(n)))
    recs = (_abi.nnp_load_record * max(n.value, 1))()
    for r in recs:
        r.struct_size = ctypes.sizeof(_abi.nnp_load_record)
    check(lib().nnp_get_load_records(recs, byref(n)))
    out = []
    for r in recs[:n.value]:
        out.append(LoadRecord(_s(r.path), _s(r.name), _s(r.plugin_version), r.abi_version_major,
                              r.abi_version_minor, _abi.LoadState(r.state),
                              _abi.Status(r.status), _s(r.reason), r.n_devices))
    return out


# ---------------------------------------------------------------------------- devices --
_generation = 0  # bumped by shutdown(): handles and memory of older generations are dead


class Device:
    """A device of a loaded plugin. Obtain with nnplug.device(name) or nnplug.devices()."""

    def __init__(self, handle):
        self._handle = c_void_p(handle)
        self._generation = _generation
        props = _abi.nnp_device_props()
        check(lib().nnp_device_get_props(self._handle, byref(props)))
        self.name = _s(props.name)
        self.plugin_name = _s(props.plugin_name)
        self.description = _s(props.description)
        self.device_type = props.device_type
        self.device_id = props.device_id
        self.memory_bytes = props.memory_bytes
        self.auto_priority = props.auto_priority
        self.num_threads = props.num_threads
        dl = _abi.DLDevice()
        check(lib().nnp_device_get_dldevice(self._handle, byref(dl)))
        self.dldevice = (dl.device_type, dl.device_id)
        self._stream = None

    @property
    def handle(self):
        if self._generation != _generation:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"device {self.name} belongs to a session ended by nnplug.shutdown()")
        return self._handle

    @property
    def is_cpu(self):
        return self.dldevice[0] == _abi.DLDeviceType.kDLCPU

    def default_stream(self):
        """The stream ops use when called without stream= (created on first use)."""
        if self._stream is None or self._stream._generation != _generation:
            self._stream = Stream(self)
        return self._stream

    def stream(self):
        """A new stream on this device."""
        return Stream(self)

    def empty(self, shape, dtype="float32"):
        """Uninitialised device memory of that shape and dtype (an nnplug.DeviceArray)."""
        return DeviceArray(self, shape, dtype)

    def zeros(self, shape, dtype="float32"):
        a = DeviceArray(self, shape, dtype)
        if a.nbytes:
            zeros = bytes(a.nbytes)
            check(lib().nnp_memcpy(self.handle, c_void_p(a.ptr), None, zeros, a.nbytes))
        return a

    def to_device(self, array):
        """A DeviceArray holding a copy of a numpy array (or anything numpy.asarray takes)."""
        import numpy as np
        host = np.asarray(array)
        if not host.flags.c_contiguous:  # (ascontiguousarray would make a 0-d array 1-d)
            host = np.ascontiguousarray(host)
        a = DeviceArray(self, host.shape, host.dtype)
        if a.nbytes:
            check(lib().nnp_memcpy(self.handle, c_void_p(a.ptr), None,
                                   c_void_p(host.ctypes.data), a.nbytes))
        return a

    def __eq__(self, other):
        return isinstance(other, Device) and self._handle.value == other._handle.value

    def __hash__(self):
        return hash(self._handle.value)

    def __repr__(self):
        return f"<nnplug.Device {self.name}: {self.description}>"


_devices_by_handle = {}


def _wrap_device(handle):
    key = (_generation, handle)
    dev = _devices_by_handle.get(key)
    if dev is None:
        dev = _devices_by_handle[key] = Device(handle)
    return dev


def devices():
    """Every device of every loaded plugin (loads the default plugins first)."""
    n = c_size_t(0)
    check(lib().nnp_get_devices(None, byref(n)))
    handles = (c_void_p * max(n.value, 1))()
    check(lib().nnp_get_devices(handles, byref(n)))
    return [_wrap_device(h) for h in handles[:n.value]]


def device(name="auto"):
    """The device called `name`: "cpu", "cuda:0", "reference", or "auto" (the best one, or
    $NNPLUG_BACKEND). A Device passes through. Raises Error(NOT_FOUND / UNAVAILABLE)."""
    if isinstance(name, Device):
        return name
    handle = c_void_p()
    check(lib().nnp_get_device(str(name).encode(), byref(handle)))
    return _wrap_device(handle.value)


def shutdown():
    """nnp_shutdown(): frees every stream and allocation and unloads the plugins. Devices,
    streams and DeviceArrays made before become invalid; the library reloads on next use."""
    global _generation
    _generation += 1
    _devices_by_handle.clear()
    check(lib().nnp_shutdown())


# ---------------------------------------------------------------------------- streams --
class Stream:
    """An in-order queue of ops on one device (nnp_stream)."""

    def __init__(self, dev):
        self.device = device(dev)
        self._generation = _generation
        self._handle = c_void_p()
        check(lib().nnp_stream_create(self.device.handle, byref(self._handle)))

    @property
    def handle(self):
        if self._generation != _generation or not self._handle:
            raise Error(_abi.Status.INVALID_ARGUMENT, "stream is destroyed")
        return self._handle

    def synchronize(self):
        check(lib().nnp_stream_synchronize(self.handle))

    def set_attribute(self, attribute, value):
        check(lib().nnp_stream_set_attribute(self.handle, int(attribute), int(value)))

    def destroy(self):
        if self._handle and self._generation == _generation:
            h, self._handle = self._handle, c_void_p()
            check(lib().nnp_stream_destroy(h))

    def __del__(self):
        try:
            self.destroy()
        except Exception:  # noqa: BLE001 — never raise from a finaliser
            pass


# ------------------------------------------------------------------------- dtypes --
_DTYPES = {  # numpy dtype name -> (DLDataTypeCode, bits)
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "int8": (0, 8),
    "int16": (0, 16), "int32": (0, 32), "int64": (0, 64), "uint8": (1, 8), "uint16": (1, 16),
    "uint32": (1, 32), "uint64": (1, 64),
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}
_DTYPE_NAMES[(4, 16)] = "bfloat16"


def _dtype_code(dtype):
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
    if name == "bfloat16":
        return (4, 16)
    try:
        return _DTYPES[name]
    except KeyError:
        raise Error(_abi.Status.INVALID_ARGUMENT, f"dtype {name} has no DLPack mapping") from None


# --------------------------------------------------------------------- device memory --
class DeviceArray:
    """A compact row-major array in device memory allocated with nnp_malloc (freed with
    nnp_free when garbage-collected). Pass it to any op; copy back with .numpy()."""

    def __init__(self, dev, shape, dtype="float32"):
        self.device = device(dev)
        self.shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in self.shape):
            raise Error(_abi.Status.INVALID_ARGUMENT, f"negative dimension in {self.shape}")
        self.dtype = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
        code, bits = _dtype_code(self.dtype)
        self._dltype = (code, bits)
        self.size = 1
        for d in self.shape:
            self.size *= d
        self.nbytes = self.size * bits // 8
        self._generation = _generation
        ptr = c_void_p()
        if self.nbytes:
            check(lib().nnp_malloc(self.device.handle, self.nbytes, byref(ptr)))
        self.ptr = ptr.value

    def dltensor(self):
        return _make_dltensor(self.ptr, self.device.dldevice, self._dltype, self.shape, None)

    def view(self, shape, offset=0, strides=None):
        """A DLTensor view (for op arguments) of `shape` starting `offset` elements in, e.g.
        a slice of rows of a resident data set; with `strides` (in elements, >= 0) a strided
        view, which NNP_OP_COPY reads and writes (e.g. one token of every sequence). Every
        element it addresses must lie inside this array. It keeps this array alive."""
        shape = tuple(int(d) for d in shape)
        if strides is not None:
            strides = tuple(int(st) for st in strides)
            if len(strides) != len(shape) or any(st < 0 for st in strides):
                raise Error(_abi.Status.INVALID_ARGUMENT,
                            f"view strides {strides} must be {len(shape)} values >= 0")
        n = 1
        for d in shape:
            n *= d
        # one past the last element addressed
        end = offset + (n if strides is None else
                        (1 + sum((d - 1) * st for d, st in zip(shape, strides)) if n else 0))
        if offset < 0 or any(d < 0 for d in shape) or end > self.size:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"view {shape} at offset {offset} exceeds an array of {self.size}")
        h = _make_dltensor(self.ptr, self.device.dldevice, self._dltype, shape, strides)
        h.tensor.byte_offset = offset * self._dltype[1] // 8
        h.keep = (h.keep, self)
        h.device_array = self
        return h

    def numpy(self):
        """A host copy as a numpy array (synchronous)."""
        import numpy as np
        out = np.empty(self.shape, dtype=self.dtype)
        if self.nbytes:
            check(lib().nnp_memcpy(None, c_void_p(out.ctypes.data), self.device.handle,
                                   c_void_p(self.ptr), self.nbytes))
        return out

    def copy_from(self, array):
        """Copies a host array of the same size in (synchronous)."""
        import numpy as np
        host = np.ascontiguousarray(array, dtype=self.dtype)
        if host.size != self.size:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"copy_from: {host.size} elements into an array of {self.size}")
        if self.nbytes:
            check(lib().nnp_memcpy(self.device.handle, c_void_p(self.ptr), None,
                                   c_void_p(host.ctypes.data), self.nbytes))
        return self

    def free(self):
        if self.ptr and self._generation == _generation:
            p, self.ptr = self.ptr, None
            check(lib().nnp_free(self.device.handle, c_void_p(p)))
        self.ptr = None

    def __del__(self):
        try:
            self.free()
        except Exception:  # noqa: BLE001 — never raise from a finaliser
            pass

    def __repr__(self):
        return f"<nnplug.DeviceArray {self.shape} {self.dtype} on {self.device.name}>"


# ------------------------------------------------------------ array-like -> DLTensor --
class _Held:
    """A DLTensor and whatever keeps its memory and shape arrays alive."""

    def __init__(self, tensor, keep):
        self.tensor = tensor
        self.keep = keep
        self.device_array = None  # set by DeviceArray.view()

    @property
    def dldevice(self):
        return (self.tensor.device.device_type, self.tensor.device.device_id)


def _make_dltensor(ptr, dldevice, dltype, shape, strides):
    ndim = len(shape)
    shape_arr = (c_int64 * max(ndim, 1))(*shape)
    strides_arr = None if strides is None else (c_int64 * max(ndim, 1))(*strides)
    t = _abi.DLTensor()
    t.data = ptr
    t.device = _abi.DLDevice(*dldevice)
    t.ndim = ndim
    t.dtype = _abi.DLDataType(dltype[0], dltype[1], 1)
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(c_int64))
    t.strides = None if strides_arr is None else ctypes.cast(strides_arr,
                                                             ctypes.POINTER(c_int64))
    t.byte_offset = 0
    return _Held(t, (shape_arr, strides_arr))


_pycapsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_pycapsule_get_pointer.restype = c_void_p
_pycapsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_pycapsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_pycapsule_is_valid.restype = ctypes.c_int
_pycapsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _from_capsule(capsule, owner):
    """DLTensor of a DLPack capsule. The capsule stays named "dltensor" and is kept alive with
    the result, so the producer's deleter runs when both are garbage-collected (the borrowing
    use of DLPack: nnplug never takes ownership)."""
    if not _pycapsule_is_valid(capsule, b"dltensor"):
        raise Error(_abi.Status.INVALID_ARGUMENT,
                    "not a DLPack capsule named 'dltensor' (already consumed?)")
    ptr = _pycapsule_get_pointer(capsule, b"dltensor")
    managed = _abi.DLManagedTensor.from_address(ptr)
    return _Held(managed.dl_tensor, (capsule, owner))


def as_dltensor(obj):
    """Describes an array-like as a DLTensor without copying: an nnplug.DeviceArray, a numpy
    array (host memory: any CPU device), an object with __dlpack__ (PyTorch, CuPy, JAX), or a
    DLPack capsule. Returns a holder whose .tensor is the DLTensor."""
    if isinstance(obj, _Held):
        return obj
    if isinstance(obj, DeviceArray):
        if obj.ptr is None and obj.nbytes:
            raise Error(_abi.Status.INVALID_ARGUMENT, "DeviceArray was freed")
        return obj.dltensor()
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
        return _from_capsule(obj.__dlpack__(), obj)
    if type(obj).__name__ == "PyCapsule":
        return _from_capsule(obj, None)
    raise Error(_abi.Status.INVALID_ARGUMENT,
                f"cannot use a {type(obj).__name__} as a tensor: pass a numpy array, an "
                "nnplug.DeviceArray or an object with __dlpack__")


def memcpy(dst, src, nbytes, dst_device=None, src_device=None, stream=None):
    """nnp_memcpy / nnp_memcpy_async on raw pointers (ints); a None device is host memory."""
    d = dst_device.handle if dst_device is not None else None
    s = src_device.handle if src_device is not None else None
    if stream is None:
        check(lib().nnp_memcpy(d, c_void_p(dst), s, c_void_p(src), nbytes))
    else:
        check(lib().nnp_memcpy_async(stream.handle, d, c_void_p(dst), s, c_void_p(src), nbytes))


def get_version():
    """(major, minor, patch) of libnnplug as run."""
    vals = [c_int32(), c_int32(), c_int32()]
    lib().nnp_get_version(*(byref(v) for v in vals))
    return tuple(v.value for v in vals)
