"""The Python package's calling convention (nnplug.ops generated from the op table): every op
called with allocated outputs and with out= storage; the C input order with keyword-only
optional inputs; DeviceArray views and DLPack; nnplug.asarray; scalars as 0-d inputs;
nnplug.supported with an op's own arguments; bad arguments raising nnplug.Error subclasses
that name the argument before any output is written; Error subclasses; streams."""
import gc
import inspect
import os
import re
import tempfile
import tomllib
import weakref
import zlib

import numpy as np
import pytest

import nnplug

try:
    import torch
except ImportError:  # python3-torch is a test dependency; without it those tests skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch (python3-torch)")

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ops", "ops.toml")
SENTINEL = 7.0


def _load_table():
    with open(TABLE, "rb") as f:
        spec = tomllib.load(f)
    structs = {s["name"]: s for s in spec["struct"]}
    return {op["name"]: op for op in spec["op"]}, structs


OPS_TOML, STRUCTS_TOML = _load_table()


def needs_host_memory(dev):
    if not dev.is_cpu:
        pytest.skip(f"{dev.name}: its memory is not host memory")


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


# ------------------------------------------------------------ every op, both ways --
def _tensor_spec(t):
    return dict(name=t["name"], optional=t.get("optional", False),
                dtype=t.get("dtype", "float"), variadic=t.get("variadic", False),
                inplace=t.get("inplace", False))


def _random(rng, shape, rule, op):
    """A tensor of valid values for a tensor of dtype rule `rule`: int64 indices and labels
    0 (in range for every example), uint8 conditions 0/1, floats in [0.5, 1.5] (positive:
    variances, inverse standard deviations)."""
    shape = tuple(shape)
    if rule == "int64":
        return np.zeros(shape, np.int64)
    if rule == "uint8":
        return rng.integers(0, 2, shape).astype(np.uint8)
    return rng.uniform(0.5, 1.5, shape).astype(np.float32)


def _out_dtype(rule, op):
    if rule in ("int64", "uint8"):
        return np.dtype(rule)
    if op == "cast":
        return np.dtype(np.float64)  # float32 -> float64, which the reference implements
    return np.dtype(np.float32)


def _example_params(op, fn):
    """The example's params (C field names) as the function's keywords: has_* flags and n_*
    counts are implicit in Python; `global` is `global_`."""
    ex = op["example"].get("params", {})
    struct = STRUCTS_TOML.get(op.get("params"), {"fields": []})
    fields = {f["name"]: f for f in struct["fields"]}
    keywords = inspect.signature(fn).parameters
    kw = {}
    for k, v in ex.items():
        if k.startswith("has_") and k[4:] in fields:
            assert v == 1, (op["name"], k)  # the field itself is given
            continue
        if fields.get(k, {}).get("count_of"):
            continue
        py = k if k in keywords else k + "_"
        assert py in keywords, (op["name"], k)
        kw[py] = v
    return kw


def _prepare(name, rng):
    op = OPS_TOML[name]
    fn = getattr(nnplug, name)
    ins = [_tensor_spec(t) for t in op["inputs"]]
    outs = [_tensor_spec(t) for t in op["outputs"]]
    ex = op["example"]
    assert len(ex["inputs"]) <= len(ins) and len(ex["outputs"]) == len(outs), name
    pos, kw = [], {}
    for t, shape in zip(ins, ex["inputs"]):
        x = [_random(rng, s, t["dtype"], name) for s in shape] if t["variadic"] else \
            _random(rng, shape, t["dtype"], name)
        if t["optional"]:
            kw[t["name"]] = x
        else:
            pos.append(x)
    inplace, results = {}, []
    for t, shape in zip(outs, ex["outputs"]):
        if t["inplace"]:
            inplace[t["name"]] = (_random(rng, shape, t["dtype"], name), t["optional"])
        else:
            results.append((t, shape))
    kw.update(_example_params(op, fn))
    return op, fn, pos, kw, inplace, results


