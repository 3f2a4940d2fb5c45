"""nnplug._dlpack — DLTensors and DLPack capsules: the holder of a DLTensor and what keeps its
memory alive (_Held), DLTensors built from a pointer, shape and strides, the DLTensor of a
capsule a producer made (borrowed, never owned), and the capsules DeviceArray.__dlpack__
exports with their deleter.
"""
import ctypes
import sys
from ctypes import c_int64, c_void_p
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from . import _abi
from ._core import Error

if TYPE_CHECKING:
    from ._array import DeviceArray


class _Held:
    """A DLTensor and whatever keeps its memory and shape arrays alive."""

    def __init__(self, tensor: Any, keep: Any):
        self.tensor = tensor
        self.keep = keep

    @property
    def dldevice(self) -> Tuple[int, int]:
        return (self.tensor.device.device_type, self.tensor.device.device_id)


def _make_dltensor(ptr: Optional[int], dldevice: Tuple[int, int], dltype: Tuple[int, int],
                   shape: Sequence[int], strides: Optional[Sequence[int]]) -> _Held:
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
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, ctypes.c_char_p, c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))
_DLTENSOR_NAME = b"dltensor"  # PyCapsule_New keeps the pointer: a module constant outlives it


def _from_capsule(capsule: Any, owner: Any) -> _Held:
    """DLTensor of a DLPack capsule. The capsule stays named "dltensor" and is kept alive with
    the result, so the producer's deleter runs when both are garbage-collected (the borrowing
    use of DLPack: nnplug never takes ownership)."""
    if not _pycapsule_is_valid(capsule, b"dltensor"):
        raise Error(_abi.Status.INVALID_ARGUMENT,
                    "not a DLPack capsule named 'dltensor' (already consumed?)")
    ptr = _pycapsule_get_pointer(capsule, b"dltensor")
    managed = _abi.DLManagedTensor.from_address(ptr)
    return _Held(managed.dl_tensor, (capsule, owner))


# Exported DLManagedTensors: address -> [struct, shape and strides arrays, the DeviceArray, the
# capsule or None]. The DLPack deleter (called by the consumer that took the capsule) drops the
# entry, which releases the array. The capsule has no destructor: a ctypes callback as one
# runs Python code while the capsule is freed, which may happen with an exception pending (a
# consumer that refused the capsule, e.g. numpy.from_dlpack of device memory) and then turns
# that exception into a SystemError. Instead every export first sweeps the entries: a capsule
# that was consumed (renamed by its consumer) is forgotten (its deleter will come), and one
# that nobody but this table holds any more was dropped unconsumed: its entry goes.
_exported: Dict[int, List[Any]] = {}


def _dl_deleter(managed: Any) -> None:
    _exported.pop(ctypes.cast(managed, c_void_p).value or 0, None)


_dl_deleter_c = ctypes.CFUNCTYPE(None, ctypes.POINTER(_abi.DLManagedTensor))(_dl_deleter)


def _sweep_exported() -> None:
    for addr in list(_exported):
        entry = _exported.get(addr)
        if entry is None or entry[4] is None:
            continue
        capsule = entry[4]
        if not _pycapsule_is_valid(capsule, _DLTENSOR_NAME):  # consumed: the deleter will come
            entry[4] = None
        elif sys.getrefcount(capsule) <= 3:  # this table, `capsule` and the call's argument
            del _exported[addr]


def _export_capsule(a: "DeviceArray") -> Any:
    _sweep_exported()
    m = _abi.DLManagedTensor()
    h = a.dltensor()
    m.dl_tensor = h.tensor  # a copy; its shape array is h's
    # DLPack 0.6 consumers accept NULL strides (compact); give them explicitly anyway
    strides_arr = (c_int64 * max(a.ndim, 1))(*a.strides)
    m.dl_tensor.strides = ctypes.cast(strides_arr, ctypes.POINTER(c_int64))
    m.manager_ctx = None
    m.deleter = _dl_deleter_c
    addr = ctypes.addressof(m)
    capsule = _capsule_new(addr, _DLTENSOR_NAME, None)
    _exported[addr] = [m, h, strides_arr, a, capsule]
    return capsule
