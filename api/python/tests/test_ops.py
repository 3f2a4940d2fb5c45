"""Every op wrapper of nnplug.ops against numpy- or PyTorch-computed values, on the reference
device and (when built) the cpu device, with numpy arrays passed zero-copy; plus DeviceArray
and DLPack (PyTorch) operands, the error path and the device/record queries."""
import numpy as np
import pytest

import nnplug

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # python3-torch is a test dependency; without it those tests skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch (python3-torch)")
RTOL, ATOL = 1e-4, 1e-5


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def run(fn, *args, **kw):
    """Calls an op; an op the backend declares UNSUPPORTED skips the test (reported, not
    failed, as in the conformance suite)."""
    try:
        return fn(*args, **kw)
    except nnplug.Error as e:
        if e.status == nnplug.Status.UNSUPPORTED:
            pytest.skip(f"{fn.__name__} unsupported on {kw.get('device')}: {e.message}")
        raise


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ------------------------------------------------------------------------------ GEMM --
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm(dev, rng, ta, tb):
    a = rand(rng, 5, 7) if not ta else rand(rng, 7, 5)
    b = rand(rng, 7, 3) if not tb else rand(rng, 3, 7)
    c = rand(rng, 3)
    y = np.full((5, 3), np.nan, np.float32)
    run(nnplug.gemm, a, b, C=c, out=y, trans_a=ta, trans_b=tb, alpha=0.5, beta=2.0, device=dev)
    expect = 0.5 * (a.T if ta else a) @ (b.T if tb else b) + 2.0 * c
    np.testing.assert_allclose(y, expect, rtol=RTOL, atol=ATOL)


def test_gemm_batched(dev, rng):
    a, b = rand(rng, 4, 3, 6), rand(rng, 6, 2)
    y = np.zeros((4, 3, 2), np.float32)
    run(nnplug.gemm, a, b, out=y, device=dev)
    np.testing.assert_allclose(y, a @ b, rtol=RTOL, atol=ATOL)


# ----------------------------------------------------------------------- convolution --
@needs_torch
@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1),
                                                            (1, 1, 2, 2)])
def test_conv2d(dev, rng, stride, padding, dilation, groups):
    x, w, b = rand(rng, 2, 4, 7, 6), rand(rng, 6, 4 // groups, 3, 3), rand(rng, 6)
    tx, tw, tb = (torch.from_numpy(v.copy()).requires_grad_() for v in (x, w, b))
    ty = F.conv2d(tx, tw, tb, stride=stride, padding=padding, dilation=dilation, groups=groups)
    dy = rand(rng, *ty.shape)
    ty.backward(torch.from_numpy(dy))
    kw = dict(stride_h=stride, stride_w=stride, pad_top=padding, pad_bottom=padding,
              pad_left=padding, pad_right=padding, dilation_h=dilation, dilation_w=dilation,
              groups=groups, device=dev)
    y = np.empty(ty.shape, np.float32)
    run(nnplug.conv2d_forward, x, w, b=b, out=y, **kw)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=RTOL, atol=1e-4)
    dx, dw, db = np.empty_like(x), np.empty_like(w), np.empty_like(b)
    run(nnplug.conv2d_backward_data, dy, w, out=dx, **kw)
    run(nnplug.conv2d_backward_filter, x, dy, out=dw, **kw)
    run(nnplug.conv2d_backward_bias, dy, out=db, device=dev)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=RTOL, atol=1e-4)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=RTOL, atol=1e-4)
    np.testing.assert_allclose(db, tb.grad.numpy(), rtol=RTOL, atol=1e-4)


# --------------------------------------------------------------------------- pooling --
@needs_torch
@pytest.mark.parametrize("mode", ["max", "average"])
def test_pool2d(dev, rng, mode):
    x = rand(rng, 2, 3, 7, 7)
    tx = torch.from_numpy(x.copy()).requires_grad_()
    if mode == "max":
        ty = F.max_pool2d(tx, 3, stride=2, padding=1)
    else:
        ty = F.avg_pool2d(tx, 3, stride=2, padding=1, count_include_pad=True)
    dy = rand(rng, *ty.shape)
    ty.backward(torch.from_numpy(dy))
    kw = dict(mode=mode, window_h=3, window_w=3, stride_h=2, stride_w=2, pad_top=1,
              pad_bottom=1, pad_left=1, pad_right=1, count_include_pad=True, device=dev)
    y = np.empty(ty.shape, np.float32)
    run(nnplug.pool2d_forward, x, out=y, **kw)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=RTOL, atol=ATOL)
    dx = np.empty_like(x)
    run(nnplug.pool2d_backward, x, y, dy, out=dx, **kw)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_global_average_pool(dev, rng):
    x = rand(rng, 2, 3, 4, 5)
    y = np.empty((2, 3, 1, 1), np.float32)
    run(nnplug.pool2d_forward, x, out=y, mode="average", global_=True, device=dev)
    np.testing.assert_allclose(y, x.mean(axis=(2, 3), keepdims=True), rtol=RTOL, atol=ATOL)


