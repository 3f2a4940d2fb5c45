"""opgen.emit_python — the Python files derived from the op table: nnplug/_ops_generated.py
(ctypes mirrors of the kinds, enums and params structs, and each op's signature) and
nnplug/ops.py (one function per op, with its signature and docstring)."""
from .table import BANNER_C, MAX_DIMS, MAX_VARIADIC, TYPES, SpecError, added_later, check_text


# -------------------------------------------------------------------------- python --
def gen_python(spec, enums, structs, ops, minor):
    o = ['"""nnplug._ops_generated — ' + BANNER_C,
         "",
         "The op kinds, value enums and params structs of nnplug_ops.h as ctypes classes, and each",
         'op\'s signature (tensor names, which are optional, dtype rules, params defaults)."""',
         "from ctypes import Structure, c_double, c_int32, c_int64, c_size_t, c_uint64, c_void_p, sizeof",
         "from enum import IntEnum",
         "from typing import Any, Dict", "",
         f"MAX_DIMS = {MAX_DIMS}",
         f"MAX_VARIADIC = {MAX_VARIADIC}",
         f"ABI_VERSION_MINOR = {minor}", "", ""]
    o.append("class OpKind(IntEnum):")
    o.append("    UNDEFINED = 0")
    for op in ops:
        o.append(f"    {op['name'].upper()} = {op['value']}")
    o.append("")
    for e in enums.values():
        o.append("")
        o.append(f"class {e['python']}(IntEnum):")
        o.append(f'    """{e["doc"]}"""')
        for v in e["values"]:
            o.append(f"    {v['name']} = {v['value']}")
        o.append("")
    o.append("")
    o.append("class _Params(Structure):")
    o.append('    """A params struct: struct_size is set to sizeof on construction, and every field')
    o.append('    starts at the op table\'s default."""')
    o.append("    _defaults_: Dict[str, Any] = {}")
    o.append("")
    o.append("    def __init__(self, **kwargs: Any) -> None:")
    o.append("        super().__init__()")
    o.append("        self.struct_size = sizeof(self)")
    o.append("        for name, value in {**self._defaults_, **kwargs}.items():")
    o.append("            if isinstance(value, (list, tuple)):  # an int32/int64[MAX_DIMS] field")
    o.append("                field = getattr(self, name)")
    o.append("                if len(value) > len(field):")
    o.append("                    raise ValueError(f\"{name}: at most {len(field)} values\")")
    o.append("                for i, v in enumerate(value):")
    o.append("                    field[i] = v")
    o.append("            else:")
    o.append("                setattr(self, name, value)")
    o.append("")
    for s in structs.values():
        o.append("")
        o.append(f"class {s['name']}(_Params):")
        fields = ['("struct_size", c_size_t)'] + [
            f'("{f["name"]}", {TYPES[f["type"]][3]})' for f in s["fields"]]
        o.append("    _fields_ = [" + ", ".join(fields) + "]")
        defaults = {f["name"]: f["default_value"] for f in s["fields"]
                    if not f["type"].endswith("[NNP_MAX_DIMS]") and f["default_value"] != 0}
        o.append(f"    _defaults_: Dict[str, Any] = {defaults!r}")
        o.append("")
    o.append("")
    o.append("#: op name -> (kind, params class or None, params optional, inputs, outputs)")
    o.append("#: inputs/outputs: tuples (name, optional, dtype rule, variadic); a variadic tensor")
    o.append("#: (the last of its list) stands for 1..MAX_VARIADIC tensors")
    o.append("OPS = {")
    for op in ops:
        ins = tuple((t["name"], t["optional"], t["dtype"], t["variadic"]) for t in op["inputs"])
        outs = tuple((t["name"], t["optional"], t["dtype"], t["variadic"])
                     for t in op["outputs"])
        p = op["params"] or "None"
        o.append(f"    {op['name']!r}: (OpKind.{op['name'].upper()}, {p}, {op['params_optional']}, "
                 f"{ins!r}, {outs!r}),")
    o.append("}")
    o.append("")
    o.append("#: every params struct, by C name")
    o.append("PARAMS_STRUCTS = {cls.__name__: cls for cls in (" +
             ", ".join(s["name"] for s in structs.values()) + ")}")
    o.append("")
    o.append("#: C enum name -> (IntEnum class, prefix of the C enumerator names)")
    o.append("ENUMS = {\"nnp_op_kind\": (OpKind, \"NNP_OP_\"), " + ", ".join(
        f"\"{e['name']}\": ({e['python']}, \"{e['prefix']}\")" for e in enums.values()) + "}")
    return "\n".join(o) + "\n"


