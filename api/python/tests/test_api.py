"""The Python package's calling convention (nnplug.ops generated from the op table): every op
called with allocated outputs and with out= storage; the C input order with keyword-only
optional inputs; scalars as 0-d inputs; nnplug.supported with an op's own arguments; streams
and graphs; nnplug.execute. DeviceArray, DLPack and nnplug.asarray: test_arrays.py; bad
arguments and the Error subclasses: test_errors.py."""
import gc
import inspect
import os
import tomllib
import zlib

import numpy as np
import pytest

import nnplug
from api_helpers import SENTINEL, names, needs_torch, raises_naming, torch

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ops", "ops.toml")


def _load_table():
    with open(TABLE, "rb") as f:
        spec = tomllib.load(f)
    structs = {s["name"]: s for s in spec["struct"]}
    return {op["name"]: op for op in spec["op"]}, structs


OPS_TOML, STRUCTS_TOML = _load_table()


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
    cpu backend, float16 on the reference (sim runs every float dtype: the next test)."""
    if dev.plugin_name == "sim":
        pytest.skip("the sim backend runs GEMM in every float dtype")
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


def test_sim_16bit_is_the_exact_result_rounded_once():
    """The sim backend's float16 ops are the reference's float64 kernels on widened copies,
    rounded once to nearest even: numpy's float64 product cast to float16, bit for bit."""
    try:
        sim = nnplug.device("sim")
    except nnplug.Error as e:
        pytest.skip(f"no sim device: {e}")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((5, 7)).astype(np.float16)
    b = rng.standard_normal((7, 3)).astype(np.float16)
    y = nnplug.gemm(a, b, device=sim)
    assert y.dtype == np.float16
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))



def test_sim_16bit_layer_norm_keeps_float32_statistics():
    """ABI 1.10: a float16 layer norm's mean and inv_std are float32 (ONNX's stash_type 1):
    on sim the exact statistics rounded once to float32, y the exact result rounded once to
    float16; the backward reads them as float32. A float16 mean or inv_std is refused."""
    try:
        sim = nnplug.device("sim")
    except nnplug.Error as e:
        pytest.skip(f"no sim device: {e}")
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((3, 5, 8)) * 4 + 1).astype(np.float16)
    scale = rng.uniform(0.5, 1.5, 8).astype(np.float16)
    y, mean, inv_std = nnplug.ops.layer_norm_forward(x, scale, return_mean=True,
                                                     return_inv_std=True, device=sim)
    assert (y.dtype, mean.dtype, inv_std.dtype) == (np.float16, np.float32, np.float32)
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=-1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(axis=-1, keepdims=True)
    is64 = 1 / np.sqrt(var + 1e-5)
    # float64 sums in another order than the reference's loop: within a few float64 ulps, so
    # the float32 roundings agree except at a tie (none in this draw).
    np.testing.assert_array_equal(mean, mu.astype(np.float32))
    np.testing.assert_array_equal(inv_std, is64.astype(np.float32))
    want = ((x64 - mu) * is64 * scale.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))
    dy = rng.standard_normal(x.shape).astype(np.float16)
    dx, dscale = nnplug.ops.layer_norm_backward(x, dy, scale, mean, inv_std, device=sim)
    assert dx.dtype == dscale.dtype == np.float16
    xhat = (x64 - mu) * is64  # the float32 statistics' values differ from these by < 2^-24
    np.testing.assert_allclose(dscale.astype(np.float64), (dy * xhat).sum(axis=(0, 1)),
                               rtol=2e-3, atol=2e-3)
    with pytest.raises(nnplug.Error, match="expected dtype float32"):
        nnplug.ops.layer_norm_backward(x, dy, scale, mean.astype(np.float16), inv_std,
                                       device=sim)


