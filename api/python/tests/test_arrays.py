"""DeviceArray (properties, views, reshape, bounds), DLPack export to PyTorch and numpy
(zero-copy on host memory, lifetimes, refusals) and nnplug.asarray of numpy arrays and PyTorch
tensors."""
import gc
import weakref

import numpy as np
import pytest

import nnplug
from api_helpers import SENTINEL, needs_torch, raises_naming, torch


def needs_host_memory(dev):
    if not dev.is_cpu:
        pytest.skip(f"{dev.name}: its memory is not host memory")


# --------------------------------------------------------------------- DeviceArray --
def test_device_array_properties(dev):
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = dev.to_device(host)
    assert a.shape == (4, 6) and a.dtype == "float32" and a.strides == (6, 1)
    assert a.device == dev and a.ndim == 2 and a.size == 24 and a.nbytes == 96
    assert a.is_contiguous and len(a) == 4
    np.testing.assert_array_equal(a.numpy(), host)
    np.testing.assert_array_equal(np.asarray(a), host)
    i = dev.zeros((2, 3), "int64")
    assert i.dtype == "int64" and i.nbytes == 48 and (i.numpy() == 0).all()
    assert i.numpy().dtype == np.int64


def test_device_array_views(dev):
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = dev.to_device(host)
    v = a.view((2, 3), 1, (6, 2))  # a strided view: rows 0-1, columns 1, 3, 5
    assert v.shape == (2, 3) and v.strides == (6, 2) and not v.is_contiguous
    np.testing.assert_array_equal(v.numpy(), host[:2, 1::2])
    row = a.view((6,), 12)  # row 2, contiguous
    np.testing.assert_array_equal(row.numpy(), host[2])
    r = a.reshape(-1, 8)
    assert r.shape == (3, 8) and r.strides == (8, 1)
    np.testing.assert_array_equal(r.numpy(), host.reshape(3, 8))
    assert a.reshape(2, -1, 3).shape == (2, 4, 3)
    f = a.flatten()
    assert f.shape == (24,)
    np.testing.assert_array_equal(f.numpy(), host.ravel())
    t = a.T
    assert t.shape == (6, 4) and t.strides == (1, 6)
    np.testing.assert_array_equal(t.numpy(), host.T)
    # views share memory: an op writing into a view shows in the base
    nnplug.scale(row, out=row, alpha=-1.0)
    nnplug.fill(out=r.view((8,), 0), value=100.0)  # row 0 of the (3, 8) reshape
    want = host.copy()
    want[2] *= -1
    want.ravel()[:8] = 100.0
    np.testing.assert_array_equal(a.numpy(), want)
    np.testing.assert_array_equal(f.numpy(), want.ravel())
    # a strided view as an op input (copy accepts strides) and output
    dst = nnplug.copy(t)
    np.testing.assert_array_equal(np.asarray(dst), want.T)
    nnplug.copy(dev.to_device(np.full((2, 3), -3.0, np.float32)), out=v)
    want[:2, 1::2] = -3.0
    np.testing.assert_array_equal(a.numpy(), want)
    # the base stays alive while a view exists
    base = dev.to_device(host)
    view = base.view((2,), 22)
    del base
    gc.collect()
    np.testing.assert_array_equal(view.numpy(), [22.0, 23.0])


def test_zero_size_arrays_are_contiguous(dev):
    """numpy gives arrays without elements any strides and calls them C-contiguous; so does
    nnplug: they reshape (issue found as a user would: asarray of np.empty((0, 3, 4)))."""
    a = nnplug.asarray(np.empty((0, 3, 4), np.float32), device=dev)
    assert a.is_contiguous
    b = a.reshape(3, 4, 0)
    assert b.shape == (3, 4, 0) and b.is_contiguous


