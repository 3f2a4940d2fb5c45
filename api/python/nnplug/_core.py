"""nnplug._core — errors, plugins and load records, devices, streams and graphs, and raw
memory copies. Device memory as arrays (DeviceArray) is in nnplug._array, DLTensors and
DLPack capsules in nnplug._dlpack.
"""
import contextlib
import ctypes
import dataclasses
from ctypes import byref, c_int32, c_size_t, c_void_p
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Tuple

from . import _abi
from ._lib import lib

if TYPE_CHECKING:
    from ._array import DeviceArray


class Error(Exception):
    """A failed nnplug call: `status` (nnplug.Status) and libnnplug's `message`.

    Constructing Error(status, message) gives the subclass for that status
    (InvalidArgumentError, UnsupportedError, ...), so `except nnplug.Error` catches them all
    and `except nnplug.InvalidArgumentError` (also a ValueError) one kind."""

    def __new__(cls, status: Any = None, message: str = "") -> "Error":
        if cls is Error and status is not None:
            try:
                cls = _ERROR_CLASSES.get(int(status), Error)
            except (TypeError, ValueError):
                pass
        return super().__new__(cls)

    def __init__(self, status: Any, message: str):
        try:
            status = _abi.Status(status)
        except ValueError:
            pass
        self.status = status
        self.message = message
        name = status.name if isinstance(status, _abi.Status) else str(status)
        super().__init__(f"{name}: {message}")

    def __reduce__(self) -> Any:
        return (Error, (int(self.status), self.message))


class InvalidArgumentError(Error, ValueError):
    """INVALID_ARGUMENT: a bad shape, dtype, device, params value or handle."""


class UnsupportedError(Error):
    """UNSUPPORTED: valid, but the device does not implement this op, dtype or case."""


class OutOfMemoryError(Error):
    """OUT_OF_MEMORY: a device or host allocation failed."""


class NotFoundError(Error):
    """NOT_FOUND: no such device or plugin."""


class UnavailableError(Error):
    """UNAVAILABLE: the device or plugin exists but cannot be used (no GPU, missing library)."""


class DeviceError(Error):
    """DEVICE_ERROR: the device failed while running a call."""


_ERROR_CLASSES = {int(_abi.Status.INVALID_ARGUMENT): InvalidArgumentError,
                  int(_abi.Status.UNSUPPORTED): UnsupportedError,
                  int(_abi.Status.OUT_OF_MEMORY): OutOfMemoryError,
                  int(_abi.Status.NOT_FOUND): NotFoundError,
                  int(_abi.Status.UNAVAILABLE): UnavailableError,
                  int(_abi.Status.DEVICE_ERROR): DeviceError}


def check(status: int) -> None:
    """Raises Error(status, last error message) unless status is OK."""
    if status != 0:
        raise Error(status, (lib().nnp_last_error_message() or b"").decode(errors="replace"))


def _s(b: Optional[bytes]) -> str:
    return b.decode(errors="replace") if b is not None else ""


def version() -> str:
    """libnnplug's version as run, e.g. "0.1.0"."""
    return _s(lib().nnp_version_string())


def status_string(status: int) -> str:
    return _s(lib().nnp_status_string(int(status)))


def op_kind_name(kind: int) -> Optional[str]:
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


def load_plugin(path: Any) -> str:
    """Loads the plugin at `path`; returns its name."""
    global _epoch
    handle = c_void_p()
    try:
        check(lib().nnp_load_plugin(str(path).encode(), byref(handle)))
    finally:
        _epoch += 1  # the automatic device may change
    return _s(lib().nnp_plugin_name(handle))


def load_records() -> "List[LoadRecord]":
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
# Bumped by shutdown() and load_plugin(): what the op calls cached (devices chosen, streams,
# call plans of nnplug._plan) is dropped when it changes.
_epoch = 0


def _generation_now() -> int:
    return _generation



