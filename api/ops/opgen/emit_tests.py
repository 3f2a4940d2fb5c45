"""opgen.emit_tests — the test tables derived from the op table: the layout pins of
api/tests/layout_c11.c, the wrapper symbols of api/tests/api_c99.c, the structs and enums of
the Python ABI mirror test (op_abi_dump.inc), and the conformance cases
(testing/generated/op_cases.inc: examples, refused params values, each op's facts)."""
import re

from .table import (BANNER_C, TYPES, enum_first_valid, last_field_of, op_zero_fields, size_macro,
                    zeroed_params_invalid)


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
               "any_float": "'f'", "float32": "'F'", "accumulation": "'a'"}
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
                             f"{letters[t['dtype']]}, {str(t['optional']).lower()}, "
                             f"{t['dtype_since']}}});")
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
