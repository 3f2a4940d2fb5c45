#!/usr/bin/env python3
"""gen_ops.py — derives every op-related file of nnplug from api/ops/ops.toml.

Usage:
  gen_ops.py [--root DIR]           write the derived files
  gen_ops.py [--root DIR] --check   exit 1 (naming each file) if a derived file differs from
                                    what the table gives: stale or edited by hand

Needs Python >= 3.11 (tomllib) and nothing else. The layout rules it enforces (no holes, no
tail padding, fields of a later minor after those of earlier ones) are those of docs/abi.md;
the offsets it computes are LP64 (x86-64, AArch64 Linux), and the generated layout pins make
the C compiler confirm them.
"""
import argparse
import os
import re
import sys
import tomllib

BANNER_C = "GENERATED from api/ops/ops.toml by api/ops/gen_ops.py: edit the table, not this file."

# type -> (C declaration format, size, alignment, ctypes expression, kind letter)
TYPES = {
    "int32": ("int32_t {}", 4, 4, "c_int32", "i"),
    "int64": ("int64_t {}", 8, 8, "c_int64", "l"),
    "uint64": ("uint64_t {}", 8, 8, "c_uint64", "u"),
    "double": ("double {}", 8, 8, "c_double", "d"),
    "int32[NNP_MAX_DIMS]": ("int32_t {}[NNP_MAX_DIMS]", 32, 4, "c_int32 * MAX_DIMS", "a"),
    "int64[NNP_MAX_DIMS]": ("int64_t {}[NNP_MAX_DIMS]", 64, 8, "c_int64 * MAX_DIMS", "L"),
    "comm": ("nnp_comm* {}", 8, 8, "c_void_p", "p"),
}
MAX_DIMS = 8
# The most tensors a variadic input or output stands for (NNP_MAX_VARIADIC in nnplug_ops.h).
MAX_VARIADIC = 64
# type -> the size expression the header's *_STRUCT_SIZE_1_<m> macros use
C_SIZEOF = {"int32": "sizeof(int32_t)", "int64": "sizeof(int64_t)", "uint64": "sizeof(uint64_t)",
            "double": "sizeof(double)", "int32[NNP_MAX_DIMS]": "sizeof(int32_t) * NNP_MAX_DIMS",
            "int64[NNP_MAX_DIMS]": "sizeof(int64_t) * NNP_MAX_DIMS", "comm": "sizeof(nnp_comm*)"}


class SpecError(Exception):
    pass


# ------------------------------------------------------------------------------ model --
def load(root):
    with open(os.path.join(root, "api/ops/ops.toml"), "rb") as f:
        spec = tomllib.load(f)
    enums = {e["name"]: e for e in spec["enum"]}
    structs = {s["name"]: s for s in spec["struct"]}
    ops = spec["op"]
    minor = spec["abi"]["minor"]
    values, names = set(), set()
    for op in ops:
        if op["value"] in values or op["name"] in names:
            raise SpecError(f"op {op['name']}: value or name used twice")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", op["name"]):
            raise SpecError(f"op {op['name']}: name must be lower_snake_case")
        values.add(op["value"])
        names.add(op["name"])
        op.setdefault("since", 0)
        op.setdefault("doc", "")
        op.setdefault("params_optional", False)
        op.setdefault("allow_strides", False)
        op.setdefault("infer", True)
        # A collective (all_reduce, ...) takes a communicator in its params: libnnplug runs it
        # through the communicator's transport; the generic harnesses (conformance examples,
        # the Python op functions) leave it to the communicator tests.
        op.setdefault("collective", False)
        # Facts for the differential fuzzer (fuzz/fuzz_op_execute.cpp, fuzz/op_call.cpp):
        # `exact`: every output element is a fixed function of fixed input elements (IEEE
        # operations as C's <math.h>), so the backends agree on where NaN and Inf appear;
        # `heavy`: the arithmetic grows faster than the tensors (GEMM, convolution, pooling,
        # attention), so the fuzzer bounds the work before it runs a call.
        op.setdefault("exact", False)
        op.setdefault("heavy", False)
        for key in ("collective", "exact", "heavy", "params_optional", "allow_strides", "infer"):
            if not isinstance(op[key], bool):
                raise SpecError(f"op {op['name']}: {key} is true or false")
        op["enum"] = "NNP_OP_" + op["name"].upper()
        if "params" in op and op["params"] not in structs:
            raise SpecError(f"op {op['name']}: unknown params struct {op['params']}")
        if op["params_optional"] and "params" not in op:
            op["params"] = None
        op.setdefault("params", None)
        if op["params"] is None and not op["params_optional"]:
            raise SpecError(f"op {op['name']}: an op without params must say params_optional")
        for role in ("inputs", "outputs"):
            for t in op[role]:
                t.setdefault("optional", False)
                t.setdefault("dtype", "float")
                t.setdefault("doc", "")
                t.setdefault("alias", "")
                t.setdefault("variadic", False)
                t.setdefault("inplace", False)
                t.setdefault("since", 0)
                if t["inplace"] and role == "inputs":
                    raise SpecError(f"op {op['name']}: {t['name']}: only outputs are inplace")
                if t["dtype"] not in ("float", "int64", "uint8", "same_as_input0", "any_float",
                                      "float32"):
                    raise SpecError(f"op {op['name']}: {t['name']}: unknown dtype {t['dtype']}")
                if t["since"] > minor:
                    raise SpecError(f"op {op['name']}: {t['name']}: since {t['since']} > ABI "
                                    f"minor {minor}")
            # A tensor added after the op (since > the op's) is optional and comes after the
            # op's older tensors: older callers leave it out, and the typed wrapper, whose C
            # signature cannot change, keeps the tensors of the op's own minor.
            last = 0
            for t in op[role]:
                added = max(t["since"], op.get("since", 0))
                if added > op.get("since", 0) and not t["optional"]:
                    raise SpecError(f"op {op['name']}: {t['name']}: a tensor added in ABI "
                                    f"1.{added}, after the op, must be optional")
                if added < last:
                    raise SpecError(f"op {op['name']}: {t['name']}: a tensor of ABI 1.{added} "
                                    f"after one of 1.{last} (tensors are appended)")
                last = added
            for k, t in enumerate(op[role]):
                if t["variadic"] and k != len(op[role]) - 1:
                    raise SpecError(f"op {op['name']}: {t['name']}: only the last of the "
                                    f"{role} may be variadic")
                if t["variadic"] and (t["optional"] or t["alias"]):
                    raise SpecError(f"op {op['name']}: {t['name']}: a variadic tensor is "
                                    "neither optional nor aliased")
            op[f"variadic_{role}"] = bool(op[role]) and op[role][-1]["variadic"]
        in_names = [t["name"] for t in op["inputs"]]
        op["alias_pairs"] = []
        for o, t in enumerate(op["outputs"]):
            for a in t["alias"].split():
                if a not in in_names:
                    raise SpecError(f"op {op['name']}: {t['name']} aliases unknown input {a}")
                op["alias_pairs"].append((o, in_names.index(a)))
        ex = op["example"]
        if len(ex["inputs"]) > len(op["inputs"]) or len(ex["outputs"]) != len(op["outputs"]) \
                or not all(t["optional"] for t in op["inputs"][len(ex["inputs"]):]):
            raise SpecError(f"op {op['name']}: example must give every tensor's shape (it may "
                            "leave out trailing optional inputs)")
        for role in ("inputs", "outputs"):
            for t, shape in zip(op[role], ex[role]):
                ok = (bool(shape) and all(isinstance(s, list) for s in shape)
                      and len(shape) <= MAX_VARIADIC) if t["variadic"] else \
                    all(isinstance(d, int) for d in shape)
                if not ok:
                    raise SpecError(f"op {op['name']}: example: {t['name']} takes " +
                                    ("a list of 1..MAX_VARIADIC shapes" if t["variadic"]
                                     else "one shape"))
        ex.setdefault("params", {})
        if op["since"] > minor:
            raise SpecError(f"op {op['name']}: since {op['since']} > ABI minor {minor}")
    for e in enums.values():
        e["last"] = max(v["value"] for v in e["values"])
        if e["values"][0]["value"] != 0:
            raise SpecError(f"enum {e['name']}: value 0 comes first (UNDEFINED, or a valid default)")
        if [v["value"] for v in e["values"]] != list(range(e["last"] + 1)):
            raise SpecError(f"enum {e['name']}: values must be 0, 1, 2, ... in order")
        for v in e["values"]:
            v.setdefault("since", 0)
            if v["since"] > minor:
                raise SpecError(f"enum {e['name']}: {v['name']}: since {v['since']} > minor {minor}")
    for s in structs.values():
        layout(s, enums, minor)
    return spec, enums, structs, ops, minor


