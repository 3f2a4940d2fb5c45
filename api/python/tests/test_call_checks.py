"""Calls that must never silently do the wrong thing, and the fast path of repeated calls:
per-spatial-axis params (pads, strides, ...) checked against the input's rank with PyTorch's
short forms; a warning for PyTorch tensors that require grad; hints on refused dtypes and
strided views; nnplug.__version__; DeviceArray arithmetic; the call plans of repeated calls
(same results as the full path, every refusal kept) and the overhead benchmark's smoke run."""
import os
import re
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import nnplug

try:
    import torch
except ImportError:  # python3-torch is a test dependency; without it those tests skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch (python3-torch)")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
SENTINEL = 7.0


def _refused(fn, *args, cls=nnplug.InvalidArgumentError, match=None, **kwargs):
    """fn must raise cls (an nnplug.Error) whose message matches every regex in match."""
    with pytest.raises(cls) as info:
        fn(*args, **kwargs)
    for m in ([match] if isinstance(match, str) else match or []):
        assert re.search(m, info.value.message), (m, info.value.message)
    return info.value.message


def _cpu_or_skip():
    try:
        return nnplug.device("cpu")
    except nnplug.Error as e:
        pytest.skip(f"no cpu device: {e}")


def _conv_ref(x, w, pads, strides=(1, 1)):
    """ONNX Conv, 2-D, one channel and filter: pads [top, left, bottom, right]."""
    xp = np.pad(x[0, 0], ((pads[0], pads[2]), (pads[1], pads[3])))
    r, s = w.shape[2:]
    p = (xp.shape[0] - r) // strides[0] + 1
    q = (xp.shape[1] - s) // strides[1] + 1
    y = np.empty((1, 1, p, q), x.dtype)
    for i in range(p):
        for j in range(q):
            y[0, 0, i, j] = (xp[i * strides[0]:i * strides[0] + r,
                                j * strides[1]:j * strides[1] + s] * w[0, 0]).sum()
    return y


# ------------------------------------------------------ per-spatial-axis params --
X4 = np.arange(1 * 1 * 6 * 6, dtype=np.float32).reshape(1, 1, 6, 6) / 10
W4 = np.linspace(-1, 1, 9, dtype=np.float32).reshape(1, 1, 3, 3)


def test_the_reported_short_lists_are_refused(ref):
    """nnplug.conv_forward(x, w, pads=(1,)) used to give (1, 1, 7, 6) and strides=(2,)
    (1, 1, 3, 6): the struct's missing entries were 0."""
    y = np.full((1, 1, 6, 6), SENTINEL, np.float32)
    msg = _refused(nnplug.conv_forward, X4, W4, pads=(1,), out=y, device=ref,
                   match=[r"\bpads\b", "1 entry", r"\b4\b", r"\b2\b", "single integer"])
    assert "x has 2 spatial axes" in msg
    assert (y == SENTINEL).all()
    y3 = np.full((1, 1, 2, 2), SENTINEL, np.float32)
    _refused(nnplug.conv_forward, X4, W4, strides=(2,), out=y3, device=ref,
             match=[r"\bstrides\b", "1 entry", "takes 2 \\(one per axis\\) or a single integer"])
    assert (y3 == SENTINEL).all()


@pytest.mark.parametrize("kw,n", [
    (dict(pads=(1, 1, 1)), 3), (dict(pads=(1, 1, 1, 1, 1)), 5), (dict(pads=[0] * 8), 8),
    (dict(strides=(1, 1, 1)), 3), (dict(dilations=(1,)), 1), (dict(kernel_shape=(3,)), 1),
    (dict(kernel_shape=(3, 3, 3)), 3)])
def test_every_wrong_length_is_refused(ref, kw, n):
    (name,) = kw
    y = np.full((1, 1, 4, 4), SENTINEL, np.float32)
    _refused(nnplug.conv_forward, X4, W4, out=y, device=ref, **kw,
             match=[rf"\b{name}\b", rf"has {n} entr"])
    assert (y == SENTINEL).all()
    # nnplug.supported checks the same way
    _refused(nnplug.supported, nnplug.conv_forward, X4, W4, device=ref, **kw,
             match=rf"\b{name}\b")