# ------------------------------------------------------------------- python ops --
PY_TYPES = {"int32": "int", "int64": "int", "uint64": "int", "double": "float",
            "int32[NNP_MAX_DIMS]": "Sequence[int]", "int64[NNP_MAX_DIMS]": "Sequence[int]"}
PY_RESERVED = {"out", "stream", "device", "dtype", "out_shape"}
# The per-spatial-axis arrays of the N-D conv and pool params (k = the first input's rank - 2):
# 1 = k entries, 2 = 2k (pads: begins then ends). The Python functions check their lengths
# against k and take PyTorch's short forms (nnplug._args._spatial_list).
PY_SPATIAL = {"kernel_shape": 1, "strides": 1, "dilations": 1, "output_padding": 1,
              "output_shape": 1, "pads": 2}


def py_spatial(p):
    """1 or 2 for a per-spatial-axis array keyword (PY_SPATIAL), else 0."""
    return PY_SPATIAL.get(p[1], 0) if p[2] == "int32[NNP_MAX_DIMS]" else 0


def py_ident(name):
    import keyword
    return name + "_" if keyword.iskeyword(name) else name


def py_params(s, enums):
    """The Python keywords of a params struct: [(python name, field, kind, enum, has, count,
    annotation, default repr)]; reserved, has_* and count fields are set by the runtime."""
    if s is None:
        return []
    names = {f["name"]: f for f in s["fields"]}
    counted = {a: f["name"] for f in s["fields"] for a in f["count_of"]}
    out = []
    for f in s["fields"]:
        n = f["name"]
        if f["check"] == "reserved" or f["count_of"]:
            continue
        if n.startswith("has_") and n[4:] in names:
            continue
        has = f"has_{n}" if f"has_{n}" in names else None
        kind = f["type"]
        enum = f.get("enum")
        if kind == "comm":
            ann, default = "Communicator", None  # required keyword
        elif f["check"] == "flag":
            kind, ann, default = "flag", "bool", repr(bool(f["default_value"]))
        elif enum:
            kind, ann = "enum", "Union[str, int]"
            default = repr(str(f["default"]).lower()) if isinstance(f["default"], str) else \
                repr(f["default"])
        elif kind.endswith("[NNP_MAX_DIMS]"):
            ann = "Sequence[int]"
            default = "None" if f["default"] == "identity" else "()"
            if f["default"] == "identity":
                ann = "Sequence[int]"
                default = None  # required keyword
        else:
            ann = PY_TYPES[kind]
            default = repr(f["default_value"]) if kind != "double" else \
                repr(float(f["default_value"]))
        if has:
            ann, default = f"Optional[{ann}]", "None"
        out.append((py_ident(n), n, kind, enums[enum]["python"] if enum else None, has,
                    counted.get(n), ann, default, f))
    return out


def py_doc_lines(text, indent="    "):
    return [(indent + l).rstrip() for l in text.strip("\n").split("\n")] if text.strip() else []