def test_pool_forward_allocates_average_output(dev):
    """Average pooling allocates its output: the optional max-only indices output (not
    inferable for average) is neither inferred nor allocated unless asked for."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    assert nnplug.supported("pool_forward", x, mode="average", kernel_shape=[2, 2],
                            device=dev) is None
    y = run(nnplug.pool_forward, x, mode="average", kernel_shape=[2, 2], device=dev)
    y = y if isinstance(y, np.ndarray) else y.numpy()
    expect = (x[:, :, :-1, :-1] + x[:, :, 1:, :-1] + x[:, :, :-1, 1:] + x[:, :, 1:, 1:]) / 4
    np.testing.assert_allclose(y, expect, rtol=RTOL, atol=ATOL)
    y, idx = run(nnplug.pool_forward, x, mode="max", kernel_shape=[2, 2], return_indices=True,
                 device=dev)
    idx = idx if isinstance(idx, np.ndarray) else idx.numpy()
    assert idx.ravel().tolist() == [5, 6, 7, 9, 10, 11, 13, 14, 15]


# ------------------------------------------------------------------------ activation --
def _erf(v):
    import math
    return np.vectorize(math.erf)(v.astype(np.float64))


ACTIVATIONS = {  # name: (f, f', alpha)
    "relu": (lambda x, a: np.maximum(x, 0), lambda x, a: (x > 0).astype(np.float64), 0.0),
    "leaky_relu": (lambda x, a: np.where(x >= 0, x, a * x),
                   lambda x, a: np.where(x >= 0, 1.0, a), 0.1),
    "sigmoid": (lambda x, a: 1 / (1 + np.exp(-x)),
                lambda x, a: np.exp(-x) / (1 + np.exp(-x)) ** 2, 0.0),
    "tanh": (lambda x, a: np.tanh(x), lambda x, a: 1 - np.tanh(x) ** 2, 0.0),
    "gelu_erf": (lambda x, a: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
                 lambda x, a: 0.5 * (1 + _erf(x / np.sqrt(2)))
                 + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi), 0.0),
    "elu": (lambda x, a: np.where(x > 0, x, a * (np.exp(x) - 1)),
            lambda x, a: np.where(x > 0, 1.0, a * np.exp(x)), 1.5),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(dev, rng, name):
    f, df, alpha = ACTIVATIONS[name]
    x, dy = rand(rng, 3, 17), rand(rng, 3, 17)
    x[np.abs(x) < 1e-3] = 0.5  # keep away from kinks
    y, dx = np.empty_like(x), np.empty_like(x)
    run(nnplug.activation_forward, x, out=y, function=name, alpha=alpha, device=dev)
    run(nnplug.activation_backward, x, dy, out=dx, function=name, alpha=alpha, device=dev)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y, f(x64, alpha), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dx, df(x64, alpha) * dy, rtol=1e-4, atol=1e-5)


@needs_torch
def test_gelu_tanh(dev, rng):
    x = rand(rng, 40)
    y = np.empty_like(x)
    run(nnplug.activation_forward, x, out=y, function="gelu_tanh", device=dev)
    expect = F.gelu(torch.from_numpy(x), approximate="tanh").numpy()
    np.testing.assert_allclose(y, expect, rtol=1e-4, atol=1e-5)


def test_activation_in_place(dev, rng):
    x = rand(rng, 64)
    expect = np.maximum(x, 0)
    run(nnplug.activation_forward, x, out=x, function="relu", device=dev)
    np.testing.assert_array_equal(x, expect)


# --------------------------------------------------------------------------- softmax --
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax(dev, rng, log, axis):
    x, dy = rand(rng, 4, 6), rand(rng, 4, 6)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    s = e / e.sum(axis=axis, keepdims=True)
    expect = np.log(s) if log else s
    y, dx = np.empty_like(x), np.empty_like(x)
    run(nnplug.softmax_forward, x, out=y, axis=axis, log=log, device=dev)
    np.testing.assert_allclose(y, expect, rtol=RTOL, atol=ATOL)
    run(nnplug.softmax_backward, y, dy, out=dx, axis=axis, log=log, device=dev)
    if log:
        expect_dx = dy - s * dy.sum(axis=axis, keepdims=True)
    else:
        expect_dx = s * (dy - (dy * s).sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(dx, expect_dx, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_softmax_cross_entropy(dev, rng, reduction):
    logits = rand(rng, 6, 5)
    labels = np.array([0, 4, 2, 2, 1, 3], np.int64)
    lse = np.log(np.exp(logits.astype(np.float64)).sum(axis=1))
    per = lse - logits[np.arange(6), labels]
    expect = {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]
    loss = np.empty(() if reduction != "none" else (6,), np.float32)
    log_prob = np.empty_like(logits)
    run(nnplug.softmax_cross_entropy_forward, logits, labels, out=(loss, log_prob),
        reduction=reduction, device=dev)
    np.testing.assert_allclose(loss, expect, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(log_prob, logits - lse[:, None], rtol=RTOL, atol=ATOL)
    dloss = np.array(2.0, np.float32) if reduction != "none" else rand(rng, 6)
    dlogits = np.empty_like(logits)
    run(nnplug.softmax_cross_entropy_backward, logits, labels, dloss, out=dlogits,
        reduction=reduction, device=dev)
    grad = np.exp(logits - lse[:, None])
    grad[np.arange(6), labels] -= 1
    scale = dloss / 6 if reduction == "mean" else dloss
    expect_d = grad * (scale if reduction != "none" else dloss[:, None])
    np.testing.assert_allclose(dlogits, expect_d, rtol=RTOL, atol=ATOL)


def test_softmax_cross_entropy_ignore_index(dev, rng):
    logits = rand(rng, 4, 3)
    labels = np.array([0, -100, 2, 1], np.int64)
    lse = np.log(np.exp(logits.astype(np.float64)).sum(axis=1))
    keep = labels != -100
    per = (lse - logits[np.arange(4), np.where(keep, labels, 0)])[keep]
    loss = np.empty((), np.float32)
    run(nnplug.softmax_cross_entropy_forward, logits, labels, out=loss, ignore_index=-100,
        device=dev)
    np.testing.assert_allclose(loss, per.mean(), rtol=RTOL)


# --------------------------------------------------------------------- normalisation --
@needs_torch
def test_batch_norm(dev, rng):
    x, dy = rand(rng, 4, 3, 5, 5), rand(rng, 4, 3, 5, 5)
    scale, bias = rand(rng, 3), rand(rng, 3)
    rm, rv = rand(rng, 3), np.abs(rand(rng, 3)) + 0.5
    tx, ts, tb = (torch.from_numpy(v.copy()).requires_grad_() for v in (x, scale, bias))
    trm, trv = torch.from_numpy(rm.copy()), torch.from_numpy(rv.copy())
    ty = F.batch_norm(tx, trm, trv, ts, tb, training=True, momentum=0.1, eps=1e-5)
    ty.backward(torch.from_numpy(dy))
    y = np.empty_like(x)
    run_mean, run_var = rm.copy(), rv.copy()
    saved_mean, saved_inv_std = np.empty(3, np.float32), np.empty(3, np.float32)
    run(nnplug.batch_norm_forward_training, x, scale, bias, run_mean, run_var,
        out=(y, saved_mean, saved_inv_std), epsilon=1e-5, momentum=0.9, device=dev)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run_mean, trm.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run_var, trv.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(saved_mean, x.mean(axis=(0, 2, 3)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(saved_inv_std, 1 / np.sqrt(x.var(axis=(0, 2, 3)) + 1e-5),
                               rtol=1e-4)
    dx, ds, db = np.empty_like(x), np.empty_like(scale), np.empty_like(bias)
    run(nnplug.batch_norm_backward, x, dy, scale, saved_mean, saved_inv_std,
        out=(dx, ds, db), epsilon=1e-5, device=dev)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(ds, ts.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(db, tb.grad.numpy(), rtol=1e-3, atol=1e-4)
    yi = np.empty_like(x)
    run(nnplug.batch_norm_forward_inference, x, scale, bias, rm, rv, out=yi, epsilon=1e-5,
        device=dev)
    expect = ((x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5)
              * scale[None, :, None, None] + bias[None, :, None, None])
    np.testing.assert_allclose(yi, expect, rtol=1e-4, atol=1e-4)


@needs_torch
def test_layer_norm(dev, rng):
    x, dy = rand(rng, 3, 4, 5), rand(rng, 3, 4, 5)
    scale, bias = rand(rng, 5), rand(rng, 5)
    tx, ts, tb = (torch.from_numpy(v.copy()).requires_grad_() for v in (x, scale, bias))
    ty = F.layer_norm(tx, (5,), ts, tb, eps=1e-5)
    ty.backward(torch.from_numpy(dy))
    y = np.empty_like(x)
    mean, inv_std = np.empty((3, 4, 1), np.float32), np.empty((3, 4, 1), np.float32)
    run(nnplug.layer_norm_forward, x, scale, bias=bias, out=(y, mean, inv_std), axis=-1,
        epsilon=1e-5, device=dev)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mean, x.mean(axis=-1, keepdims=True), rtol=1e-4, atol=1e-5)
    dx, ds, db = np.empty_like(x), np.empty_like(scale), np.empty_like(bias)
    run(nnplug.layer_norm_backward, x, dy, scale, mean, inv_std, out=(dx, ds, db), axis=-1,
        epsilon=1e-5, device=dev)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(ds, ts.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(db, tb.grad.numpy(), rtol=1e-3, atol=1e-4)


# --------------------------------------------------------------------------- dropout --
def _philox4x32_10(c, seed):
    """Philox4x32-10 (Random123 constants) of counter {lo32(c), hi32(c), 0, 0}, key seed."""
    M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
    m32 = 0xFFFFFFFF
    c0, c1, c2, c3 = c & m32, (c >> 32) & m32, 0, 0
    k0, k1 = seed & m32, (seed >> 32) & m32
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & m32, (k1 + W1) & m32
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & m32, (p0 >> 32) ^ c3 ^ k1, p0 & m32
    return (c0, c1, c2, c3)


def _philox_keep(seed, offset, n, ratio):
    """The dropout mask rule of nnplug_ops.h, in Python."""
    thr = int(ratio * 16777216.0)
    keep = np.zeros(n, bool)
    for blk in range((n + 3) // 4):
        for j, v in enumerate(_philox4x32_10(offset + blk, seed)):
            if 4 * blk + j < n:
                keep[4 * blk + j] = (v >> 8) >= thr
    return keep


def test_philox_known_answer():
    assert _philox4x32_10(0, 0) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)


def test_dropout(dev, rng):
    x, dy = rand(rng, 5, 13), rand(rng, 5, 13)
    y, mask, dx = np.empty_like(x), np.empty(x.shape, np.uint8), np.empty_like(x)
    kw = dict(ratio=0.3, seed=0x1234567890, offset=77, device=dev)
    run(nnplug.dropout_forward, x, out=(y, mask), **kw)
    run(nnplug.dropout_backward, dy, out=dx, **kw)
    keep = _philox_keep(0x1234567890, 77, x.size, 0.3).reshape(x.shape)
    scale = np.float32(1 / 0.7)
    np.testing.assert_array_equal(mask, keep.astype(np.uint8))
    np.testing.assert_allclose(y, np.where(keep, x * scale, 0), rtol=1e-6)
    np.testing.assert_allclose(dx, np.where(keep, dy * scale, 0), rtol=1e-6)
    assert 0.5 < keep.mean() < 0.9


# ----------------------------------------------------------------------- elementwise --
@pytest.mark.parametrize("op,fn", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                   ("div", np.divide)])
def test_binary_broadcast(dev, rng, op, fn):
    a, b = rand(rng, 3, 1, 4), rand(rng, 5, 1)
    b[np.abs(b) < 0.1] = 0.5
    y = np.empty((3, 5, 4), np.float32)
    run(nnplug.binary, a, b, out=y, op=op, device=dev)
    np.testing.assert_allclose(y, fn(a, b), rtol=RTOL, atol=ATOL)
    y2 = np.empty_like(y)
    run(getattr(nnplug, op), a, b, out=y2, device=dev)
    np.testing.assert_array_equal(y, y2)


def test_scale_fill_copy_cast(dev, rng):
    x = rand(rng, 4, 6)
    y = np.empty_like(x)
    run(nnplug.scale, x, out=y, alpha=-2.5, device=dev)
    np.testing.assert_allclose(y, -2.5 * x, rtol=1e-6)
    run(nnplug.fill, out=y, value=3.25, device=dev)
    assert (y == 3.25).all()
    src = rand(rng, 6, 8)[::2, 1::3]  # strided view: copy accepts any strides
    dst = np.empty(src.shape, np.float32)
    run(nnplug.copy, src, out=dst, device=dev)
    np.testing.assert_array_equal(dst, src)
    d = np.empty(x.shape, np.float64)
    run(nnplug.cast, x, out=d, device=dev)
    np.testing.assert_array_equal(d, x.astype(np.float64))


def test_cast_float16(dev, rng):
    x = rand(rng, 4, 6)
    h = np.empty(x.shape, np.float16)
    run(nnplug.cast, x, out=h, device=dev)  # skips where float16 is not implemented
    np.testing.assert_array_equal(h, x.astype(np.float16))  # round to nearest even


def test_transpose(dev, rng):
    x = rand(rng, 2, 3, 4)
    y = np.empty((4, 2, 3), np.float32)
    run(nnplug.transpose, x, out=y, perm=(2, 0, 1), device=dev)
    np.testing.assert_array_equal(y, x.transpose(2, 0, 1))


@pytest.mark.parametrize("op,fn", [("sum", np.sum), ("mean", np.mean), ("max", np.max)])
@pytest.mark.parametrize("axes,keepdims", [((1,), False), ((0, 2), True), (None, False)])
def test_reduce(dev, rng, op, fn, axes, keepdims):
    x = rand(rng, 3, 4, 5)
    expect = fn(x, axis=axes, keepdims=keepdims)
    y = np.empty(np.shape(expect), np.float32)
    # no axes (an empty list) reduces every axis (ONNX, noop_with_empty_axes = 0)
    run(nnplug.reduce, x, out=y, op=op, axes=axes or (), keepdims=keepdims, device=dev)
    np.testing.assert_allclose(y, expect, rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------------ optimisers --
@needs_torch
@pytest.mark.parametrize("momentum,nesterov,wd", [(0.0, False, 0.0), (0.9, True, 0.01)])
def test_sgd_update(dev, rng, momentum, nesterov, wd):
    w, buf = rand(rng, 10), np.zeros(10, np.float32)
    tw = torch.from_numpy(w.copy()).requires_grad_()
    opt = torch.optim.SGD([tw], lr=0.1, momentum=momentum, nesterov=nesterov, weight_decay=wd)
    for _ in range(3):
        g = rand(rng, 10)
        tw.grad = torch.from_numpy(g.copy())
        opt.step()
        run(nnplug.sgd_update, g, w, momentum_buffer=buf if momentum else None, lr=0.1,
            momentum=momentum, nesterov=nesterov, weight_decay=wd, device=dev)
    np.testing.assert_allclose(w, tw.detach().numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("adamw", [False, True])
def test_adam_update(dev, rng, adamw):
    w = rand(rng, 12)
    m, v = np.zeros_like(w), np.zeros_like(w)
    tw = torch.from_numpy(w.copy()).requires_grad_()
    cls = torch.optim.AdamW if adamw else torch.optim.Adam
    opt = cls([tw], lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
    for step in range(1, 4):
        g = rand(rng, 12)
        tw.grad = torch.from_numpy(g.copy())
        opt.step()
        run(nnplug.adam_update, g, w, m, v, step=step, lr=0.01, weight_decay=0.1, adamw=adamw,
            device=dev)
    np.testing.assert_allclose(w, tw.detach().numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------- per-step values on the device (ABI 1.4) --
def test_adam_update_step_and_lr_tensors(dev, rng):
    """adam_update's step= and lr= take device tensors (the keyword a number gives the params
    field): a float32 step counter advanced on the stream by nnplug.add in place, and an lr
    tensor, give bit for bit the updates of step= and lr= numbers."""
    w0, grads = rand(rng, 12), [rand(rng, 12) for _ in range(3)]
    lr = float(np.float32(0.01))
    kw = dict(weight_decay=0.1, adamw=True)
    w, m, v = w0.copy(), np.zeros_like(w0), np.zeros_like(w0)
    for step, g in enumerate(grads, 1):
        run(nnplug.adam_update, g, w, m, v, step=step, lr=lr, device=dev, **kw)
    s = dev.stream()
    dw, dm, dv = dev.to_device(w0), dev.zeros(w0.shape), dev.zeros(w0.shape)
    step_t = dev.to_device(np.zeros((), np.float32))
    one = dev.to_device(np.ones((), np.float32))
    lr_t = dev.to_device(np.array([lr], np.float32))
    for g in grads:
        nnplug.add(step_t, one, out=step_t, stream=s)
        assert nnplug.adam_update(dev.to_device(g), dw, dm, dv, step=step_t, lr=lr_t, stream=s,
                                  **kw) is None
    s.synchronize()
    assert step_t.numpy() == 3
    for got, want in ((dw, w), (dm, m), (dv, v)):
        np.testing.assert_array_equal(got.numpy(), want)


def test_adam_update_shared_keywords(dev, rng):
    """step= and lr= with numpy arrays (staged to the device like any input) equal numbers;
    the params field of a keyword given a tensor is not read (its default is sent)."""
    g = rand(rng, 7)
    w1 = rand(rng, 7)
    w2 = w1.copy()
    m1, v1, m2, v2 = (np.zeros_like(w1) for _ in range(4))
    run(nnplug.adam_update, g, w1, m1, v1, step=5, lr=0.5, device=dev)
    run(nnplug.adam_update, g, w2, m2, v2, step=np.array([5], np.float32),
        lr=np.array(0.5, np.float32), device=dev)
    np.testing.assert_array_equal(w1, w2)
    np.testing.assert_array_equal(v1, v2)
    assert nnplug.supported(nnplug.adam_update, g, w2, m2, v2, step=np.ones(1, np.float32),
                            device=dev) is None


def test_adam_update_step_tensor_checked(ref, rng):
    g, w = rand(rng, 4), rand(rng, 4)
    m, v = np.zeros_like(w), np.zeros_like(w)
    before = w.copy()
    for bad, words in ((np.ones(1, np.float64), "expected dtype float32"),
                       (np.ones(2, np.float32), "expected 1 element")):
        with pytest.raises(nnplug.InvalidArgumentError) as e:
            nnplug.adam_update(g, w, m, v, step=bad, device=ref)
        assert "inputs[1] (step)" in e.value.message and words in e.value.message
    with pytest.raises(nnplug.InvalidArgumentError) as e:  # refused when the op runs
        nnplug.adam_update(g, w, m, v, step=np.zeros(1, np.float32), device=ref)
    assert "whole number >= 1" in e.value.message
    np.testing.assert_array_equal(w, before)


def test_dropout_step_tensor(dev, rng):
    """dropout's step= (a tensor, or a number made a 0-d float32 tensor) with offset_per_step:
    the masks of the offset advanced by hand, forward and backward."""
    x = rand(rng, 5, 13)
    k = (x.size + 3) // 4
    kw = dict(ratio=0.3, seed=99, device=dev)
    for step in (np.array([2], np.float32), np.float32(2), 2):
        y, mask = run(nnplug.dropout_forward, x, step=step, offset=7, offset_per_step=k,
                      return_mask=True, **kw)
        y2, mask2 = run(nnplug.dropout_forward, x, offset=7 + 2 * k, return_mask=True, **kw)
        np.testing.assert_array_equal(mask, mask2)
        np.testing.assert_array_equal(y, y2)
        dx = run(nnplug.dropout_backward, x, step=step, offset=7, offset_per_step=k, **kw)
        np.testing.assert_array_equal(dx, y2)
    keep = _philox_keep(99, 7 + 2 * k, x.size, 0.3).reshape(x.shape)
    np.testing.assert_array_equal(mask, keep.astype(np.uint8))
    # without a step tensor offset_per_step is not used
    y3 = run(nnplug.dropout_forward, x, offset=7, offset_per_step=k, **kw)
    y4 = run(nnplug.dropout_forward, x, offset=7, **kw)
    np.testing.assert_array_equal(y3, y4)


def test_step_keywords_in_signatures():
    import inspect
    adam = inspect.signature(nnplug.adam_update).parameters
    assert [n for n, p in adam.items() if p.kind == p.POSITIONAL_OR_KEYWORD] == \
        ["grad", "param", "m", "v"]
    assert adam["step"].kind == inspect.Parameter.KEYWORD_ONLY and adam["step"].default == 1
    assert adam["lr"].kind == inspect.Parameter.KEYWORD_ONLY and adam["lr"].default == 0.001
    for fn in (nnplug.dropout_forward, nnplug.dropout_backward):
        params = inspect.signature(fn).parameters
        assert params["step"].kind == inspect.Parameter.KEYWORD_ONLY
        assert params["step"].default is None
        assert params["offset_per_step"].default == 0


# ------------------------------------------------- device memory, DLPack, streams --
def test_device_array_round_trip(dev, rng):
    a, b = rand(rng, 8, 16), rand(rng, 16, 4)
    da, db = dev.to_device(a), dev.to_device(b)
    dy = dev.empty((8, 4))
    nnplug.gemm(da, db, out=dy)  # the device comes from the DeviceArrays
    np.testing.assert_allclose(dy.numpy(), a @ b, rtol=RTOL, atol=ATOL)
    z = dev.zeros((3, 3))
    assert (z.numpy() == 0).all()
    assert "DeviceArray" in repr(dy)


def _needs_host_memory(dev):
    if not dev.is_cpu:
        pytest.skip(f"{dev.name}: its memory is not host memory (no zero-copy from the CPU)")


@needs_torch
def test_dlpack_torch_zero_copy(dev, rng):
    _needs_host_memory(dev)
    a = torch.from_numpy(rand(rng, 3, 5))
    b = torch.from_numpy(rand(rng, 5, 2))
    y = torch.empty(3, 2)
    nnplug.gemm(a, b, out=y, device=dev)
    torch.testing.assert_close(y, a @ b, rtol=RTOL, atol=ATOL)
    assert nnplug.as_dltensor(y).tensor.data == y.data_ptr()  # the same memory


@needs_torch
def test_dlpack_capsule_and_strided_torch(dev, rng):
    _needs_host_memory(dev)
    x = torch.from_numpy(rand(rng, 4, 6))
    y = torch.empty(4, 6)
    nnplug.scale(x.__dlpack__(), out=y.__dlpack__(), alpha=-1.0, device=dev)  # raw capsules
    torch.testing.assert_close(y, -x)
    z = torch.empty(6, 4)
    nnplug.copy(x.t(), out=z, device=dev)  # a transposed view: strides travel through DLPack
    torch.testing.assert_close(z, x.t().contiguous())
    with pytest.raises(nnplug.Error) as info:  # ops other than copy need compact tensors
        nnplug.scale(x.t(), out=z, alpha=1.0, device=dev)
    assert info.value.status == nnplug.Status.INVALID_ARGUMENT


def test_explicit_stream(dev, rng):
    s = dev.stream()
    x = rand(rng, 1000)
    dx, dy = dev.to_device(x), dev.empty(x.shape)
    nnplug.scale(dx, out=dy, alpha=2.0, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(dy.numpy(), 2 * x)
    y = np.empty_like(x)
    if dev.is_cpu:  # numpy arrays are host memory: a host-memory device uses them in place
        nnplug.scale(x, out=y, alpha=2.0, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(y, 2 * x)
    else:  # on a stream of another device, numpy arrays are refused (no silent staging)
        with pytest.raises(nnplug.Error) as info:
            nnplug.scale(x, out=y, alpha=2.0, stream=s)
        assert info.value.status == nnplug.Status.INVALID_ARGUMENT
    s.destroy()


def test_op_supported(dev):
    """nnplug.supported takes the op's own arguments; outputs need not exist."""
    x = np.zeros((2, 2), np.float32)
    assert nnplug.supported(nnplug.scale, x, out=x.copy(), alpha=1.0, device=dev) is None
    assert nnplug.supported(nnplug.scale, x, alpha=1.0, device=dev) is None  # y inferred
    # the reference implements float32/float64 only: float16 is an answer, not an error
    h = np.zeros((2, 2), np.float16)
    if dev.plugin_name == "reference":
        reason = nnplug.supported(nnplug.OpKind.CAST, x, out=h, device=dev)
        assert isinstance(reason, str) and reason
    with pytest.raises(nnplug.Error) as info:  # an invalid description raises
        nnplug.supported("scale", x, out=np.zeros(3, np.float32), alpha=1.0, device=dev)
    assert info.value.status == nnplug.Status.INVALID_ARGUMENT


