"""nnplug.torch, the PyTorch autograd bridge: torch.autograd.gradcheck of every function in
float64 on the reference device (forward and backward both nnplug ops, checked against finite
differences of the forward); float32 forward and backward against torch.nn.functional (or, for
attention, which PyTorch 1.13 lacks, its formula in torch ops) on the cpu device and on the
simulated accelerator (whose operands are staged), with RTOL/ATOL below; a model with one layer
swapped (and one with every layer converted) giving the unmodified model's loss and gradients;
and the refusals (dtype, device, shape, unsupported arguments) as nnplug.Error."""
import copy
import functools
import math
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import nnplug  # noqa: E402
import nnplug.torch as nt  # noqa: E402
from torch_helpers import compare as _compare, expect_error  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5  # float32 against PyTorch: elementwise results and short sums
CONV_ATOL = 1e-4         # float32 convolutions (sums of up to 36 products, Winograd on cpu)
compare = functools.partial(_compare, rtol=RTOL, atol=ATOL)
F64_TOL = 1e-10          # float64 on the reference against PyTorch in float64
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
Status = nnplug.Status


def _device_or_skip(name):
    try:
        return nnplug.device(name)
    except nnplug.Error as e:
        pytest.skip(f"no {name} device: {e}")


@pytest.fixture(params=["cpu", "sim"])
def f32dev(request):
    """The float32 comparison devices: cpu (zero-copy DLPack) and sim (staged copies)."""
    return _device_or_skip(request.param)


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(1234)


def r64(*shape, grad=True):
    return torch.randn(*shape, dtype=torch.float64, requires_grad=grad)


def gradcheck(fn, *inputs):
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)






