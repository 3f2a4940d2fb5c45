"""opgen — the parts of the op-table generator api/ops/gen_ops.py (its entry point):

  table.py        loads api/ops/ops.toml, fills in its defaults and enforces its rules
                  (SpecError), and answers the questions several derived files ask
  emit_c.py       nnplug_ops.h, nnplug_op_wrappers.h, op_table.inc, op_wrappers.inc and the
                  plugin kit's op_kinds.hpp
  emit_tests.py   the layout pins, wrapper symbols, ABI dump and conformance case tables
  emit_python.py  nnplug/_ops_generated.py and nnplug/ops.py
  emit_docs.py    the generated tables of docs/ops.md

Standard library only (Python >= 3.11, for tomllib).
"""