def test_sim_16bit_batch_norm_takes_float32_channel_tensors():
    """ABI 1.10: a float16 batch norm's scale, bias and statistics are float32 (as cuDNN's and
    PyTorch's for 16-bit inputs): on sim the saved statistics are the exact ones rounded once to
    float32, the running ones updated in float32 in place, y the exact result rounded once to
    float16; the backward's dscale and dbias are float32. A float16 scale is refused."""
    try:
        sim = nnplug.device("sim")
    except nnplug.Error as e:
        pytest.skip(f"no sim device: {e}")
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 3, 2, 2)) * 3 + 1).astype(np.float16)
    xs = x.astype(np.float64)
    scale, bias = np.float32([1.0, 0.5, 2.0]), np.float32([0.0, 1.0, -1.0])
    running_mean, running_var = np.zeros(3, np.float32), np.ones(3, np.float32)
    y, saved_mean, saved_inv_std = nnplug.ops.batch_norm_forward_training(
        x, scale, bias, running_mean, running_var, device=sim)
    assert y.dtype == np.float16
    assert saved_mean.dtype == saved_inv_std.dtype == np.float32
    mu = xs.mean(axis=(0, 2, 3))
    var = xs.var(axis=(0, 2, 3))
    np.testing.assert_array_equal(saved_mean, mu.astype(np.float32))
    np.testing.assert_array_equal(saved_inv_std, (1 / np.sqrt(var + 1e-5)).astype(np.float32))
    # the running statistics, updated in place in float32 (momentum 0.9; unbiased var, M = 16)
    np.testing.assert_allclose(running_mean, 0.1 * mu, rtol=1e-6)
    np.testing.assert_allclose(running_var, 0.9 + 0.1 * var * 16 / 15, rtol=1e-6)
    c = (lambda a: np.asarray(a, np.float64)[None, :, None, None])
    want = c(scale) * (xs - c(mu)) / np.sqrt(c(var) + 1e-5) + c(bias)
    np.testing.assert_array_equal(y.view(np.uint16), want.astype(np.float16).view(np.uint16))
    dy = rng.standard_normal(x.shape).astype(np.float16)
    dx, dscale, dbias = nnplug.ops.batch_norm_backward(x, dy, scale, saved_mean, saved_inv_std,
                                                       device=sim)
    assert dx.dtype == np.float16 and dscale.dtype == dbias.dtype == np.float32
    np.testing.assert_allclose(dbias, dy.astype(np.float64).sum(axis=(0, 2, 3)), rtol=1e-6)
    with pytest.raises(nnplug.Error, match="expected dtype float32"):
        nnplug.ops.batch_norm_backward(x, dy, scale.astype(np.float16), saved_mean,
                                       saved_inv_std, device=sim)


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


def test_stream_native_handle(dev):
    """Stream.native_handle (nnp_stream_get_native, ABI 1.6): the cuda plugin's cudaStream_t,
    UNSUPPORTED on the backends without native streams; a destroyed stream is refused."""
    s = dev.stream()
    if dev.dldevice[0] == nnplug.DLDeviceType.kDLCUDA:
        h = s.native_handle
        assert isinstance(h, int) and h != 0 and s.native_handle == h
    else:
        with pytest.raises(nnplug.UnsupportedError) as e:
            _ = s.native_handle
        assert e.value.status == nnplug.Status.UNSUPPORTED
        assert "nnp_stream_get_native" in e.value.message
        assert "has no native streams" in e.value.message
    s.destroy()
    with pytest.raises(nnplug.InvalidArgumentError):
        _ = s.native_handle


def test_stream_native_handle_cuda():
    """On a cuda device (skipped without one): each stream's own non-zero cudaStream_t."""
    try:
        cuda = nnplug.device("cuda:0")
    except nnplug.Error as e:
        pytest.skip(f"no cuda device: {e}")
    a, b = cuda.stream(), cuda.stream()
    ha, hb = a.native_handle, b.native_handle
    assert isinstance(ha, int) and ha != 0
    assert isinstance(hb, int) and hb != 0 and hb != ha
    assert a.native_handle == ha
    a.destroy()
    b.destroy()


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


# ------------------------------------------------------------------ nnplug.execute --
def test_execute_low_level(dev):
    x = np.arange(6, dtype=np.float32)
    y = np.full_like(x, SENTINEL)
    p = nnplug._abi.nnp_scale_params(alpha=-2.0)
    assert nnplug.execute(nnplug.OpKind.SCALE, p, [x], [y], device=dev) is y
    np.testing.assert_array_equal(y, -2 * x)
    d = np.full_like(x, SENTINEL)
    nnplug.execute(nnplug.OpKind.COPY, None, [x], [d], device=dev)
    np.testing.assert_array_equal(d, x)
