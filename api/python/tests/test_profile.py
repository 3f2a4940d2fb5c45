"""NNPLUG_PROFILE (docs/profiling.md): a process with the variable set writes, at exit, the op
calls it ran through nnp_op_execute per op kind and per signature, with GFLOP/s for GEMM; unset
or "0", nothing is written."""
import os
import re
import subprocess
import sys

import pytest

CODE = """
import numpy as np, nnplug
a = np.ones((64, 32), np.float32); b = np.ones((32, 16), np.float32)
for _ in range(3):
    nnplug.gemm(a, b, device="reference")
nnplug.binary(a, a, device="reference")
nnplug.supported(nnplug.gemm, a, b, device="reference")  # asks, runs nothing
"""


def _run(tmp_path, value):
    env = dict(os.environ)
    env.pop("NNPLUG_PROFILE", None)
    if value is not None:
        env["NNPLUG_PROFILE"] = value
    return subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                          check=True)


def test_profile_written_at_exit_with_calls_and_gflops(tmp_path):
    out = tmp_path / "profile.txt"
    _run(tmp_path, str(out))
    text = out.read_text()
    assert text.startswith("nnplug profile: 4 op calls, ")
    rows = {m.group(1): m.groups() for m in re.finditer(
        r"^(\w+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)%\s+([\d.]+)\s+(\S+)$", text, re.M)}
    assert rows["gemm"][1] == "3" and rows["binary"][1] == "1"
    assert float(rows["gemm"][5]) > 0 and rows["binary"][5] == "-"  # GFLOP/s for GEMM only
    assert re.search(r"^gemm \[64,32\] \[32,16\] -\s+3\s", text, re.M)
    assert re.search(r"^binary \[64,32\] \[64,32\]\s+1\s", text, re.M)


@pytest.mark.parametrize("value", [None, "0"])
def test_no_profile_unless_asked(tmp_path, value):
    r = _run(tmp_path, value)
    assert "nnplug profile" not in r.stderr


def test_profile_to_stderr(tmp_path):
    r = _run(tmp_path, "1")
    assert r.stderr.startswith("nnplug profile: 4 op calls, ")