def layout(s, enums, minor):
    """Computes offsets; refuses holes, tail padding and out-of-order minors."""
    s.setdefault("since", 0)
    off, last_since, max_align = 8, 0, 8
    for f in s["fields"]:
        if f["type"] not in TYPES:
            raise SpecError(f"{s['name']}.{f['name']}: unknown type {f['type']}")
        f.setdefault("since", 0)
        f.setdefault("doc", "")
        if f["type"] == "comm":
            f.setdefault("default", 0)  # NULL: required
        _, size, align, _, _ = TYPES[f["type"]]
        if off % align:
            raise SpecError(f"{s['name']}.{f['name']}: hole of {align - off % align} bytes "
                            "before it (name the bytes reserved*)")
        if f["since"] < last_since:
            raise SpecError(f"{s['name']}.{f['name']}: a field of ABI 1.{f['since']} after one "
                            f"of 1.{last_since} (fields are appended)")
        if f["since"] > minor:
            raise SpecError(f"{s['name']}.{f['name']}: since {f['since']} > minor {minor}")
        last_since = f["since"]
        f["offset"], f["size"] = off, size
        off += size
        check = f["check"]
        kind = check.split(":")[0]
        if kind not in ("flag", "min", "enum", "finite", "positive", "nonnegative", "interval",
                        "reserved", "shape", "comm"):
            raise SpecError(f"{s['name']}.{f['name']}: unknown check {check}")
        if kind == "enum" and check.split(":")[1] not in enums:
            raise SpecError(f"{s['name']}.{f['name']}: unknown enum in {check}")
        if (kind == "comm") != (f["type"] == "comm"):
            raise SpecError(f"{s['name']}.{f['name']}: a comm field has check comm, and only it")
        if kind == "reserved" and not f["name"].startswith("reserved"):
            raise SpecError(f"{s['name']}.{f['name']}: reserved fields are named reserved*")
        f.setdefault("count_of", [])
        # unused_zero: an array whose entries past those a call uses must be 0 (the op's shape
        # rule refuses other values)
        f.setdefault("unused_zero", False)
        if f["unused_zero"] and not (f["type"].endswith("[NNP_MAX_DIMS]") and kind == "shape"):
            raise SpecError(f"{s['name']}.{f['name']}: unused_zero is for arrays with check shape")
        if kind == "enum":
            f["enum"] = check.split(":")[1]
        if f.get("enum") and f["enum"] not in enums:
            raise SpecError(f"{s['name']}.{f['name']}: unknown enum {f['enum']}")
        f["default_value"] = default_value(f, enums)
    names = {f["name"]: f for f in s["fields"]}
    for f in s["fields"]:
        for a in f["count_of"]:
            if a not in names or not names[a]["type"].endswith("[NNP_MAX_DIMS]"):
                raise SpecError(f"{s['name']}.{f['name']}: count_of names {a}, not an array field")
        if f["name"].startswith("has_") and f["name"][4:] in names and f["check"] != "flag":
            raise SpecError(f"{s['name']}.{f['name']}: a has_* field is a flag")
    if off % max_align:
        raise SpecError(f"{s['name']}: {max_align - off % max_align} bytes of tail padding "
                        "(add a reserved field)")
    s["size"] = off
    s["minors"] = sorted({f["since"] for f in s["fields"]})


