"""opgen.table — the op table api/ops/ops.toml as the generator's model: loading it, the
defaults and checks of its rows (duplicate names, tensor rules, enum values, the params layout
rules of docs/abi.md), and the questions about it that several derived files ask (defaults,
fields that must be 0, struct size macros, the text of a field's check)."""
import os
import re
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
        # Facts for the differential fuzzer (fuzz/fuzz_op_execute.cpp, fuzz/call_desc.cpp):
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
                t.setdefault("dtype_since", 0)
                if t["inplace"] and role == "inputs":
                    raise SpecError(f"op {op['name']}: {t['name']}: only outputs are inplace")
                if t["dtype"] not in ("float", "int64", "uint8", "same_as_input0", "any_float",
                                      "float32", "accumulation"):
                    raise SpecError(f"op {op['name']}: {t['name']}: unknown dtype {t['dtype']}")
                if t["since"] > minor:
                    raise SpecError(f"op {op['name']}: {t['name']}: since {t['since']} > ABI "
                                    f"minor {minor}")
                # The accumulation rule changed the dtype of tensors that existed before it:
                # each such tensor says from which minor its rule holds (a plugin built for an
                # older minor never receives it in a 16-bit call).
                if (t["dtype"] == "accumulation") != (t["dtype_since"] > 0):
                    raise SpecError(f"op {op['name']}: {t['name']}: dtype_since goes with "
                                    "dtype = \"accumulation\", and only with it")
                if t["dtype_since"] > minor:
                    raise SpecError(f"op {op['name']}: {t['name']}: dtype_since "
                                    f"{t['dtype_since']} > ABI minor {minor}")
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


def added_later(op, t):
    """Whether tensor t was added to op after the op itself (its own `since`)."""
    return t["since"] > op["since"]