# ---------------------------------------------------------------------------- conv2d --
CONV_CASES = [  # x shape, w shape, stride, padding, dilation, groups, bias
    ((2, 4, 6, 5), (6, 4, 3, 3), 1, 0, 1, 1, True),
    ((2, 4, 6, 5), (6, 4, 3, 3), 2, 1, 1, 1, False),
    ((1, 4, 7, 6), (6, 2, 3, 2), (2, 1), (1, 2), (2, 1), 2, True),
    ((2, 3, 5, 5), (3, 1, 3, 3), 1, "same", 2, 3, True),     # depthwise, 'same' with dilation
    ((1, 2, 5, 6), (4, 2, 2, 3), 1, "same", 1, 1, False),    # even kernel: odd pad at the end
    ((1, 2, 5, 6), (4, 2, 3, 3), 3, "valid", 1, 1, True),
    ((2, 5, 4), (3, 2, 3, 3), 1, 1, 1, 1, True),             # unbatched input
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # PyTorch's, for even kernels
@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups,bias", CONV_CASES)
def test_conv2d_gradcheck(ref, xs, ws, stride, padding, dilation, groups, bias):
    args = [r64(*xs), r64(*ws)] + ([r64(ws[0])] if bias else [])

    def fn(x, w, b=None):
        return nt.conv2d(x, w, b, stride, padding, dilation, groups, device=ref)
    gradcheck(fn, *args)
    y = fn(*args)
    expect = F.conv2d(*args, stride=stride, padding=padding, dilation=dilation, groups=groups)
    torch.testing.assert_close(y, expect, rtol=0, atol=F64_TOL)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups,bias", CONV_CASES)
def test_conv2d_float32(f32dev, xs, ws, stride, padding, dilation, groups, bias):
    args = [torch.randn(*xs, requires_grad=True), torch.randn(*ws, requires_grad=True)]
    args += [torch.randn(ws[0], requires_grad=True)] if bias else []
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    compare(lambda *a: nt.conv2d(*a, **kw, device=f32dev), lambda *a: F.conv2d(*a, **kw),
            args, atol=CONV_ATOL)


def test_conv2d_weight_only_gradient(ref):
    """needs_input_grad: only the gradients asked for are computed (and given)."""
    x, w = r64(1, 2, 5, 5, grad=False), r64(3, 2, 3, 3)
    nt.conv2d(x, w, device=ref).sum().backward()
    assert x.grad is None
    torch.testing.assert_close(w.grad, torch.autograd.grad(F.conv2d(x, w).sum(), w)[0],
                               rtol=0, atol=F64_TOL)


# ---------------------------------------------------------------------------- linear --
@pytest.mark.parametrize("xs,bias", [((5, 4), True), ((5, 4), False), ((2, 3, 4), True),
                                     ((2, 1, 3, 4), False), ((4,), True), ((0, 4), True)])
def test_linear_gradcheck(ref, xs, bias):
    args = [r64(*xs), r64(3, 4)] + ([r64(3)] if bias else [])

    def fn(x, w, b=None):
        return nt.linear(x, w, b, device=ref)
    gradcheck(fn, *args)
    y = fn(*args)
    assert y.shape == xs[:-1] + (3,)
    torch.testing.assert_close(y, F.linear(*args), rtol=0, atol=F64_TOL)


@pytest.mark.parametrize("xs", [(7, 5), (2, 3, 5)])
def test_linear_float32(f32dev, xs):
    args = [torch.randn(*xs, requires_grad=True), torch.randn(6, 5, requires_grad=True),
            torch.randn(6, requires_grad=True)]
    compare(lambda *a: nt.linear(*a, device=f32dev), F.linear, args)


def test_linear_non_contiguous_input(f32dev):
    x = torch.randn(5, 7).t().requires_grad_()  # [7, 5], transposed strides
    w = torch.randn(3, 5, requires_grad=True)
    assert not x.is_contiguous()
    compare(lambda x, w: nt.linear(x, w, device=f32dev), F.linear, [x, w])


# ------------------------------------------------------------------------ layer norm --
LN_CASES = [((3, 5), (5,), True, True), ((2, 3, 4), (3, 4), True, False),
            ((4, 6), 6, False, False), ((2, 2, 3), (3,), False, True)]


@pytest.mark.parametrize("xs,shape,weight,bias", LN_CASES)
def test_layer_norm_gradcheck(ref, xs, shape, weight, bias):
    ns = (shape,) if isinstance(shape, int) else shape
    w = r64(*ns) if weight else None
    b = r64(*ns) if bias else None
    args = [r64(*xs)] + [t for t in (w, b) if t is not None]

    def fn(x, *wb):
        it = iter(wb)
        ww = next(it) if weight else None
        bb = next(it) if bias else None
        return nt.layer_norm(x, shape, ww, bb, eps=1e-3, device=ref)
    gradcheck(fn, *args)
    torch.testing.assert_close(fn(*args), F.layer_norm(args[0], ns, w, b, eps=1e-3),
                               rtol=0, atol=F64_TOL)


def test_layer_norm_float32(f32dev):
    args = [torch.randn(4, 3, 8, requires_grad=True), torch.randn(3, 8, requires_grad=True),
            torch.randn(3, 8, requires_grad=True)]
    compare(lambda x, w, b: nt.layer_norm(x, (3, 8), w, b, device=f32dev),
            lambda x, w, b: F.layer_norm(x, (3, 8), w, b), args, atol=1e-4)


# ------------------------------------------------------------------------- attention --
def sdpa_reference(q, k, v, mask=None, is_causal=False, scale=None):
    """PyTorch's documented formula for scaled_dot_product_attention (torch ops only)."""
    s = (1 / math.sqrt(q.shape[-1])) if scale is None else scale
    if k.shape[-3] != q.shape[-3] and q.dim() >= 4:  # grouped-query: repeat the kv heads
        rep = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(rep, -3), v.repeat_interleave(rep, -3)
    scores = q @ k.transpose(-2, -1) * s
    if is_causal:
        L, S = q.shape[-2], k.shape[-2]
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), -math.inf)
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool \
            else scores + mask
    return torch.softmax(scores, -1) @ v


ATTN_CASES = {  # name: (q shape, k shape, v shape, mask shape or None, mask kind, kwargs)
    "plain": ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3), None, None, {}),
    "float_mask": ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), (3, 5), "float", {}),
    "bool_mask": ((1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 3), (1, 1, 4, 4), "bool", {}),
    "causal": ((2, 1, 4, 3), (2, 1, 6, 3), (2, 1, 6, 2), None, None, {"is_causal": True}),
    "causal_scale": ((1, 2, 5, 4), (1, 2, 5, 4), (1, 2, 5, 4), None, None,
                     {"is_causal": True, "scale": 0.3}),
    "gqa": ((1, 4, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2), (1, 4, 3, 3), "float",
            {"enable_gqa": True}),
    "rank3": ((3, 4, 5), (3, 2, 5), (3, 2, 2), (3, 1, 2), "float", {}),
    "rank5": ((2, 2, 1, 3, 2), (2, 2, 1, 4, 2), (2, 2, 1, 4, 3), (2, 1, 3, 4), "float", {}),
}