# ------------------------------------------------------------------------- errors --
def test_bad_shape_raises_invalid_argument(dev, rng):
    a, b = rand(rng, 2, 3), rand(rng, 4, 5)  # inner dimensions disagree
    y = np.full((2, 5), 7.0, np.float32)
    with pytest.raises(nnplug.Error) as info:
        nnplug.gemm(a, b, out=y, device=dev)
    assert info.value.status == nnplug.Status.INVALID_ARGUMENT
    assert info.value.message  # libnnplug says what was wrong
    assert (y == 7.0).all()  # outputs untouched on failure


def test_unknown_device_and_bad_names(ref):
    with pytest.raises(nnplug.Error) as info:
        nnplug.device("no_such_backend")
    assert info.value.status == nnplug.Status.NOT_FOUND
    assert "no_such_backend" in str(info.value) or info.value.message
    with pytest.raises(nnplug.Error) as info:
        nnplug.activation_forward(np.zeros(2, np.float32), out=np.zeros(2, np.float32),
                                  function="swish", device=ref)
    assert info.value.status == nnplug.Status.INVALID_ARGUMENT
    with pytest.raises(nnplug.Error):
        nnplug.gemm([1, 2], [3], out=[4], device=ref)  # lists are not tensors


def test_devices_and_load_records(ref):
    names = [d.name for d in nnplug.devices()]
    assert "reference:0" in names
    assert ref.is_cpu and ref.dldevice == (1, 0)
    assert ref.memory_bytes > 0 and ref.description
    recs = nnplug.load_records()
    loaded = {r.name for r in recs if r.state == nnplug.LoadState.LOADED}
    assert "reference" in loaded
    assert all(r.path for r in recs)
    assert nnplug.op_kind_name(nnplug.OpKind.CONV2D_FORWARD) == "conv2d_forward"
    assert nnplug.op_kind_name(12345) is None
    assert nnplug.version() == "%d.%d.%d" % nnplug.get_version()
    assert nnplug.status_string(nnplug.Status.OUT_OF_MEMORY)


