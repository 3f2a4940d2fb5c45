"""nnplug.onnx internals: constant folding. Nodes whose inputs are all constants are computed
with numpy when the plan is made (_fold; the op types in _FOLDABLE); Shape and Size need only
their input's shape. Values follow ONNX (integer Div truncates toward zero)."""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._onnx_steps import _np_dtype, _onnx, _Refuse


def _axes_of(v: Any, rank: int) -> List[int]:
    return [int(a) + rank if int(a) < 0 else int(a) for a in np.asarray(v).reshape(-1)]


def _slice_index(d: int, start: int, end: int, step: int) -> slice:
    """ONNX Slice's clamping for one axis of extent d, as a Python slice."""
    start = start + d if start < 0 else start
    end = end + d if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), d), min(max(end, 0), d)
        return slice(start, end, step)
    start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
    return slice(start, end if end >= 0 else None, step)


def _reshape_target(shape_in: Tuple[int, ...], target: Sequence[int], allowzero: bool
                    ) -> Tuple[int, ...]:
    dims = [int(t) for t in target]
    if not allowzero:
        dims = [shape_in[i] if t == 0 else t for i, t in enumerate(dims)]
    if -1 in dims:
        known = int(np.prod([t for t in dims if t != -1], dtype=np.int64))
        total = int(np.prod(shape_in, dtype=np.int64))
        dims[dims.index(-1)] = total // known if known else 0
    return tuple(dims)


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        q = np.abs(a) // np.abs(b)
        return np.asarray(np.where((a < 0) != (b < 0), -q, q), dtype=a.dtype)
    return np.asarray(a / b, dtype=a.dtype)


def _same(fn: Callable[..., Any]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda a, b: np.asarray(fn(a, b), dtype=a.dtype)


_FOLD_BINARY: Dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": _same(np.add), "Sub": _same(np.subtract), "Mul": _same(np.multiply),
    "Div": _int_div, "Pow": lambda a, b: np.asarray(np.power(a, b), dtype=a.dtype),
    "Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
    "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or,
    "Xor": np.logical_xor, "Min": _same(np.minimum), "Max": _same(np.maximum),
    "Mod": _same(np.fmod), "MatMul": _same(np.matmul),
}
_FOLD_UNARY: Dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Neg": np.negative, "Abs": np.abs, "Sqrt": np.sqrt, "Exp": np.exp, "Log": np.log,
    "Floor": np.floor, "Ceil": np.ceil, "Not": np.logical_not, "Reciprocal": np.reciprocal,
    "Identity": lambda a: a, "Sign": np.sign,
}