def _attn_inputs(case, dtype, grad_mask=False):
    qs, ks, vs, ms, kind, kw = ATTN_CASES[case]
    make = (lambda *s: torch.randn(*s, dtype=dtype, requires_grad=True))
    mask = None
    if kind == "float":
        mask = torch.randn(*ms, dtype=dtype)
    elif kind == "bool":  # every row keeps at least its diagonal
        mask = torch.rand(*ms) > 0.5
        mask |= torch.eye(ms[-2], ms[-1], dtype=torch.bool)
    return make(*qs), make(*ks), make(*vs), mask, dict(kw)


@pytest.mark.parametrize("case", sorted(ATTN_CASES))
def test_attention_gradcheck(ref, case):
    q, k, v, mask, kw = _attn_inputs(case, torch.float64)

    def fn(q, k, v):
        return nt.scaled_dot_product_attention(q, k, v, mask, device=ref, **kw)
    gradcheck(fn, q, k, v)
    ref_kw = {n: x for n, x in kw.items() if n != "enable_gqa"}
    torch.testing.assert_close(fn(q, k, v), sdpa_reference(q, k, v, mask, **ref_kw),
                               rtol=0, atol=F64_TOL)


@pytest.mark.parametrize("case", ["plain", "float_mask", "bool_mask", "causal", "gqa"])
def test_attention_float32(f32dev, case):
    q, k, v, mask, kw = _attn_inputs(case, torch.float32)
    ref_kw = {n: x for n, x in kw.items() if n != "enable_gqa"}
    compare(lambda q, k, v: nt.scaled_dot_product_attention(q, k, v, mask, device=f32dev,
                                                            **kw),
            lambda q, k, v: sdpa_reference(q, k, v, mask, **ref_kw), [q, k, v])


@pytest.mark.skipif(not hasattr(F, "scaled_dot_product_attention"),
                    reason="this PyTorch has no F.scaled_dot_product_attention (2.0+)")
def test_attention_matches_torch_function(ref):
    q, k, v, mask, kw = _attn_inputs("float_mask", torch.float64)
    torch.testing.assert_close(nt.scaled_dot_product_attention(q, k, v, mask, device=ref),
                               F.scaled_dot_product_attention(q, k, v, mask),
                               rtol=0, atol=F64_TOL)


def test_attention_fully_masked_row_is_zero(ref):
    """nnplug's documented rule: a row with no key to attend gives 0 (PyTorch: NaN)."""
    q, k, v = r64(1, 1, 2, 3), r64(1, 1, 3, 3), r64(1, 1, 3, 3)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    y = nt.scaled_dot_product_attention(q, k, v, mask, device=ref)
    assert torch.all(y[0, 0, 1] == 0)
    torch.testing.assert_close(y[0, 0, 0], sdpa_reference(q, k, v, mask)[0, 0, 0])
    y.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.all(q.grad[0, 0, 1] == 0)


# ---------------------------------------------------------------------------- losses --
LOSS_CASES = [  # input shape, reduction, weight, ignore_index, targets set to ignore_index
    ((4, 5), "mean", False, -100, 0),
    ((4, 5), "sum", True, -100, 1),
    ((4, 5), "none", True, 2, 0),            # an ignore_index inside [0, C)
    ((3, 4, 2), "mean", True, -1, 2),        # [N, C, d1]
    ((2, 3, 2, 2), "none", False, -100, 3),  # [N, C, d1, d2]
    ((5,), "mean", False, -100, 0),          # unbatched
    ((5,), "none", True, -100, 0),
]