def enum_first_valid(e):
    """1 for an enum whose 0 is UNDEFINED (0 is refused); 0 when 0 names a value (ONNX NOTSET)."""
    return 1 if e["values"][0]["name"] == "UNDEFINED" else 0


def zero_refused(f, enums):
    """Whether field f's check refuses 0: an enum whose 0 is UNDEFINED, min >= 1, positive, an
    interval above 0, a communicator (NULL), or a permutation (default identity: all zeros
    repeat axis 0 for inputs of rank >= 2; the shape rule refuses it)."""
    kind, _, arg = f["check"].partition(":")
    if kind == "enum":
        return enum_first_valid(enums[arg]) == 1
    if kind == "min":
        return int(arg) >= 1
    if kind == "interval":
        return float(re.fullmatch(r"\[([-0-9.e]+),.*", arg).group(1)) > 0
    if kind == "shape":
        return f["default"] == "identity"
    return kind in ("positive", "comm")


def op_zero_fields(op, structs):
    """zero_fields of op's params. An op whose params are optional ignores them beyond the
    table's checks (its shape rule reads none), so only its reserved fields must be 0."""
    if not op["params"]:
        return []
    return [z[:4] for z in zero_fields(structs[op["params"]])
            if not op["params_optional"] or not z[4]]


def zeroed_params_invalid(op, structs, enums):
    """Whether params of all zeros (struct_size kept) are refused for op's example."""
    if not op["params"]:
        return False
    return any(zero_refused(f, enums) and (f["check"] != "shape" or not op["params_optional"])
               for f in structs[op["params"]]["fields"])


def zero_fields(s):
    """[(name, field, bytes after the field's offset, size, whether the shape rule checks it)]
    of the params bytes that must hold 0: every reserved field (the table's check), and the
    last entry of each array whose unused entries must be 0 (the shape rule's; no example uses
    all NNP_MAX_DIMS entries)."""
    out = []
    for f in s["fields"]:
        if f["check"] == "reserved":
            out.append((f["name"], f["name"], 0, f["size"], False))
        elif f["unused_zero"]:
            item = f["size"] // MAX_DIMS
            out.append((f"{f['name']}[{MAX_DIMS - 1}]", f["name"], f["size"] - item, item, True))
    return out


def default_value(f, enums):
    d = f["default"]
    if isinstance(d, str):
        if d == "identity":
            return 0
        enum = enums[f["enum"]]
        for v in enum["values"]:
            if v["name"] == d:
                return v["value"]
        raise SpecError(f"{f['name']}: default {d} is not a value of {enum['name']}")
    return d


def size_macro(s, minor=None):
    base = s["name"].upper() + "_STRUCT_SIZE"
    return base if minor is None else f"{base}_1_{minor}"


def last_field_of(s, minor):
    return [f for f in s["fields"] if f["since"] <= minor][-1]


def check_text(f):
    c = f["check"]
    kind, _, arg = c.partition(":")
    text = {
        "flag": "0 or 1", "min": f">= {arg}", "enum": arg, "finite": "finite",
        "positive": "> 0, finite", "nonnegative": ">= 0, finite", "interval": f"in {arg}",
        "reserved": "reserved, must be 0", "shape": "",
        "comm": "required: a live communicator",
    }[kind]
    parts = [p for p in (text, f["doc"]) if p]
    d = f["default"]
    if kind not in ("reserved", "comm"):
        parts.append(f"default {d}")
    if f["since"]:
        parts.append(f"ABI 1.{f['since']}")
    return "; ".join(parts)


def comment_block(text, indent=""):
    lines = text.strip("\n").split("\n")
    out = [indent + "/**"]
    out += [(indent + " * " + l).rstrip() for l in lines]
    out.append(indent + " */")
    return "\n".join(out)


def added_later(op, t):
    """Whether tensor t was added to op after the op itself (its own `since`)."""
    return t["since"] > op["since"]


def tensor_line(i, t, op):
    bits = [f"[{i}..] {t['name']}[n] (variadic: 1..NNP_MAX_VARIADIC tensors)" if t["variadic"]
            else f"[{i}] {t['name']}"]
    if t["optional"]:
        bits.append("(optional)")
    desc = t["doc"]
    if t["dtype"] not in ("float",):
        desc = (desc + ", " if desc else "") + {"int64": "int64", "uint8": "uint8",
                                                "same_as_input0": "any dtype",
                                                "any_float": "any float dtype",
                                                "float32": "float32"}[t["dtype"]]
    if t["alias"]:
        desc = (desc + "; " if desc else "") + "may alias " + " or ".join(t["alias"].split())
    if added_later(op, t):
        desc = (desc + "; " if desc else "") + f"new in ABI 1.{t['since']}"
    return " ".join(bits) + (": " + desc if desc else "")


def op_doc(op):
    lines = [f"{op['enum']} ({op['name']}, {op['value']})" +
             (f", new in ABI 1.{op['since']}" if op["since"] else "")]
    ins = [tensor_line(i, t, op) for i, t in enumerate(op["inputs"])] or ["none"]
    outs = [tensor_line(i, t, op) for i, t in enumerate(op["outputs"])]
    lines.append("  inputs:  " + ins[0])
    lines += ["           " + l for l in ins[1:]]
    lines.append("  outputs: " + outs[0])
    lines += ["           " + l for l in outs[1:]]
    if op["doc"]:
        lines += ["  " + l for l in op["doc"].strip().split("\n")]
    return lines


