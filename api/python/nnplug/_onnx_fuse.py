"""nnplug.onnx internals: fusions of planned steps. Exporters write some layers as chains of
small ONNX nodes that one nnplug call computes; a plan runs the one call instead (fewer passes
over memory, fewer calls). Each fusion replaces a chain whose intermediate values nothing else
reads (no other step, no graph output) and which the device supports as fused; anything else
is left as it was. The results are those of the chain up to rounding (the tests compare whole
models with onnxruntime and PyTorch):

- GELU, erf form (torch.nn.GELU exported before opset 20): Div(x, sqrt(2)) (or Mul by 1/sqrt(2))
  -> Erf -> Add 1 -> Mul by x -> Mul by 0.5, in either order of the last two Muls: one
  activation_forward(GELU_ERF), 0.5 x (1 + erf(x / sqrt(2))).
- Linear layers: MatMul(X [.., K], W [K, N] constant) -> Add(b [N] constant): one gemm with X
  seen as [M, K] and C = b (ONNX Gemm's broadcast of C; beta = 1).
- Attention: MatMul(Q, Transpose(K, perm [0, 1, 3, 2])) -> Mul (or Div) by a constant scalar
  -> Softmax(axis -1) -> MatMul by V, with Q, K, V of rank 4 ([B, H, T, D]): one
  attention_forward (scale = the constant, or its reciprocal for Div), no mask, not causal.
  PyTorch 2's exporter writes F.scaled_dot_product_attention with both operands scaled
  instead, MatMul(Mul(Q, c1), Mul(Transpose(K), c2)) -> Softmax -> MatMul V: the same call
  with scale c1 * c2.
- Convolution + clamp: Conv -> Relu (clip_min = 0) or Conv -> Clip with constant bounds
  (MobileNet's ReLU6: clip_min = 0, clip_max = 6): one conv_forward with its fused clamp
  (ABI 1.7), the clamp applied as each output is stored instead of in a pass of its own.
- Convolution (+ clamp) + max pooling: a conv_forward (clamped or not) -> MaxPool with
  kernel_shape = strides = [p] * k (p >= 2), no padding, dilations 1, ceil_mode 0 and no
  Indices output: one conv_forward with its fused max pooling (ABI 1.8, max_pool = p; the
  classic CNN block Conv -> Relu -> MaxPool 2 x 2), the full-size output never stored.
"""
import math
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from . import ops as _ops
from ._core import Device
from ._onnx_steps import _Info, _OpStep, _Ref, _Step
from ._abi import Activation, BinaryOp, PoolMode
from ._ops_generated import AutoPad, UnaryOp


class _Graph:
    """The steps with who makes and who reads each value."""

    def __init__(self, steps: List[_Step], infos: Dict[str, _Info], outputs: Sequence[str],
                 device: Device):
        self.steps = steps
        self.infos = infos
        self.device = device
        self.outputs = set(outputs)  # graph outputs are never fused away
        self.maker: Dict[str, int] = {}
        self.readers: Dict[str, List[int]] = {}
        for i, s in enumerate(steps):
            for o in s.outputs:
                if o:
                    self.maker[o] = i
            for n in s.inputs:
                self.readers.setdefault(n, []).append(i)
        self.dead: Set[int] = set()

    def op(self, i: Optional[int], fn: Any, **kw: Any) -> Optional[_OpStep]:
        """Step i when it is a live call of fn with these keyword values, else None."""
        if i is None or i in self.dead:
            return None
        s = self.steps[i]
        if not isinstance(s, _OpStep) or s.fn is not fn or len(s.outputs) != 1 or \
                any(isinstance(a, list) for a in s.args):
            return None
        for k, v in kw.items():
            if s.kwargs.get(k) != v:
                return None
        return s

    def only_reader(self, value: str) -> Optional[int]:
        """The one step that reads value when nothing else does (not a graph output)."""
        r = self.readers.get(value, [])
        return r[0] if len(r) == 1 and value not in self.outputs else None

    def const(self, ref: _Ref) -> Optional[np.ndarray]:
        info = self.infos.get(ref.name)
        return None if info is None else info.const

    def scalar(self, ref: _Ref) -> Optional[float]:
        c = self.const(ref)
        if c is None or c.size != 1 or c.dtype.kind != "f":
            return None
        return float(c.reshape(-1)[0])

    def replace(self, first: Sequence[int], last: int, step: _Step, label_of: _OpStep) -> bool:
        """Puts `step` in place of step `last` and drops the steps `first`, when the device
        supports it; False (nothing changed) otherwise."""
        if step.check(self.device, self.infos) is not None:
            return False
        step.node, step.op_type = label_of.node, label_of.op_type + " (fused)"
        self.steps[last] = step
        self.dead.update(first)
        return True