def _args(pos, kw, inplace):
    """Fresh copies of the in-place tensors for one call."""
    pos = list(pos)
    kw = dict(kw)
    state = {}
    for n, (x, optional) in inplace.items():
        state[n] = x.copy()
        if optional:
            kw[n] = state[n]
        else:
            pos.append(state[n])
    return pos, kw, state


def test_the_table_has_an_example_for_every_op():
    assert set(OPS_TOML) == set(nnplug._abi.OPS)
    for name, op in OPS_TOML.items():
        assert "example" in op, name
        assert callable(getattr(nnplug, name)), name


@pytest.mark.parametrize("name", sorted(OPS_TOML))
def test_every_op_allocated_and_out_agree(dev, name):
    """Every op of the table on its example: outputs allocated by the call (shapes from
    nnp_op_infer_shapes, or out_shape=) and outputs written into out= storage are the same
    values; out= storage is what the call returns. The reference runs every op; another device
    may answer UNSUPPORTED."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    op, fn, pos, kw, inplace, results = _prepare(name, rng)
    if op.get("collective"):
        kw["comm"] = nnplug.communicator(dev)  # one rank: y = x (test_comm.py: more ranks)
    extra = {}
    if not op.get("infer", True):
        shapes = [r[1] for r in results]
        extra["out_shape"] = shapes[0]  # a list of shapes for split's variadic output
    if name == "cast":
        extra["dtype"] = "float64"
    for t, _ in results:
        if t["optional"]:
            extra["return_" + t["name"]] = True
    # 1: allocated
    p1, k1, state1 = _args(pos, kw, inplace)
    try:
        got = fn(*p1, **k1, **extra, device=dev)
    except nnplug.UnsupportedError:
        if dev.plugin_name == "reference":
            raise
        pytest.skip(f"{name} is not supported on {dev.name}")
    # 2: into out= storage, filled with a sentinel first
    storage = []
    for t, shape in results:
        dt = _out_dtype(t["dtype"], name)
        if t["variadic"]:
            storage.append([np.full(s, SENTINEL, dt) for s in shape])
        else:
            storage.append(np.full(shape, SENTINEL, dt))
    p2, k2, state2 = _args(pos, kw, inplace)
    out = storage[0] if len(storage) == 1 else tuple(storage)  # split: a list of arrays
    got2 = fn(*p2, **k2, out=out, device=dev)
    if not results:
        assert got is None and got2 is None
    else:
        if len(results) == 1:
            got, got2 = (got,), (got2,)
        assert isinstance(got, tuple) and len(got) == len(results)
        for (t, shape), a, b, s in zip(results, got, got2, storage):
            if t["variadic"]:
                assert isinstance(a, list) and len(a) == len(shape)
                assert isinstance(b, list) and all(u is v for u, v in zip(b, s))
                pairs = list(zip(a, b, shape))
            else:
                assert b is s  # the out= storage itself is returned
                pairs = [(a, b, shape)]
            for x, y, sh in pairs:
                if op["inputs"]:
                    assert isinstance(x, np.ndarray)  # numpy in, numpy out
                else:  # no inputs (fill): host devices give numpy, others DeviceArrays
                    assert isinstance(x, np.ndarray if dev.is_cpu else nnplug.DeviceArray)
                    x = np.asarray(x)
                assert x.shape == tuple(sh) and x.dtype == y.dtype, (t["name"], x.shape, sh)
                np.testing.assert_array_equal(x, y, err_msg=f"{name}: {t['name']}")
                assert not (y == SENTINEL).all(), f"{name}: {t['name']} was not written"
    for n in inplace:
        np.testing.assert_array_equal(state1[n], state2[n], err_msg=f"{name}: {n}")
        if not inplace[n][1]:  # (sgd's optional momentum buffer is unused at momentum 0)
            assert not np.array_equal(state1[n], inplace[n][0]), f"{name}: {n} not updated"


def test_optional_outputs_only_when_asked(ref):
    """Optional outputs are computed when return_<name>=True or given in out= (None entries
    of out= are allocated)."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 1.5, (3, 8)).astype(np.float32)
    y = nnplug.dropout_forward(x, ratio=0.25, seed=5, device=ref)
    assert isinstance(y, np.ndarray) and y.shape == x.shape
    y2, mask = nnplug.dropout_forward(x, ratio=0.25, seed=5, return_mask=True, device=ref)
    np.testing.assert_array_equal(y, y2)
    assert mask.dtype == np.uint8 and set(np.unique(mask)) <= {0, 1}
    np.testing.assert_array_equal(y2 != 0, mask == 1)
    m = np.full(x.shape, 9, np.uint8)
    y3, m3 = nnplug.dropout_forward(x, ratio=0.25, seed=5, out=(None, m), device=ref)
    assert m3 is m
    np.testing.assert_array_equal(m, mask)
    np.testing.assert_array_equal(y3, y)


