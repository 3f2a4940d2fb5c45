"""nnplug._lib — finds and loads libnnplug with ctypes and declares the C prototypes.

Search order (the first that exists wins):
  1. $NNPLUG_LIBRARY, a path to libnnplug.so (an error if it does not exist);
  2. the copy bundled in the package by `pip install .` (pyproject.toml):
     <package>/lib/libnnplug.so.0, whose plugins are in <package>/lib/nnplug/plugins/ (libnnplug
     looks for its default plugins in <dir of libnnplug>/nnplug/plugins);
  3. the install tree the package sits in: <prefix>/lib[/<multiarch>]/libnnplug.so for a package
     installed under <prefix>/lib/python3*/{site,dist}-packages/nnplug;
  4. the source tree's build folders: <repo>/build/lib/libnnplug.so, then the newest
     <repo>/build*/lib/libnnplug.so (the package is api/python/nnplug in the repository);
  5. the system loader (libnnplug.so.0, libnnplug.so: LD_LIBRARY_PATH, ld.so.cache).
"""
import ctypes
import glob
import os
from ctypes import POINTER, c_char_p, c_int32, c_int64, c_size_t, c_void_p
from typing import List, Optional

from . import _abi

_lib: Optional[ctypes.CDLL] = None
_lib_path: Optional[str] = None


def _candidates() -> List[str]:
    env = os.environ.get("NNPLUG_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise OSError(f"NNPLUG_LIBRARY={env!r} does not exist")
        return [env]
    pkg = os.path.dirname(os.path.abspath(__file__))
    # bundled by pip (wheel layout): <package>/lib/libnnplug.so.0
    found = [os.path.join(pkg, "lib", "libnnplug.so.0")]
    # install tree: <prefix>/lib/python3.X/site-packages/nnplug -> <prefix>/lib
    libdir = os.path.abspath(os.path.join(pkg, "..", "..", ".."))
    found.append(os.path.join(libdir, "libnnplug.so"))
    found += sorted(glob.glob(os.path.join(libdir, "*-linux-gnu", "libnnplug.so")))
    # source tree: <repo>/api/python/nnplug -> <repo>
    repo = os.path.abspath(os.path.join(pkg, "..", "..", ".."))
    found.append(os.path.join(repo, "build", "lib", "libnnplug.so"))
    builds = glob.glob(os.path.join(repo, "build*", "lib", "libnnplug.so"))
    found += sorted(builds, key=os.path.getmtime, reverse=True)
    return [p for p in found if os.path.isfile(p)] + ["libnnplug.so.0", "libnnplug.so"]


def _declare(lib: ctypes.CDLL) -> None:
    sp = POINTER(_abi.DLTensor)
    vp = c_void_p
    protos = {
        "nnp_get_version": (None, [POINTER(c_int32)] * 3),
        "nnp_version_string": (c_char_p, []),
        "nnp_status_string": (c_char_p, [c_int32]),
        "nnp_last_error_message": (c_char_p, []),
        "nnp_op_kind_name": (c_char_p, [c_int32]),
        "nnp_load_plugin": (c_int32, [c_char_p, POINTER(vp)]),
        "nnp_load_default_plugins": (c_int32, []),
        "nnp_get_load_records": (c_int32, [POINTER(_abi.nnp_load_record), POINTER(c_size_t)]),
        "nnp_plugin_name": (c_char_p, [vp]),
        "nnp_get_devices": (c_int32, [POINTER(vp), POINTER(c_size_t)]),
        "nnp_get_device": (c_int32, [c_char_p, POINTER(vp)]),
        "nnp_device_get_props": (c_int32, [vp, POINTER(_abi.nnp_device_props)]),
        "nnp_device_get_dldevice": (c_int32, [vp, POINTER(_abi.DLDevice)]),
        "nnp_op_supported": (c_int32, [vp, c_int32, vp, c_size_t, POINTER(sp), c_size_t,
                                       POINTER(sp)]),
        "nnp_malloc": (c_int32, [vp, c_size_t, POINTER(vp)]),
        "nnp_free": (c_int32, [vp, vp]),
        "nnp_memcpy_async": (c_int32, [vp, vp, vp, vp, vp, c_size_t]),
        "nnp_memcpy": (c_int32, [vp, vp, vp, vp, c_size_t]),
        "nnp_stream_create": (c_int32, [vp, POINTER(vp)]),
        "nnp_stream_destroy": (c_int32, [vp]),
        "nnp_stream_synchronize": (c_int32, [vp]),
        "nnp_stream_device": (vp, [vp]),
        "nnp_stream_set_attribute": (c_int32, [vp, c_int32, c_int64]),
        "nnp_stream_get_native": (c_int32, [vp, POINTER(vp)]),
        "nnp_stream_begin_capture": (c_int32, [vp]),
        "nnp_stream_end_capture": (c_int32, [vp, POINTER(vp)]),
        "nnp_graph_launch": (c_int32, [vp, vp]),
        "nnp_graph_destroy": (c_int32, [vp]),
        "nnp_op_execute": (c_int32, [vp, c_int32, vp, c_size_t, POINTER(sp), c_size_t,
                                     POINTER(sp)]),
        "nnp_op_infer_shapes": (c_int32, [c_int32, vp, c_size_t, POINTER(sp), c_size_t,
                                          POINTER(_abi.nnp_shape)]),
        "nnp_comm_create": (c_int32, [vp, POINTER(_abi.nnp_comm_config), POINTER(vp)]),
        "nnp_comm_get_unique_id": (c_int32, [vp, c_int32, POINTER(_abi.nnp_comm_unique_id)]),
        "nnp_comm_destroy": (c_int32, [vp]),
        "nnp_comm_get_rank": (c_int32, [vp, POINTER(c_int32), POINTER(c_int32)]),
        "nnp_comm_device": (vp, [vp]),
        "nnp_comm_description": (c_char_p, [vp]),
        "nnp_shutdown": (c_int32, []),
    }
    for name, (restype, argtypes) in protos.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def lib() -> ctypes.CDLL:
    """The loaded libnnplug (ctypes.CDLL), loading it on first use."""
    global _lib, _lib_path
    if _lib is None:
        errors = []
        for path in _candidates():
            try:
                candidate = ctypes.CDLL(path)
            except OSError as e:
                errors.append(f"{path}: {e}")
                continue
            _declare(candidate)
            _lib, _lib_path = candidate, path
            break
        else:
            raise OSError("nnplug: cannot load libnnplug; set NNPLUG_LIBRARY to its path. "
                          "Tried:\n  " + "\n  ".join(errors))
    return _lib


def lib_path() -> str:
    """The path libnnplug was loaded from (loads it if needed)."""
    lib()
    assert _lib_path is not None
    return _lib_path