def _plain(s: _OpStep) -> List[_Ref]:
    """The tensor arguments of a step _Graph.op matched (none of them a list)."""
    return [a for a in s.args if not isinstance(a, list)]


def _other(s: _OpStep, value: str) -> Optional[_Ref]:
    """The argument of binary step s that is not `value` (None when both or neither are)."""
    a, b = _plain(s)
    if a.name == value and a.view is None and b.name != value:
        return b
    if b.name == value and b.view is None and a.name != value:
        return a
    return None


def _next(g: _Graph, prev: _OpStep, fn: Any, **kw: Any) -> Tuple[Optional[int], Optional[_OpStep]]:
    """The one step that reads prev's output, when it is a call of fn with these keyword
    values: (its index, it), else (None, None)."""
    i = g.only_reader(prev.outputs[0])
    s = g.op(i, fn, **kw)
    return (i, s) if s is not None else (None, None)


def _reads(s: _OpStep, pos: int, value: str) -> bool:
    """Whether argument pos of s is `value` as it is (no view)."""
    r = _plain(s)[pos]
    return r.name == value and r.view is None


def _near(v: Optional[float], want: float) -> bool:
    return v is not None and abs(v - want) <= 1e-6 * abs(want)


def _fuse_gelu(g: _Graph, i: int) -> bool:
    erf = g.op(i, _ops.unary_forward, op=UnaryOp.ERF)
    if erf is None or _plain(erf)[0].view is not None:
        return False
    t = _plain(erf)[0].name
    scaled = g.maker.get(t)
    div = g.op(scaled, _ops.binary, op=BinaryOp.DIV) or g.op(scaled, _ops.binary, op=BinaryOp.MUL)
    if div is None or g.only_reader(t) != i:
        return False
    x, c = _plain(div)
    if x.view is not None or c.name == x.name:
        return False
    want = math.sqrt(2.0) if div.kwargs["op"] == BinaryOp.DIV else math.sqrt(0.5)
    if not _near(g.scalar(c), want):
        return False
    shape = g.infos[x.name].shape
    # erf -> + 1 -> the two multiplications (by x and by 0.5, either first)
    add_i, add = _next(g, erf, _ops.binary, op=BinaryOp.ADD)
    one = _other(add, erf.outputs[0]) if add is not None else None
    if add is None or one is None or not _near(g.scalar(one), 1.0):
        return False
    m1_i, m1 = _next(g, add, _ops.binary, op=BinaryOp.MUL)
    f1 = _other(m1, add.outputs[0]) if m1 is not None else None
    m2_i, m2 = _next(g, m1, _ops.binary, op=BinaryOp.MUL) if m1 is not None else (None, None)
    f2 = _other(m2, m1.outputs[0]) if m2 is not None and m1 is not None else None
    if m1 is None or m2 is None or f1 is None or f2 is None:
        return False
    if not ((f1.name == x.name and f1.view is None and _near(g.scalar(f2), 0.5)) or
            (f2.name == x.name and f2.view is None and _near(g.scalar(f1), 0.5))):
        return False
    if m2.shapes[0] != shape or div.shapes[0] != shape:
        return False
    assert scaled is not None and add_i is not None and m1_i is not None and m2_i is not None
    step = _OpStep(_ops.activation_forward, [_Ref(x.name)], m2.outputs, [shape], m2.dtypes,
                   function=Activation.GELU_ERF)
    return g.replace([scaled, i, add_i, m1_i], m2_i, step, m2)