# ----------------------------------------------------------------------- nnplug_ops.h --
def gen_ops_h(spec, enums, structs, ops, minor):
    o = []
    o.append("/*")
    for l in spec["header"]["doc"].strip().split("\n"):
        o.append((" * " + l).rstrip())
    o.append(" */")
    o.append("#ifndef NNPLUG_OPS_H_\n#define NNPLUG_OPS_H_\n")
    o.append("#include <nnplug/nnplug_types.h>\n")
    o.append("#ifdef __cplusplus\nextern \"C\" {\n#endif\n")
    o.append("/** ABI version of these headers (the op table's [abi]): the major must match between host\n"
             " * and plugin; the minor counts the additions (docs/abi.md's changelog). nnplug_plugin.h\n"
             " * states the versioning rules. */")
    o.append(f"#define NNP_ABI_VERSION_MAJOR {spec['abi']['major']}")
    o.append(f"#define NNP_ABI_VERSION_MINOR {minor}\n")
    o.append("/** The most tensors a variadic input or output (an op block's \"[i..] name[n]\") "
             "stands for:\n * such an op takes 1..NNP_MAX_VARIADIC tensors there, each under "
             "that tensor's rules\n * (ABI 1.2). */")
    o.append(f"#define NNP_MAX_VARIADIC {MAX_VARIADIC}\n")
    o.append("/** Op kinds. Values are explicit and never reused; names are nnp_op_kind_name(). */")
    o.append("typedef enum nnp_op_kind {")
    o.append("  NNP_OP_UNDEFINED = 0,")
    for op in ops:
        o.append(f"  {op['enum']} = {op['value']}, /**< \"{op['name']}\"" +
                 (f", ABI 1.{op['since']}" if op["since"] else "") + " */")
    o.append("  NNP_OP_KIND_FORCE_INT32 = 0x7FFFFFFF /**< not a kind: keeps the enum 32-bit */")
    o.append("} nnp_op_kind;\n")
    o.append(f"/** Number of op kinds defined by this header. */\n#define NNP_OP_KIND_COUNT {len(ops)}\n")
    for e in enums.values():
        o.append(f"/** {e['doc']} */")
        o.append(f"typedef enum {e['name']} {{")
        for v in e["values"]:
            vdoc = v.get("doc", "") + (f" (ABI 1.{v['since']})" if v["since"] else "")
            doc = f" /**< {vdoc.strip()} */" if vdoc else ""
            o.append(f"  {e['prefix']}{v['name']} = {v['value']},{doc}")
        o.append(f"  {e['prefix']}FORCE_INT32 = 0x7FFFFFFF /**< not a value: keeps the enum 32-bit */")
        o.append(f"}} {e['name']};\n")
    used = set()
    for s in structs.values():
        users = [op for op in ops if op["params"] == s["name"]]
        text = s["doc"].strip("\n")
        for op in users:
            text += "\n\n" + "\n".join(op_doc(op))
            used.add(op["name"])
        o.append("/* " + "-" * 90 + " */")
        o.append(comment_block(text))
        o.append(f"typedef struct {s['name']} {{")
        o.append("  size_t struct_size; /**< sizeof as compiled by the caller */")
        for f in s["fields"]:
            decl = TYPES[f["type"]][0].format(f["name"])
            o.append(f"  {decl}; /**< {check_text(f)} */")
        o.append(f"}} {s['name']};")
        for m in s["minors"]:
            lf = last_field_of(s, m)
            size = C_SIZEOF[lf["type"]]
            o.append(f"#define {size_macro(s, m)} (offsetof({s['name']}, {lf['name']}) + {size})")
        o.append(f"#define {size_macro(s)} {size_macro(s, s['minors'][-1])}\n")
    rest = [op for op in ops if op["name"] not in used]
    if rest:
        o.append("/* " + "-" * 90 + " */")
        o.append("/* Ops without params (params may be NULL). */")
        for op in rest:
            o.append(comment_block("\n".join(op_doc(op))))
        o.append("")
    o.append("#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n")
    o.append("#endif /* NNPLUG_OPS_H_ */")
    return "\n".join(o) + "\n"


def wrapper_tensors(op, role):
    """The tensors of `role` a typed wrapper takes: those of the op's own minor. Tensors added
    later (optional, trailing) go through nnp_op_execute: a wrapper's C signature never
    changes."""
    return [t for t in op[role] if not added_later(op, t)]


def wrapper_args(op):
    args = ["nnp_stream* stream"]
    if op["params"] and not op["params_optional"]:
        args.append(f"const {op['params']}* params")
    for t in wrapper_tensors(op, "inputs") + wrapper_tensors(op, "outputs"):
        if t["variadic"]:
            args += [f"size_t n_{t['name']}", f"const DLTensor* const* {t['name']}"]
        else:
            args.append(f"const DLTensor* {t['name']}")
    return args


