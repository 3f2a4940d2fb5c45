"""nnplug.onnx internals: the Model (loading, planning per set of input shapes, running) and its
refusal errors; nnplug.onnx exports the public names."""
import os
import threading
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

import numpy as np

from . import ops as _ops
from ._abi import Status
from ._array import DeviceArray, asarray
from ._core import Device, Error, Graph, Stream, UnsupportedError
from ._core import device as _device
from ._onnx_fold import _FOLDABLE, _fold
from ._onnx_fuse import fuse as _fuse_steps
from ._onnx_ops import _MAPPINGS, _Ctx
from ._onnx_steps import (_Env, _Info, _np_dtype, _onnx, _OpStep, _Pool, _Ref,
                          _Refuse, _Step)

MIN_OPSET = 13  # the oldest opset of the default domain this module reads
_DEFAULT_DOMAINS = ("", "ai.onnx")


# ------------------------------------------------------------------------------ errors --
class Refusal(NamedTuple):
    """Why one node cannot run: its name (or "#index" when it has none), op type, reason."""
    node: str
    op_type: str
    reason: str

    def __str__(self) -> str:
        return f"{self.node} ({self.op_type}): {self.reason}"


class ModelRefusedError(UnsupportedError):
    """The model cannot run on the device; `refusals` lists every node that cannot, and why.
    Raised when the model is loaded (or first run with new input shapes), before any op runs."""

    refusals: List[Refusal]

    def __new__(cls, status: Any = None, message: str = "",
                refusals: Sequence[Refusal] = ()) -> "ModelRefusedError":
        return super().__new__(cls, status, message)  # type: ignore[return-value]

    def __init__(self, status: Any, message: str, refusals: Sequence[Refusal] = ()):
        super().__init__(status, message)
        self.refusals = list(refusals)


def _refused(device: Device, refusals: Sequence[Refusal]) -> ModelRefusedError:
    lines = "\n".join(f"  {r}" for r in refusals)
    msg = (f"the model cannot run on {device.name}: {len(refusals)} node"
           f"{'s' if len(refusals) != 1 else ''} refused\n{lines}")
    return ModelRefusedError(Status.UNSUPPORTED, msg, refusals)


# ------------------------------------------------------------------------ onnx values --
def _onnx_elem(dtype: Any) -> int:
    onnx = _onnx()
    helper_fn = getattr(onnx.helper, "np_dtype_to_tensor_dtype", None)
    if helper_fn is not None:
        return int(helper_fn(np.dtype(dtype)))
    return int(onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)])


def _attrs(node: Any) -> Dict[str, Any]:
    helper = _onnx().helper
    out: Dict[str, Any] = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        out[a.name] = v
    return out


def _node_label(node: Any, index: int) -> str:
    return node.name or f"#{index}"


# Ops that only fold (their inputs must be known when the model is planned).
_FOLD_ONLY_REASON = ("folds only when its inputs are known when the model is planned "
                     "(no nnplug op computes it at run time)")


def _no_mapping(node: Any) -> str:
    if node.domain not in _DEFAULT_DOMAINS:
        return f"domain {node.domain!r} (nnplug.onnx maps the default ONNX domain)"
    if node.op_type in _FOLDABLE:
        return f"ONNX {node.op_type} {_FOLD_ONLY_REASON}"
    return f"no nnplug op computes ONNX {node.op_type}"


# --------------------------------------------------------------------------------- plan --
class _Plan:
    def __init__(self) -> None:
        self.steps: List[_Step] = []
        self.infos: Dict[str, _Info] = {}
        self.release: List[List[str]] = []  # per step: values whose buffers may be reused
        self.kept: List[str] = []  # buffers of graph outputs (reusable once copied out)
        self.pool = _Pool()  # buffers of finished runs, for the next one
        self.lock = threading.Lock()
        self.fused: Dict[str, int] = {}  # chains run as one call (nnplug._onnx_fuse), by kind
        self.consts: List[_Ref] = []  # constants the steps read (uploaded once)
        self.uploaded: Dict[str, DeviceArray] = {}  # folded constants on the device, by key
        self.eager_runs = 0
        self.graph: Optional[Graph] = None  # Model(graphs=True): the captured steps
        self.graph_inputs: Dict[str, DeviceArray] = {}
        self.graph_env: _Env = {}  # every buffer the graph uses, kept alive with it