def test_short_forms_mean_every_axis(ref):
    y_onnx = nnplug.conv_forward(X4, W4, pads=(1, 1, 1, 1), device=ref)
    np.testing.assert_allclose(y_onnx, _conv_ref(X4, W4, (1, 1, 1, 1)), rtol=1e-5, atol=1e-5)
    for pads in (1, (1, 1), [1, 1]):  # a bare int; k entries: begin = end
        np.testing.assert_array_equal(nnplug.conv_forward(X4, W4, pads=pads, device=ref),
                                      y_onnx)
    # 2k entries stay ONNX's [begins..., ends...]
    y = nnplug.conv_forward(X4, W4, pads=(1, 0, 0, 1), device=ref)
    np.testing.assert_allclose(y, _conv_ref(X4, W4, (1, 0, 0, 1)), rtol=1e-5, atol=1e-5)
    assert nnplug.conv_forward(X4, W4, pads=(2, 1), device=ref).shape == (1, 1, 8, 6)
    y2 = nnplug.conv_forward(X4, W4, strides=2, device=ref)
    np.testing.assert_array_equal(y2, nnplug.conv_forward(X4, W4, strides=(2, 2), device=ref))
    np.testing.assert_allclose(y2, _conv_ref(X4, W4, (0, 0, 0, 0), (2, 2)), rtol=1e-5,
                               atol=1e-5)
    assert nnplug.conv_forward(X4, W4, dilations=2, device=ref).shape == (1, 1, 2, 2)
    assert nnplug.conv_forward(X4, W4, kernel_shape=3, device=ref).shape == (1, 1, 4, 4)
    # () keeps the C default (all 0: ONNX's defaults)
    assert nnplug.conv_forward(X4, W4, pads=(), strides=(), device=ref).shape == (1, 1, 4, 4)


def test_short_forms_in_1d_and_3d(ref):
    x1 = np.linspace(-1, 1, 10, dtype=np.float32).reshape(1, 1, 10)
    w1 = np.ones((1, 1, 3), np.float32)
    assert nnplug.conv_forward(x1, w1, pads=1, device=ref).shape == (1, 1, 10)
    np.testing.assert_array_equal(nnplug.conv_forward(x1, w1, pads=(2,), device=ref),
                                  nnplug.conv_forward(x1, w1, pads=(2, 2), device=ref))
    assert nnplug.conv_forward(x1, w1, pads=(2, 0), device=ref).shape == (1, 1, 10)
    _refused(nnplug.conv_forward, x1, w1, pads=(1, 1, 1), device=ref,
             match=["x has 1 spatial axis", r"takes 2 .*, 1 \(begin = end"])
    x3 = np.ones((1, 1, 4, 4, 4), np.float32)
    w3 = np.ones((1, 1, 3, 3, 3), np.float32)
    assert nnplug.conv_forward(x3, w3, pads=(1, 0, 1), device=ref).shape == (1, 1, 4, 2, 4)
    _refused(nnplug.conv_forward, x3, w3, strides=(1, 1), device=ref,
             match=["strides has 2 entries", "x has 3 spatial axes", "takes 3"])


def test_pool_and_conv_transpose_lists(ref):
    x = np.arange(2 * 16, dtype=np.float32).reshape(1, 2, 4, 4)
    np.testing.assert_array_equal(
        nnplug.pool_forward(x, kernel_shape=2, strides=2, device=ref),
        nnplug.pool_forward(x, kernel_shape=(2, 2), strides=(2, 2), device=ref))
    y = np.full((1, 2, 2, 2), SENTINEL, np.float32)
    _refused(nnplug.pool_forward, x, kernel_shape=(2,), out=y, device=ref,
             match=r"\bkernel_shape has 1 entry")
    _refused(nnplug.pool_forward, x, kernel_shape=2, pads=(0, 0, 0), out=y, device=ref,
             match=r"\bpads has 3 entries")
    assert (y == SENTINEL).all()
    xt = np.ones((1, 2, 3, 3), np.float32)
    wt = np.ones((2, 3, 3, 3), np.float32)
    assert nnplug.conv_transpose_forward(xt, wt, strides=2, output_padding=1,
                                         device=ref).shape == (1, 3, 8, 8)
    yt = np.full((1, 3, 8, 7), SENTINEL, np.float32)
    _refused(nnplug.conv_transpose_forward, xt, wt, strides=(2, 2), output_padding=(1,),
             out=yt, device=ref, match=r"\boutput_padding has 1 entry")
    _refused(nnplug.conv_transpose_forward, xt, wt, output_shape=(8,), out=yt, device=ref,
             match=r"\boutput_shape has 1 entry")
    assert (yt == SENTINEL).all()
    # the backward ops take k from their first input (dy)
    dy = np.ones((1, 1, 6, 6), np.float32)
    _refused(nnplug.conv_backward_data, dy, W4, pads=(1,), out_shape=(1, 1, 6, 6),
             device=ref, match=["pads has 1 entry", "dy has 2 spatial axes"])