def _loss_inputs(shape, weight, ignore_index, n_ignored, dtype):
    x = torch.randn(*shape, dtype=dtype, requires_grad=True)
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + tuple(shape[2:])
    t = torch.randint(0, C, tshape)
    if n_ignored:
        t.view(-1)[:n_ignored] = ignore_index
    w = torch.rand(C, dtype=dtype) + 0.5 if weight else None
    return x, t, w


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("shape,reduction,weight,ignore_index,n_ignored", LOSS_CASES)
def test_loss_gradcheck(ref, name, shape, reduction, weight, ignore_index, n_ignored):
    x, t, w = _loss_inputs(shape, weight, ignore_index, n_ignored, torch.float64)
    ours, theirs = getattr(nt, name), getattr(F, name)
    kw = dict(weight=w, ignore_index=ignore_index, reduction=reduction)

    def fn(x):
        return ours(x, t, **kw, device=ref)
    gradcheck(fn, x)
    y = fn(x)
    expect = theirs(x, t, **kw)
    assert y.shape == expect.shape
    torch.testing.assert_close(y, expect, rtol=0, atol=F64_TOL)


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("shape,reduction,weight,ignore_index,n_ignored",
                         [LOSS_CASES[i] for i in (1, 2, 3)])
def test_loss_float32(f32dev, name, shape, reduction, weight, ignore_index, n_ignored):
    x, t, w = _loss_inputs(shape, weight, ignore_index, n_ignored, torch.float32)
    kw = dict(weight=w, ignore_index=ignore_index, reduction=reduction)
    compare(lambda x: getattr(nt, name)(x, t, **kw, device=f32dev),
            lambda x: getattr(F, name)(x, t, **kw), [x])


@pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated")
def test_loss_legacy_reduction_arguments(ref):
    x, t, _ = _loss_inputs((3, 4), False, -100, 0, torch.float64)
    for size_average, reduce in ((False, None), (None, False), (True, True)):
        torch.testing.assert_close(
            nt.cross_entropy(x, t, size_average=size_average, reduce=reduce, device=ref),
            F.cross_entropy(x, t, size_average=size_average, reduce=reduce))


def test_loss_all_ignored_mean_is_nan(ref):
    x = r64(3, 4)
    t = torch.full((3,), -100)
    assert torch.isnan(nt.nll_loss(x, t, device=ref))
    assert torch.isnan(F.nll_loss(x, t))  # as PyTorch
    assert nt.cross_entropy(x, t, reduction="sum", device=ref).item() == 0.0


# -------------------------------------------------------------------- a swapped layer --
class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(4, 4, 3, stride=2, padding=1, padding_mode="reflect",
                                     groups=2, bias=False)
        self.norm = torch.nn.LayerNorm(16)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h = self.conv2(h).flatten(1)  # [N, 4 * 2 * 2]
        return self.fc(self.norm(h))


def _loss_and_grads(model, x, t, loss_fn):
    model.zero_grad()
    loss = loss_fn(model(x), t)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_swapped_layer_gives_the_same_loss_and_gradients(dtype):
    dev = nnplug.device("reference") if dtype == torch.float64 else _device_or_skip("cpu")
    tol = dict(rtol=0, atol=1e-12) if dtype == torch.float64 else dict(rtol=RTOL, atol=ATOL)
    model = SmallNet().to(dtype)
    x, t = torch.randn(3, 3, 4, 4, dtype=dtype), torch.tensor([1, 7, 3])
    loss0, grads0 = _loss_and_grads(model, x, t, F.cross_entropy)

    swapped = copy.deepcopy(model)
    fc = swapped.fc
    swapped.fc = nt.from_module(swapped.fc, device=dev)
    assert isinstance(swapped.fc, nt.Linear) and isinstance(swapped.fc, torch.nn.Linear)
    assert swapped.fc.weight is fc.weight and swapped.fc.bias is fc.bias  # shared Parameters
    loss1, grads1 = _loss_and_grads(swapped, x, t, F.cross_entropy)
    torch.testing.assert_close(loss1, loss0, **tol)
    assert grads1.keys() == grads0.keys()
    for n in grads0:
        torch.testing.assert_close(grads1[n], grads0[n], **tol)

    # every layer converted, and the loss itself on nnplug as well
    everything = nt.convert(copy.deepcopy(model), device=dev)
    assert [type(m) for m in (everything.conv, everything.conv2, everything.norm,
                              everything.fc)] == [nt.Conv2d, nt.Conv2d, nt.LayerNorm, nt.Linear]
    loss2, grads2 = _loss_and_grads(everything, x, t,
                                    lambda y, t: nt.cross_entropy(y, t, device=dev))
    torch.testing.assert_close(loss2, loss0, **tol)
    for n in grads0:
        torch.testing.assert_close(grads2[n], grads0[n], **tol)


