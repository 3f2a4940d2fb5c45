"""nnplug.torch on CUDA tensors (nnplug.torch, "On the GPU"; nnplug._torch_cuda).

On any machine: the event protocol of one call (nnplug._torch_cuda.run) with PyTorch's CUDA
event and stream classes replaced by recorders and the op queued on the cpu backend; the choice
of the nnplug device for CUDA memory and its refusals; scripts/torch_twins_check.py on the cpu
backend (agreement, and the exit status of a mismatch).

With a CUDA device (PyTorch's cuda:0 and nnplug's; skipped without, failed without nnplug's when
NNPLUG_TEST_REQUIRE names cuda): every function forward and backward against PyTorch on CUDA
tensors; results that PyTorch's next ops read without any synchronisation, on a side stream
and with inputs freed right after the call; no host synchronisation in forward and backward
(PyTorch's sync debug mode); the refusals of mixed devices and of another nnplug device; the
bridge's own stream; 16-bit attention against PyTorch's in float32; and the twins check on
cuda."""
import copy
import functools
import json
import math
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import nnplug  # noqa: E402
import nnplug.torch as nt  # noqa: E402
from nnplug import _torch_cuda  # noqa: E402
from torch_helpers import compare as _compare, expect_error  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "..", "scripts", "torch_twins_check.py")
Status = nnplug.Status
RTOL, ATOL = 1e-4, 1e-4  # float32 on cuda (TF32 off on both sides) against PyTorch
compare = functools.partial(_compare, rtol=RTOL, atol=ATOL)




def run_script(*args):
    if not os.path.isfile(SCRIPT):  # a copy of the package and its tests outside the repository
        pytest.skip(f"{SCRIPT} not found")
    r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                       timeout=300)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    return r, (json.loads(lines[-1]) if lines else None)


# ------------------------------------------------------------- any machine: protocol --
class _Event:
    """Stands for torch.cuda.Event: records what is done with it in LOG."""
    count = 0

    def __init__(self, *args, **kwargs):
        _Event.count += 1
        self.name = f"ev{_Event.count}"

    def record(self, stream):
        LOG.append(("record", self.name, stream.name))


class _Stream:
    """Stands for PyTorch's current stream and for the ExternalStream over nnplug's."""

    def __init__(self, name):
        self.name = name

    def wait_event(self, event):
        LOG.append(("wait", event.name, self.name))


class _DeviceScope:
    """Stands for torch.cuda.device(where): logs entering and leaving."""

    def __init__(self, where):
        self.where = str(where)

    def __enter__(self):
        LOG.append(("device", self.where))

    def __exit__(self, *exc):
        LOG.append(("device done", self.where))


LOG = []


@pytest.fixture
def fake_cuda(monkeypatch):
    """_torch_cuda.run with recorders for PyTorch's current stream ("torch"), the external
    stream over nnplug's ("nnplug"), events and record_stream; the op is queued on a cpu
    stream (yielded with the device)."""
    try:
        cpu = nnplug.device("cpu")
    except nnplug.Error as e:
        pytest.skip(f"no cpu device: {e}")
    stream, cur, ext = cpu.stream(), _Stream("torch"), _Stream("nnplug")
    LOG.clear()
    _Event.count = 0
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    monkeypatch.setattr(torch.cuda, "device", _DeviceScope)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda where=None: cur)
    monkeypatch.setattr(_torch_cuda, "stream_for", lambda dev, where: (stream, ext))
    monkeypatch.setattr(torch.Tensor, "record_stream",
                        lambda self, s: LOG.append(("record_stream", self.data_ptr(), s.name)),
                        raising=False)
    yield cpu, stream
    stream.destroy()


