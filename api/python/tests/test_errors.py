"""Bad arguments raise nnplug.Error subclasses that name the argument before any output is
written (read-only, stride-0 and non-compact outputs, wrong dtypes, shapes and devices, params
out of range, overlapping outputs, nnplug.execute's outputs); ops that need an output shape or
dtype; the Error subclasses and what numpy and PyTorch refuse coming back as nnplug.Error."""
import tempfile

import numpy as np
import pytest

import nnplug
from api_helpers import SENTINEL, needs_torch, raises_naming, torch


# --------------------------------------------------------------------- bad input --
def _sentinel(shape=(2, 3), dtype=np.float32):
    return np.full(shape, SENTINEL, dtype)


def test_read_only_outputs_are_refused(dev):
    x = np.ones((2, 3), np.float32)
    y = _sentinel()
    y.setflags(write=False)
    raises_naming("y", nnplug.scale, x, out=y, alpha=2.0, device=dev)
    assert (y == SENTINEL).all()
    buf = _sentinel().tobytes()
    fb = np.frombuffer(buf, np.float32).reshape(2, 3)
    raises_naming("y", nnplug.scale, x, out=fb, alpha=2.0, device=dev)
    assert (np.frombuffer(buf, np.float32) == SENTINEL).all()
    row = _sentinel((3,))
    raises_naming("y", nnplug.scale, x, out=np.broadcast_to(row, (2, 3)), device=dev)
    assert (row == SENTINEL).all()


def test_stride_0_outputs_are_refused(dev):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    row = _sentinel((3,))
    alias = np.lib.stride_tricks.as_strided(row, (2, 3), (0, 4), writeable=True)
    assert alias.flags.writeable
    raises_naming("y", nnplug.scale, x, out=alias, device=dev)
    assert (row == SENTINEL).all()
    if dev.is_cpu and torch is not None:
        base = torch.full((3,), SENTINEL)
        raises_naming("y", nnplug.scale, torch.from_numpy(x), out=base.expand(2, 3),
                      device=dev)
        assert (base == SENTINEL).all()
    d = dev.to_device(_sentinel((3,)))
    raises_naming("y", nnplug.scale, dev.to_device(x), out=d.view((2, 3), 0, (0, 1)))
    assert (d.numpy() == SENTINEL).all()


def test_non_compact_output_is_refused(dev):
    x = np.ones((2, 3), np.float32)
    if dev.is_cpu:  # (numpy outputs staged to another device are copied compact)
        y = _sentinel((3, 2))
        raises_naming("y", nnplug.scale, x, out=y.T, device=dev)
        assert (y == SENTINEL).all()
    d = dev.to_device(_sentinel((3, 2)))
    raises_naming("y", nnplug.scale, dev.to_device(x), out=d.T)
    assert (d.numpy() == SENTINEL).all()


def test_wrong_dtypes_are_refused(dev):
    x64 = np.ones((2, 3), np.float64)
    y = _sentinel()
    raises_naming("y", nnplug.scale, x64, out=y, device=dev)
    assert (y == SENTINEL).all()
    logits = np.zeros((4, 3), np.float32)
    loss = _sentinel(())
    raises_naming("labels", nnplug.softmax_cross_entropy_forward, logits,
                  np.zeros(4, np.int32), out=loss, device=dev)
    assert loss == SENTINEL
    cond = np.ones(3, np.float32)  # where's condition is uint8 (or bool)
    out = _sentinel((3,))
    raises_naming("condition", nnplug.where, cond, cond, cond, out=out, device=dev)
    assert (out == SENTINEL).all()


def test_wrong_shape_in_out_is_refused(dev):
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    y = _sentinel((4, 2))
    raises_naming("Y", nnplug.gemm, a, b, out=y, device=dev)
    assert (y == SENTINEL).all()
    loss = _sentinel((4,))  # mean reduction: loss is 0-d
    raises_naming("loss", nnplug.softmax_cross_entropy_forward, np.zeros((4, 3), np.float32),
                  np.zeros(4, np.int64), out=loss, device=dev)
    assert (loss == SENTINEL).all()