def test_device_array_view_bounds_and_reshape_errors(dev):
    a = dev.to_device(np.arange(12, dtype=np.float32))
    for shape, offset, strides in [((13,), 0, None), ((4,), 9, None), ((3,), 0, (6,)),
                                   ((1,), 12, None), ((2,), -1, None), ((2, 2), 0, (1,)),
                                   ((2**40,), 0, None), ((2**64 + 3,), 0, (0,)),
                                   ((2,), 0, (2**64,))]:
        # (a stride-0 view of 2**64 + 3 elements addresses one element, but would wrap to 3)
        with pytest.raises(nnplug.InvalidArgumentError):
            a.view(shape, offset, strides)
    v = a.view((2, 3), 6)  # the last 6 elements: a view's bounds are the base's memory
    np.testing.assert_array_equal(v.numpy(), [[6, 7, 8], [9, 10, 11]])
    with pytest.raises(nnplug.InvalidArgumentError):
        v.view((7,), 0)
    with pytest.raises(nnplug.InvalidArgumentError):
        a.reshape(5, -1)  # 12 is not a multiple of 5
    with pytest.raises(nnplug.InvalidArgumentError):
        a.reshape(-1, -1)
    with pytest.raises(nnplug.InvalidArgumentError):
        a.reshape(13)
    with pytest.raises(nnplug.InvalidArgumentError):
        a.view((3, 2), 0, (1, 3)).reshape(6)  # not contiguous
    with pytest.raises(nnplug.InvalidArgumentError):
        a.view((3, 2), 0, (1, 3)).flatten()


def test_device_array_size_cannot_wrap(dev):
    """A shape whose byte count does not fit (2**62 + 16 float32 = 2**64 + 64 bytes, 64 after
    a size_t wrap) is refused, not allocated."""
    with pytest.raises(nnplug.InvalidArgumentError):
        dev.empty((2**62 + 16,))
    with pytest.raises(nnplug.InvalidArgumentError):
        dev.empty((2**31, 2**31, 4), "float64")
    with pytest.raises(nnplug.InvalidArgumentError):
        dev.empty((-1, 4))
    with pytest.raises(nnplug.Error) as info:  # fits the address range: the device says
        dev.empty((1 << 50,))
    assert info.value.status == nnplug.Status.OUT_OF_MEMORY


def test_outputs_of_the_inputs_kind(dev):
    """Allocated outputs are of the inputs' kind: numpy in, numpy out; DeviceArray in, a
    DeviceArray on that device out."""
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    y = nnplug.activation_forward(x, device=dev)
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    dx = dev.to_device(x)
    dy = nnplug.activation_forward(dx)
    assert isinstance(dy, nnplug.DeviceArray) and dy.device == dev
    np.testing.assert_array_equal(dy.numpy(), np.maximum(x, 0))


# -------------------------------------------------------------------------- DLPack --
@needs_torch
def test_torch_from_dlpack_is_zero_copy(dev):
    needs_host_memory(dev)
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = dev.to_device(host)
    assert a.__dlpack_device__() == (1, 0)
    t = torch.from_dlpack(a)
    assert t.shape == (3, 4) and t.dtype == torch.float32 and t.data_ptr() == a.ptr
    t[1, 2] = -5.0  # written through torch, seen by nnplug
    want = host.copy()
    want[1, 2] = -5.0
    np.testing.assert_array_equal(a.numpy(), want)
    nnplug.scale(a, out=a, alpha=2.0)  # written by an op, seen by torch
    torch.testing.assert_close(t, torch.from_numpy(2 * want))
    tt = torch.from_dlpack(a.T)  # a strided view keeps its strides
    assert tt.shape == (4, 3) and tt.stride() == (1, 4)
    torch.testing.assert_close(tt, torch.from_numpy(2 * want.T))


def test_numpy_from_dlpack_is_zero_copy(dev):
    needs_host_memory(dev)
    a = dev.to_device(np.arange(6, dtype=np.float32))
    n = np.from_dlpack(a)  # (numpy marks arrays it imports read-only)
    assert n.shape == (6,) and n.dtype == np.float32 and n.ctypes.data == a.ptr
    nnplug.scale(a, out=a, alpha=-1.0)  # an op's write shows in the numpy array
    np.testing.assert_array_equal(n, -np.arange(6, dtype=np.float32))
    v = np.from_dlpack(a.view((3,), 0, (2,)))  # a strided view
    assert v.strides == (8,)
    np.testing.assert_array_equal(v, [0, -2, -4])


def test_dlpack_refused_by_the_consumer_is_a_clean_error(dev):
    """A consumer that refuses the capsule (numpy: memory of a device the host cannot address)
    raises its own error: the capsule's release runs no Python code that could turn it into a
    SystemError, and capsules dropped unconsumed release their arrays at the next export."""
    from nnplug import _dlpack
    a = dev.to_device(np.arange(3, dtype=np.float32))
    for _ in range(3):
        if dev.is_cpu:
            np.from_dlpack(a)  # host memory: accepted
        else:
            with pytest.raises((RuntimeError, BufferError)) as e:
                np.from_dlpack(a)
            assert not isinstance(e.value, SystemError)
    for _ in range(5):
        a.__dlpack__()  # dropped at once, never consumed
    gc.collect()
    assert len(_dlpack._exported) <= 2  # the last export's entry (and a consumed one's, if alive)


