"""Helpers shared by the Python package's call tests (test_api.py, test_arrays.py,
test_errors.py): PyTorch when it is installed, the sentinel value that outputs are filled with
to see whether a call wrote them, and the check that a refused call names its argument."""
import re

import pytest

import nnplug

try:
    import torch
except ImportError:  # python3-torch is a test dependency; without it those tests skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch (python3-torch)")

SENTINEL = 7.0


def names(message, arg):
    """Whether an error message names the argument `arg` (as a word)."""
    return re.search(r"(?<!\w)" + re.escape(arg) + r"(?!\w)", message) is not None


def raises_naming(arg, fn, *args, cls=nnplug.InvalidArgumentError, **kwargs):
    """Calls fn, which must raise `cls` (an nnplug.Error subclass) whose message names arg."""
    with pytest.raises(cls) as info:
        fn(*args, **kwargs)
    assert isinstance(info.value, nnplug.Error)
    assert names(info.value.message, arg), (arg, info.value.message)
    return info.value