def test_wrong_and_mixed_devices_are_refused():
    try:
        sim, cpu = nnplug.device("sim:0"), nnplug.device("cpu")
    except nnplug.Error as e:
        pytest.skip(f"needs the sim and cpu devices: {e}")
    x = np.ones((2, 3), np.float32)
    y = _sentinel()
    raises_naming("x", nnplug.scale, sim.to_device(x), out=y, device="cpu")
    assert (y == SENTINEL).all()
    ys = sim.to_device(_sentinel())
    raises_naming("b", nnplug.binary, sim.to_device(x), cpu.to_device(x), out=ys)
    assert (ys.numpy() == SENTINEL).all()
    try:
        sim1 = nnplug.device("sim:1")
    except nnplug.Error:
        return
    raises_naming("b", nnplug.add, sim.to_device(x), sim1.to_device(x), out=ys)
    assert (ys.numpy() == SENTINEL).all()


def test_numpy_on_a_stream_of_a_device_without_host_memory_is_refused():
    """numpy arguments are staged only for calls without stream=: on a queued call the user
    gives DeviceArrays."""
    try:
        sim = nnplug.device("sim:0")
    except nnplug.Error as e:
        pytest.skip(f"needs the sim device: {e}")
    s = sim.stream()
    y = _sentinel()
    raises_naming("x", nnplug.scale, np.ones((2, 3), np.float32), out=y, stream=s)
    d = sim.to_device(np.ones((2, 3), np.float32))
    raises_naming("y", nnplug.scale, d, out=y, stream=s)
    s.synchronize()
    assert (y == SENTINEL).all()


@pytest.mark.parametrize("call,arg", [
    (lambda dev, y: nnplug.conv2d_forward(np.ones((1, 1, 4, 4), np.float32),
                                          np.ones((1, 1, 2, 2), np.float32), out=y,
                                          stride_h=2**32 + 1, device=dev), "stride_h"),
    (lambda dev, y: nnplug.conv2d_forward(np.ones((1, 1, 4, 4), np.float32),
                                          np.ones((1, 1, 2, 2), np.float32), out=y,
                                          stride_h=-1, device=dev), "stride_h"),
    (lambda dev, y: nnplug.softmax_forward(np.ones((1, 1, 3, 3), np.float32), out=y,
                                           axis=2**31, device=dev), "axis"),
    (lambda dev, y: nnplug.softmax_forward(np.ones((1, 1, 3, 3), np.float32), out=y,
                                           axis=1.5, device=dev), "axis"),
    (lambda dev, y: nnplug.softmax_forward(np.ones((1, 1, 3, 3), np.float32), out=y,
                                           axis="1", device=dev), "axis"),
    (lambda dev, y: nnplug.dropout_forward(np.ones((1, 1, 3, 3), np.float32), out=y, seed=-1,
                                           device=dev), "seed"),
    (lambda dev, y: nnplug.dropout_forward(np.ones((1, 1, 3, 3), np.float32), out=y,
                                           seed=2**64, device=dev), "seed"),
    (lambda dev, y: nnplug.transpose(np.ones((1, 1, 3, 3), np.float32), out=y,
                                     perm=list(range(9)), device=dev), "perm"),
    (lambda dev, y: nnplug.transpose(np.ones((1, 1, 3, 3), np.float32), out=y,
                                     perm=[0, 1, 2.0, 3], device=dev), r"perm[2]"),
    (lambda dev, y: nnplug.activation_forward(np.ones((1, 1, 3, 3), np.float32), out=y,
                                              function="swish", device=dev), "function"),
    (lambda dev, y: nnplug.activation_forward(np.ones((1, 1, 3, 3), np.float32), out=y,
                                              function=99, device=dev), "function"),
    (lambda dev, y: nnplug.gemm(np.ones((3, 3), np.float32), np.ones((3, 3), np.float32),
                                out=y.reshape(3, 3), trans_a=2, device=dev), "trans_a"),
    (lambda dev, y: nnplug.scale(np.ones((1, 1, 3, 3), np.float32), out=(y, y.copy()),
                                 device=dev), "out has 2 entries"),
    (lambda dev, y: nnplug.concat(np.ones((1, 1, 3, 3), np.float32), out=y, device=dev),
     "xs is variadic"),
    (lambda dev, y: nnplug.concat([], out=y, device=dev), "xs: 0 tensors"),
    (lambda dev, y: nnplug.scale(np.ones((1, 1, 3, 3), np.float32), out=y, stream="s",
                                 device=dev), "stream must be"),
])
def test_bad_params_and_arguments(dev, call, arg):
    """Each raises an nnplug.Error subclass naming the argument; the output is untouched."""
    y = _sentinel((1, 1, 3, 3))
    with pytest.raises(nnplug.InvalidArgumentError) as info:
        call(dev, y)
    assert info.value.status == nnplug.Status.INVALID_ARGUMENT
    assert arg in info.value.message, info.value.message
    assert (y == SENTINEL).all()