def gen_wrappers_h(ops):
    o = ["/*",
         " * nnplug_op_wrappers.h — typed wrappers of nnp_op_execute(), one per op kind; included by",
         " * nnplug.h. " + BANNER_C,
         " *",
         " * Each wrapper is nnp_op_execute(stream, kind, params, inputs, outputs) with the tensors in",
         " * the order of nnplug_ops.h: inputs first, then outputs. Optional tensors may be NULL.",
         " * A variadic tensor (name[n]) is passed as a count and an array of n tensors. A wrapper",
         " * takes the tensors its op had when it was added; optional tensors added in a later ABI",
         " * minor (\"Added later\") are passed through nnp_op_execute, so that no wrapper's",
         " * signature ever changes.",
         " * Statuses, ownership and thread safety are those of nnp_op_execute (nnplug.h).",
         " */",
         "#ifndef NNPLUG_OP_WRAPPERS_H_\n#define NNPLUG_OP_WRAPPERS_H_\n",
         "#include <nnplug/nnplug.h> /* nnp_stream, NNP_API; it includes this header too */\n",
         "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"]
    for op in ops:
        def names(ts):
            return ", ".join(t["name"] + ("?" if t["optional"] else "") +
                             (f"[n_{t['name']}]" if t["variadic"] else "") for t in ts)
        ins = names(wrapper_tensors(op, "inputs")) or "none"
        outs = names(wrapper_tensors(op, "outputs"))
        p = "params NULL" if op["params_optional"] else op["params"]
        later = [f"{t['name']}? (ABI 1.{t['since']})" for t in op["inputs"] + op["outputs"]
                 if added_later(op, t)]
        note = f"\n * Added later, passed through nnp_op_execute only: {', '.join(later)}." \
            if later else ""
        o.append(f"/** {op['enum']}: inputs {ins}; outputs {outs}; {p}.{note} */")
        args = wrapper_args(op)
        line = f"NNP_API nnp_status nnp_{op['name']}(" + ", ".join(args) + ");"
        o.append(wrap_c(line))
    o.append("\n#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n")
    o.append("#endif /* NNPLUG_OP_WRAPPERS_H_ */")
    return "\n".join(o) + "\n"


def wrap_c(line, width=100):
    if len(line) <= width:
        return line
    head, _, rest = line.partition("(")
    parts = rest.split(", ")
    out, cur = [], head + "("
    indent = " " * 4
    for i, p in enumerate(parts):
        piece = p + ("" if i == len(parts) - 1 else ",")
        if len(cur) + len(piece) + 1 > width and cur.strip():
            out.append(cur.rstrip())
            cur = indent + piece + " "
        else:
            cur += piece + " "
    out.append(cur.rstrip())
    return "\n".join(out)


# ------------------------------------------------------------- libnnplug op table --
def cxx_check(f, enums):
    kind, _, arg = f["check"].partition(":")
    lo = hi = 0.0
    hi_open = "false"
    if kind == "min":
        lo = float(arg)
    elif kind == "enum":
        lo, hi = enum_first_valid(enums[arg]), enums[arg]["last"]
    elif kind == "interval":
        m = re.fullmatch(r"\[([-0-9.e]+),([-0-9.e]+)([\])])", arg)
        lo, hi = float(m.group(1)), float(m.group(2))
        hi_open = "true" if m.group(3) == ")" else "false"
    enum_name = f'"{arg}"' if kind == "enum" else "nullptr"
    enum_since = f"k_enum_since_{arg}" if kind == "enum" else "nullptr"
    return kind, lo, hi, hi_open, enum_name, enum_since


def gen_op_table_inc(enums, structs, ops):
    o = [f"// op_table.inc — {BANNER_C}",
         "// Included once, by api/src/op_table.cpp (types in op_table.hpp).", ""]
    o.append("// The ABI minor that added each value of each enum, indexed by value.")
    for e in enums.values():
        o.append(f"const int32_t k_enum_since_{e['name']}[] = {{" +
                 ", ".join(str(v["since"]) for v in e["values"]) + "};")
    o.append("")
    for s in structs.values():
        n = s["name"]
        o.append(f"const param_field k_fields_{n}[] = {{")
        for f in s["fields"]:
            kind, lo, hi, hi_open, enum_name, enum_since = cxx_check(f, enums)
            o.append(f"    {{\"{f['name']}\", offsetof({n}, {f['name']}), field_type::{TYPES[f['type']][4]}, "
                     f"check::{kind + '_' if kind == 'enum' else kind}, {lo!r}, {hi!r}, {hi_open}, {enum_name}, "
                     f"{enum_since}, {f['since']}, "
                     f"{float(f['default_value'])!r}}},")
        o.append("};")
        o.append(f"const param_struct k_struct_{n} = {{\"{n}\", {size_macro(s, 0 if 0 in s['minors'] else s['minors'][0])}, "
                 f"sizeof({n}), k_fields_{n}, {len(s['fields'])}}};")
        o.append(f"static_assert(sizeof({n}) == {s['size']}, \"{n}: layout differs from the table\");")
        o.append(f"static_assert(sizeof({n}) <= k_max_params_bytes, \"{n}: larger than plugin_params holds\");")
    o.append("")
    dt = {"float": "dtype_rule::float_common", "int64": "dtype_rule::int64",
          "uint8": "dtype_rule::uint8", "same_as_input0": "dtype_rule::same_as_input0",
          "any_float": "dtype_rule::any_float", "float32": "dtype_rule::float32"}
    for op in ops:
        n = op["name"]
        for role in ("inputs", "outputs"):
            if op[role]:
                o.append(f"const tensor_desc k_{role}_{n}[] = {{" + ", ".join(
                    f"{{\"{t['name']}\", {str(t['optional']).lower()}, {dt[t['dtype']]}, "
                    f"{str(t['variadic']).lower()}, {t['since']}}}"
                    for t in op[role]) + "};")
        if op["alias_pairs"]:
            o.append(f"const alias_pair k_alias_{n}[] = {{" + ", ".join(
                f"{{{a}, {b}}}" for a, b in op["alias_pairs"]) + "};")
    o.append("")
    o.append("// Hand-written shape rules, one per op (validate_shapes_<family>.cpp).")
    for op in ops:
        o.append(f"void shapes_{op['name']}(call& c, const void* params);")
    o.append("")
    o.append("const op_desc k_ops[] = {")
    for op in ops:
        n = op["name"]
        st = f"&k_struct_{op['params']}" if op["params"] else "nullptr"
        ins = f"k_inputs_{n}" if op["inputs"] else "nullptr"
        al = f"k_alias_{n}" if op["alias_pairs"] else "nullptr"
        o.append(f"    {{{op['enum']}, \"{n}\", {op['since']}, {st}, {str(op['params_optional']).lower()}, "
                 f"{len(op['inputs'])}, {ins}, {len(op['outputs'])}, k_outputs_{n}, "
                 f"{len(op['alias_pairs'])}, {al}, {str(op['allow_strides']).lower()}, "
                 f"{str(op['infer']).lower()}, {str(op['variadic_inputs']).lower()}, "
                 f"{str(op['variadic_outputs']).lower()}, {str(op['collective']).lower()}, "
                 f"shapes_{n}}},")
    o.append("};")
    o.append(f"static_assert(sizeof(k_ops) / sizeof(k_ops[0]) == NNP_OP_KIND_COUNT, \"one row per kind\");")
    return "\n".join(o) + "\n"


