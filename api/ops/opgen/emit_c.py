"""opgen.emit_c — the C and C++ files derived from the op table: the public headers
nnplug_ops.h and nnplug_op_wrappers.h, libnnplug's op table (op_table.inc) and wrapper
definitions (op_wrappers.inc), and the plugin kit's op_kinds.hpp."""
import re

from .table import (BANNER_C, MAX_VARIADIC, TYPES, added_later, check_text, enum_first_valid,
                    last_field_of, size_macro)

# type -> the size expression the header's *_STRUCT_SIZE_1_<m> macros use
C_SIZEOF = {"int32": "sizeof(int32_t)", "int64": "sizeof(int64_t)", "uint64": "sizeof(uint64_t)",
            "double": "sizeof(double)", "int32[NNP_MAX_DIMS]": "sizeof(int32_t) * NNP_MAX_DIMS",
            "int64[NNP_MAX_DIMS]": "sizeof(int64_t) * NNP_MAX_DIMS", "comm": "sizeof(nnp_comm*)"}


def comment_block(text, indent=""):
    lines = text.strip("\n").split("\n")
    out = [indent + "/**"]
    out += [(indent + " * " + l).rstrip() for l in lines]
    out.append(indent + " */")
    return "\n".join(out)


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
                                                "float32": "float32",
                                                "accumulation": "float32 in a float16/bfloat16 "
                                                f"call (ABI 1.{t['dtype_since']}), else the call's "
                                                "float dtype"}[t["dtype"]]
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
          "any_float": "dtype_rule::any_float", "float32": "dtype_rule::float32",
          "accumulation": "dtype_rule::accumulation"}
    for op in ops:
        n = op["name"]
        for role in ("inputs", "outputs"):
            if op[role]:
                o.append(f"const tensor_desc k_{role}_{n}[] = {{" + ", ".join(
                    f"{{\"{t['name']}\", {str(t['optional']).lower()}, {dt[t['dtype']]}, "
                    f"{str(t['variadic']).lower()}, {t['since']}, {t['dtype_since']}}}"
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
    o.append("static_assert(sizeof(k_ops) / sizeof(k_ops[0]) == NNP_OP_KIND_COUNT, \"one row per kind\");")
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

# ------------------------------------------------------------------------- plugin kit --
def gen_kit_op_kinds(ops):
    o = ["// op_kinds.hpp — GENERATED from api/ops/ops.toml by api/ops/gen_ops.py: edit the",
         "// table, not this file. Every op kind of nnplug_ops.h with its name (as",
         "// nnp_op_kind_name) and whether it is a collective, for plugins' messages, and the",
         "// tensors under the `accumulation` dtype rule; header-only, as the rest of the plugin kit.",
         "#pragma once", "",
         "#include <nnplug/nnplug_ops.h>", "",
         "#include <cstddef>",
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
          "// A tensor under the `accumulation` dtype rule: float32 in a float16/bfloat16 call,",
          "// else the call's float dtype, from ABI minor `since` on (nnplug_ops.h, docs/ops.md).",
          "struct accumulation_tensor {",
          "  int32_t kind;   // nnp_op_kind",
          "  bool output;    // an output (else an input)",
          "  uint32_t index; // its index among the op's inputs or outputs",
          "  int32_t since;  // the ABI minor from which the rule holds for it",
          "};", "",
          "inline constexpr accumulation_tensor k_accumulation_tensors[] = {"]
    for op in ops:
        for role in ("inputs", "outputs"):
            for k, t in enumerate(op[role]):
                if t["dtype"] == "accumulation":
                    o.append(f"    {{{op['enum']}, {str(role == 'outputs').lower()}, {k}, "
                             f"{t['dtype_since']}}},  // {t['name']}")
    o += ["};", "",
          "// Whether input (output = false) or output `index` of `kind` is under the rule.",
          "inline bool is_accumulation_tensor(int32_t kind, bool output, size_t index) {",
          "  for (const accumulation_tensor& t : k_accumulation_tensors)",
          "    if (t.kind == kind && t.output == output && t.index == index) return true;",
          "  return false;",
          "}", "",
          "}  // namespace kit",
          "}  // namespace nnp"]
    return "\n".join(o) + "\n"