@needs_torch
def test_dlpack_keeps_the_device_array_alive(dev):
    needs_host_memory(dev)
    a = dev.to_device(np.arange(6, dtype=np.float32))
    alive = weakref.ref(a)
    t = torch.from_dlpack(a)
    del a
    gc.collect()
    assert alive() is not None  # held by the exported capsule until torch lets go
    scratch = dev.to_device(np.full(64, -1.0, np.float32))  # memory a free would hand out
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    del t, scratch
    gc.collect()
    assert alive() is None  # released with the tensor


@needs_torch
def test_dlpack_export_refuses_other_devices_and_copies(dev):
    a = dev.to_device(np.zeros(3, np.float32))
    with pytest.raises(BufferError):
        a.__dlpack__(copy=True)
    other = (1, 0) if not dev.is_cpu else (12, 0)
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=other)


# ------------------------------------------------------------------------- asarray --
@needs_torch
def test_asarray_of_torch_is_zero_copy(dev):
    needs_host_memory(dev)
    t = torch.zeros(2, 3)
    a = nnplug.asarray(t, device=dev)
    assert a.ptr == t.data_ptr() and a.shape == (2, 3) and a.dtype == "float32"
    assert a.device == dev
    nnplug.fill(out=a, value=2.5)  # an op writing into it changes the torch tensor
    assert (t == 2.5).all()
    y = nnplug.scale(t, alpha=2.0, device=dev)  # torch in, torch out
    assert isinstance(y, torch.Tensor)
    torch.testing.assert_close(y, torch.full((2, 3), 5.0))


@needs_torch
def test_asarray_of_strided_torch_as_an_input(dev):
    needs_host_memory(dev)
    src = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    a = nnplug.asarray(src.t(), device=dev)
    assert a.shape == (4, 3) and a.strides == tuple(src.t().stride()) and not a.is_contiguous
    np.testing.assert_array_equal(a.numpy(), src.t().numpy())
    y = nnplug.copy(a)  # copy reads any strides
    np.testing.assert_array_equal(y.numpy(), src.t().numpy())
    out = np.full((3, 4), SENTINEL, np.float32)
    raises_naming("x", nnplug.scale, a, out=out.T, alpha=2.0)  # other ops: compact only
    assert (out == SENTINEL).all()


def test_asarray_of_numpy(dev):
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nnplug.asarray(host, device=dev)
    assert a.shape == (2, 3) and a.device == dev
    np.testing.assert_array_equal(a.numpy(), host)
    if dev.is_cpu:  # host memory: shared, an op's write shows in the numpy array
        assert a.ptr == host.ctypes.data
        nnplug.scale(a, out=a, alpha=-1.0)
        np.testing.assert_array_equal(host, -np.arange(6, dtype=np.float32).reshape(2, 3))
    else:  # a copy on a device the host cannot address
        nnplug.scale(a, out=a, alpha=-1.0)
        np.testing.assert_array_equal(host, np.arange(6, dtype=np.float32).reshape(2, 3))
        np.testing.assert_array_equal(a.numpy(), -host)
    s = nnplug.asarray(np.arange(16, dtype=np.float32).reshape(4, 4)[::2, 1::2], device=dev)
    np.testing.assert_array_equal(s.numpy(), [[1, 3], [9, 11]])
    assert nnplug.asarray(a) is a


def test_asarray_of_read_only_numpy_is_an_input_not_an_output(dev):
    needs_host_memory(dev)
    ro = np.arange(4, dtype=np.float32)
    ro.setflags(write=False)
    a = nnplug.asarray(ro, device=dev)
    np.testing.assert_array_equal(nnplug.scale(a, alpha=2.0).numpy(), 2 * ro)
    raises_naming("y", nnplug.scale, np.ones(4, np.float32), out=a)
    raises_naming("y", nnplug.scale, np.ones(2, np.float32), out=a.view((2,), 1))
    np.testing.assert_array_equal(ro, np.arange(4))
