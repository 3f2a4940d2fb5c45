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

This file is the entry point (and the module api/ops/test_gen_ops.py imports); the work lives
in the package opgen/ next to it: opgen/table.py loads and checks the table, and
opgen/emit_c.py, emit_tests.py, emit_python.py and emit_docs.py write the derived files
(outputs() below maps each derived file to the function that writes it).
"""
import argparse
import os
import sys

# opgen/ sits next to this file: importable whatever the current directory or the caller's
# sys.path.
HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from opgen.emit_c import (gen_kit_op_kinds, gen_op_table_inc, gen_ops_h,  # noqa: E402
                          gen_wrappers_h, gen_wrappers_inc)
from opgen.emit_docs import gen_docs_table, splice_docs  # noqa: E402
from opgen.emit_python import gen_python, gen_python_ops  # noqa: E402
from opgen.emit_tests import (gen_abi_dump, gen_conformance_cases, gen_layout_pins,  # noqa: E402
                              gen_symbols)
from opgen.table import SpecError, load  # noqa: E402


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