def test_spatial_list_entries_are_still_checked(ref):
    _refused(nnplug.conv_forward, X4, W4, pads=(1, 1.5), device=ref, match=r"pads\[1\]")
    _refused(nnplug.conv_forward, X4, W4, pads="11", device=ref, match=r"pads")
    _refused(nnplug.conv_forward, X4, W4, strides=2.0, device=ref, match=r"strides")
    _refused(nnplug.conv_forward, X4, W4, strides=True, device=ref, match=r"strides")


# ---------------------------------------------------------- PyTorch requires_grad --
@needs_torch
def test_requires_grad_warns_once_per_call_site(ref):
    a = torch.ones(3, 3, dtype=torch.float64, requires_grad=True)
    b = torch.ones(3, 3, dtype=torch.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # the full path, then the call plan
            y = nnplug.gemm(a, b, device=ref)
        assert y.grad_fn is None
    assert len(caught) == 2
    for w in caught:
        assert issubclass(w.category, nnplug.AutogradWarning)
        assert "nnplug.torch" in str(w.message) and "grad_fn" in str(w.message)
        assert os.path.abspath(w.filename) == os.path.abspath(__file__)  # the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.no_grad():
            nnplug.gemm(a, b, device=ref)
        nnplug.gemm(a.detach(), b, device=ref)
        nnplug.add(b, 1.0, device=ref)


@needs_torch
def test_the_autograd_twins_do_not_warn(ref):
    import nnplug.torch as nt
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nnplug.AutogradWarning)
        y = nt.linear(x, w, device=ref)
        y.sum().backward()
    assert x.grad is not None and w.grad is not None


# ------------------------------------------------------------------------ hints --
def test_unsupported_dtype_names_the_devices_that_run_it():
    cpu = _cpu_or_skip()
    a = np.ones((3, 3), np.float64)
    y = np.full((3, 3), SENTINEL)
    if nnplug.supported(nnplug.gemm, a, a, device=cpu) is None:
        pytest.skip("this cpu backend runs float64 gemm")
    msg = _refused(nnplug.gemm, a, a, out=y, cls=nnplug.UnsupportedError,
                   match=["float64", r"devices present that run this call: .*reference",
                          r'device="'])
    assert "cpu" not in msg.split("devices present")[1].split(":")[1]
    assert (y == SENTINEL).all()
    # the device the hint names runs it
    name = re.search(r'pass device="([^"]+)"', msg).group(1)
    np.testing.assert_array_equal(nnplug.gemm(a, a, device=name), a @ a)


def test_unsupported_everywhere_says_so(dev):
    x = np.ones((2, 3), np.float16)
    y = np.full((2, 3), SENTINEL, np.float16)
    able = [d.name for d in nnplug.devices()
            if nnplug.supported(nnplug.activation_forward, x, function="relu", device=d) is None]
    if dev.name in able:
        pytest.skip(f"{dev.name} runs float16 relu")
    msg = _refused(nnplug.activation_forward, x, function="relu", out=y, device=dev,
                   cls=nnplug.UnsupportedError, match="float16")
    if able:
        assert f"devices present that run this call: {', '.join(able)}" in msg
    else:
        assert "no other device present runs this call either" in msg
    assert (y == SENTINEL).all()


def test_transposed_operands_get_a_hint(dev):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones((3, 2), np.float32)
    y = np.full((4, 2), SENTINEL, np.float32)
    if dev.is_cpu:  # strided numpy views reach the library only on host-memory devices
        _refused(nnplug.gemm, a.T, b, out=y, device=dev,
                 match=["expected compact row-major strides", r"\bA is a strided view",
                        r"trans_a=True"])
        assert (y == SENTINEL).all()
        np.testing.assert_allclose(nnplug.gemm(a, b, trans_a=True, device=dev), a.T @ b)
        _refused(nnplug.matmul, a, np.ones((2, 4), np.float32).T, device=dev,
                 match=[r"\bB is a strided view", r"trans_b=True"])
        _refused(nnplug.activation_forward, a.T, function="relu", device=dev,
                 match=[r"\bx is a strided view", "ascontiguousarray", r"\.contiguous\(\)"])
    da = dev.to_device(a)
    _refused(nnplug.gemm, da.T, dev.to_device(b), device=dev, match=r"trans_a=True")