def test_params_range_checked_before_the_c_struct():
    """Out-of-range params are refused in Python, not truncated into the C field (a wrapped
    stride of 2**32 + 1 would be 1, a valid call)."""
    x = np.ones((1, 1, 4, 4), np.float32)
    w = np.ones((1, 1, 2, 2), np.float32)
    with pytest.raises(nnplug.InvalidArgumentError) as info:
        nnplug.supported(nnplug.conv2d_forward, x, w, stride_h=2**32 + 1)
    assert "stride_h" in info.value.message
    assert nnplug.supported(nnplug.conv2d_forward, x, w, stride_h=1) is None


def test_ops_needing_an_output_shape(ref):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(nnplug.InvalidArgumentError) as info:
        nnplug.fill(value=1.0, device=ref)
    assert "out_shape" in info.value.message
    y = nnplug.fill(value=1.5, out_shape=(2, 2), device=ref)
    assert y.shape == (2, 2) and y.dtype == np.float32 and (y == 1.5).all()
    y = nnplug.fill(value=1.5, out_shape=(3,), dtype=np.float64, device=ref)
    assert y.dtype == np.float64 and (y == 1.5).all()
    with pytest.raises(nnplug.InvalidArgumentError) as info:
        nnplug.gather_backward(x, np.zeros(2, np.int64), device=ref)
    assert "out_shape" in info.value.message
    dx = nnplug.gather_backward(x[:2], np.array([1, 1], np.int64), out_shape=(4, 3), device=ref)
    np.testing.assert_array_equal(dx, [[0, 0, 0], [2, 2, 2], [0, 0, 0], [0, 0, 0]])
    parts = nnplug.split(np.arange(12, dtype=np.float32).reshape(4, 3), out_shape=[(1, 3), (3, 3)],
                         device=ref)
    assert isinstance(parts, list) and [p.shape for p in parts] == [(1, 3), (3, 3)]
    parts = nnplug.split(np.arange(10, dtype=np.float32), num_outputs=3, device=ref)
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    with pytest.raises(nnplug.InvalidArgumentError) as info:
        nnplug.cast(x, device=ref)  # the output dtype is the caller's
    assert "dtype" in info.value.message
    for dt in ("float64", np.float64, np.dtype("float64")):
        y = nnplug.cast(x, dtype=dt, device=ref)
        assert y.dtype == np.float64 and (y == 1).all()
    with pytest.raises(nnplug.InvalidArgumentError) as info:
        nnplug.cast(x, dtype="float33", device=ref)
    assert "dtype" in info.value.message


@needs_torch
def test_cast_to_a_dtype_numpy_lacks(ref):
    """dtype= takes torch dtypes and "bfloat16"; outputs of torch inputs are torch tensors."""
    t = torch.arange(6, dtype=torch.float32)
    for dt in (torch.float64, "float64"):
        y = nnplug.cast(t, dtype=dt, device=ref)
        assert isinstance(y, torch.Tensor) and y.dtype == torch.float64
        torch.testing.assert_close(y, t.double())
    with pytest.raises(nnplug.InvalidArgumentError):  # no numpy bfloat16 to allocate
        nnplug.cast(t.numpy(), dtype="bfloat16", device=ref)
    reason = nnplug.supported(nnplug.cast, t, dtype="bfloat16", device=ref)
    assert isinstance(reason, str) and "bfloat16" in reason