def _fuse_linear(g: _Graph, i: int) -> bool:
    mm = g.op(i, _ops.matmul)
    if mm is None:
        return False
    x, w = _plain(mm)
    wc = g.const(w) if w.view is None else None
    if x.view is not None or wc is None or wc.ndim != 2:
        return False
    xs = g.infos[x.name].shape
    k, n = wc.shape
    if len(xs) < 2 or xs[-1] != k:
        return False
    add_i, add = _next(g, mm, _ops.binary, op=BinaryOp.ADD)
    b = _other(add, mm.outputs[0]) if add is not None else None
    bc = g.const(b) if b is not None and b.view is None else None
    if add is None or b is None or bc is None or bc.size != n or \
            any(d != 1 for d in bc.shape[:-1]) or (bc.ndim and bc.shape[-1] != n):
        return False
    if add.shapes[0] != mm.shapes[0]:
        return False
    m = int(np.prod(xs[:-1], dtype=np.int64))
    assert add_i is not None
    step = _OpStep(_ops.gemm, [_Ref(x.name, (m, k)), _Ref(w.name)], add.outputs, [(m, n)],
                   add.dtypes, tensors={"C": _Ref(b.name, None if bc.shape == (n,) else (n,), b.dtype)},
                   out_views=[add.shapes[0]], alpha=1.0, beta=1.0)
    return g.replace([i], add_i, step, add)


def _fuse_attention(g: _Graph, i: int) -> bool:
    tk = g.op(i, _ops.transpose, perm=[0, 1, 3, 2])
    if tk is None or _plain(tk)[0].view is not None:
        return False
    k = _plain(tk)[0].name
    qk_i, qk = _next(g, tk, _ops.matmul)
    if qk is None or not _reads(qk, 1, tk.outputs[0]) or _plain(qk)[0].view is not None:
        return False
    q = _plain(qk)[0]
    sc_i, sc = _next(g, qk, _ops.binary, op=BinaryOp.MUL)
    if sc is None:
        sc_i, sc = _next(g, qk, _ops.binary, op=BinaryOp.DIV)
    if sc is None or not _reads(sc, 0, qk.outputs[0]):
        return False
    c = g.scalar(_plain(sc)[1])
    if c is None or not math.isfinite(c) or c == 0.0:
        return False
    scale = c if sc.kwargs["op"] == BinaryOp.MUL else 1.0 / c
    assert qk_i is not None and sc_i is not None
    return _attention_tail(g, sc, q.name, k, scale, [i, qk_i, sc_i])


def _attention_tail(g: _Graph, scores: _OpStep, q: str, k: str, scale: float,
                    chain: List[int]) -> bool:
    """The end both attention patterns share: `scores` (the scaled q k^T) -> Softmax(axis -1)
    -> MatMul by v, with q, k, v [B, H, T, D]: one attention_forward(q, k, v, scale) in place
    of the last MatMul, the steps `chain` and the Softmax dropped."""
    sm_i, sm = _next(g, scores, _ops.softmax_forward, log=False)
    if sm is None or sm.kwargs.get("axis") not in (-1, 3):
        return False
    pv_i, pv = _next(g, sm, _ops.matmul)
    if pv is None or not _reads(pv, 0, sm.outputs[0]) or _plain(pv)[1].view is not None:
        return False
    v = _plain(pv)[1]
    qs, ks, vs = (g.infos[n].shape for n in (q, k, v.name))
    if not (len(qs) == len(ks) == len(vs) == 4 and qs[:2] == ks[:2] == vs[:2] and
            qs[3] == ks[3] and ks[2] == vs[2]):
        return False
    assert sm_i is not None and pv_i is not None
    step = _OpStep(_ops.attention_forward, [_Ref(q), _Ref(k), _Ref(v.name)], pv.outputs,
                   pv.shapes, pv.dtypes, scale=float(scale))
    return g.replace(chain + [sm_i], pv_i, step, pv)


def _scaled_by(g: _Graph, s: Optional[_OpStep], value: str) -> Optional[float]:
    """The constant finite non-zero scalar that binary step s multiplies `value` by (either
    operand order), else None."""
    if s is None:
        return None
    other = _other(s, value)
    c = None if other is None else g.scalar(other)
    return c if c is not None and math.isfinite(c) and c != 0.0 else None