def wrapper_array(o, key, ts):
    """Declares the tensor array `key` of a wrapper and returns the count expression. A variadic
    tensor that is the whole list is passed through; after fixed tensors it is copied into a
    local array of NNP_MAX_VARIADIC slots (a longer list passes its true count, which
    nnp_op_execute refuses before reading any tensor)."""
    fixed = [t["name"] for t in ts if not t["variadic"]]
    var = [t["name"] for t in ts if t["variadic"]]
    if not var:
        o.append(f"  const DLTensor* {key}[] = {{{', '.join(fixed)}}};")
        return str(len(fixed)), key
    v = var[0]
    if not fixed:
        return f"n_{v}", v
    o.append(f"  const DLTensor* {key}[{len(fixed)} + NNP_MAX_VARIADIC] = {{{', '.join(fixed)}}};")
    o.append(f"  for (size_t i = 0; {v} != nullptr && i < n_{v} && i < NNP_MAX_VARIADIC; ++i)")
    o.append(f"    {key}[{len(fixed)} + i] = {v}[i];")
    return f"{len(fixed)} + n_{v}", key


def gen_wrappers_inc(ops):
    o = [f"// op_wrappers.inc — {BANNER_C}",
         "// The typed wrappers of nnplug_op_wrappers.h; included by api/src/ops.cpp.", ""]
    for op in ops:
        args = wrapper_args(op)
        o.append(wrap_c("NNP_API nnp_status nnp_" + op["name"] + "(" + ", ".join(args) + ") {"))
        p = "nullptr" if (op["params_optional"] or not op["params"]) else "params"
        if wrapper_tensors(op, "inputs"):
            n_in, in_arr = wrapper_array(o, "in", wrapper_tensors(op, "inputs"))
        else:
            n_in, in_arr = "0", "nullptr"
        n_out, out_arr = wrapper_array(o, "out", wrapper_tensors(op, "outputs"))
        o.append(f"  return nnp_op_execute(stream, {op['enum']}, {p}, {n_in}, {in_arr}, {n_out}, "
                 f"{out_arr});")
        o.append("}\n")
    return "\n".join(o)


# --------------------------------------------------------------------------- tests --
def gen_layout_pins(enums, structs, ops):
    o = [f"/* op_layout_pins.inc — {BANNER_C}",
         " * Included by api/tests/layout_c11.c: the offsets the table's layout rules give (LP64),",
         " * confirmed by the C compiler, and every enumerator's value. */"]
    for s in structs.values():
        o.append(f"NNP_PIN_SIZE({s['name']}, {s['size']});")
        for f in s["fields"]:
            o.append(f"NNP_PIN({s['name']}, {f['name']}, {f['offset']});")
        for m in s["minors"]:
            lf = last_field_of(s, m)
            o.append(f"NNP_PIN_VALUE({size_macro(s, m)}, {lf['offset'] + lf['size']});")
        o.append(f"NNP_PIN_VALUE({size_macro(s)}, {s['size']});")
    for op in ops:
        o.append(f"NNP_PIN_VALUE({op['enum']}, {op['value']});")
    o.append(f"NNP_PIN_VALUE(NNP_OP_KIND_COUNT, {len(ops)});")
    for e in enums.values():
        for v in e["values"]:
            o.append(f"NNP_PIN_VALUE({e['prefix']}{v['name']}, {v['value']});")
        o.append(f"NNP_PIN_SIZE({e['name']}, 4);")
    o.append("NNP_PIN_SIZE(nnp_op_kind, 4);")
    return "\n".join(o) + "\n"


def gen_symbols(ops):
    o = [f"/* op_wrapper_symbols.inc — {BANNER_C}",
         " * Every typed wrapper of nnplug_op_wrappers.h, for api/tests/api_c99.c. */"]
    for op in ops:
        o.append(f"(any_fn)nnp_{op['name']},")
    return "\n".join(o) + "\n"


def gen_abi_dump(enums, structs, ops):
    o = [f"/* op_abi_dump.inc — {BANNER_C}",
         " * The op structs and enums for api/python/tests/abi_dump.c (S/F/V macros there). */",
         "#define NNP_DUMP_OP_STRUCTS \\"]
    for s in structs.values():
        o.append(f"  S({s['name']}); \\")
        o.append(f"  F({s['name']}, struct_size); \\")
        for f in s["fields"]:
            o.append(f"  F({s['name']}, {f['name']}); \\")
        o.append("  struct_end(); \\")
    o.append("  /* end */")
    o.append("#define NNP_DUMP_OP_ENUMS \\")
    o.append("  enum_begin(\"nnp_op_kind\"); \\")
    o.append("  V(NNP_OP_UNDEFINED); \\")
    for op in ops:
        o.append(f"  V({op['enum']}); \\")
    o.append("  enum_end(); \\")
    for e in enums.values():
        o.append(f"  enum_begin(\"{e['name']}\"); \\")
        for v in e["values"]:
            o.append(f"  V({e['prefix']}{v['name']}); \\")
        o.append("  enum_end(); \\")
    o.append("  /* end */")
    return "\n".join(o) + "\n"