# ---------------------------------------------------------------------- version --
def test_version_is_the_projects():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        project = re.search(r"project\(nnplug\s+VERSION\s+([0-9.]+)", f.read()).group(1)
    assert nnplug.__version__ == project == nnplug.version()
    assert nnplug.__version__ == ".".join(str(v) for v in nnplug.get_version())
    with pytest.raises(AttributeError):
        nnplug.no_such_attribute  # noqa: B018


# ----------------------------------------------------------- DeviceArray arithmetic --
def test_device_array_arithmetic(dev):
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
    b = np.linspace(1, 3, 3, dtype=np.float32)
    da, db = dev.to_device(a), dev.to_device(b)
    cases = [(da + 1, a + 1), (1 + da, 1 + a), (da - 0.5, a - 0.5), (2 - da, 2 - a),
             (da * 3, a * 3), (3 * da, 3 * a), (da / 4, a / 4), (1 / db, 1 / b),
             (da + db, a + b), (da * db, a * b), (da - db, a - b), (da / db, a / b),
             (db ** 2, b ** 2), (2.0 ** db, 2.0 ** b), (-da, -a), (da + np.float32(2), a + 2)]
    if dev.is_cpu:
        cases.append((da + b, a + b))  # a numpy operand (host memory)
    for got, want in cases:
        assert isinstance(got, nnplug.DeviceArray) and got.device == dev
        assert got.dtype == "float32"
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)
    c = dev.to_device(a)
    before = c
    c += db
    c *= 2
    c -= 1
    c /= 2
    assert c is before
    np.testing.assert_allclose(c.numpy(), ((a + b) * 2 - 1) / 2, rtol=1e-6)


def test_device_array_arithmetic_refusals(dev):
    da = dev.to_device(np.ones((2, 3), np.float32))
    for bad in ("1", [1.0, 2.0], None, 1j):
        with pytest.raises(TypeError):
            da + bad
        with pytest.raises(TypeError):
            bad * da
    small = dev.to_device(np.full(3, SENTINEL, np.float32))
    _refused(small.__iadd__, da, match=r"\by\b")  # the broadcast shape is not the output's
    assert (small.numpy() == SENTINEL).all()
    _refused(lambda: da + dev.to_device(np.ones(4, np.float32)), match=r"\bb\b")
    _refused(lambda: da + dev.to_device(np.ones(3, np.float64)), match=r"\bb\b|float64")


# --------------------------------------------------------------- call plans --
def test_repeated_calls_use_new_data(dev):
    rng = np.random.default_rng(3)
    for kind in ("numpy", "device") if dev.is_cpu else ("device",):
        for _ in range(4):
            a = rng.standard_normal((3, 5)).astype(np.float32)
            b = rng.standard_normal((5, 2)).astype(np.float32)
            if kind == "device":
                y = nnplug.gemm(dev.to_device(a), dev.to_device(b))
                y = y.numpy()
            else:
                y = nnplug.gemm(a, b, device=dev)
            np.testing.assert_allclose(y, a @ b, rtol=1e-5, atol=1e-5)
        # into out=, then with alpha changed
        out = np.empty((3, 2), np.float32) if kind == "numpy" else dev.empty((3, 2))
        for alpha in (1.0, 1.0, 2.0, 2.0, -1.0):
            args = (a, b) if kind == "numpy" else (dev.to_device(a), dev.to_device(b))
            r = nnplug.gemm(*args, alpha=alpha, out=out, device=dev)
            assert r is out
            got = out if kind == "numpy" else out.numpy()
            np.testing.assert_allclose(got, alpha * (a @ b), rtol=1e-5, atol=1e-5)


