"""Shared pytest fixtures for the nnplug Python package tests.

libnnplug comes from $NNPLUG_LIBRARY (CTest sets it to the build's library) or the build tree;
`dev` runs a test once per device that is present: reference, cpu when its plugin is built, and
sim:0 (the simulated accelerator, whose memory the host cannot address: numpy arguments are
staged to it, and tests of host-memory zero-copy skip it).

NNPLUG_TEST_BACKENDS (comma-separated) replaces that list, e.g. "reference,cuda" on a GPU
machine; NNPLUG_TEST_REQUIRE (comma-separated, default "reference") names the backends whose
absence fails a test instead of skipping it (scripts/gpu-check.sh requires cuda).
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import nnplug  # noqa: E402

# The helpers the call tests share (api_helpers.py) assert as test code does: pytest rewrites
# their asserts to show the values that failed.
pytest.register_assert_rewrite("api_helpers")

BACKENDS = [b for b in os.environ.get("NNPLUG_TEST_BACKENDS", "reference,cpu,sim").split(",") if b]
# The reference backend is always built: its absence is a failure.
REQUIRED = {b for b in os.environ.get("NNPLUG_TEST_REQUIRE", "reference").split(",") if b}


def _device_or_skip(name):
    try:
        return nnplug.device(name)
    except nnplug.Error as e:
        if name in REQUIRED:
            raise
        pytest.skip(f"no {name} device: {e}")
    except OSError as e:
        pytest.skip(f"libnnplug not found: {e}")


@pytest.fixture(params=BACKENDS)
def dev(request):
    return _device_or_skip(request.param)


@pytest.fixture
def ref():
    return _device_or_skip("reference")