def test_out_of_memory_is_an_error(dev):
    with pytest.raises(nnplug.Error) as info:
        dev.empty((1 << 50,))  # 4 PiB
    assert info.value.status == nnplug.Status.OUT_OF_MEMORY
    assert info.value.message


def test_shutdown_and_reload(rng):
    dev = nnplug.device("reference")
    arr = dev.to_device(rand(rng, 4))
    nnplug.shutdown()
    with pytest.raises(nnplug.Error):
        dev.default_stream()  # handles of the ended session are refused, not dereferenced
    del arr  # its finaliser must not free memory of the ended session
    again = nnplug.device("reference")  # the library reloads
    x = rand(rng, 5)
    y = np.empty_like(x)
    nnplug.scale(x, out=y, alpha=3.0, device=again)
    np.testing.assert_allclose(y, 3 * x, rtol=1e-6)


# ---------------------------------------------------------------- the op table --
def test_every_op_of_the_table_has_a_function_with_its_tensors():
    """Every op of the op table (api/ops/ops.toml) is a function of nnplug whose positional
    parameters are the required inputs in the C order, then the required tensors updated in
    place; optional inputs and optional in-place tensors are keyword-only, as are the params
    and out=, stream=, device=."""
    import inspect
    for name, (_, _, _, inputs, outputs) in nnplug._abi.OPS.items():
        fn = getattr(nnplug, name, None)
        assert fn is not None, f"nnplug.{name} is missing"
        spec = getattr(nnplug.ops, "_" + name)
        inplace = {t.name for t in spec.outputs if t.inplace}
        params = inspect.signature(fn).parameters.values()
        positional = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
        keyword = [p.name for p in params if p.kind == p.KEYWORD_ONLY]
        required_in = [t[0] for t in inputs if not t[1]]
        optional_in = [t[0] for t in inputs if t[1]]
        required_inplace = [t[0] for t in outputs if t[0] in inplace and not t[1]]
        optional_inplace = [t[0] for t in outputs if t[0] in inplace and t[1]]
        assert positional == required_in + required_inplace, name
        for k in optional_in + optional_inplace + ["out", "stream", "device"]:
            assert k in keyword, (name, k)
        # the params are the C struct's fields (has_* and n_* counts are implicit)
        if spec.params_cls is not None and not spec.params_optional:
            fields = {f for f, _ in spec.params_cls._fields_}
            for p in spec.params:
                assert p.c in fields, (name, p.c)
                assert p.py in keyword, (name, p.py)