def test_one_call_orders_both_streams_with_events(fake_cuda):
    cpu, stream = fake_cuda
    x, w = torch.randn(5, 3), torch.randn(4, 3)
    y = torch.full((5, 4), float("nan"))
    p = nnplug._abi.nnp_gemm_params(trans_b=1)
    _torch_cuda.run("linear", cpu, nnplug.OpKind.GEMM, p, [x, w, None], [y])
    stream.synchronize()
    torch.testing.assert_close(y, x @ w.T)
    assert LOG == [("device", "cpu"), ("record", "ev1", "torch"), ("wait", "ev1", "nnplug"),
                   ("record_stream", x.data_ptr(), "nnplug"),
                   ("record_stream", w.data_ptr(), "nnplug"),
                   ("record_stream", y.data_ptr(), "nnplug"),
                   ("record", "ev2", "nnplug"), ("wait", "ev2", "torch"),
                   ("device done", "cpu")]


def test_a_refused_call_names_the_function_and_queues_nothing(fake_cuda):
    cpu, _ = fake_cuda
    x, w, y = torch.randn(5, 3), torch.randn(4, 2), torch.empty(5, 4)
    expect_error(Status.INVALID_ARGUMENT, f"nnplug.torch.linear on {cpu.name}: ", _torch_cuda.run,
                 "linear", cpu, nnplug.OpKind.GEMM, nnplug._abi.nnp_gemm_params(trans_b=1),
                 [x, w, None], [y])
    # nnplug's stream waited for PyTorch's work; nothing was queued, so nothing more to order
    assert LOG == [("device", "cpu"), ("record", "ev1", "torch"), ("wait", "ev1", "nnplug"),
                   ("device done", "cpu")]


def test_empty_tensors_pass_as_compact_descriptors(fake_cuda):
    cpu, stream = fake_cuda
    dy = torch.empty(0, 4)
    db = torch.full((4,), float("nan"))
    p = nnplug._abi.nnp_reduce_params(op=int(nnplug.ReduceOp.SUM), keepdims=0, n_axes=1,
                                      axes=[0])
    _torch_cuda.run("linear", cpu, nnplug.OpKind.REDUCE, p, [dy], [db])
    stream.synchronize()
    assert torch.equal(db, torch.zeros(4))  # the sum over no rows


class _CudaLike:
    """A stand-in for a CUDA tensor where only its device matters."""
    device = torch.device("cuda", 0)

    def __dlpack_device__(self):
        return (int(nnplug.DLDeviceType.kDLCUDA), 0)


def test_cuda_memory_needs_its_own_cuda_device():
    expect_error(Status.INVALID_ARGUMENT, "the tensors are on cuda:0 but the nnplug device is "
                 "reference", _torch_cuda.call_device, "linear", "reference", _CudaLike())
    cuda = [d for d in nnplug.devices() if d.dldevice == _CudaLike().__dlpack_device__()]
    if cuda:
        assert _torch_cuda.call_device("linear", "auto", _CudaLike()) == cuda[0]
        assert _torch_cuda.call_device("linear", cuda[0], _CudaLike()) == cuda[0]
    else:
        expect_error(Status.NOT_FOUND, "nnplug.torch.linear: the tensors are on cuda:0, and no "
                     "nnplug device uses that memory", _torch_cuda.call_device, "linear", "auto",
                     _CudaLike())


def test_synchronize_without_cuda_work_is_a_no_op():
    nt.synchronize()
    nt.synchronize("reference")