def test_repeated_calls_keep_every_refusal(dev):
    a = np.ones((3, 3), np.float32)
    da = dev.to_device(a)
    for _ in range(2):
        nnplug.gemm(da, da, trans_a=True)
    _refused(nnplug.gemm, da, da, trans_a=1.0, match=r"\btrans_a\b")
    _refused(nnplug.gemm, da, da, trans_a=2, match=r"\btrans_a\b")
    x = dev.to_device(X4)
    w = dev.to_device(W4)
    for _ in range(2):
        nnplug.conv_forward(x, w, pads=[1, 1])
    _refused(nnplug.conv_forward, x, w, pads=[1.0, 1], match=r"pads\[0\]")
    # a freed array, after a call that made a plan for its signature
    gone = dev.to_device(a)
    nnplug.gemm(gone, da)
    gone.free()
    _refused(nnplug.gemm, gone, da, match="freed")
    if dev.is_cpu:
        y = np.full((3, 3), SENTINEL, np.float32)
        for _ in range(2):
            nnplug.gemm(a, a, out=y, device=dev)
        y[...] = SENTINEL
        y.setflags(write=False)
        _refused(nnplug.gemm, a, a, out=y, device=dev, match=r"\bY\b")
        assert (y == SENTINEL).all()


def test_scalar_inputs_keep_their_sign(dev):
    x = dev.to_device(np.ones(3, np.float32))
    for _ in range(2):
        assert not np.signbit(nnplug.mul(x, 0.0).numpy()).any()
        assert np.signbit(nnplug.mul(x, -0.0).numpy()).all()
        np.testing.assert_array_equal(nnplug.add(x, 2).numpy(), [3, 3, 3])
        np.testing.assert_array_equal(nnplug.add(x, 5).numpy(), [6, 6, 6])


