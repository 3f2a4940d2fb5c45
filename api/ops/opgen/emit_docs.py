"""opgen.emit_docs — the generated tables of docs/ops.md (ops, then params fields), spliced
between its GENERATED markers."""
from .table import MAX_VARIADIC, added_later


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
                n = ([] if t["dtype"] == "float" else
                     [t["dtype"] + (f" since 1.{t['dtype_since']}" if t["dtype_since"] else "")]) + \
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
          "float dtype; (accumulation) = float32 in a float16/bfloat16 call, else the call's "
          "float dtype (from the ABI minor shown: before it, such a tensor had the call's dtype). "
          f"name[1..{MAX_VARIADIC}] = variadic: 1 to NNP_MAX_VARIADIC = {MAX_VARIADIC} "
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