def test_clip_from_the_table(dev, rng):
    """clip's min and max are the C fields; has_min / has_max are implicit (None: unset).
    ONNX Clip: min, then max; min > max gives max."""
    x = rand(rng, 4, 5)
    y = np.empty_like(x)
    run(nnplug.clip, x, out=y, min=-0.5, max=0.25, device=dev)
    np.testing.assert_array_equal(y, np.minimum(np.maximum(x, -0.5), 0.25))
    run(nnplug.clip, x, out=y, min=1.0, max=0.0, device=dev)
    np.testing.assert_array_equal(y, np.zeros_like(x))
    y2 = run(nnplug.clip, x, max=0.25, device=dev)  # no min: has_min = 0; y allocated
    np.testing.assert_array_equal(y2, np.minimum(x, 0.25))
    with pytest.raises(TypeError):  # an unknown keyword is not a field of the params
        nnplug.clip(x, out=y, lo=1.0, device=dev)
    with pytest.raises(TypeError):  # the input is required
        nnplug.clip(out=y, device=dev)


# ------------------------------------------------------------------- data movement --
def test_concat_takes_a_sequence_of_inputs(dev, rng):
    """concat's inputs are variadic: one argument holding a list (ONNX Concat)."""
    parts = [rand(rng, 2, k, 3) for k in (1, 3, 2)]
    y = np.empty((2, 6, 3), np.float32)
    run(nnplug.concat, parts, out=y, axis=1, device=dev)
    np.testing.assert_array_equal(y, np.concatenate(parts, axis=1))
    ints = [np.arange(4, dtype=np.int32).reshape(2, 2), np.arange(2, dtype=np.int32).reshape(2, 1)]
    yi = np.empty((2, 3), np.int32)
    run(nnplug.concat, ints, out=yi, axis=-1, device=dev)  # any dtype
    np.testing.assert_array_equal(yi, np.concatenate(ints, axis=-1))
    with pytest.raises(nnplug.Error) as info:
        nnplug.concat(parts[0], out=y, axis=1, device=dev)  # an array, not a list
    assert "variadic" in info.value.message
    with pytest.raises(nnplug.Error) as info:
        nnplug.concat([parts[0], parts[1][:, :, :2].copy()], out=y, axis=1, device=dev)
    assert info.value.status == nnplug.Status.INVALID_ARGUMENT
    assert "inputs[1] (xs[1])" in info.value.message


