"""nnplug.onnx: ONNX models exported from PyTorch (scripts/make_onnx_models.py, test-sized) run
on every device of the `dev` fixture and give PyTorch's outputs (rtol 1e-3, atol 1e-4) and its
top-1 classes; unsupported nodes are refused when the model is loaded, all of them by name; the
tensors stay on the device between nodes. Skips without onnx, PyTorch or torchvision."""
import importlib.util
import os
import time

import numpy as np
import pytest

import nnplug
import nnplug.onnx as nx

MISSING = [m for m in ("onnx", "torch", "torchvision") if importlib.util.find_spec(m) is None]
# a skip mark rather than importorskip: the module's tests are collected (and skipped), so that
# pytest exits with 0, not "no tests collected"
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(MISSING)}")
if not MISSING:
    import onnx
    import torch
    from onnx import TensorProto, helper, numpy_helper

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
NAMES = ("mlp", "cnn", "vit", "resnet18", "mobilenet_v2", "vit_tiny")
INPUT, OUTPUT = "input", "logits"
BATCH = 2
RTOL, ATOL = 1e-3, 1e-4
_script = {}
_cache = {}


def mk():
    """scripts/make_onnx_models.py as a module (it imports PyTorch)."""
    if not _script:
        spec = importlib.util.spec_from_file_location(
            "make_onnx_models", os.path.join(REPO, "scripts", "make_onnx_models.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        assert mod.NAMES == NAMES and (mod.INPUT_NAME, mod.OUTPUT_NAME) == (INPUT, OUTPUT)
        _script["mod"] = mod
    return _script["mod"]


def exported(name, opset=17, fold=True, batch=BATCH):
    """(ONNX bytes, input batch, PyTorch's output) of the small model, made once per session."""
    key = (name, opset, fold, batch)
    if key not in _cache:
        model, shape = mk().build(name, small=True)
        x = torch.randn((batch,) + shape, generator=torch.Generator().manual_seed(7))
        data = mk().export_bytes(model, x, opset, fold)
        with torch.no_grad():
            y = model(x).numpy()
        _cache[key] = (data, x.numpy(), y)
    return _cache[key]


@pytest.fixture
def cpu():
    try:
        return nnplug.device("cpu")
    except nnplug.Error as e:
        pytest.skip(f"no cpu device: {e}")


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(got.argmax(1), want.argmax(1))


@pytest.mark.parametrize("name", NAMES)
def test_model_matches_pytorch(dev, name):
    data, x, want = exported(name)
    model = nx.load(data, dev)
    got = model.run({INPUT: x})
    assert list(got) == [OUTPUT]
    _close(got[OUTPUT], want)


@pytest.mark.parametrize("name,opset,fold", [
    ("resnet18", 13, False),  # BatchNormalization nodes, shape arithmetic left in the graph
    ("vit", 13, True),        # layer norm decomposed (ReduceMean, Pow, Sqrt, Div), Split
    ("vit_tiny", 13, False),  # MultiheadAttention's reshapes computed from Shape nodes
])
def test_other_opsets_and_unfolded_exports(cpu, name, opset, fold):
    data, x, want = exported(name, opset, fold)
    types = {n.op_type for n in onnx.load_from_string(data).graph.node}
    if name == "resnet18":
        assert "BatchNormalization" in types
    if name == "vit":
        assert "LayerNormalization" not in types and "ReduceMean" in types
    _close(nx.load(data, cpu).run({INPUT: x})[OUTPUT], want)


def test_dynamic_batch_is_planned_per_shape(cpu):
    data, _, _ = exported("cnn")
    model, _ = mk().build("cnn", small=True)
    m = nx.load(data, cpu)
    for i, batch in enumerate((1, 3, 3)):  # the second run of batch 3 reuses the first's buffers
        x = np.random.default_rng(i).standard_normal((batch, 1, 28, 28), np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        _close(m.run({INPUT: x})[OUTPUT], want)


def test_graph_runs_match_eager_runs(dev):
    data, x, want = exported("cnn")
    model, _ = mk().build("cnn", small=True)
    m = nx.load(data, dev, graphs=True)
    rng = np.random.default_rng(3)
    for i in range(3):  # eager, then captured and launched, then launched again
        xi = x if i == 0 else rng.standard_normal(x.shape, np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(xi)).numpy()
        got = m.run({INPUT: xi})
        _close(got[OUTPUT], want)
        plan = m.plan({INPUT: x.shape})  # the cached plan of this batch size
        assert (plan.graph is not None) == (i > 0)
    # outputs kept on the device are copies: the next launch does not overwrite them
    first = m.run({INPUT: x}, as_numpy=False)[OUTPUT]
    m.run({INPUT: xi})
    with torch.no_grad():
        _close(first.numpy(), model(torch.from_numpy(x)).numpy())


def _graph_model(nodes, inputs, outputs, initializers=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _t(name, shape, elem=None):
    return helper.make_tensor_value_info(name, elem or TensorProto.FLOAT, shape)


def _c(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def _erf(v):
    return torch.erf(torch.from_numpy(v)).numpy()


# (name, nodes, inputs {name: shape}, initializers, numpy function of the inputs, opset):
# mappings the exported models do not reach. One output "y".
_OP_CASES = [
    ("expand", [helper.make_node("Expand", ["x", "s"], ["y"])], {"x": (3, 1)},
     [_c("s", np.array([2, 3, 4]))], lambda x: np.broadcast_to(x, (2, 3, 4)), 17),
    ("slice_steps", [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
     {"x": (4, 6)}, [_c("st", [5, 0]), _c("en", [-100, 3]), _c("ax", [1, 0]), _c("sp", [-2, 1])],
     lambda x: x[0:3, 5::-2], 17),
    ("gather_runtime_indices", [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
     {"x": (2, 5), "i": ((3,), TensorProto.INT64)}, [], lambda x, i: np.take(x, i, axis=1), 17),
    ("where_clip_pow", [helper.make_node("Where", ["c", "x", "z"], ["w"]),
                        helper.make_node("Clip", ["w", "lo", "hi"], ["p"]),
                        helper.make_node("Pow", ["p", "e"], ["y"])],
     {"x": (2, 3)}, [_c("c", np.array([[True, False, True]])), _c("z", np.float32(0.5)),
                     _c("lo", np.float32(-0.2)), _c("hi", np.float32(0.7)), _c("e", np.int64(3))],
     lambda x: np.clip(np.where([[True, False, True]], x, 0.5), -0.2, 0.7) ** 3, 17),
    ("reduce_sum_axes_input", [helper.make_node("ReduceSum", ["x", "a"], ["y"], keepdims=0)],
     {"x": (2, 3, 4)}, [_c("a", [0, 2])], lambda x: x.sum(axis=(0, 2)), 17),
    ("reduce_l2_attr", [helper.make_node("ReduceL2", ["x"], ["y"], axes=[-1])], {"x": (2, 5)},
     [], lambda x: np.sqrt((x * x).sum(-1, keepdims=True)), 17),
    ("split_sizes_concat", [helper.make_node("Split", ["x", "sz"], ["a", "b"], axis=1),
                            helper.make_node("Concat", ["b", "k", "a"], ["y"], axis=1)],
     {"x": (2, 5)}, [_c("sz", [2, 3]), _c("k", np.ones((2, 1), np.float32))],
     lambda x: np.concatenate([x[:, 2:], np.ones((2, 1)), x[:, :2]], 1), 17),
    ("layer_norm_mean", [helper.make_node("LayerNormalization", ["x", "g"], ["n", "m"],
                                          axis=1, epsilon=1e-3),
                         helper.make_node("Sub", ["n", "m"], ["y"])],
     {"x": (3, 2, 4)}, [_c("g", np.full((2, 4), 2.0, np.float32))],
     lambda x: 2 * (x - x.mean((1, 2), keepdims=True)) /
     np.sqrt(x.var((1, 2), keepdims=True) + 1e-3) - x.mean((1, 2), keepdims=True), 17),
    ("batch_norm_rank3_leaky_elu",
     [helper.make_node("BatchNormalization", ["x", "sc", "bi", "mu", "va"], ["b"]),
      helper.make_node("LeakyRelu", ["b"], ["l"], alpha=0.2),
      helper.make_node("Elu", ["l"], ["y"], alpha=0.5)],
     {"x": (2, 3, 4)}, [_c("sc", np.float32([1, 2, 3])), _c("bi", np.float32([0, 1, -1])),
                        _c("mu", np.float32([0.1, 0, -0.1])), _c("va", np.float32([1, 2, 0.5]))],
     lambda x: (lambda b: (lambda lr: np.where(lr > 0, lr, 0.5 * (np.exp(lr) - 1)))(
         np.where(b >= 0, b, 0.2 * b)))(
         np.float32([1, 2, 3])[:, None] * (x - np.float32([0.1, 0, -0.1])[:, None]) /
         np.sqrt(np.float32([1, 2, 0.5])[:, None] + 1e-5) + np.float32([0, 1, -1])[:, None]), 15),
    ("softmax_logsoftmax_transpose_erf",
     [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
      helper.make_node("Softmax", ["t"], ["s"], axis=0),
      helper.make_node("LogSoftmax", ["s"], ["l"], axis=-1),
      helper.make_node("Erf", ["l"], ["y"])],
     {"x": (2, 3, 4)}, [],
     lambda x: _erf((lambda s: s - s.max(-1, keepdims=True) - np.log(np.exp(
         s - s.max(-1, keepdims=True)).sum(-1, keepdims=True)))(
         np.exp(x.transpose(1, 0, 2)) / np.exp(x.transpose(1, 0, 2)).sum(0))), 17),
    ("hard_sigmoid_hard_swish", [helper.make_node("HardSigmoid", ["x"], ["h"], alpha=0.3,
                                                  beta=0.4),
                                 helper.make_node("Mul", ["x", "k"], ["h4"]),
                                 helper.make_node("HardSwish", ["h4"], ["w"]),
                                 helper.make_node("Add", ["h", "w"], ["y"])],
     {"x": (2, 3, 5)}, [_c("k", np.float32(4.0))],
     lambda x: np.clip(0.3 * x + 0.4, 0, 1) + 4 * x * np.clip(4 * x / 6 + 0.5, 0, 1), 14),
    ("pad_constant_and_crop", [helper.make_node("Pad", ["x", "p", "v"], ["y"])],
     {"x": (2, 3, 4)}, [_c("p", [0, 1, -1, 1, 0, 2]), _c("v", np.float32(1.5))],
     lambda x: np.pad(x[:, :, 1:], ((0, 1), (1, 0), (0, 2)), constant_values=1.5), 13),
    ("pad_axes", [helper.make_node("Pad", ["x", "p", "", "a"], ["y"])],
     {"x": (2, 3, 4)}, [_c("p", [2, 1, 0, -2]), _c("a", [-1, 1])],
     lambda x: np.pad(x[:, :1, :], ((0, 0), (1, 0), (2, 0))), 18),
    ("sum_squeeze_unsqueeze", [helper.make_node("Sum", ["x", "x"], ["s"]),
                               helper.make_node("Unsqueeze", ["s", "a0"], ["u"]),
                               helper.make_node("Squeeze", ["u", "a1"], ["y"])],
     {"x": (1, 3)}, [_c("a0", [0]), _c("a1", [0, 1])], lambda x: (2 * x).reshape(3), 17),
]


def test_mobilenet_v3_with_hard_swish_matches_pytorch(dev):
    """torchvision's MobileNetV3-Small (HardSwish, and HardSigmoid in its squeeze-excitation
    blocks; random weights, 32x32 inputs): the outputs of PyTorch."""
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v3_small(num_classes=10).eval()
    x = torch.randn((2, 3, 32, 32), generator=torch.Generator().manual_seed(7))
    data = mk().export_bytes(model, x, 17, True)
    ops = {n.op_type for n in onnx.load_from_string(data).graph.node}
    assert {"HardSwish", "HardSigmoid"} <= ops
    with torch.no_grad():
        want = model(x).numpy()
    _close(nx.load(data, dev).run({INPUT: x.numpy()})[OUTPUT], want)


@pytest.mark.parametrize("name", NAMES)
def test_float16_models_on_sim(name):
    """The models in float16 (make_onnx_models.to_float16: every initializer, constant and
    value in float16) run on sim (which rounds each op's exact result once to float16):
    float16 outputs within 5e-3 of PyTorch's float32 ones, relative to their norm, and the
    same top-1."""
    try:
        sim = nnplug.device("sim")
    except nnplug.Error as e:
        pytest.skip(f"no sim device: {e}")
    data, x, want = exported(name)
    got = nx.load(mk().to_float16(data), sim).run({INPUT: x.astype(np.float16)})[OUTPUT]
    assert got.dtype == np.float16
    assert np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want) < 5e-3
    np.testing.assert_array_equal(got.argmax(1), want.argmax(1))


def test_float16_normalisations_keep_float32_statistics_on_sim():
    """A float16 graph with BatchNormalization (float16 scale, B, mean and var: converted to
    float32 when uploaded, the op table's accumulation rule of ABI 1.10) and
    LayerNormalization with its Mean output (float32: stash_type 1) runs on sim: y within
    float16's rounding of numpy's float64 result, Mean float32. A float16 stash_type with Mean
    used is refused, naming the node."""
    try:
        sim = nnplug.device("sim")
    except nnplug.Error as e:
        pytest.skip(f"no sim device: {e}")
    f16 = TensorProto.FLOAT16
    sc, bi = np.float16([1, 2, 3]), np.float16([0, 1, -1])
    mu, va = np.float16([0.1, 0, -0.1]), np.float16([1, 2, 0.5])
    g = np.full((3, 4), 2.0, np.float16)

    def model(stash):
        nodes = [helper.make_node("BatchNormalization", ["x", "sc", "bi", "mu", "va"], ["b"]),
                 helper.make_node("LayerNormalization", ["b", "g"], ["y", "m"], axis=1,
                                  stash_type=stash, name="ln")]
        return _graph_model(nodes, [_t("x", (2, 3, 4), f16)],
                            [_t("y", None, f16), _t("m", None, TensorProto.FLOAT)],
                            [_c("sc", sc), _c("bi", bi), _c("mu", mu), _c("va", va),
                             _c("g", g)], 17)

    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float16)
    out = nx.load(model(1), sim).run({"x": x})
    assert out["y"].dtype == np.float16 and out["m"].dtype == np.float32
    col = (lambda a: a.astype(np.float64)[:, None])
    b = col(sc) * (x - col(mu)) / np.sqrt(col(va) + 1e-5) + col(bi)
    b = b.astype(np.float16).astype(np.float64)  # the batch norm's float16 output
    mean = b.mean((1, 2), keepdims=True)
    y = 2 * (b - mean) / np.sqrt(b.var((1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(out["m"], mean, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out["y"].astype(np.float64), y, rtol=2e-3, atol=2e-3)
    with pytest.raises(nx.ModelRefusedError, match="ln .*stash_type 10"):
        nx.load(model(TensorProto.FLOAT16), sim)

@pytest.mark.parametrize("case", _OP_CASES, ids=[c[0] for c in _OP_CASES])
def test_op_mappings_against_numpy(dev, case):
    _, nodes, ins, inits, fn, opset = case
    if opset > onnx.defs.onnx_opset_version():
        pytest.skip(f"onnx {onnx.__version__} knows opsets up to "
                    f"{onnx.defs.onnx_opset_version()}, the case needs {opset}")
    rng = np.random.default_rng(5)
    infos, feeds = [], {}
    for name, spec in ins.items():
        shape, elem = spec if isinstance(spec[0], tuple) else (spec, TensorProto.FLOAT)
        infos.append(_t(name, shape, elem))
        feeds[name] = rng.standard_normal(shape).astype(np.float32) \
            if elem == TensorProto.FLOAT else rng.integers(-5, 5, shape)
    proto = _graph_model(nodes, infos, [_t("y", None)], inits, opset)
    got = nx.load(proto, dev).run(feeds)["y"]
    want = fn(*feeds.values())
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_unsupported_nodes_are_refused_up_front_by_name(ref):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="fine_relu"),
             helper.make_node("Hardmax", ["a"], ["b"], name="odd_hardmax"),
             helper.make_node("Softplus", ["b"], ["c"], name="odd_softplus"),
             helper.make_node("Sigmoid", ["c"], ["y"], name="fine_sigmoid")]
    proto = _graph_model(nodes, [x], [y])
    with pytest.raises(nx.ModelRefusedError) as e:
        nx.load(proto, ref)
    assert isinstance(e.value, nnplug.UnsupportedError)
    assert [(r.node, r.op_type) for r in e.value.refusals] == [
        ("odd_hardmax", "Hardmax"), ("odd_softplus", "Softplus")]
    msg = str(e.value)
    assert "odd_hardmax" in msg and "odd_softplus" in msg and "fine_relu" not in msg
    assert "no nnplug op computes ONNX Hardmax" in msg


def test_device_refusals_name_the_node_and_the_devices_reason(ref, cpu):
    # float64: the reference backend runs it, the cpu backend (float32) refuses every op
    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 3])
    nodes = [helper.make_node("Tanh", ["x"], ["t"], name="tanh64"),
             helper.make_node("Mul", ["t", "two"], ["y"], name="mul64")]
    two = numpy_helper.from_array(np.array(2.0), "two")
    proto = _graph_model(nodes, [x], [y], [two])
    xv = np.linspace(-1, 1, 6).reshape(2, 3)
    got = nx.load(proto, ref).run({"x": xv})["y"]
    np.testing.assert_allclose(got, 2 * np.tanh(xv), rtol=1e-12)
    with pytest.raises(nx.ModelRefusedError) as e:
        nx.load(proto, cpu)
    assert [r.node for r in e.value.refusals] == ["tanh64", "mul64"]
    assert all("float64" in r.reason for r in e.value.refusals), e.value.refusals


def test_runtime_shape_arguments_and_old_opsets_are_refused(ref):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    proto = _graph_model([helper.make_node("Reshape", ["x", "s"], ["y"], name="dyn_reshape")],
                         [x, s], [y])
    with pytest.raises(nx.ModelRefusedError) as e:
        nx.load(proto, ref)
    assert e.value.refusals[0].node == "dyn_reshape"
    old = _graph_model([helper.make_node("Relu", ["x"], ["y"])], [x], [y], opset=11)
    with pytest.raises(nx.ModelRefusedError, match="opset 11"):
        nx.load(old, ref)


class _CountingCopies:
    """Counts nnp_memcpy / nnp_memcpy_async calls (every host<->device transfer of the package
    goes through one of them)."""

    def __init__(self, monkeypatch):
        from nnplug._lib import lib
        self.calls = 0
        for name in ("nnp_memcpy", "nnp_memcpy_async"):
            real = getattr(lib(), name)

            def counted(*args, _real=real):
                self.calls += 1
                return _real(*args)
            monkeypatch.setattr(lib(), name, counted)


def test_split_parts_reuse_the_buffers_of_earlier_runs(dev):
    """Split's parts take their buffers from the run's pool, as single outputs do: from the
    second run on, they are buffers of the first run, and the results stay right."""
    nodes = [helper.make_node("Split", ["x"], ["a", "b"], axis=1),
             helper.make_node("Relu", ["a"], ["ra"]),
             helper.make_node("Neg", ["b"], ["nb"]),
             helper.make_node("Concat", ["nb", "ra"], ["y"], axis=1)]
    model = nx.load(_graph_model(nodes, [_t("x", (2, 6))], [_t("y", None)]), dev)
    rng = np.random.default_rng(3)
    seen = []

    def trace(node, op_type, outputs):
        seen.append((op_type, {k: v.ptr for k, v in outputs.items()}))

    for run in range(3):
        x = rng.standard_normal((2, 6)).astype(np.float32)
        got = model.run({"x": x}, trace=trace)["y"]
        np.testing.assert_array_equal(got, np.concatenate([-x[:, 3:], np.maximum(x[:, :3], 0)],
                                                          1))
    first = {p for t, ptrs in seen[:4] for p in ptrs.values()}
    later = [ptrs for t, ptrs in seen[4:] if t == "Split"]
    assert len(later) == 2
    for ptrs in later:
        assert set(ptrs.values()) <= first and len(set(ptrs.values())) == 2


def test_later_runs_call_each_steps_plan_directly(dev, monkeypatch):
    """From the second eager run on, every op step with one output calls the plan its first
    call left (nnplug._plan) with the run's buffers; values that differ from those the plan
    was made for, and a failing call, go through the op function as before."""
    from nnplug import _plan
    from nnplug._onnx_steps import _OpStep
    data, x, want = exported("vit")
    m = nx.load(data, dev)
    _close(m.run({INPUT: x})[OUTPUT], want)
    plan = m.plan({INPUT: x.shape})
    steps = [s for s in plan.steps if isinstance(s, _OpStep)]
    assert {s.fn.__name__ for s in steps if s.op is None} == {"concat"}  # variadic
    assert all(len(s.bound) == 1 for s in steps if s.op is not None)
    direct = []
    execute_at = _plan._Plan.execute_at
    monkeypatch.setattr(_plan._Plan, "execute_at",
                        lambda self, addrs: direct.append(self) or execute_at(self, addrs))
    rng = np.random.default_rng(5)
    model, _ = mk().build("vit", small=True)
    for _ in range(2):
        xi = rng.standard_normal(x.shape, np.float32)
        with torch.no_grad():
            _close(m.run({INPUT: xi})[OUTPUT], model(torch.from_numpy(xi)).numpy())
    bound = [s for s in steps if s.op is not None]
    assert len(direct) == 2 * len(bound)
    # a value unlike the one the plan was made for: that step takes the op function again
    step = bound[len(bound) // 2]
    (sid, b), = step.bound.items()
    step.bound[sid] = b._replace(sigs=tuple((0, (7,), (1,), "float32", 0) for _ in b.sigs))
    direct.clear()
    _close(m.run({INPUT: x})[OUTPUT], want)
    assert len(direct) == len(bound) - 1 and step.bound[sid].sigs == b.sigs  # bound again
    # a failing bound call raises the error of its status; later runs are not affected
    (sid, b), = bound[0].bound.items()
    monkeypatch.setattr(b.plan, "execute", lambda *args: int(nnplug.Status.INVALID_ARGUMENT))
    with pytest.raises(nnplug.InvalidArgumentError):
        m.run({INPUT: x})
    monkeypatch.undo()
    _close(m.run({INPUT: x})[OUTPUT], want)


def test_runs_from_several_threads_at_once(dev):
    """Runs of one Model may overlap: each has a stream and buffers of its own, and its bound
    steps use the plans made for that stream."""
    import threading
    data, x, _ = exported("vit")
    m = nx.load(data, dev)
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal(x.shape, np.float32) for _ in range(4)]
    want = [m.run({INPUT: xi})[OUTPUT] for xi in xs]
    got = {}
    errors = []
    start = threading.Barrier(4)

    def work(i):
        try:
            start.wait()
            for j in range(6):
                k = (i + j) % 4
                got[(i, j)] = (k, m.run({INPUT: xs[k]})[OUTPUT])
        except Exception as e:  # noqa: BLE001 — reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(got) == 24
    for k, y in got.values():
        np.testing.assert_allclose(y, want[k], rtol=1e-5, atol=1e-6)


def test_tensors_stay_on_the_device_between_nodes(monkeypatch):
    try:
        sim = nnplug.device("sim")  # memory the host cannot address
    except nnplug.Error as e:
        pytest.skip(f"no sim device: {e}")
    data, x, want = exported("cnn")
    model = nx.load(data, sim)
    model.run({INPUT: x})  # uploads the initializers (once per Model)
    seen = []

    def trace(node, op_type, outputs):
        seen.append((op_type, outputs))

    copies = _CountingCopies(monkeypatch)
    got = model.run({INPUT: x}, trace=trace)[OUTPUT]
    assert copies.calls == 2  # the input in, the output out: nothing between nodes
    _close(got, want)
    # each Conv -> Relu runs as one conv_forward with its fused clamp, the second with the
    # MaxPool after it fused too
    assert [t for t, _ in seen] == ["Relu (fused)", "MaxPool (fused)", "Flatten", "Gemm", "Relu",
                                    "Gemm"]
    for _, outs in seen:
        for v in outs.values():
            assert isinstance(v, nnplug.DeviceArray) and v.device == sim
    # Flatten is a view: the same memory as the max-pool output it reshapes
    (pool_out,), (flat,) = seen[1][1].values(), seen[2][1].values()
    assert flat.ptr == pool_out.ptr and flat.shape == (BATCH, 9216)
    # the output stays on the device when asked
    dev_out = model.run({INPUT: x}, as_numpy=False)[OUTPUT]
    assert isinstance(dev_out, nnplug.DeviceArray) and dev_out.device == sim


def test_cli_run_check_bench(cpu, tmp_path, capsys):
    onnx_path, npz_path = mk().export("mlp", str(tmp_path), small=True, batch=BATCH)
    assert nx.main(["check", onnx_path, "--backend", "cpu", "--expected", npz_path]) == 0
    out = capsys.readouterr().out
    assert "max abs diff" in out and f"top-1 agrees {BATCH}/{BATCH}" in out
    with np.load(npz_path) as z:
        np.save(tmp_path / "x.npy", z[INPUT])
        want = z["expected:" + OUTPUT]
    res = tmp_path / "out.npz"
    assert nx.main(["run", onnx_path, "--backend", "reference", "--input",
                    f"{INPUT}={tmp_path / 'x.npy'}", "--output", str(res)]) == 0
    with np.load(res) as z:
        _close(z[OUTPUT], want)
    # a wrong expectation fails the check (exit status 1)
    with np.load(npz_path) as z:
        np.savez(tmp_path / "bad.npz", **{INPUT: z[INPUT],
                                          "expected:" + OUTPUT: want + 1.0})
    assert nx.main(["check", onnx_path, "--backend", "cpu", "--expected",
                    str(tmp_path / "bad.npz")]) == 1
    capsys.readouterr()
    assert nx.main(["bench", onnx_path, "--backend", "cpu", "--batch", "1,4", "--repeat", "1",
                    "--warmup", "0", "--min-time", "0", "--no-onnxruntime"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines[-2:]] == ["1", "4"]


def test_bench_alternates_blocks(monkeypatch):
    """bench's side-by-side timing: the two sides run in alternating blocks, each after an
    untimed pause, each block but the first of a slow side begins with an untimed run, and each
    side gets its timed runs."""
    monkeypatch.setattr(nx, "_BLOCK_SECONDS", 0.02)
    calls = []
    real_sleep = time.sleep

    def pause(seconds):  # the settling pause before each block
        calls.append("pause")
        real_sleep(seconds)

    monkeypatch.setattr(nx, "_SETTLE_SECONDS", 0.001)
    monkeypatch.setattr(nx.time, "sleep", pause)

    def side(name, seconds):
        def run():
            calls.append(name)
            t = time.perf_counter()
            while time.perf_counter() - t < seconds:
                pass
        return run

    fast, slow = nx._time_alternated([side("fast", 0.002), side("slow", 0.03)], warmup=1,
                                     repeat=3, min_seconds=0.05)
    assert len(fast) >= 3 and len(slow) >= 3
    assert sum(fast) >= 0.05 and sum(slow) >= 0.05
    assert all(t >= 0.002 for t in fast) and all(t >= 0.03 for t in slow)
    # blocks: the calls switch sides many times, not once
    runs = [c for c in calls if c != "pause"]
    switches = sum(1 for a, b in zip(runs, runs[1:]) if a != b)
    assert switches >= 5, calls
    # the fast side's blocks each add one untimed run; the slow side (a run longer than a
    # block) times every run after its warm-up, one per block
    assert calls.count("slow") == len(slow) + 1
    assert calls.count("fast") > len(fast) + 1
    # after the warm-up runs (one per side, no pause), every block begins with a pause: no
    # two runs of different sides follow each other without one
    blocks = calls[2:]
    # (the one switch without a pause: from the first side's warm-up run to the second's)
    assert blocks[0] == "pause" and blocks.count("pause") == switches - 1, calls
    assert all(a == b for a, b in zip(blocks, blocks[1:]) if "pause" not in (a, b)), calls


def _fusion_model(extra_outputs=()):
    """A linear layer with an erf GELU, attention written out as PyTorch exports it, and a
    Split of the leading axis; `extra_outputs` names intermediate values that are graph outputs
    too (they must not be fused away)."""
    r = np.random.default_rng(11)
    inits = [_c("w", r.standard_normal((8, 12)).astype(np.float32)),
             _c("b", r.standard_normal(12).astype(np.float32)),
             _c("sqrt2", np.float32(np.sqrt(2.0))), _c("one", np.float32(1.0)),
             _c("half", np.float32(0.5)), _c("scale", np.float32(0.5))]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["b", "mm"], ["h"]),
             helper.make_node("Div", ["h", "sqrt2"], ["hd"]),
             helper.make_node("Erf", ["hd"], ["he"]),
             helper.make_node("Add", ["he", "one"], ["h1"]),
             helper.make_node("Mul", ["h", "h1"], ["hm"]),
             helper.make_node("Mul", ["hm", "half"], ["y1"]),
             helper.make_node("Split", ["qkv"], ["q3", "k3", "v3"], axis=0),
             helper.make_node("Squeeze", ["q3", "ax0"], ["q"]),
             helper.make_node("Squeeze", ["k3", "ax0"], ["k"]),
             helper.make_node("Squeeze", ["v3", "ax0"], ["v"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Mul", ["s", "scale"], ["ss"]),
             helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y2"])]
    inits.append(_c("ax0", np.array([0], np.int64)))
    outs = [_t("y1", None), _t("y2", None)] + [_t(n, None) for n in extra_outputs]
    return _graph_model(nodes, [_t("x", (2, 3, 8)), _t("qkv", (3, 2, 2, 5, 4))], outs, inits), \
        inits


def _fusion_reference(x, qkv, w, b):
    h = x @ w + b
    y1 = 0.5 * h * (1 + _erf(h / np.sqrt(2.0)))
    q, k, v = qkv
    s = 0.5 * q @ k.transpose(0, 1, 3, 2)
    p = np.exp(s - s.max(-1, keepdims=True))
    return y1, (p / p.sum(-1, keepdims=True)) @ v


def test_fused_chains_run_as_one_call_each(dev):
    """The GELU, linear and attention chains of _fusion_model run as one call each (fuse=True,
    the default), the Split of the leading axis as views, with the results of the unfused run
    and of numpy."""
    proto, inits = _fusion_model()
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((2, 3, 8)).astype(np.float32),
             "qkv": rng.standard_normal((3, 2, 2, 5, 4)).astype(np.float32)}
    fused, plain = nx.load(proto, dev), nx.load(proto, dev, fuse=False)
    ran = []
    got = fused.run(feeds, trace=lambda node, op, outs: ran.append(op))
    assert sorted(op for op in ran if op.endswith("(fused)")) == \
        ["Add (fused)", "MatMul (fused)", "Mul (fused)"]
    assert "Split" in ran and "MatMul" not in ran and "Erf" not in ran
    (plan,) = fused._plans.values()
    assert plan.fused == {"gelu": 1, "linear": 1, "attention": 1}
    want = plain.run(feeds)
    y1, y2 = _fusion_reference(feeds["x"], feeds["qkv"], numpy_helper.to_array(inits[0]),
                               numpy_helper.to_array(inits[1]))
    for name, ref in (("y1", y1), ("y2", y2)):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[name], ref, rtol=1e-5, atol=1e-5)


def test_conv_and_its_clamp_run_as_one_call(dev):
    """Conv -> Relu and Conv -> Clip(0, 6) (MobileNet's ReLU6) run as conv_forward with its
    fused clamp; a Conv whose output another node also reads, and a Clip without bounds, stay
    as they are; every output matches the unfused run and numpy."""
    r = np.random.default_rng(13)
    inits = [_c("w1", r.standard_normal((6, 3, 3, 3)).astype(np.float32)),
             _c("b1", r.standard_normal(6).astype(np.float32)),
             _c("w2", r.standard_normal((6, 1, 3, 3)).astype(np.float32)),
             _c("w3", r.standard_normal((4, 6, 1, 1)).astype(np.float32)),
             _c("zero", np.float32(0.0)), _c("six", np.float32(6.0))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=6,
                              strides=[2, 2]),
             helper.make_node("Clip", ["c2", "zero", "six"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3"], ["c3"]),
             helper.make_node("Relu", ["c3"], ["y"]),
             helper.make_node("Clip", ["c3"], ["y2"])]  # c3 has two readers: not fused
    proto = _graph_model(nodes, [_t("x", (2, 3, 9, 9))], [_t("y", None), _t("y2", None)], inits)
    feeds = {"x": (3 * r.standard_normal((2, 3, 9, 9))).astype(np.float32)}
    fused, plain = nx.load(proto, dev), nx.load(proto, dev, fuse=False)
    ran = []
    got = fused.run(feeds, trace=lambda node, op, outs: ran.append(op))
    assert ran == ["Relu (fused)", "Clip (fused)", "Conv", "Relu", "Clip"]
    (plan,) = fused._plans.values()
    assert plan.fused == {"conv_clamp": 2}
    want = plain.run(feeds)
    t = torch.nn.functional
    w = {i.name: torch.from_numpy(numpy_helper.to_array(i)) for i in inits}
    c1 = t.conv2d(torch.from_numpy(feeds["x"]), w["w1"], w["b1"], padding=1).relu()
    c2 = t.conv2d(c1, w["w2"], padding=1, stride=2, groups=6).clamp(0, 6)
    c3 = t.conv2d(c2, w["w3"])
    assert (c2 == 6).any() and (c2 == 0).any()  # both bounds take part
    for name, ref in (("y", c3.relu()), ("y2", c3)):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[name], ref.numpy(), rtol=1e-4, atol=1e-4)


def test_attention_with_scaled_operands_runs_as_one_call(dev):
    """PyTorch 2's export of F.scaled_dot_product_attention, Mul(q, c1) and Mul(Transpose(k),
    c2) -> MatMul -> Softmax -> MatMul v (either operand order in the Muls), is one
    attention_forward with scale c1 * c2, and gives numpy's result; with a q that is read
    elsewhere too it stays unfused and still right."""
    r = np.random.default_rng(19)
    for shared_q in (False, True):
        nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                 helper.make_node("Mul", ["c2", "kt"], ["ks"]),
                 helper.make_node("Mul", ["q", "c1"], ["qs"]),
                 helper.make_node("MatMul", ["qs", "ks"], ["s"]),
                 helper.make_node("Softmax", ["s"], ["p"], axis=-1),
                 helper.make_node("MatMul", ["p", "v"], ["y"])]
        outputs = [_t("y", None)] + ([_t("qs", None)] if shared_q else [])
        proto = _graph_model(nodes, [_t(n, (2, 3, 5, 4)) for n in ("q", "k", "v")], outputs,
                             [_c("c1", np.float32(0.6)), _c("c2", np.float32(0.7))])
        feeds = {n: r.standard_normal((2, 3, 5, 4)).astype(np.float32) for n in "qkv"}
        model = nx.load(proto, dev)
        got = model.run(feeds)["y"]
        (plan,) = model._plans.values()
        assert plan.fused == ({} if shared_q else {"attention_scaled_operands": 1})
        sc = 0.42 * feeds["q"] @ feeds["k"].transpose(0, 1, 3, 2)
        e = np.exp(sc - sc.max(-1, keepdims=True))
        np.testing.assert_allclose(got, (e / e.sum(-1, keepdims=True)) @ feeds["v"],
                                   rtol=1e-5, atol=1e-5)


def test_conv_and_its_max_pooling_run_as_one_call(dev):
    """Conv -> Relu -> MaxPool 2 x 2 (the cnn's block; on the cpu the Winograd path with the
    pooling in its output transform) and Conv -> MaxPool 3 x 3 run as conv_forward with its
    fused max pooling where the device has it (cuda does not: nnp_op_supported says so and both
    stay apart there); overlapping windows and padded pooling stay unfused; every output matches
    the unfused run and PyTorch."""
    r = np.random.default_rng(17)
    inits = [_c("w1", (0.2 * r.standard_normal((16, 16, 3, 3))).astype(np.float32)),
             _c("b1", r.standard_normal(16).astype(np.float32)),
             _c("w2", r.standard_normal((5, 16, 3, 3)).astype(np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["x", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c2"], ["y2"], kernel_shape=[3, 3], strides=[3, 3]),
             helper.make_node("Conv", ["x", "w2"], ["c3"]),
             helper.make_node("MaxPool", ["c3"], ["y3"], kernel_shape=[2, 2], strides=[1, 1]),
             helper.make_node("Conv", ["x", "w2"], ["c4"]),
             helper.make_node("MaxPool", ["c4"], ["y4"], kernel_shape=[2, 2], strides=[2, 2],
                              pads=[1, 1, 1, 1])]
    proto = _graph_model(nodes, [_t("x", (2, 16, 19, 19))],
                         [_t(n, None) for n in ("y", "y2", "y3", "y4")], inits)
    feeds = {"x": r.standard_normal((2, 16, 19, 19)).astype(np.float32)}
    fused, plain = nx.load(proto, dev), nx.load(proto, dev, fuse=False)
    got = fused.run(feeds)
    (plan,) = fused._plans.values()
    pools = 0 if dev.name.startswith("cuda") else 2
    assert plan.fused.get("conv_pool", 0) == pools
    assert plan.fused.get("conv_clamp") == 1 and len(plan.steps) == 9 - 1 - pools
    want = plain.run(feeds)
    t = torch.nn.functional
    w = {i.name: torch.from_numpy(numpy_helper.to_array(i)) for i in inits}
    x = torch.from_numpy(feeds["x"])
    r1 = t.conv2d(x, w["w1"], w["b1"]).relu()
    refs = {"y": t.max_pool2d(r1, 2), "y2": t.max_pool2d(t.conv2d(x, w["w2"], padding=1), 3),
            "y3": t.max_pool2d(t.conv2d(x, w["w2"]), 2, stride=1),
            "y4": t.max_pool2d(t.conv2d(x, w["w2"]), 2, padding=1)}
    for name, ref in refs.items():
        assert got[name].shape == tuple(ref.shape)
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[name], ref.numpy(), rtol=1e-4, atol=1e-4)


def test_chains_whose_values_are_read_elsewhere_are_not_fused(dev):
    """An intermediate value that is a graph output keeps its chain unfused (here the Erf of
    the GELU and the attention scores), and every output is right."""
    proto, inits = _fusion_model(extra_outputs=("he", "s"))
    rng = np.random.default_rng(4)
    feeds = {"x": rng.standard_normal((2, 3, 8)).astype(np.float32),
             "qkv": rng.standard_normal((3, 2, 2, 5, 4)).astype(np.float32)}
    model = nx.load(proto, dev)
    got = model.run(feeds)
    (plan,) = model._plans.values()
    assert plan.fused == {"linear": 1}
    y1, y2 = _fusion_reference(feeds["x"], feeds["qkv"], numpy_helper.to_array(inits[0]),
                               numpy_helper.to_array(inits[1]))
    np.testing.assert_allclose(got["y1"], y1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["y2"], y2, rtol=1e-5, atol=1e-5)
    h = feeds["x"] @ numpy_helper.to_array(inits[0]) + numpy_helper.to_array(inits[1])
    np.testing.assert_allclose(got["he"], _erf(h / np.sqrt(2.0)), rtol=1e-5, atol=1e-6)
