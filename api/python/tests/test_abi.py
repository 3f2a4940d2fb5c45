"""The ctypes mirror check: struct sizes, field offsets and enum values of nnplug's ctypes
classes against the compiled C headers, as printed by abi_dump (tests/abi_dump.c, built by
CMake; its path comes from $NNPLUG_ABI_DUMP, else the newest build*/bin/abi_dump)."""
import ctypes
import glob
import json
import os
import subprocess

import pytest

from nnplug import _abi

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _dump_path():
    p = os.environ.get("NNPLUG_ABI_DUMP")
    if p:
        return p
    found = sorted(glob.glob(os.path.join(REPO, "build*", "bin", "abi_dump")),
                   key=os.path.getmtime, reverse=True)
    return found[0] if found else None


@pytest.fixture(scope="module")
def dump():
    path = _dump_path()
    if not path or not os.path.exists(path):
        pytest.skip("abi_dump not built (set NNPLUG_ABI_DUMP or build target nnplug-abi-dump)")
    out = subprocess.run([path], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_every_c_struct_is_mirrored(dump):
    assert set(dump["structs"]) == set(_abi.STRUCTS)


@pytest.mark.parametrize("name", sorted(_abi.STRUCTS))
def test_struct_layout(dump, name):
    c = dump["structs"][name]
    cls = _abi.STRUCTS[name]
    assert ctypes.sizeof(cls) == c["size"], f"sizeof({name})"
    py_fields = [f[0] for f in cls._fields_]
    assert py_fields == list(c["fields"]), f"{name}: field names or order differ"
    for field, offset in c["fields"].items():
        assert getattr(cls, field).offset == offset, f"offsetof({name}, {field})"


def test_params_structs_set_struct_size():
    for name, cls in _abi.STRUCTS.items():
        if name.startswith("nnp_") and cls._fields_[0][0] == "struct_size":
            assert cls().struct_size == ctypes.sizeof(cls), name


@pytest.mark.parametrize("name", sorted(_abi.ENUMS))
def test_enum_values(dump, name):
    cls, prefix = _abi.ENUMS[name]
    c_values = dump["enums"][name]
    for c_name, value in c_values.items():
        assert c_name.startswith(prefix)
        assert cls[c_name[len(prefix):]] == value, f"{c_name}"
    if name.startswith("nnp_"):  # nnplug's own enums are mirrored completely
        assert len(cls) == len(c_values), f"{name}: the Python enum has extra members"


def test_constants(dump):
    c = dump["enums"]["constants"]
    for c_name, value in _abi.CONSTANTS.items():
        assert c[c_name] == value, c_name


def test_detects_a_wrong_offset(dump):
    """The check itself works: a struct with a missing field fails it."""

    class Broken(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_size_t), ("trans_b", ctypes.c_int32)]

    c = dump["structs"]["nnp_gemm_params"]
    assert Broken.trans_b.offset != c["fields"]["trans_b"]