def test_several_outputs_with_out(dev):
    x = np.arange(2 * 16, dtype=np.float32).reshape(1, 2, 4, 4)
    dx = dev.to_device(x)
    y = dev.empty((1, 2, 2, 2))
    for _ in range(3):
        r = nnplug.pool_forward(dx, kernel_shape=2, strides=2, return_indices=True, out=y)
        assert isinstance(r, tuple) and len(r) == 2 and r[0] is y
        np.testing.assert_array_equal(y.numpy(), x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
        assert r[1].shape == (1, 2, 2, 2) and r[1].dtype == "int64"
    for _ in range(2):
        only = nnplug.pool_forward(dx, kernel_shape=2, strides=2)
        assert isinstance(only, nnplug.DeviceArray)


@needs_torch
def test_repeated_torch_calls(dev):
    if not dev.is_cpu:
        pytest.skip("PyTorch CPU tensors are host memory")
    for _ in range(3):
        a, b = torch.randn(3, 4), torch.randn(4, 2)
        y = nnplug.gemm(a, b, device=dev)
        assert isinstance(y, torch.Tensor)
        torch.testing.assert_close(y, a @ b)
        out = torch.empty(3, 2)
        assert nnplug.gemm(a, b, out=out, device=dev) is out
        torch.testing.assert_close(out, a @ b)


def test_calls_from_several_threads(dev):
    rng = np.random.default_rng(5)
    data = [(rng.standard_normal((8, 8)).astype(np.float32),
             rng.standard_normal((8, 8)).astype(np.float32)) for _ in range(4)]
    errors = []

    def work(a, b):
        try:
            da, db = dev.to_device(a), dev.to_device(b)
            for _ in range(200):
                y = nnplug.gemm(da, db).numpy()
                np.testing.assert_allclose(y, a @ b, rtol=1e-4, atol=1e-4)
        except Exception as e:  # noqa: BLE001 — reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=ab) for ab in data]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_a_destroyed_default_stream_takes_the_full_path(dev):
    x = dev.to_device(np.ones(4, np.float32))
    for _ in range(2):
        nnplug.add(x, x)
    s = dev.default_stream()
    s.destroy()  # the plan's stream is gone: a new default stream is made
    np.testing.assert_array_equal(nnplug.add(x, x).numpy(), [2, 2, 2, 2])


# ------------------------------------------------------------- the benchmark --
def test_overhead_benchmark_runs():
    """scripts/bench/python_overhead.py --quick: every case runs and prints its row (the
    timings of a quick run mean nothing and are not checked)."""
    script = os.path.join(ROOT, "scripts", "bench", "python_overhead.py")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "api", "python")
    r = subprocess.run([sys.executable, script, "--quick", "--devices", "reference"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()]
    kinds = {(row[0] + " " + row[1], row[2], row[3]) for row in rows if len(row) >= 6}
    for kind in ("device", "device+out", "numpy", "numpy+out"):
        assert ("gemm 4x4", kind, "reference") in kinds, r.stdout


@pytest.fixture
def full_path_calls(monkeypatch):
    """The names of the ops whose calls take the full path (_Op._run), in order."""
    from nnplug import _call
    full = []
    run = _call._Op._run

    def counting(self, a, mode, key):
        full.append(self.name)
        return run(self, a, mode, key)

    monkeypatch.setattr(_call._Op, "_run", counting)
    return full


def test_repeated_calls_take_the_plan(dev, full_path_calls):
    """The second call of a signature skips the full path (_Op._run); a new shape, dtype or
    keyword value takes it again."""
    full = full_path_calls
    x = dev.to_device(np.ones((2, 3), np.float32))
    calls = [lambda: nnplug.activation_forward(x, function="relu"),
             lambda: nnplug.activation_forward(x, function="relu"),
             lambda: nnplug.activation_forward(x, function="tanh"),
             lambda: nnplug.activation_forward(x.reshape(3, 2), function="tanh"),
             lambda: nnplug.activation_forward(x.reshape(3, 2), function="tanh"),
             lambda: nnplug.add(x, 1.0), lambda: nnplug.add(x, 1.0), lambda: nnplug.add(x, 2.0)]
    for c in calls:
        c()
    assert full == ["activation_forward", "activation_forward", "activation_forward",
                    "binary", "binary"]


def test_calls_on_a_stream_take_a_plan_per_stream(dev, full_path_calls):
    """A call with stream= has a plan per stream: the second call of a signature on a stream
    skips the full path and queues without waiting; another stream has its own plan; a
    capturing stream and a destroyed one take the full path (which refuses the latter)."""
    full = full_path_calls
    data = np.arange(4, dtype=np.float32)
    x = dev.to_device(data)
    s1, s2 = dev.stream(), dev.stream()
    for s in (s1, s1, s2, s2, s1):
        y = nnplug.scale(x, alpha=2.0, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(y.numpy(), 2 * data)
    assert len(full) == 2  # the first call on each stream
    out = dev.empty((4,))
    with s1.capture() as cap:
        nnplug.scale(x, alpha=2.0, out=out, stream=s1)
    assert len(full) == 3  # capturing: the full path, which keeps the call's arrays
    assert cap.graph is not None
    cap.graph.launch(s1)
    s1.synchronize()
    np.testing.assert_array_equal(out.numpy(), 2 * data)
    s2.destroy()
    with pytest.raises(nnplug.Error, match="destroyed"):
        nnplug.scale(x, alpha=2.0, stream=s2)
    assert len(full) == 4


def test_a_plan_does_not_keep_its_stream_alive(dev):
    import gc
    import weakref
    x = dev.to_device(np.ones(4, np.float32))
    s = dev.stream()
    for _ in range(2):
        nnplug.scale(x, alpha=2.0, stream=s)
    s.synchronize()
    ref = weakref.ref(s)
    del s
    gc.collect()
    assert ref() is None


def test_views_at_other_offsets_share_a_plan(dev):
    """Views of one shape at different offsets (rows of a resident data set) have one
    signature: each call reads its own rows."""
    data = np.arange(24, dtype=np.float32)
    d = dev.to_device(data)
    out = dev.empty((4,))
    for off in (0, 4, 4, 12, 20, 0):
        v = d.view((4,), off)
        np.testing.assert_array_equal(nnplug.scale(v, alpha=2.0).numpy(), 2 * data[off:off + 4])
        nnplug.scale(v, alpha=3.0, out=out.view((4,)))
        np.testing.assert_array_equal(out.numpy(), 3 * data[off:off + 4])
    y = dev.to_device(np.zeros(8, np.float32))
    for off in (0, 4):  # into views of one output at two offsets
        nnplug.scale(d.view((4,), off), alpha=1.0, out=y.view((4,), off))
    np.testing.assert_array_equal(y.numpy(), data[:8])


def test_supported_passes_the_ops_own_op_keyword():
    # supported()'s first parameter is positional-only: binary's, unary_forward's and reduce's
    # own `op=` reaches the op (an unknown name is refused as the op itself refuses it).
    x = np.ones((2, 3), np.float32)
    assert nnplug.supported("binary", x, x, op="add", device="reference") is None
    assert nnplug.supported(nnplug.reduce, x, op="max", device="reference") is None
    assert nnplug.supported("unary_forward", x, op="exp", device="reference") is None
    with pytest.raises((nnplug.Error, ValueError, KeyError)):
        nnplug.supported("binary", x, x, op="no_such_function", device="reference")