def _fuse_attention_scaled_operands(g: _Graph, i: int) -> bool:
    """Attention as PyTorch 2's exporter writes F.scaled_dot_product_attention: each operand
    scaled by sqrt(scale) before the product, Mul(q, c1) and Mul(Transpose(k), c2) -> MatMul
    -> Softmax(axis -1) -> MatMul v: one attention_forward with scale c1 * c2."""
    tk = g.op(i, _ops.transpose, perm=[0, 1, 3, 2])
    if tk is None or _plain(tk)[0].view is not None:
        return False
    k = _plain(tk)[0].name
    mk_i, mk = _next(g, tk, _ops.binary, op=BinaryOp.MUL)
    ck = _scaled_by(g, mk, tk.outputs[0])
    if mk is None or ck is None:
        return False
    qk_i, qk = _next(g, mk, _ops.matmul)
    if qk is None or not _reads(qk, 1, mk.outputs[0]) or _plain(qk)[0].view is not None:
        return False
    mq_i = g.maker.get(_plain(qk)[0].name)
    mq = g.op(mq_i, _ops.binary, op=BinaryOp.MUL)
    if mq is None or mq_i is None or g.only_reader(mq.outputs[0]) != qk_i:
        return False
    q = next((r for r in _plain(mq) if r.view is None and g.scalar(r) is None), None)
    cq = None if q is None else _scaled_by(g, mq, q.name)
    if q is None or cq is None:
        return False
    assert mk_i is not None and qk_i is not None
    return _attention_tail(g, qk, q.name, k, cq * ck, [i, mk_i, mq_i, qk_i])


def _fuse_conv_clamp(g: _Graph, i: int) -> bool:
    conv = g.op(i, _ops.conv_forward, clip_min=None, clip_max=None)
    if conv is None:
        return False
    j, act = _next(g, conv, _ops.activation_forward, function=Activation.RELU)
    if act is not None:
        bounds: Dict[str, Any] = {"clip_min": 0.0}
    else:
        j, act = _next(g, conv, _ops.clip)
        if act is None:
            return False
        bounds = {"clip_min": act.kwargs.get("min"), "clip_max": act.kwargs.get("max")}
    if not _reads(act, 0, conv.outputs[0]) or act.shapes[0] != conv.shapes[0] or \
            act.out_views[0] is not None:
        return False
    assert j is not None
    step = _OpStep(_ops.conv_forward, conv.args, act.outputs, conv.shapes, act.dtypes,
                   tensors=conv.tensors, **{**conv.kwargs, **bounds})
    return g.replace([i], j, step, act)


def _fuse_conv_pool(g: _Graph, i: int) -> bool:
    conv = g.op(i, _ops.conv_forward)
    if conv is None or conv.kwargs.get("max_pool", 0) > 1:
        return False
    j, pool = _next(g, conv, _ops.pool_forward, mode=PoolMode.MAX)
    if pool is None or not _reads(pool, 0, conv.outputs[0]) or pool.out_views[0] is not None:
        return False
    k = len(conv.shapes[0]) - 2
    kernel = list(pool.kwargs.get("kernel_shape") or [])
    p = kernel[0] if kernel else 0
    if p < 2 or kernel != [p] * k or list(pool.kwargs.get("strides") or []) != [p] * k or \
            any(pool.kwargs.get("pads") or []) or \
            any(d != 1 for d in (pool.kwargs.get("dilations") or [])) or \
            pool.kwargs.get("auto_pad", AutoPad.NOTSET) != AutoPad.NOTSET or \
            pool.kwargs.get("ceil_mode") or pool.kwargs.get("global_") or \
            pool.kwargs.get("return_indices"):
        return False
    assert j is not None
    step = _OpStep(_ops.conv_forward, conv.args, pool.outputs, pool.shapes, pool.dtypes,
                   tensors=conv.tensors, **{**conv.kwargs, "max_pool": p})
    return g.replace([i], j, step, pool)


_FUSIONS = (_fuse_gelu, _fuse_linear, _fuse_attention, _fuse_attention_scaled_operands,
            _fuse_conv_clamp, _fuse_conv_pool)


def fuse(steps: List[_Step], infos: Dict[str, _Info], outputs: Sequence[str],
         device: Device) -> Tuple[List[_Step], Dict[str, int]]:
    """The steps with every chain above that the device runs fused replaced, and how many of
    each kind were fused."""
    g = _Graph(list(steps), infos, outputs, device)
    counts: Dict[str, int] = {}
    for fusion in _FUSIONS:
        for i in range(len(g.steps)):
            if i not in g.dead and fusion(g, i):
                name = fusion.__name__[len("_fuse_"):]
                counts[name] = counts.get(name, 0) + 1
    return [s for i, s in enumerate(g.steps) if i not in g.dead], counts