def bad_values(f, enums):
    """(value, why) pairs that the field's check must reject."""
    kind, _, arg = f["check"].partition(":")
    nan = "std::numeric_limits<double>::quiet_NaN()"
    inf = "std::numeric_limits<double>::infinity()"
    if kind == "flag":
        return [("2", "2"), ("-1", "-1")]
    if kind == "min":
        return [(str(int(arg) - 1), str(int(arg) - 1))]
    if kind == "enum":
        e = enums[arg]
        below = [("0", "UNDEFINED")] if enum_first_valid(e) == 1 else [("-1", "below 0")]
        return below + [(str(e["last"] + 1), "past the last value")]
    if kind == "finite":
        return [(nan, "NaN"), (inf, "inf")]
    if kind == "positive":
        return [("0.0", "0"), (nan, "NaN")]
    if kind == "nonnegative":
        return [("-1.0", "-1"), (nan, "NaN")]
    if kind == "interval":
        m = re.fullmatch(r"\[([-0-9.e]+),([-0-9.e]+)([\])])", arg)
        lo, hi = float(m.group(1)), float(m.group(2))
        hi_bad = hi if m.group(3) == ")" else hi + 0.5
        return [(repr(lo - 0.5), f"{lo - 0.5}"), (repr(hi_bad), f"{hi_bad}")]
    if kind == "reserved":
        return [("1", "1")]
    return []  # comm: refused values (NULL, stale) are tested with communicators


def gen_conformance_cases(enums, structs, ops):
    o = [f"// op_cases.inc — {BANNER_C}",
         "// One small valid call per op kind, the params values each kind's checks must reject,",
         "// and each kind's facts for the error tests and the fuzzer. Included by",
         "// testing/op_table_cases.hpp (types defined there).", ""]
    o.append("inline std::vector<table_example> table_examples() {")
    o.append("  std::vector<table_example> v;")
    letters = {"float": "'f'", "int64": "'l'", "uint8": "'u'", "same_as_input0": "'f'",
               "any_float": "'f'", "float32": "'F'"}
    for op in ops:
        if op["collective"]:
            continue  # needs a communicator: api/tests/test_comm.cpp
        o.append("  {")
        o.append(f"    table_example e{{{op['enum']}, \"{op['name']}\", {op['since']}, "
                 f"{str(op['infer']).lower()}, {{}}, {{}}, {{}}}};")
        if op["params"]:
            s = structs[op["params"]]
            o.append(f"    {s['name']} p{{}};")
            o.append("    p.struct_size = sizeof p;")
            for f in s["fields"]:
                val = op["example"]["params"].get(f["name"], f["default_value"])
                if f["type"].endswith("[NNP_MAX_DIMS]"):
                    if f["default"] == "identity" and f["name"] not in op["example"]["params"]:
                        val = list(range(len(op["example"]["inputs"][0])))
                    vals = val if isinstance(val, list) else []
                    for i, x in enumerate(vals):
                        o.append(f"    p.{f['name']}[{i}] = {x};")
                else:
                    o.append(f"    p.{f['name']} = {float(val)!r};" if f["type"] == "double"
                             else f"    p.{f['name']} = {int(val)};")
            o.append("    e.set_params(p);")
        for role, key in (("inputs", "in"), ("outputs", "out")):
            for t, shape in zip(op[role], op["example"][role]):
                for sh in (shape if t["variadic"] else [shape]):
                    o.append(f"    e.{key}.push_back({{{{{', '.join(map(str, sh))}}}, "
                             f"{letters[t['dtype']]}, {str(t['optional']).lower()}}});")
        o.append("    v.push_back(std::move(e));")
        o.append("  }")
    o.append("  return v;")
    o.append("}\n")
    o.append("inline std::vector<table_field_case> table_field_cases() {")
    o.append("  return {")
    for op in ops:
        if not op["params"] or op["collective"]:
            continue
        s = structs[op["params"]]
        for f in s["fields"]:
            for val, why in bad_values(f, enums):
                o.append(f"      {{{op['enum']}, \"{op['name']}\", \"{f['name']}\", "
                         f"offsetof({s['name']}, {f['name']}), '{TYPES[f['type']][4]}', {val}, \"{why}\"}},")
    o.append("  };")
    o.append("}\n")
    o.append("inline const std::vector<table_op>& table_ops() {")
    o.append("  static const std::vector<table_op> v = {")
    for op in ops:
        s = structs[op["params"]] if op["params"] else None
        inplace = sum(1 << k for k, t in enumerate(op["outputs"]) if t["inplace"])
        zeros = ", ".join(
            f'{{"{n}", offsetof({s["name"]}, {field})' + (f" + {extra}" if extra else "") +
            f", {size}}}" for n, field, extra, size in op_zero_fields(op, structs))
        doubles = ", ".join(f"offsetof({s['name']}, {f['name']})" for f in s["fields"]
                            if f["type"] == "double") if s else ""
        o.append(f"      {{{op['enum']}, \"{op['name']}\", {str(op['collective']).lower()}, "
                 f"{str(op['exact']).lower()}, {str(op['heavy']).lower()}, {inplace:#x}u, "
                 f"{str(zeroed_params_invalid(op, structs, enums)).lower()}, {{{zeros}}}, "
                 f"{{{doubles}}}}},")
    o.append("  };")
    o.append("  return v;")
    o.append("}")
    return "\n".join(o) + "\n"