class Device:
    """A device of a loaded plugin. Obtain with nnplug.device(name) or nnplug.devices()."""

    def __init__(self, handle: Optional[int]):
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
        self._stream: Optional[Stream] = None

    @property
    def handle(self) -> c_void_p:
        if self._generation != _generation:
            raise Error(_abi.Status.INVALID_ARGUMENT,
                        f"device {self.name} belongs to a session ended by nnplug.shutdown()")
        return self._handle

    @property
    def is_cpu(self) -> bool:
        return self.dldevice[0] == _abi.DLDeviceType.kDLCPU

    def default_stream(self) -> "Stream":
        """The stream ops use when called without stream= (created on first use, and again
        after it was destroyed)."""
        if self._stream is None or self._stream._generation != _generation or \
                not self._stream._handle:
            self._stream = Stream(self)
        return self._stream

    def stream(self) -> "Stream":
        """A new stream on this device."""
        return Stream(self)

    def empty(self, shape: Any, dtype: Any = "float32") -> "DeviceArray":
        """Uninitialised device memory of that shape and dtype (an nnplug.DeviceArray)."""
        from ._array import DeviceArray  # here: nnplug._array imports this module
        return DeviceArray(self, shape, dtype)

    def zeros(self, shape: Any, dtype: Any = "float32") -> "DeviceArray":
        from ._array import DeviceArray  # here: nnplug._array imports this module
        a = DeviceArray(self, shape, dtype)
        if a.nbytes:
            zeros = bytes(a.nbytes)
            check(lib().nnp_memcpy(self.handle, c_void_p(a.ptr), None, zeros, a.nbytes))
        return a

    def to_device(self, array: Any) -> "DeviceArray":
        """A DeviceArray holding a copy of a numpy array (or anything numpy.asarray takes)."""
        import numpy as np
        from ._array import DeviceArray  # here: nnplug._array imports this module
        host = np.asarray(array)
        if not host.flags.c_contiguous:  # (ascontiguousarray would make a 0-d array 1-d)
            host = np.ascontiguousarray(host)
        a = DeviceArray(self, host.shape, host.dtype)
        if a.nbytes:
            check(lib().nnp_memcpy(self.handle, c_void_p(a.ptr), None,
                                   c_void_p(host.ctypes.data), a.nbytes))
        return a

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and self._handle.value == other._handle.value

    def __hash__(self) -> int:
        return hash(self._handle.value)

    def __repr__(self) -> str:
        return f"<nnplug.Device {self.name}: {self.description}>"


_devices_by_handle: Dict[Tuple[int, Optional[int]], "Device"] = {}


def _wrap_device(handle: Optional[int]) -> "Device":
    key = (_generation, handle)
    dev = _devices_by_handle.get(key)
    if dev is None:
        dev = _devices_by_handle[key] = Device(handle)
    return dev


def devices() -> "List[Device]":
    """Every device of every loaded plugin (loads the default plugins first)."""
    n = c_size_t(0)
    check(lib().nnp_get_devices(None, byref(n)))
    handles = (c_void_p * max(n.value, 1))()
    check(lib().nnp_get_devices(handles, byref(n)))
    return [_wrap_device(h) for h in handles[:n.value]]


def device(name: Any = "auto") -> "Device":
    """The device called `name`: "cpu", "cuda:0", "reference", or "auto" (the best one, or
    $NNPLUG_BACKEND). A Device passes through. Raises Error(NOT_FOUND / UNAVAILABLE)."""
    if isinstance(name, Device):
        return name
    handle = c_void_p()
    check(lib().nnp_get_device(str(name).encode(), byref(handle)))
    return _wrap_device(handle.value)


def device_for_dldevice(dl: Tuple[int, int]) -> "Device":
    """The device that ops on memory of DLPack device `dl` run on: the automatic choice if it
    uses that memory, else the matching device of highest auto priority."""
    try:
        best = device("auto")
        if best.dldevice == tuple(dl):
            return best
    except Error:
        pass
    matching = [d for d in devices() if d.dldevice == tuple(dl)]
    if not matching:
        raise Error(_abi.Status.NOT_FOUND,
                    f"no device of a loaded plugin uses memory of DLPack device {tuple(dl)}")
    return max(matching, key=lambda d: d.auto_priority)


def shutdown() -> None:
    """nnp_shutdown(): frees every stream and allocation and unloads the plugins. Devices,
    streams and DeviceArrays made before become invalid; the library reloads on next use."""
    global _generation, _epoch
    _generation += 1
    _epoch += 1
    _devices_by_handle.clear()
    check(lib().nnp_shutdown())