def _fold(op: str, a: Dict[str, Any], x: List[Any], n_out: int,
          shapes: List[Optional[Tuple[int, ...]]]) -> Optional[List[np.ndarray]]:
    """The outputs of a node computed with numpy, or None when this op is not folded."""
    onnx = _onnx()
    if op in _FOLD_UNARY:
        return [np.asarray(_FOLD_UNARY[op](x[0]), dtype=x[0].dtype if op != "Not" else bool)]
    if op in _FOLD_BINARY:
        return [np.asarray(_FOLD_BINARY[op](x[0], x[1]))]
    if op == "Constant":
        if "value" in a:
            return [onnx.numpy_helper.to_array(a["value"])]
        for key, dt in (("value_float", np.float32), ("value_floats", np.float32),
                        ("value_int", np.int64), ("value_ints", np.int64)):
            if key in a:
                return [np.asarray(a[key], dtype=dt)]
        raise _Refuse("Constant without a dense value (sparse or string constants)")
    if op == "Shape":
        shp = shapes[0]
        assert shp is not None
        r = len(shp)
        start, end = int(a.get("start", 0)), int(a.get("end", r))
        start, end = (start + r if start < 0 else start), (end + r if end < 0 else end)
        return [np.asarray(shp[max(0, min(start, r)):max(0, min(end, r))], dtype=np.int64)]
    if op == "Size":
        assert shapes[0] is not None
        return [np.asarray(int(np.prod(shapes[0], dtype=np.int64)), dtype=np.int64)]
    if op == "Cast":
        return [x[0].astype(_np_dtype(int(a["to"])))]
    if op == "Gather":
        return [np.take(x[0], x[1].astype(np.int64), axis=int(a.get("axis", 0)))]
    if op == "Unsqueeze":
        axes = x[1] if len(x) > 1 and x[1] is not None else a.get("axes", [])
        rank = x[0].ndim + np.asarray(axes).size
        out = x[0]
        for ax in sorted(_axes_of(axes, rank)):
            out = np.expand_dims(out, ax)
        return [out]
    if op == "Squeeze":
        axes = x[1] if len(x) > 1 and x[1] is not None else a.get("axes")
        if axes is None:
            return [np.squeeze(x[0])]
        return [np.squeeze(x[0], axis=tuple(_axes_of(axes, x[0].ndim)))]
    if op == "Concat":
        return [np.concatenate([v for v in x if v is not None], axis=int(a["axis"]))]
    if op == "Reshape":
        target = _reshape_target(x[0].shape, x[1].tolist(), bool(a.get("allowzero", 0)))
        return [x[0].reshape(target)]
    if op == "Flatten":
        axis = int(a.get("axis", 1))
        axis = axis + x[0].ndim if axis < 0 else axis
        return [x[0].reshape(int(np.prod(x[0].shape[:axis], dtype=np.int64)), -1)]
    if op == "Transpose":
        return [np.transpose(x[0], a.get("perm"))]
    if op == "Slice":
        data = x[0]
        starts, ends = x[1].tolist(), x[2].tolist()
        axes = x[3].tolist() if len(x) > 3 and x[3] is not None else list(range(len(starts)))
        steps = x[4].tolist() if len(x) > 4 and x[4] is not None else [1] * len(starts)
        index = [slice(None)] * data.ndim
        for s, e, ax, st in zip(starts, ends, axes, steps):
            ax = ax + data.ndim if ax < 0 else ax
            index[ax] = _slice_index(data.shape[ax], int(s), int(e), int(st))
        return [np.array(data[tuple(index)], order="C")]
    if op == "ConstantOfShape":
        value = onnx.numpy_helper.to_array(a["value"]) if "value" in a else \
            np.zeros(1, np.float32)
        return [np.full(tuple(int(d) for d in x[0]), value.reshape(-1)[0], dtype=value.dtype)]
    if op == "Range":
        return [np.arange(x[0], x[1], x[2]).astype(x[0].dtype)]
    if op == "Expand":
        shape = np.broadcast_shapes(x[0].shape, tuple(int(d) for d in x[1]))
        return [np.array(np.broadcast_to(x[0], shape), order="C")]
    if op == "Where":
        return [np.where(x[0], x[1], x[2]).astype(x[1].dtype)]
    if op == "Tile":
        return [np.tile(x[0], tuple(int(r) for r in x[1]))]
    if op == "Split":
        axis = int(a.get("axis", 0))
        d = x[0].shape[axis]
        if len(x) > 1 and x[1] is not None:
            sizes = [int(s) for s in x[1]]
        else:
            n = int(a.get("num_outputs", n_out))
            step = -(-d // n)
            sizes = [step] * (n - 1) + [d - step * (n - 1)]
        return list(np.split(x[0], np.cumsum(sizes)[:-1], axis=axis))
    return None


_FOLDABLE = set(_FOLD_UNARY) | set(_FOLD_BINARY) | {
    "Constant", "Shape", "Size", "Cast", "Gather", "Unsqueeze", "Squeeze", "Concat", "Reshape",
    "Flatten", "Transpose", "Slice", "ConstantOfShape", "Range", "Expand", "Where", "Tile",
    "Split"}