class Model:
    """An ONNX model bound to an nnplug device. Use nnplug.onnx.load()."""

    def __init__(self, model: Any, device: Any = "auto",
                 input_shapes: Optional[Dict[str, Sequence[int]]] = None, graphs: bool = False,
                 fuse: bool = True):
        onnx = _onnx()
        if isinstance(model, (str, os.PathLike)):
            model = onnx.load(os.fspath(model))
        elif isinstance(model, (bytes, bytearray)):
            model = onnx.load_from_string(bytes(model))
        self.proto = model
        self.device: Device = _device(device)
        self.graphs = graphs
        self.fuse = fuse
        self._graph_lock = threading.Lock()  # graph runs share the plan's buffers
        # Streams of finished eager runs, for later runs: a run has a stream of its own, and
        # reusing them lets the op calls of a run use their per-signature call plans (a plan is
        # per stream: nnplug._plan).
        self._streams: List[Stream] = []
        self._streams_lock = threading.Lock()
        graph = model.graph
        self.opsets = {imp.domain: int(imp.version) for imp in model.opset_import}
        self.opset = max((self.opsets.get(d, 0) for d in _DEFAULT_DOMAINS), default=0)
        if self.opset < MIN_OPSET:
            raise _refused(self.device, [Refusal(
                "(model)", "opset", f"default-domain opset {self.opset or 'missing'}; "
                f"nnplug.onnx reads opset {MIN_OPSET} and later (onnx.version_converter "
                "converts older models)")])
        self.initializers: Dict[str, np.ndarray] = {
            t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
        self.inputs: Dict[str, Tuple[List[Union[int, str]], Any]] = {}
        for vi in graph.input:
            if vi.name in self.initializers:
                continue
            tt = vi.type.tensor_type
            dims: List[Union[int, str]] = [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                for d in tt.shape.dim]
            self.inputs[vi.name] = (dims, _np_dtype(tt.elem_type))
        self.output_names = [vi.name for vi in graph.output]
        self._nodes = list(graph.node)
        self._plans: Dict[Tuple[Tuple[str, Tuple[int, ...]], ...], _Plan] = {}
        self._consts: Dict[str, DeviceArray] = {}  # initializers on the device, by _Ref.key
        self._infer_cache: Dict[Any, List[Tuple[Tuple[int, ...], Any]]] = {}
        # the up-front check: with the declared shapes (symbolic dimensions as 1 unless given)
        self.plan(self.default_shapes(input_shapes))

    # -- shapes ---------------------------------------------------------------------------
    def default_shapes(self, given: Optional[Dict[str, Sequence[int]]] = None,
                       batch: int = 1) -> Dict[str, Tuple[int, ...]]:
        """Input shapes: the given ones, else the declared ones with `batch` for symbolic
        dimensions."""
        out = {}
        for name, (dims, _) in self.inputs.items():
            if given and name in given:
                out[name] = tuple(int(d) for d in given[name])
            else:
                out[name] = tuple(d if isinstance(d, int) else batch for d in dims)
        return out

    def _infer(self, node: Any, ins: List[Optional[_Info]]
               ) -> List[Tuple[Tuple[int, ...], Any]]:
        """(shape, numpy dtype) of the node's outputs from ONNX shape inference of the node
        alone, its inputs' shapes and dtypes given and small integer constants as
        initializers (the shape arguments of Reshape, Expand, Slice, ...)."""
        onnx = _onnx()
        helper = onnx.helper
        key_parts: List[Any] = [node.op_type, node.domain,
                                b"".join(a.SerializeToString() for a in node.attribute),
                                len(node.output)]
        vis, inits = [], []
        for name, info in zip(node.input, ins):
            if not name or info is None:
                key_parts.append(None)
                continue
            const = info.const
            small = const is not None and const.dtype.kind in "iub" and const.size <= 64
            key_parts.append((name, info.shape, info.dtype.str,
                              const.tobytes() if const is not None and small else None))
            vis.append(helper.make_tensor_value_info(name, _onnx_elem(info.dtype), info.shape))
            if small:
                inits.append(onnx.numpy_helper.from_array(const, name))
        key = tuple(key_parts)
        hit = self._infer_cache.get(key)
        if hit is not None:
            return hit
        outs = [onnx.ValueInfoProto(name=o) for o in node.output if o]
        graph = helper.make_graph([node], "node", vis, outs, initializer=inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v)
                                                    for d, v in self.opsets.items()])
        m.ir_version = self.proto.ir_version
        try:
            inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        except Exception as e:  # noqa: BLE001 — onnx raises several kinds
            raise _Refuse(f"ONNX shape inference failed: {str(e).strip().splitlines()[-1]}") \
                from None
        types = {vi.name: vi.type for vi in list(inferred.graph.output) +
                 list(inferred.graph.value_info)}
        result: List[Tuple[Tuple[int, ...], Any]] = []
        for o in node.output:
            if not o:
                result.append(((), np.float32))
                continue
            t = types.get(o)
            if t is None or not t.tensor_type.elem_type or not t.tensor_type.HasField("shape"):
                raise _Refuse(f"ONNX shape inference gives no type and shape for output {o!r}")
            dims = t.tensor_type.shape.dim
            if any(not d.HasField("dim_value") for d in dims):
                raise _Refuse(f"output {o!r} has no static shape")
            result.append((tuple(int(d.dim_value) for d in dims),
                           _np_dtype(t.tensor_type.elem_type)))
        self._infer_cache[key] = result
        return result

    # -- planning -------------------------------------------------------------------------
    def plan(self, shapes: Dict[str, Tuple[int, ...]]) -> _Plan:
        """The steps for these input shapes (made once per set of shapes, checked against the
        device). Raises ModelRefusedError listing every node that cannot run."""
        key = tuple(sorted((k, tuple(v)) for k, v in shapes.items()))
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        plan = _Plan()
        infos = plan.infos
        for name, arr in self.initializers.items():
            infos[name] = _Info(arr.shape, arr.dtype, arr)
        for name, (dims, dtype) in self.inputs.items():
            if name not in shapes:
                raise Error(Status.INVALID_ARGUMENT, f"no shape for input {name!r}")
            infos[name] = _Info(shapes[name], dtype)
        refusals: List[Refusal] = []
        refused_values: Set[str] = set()  # outputs of refused nodes whose shapes are unknown
        for index, node in enumerate(self._nodes):
            label = _node_label(node, index)
            ins = [infos.get(n) if n else None for n in node.input]
            attrs = _attrs(node)
            domain_ok = node.domain in _DEFAULT_DOMAINS
            try:
                missing = [n for n in node.input if n and infos.get(n) is None]
                if missing:
                    if not all(n in refused_values for n in missing):
                        raise _Refuse(f"input {missing[0]!r} is unknown (no node makes it)")
                    if not domain_ok or node.op_type not in _MAPPINGS:
                        raise _Refuse(_no_mapping(node))
                    # downstream of a refused node (listed already): its outputs are unknown
                    refused_values.update(o for o in node.output if o)
                    continue
                values = None
                if domain_ok and node.op_type in _FOLDABLE and (
                        all(i is None or i.const is not None for i in ins) or
                        node.op_type in ("Shape", "Size")):
                    values = _fold(node.op_type, attrs,
                                   [None if i is None else i.const for i in ins],
                                   len(node.output), [None if i is None else i.shape for i in ins])
                if values is not None:
                    for o, v in zip(node.output, values):
                        if o:
                            v = np.asarray(v)
                            infos[o] = _Info(v.shape, v.dtype, v)
                    continue
                # not folded: the node runs on the device; its outputs' shapes from ONNX
                out_facts = self._infer(node, ins)
                for o, (shp, dt) in zip(node.output, out_facts):
                    if o:
                        infos[o] = _Info(shp, dt)
                mapping = _MAPPINGS.get(node.op_type) if domain_ok else None
                if mapping is None:
                    raise _Refuse(_no_mapping(node))
                ctx = _Ctx(node, attrs, ins, [infos.get(o) if o else None for o in node.output],
                           self.opset)
                step = mapping(ctx)
                step.node, step.op_type = label, node.op_type
                reason = step.check(self.device, infos)
                if reason is not None:
                    raise _Refuse(reason)
                plan.steps.append(step)
            except _Refuse as r:
                refusals.append(Refusal(label, node.op_type, str(r)))
            except Error as e:  # an nnplug call refused the description
                refusals.append(Refusal(label, node.op_type, e.message))
            for o in node.output:
                if o and o not in infos:
                    refused_values.add(o)
        for o in self.output_names:
            if o not in infos and o not in refused_values:
                refusals.append(Refusal(o, "(output)", "no node makes this graph output"))
        if refusals:
            raise _refused(self.device, refusals)
        if self.fuse:
            plan.steps, plan.fused = _fuse_steps(plan.steps, infos, self.output_names,
                                                 self.device)
        self._lifetimes(plan)
        self._plans[key] = plan
        return plan

    def _lifetimes(self, plan: _Plan) -> None:
        """Which buffers may be reused after which step: a buffer (a step's own output, not a
        view) is free once the last step reading it or any view of it has been queued, unless
        it is a graph output."""
        root: Dict[str, str] = {}
        last: Dict[str, int] = {}
        owned: Set[str] = set()
        for i, step in enumerate(plan.steps):
            for n in step.inputs:
                r = root.get(n, n)
                last[r] = i
            for o in step.outputs:
                if not o:
                    continue
                if step.owns_outputs:
                    root[o] = o
                    owned.add(o)
                    last.setdefault(o, i)
                    last[o] = max(last[o], i)
                else:
                    root[o] = root.get(step.inputs[0], step.inputs[0])
        keep = {root.get(o, o) for o in self.output_names}
        plan.release = [[] for _ in plan.steps]
        for r in owned - keep:
            plan.release[last[r]].append(r)
        plan.kept = sorted(owned & keep)
        # constants the steps read
        seen: Set[str] = set()
        for step in plan.steps:
            refs = step.refs if isinstance(step, _OpStep) else [_Ref(n) for n in step.inputs]
            for ref in refs:
                if plan.infos[ref.name].const is not None and ref.key not in seen:
                    seen.add(ref.key)
                    plan.consts.append(_Ref(ref.name, None, ref.dtype))

    # -- running --------------------------------------------------------------------------
    def _const(self, plan: _Plan, ref: _Ref) -> DeviceArray:
        """A constant on the device, uploaded on first use (converted to ref.dtype): kept with
        the Model for initializers, with the plan for folded values (they may depend on the
        input shapes: a class token expanded to the batch)."""
        cache = self._consts if ref.name in self.initializers else plan.uploaded
        a = cache.get(ref.key)
        if a is None:
            arr = plan.infos[ref.name].const
            assert arr is not None
            if ref.dtype is not None:
                arr = arr.astype(ref.dtype)
            a = cache[ref.key] = self.device.to_device(np.asarray(arr, order="C"))
        return a

    def run(self, feeds: Dict[str, Any], as_numpy: bool = True,
            trace: Optional[Callable[[str, str, Dict[str, DeviceArray]], None]] = None
            ) -> Dict[str, Any]:
        """Runs the model: `feeds` maps input names to arrays (numpy, or DeviceArrays on this
        device). Returns {output name: numpy array} (DeviceArrays with as_numpy=False). trace,
        when given, is called after each step is queued with (node, op type, {output name:
        DeviceArray}) (such a run is never a graph launch). Raises ModelRefusedError for input
        shapes the device cannot run."""
        missing = [n for n in self.inputs if n not in feeds]
        unknown = [n for n in feeds if n not in self.inputs]
        if missing or unknown:
            raise Error(Status.INVALID_ARGUMENT,
                        f"inputs: missing {missing}, unknown {unknown}; the model's inputs are "
                        f"{list(self.inputs)}")
        dev = self.device
        arrays: Dict[str, Any] = {}
        shapes: Dict[str, Tuple[int, ...]] = {}
        for name, (dims, dtype) in self.inputs.items():
            x = feeds[name]
            if isinstance(x, DeviceArray):
                if x.device != dev or x.dtype != dtype.name or not x.is_contiguous:
                    raise Error(Status.INVALID_ARGUMENT,
                                f"input {name!r}: a DeviceArray must be a contiguous "
                                f"{dtype.name} array on {dev.name}, got {x!r}")
                arr: Any = x
            else:
                arr = np.asarray(x, dtype=dtype, order="C")
            shp = tuple(arr.shape)
            if len(shp) != len(dims) or any(isinstance(d, int) and d != s
                                            for d, s in zip(dims, shp)):
                raise Error(Status.INVALID_ARGUMENT,
                            f"input {name!r}: shape {shp}, the model declares {tuple(dims)}")
            shapes[name] = shp
            arrays[name] = arr
        plan = self.plan(shapes)
        if self.graphs and trace is None and plan.eager_runs > 0:
            with self._graph_lock:
                return self._run_graph(plan, arrays, as_numpy)
        env: _Env = {name: a if isinstance(a, DeviceArray) else asarray(a, device=dev)
                     for name, a in arrays.items()}
        with plan.lock:  # the buffers of earlier runs (this run's own when runs overlap)
            pool, plan.pool = plan.pool, _Pool()
        with self._streams_lock:
            stream = self._streams.pop() if self._streams else dev.stream()
        done = False
        try:
            self._queue(plan, env, stream, pool, trace)
            stream.synchronize()
            done = True
            plan.eager_runs += 1
            result = self._results(plan, env, as_numpy)
            if as_numpy:  # the outputs were copied out: their buffers serve the next run
                for r in plan.kept:
                    pool.put(env[r])
            with plan.lock:
                plan.pool.merge(pool)
            return result
        finally:
            if done:  # idle (synchronised): a later run may take it
                with self._streams_lock:
                    self._streams.append(stream)
            else:  # work of a failed run may still be queued on it
                stream.destroy()

    def _queue(self, plan: _Plan, env: _Env, stream: Stream, pool: "_Pool",
               trace: Optional[Callable[[str, str, Dict[str, DeviceArray]], None]] = None
               ) -> None:
        """Queues every step on `stream`, env holding the inputs, outputs taking their buffers
        from `pool` where it has one of the size, and buffers going back to it once their last
        reader is queued."""
        for ref in plan.consts:
            env[ref.key] = self._const(plan, ref)
        for i, step in enumerate(plan.steps):
            step.run(env, stream, pool)
            if trace is not None:
                trace(step.node, step.op_type, {o: env[o] for o in step.outputs if o})
            for r in plan.release[i]:
                pool.put(env[r])

    def _results(self, plan: _Plan, env: _Env, as_numpy: bool) -> Dict[str, Any]:
        result: Dict[str, Any] = {}
        for o in self.output_names:
            info = plan.infos[o]
            if o in env:
                v = env[o]
                result[o] = v.numpy() if as_numpy else v
            else:  # a constant output
                assert info.const is not None
                result[o] = info.const.copy() if as_numpy else self.device.to_device(info.const)
        return result

    def _run_graph(self, plan: _Plan, arrays: Dict[str, Any], as_numpy: bool
                   ) -> Dict[str, Any]:
        """A run as one graph launch: the plan's steps are captured once (on its second run:
        the first, eager, fills the backends' per-shape caches) with inputs and outputs in
        buffers of the plan, which each run copies the inputs into and the outputs out of."""
        dev = self.device
        if plan.graph is None:
            env: _Env = {name: dev.empty(a.shape, a.dtype) for name, a in arrays.items()}
            inputs = dict(env)
            stream = dev.stream()
            try:
                with stream.capture() as cap:
                    self._queue(plan, env, stream, _Pool())
            finally:
                stream.destroy()
            assert cap.graph is not None
            plan.graph, plan.graph_inputs, plan.graph_env = cap.graph, inputs, env
        stream = dev.stream()
        try:
            for name, a in arrays.items():
                buf = plan.graph_inputs[name]
                if isinstance(a, DeviceArray):
                    _ops.copy(a, out=buf, stream=stream)
                else:
                    buf.copy_from(a)
            plan.graph.launch(stream)
            env = plan.graph_env
            if not as_numpy:  # the plan's buffers are overwritten by the next run: copies
                env = dict(env)
                for o in self.output_names:
                    if o in env:
                        env[o] = _ops.copy(env[o], stream=stream)
            stream.synchronize()
            return self._results(plan, env, as_numpy)
        finally:
            stream.destroy()

    def __repr__(self) -> str:
        return (f"<nnplug.onnx.Model {len(self._nodes)} nodes, opset {self.opset}, inputs "
                f"{list(self.inputs)}, outputs {self.output_names}, on {self.device.name}>")