# --------------------------------------------------------------------- the C order --
def test_gemm_optional_input_is_keyword_only(ref):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 4), np.float32)
    c = np.full((2, 4), SENTINEL, np.float32)
    with pytest.raises(TypeError):
        nnplug.gemm(a, b, c, device=ref)  # C is keyword-only: not an output either
    assert (c == SENTINEL).all()  # nothing was written
    params = inspect.signature(nnplug.gemm).parameters
    assert [p.name for p in params.values() if p.kind == p.POSITIONAL_OR_KEYWORD] == ["A", "B"]
    assert params["C"].kind == inspect.Parameter.KEYWORD_ONLY
    assert params["beta"].default == 1.0  # ONNX
    cvec = np.arange(4, dtype=np.float32)
    y = nnplug.gemm(a, b, C=cvec, device=ref)  # beta = 1 by default: C is added
    np.testing.assert_allclose(y, a @ b + cvec, rtol=1e-6)
    y = nnplug.gemm(a, b, C=cvec, beta=0.5, trans_b=False, device=ref)
    np.testing.assert_allclose(y, a @ b + 0.5 * cvec, rtol=1e-6)
    y = nnplug.gemm(a, b.T.copy(), trans_b=True, device=ref)
    np.testing.assert_allclose(y, a @ b, rtol=1e-6)