def test_swapped_layer_trains_with_the_original_optimizer(ref):
    model = SmallNet().double()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.fc.weight.detach().clone()
    model.fc = nt.from_module(model.fc, device=ref)
    x, t = torch.randn(2, 3, 4, 4, dtype=torch.float64), torch.tensor([0, 9])
    F.cross_entropy(model(x), t).backward()
    opt.step()
    assert not torch.equal(model.fc.weight.detach(), before)  # the optimiser's Parameter moved


def test_module_constructors(ref):
    lin = nt.Linear(4, 3, dtype=torch.float64, nnplug_device=ref)
    ln = nt.LayerNorm((2, 4), elementwise_affine=False, dtype=torch.float64, nnplug_device=ref)
    conv = nt.Conv2d(2, 4, 3, padding=1, padding_mode="circular", dtype=torch.float64,
                     nnplug_device=ref)
    x = r64(3, 2, 4)
    torch.testing.assert_close(lin(x), F.linear(x, lin.weight, lin.bias))
    torch.testing.assert_close(ln(x), F.layer_norm(x, (2, 4)))
    x4 = r64(1, 2, 5, 5)
    expect = torch.nn.Conv2d.forward(conv, x4)  # torch's own forward of the same module
    torch.testing.assert_close(conv(x4), expect)
    assert "nnplug_device" in repr(lin)


# ------------------------------------------------------------------- device default --
def test_set_device_default(ref):
    previous = nt.set_device("reference")
    try:
        x, w = r64(2, 3), r64(4, 3)
        torch.testing.assert_close(nt.linear(x, w), F.linear(x, w))  # float64: the reference
        assert nt.get_device() == ref
    finally:
        nt.set_device(previous)
    assert nt.get_device() == nnplug.device(previous)
    expect_error(Status.NOT_FOUND, "", nt.set_device, "no-such-device")