# ------------------------------------------------------------------------- plugin kit --
def gen_kit_op_kinds(ops):
    o = ["// op_kinds.hpp — GENERATED from api/ops/ops.toml by api/ops/gen_ops.py: edit the",
         "// table, not this file. Every op kind of nnplug_ops.h with its name (as",
         "// nnp_op_kind_name) and whether it is a collective, for plugins' messages; header-only,",
         "// as the rest of the plugin kit.",
         "#pragma once", "",
         "#include <nnplug/nnplug_ops.h>", "",
         "#include <cstdint>", "",
         "namespace nnp {",
         "namespace kit {", "",
         "struct op_kind_info {",
         "  int32_t kind;      // nnp_op_kind",
         "  const char* name;  // lower-case, as nnp_op_kind_name",
         "  bool collective;   // takes a communicator: run by a communication plugin",
         "};", "",
         "inline constexpr op_kind_info k_op_kinds[] = {"]
    for op in ops:
        o.append(f"    {{{op['enum']}, \"{op['name']}\", {str(op['collective']).lower()}}},")
    o += ["};", "",
          "// The entry of a kind, or nullptr for a kind this header does not know.",
          "inline const op_kind_info* find_op_kind(int32_t kind) {",
          "  for (const op_kind_info& k : k_op_kinds)",
          "    if (k.kind == kind) return &k;",
          "  return nullptr;",
          "}", "",
          "}  // namespace kit",
          "}  // namespace nnp"]
    return "\n".join(o) + "\n"


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
# against k and take PyTorch's short forms (nnplug._call._spatial_list).
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
            kind, ann = "enum", f"Union[str, int]"
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
                  "any_float": "any float dtype", "float32": "float32"}[t["dtype"]]
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


# ---------------------------------------------------------------------------- docs --
DOC_BEGIN = "<!-- BEGIN GENERATED op table (api/ops/gen_ops.py): edit api/ops/ops.toml -->"
DOC_END = "<!-- END GENERATED op table -->"


def gen_docs_table(structs, ops, enums):
    o = [DOC_BEGIN, "",
         "| value | kind | inputs | outputs | params | since |",
         "|---:|---|---|---|---|---|"]
    for op in ops:
        def tl(ts):
            def note(t):
                n = ([] if t["dtype"] == "float" else [t["dtype"]]) + \
                    ([f"ABI 1.{t['since']}"] if added_later(op, t) else [])
                return f" ({'; '.join(n)})" if n else ""
            return ", ".join(("*" + t["name"] + "*?" if t["optional"] else t["name"]) +
                             (f"[1..{MAX_VARIADIC}]" if t["variadic"] else "") + note(t)
                             for t in ts) or "—"
        p = f"`{op['params']}`" if op["params"] else "—"
        if op["params_optional"]:
            p += " or NULL"
        o.append(f"| {op['value']} | `{op['enum']}` | {tl(op['inputs'])} | {tl(op['outputs'])} | "
                 f"{p} | 1.{op['since']} |")
    o += ["", "*x*? = optional (NULL allowed). Tensors without a dtype note share the call's "
          f"float dtype. name[1..{MAX_VARIADIC}] = variadic: 1 to NNP_MAX_VARIADIC = {MAX_VARIADIC} "
          "tensors. (ABI 1.m) on a tensor = added to the op in ABI 1.m: optional, never passed to a "
          "plugin built for an older minor, and left out of the typed C wrapper (pass it through "
          "nnp_op_execute).", "", "Params fields (checked by libnnplug before any backend runs; "
          "`shape` = checked by the op's shape rule):", "",
          "| struct | field | type | check | default | since |", "|---|---|---|---|---|---|"]
    for s in structs.values():
        for f in s["fields"]:
            o.append(f"| `{s['name']}` | `{f['name']}` | {f['type']} | {f['check']} | "
                     f"{f['default']} | 1.{f['since']} |")
    o += ["", DOC_END]
    return "\n".join(o)


def splice_docs(path, table):
    with open(path) as f:
        text = f.read()
    if DOC_BEGIN in text:
        pre = text.split(DOC_BEGIN)[0]
        post = text.split(DOC_END, 1)[1]
        return pre + table + post
    marker = "## Conventions (every op)"
    return text.replace(marker, "## The op table\n\n" + table + "\n\n" + marker, 1)


# ---------------------------------------------------------------------------- main --
def outputs(root):
    spec, enums, structs, ops, minor = load(root)
    files = {
        "api/include/nnplug/nnplug_ops.h": gen_ops_h(spec, enums, structs, ops, minor),
        "api/include/nnplug/nnplug_op_wrappers.h": gen_wrappers_h(ops),
        "api/src/generated/op_table.inc": gen_op_table_inc(enums, structs, ops),
        "api/src/generated/op_wrappers.inc": gen_wrappers_inc(ops),
        "api/tests/generated/op_layout_pins.inc": gen_layout_pins(enums, structs, ops),
        "api/tests/generated/op_wrapper_symbols.inc": gen_symbols(ops),
        "api/python/tests/generated/op_abi_dump.inc": gen_abi_dump(enums, structs, ops),
        "testing/generated/op_cases.inc": gen_conformance_cases(enums, structs, ops),
        "plugins/kit/include/nnplug/kit/op_kinds.hpp": gen_kit_op_kinds(ops),
        "api/python/nnplug/_ops_generated.py": gen_python(spec, enums, structs, ops, minor),
        "api/python/nnplug/ops.py": gen_python_ops(enums, structs, ops),
    }
    docs = os.path.join(root, "docs/ops.md")
    files["docs/ops.md"] = splice_docs(docs, gen_docs_table(structs, ops, enums))
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    try:
        files = outputs(root)
    except SpecError as e:
        print(f"api/ops/ops.toml: {e}", file=sys.stderr)
        return 2
    stale = []
    for rel, text in files.items():
        path = os.path.join(root, rel)
        old = open(path).read() if os.path.exists(path) else None
        if old == text:
            continue
        if a.check:
            stale.append(rel)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
            print(f"gen_ops: wrote {rel}")
    if stale:
        print("gen_ops: these files differ from what api/ops/ops.toml gives (stale or edited by "
              "hand); run /usr/bin/python3 api/ops/gen_ops.py and commit:", file=sys.stderr)
        for rel in stale:
            print(f"  {rel}", file=sys.stderr)
        return 1
    if a.check:
        print(f"gen_ops: all {len(files)} derived files match api/ops/ops.toml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