def test_twins_check_on_cpu():
    try:
        cpu = nnplug.device("cpu")
    except nnplug.Error as e:
        pytest.skip(f"no cpu device: {e}")
    r, out = run_script("--device", "cpu", "--steps", "6")
    assert r.returncode == 0, r.stdout + r.stderr
    assert out["ok"] is True and out["steps"] == 6 and out["nnplug_device"] == cpu.name
    assert out["max_abs_diff"] <= 1e-3
    assert math.isfinite(out["final_loss_nnplug"]) and math.isfinite(out["final_loss_torch"])
    # A tolerance nothing meets: the mismatch is reported and the exit status is 1.
    r, out = run_script("--device", "cpu", "--steps", "2", "--tol=-1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert out["ok"] is False


# --------------------------------------------------------------------- on a CUDA device --
@pytest.fixture
def cuda():
    """nnplug's cuda:0 with PyTorch's TF32 off (restored after)."""
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    try:
        dev = nnplug.device("cuda:0")
    except nnplug.Error as e:
        if "cuda" in os.environ.get("NNPLUG_TEST_REQUIRE", "").split(","):
            raise
        pytest.skip(f"no nnplug cuda device: {e}")
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield dev
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved




def _attention(q, k, v, mask):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return torch.softmax(s.masked_fill(~mask, -math.inf), dim=-1) @ v


def test_every_function_on_cuda_tensors(cuda):
    def r(*shape):
        return torch.randn(*shape, device="cuda", requires_grad=True)

    compare(lambda x, w, b: nt.conv2d(x, w, b, stride=2, padding=1),
             lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
             [r(2, 4, 9, 8), r(6, 4, 3, 3), r(6)])
    compare(nt.linear, F.linear, [r(3, 5, 7), r(4, 7), r(4)])
    compare(lambda x, w, b: nt.layer_norm(x, (6,), w, b),
             lambda x, w, b: F.layer_norm(x, (6,), w, b), [r(4, 6), r(6), r(6)])
    mask = torch.rand(2, 3, 5, 7, device="cuda") > 0.3
    mask[..., 0] = True
    compare(lambda q, k, v: nt.scaled_dot_product_attention(q, k, v, attn_mask=mask),
             lambda q, k, v: _attention(q, k, v, mask), [r(2, 3, 5, 4), r(2, 3, 7, 4),
                                                         r(2, 3, 7, 4)])
    t = torch.randint(0, 5, (6,), device="cuda")
    t[1] = -100
    compare(lambda x: nt.cross_entropy(x, t), lambda x: F.cross_entropy(x, t), [r(6, 5)])
    compare(lambda x: nt.nll_loss(x.log_softmax(1), t, reduction="sum"),
             lambda x: F.nll_loss(x.log_softmax(1), t, reduction="sum"), [r(6, 5)])
    # out of range on the GPU: NaN (no host check), where the cpu path refuses
    bad = torch.tensor([0, 9], device="cuda")
    assert torch.isnan(nt.cross_entropy(torch.randn(2, 5, device="cuda"), bad)).item()
    nt.synchronize()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_attention_on_cuda_tensors(cuda, dtype):
    """16-bit attention forward and backward against PyTorch's in float32 on the same (rounded)
    values: calls cuDNN's fused attention takes (no mask; grouped-query heads, causal, Tq != Tk,
    D != Dv) and one the float32 kernels take on copies (a mask)."""
    dt = getattr(torch, dtype)
    tol = {"float16": 1e-2, "bfloat16": 4e-2}[dtype]  # a few units of the output's rounding
    g = torch.Generator(device="cuda").manual_seed(3)

    def r(*shape):
        return torch.randn(*shape, device="cuda", generator=g).to(dt)

    mask = torch.rand(2, 4, 24, 40, device="cuda", generator=g) > 0.3
    mask[..., 0] = True
    cases = [  # q, k, v shapes, keyword arguments
        ((2, 8, 40, 64), (2, 2, 72, 64), (2, 2, 72, 32), {"is_causal": True, "enable_gqa": True}),
        ((1, 4, 100, 128), (1, 4, 100, 128), (1, 4, 100, 128), {"scale": 0.3}),
        ((2, 4, 24, 16), (2, 4, 40, 16), (2, 4, 40, 16), {"attn_mask": mask}),
    ]
    for qs, ks, vs, kw in cases:
        q, k, v = r(*qs), r(*ks), r(*vs)
        dy = r(qs[0], qs[1], qs[2], vs[3])
        ours = [t.clone().requires_grad_() for t in (q, k, v)]
        ref = [t.float().requires_grad_() for t in (q, k, v)]
        y = nt.scaled_dot_product_attention(*ours, **kw)
        y_ref = F.scaled_dot_product_attention(*ref, **kw)
        assert y.dtype == dt and y.shape == y_ref.shape
        torch.testing.assert_close(y.float(), y_ref, rtol=tol, atol=tol)
        y.backward(dy)
        y_ref.backward(dy.float())
        for a, b in zip(ours, ref):
            assert a.grad is not None and a.grad.dtype == dt
            torch.testing.assert_close(a.grad.float(), b.grad, rtol=tol, atol=tol)
    nt.synchronize()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_layer_norm_on_cuda_tensors(cuda, dtype):
    """A 16-bit layer norm outside autocast runs in the tensors' dtype with float32 statistics
    (ABI 1.10): output and gradients in that dtype, within its rounding of PyTorch's float32
    layer norm on the same (rounded) values."""
    dt = getattr(torch, dtype)
    tol = {"float16": 1e-2, "bfloat16": 4e-2}[dtype]
    g = torch.Generator(device="cuda").manual_seed(5)
    x = (torch.randn(64, 17, 96, device="cuda", generator=g) * 3 + 1).to(dt)
    w = (torch.rand(96, device="cuda", generator=g) + 0.5).to(dt)
    b = torch.randn(96, device="cuda", generator=g).to(dt)
    dy = torch.randn(64, 17, 96, device="cuda", generator=g).to(dt)
    ours = [t.clone().requires_grad_() for t in (x, w, b)]
    ref = [t.float().requires_grad_() for t in (x, w, b)]
    y = nt.layer_norm(ours[0], (96,), ours[1], ours[2])
    y_ref = F.layer_norm(ref[0], (96,), ref[1], ref[2])
    assert y.dtype == dt
    torch.testing.assert_close(y.float(), y_ref, rtol=tol, atol=tol)
    y.backward(dy)
    y_ref.backward(dy.float())
    for a, r in zip(ours, ref):
        assert a.grad is not None and a.grad.dtype == dt
        # the parameter gradients sum 64 * 17 rows: compare relative to their size
        torch.testing.assert_close(a.grad.float(), r.grad, rtol=tol,
                                   atol=tol * float(r.grad.abs().max()))
    nt.synchronize()

def test_ordering_without_synchronisation(cuda):
    """Large products queued back to back with PyTorch's ops that make their inputs and read
    their outputs, on a side stream, inputs dropped right after each call: every result is
    right only if each side waits for the other and freed memory is not reused early."""
    side = torch.cuda.Stream()
    w = torch.randn(1024, 1024, device="cuda") / 32
    results, expected = [], []
    side.wait_stream(torch.cuda.current_stream())  # w was made on the default stream
    with torch.cuda.stream(side):
        for i in range(8):
            x = torch.randn(1024, 1024, device="cuda") * (i + 1)  # PyTorch writes x ...
            y = nt.linear(x, w)                                   # ... nnplug reads it ...
            results.append(y * 2)                                 # ... PyTorch reads y
            expected.append(F.linear(x, w) * 2)
            del x, y  # their memory goes back to the cache while nnplug may still run
            torch.randn(1024, 1024, device="cuda")  # takes cached memory again
    torch.cuda.synchronize()
    for got, want in zip(results, expected):
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)
    nt.synchronize()