# ---------------------------------------------------------------------------- streams --
class Stream:
    """An in-order queue of ops on one device (nnp_stream)."""

    def __init__(self, dev: Any):
        self.device = device(dev)
        self._generation = _generation
        self._handle = c_void_p()
        # While capturing: every array an op call used (scalars made 0-d arrays, allocated
        # outputs), handed to the graph at end_capture so that what it recorded stays alive.
        self._capture_keep: Optional[List[Any]] = None
        check(lib().nnp_stream_create(self.device.handle, byref(self._handle)))

    @property
    def handle(self) -> c_void_p:
        if self._generation != _generation or not self._handle:
            raise Error(_abi.Status.INVALID_ARGUMENT, "stream is destroyed")
        return self._handle

    def synchronize(self) -> None:
        check(lib().nnp_stream_synchronize(self.handle))

    def set_attribute(self, attribute: int, value: int) -> None:
        check(lib().nnp_stream_set_attribute(self.handle, int(attribute), int(value)))

    @property
    def native_handle(self) -> int:
        """The backend's native handle of this stream as an int (nnp_stream_get_native, ABI
        1.6): cuda's cudaStream_t, for ``torch.cuda.ExternalStream(s.native_handle)`` or
        ``cupy.cuda.ExternalStream``. The plugin owns it; it is valid until the stream is
        destroyed or nnplug.shutdown(). Raises nnplug.Error(UNSUPPORTED) on a backend without
        native streams (cpu, reference, sim)."""
        native = c_void_p()
        check(lib().nnp_stream_get_native(self.handle, byref(native)))
        return int(native.value or 0)

    def destroy(self) -> None:
        if self._handle and self._generation == _generation:
            h, self._handle = self._handle, c_void_p()
            self._capture_keep = None  # destroying a capturing stream discards the capture
            check(lib().nnp_stream_destroy(h))

    def begin_capture(self) -> None:
        """Records the work queued on this stream from now on instead of running it
        (nnp_stream_begin_capture; nnplug.h, "graphs"). The arrays nnplug makes for the
        recorded calls (a Python scalar's 0-d array, an output it allocates) are kept alive by
        the graph."""
        check(lib().nnp_stream_begin_capture(self.handle))
        self._capture_keep = []

    def end_capture(self) -> "Graph":
        """Ends the capture and returns what it recorded (nnp_stream_end_capture)."""
        handle = c_void_p()
        check(lib().nnp_stream_end_capture(self.handle, byref(handle)))
        graph = Graph(handle, self.device)
        graph._keep, self._capture_keep = self._capture_keep or [], None
        return graph

    def _keep_for_capture(self, objs: Iterable[Any]) -> None:
        """After an op call queued on this stream: if it is capturing, the call's arrays live
        as long as the graph."""
        if self._capture_keep is not None:
            self._capture_keep.extend(x for x in objs if x is not None)

    @contextlib.contextmanager
    def capture(self) -> Iterator["Capture"]:
        """``with stream.capture() as cap:`` records the ops queued with ``stream=stream`` in
        the block; ``cap.graph.launch(stream)`` replays them. The graph holds addresses: keep
        the arrays you pass alive (and pass outputs with ``out=`` to read them); the arrays
        nnplug makes for the calls (a Python scalar's 0-d array, an allocated output) live as
        long as the graph. An exception in the block discards the capture."""
        cap = Capture()
        self.begin_capture()
        try:
            yield cap
        except BaseException:
            try:
                self.end_capture().destroy()
            except Error:
                pass
            raise
        cap.graph = self.end_capture()

    def __del__(self) -> None:
        try:
            self.destroy()
        except Exception:  # noqa: BLE001 — never raise from a finaliser
            pass


class Graph:
    """Stream work recorded once and replayed with one call (nnp_graph; nnplug.h, "graphs")."""

    def __init__(self, handle: c_void_p, dev: "Device"):
        self.device = dev
        self._generation = _generation
        self._handle = handle
        self._keep: List[Any] = []  # arrays nnplug made for the recorded calls

    @property
    def handle(self) -> c_void_p:
        if self._generation != _generation or not self._handle:
            raise Error(_abi.Status.INVALID_ARGUMENT, "graph is destroyed")
        return self._handle

    def launch(self, stream: "Stream") -> None:
        """Queues the recorded work on ``stream`` (a stream of the graph's device)."""
        check(lib().nnp_graph_launch(self.handle, stream.handle))

    def destroy(self) -> None:
        if self._handle and self._generation == _generation:
            h, self._handle = self._handle, c_void_p()
            check(lib().nnp_graph_destroy(h))
        self._keep = []

    def __del__(self) -> None:
        try:
            self.destroy()
        except Exception:  # noqa: BLE001 — never raise from a finaliser
            pass


@dataclasses.dataclass
class Capture:
    """What ``Stream.capture()`` yields; ``graph`` is set when the block ends."""
    graph: Optional[Graph] = None


# ------------------------------------------------------------------------ raw memory --
def memcpy(dst: int, src: int, nbytes: int, dst_device: Optional["Device"] = None,
           src_device: Optional["Device"] = None, stream: Optional["Stream"] = None) -> None:
    """nnp_memcpy / nnp_memcpy_async on raw pointers (ints); a None device is host memory."""
    d = dst_device.handle if dst_device is not None else None
    s = src_device.handle if src_device is not None else None
    if stream is None:
        check(lib().nnp_memcpy(d, c_void_p(dst), s, c_void_p(src), nbytes))
    else:
        check(lib().nnp_memcpy_async(stream.handle, d, c_void_p(dst), s, c_void_p(src), nbytes))


def get_version() -> Tuple[int, int, int]:
    """(major, minor, patch) of libnnplug as run."""
    vals = [c_int32(), c_int32(), c_int32()]
    lib().nnp_get_version(*(byref(v) for v in vals))
    return (vals[0].value, vals[1].value, vals[2].value)