# -------------------------------------------------------------------------- errors --
def test_error_subclasses():
    e = nnplug.Error(nnplug.Status.UNSUPPORTED, "x")
    assert isinstance(e, nnplug.UnsupportedError) and isinstance(e, nnplug.Error)
    assert e.status == nnplug.Status.UNSUPPORTED and e.message == "x"
    assert "UNSUPPORTED" in str(e)
    e = nnplug.Error(nnplug.Status.INVALID_ARGUMENT, "bad")
    assert type(e) is nnplug.InvalidArgumentError
    assert isinstance(e, ValueError) and issubclass(nnplug.InvalidArgumentError, ValueError)
    for status, cls in [(nnplug.Status.OUT_OF_MEMORY, nnplug.OutOfMemoryError),
                        (nnplug.Status.NOT_FOUND, nnplug.NotFoundError),
                        (nnplug.Status.UNAVAILABLE, nnplug.UnavailableError),
                        (nnplug.Status.DEVICE_ERROR, nnplug.DeviceError)]:
        assert type(nnplug.Error(status, "m")) is cls
    assert type(nnplug.Error(nnplug.Status.INTERNAL, "m")) is nnplug.Error
    assert type(nnplug.Error(12345, "m")) is nnplug.Error
    import pickle
    e2 = pickle.loads(pickle.dumps(nnplug.Error(nnplug.Status.UNSUPPORTED, "y")))
    assert type(e2) is nnplug.UnsupportedError and e2.message == "y"
    with pytest.raises(ValueError):  # catchable as a ValueError
        nnplug.activation_forward(np.ones(2, np.float32), function="swish", device="reference")
    with pytest.raises(nnplug.NotFoundError):
        nnplug.device("no_such_backend")


def test_partly_overlapping_output_refused_on_every_device(dev):
    """An output that overlaps an input in part is refused on every device: libnnplug checks
    host memory, and the copies nnplug makes for a device the host cannot address must not
    hide the overlap. The exact same view as input and output stays one array."""
    buf = np.arange(20, dtype=np.float32)
    with pytest.raises(nnplug.InvalidArgumentError, match="overlap"):
        nnplug.scale(buf[:15], out=buf[5:20], alpha=2.0, device=dev)
    np.testing.assert_array_equal(buf, np.arange(20, dtype=np.float32))
    x = np.arange(6, dtype=np.float32)
    nnplug.add(x, x[:], out=x[:], device=dev)  # three numpy objects over one view
    np.testing.assert_array_equal(x, 2 * np.arange(6, dtype=np.float32))


def test_failures_are_nnplug_errors():
    """What numpy and PyTorch refuse comes back as nnplug.Error: an output too large to
    allocate (OutOfMemoryError, numpy's ValueError before), a tensor whose __dlpack__ refuses
    (torch.bool: InvalidArgumentError, torch's RuntimeError before)."""
    for shape in [(2**31, 2**31), (2**40, 2**40)]:
        with pytest.raises(nnplug.OutOfMemoryError, match="cannot allocate an output"):
            nnplug.fill(out_shape=shape, value=0.0, device="cpu")
    torch = pytest.importorskip("torch")
    with pytest.raises(nnplug.InvalidArgumentError, match="__dlpack__ refused"):
        nnplug.scale(torch.zeros(4, dtype=torch.bool), alpha=2.0, device="cpu")


def test_execute_refuses_read_only_outputs():
    """nnplug.execute checks its outputs as the op functions do: a read-only array (over an
    immutable bytes object, or a read-only memmap) is refused and left unchanged."""
    x = np.arange(4, dtype=np.float32)
    p = nnplug._abi.nnp_scale_params(alpha=-2.0)
    raw = bytes(16)
    with pytest.raises(nnplug.InvalidArgumentError, match="outputs\\[0\\] is a read-only"):
        nnplug.execute(nnplug.OpKind.SCALE, p, [x], [np.frombuffer(raw, dtype=np.float32)],
                       device="cpu")
    assert raw == bytes(16)
    with tempfile.NamedTemporaryFile() as f:
        f.write(bytes(16))
        f.flush()
        mm = np.memmap(f.name, dtype=np.float32, mode="r", shape=(4,))
        with pytest.raises(nnplug.InvalidArgumentError, match="read-only"):
            nnplug.execute(nnplug.OpKind.SCALE, p, [x], [mm], device="cpu")
        np.testing.assert_array_equal(mm, np.zeros(4, np.float32))