def test_forward_and_backward_do_not_synchronise(cuda):
    model = nt.convert(torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.LayerNorm(64), torch.nn.Linear(64, 5)).cuda())
    x = torch.randn(8, 3, 4, 4, device="cuda")
    t = torch.randint(0, 5, (8,), device="cuda")
    nt.cross_entropy(model(x), t).backward()  # first use: the bridge's stream is made
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        loss = nt.cross_entropy(model(x), t)
        loss.backward()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert all(p.grad is not None and p.grad.is_cuda for p in model.parameters())
    assert math.isfinite(loss.item())
    nt.synchronize()


def test_refusals_on_cuda(cuda):
    xg, wg = torch.randn(3, 4, device="cuda"), torch.randn(2, 4, device="cuda")
    xc, wc = xg.cpu(), wg.cpu()
    expect_error(Status.INVALID_ARGUMENT, "weight is on device cpu but input is on cuda:0",
                 nt.linear, xg, wc)
    expect_error(Status.INVALID_ARGUMENT, "weight is on device cuda:0 but input is on cpu",
                 nt.linear, xc, wg)
    expect_error(Status.INVALID_ARGUMENT, "bias is on device cpu", nt.linear, xg, wg,
                 torch.zeros(2))
    expect_error(Status.INVALID_ARGUMENT, "target is on device cpu", nt.cross_entropy, xg,
                 torch.tensor([0, 1, 2]))
    q = torch.randn(1, 1, 2, 4, device="cuda")
    expect_error(Status.INVALID_ARGUMENT, "key is on device cpu but query is on cuda:0",
                 nt.scaled_dot_product_attention, q, q.cpu(), q)
    expect_error(Status.INVALID_ARGUMENT, "the nnplug device is reference", nt.linear, xg, wg,
                 device="reference")
    previous = nt.set_device("reference")
    try:
        expect_error(Status.INVALID_ARGUMENT, "the nnplug device is reference", nt.linear, xg,
                     wg)
        assert nt.linear(xc, wc).device.type == "cpu"  # CPU tensors as before
    finally:
        nt.set_device(previous)
    assert nt.linear(xg, wg, device=cuda).is_cuda