def test_in_place_tensors_come_after_the_inputs(ref):
    """batch_norm_forward_training's running statistics and adam's state are positional after
    the inputs, updated in place, never allocated."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    scale, bias = np.ones(3, np.float32), np.zeros(3, np.float32)
    rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
    y, saved_mean, saved_inv_std = nnplug.batch_norm_forward_training(
        x, scale, bias, rm, rv, momentum=0.5, device=ref)
    np.testing.assert_allclose(saved_mean, x.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rm, 0.5 * x.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)
    assert y.shape == x.shape
    g, p = np.ones(5, np.float32), np.zeros(5, np.float32)
    m, v = np.zeros(5, np.float32), np.zeros(5, np.float32)
    assert nnplug.adam_update(g, p, m, v, lr=0.1, device=ref) is None
    np.testing.assert_allclose(p, -0.1, rtol=1e-5)
    assert (m != 0).all() and (v != 0).all()
    with pytest.raises(nnplug.InvalidArgumentError) as info:  # no outputs to pass in out=
        nnplug.adam_update(g, p, m, v, out=np.zeros(5, np.float32), device=ref)
    assert names(info.value.message, "out")


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
    from nnplug import _core
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
    assert len(_core._exported) <= 2  # the last export's entry (and a consumed one's, if alive)


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


# ------------------------------------------------------------------------- scalars --
def test_scalars_are_0d_inputs(dev):
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(nnplug.add(x, 1.5, device=dev), x + 1.5)
    np.testing.assert_array_equal(nnplug.binary(2.0, x, op="sub", device=dev), 2.0 - x)
    y = nnplug.mul(x, np.float32(3), device=dev)
    assert y.dtype == np.float32  # the scalar takes the tensors' dtype
    np.testing.assert_array_equal(y, 3 * x)
    assert nnplug.div(x, np.float64(2), device=dev).dtype == np.float32
    cond = np.array([1, 0, 1, 0], np.uint8)
    np.testing.assert_array_equal(nnplug.where(cond, x, -1.0, device=dev), [0, -1, 2, -1])
    np.testing.assert_array_equal(nnplug.where(cond, 5.0, x, device=dev), [5, 1, 5, 3])
    np.testing.assert_array_equal(nnplug.where(np.array([True, False, True, False]), x,
                                               np.float32(9), device=dev), [0, 9, 2, 9])
    a, b = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    np.testing.assert_array_equal(nnplug.gemm(a, b, C=0.5, device=dev), np.full((2, 2), 3.5))
    np.testing.assert_array_equal(nnplug.gemm(a, b, C=np.float32(-1), beta=2.0, device=dev),
                                  np.full((2, 2), 1.0))
    raises_naming("b", nnplug.add, x, "seven", device=dev)


# ---------------------------------------------------------------------- supported --
def test_supported_takes_the_ops_arguments(dev):
    a, b = np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)
    c = np.zeros(4, np.float32)
    assert nnplug.supported(nnplug.gemm, a, b, C=c, trans_b=True, device=dev) is None
    assert nnplug.supported("gemm", a, b, C=c, trans_b=True, device=dev) is None
    assert nnplug.supported(nnplug.OpKind.GEMM, a, b, trans_b=True, device=dev) is None
    y = np.full((2, 4), SENTINEL, np.float32)
    assert nnplug.supported(nnplug.gemm, a, b, trans_b=True, out=y, device=dev) is None
    assert (y == SENTINEL).all()  # supported runs nothing
    with pytest.raises(nnplug.InvalidArgumentError) as info:  # K disagrees: invalid
        nnplug.supported(nnplug.gemm, a, b, device=dev)
    assert names(info.value.message, "B")
    with pytest.raises(nnplug.InvalidArgumentError):  # C is keyword-only, as in gemm
        nnplug.supported(nnplug.gemm, a, b, c, device=dev)
    with pytest.raises(nnplug.InvalidArgumentError):
        nnplug.supported(nnplug.softmax_forward, a, function="relu", device=dev)
    with pytest.raises(nnplug.InvalidArgumentError):
        nnplug.supported("no_such_op", a, device=dev)
    with pytest.raises(nnplug.InvalidArgumentError):
        nnplug.supported(nnplug.scale, a, alpha=1.0, out=np.zeros(3, np.float32), device=dev)


def test_supported_gives_the_reason(dev):
    """A dtype a backend lacks is an answer (a reason string), not an error: float64 on the
    cpu backend, float16 on the reference kernels (reference and sim)."""
    dt = {"cpu": np.float64}.get(dev.plugin_name, np.float16)
    a = np.ones((2, 3), dt)
    reason = nnplug.supported(nnplug.gemm, a, a, trans_b=True, device=dev)
    assert isinstance(reason, str) and reason
    assert np.dtype(dt).name in reason
    with pytest.raises(nnplug.UnsupportedError) as info:  # the call itself raises
        nnplug.gemm(a, a, trans_b=True, device=dev)
    assert info.value.status == nnplug.Status.UNSUPPORTED
    assert nnplug.supported(nnplug.gemm, a.astype(np.float32), a.astype(np.float32),
                            trans_b=True, device=dev) is None


@needs_torch
def test_supported_bfloat16_on_cpu():
    try:
        cpu = nnplug.device("cpu")
    except nnplug.Error as e:
        pytest.skip(f"no cpu device: {e}")
    t = torch.ones(2, 3, dtype=torch.bfloat16)
    reason = nnplug.supported(nnplug.scale, t, alpha=2.0, device=cpu)
    if reason is None:  # the backend has bfloat16 for scale: then the call must run
        torch.testing.assert_close(nnplug.scale(t, alpha=2.0, device=cpu), 2 * t)
    else:
        assert "bfloat16" in reason
        with pytest.raises(nnplug.UnsupportedError):
            nnplug.scale(t, alpha=2.0, device=cpu)
    # cast: torch in, torch out of the dtype asked for
    x = torch.linspace(-2, 2, 7)
    if nnplug.supported(nnplug.cast, x, dtype="bfloat16", device=cpu) is None:
        y = nnplug.cast(x, dtype=torch.bfloat16, device=cpu)
        assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16
        torch.testing.assert_close(y, x.to(torch.bfloat16))


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


# ------------------------------------------------------------------------- streams --
def test_stream_then_synchronize(dev):
    s = dev.stream()
    host = np.arange(1000, dtype=np.float32)
    x = dev.to_device(host)
    y = nnplug.scale(x, alpha=3.0, stream=s)  # allocated on the stream's device
    assert isinstance(y, nnplug.DeviceArray) and y.device == dev
    out = dev.empty(host.shape)
    assert nnplug.add(y, x, out=out, stream=s) is out
    s.synchronize()
    np.testing.assert_array_equal(y.numpy(), 3 * host)
    np.testing.assert_array_equal(out.numpy(), 4 * host)
    if dev.is_cpu:  # host memory: numpy arrays are used in place on the stream
        z = np.full_like(host, SENTINEL)
        nnplug.scale(host, out=z, alpha=-1.0, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(z, -host)
    s.destroy()
    with pytest.raises(nnplug.InvalidArgumentError):  # a destroyed stream is refused
        nnplug.scale(x, alpha=1.0, stream=s)


def test_graph_capture_and_launch(dev):
    """A captured pair of ops replays on each launch with the inputs as they are then; the
    stream refuses what a capture cannot record; an exception in the block discards it."""
    s = dev.stream()
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = dev.to_device(host)
    y, z = dev.empty(host.shape), dev.empty(host.shape)
    with s.capture() as cap:
        nnplug.scale(x, out=y, alpha=2.0, stream=s)
        nnplug.add(y, x, out=z, stream=s)
        with pytest.raises(nnplug.InvalidArgumentError, match="capturing"):
            s.synchronize()
    s.synchronize()
    graph = cap.graph
    assert isinstance(graph, nnplug.Graph)
    for k in range(3):
        x.copy_from(host + k)
        graph.launch(s)
        s.synchronize()
        np.testing.assert_array_equal(z.numpy(), 3 * (host + k))
    with pytest.raises(RuntimeError):
        with s.capture():
            nnplug.scale(x, out=y, alpha=5.0, stream=s)
            raise RuntimeError("discard")
    s.synchronize()  # not capturing any more
    graph.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(y.numpy(), 2 * (host + 2))
    graph.destroy()
    with pytest.raises(nnplug.InvalidArgumentError, match="destroyed"):
        graph.launch(s)


def test_capture_keeps_the_arrays_it_made(dev):
    """A Python scalar in a captured call becomes a 0-d array that the graph reads at every
    launch: the graph keeps it alive (freed, its memory would be reused by the arrays below,
    and the launch would add 1000). Host-memory devices: elsewhere a scalar passed with
    stream= is a host tensor, refused."""
    if not dev.is_cpu:
        pytest.skip("scalars with stream= need a device that uses host memory")
    s = dev.stream()
    host = np.full(4, 2.0, dtype=np.float32)
    x, y = dev.to_device(host), dev.empty(host.shape)
    with s.capture() as cap:
        nnplug.add(x, 1.0, out=y, stream=s)
    gc.collect()
    junk = [np.asarray(1000.0, dtype=np.float32) for _ in range(1000)]
    for _ in range(2):
        cap.graph.launch(s)
        s.synchronize()
        np.testing.assert_array_equal(y.numpy(), host + 1)
    del junk
    cap.graph.destroy()


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


def test_execute_low_level(dev):
    x = np.arange(6, dtype=np.float32)
    y = np.full_like(x, SENTINEL)
    p = nnplug._abi.nnp_scale_params(alpha=-2.0)
    assert nnplug.execute(nnplug.OpKind.SCALE, p, [x], [y], device=dev) is y
    np.testing.assert_array_equal(y, -2 * x)
    d = np.full_like(x, SENTINEL)
    nnplug.execute(nnplug.OpKind.COPY, None, [x], [d], device=dev)
    np.testing.assert_array_equal(d, x)
