"""torch_helpers.py — what the nnplug.torch tests share (test_torch_bridge.py on the CPU
devices, test_torch_cuda.py on CUDA tensors): comparing a function of nnplug.torch with its
PyTorch namesake, forward and backward, and expecting an nnplug.Error."""
import nnplug
import pytest
import torch

def compare(ours, theirs, inputs, rtol, atol):
    """Runs ours and theirs on clones of inputs (float32 tensors, those requiring grad get
    gradients), back-propagates one random upstream gradient through both and compares the
    outputs and every input gradient."""
    a = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    b = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    ya, yb = ours(*a), theirs(*b)
    assert ya.shape == yb.shape and ya.dtype == yb.dtype and ya.device == yb.device
    torch.testing.assert_close(ya, yb, rtol=rtol, atol=atol)
    dy = torch.randn_like(yb)
    ya.backward(dy)
    yb.backward(dy)
    checked = 0
    for ta, tb in zip(a, b):
        if tb.requires_grad:
            assert ta.grad is not None
            torch.testing.assert_close(ta.grad, tb.grad, rtol=rtol, atol=atol)
            checked += 1
    assert checked > 0


def expect_error(status, fragment, fn, *args, **kw):
    with pytest.raises(nnplug.Error) as e:
        fn(*args, **kw)
    assert e.value.status == status, e.value
    assert fragment in str(e.value), e.value
    return e.value