# --------------------------------------------------------------------------- autocast --
def test_autocast_runs_layer_norm_and_the_losses_in_float32(f32dev):
    """Inside torch.autocast the float32-list functions take bfloat16 activations and float32
    parameters, compute in float32 and give float32 results; the bfloat16 input's gradient
    comes back in bfloat16, the parameters' in float32."""
    x = torch.randn(4, 6).to(torch.bfloat16).requires_grad_()
    w, b = torch.randn(6, requires_grad=True), torch.randn(6, requires_grad=True)
    t = torch.tensor([0, 5, 2, 3])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = nt.layer_norm(x, (6,), w, b, device=f32dev)
        loss = nt.cross_entropy(y * 2, t, device=f32dev)
    assert y.dtype == torch.float32 and loss.dtype == torch.float32
    loss.backward()
    assert x.grad.dtype == torch.bfloat16 and w.grad.dtype == torch.float32
    x32 = x.detach().float().requires_grad_()
    w32, b32 = w.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    y32 = F.layer_norm(x32, (6,), w32, b32)
    want = F.cross_entropy(y32 * 2, t)
    want.backward()
    torch.testing.assert_close(y, y32, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(loss, want, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(w.grad, w32.grad, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(x.grad, x32.grad.to(torch.bfloat16))


def test_autocast_runs_linear_conv_and_attention_in_the_region_dtype(ref):
    """Inside torch.autocast the lower-precision functions cast float32 arguments to the
    region's dtype: a device without bfloat16 answers UNSUPPORTED naming it (the reference),
    where the same call outside the region runs. float64 arguments are not cast (autocast
    leaves them too): they run in float64 inside the region."""
    x, w = torch.randn(2, 3), torch.randn(4, 3)
    q = torch.randn(1, 1, 3, 4)
    calls = [(nt.linear, (x, w)), (nt.conv2d, (torch.randn(1, 2, 4, 4), torch.randn(3, 2, 3, 3))),
             (nt.scaled_dot_product_attention, (q, q, q))]
    for fn, args in calls:
        fn(*args, device=ref)  # float32 outside the region
        with torch.autocast("cpu", dtype=torch.bfloat16):
            e = expect_error(Status.UNSUPPORTED, "", fn, *args, device=ref)
        assert "bfloat16" in e.message, e.message
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = nt.linear(r64(2, 3), r64(4, 3), device=ref)
    assert y.dtype == torch.float64


def test_float16_on_sim():
    """float16 tensors staged to sim (which rounds each op's exact result once): linear's
    output is the float64 product rounded to float16, bit for bit, and its gradients are
    float16."""
    sim = _device_or_skip("sim")
    x = torch.randn(3, 4).half().requires_grad_()
    w = torch.randn(5, 4).half().requires_grad_()
    y = nt.linear(x, w, device=sim)
    assert y.dtype == torch.float16
    assert torch.equal(y, (x.double() @ w.double().T).half())
    y.sum().backward()
    assert x.grad.dtype == w.grad.dtype == torch.float16
    assert torch.equal(w.grad, x.double().sum(0).expand(5, 4).half())



def test_float16_layer_norm_on_sim():
    """A float16 layer norm (outside autocast) runs in float16 with float32 statistics (the
    op table's accumulation rule, ABI 1.10): output and gradients float16, within float16's
    rounding of PyTorch's float32 result."""
    sim = _device_or_skip("sim")
    x = (torch.randn(4, 6, 16) * 3 + 2).half().requires_grad_()
    w = (torch.rand(16) + 0.5).half().requires_grad_()
    b = torch.randn(16).half().requires_grad_()
    y = nt.layer_norm(x, 16, w, b, device=sim)
    assert y.dtype == torch.float16
    xf, wf, bf = (t.detach().float().requires_grad_() for t in (x, w, b))
    want = torch.nn.functional.layer_norm(xf, (16,), wf, bf)
    torch.testing.assert_close(y.float(), want, rtol=2e-3, atol=2e-3)
    dy = torch.randn_like(want)
    y.backward(dy.half())
    want.backward(dy.half().float())
    assert x.grad.dtype == w.grad.dtype == b.grad.dtype == torch.float16
    for got, ref in ((x.grad, xf.grad), (w.grad, wf.grad), (b.grad, bf.grad)):
        torch.testing.assert_close(got.float(), ref, rtol=5e-3, atol=5e-3)

# ---------------------------------------------------------------------------- errors --
def test_error_mismatched_dtypes(ref):
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3, dtype=torch.float64)
    expect_error(Status.INVALID_ARGUMENT, "weight has dtype torch.float64", nt.conv2d, x, w,
                 device=ref)
    expect_error(Status.INVALID_ARGUMENT, "bias has dtype", nt.linear, torch.randn(2, 3),
                 torch.randn(4, 3), torch.randn(4, dtype=torch.float64), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "expected a floating-point tensor", nt.linear,
                 torch.ones(2, 3, dtype=torch.int64), torch.ones(4, 3), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "target has dtype torch.int32", nt.cross_entropy,
                 torch.randn(2, 3), torch.zeros(2, dtype=torch.int32), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "key has dtype", nt.scaled_dot_product_attention,
                 torch.randn(1, 1, 2, 2), r64(1, 1, 2, 2), torch.randn(1, 1, 2, 2), device=ref)


def test_error_float64_on_cpu():
    cpu = _device_or_skip("cpu")
    e = expect_error(Status.UNSUPPORTED, "nnplug.torch.linear on cpu", nt.linear, r64(2, 3),
                     r64(4, 3), device=cpu)
    assert "float64" in e.message or "dtype" in e.message


def test_error_non_cpu_tensor(ref):
    x = torch.empty(2, 3, device="meta")
    expect_error(Status.UNSUPPORTED, "input is on device meta", nt.linear, x,
                 torch.randn(4, 3), device=ref)
    expect_error(Status.UNSUPPORTED, "weight is on device meta", nt.layer_norm,
                 torch.randn(2, 3), 3, torch.empty(3, device="meta"), device=ref)
    expect_error(Status.UNSUPPORTED, "layout", nt.linear, torch.randn(2, 3).to_sparse(),
                 torch.randn(4, 3), device=ref)


def test_error_mismatched_shapes(ref):
    # caught by the bridge, naming the argument
    expect_error(Status.INVALID_ARGUMENT, "in_features = 3", nt.linear, r64(2, 5), r64(4, 3),
                 device=ref)
    expect_error(Status.INVALID_ARGUMENT, "bias must be [4]", nt.linear, r64(2, 3), r64(4, 3),
                 r64(3), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "normalized_shape [4]", nt.layer_norm, r64(2, 3), 4,
                 device=ref)
    expect_error(Status.INVALID_ARGUMENT, "weight must have normalized_shape", nt.layer_norm,
                 r64(2, 3), 3, r64(2), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "output size", nt.conv2d, r64(1, 2, 2, 2),
                 r64(3, 2, 3, 3), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "weight must be", nt.conv2d, r64(1, 2, 4, 4),
                 r64(3, 2, 3), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "key must be", nt.scaled_dot_product_attention,
                 r64(1, 1, 2, 4), r64(1, 1, 3, 2), r64(1, 1, 3, 2), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "heads", nt.scaled_dot_product_attention,
                 r64(1, 4, 2, 2), r64(1, 2, 3, 2), r64(1, 2, 3, 2), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "target must be", nt.nll_loss, r64(3, 4),
                 torch.zeros(2, dtype=torch.int64), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "weight must be [4]", nt.nll_loss, r64(3, 4),
                 torch.zeros(3, dtype=torch.int64), r64(3, grad=False), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "outside [0, 4)", nt.cross_entropy, r64(3, 4),
                 torch.tensor([0, 4, 1]), device=ref)
    # refused by the op itself (channels that do not match the filter), with its message
    e = expect_error(Status.INVALID_ARGUMENT, "nnplug.torch.conv2d on reference", nt.conv2d,
                     r64(1, 3, 5, 5), r64(2, 2, 3, 3), device=ref)
    assert "conv2d_forward" in e.message


def test_error_unsupported_arguments(ref):
    q = r64(1, 1, 2, 2)
    expect_error(Status.UNSUPPORTED, "dropout_p", nt.scaled_dot_product_attention, q, q, q,
                 dropout_p=0.1, device=ref)
    expect_error(Status.UNSUPPORTED, "scale", nt.scaled_dot_product_attention, q, q, q,
                 scale=0.0, device=ref)
    expect_error(Status.UNSUPPORTED, "attn_mask requires grad",
                 nt.scaled_dot_product_attention, q, q, q, r64(2, 2), device=ref)
    x = r64(2, 3)
    expect_error(Status.UNSUPPORTED, "label_smoothing", nt.cross_entropy, x,
                 torch.tensor([0, 1]), label_smoothing=0.1, device=ref)
    expect_error(Status.UNSUPPORTED, "class probabilities", nt.cross_entropy, x,
                 torch.softmax(r64(2, 3, grad=False), 1), device=ref)
    expect_error(Status.UNSUPPORTED, "weight requires grad", nt.nll_loss, x,
                 torch.tensor([0, 1]), r64(3), device=ref)
    expect_error(Status.INVALID_ARGUMENT, "reduction", nt.nll_loss, x, torch.tensor([0, 1]),
                 reduction="average", device=ref)
    expect_error(Status.INVALID_ARGUMENT, "padding='same' needs stride 1", nt.conv2d,
                 r64(1, 1, 4, 4), r64(1, 1, 3, 3), stride=2, padding="same", device=ref)
    expect_error(Status.UNSUPPORTED, "torch.nn.modules.activation.ReLU", nt.from_module,
                 torch.nn.ReLU())

    class MyLinear(torch.nn.Linear):
        pass
    expect_error(Status.UNSUPPORTED, "MyLinear", nt.from_module, MyLinear(2, 2))


def test_double_backward_is_refused(ref):
    """Backwards are once_differentiable: a gradient taken with create_graph has no graph
    through nnplug's backward, and differentiating it raises."""
    x, w = r64(2, 3), r64(4, 3)
    y = nt.linear(x, w, device=ref)
    v = torch.ones_like(y, requires_grad=True)  # an upstream gradient that itself needs one
    (g,) = torch.autograd.grad(y, x, v, create_graph=True)
    with pytest.raises(RuntimeError, match="twice"):
        g.sum().backward()
    (g,) = torch.autograd.grad(nt.linear(x, w, device=ref).sum(), x, create_graph=True)
    assert not g.requires_grad


# --------------------------------------------------------------------------- example --
def test_example_script():
    script = os.path.join(ROOT, "examples", "python", "torch_bridge.py")
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "gradcheck passed" in r.stdout and "same loss and gradients" in r.stdout