def test_the_bridge_stream(cuda):
    x, w = torch.randn(3, 4, device="cuda"), torch.randn(2, 4, device="cuda")
    y = nt.linear(x, w)
    stream, external = _torch_cuda.stream_for(cuda, y.device)
    assert stream.device == cuda and stream.native_handle != 0
    assert external.cuda_stream == stream.native_handle
    assert stream.native_handle != torch.cuda.current_stream().cuda_stream
    assert _torch_cuda.stream_for(cuda, y.device)[0] is stream  # kept for the process
    nt.synchronize()
    nt.synchronize(cuda)
    torch.testing.assert_close(y, F.linear(x, w), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_autocast_on_cuda(cuda, dtype):
    """A model with its Conv2d, LayerNorm and Linear swapped for twins, under torch.autocast:
    the same dtypes as PyTorch's own layers (16-bit convolution and linear outputs, float32
    LayerNorm and loss, float32 parameter gradients) and the same loss and gradients within a
    few units of the 16-bit rounding (relative to their norms)."""
    dt = getattr(torch, dtype)
    tol = {"float16": 5e-3, "bfloat16": 3e-2}[dtype]
    torch.manual_seed(5)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.LayerNorm(8 * 6 * 6), torch.nn.Linear(8 * 6 * 6, 10)).cuda()
    twin = nt.convert(copy.deepcopy(model))
    x = torch.randn(16, 3, 6, 6, device="cuda")
    t = torch.randint(0, 10, (16,), device="cuda")
    runs = []
    for m, loss_fn in ((model, F.cross_entropy), (twin, nt.cross_entropy)):
        with torch.autocast("cuda", dtype=dt):
            h = m[1](m[0](x))
            y = m[4](m[3](m[2](h)))
            loss = loss_fn(y, t)
        loss.backward()
        runs.append((h, y, loss, [p.grad for p in m.parameters()]))
    nt.synchronize(cuda)
    (h0, y0, l0, g0), (h1, y1, l1, g1) = runs
    assert (h1.dtype, y1.dtype, l1.dtype) == (h0.dtype, y0.dtype, l0.dtype) == (dt, dt,
                                                                               torch.float32)
    assert all(g.dtype == torch.float32 for g in g1)

    def rel(a, b):
        return float((a.double() - b.double()).norm() / b.double().norm())
    assert rel(y1, y0) < tol and rel(l1, l0) < tol
    for a, b in zip(g1, g0):
        assert rel(a, b) < tol, (a.shape, rel(a, b))


def test_twins_check_on_cuda(cuda):
    r, out = run_script("--device", "cuda", "--steps", "50")
    assert r.returncode == 0, r.stdout + r.stderr
    assert out["ok"] is True and out["nnplug_device"] == "cuda:0"
    assert out["max_abs_diff"] <= 1e-3