def test_split_gives_a_sequence_of_outputs(dev, rng):
    """split's outputs are variadic: their extents are the split sizes (ONNX Split), or
    num_outputs selects ONNX's equal split with a smaller last part."""
    x = rand(rng, 7, 4)
    ys = [np.empty((k, 4), np.float32) for k in (2, 5)]
    got = run(nnplug.split, x, out=ys, axis=0, device=dev)
    assert len(got) == 2
    for y, want in zip(ys, np.split(x, [2], axis=0)):
        np.testing.assert_array_equal(y, want)
    ys = [np.empty((7, k), np.float32) for k in (2, 2)]
    run(nnplug.split, x, out=ys, axis=-1, num_outputs=2, device=dev)
    np.testing.assert_array_equal(np.concatenate(ys, axis=1), x)


def test_slice_and_gather_from_the_table(dev, rng):
    """slice takes ONNX's lists as int64[MAX_DIMS] params; gather takes int64 indices."""
    x = rand(rng, 4, 6)
    y = np.empty((2, 3), np.float32)
    run(nnplug.slice, x, out=y, starts=[-1, 1], ends=[-(2 ** 63), 5], axes=[1, 0],
        steps=[-2, 2], device=dev)
    np.testing.assert_array_equal(y, x[1:5:2, ::-2])
    dx = np.empty_like(x)
    run(nnplug.slice_backward, y, out=dx, starts=[-1, 1], ends=[-(2 ** 63), 5], axes=[1, 0],
        steps=[-2, 2], device=dev)
    want = np.zeros_like(x)
    want[1:5:2, ::-2] = y
    np.testing.assert_array_equal(dx, want)
    idx = np.array([[3, -4], [0, 3]], np.int64)
    g = np.empty((2, 2, 6), np.float32)
    run(nnplug.gather, x, idx, out=g, axis=0, device=dev)
    np.testing.assert_array_equal(g, np.take(x, idx, axis=0))
    dd = np.empty_like(x)
    run(nnplug.gather_backward, g, idx, out=dd, axis=0, device=dev)
    want = np.zeros_like(x)
    np.add.at(want, idx % 4, g)
    np.testing.assert_allclose(dd, want, rtol=1e-6)