def gen_python_ops(enums, structs, ops):
    param_docs = {}  # params struct -> (first op, its params lines)
    o = ['"""nnplug.ops — one function per op of nnplug_ops.h. ' + BANNER_C,
         "",
         "Every function takes the op's inputs positionally in the C API's order (optional inputs",
         "as keywords), then the tensors it updates in place (running statistics, optimiser",
         "state), and its params as keyword-only arguments with the C defaults. Outputs are",
         "allocated (shapes from nnp_op_infer_shapes, on the inputs' device, of the inputs' kind:",
         "numpy, PyTorch or nnplug.DeviceArray) and returned, or written into `out=` (a tensor, or",
         "a tuple in the C order with None for one to allocate). Optional outputs are computed",
         "when asked for with `return_<name>=True` or given in `out=`.",
         "",
         "Where it runs: `stream=` (queued: call stream.synchronize()); else `device=` (a name or",
         "nnplug.Device); else the device of a DeviceArray argument, or the best device whose",
         "memory the tensors live in. Without `stream=` the call waits for the op to finish.",
         "",
         "Dtypes: the float tensors of a call share one dtype (\"the call's float dtype\":",
         "float32 everywhere, float64 on the reference backend, float16/bfloat16 where a backend",
         "says so); labels and indices are int64, masks uint8.",
         "",
         "Failures raise nnplug.Error, before any output is written: a subclass per status —",
         "nnplug.InvalidArgumentError (shapes, dtypes, devices, params; the message names the",
         "argument), nnplug.UnsupportedError (the device lacks this op, dtype or case),",
         "nnplug.OutOfMemoryError, nnplug.DeviceError. nnplug.supported(op, ...) takes the same",
         "arguments.",
         '"""',
         "# ruff: noqa: E501",
         "from typing import Any, Optional, Sequence, Union",
         "",
         "from . import _ops_generated as _g",
         "from ._call import DeviceLike, OutLike, StreamLike, TensorLike, _Op, _P, _T, execute, supported",
         "from ._comm import Communicator",
         "from ._ops_generated import (" + ", ".join(sorted(e["python"] for e in enums.values())) + ", OpKind)",
         "",
         "__all__ = [\"execute\", \"supported\", " + ", ".join(f'"{op["name"]}"' for op in ops) + "]",
         "",
         "_ = (" + ", ".join(sorted(e["python"] for e in enums.values())) + ")  # referenced by the specs",
         ""]
    for op in ops:
        s = structs[op["params"]] if op["params"] and not op["params_optional"] else None
        params = py_params(s, enums)
        ins, outs = op["inputs"], op["outputs"]
        req_in = [t for t in ins if not t["optional"]]
        # An optional input named as a params keyword (adam_update's step and lr, ABI 1.4: a
        # device tensor that replaces the field) shares that keyword: a tensor goes to the
        # input, a number to the field (nnplug._call._Op.split_shared).
        pnames = {p[0] for p in params}
        shared = {t["name"] for t in ins if t["optional"] and not t["variadic"]} & pnames
        opt_in = [t for t in ins if t["optional"] and t["name"] not in shared]
        inplace = [t for t in outs if t["inplace"]]
        req_inplace = [t for t in inplace if not t["optional"]]
        opt_inplace = [t for t in inplace if t["optional"]]
        results = [t for t in outs if not t["inplace"]]
        opt_results = [t for t in results if t["optional"]]
        names = [t["name"] for t in ins + outs] + [p[0] for p in params if p[0] not in shared]
        extra = []
        if not op["infer"]:
            extra.append(("out_shape", "Optional[Sequence[Any]]", "None"))
        if not ins or any(t["dtype"] == "any_float" for t in results):
            extra.append(("dtype", "Optional[str]", "None" if ins else "'float32'"))
        extra += [(f"return_{t['name']}", "bool", "False") for t in opt_results]
        clash = set(names) & (PY_RESERVED | {e[0] for e in extra})
        if len(set(names)) != len(names) or clash:
            raise SpecError(f"op {op['name']}: Python argument names clash: {sorted(clash)}")
        # the spec the runtime reads
        def tspec(t):
            return (f"_T({t['name']!r}, {t['optional']}, {t['dtype']!r}, {t['variadic']}, "
                    f"{t['inplace']})")
        pspecs = [f"_P({p[0]!r}, {p[1]!r}, {p[2]!r}, {('_g.' + p[3]) if p[3] else None}, "
                  f"{p[4]!r}, {p[5]!r}" + (f", {py_spatial(p)})" if py_spatial(p) else ")")
                  for p in params]
        pcls = f"_g.{op['params']}" if op["params"] else "None"
        o.append("")
        o.append(f"_{op['name']} = _Op({op['name']!r}, OpKind.{op['name'].upper()}, {pcls}, "
                 f"{op['params_optional']}, {op['infer']},")
        o.append("    (" + "".join(tspec(t) + ", " for t in ins) + "),")
        o.append("    (" + "".join(tspec(t) + ", " for t in outs) + "),")
        o.append("    (" + "".join(p + ", " for p in pspecs) + "))")
        o.append("")
        o.append("")
        # the signature
        def tann(t):
            return "Sequence[TensorLike]" if t["variadic"] else "TensorLike"
        args = [f"{t['name']}: {tann(t)}" for t in req_in + req_inplace]
        kw = [f"{t['name']}: Optional[TensorLike] = None" for t in opt_in + opt_inplace]
        for p in params:
            ann = f"Union[{p[6]}, TensorLike]" if p[0] in shared else \
                "Union[int, Sequence[int]]" if py_spatial(p) else p[6]
            kw.append(f"{p[0]}: {ann}" + ("" if p[7] is None else f" = {p[7]}"))
        kw += [f"{n}: {a} = {d}" for n, a, d in extra]
        kw += ["out: OutLike = None", "stream: StreamLike = None", "device: DeviceLike = None"]
        # The signature packed into lines of at most 140 characters (ops sharing a params
        # struct would otherwise repeat a line per keyword).
        o.append(f"def {op['name']}(")
        line = "   "
        for a in args + ["*"] + kw:
            if len(line) + len(a) + 2 > 140:
                o.append(line)
                line = "   "
            line += f" {a},"
        o.append(line)
        o.append(") -> Any:")
        # the docstring
        d = [f'    """NNP_OP_{op["name"].upper()} ({op["value"]}; ABI 1.{op["since"]}): see nnplug_ops.h and docs/ops.md.']
        # The params struct's text (its formulas) once, in the first op that takes it; the
        # others point there.
        first = next(u for u in ops if u["params"] == op["params"]) if s is not None else op
        if s is not None and s.get("doc") and first is op:
            d += [""] + py_doc_lines(s["doc"])
        elif s is not None and s.get("doc"):
            d += ["", f"    The formulas and params ({op['params']}): see nnplug.{first['name']}."]
        if op["doc"]:
            d += [""] + py_doc_lines(op["doc"])

        def tdoc(t, how):
            dt = {"float": "the call's float dtype",
                  "int64": "int64", "uint8": "uint8",
                  "same_as_input0": "any dtype, that of the first input",
                  "any_float": "any float dtype", "float32": "float32",
                  "accumulation": f"float32 in a float16/bfloat16 call (ABI "
                                  f"1.{t['dtype_since']}), else the call's float "
                                  "dtype"}[t["dtype"]]
            if added_later(op, t):
                dt += f"; ABI 1.{t['since']}"
            v = f"a list of 1..{MAX_VARIADIC} tensors; " if t["variadic"] else ""
            return f"        {t['name']}{how}: {v}{t['doc'] or 'see the op'} ({dt})"
        d += ["", "    Inputs:"] + [tdoc(t, "") for t in req_in] + \
             [tdoc(t, " (optional keyword)") for t in opt_in] + \
             [tdoc(t, f" (optional keyword, shared with params->{t['name']}: a tensor is this "
                      "input, a number sets the field)") for t in ins if t["name"] in shared]
        if inplace:
            d += ["", "    Updated in place (read and written; never allocated):"] + \
                 [tdoc(t, " (optional keyword)" if t["optional"] else "") for t in inplace]
        if results:
            d += ["", "    Outputs (returned; storage may be passed with out=, in this order):"] + \
                 [tdoc(t, f" (optional: return_{t['name']}=True or out=)" if t["optional"] else "")
                  for t in results]
        if params:
            plines = []
            for p in params:
                f = p[8]
                c = check_text(f)
                if p[3]:
                    e = enums[f["enum"]]
                    vals = ", ".join(v["name"].lower() for v in e["values"]
                                     if v["name"] != "UNDEFINED")
                    c += f"; one of {vals} (or nnplug.{e['python']})"
                if p[4]:
                    c += f"; None leaves {p[4]} = 0"
                if p[5]:
                    c += f"; its length sets {p[5]}"
                if p[0] in shared:
                    c += f"; a tensor instead is the input {p[0]} (the field keeps its default)"
                if py_spatial(p) == 1:
                    c += ("; k entries (one per spatial axis), or an int for all k; () = all 0; "
                          "other lengths are refused")
                elif py_spatial(p) == 2:
                    c += ("; 2k entries [begins..., ends...] (ONNX), k entries (begin = end on "
                          "each axis, as PyTorch's padding), or an int for every begin and end; "
                          "() = all 0; other lengths are refused")
                ann = "Union[int, Sequence[int]]" if py_spatial(p) else p[6]
                plines.append(f"        {p[0]} ({ann}): {c}")
            # Each field's text once per params struct: an op whose lines are those of an
            # earlier op with the same struct names them and points there.
            earlier = param_docs.setdefault(op["params"], (op["name"], plines))
            if earlier[0] != op["name"] and earlier[1] == plines:
                d += ["", f"    Params (keyword-only; the C struct's fields): "
                          f"{', '.join(p[0] for p in params)}, as in nnplug.{earlier[0]}."]
            else:
                d += ["", "    Params (keyword-only; the C struct's fields):"] + plines
        if extra:
            d += ["", "    Other keywords:"]
            for n, _, _ in extra:
                if n == "out_shape":
                    d.append("        out_shape: the output's shape (a list of shapes for a "
                             "variadic output), needed without out= because the inputs do "
                             "not determine it")
                elif n == "dtype":
                    d.append("        dtype: the output dtype when it is allocated (numpy name)")
            d.append("        return_<name>: also compute and return that optional output")
        rnames = ", ".join(t["name"] for t in results)
        if not results:
            ret = "None (the update is in place)."
        elif len(results) == 1:
            ret = f"{rnames}" + (" (a list)" if results[0]["variadic"] else "") + "."
        else:
            ret = (f"the computed outputs among ({rnames}) in that order; a single one "
                   "unwrapped.")
        d += ["", f"    Returns: {ret}",
              "",
              "    Raises: nnplug.Error, as every op (nnplug.ops); the message names the argument.",
              '    """']
        o += d
        o.append(f"    return _{op['name']}.run(locals())")
        o.append("")
    return "\n".join(o) + "\n"
