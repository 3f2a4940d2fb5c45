#!/usr/bin/env python3
"""Tests of gen_ops.py (CTest ops_generator_checks): on a copy of the table and its derived
files, --check passes when nothing changed, names a derived file that was edited by hand or
left stale by a table edit, the layout rules refuse padding and out-of-order fields, the
variadic rules refuse a variadic tensor that is not last, is optional or has a one-shape
example, the rules of tensors added to an op later (`since`) refuse one newer than the table's
minor, a required one and one before older tensors, the accumulation rule's per-tensor minor
(`dtype_since`) refuses one without the rule, one missing and one newer than the table, and
variadic tensors, int64[NNP_MAX_DIMS]
fields and later tensors reach the C header, wrappers, layout pins, libnnplug's rows, Python
and the docs, and each op's facts (collective, exact, heavy, in-place outputs, zeroed params,
fields that must be 0, double fields) reach libnnplug, the plugin kit and table_ops()."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gen_ops  # noqa: E402


def run(root, *args):
    return subprocess.run([sys.executable, os.path.join(HERE, "gen_ops.py"), "--root", root,
                           *args], capture_output=True, text=True)


def copy_tree(dst):
    for rel in ["api/ops/ops.toml", *gen_ops.outputs(ROOT)]:
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy(os.path.join(ROOT, rel), os.path.join(dst, rel))


def edit(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text, (path, old)
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))


def main():
    failures = []

    def expect(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    def expect_refused_lines(cases):
        """Each case (what, prefix, line, message) replaces the ops.toml line that starts with
        prefix by line, in a fresh copy: --check must refuse it (status 2) with message."""
        for what, prefix, line, message in cases:
            with tempfile.TemporaryDirectory() as tmp:
                copy_tree(tmp)
                toml = os.path.join(tmp, "api/ops/ops.toml")
                with open(toml) as f:
                    text = f.read()
                edit(toml, prefix + text.split(prefix, 1)[1].split("\n", 1)[0], line)
                r = run(tmp, "--check")
                expect(r.returncode == 2 and message in r.stderr, what)

    with tempfile.TemporaryDirectory() as tmp:
        copy_tree(tmp)
        r = run(tmp, "--check")
        expect(r.returncode == 0, "an unchanged copy passes --check")

        header = os.path.join(tmp, "api/include/nnplug/nnplug_ops.h")
        edit(header, "NNP_OP_GEMM = 1,", "NNP_OP_GEMM = 2,")
        r = run(tmp, "--check")
        expect(r.returncode == 1 and "nnplug_ops.h" in r.stderr,
               "a hand edit of nnplug_ops.h fails --check, naming the file")
        run(tmp)  # regenerate
        expect(run(tmp, "--check").returncode == 0, "regenerating repairs it")

        toml = os.path.join(tmp, "api/ops/ops.toml")
        edit(toml, 'default = 1e-5, doc = "> 0', 'default = 1e-3, doc = "> 0')
        r = run(tmp, "--check")
        expect(r.returncode == 1 and "_ops_generated.py" in r.stderr,
               "a table edit leaves the derived files stale until regenerated")

    with tempfile.TemporaryDirectory() as tmp:
        copy_tree(tmp)
        toml = os.path.join(tmp, "api/ops/ops.toml")
        # nnp_conv2d_params without its reserved0 (anchored on its last real field, so that
        # structs added after it do not move the anchor)
        groups = ('  { name = "groups", type = "int32", check = "min:0", default = 1, '
                  'doc = "0 means 1" },\n')
        edit(toml, groups + '  { name = "reserved0", type = "int32", check = "reserved", '
             'default = 0, since = 1 },\n]\n', groups + ']\n')
        r = run(tmp, "--check")
        expect(r.returncode == 2 and "tail padding" in r.stderr,
               "a struct with tail padding is refused")

    with tempfile.TemporaryDirectory() as tmp:
        copy_tree(tmp)
        toml = os.path.join(tmp, "api/ops/ops.toml")
        edit(toml, '{ name = "trans_a", type = "int32", check = "flag", default = 0,',
             '{ name = "trans_a", type = "int32", check = "flag", default = 0, since = 1,')
        r = run(tmp, "--check")
        expect(r.returncode == 2 and "appended" in r.stderr,
               "a field of a later minor before older fields is refused")

    # Variadic tensors: only the last of a list, neither optional nor aliased, and the example
    # gives a list of shapes for them. Each case replaces one line of concat's row.
    concat_in = 'inputs = [ { name = "xs", variadic = true, dtype = "same_as_input0"'
    concat_ex = "example = { params = { axis = 1 }, inputs = [[[2, 3], [2, 1]]]"
    bad_lines = [
        ("a variadic tensor before the last one is refused", concat_in,
         'inputs = [ { name = "xs", variadic = true }, { name = "z" } ]', "only the last"),
        ("an optional variadic tensor is refused", concat_in,
         'inputs = [ { name = "xs", variadic = true, optional = true } ]', "neither optional"),
        ("a variadic example needs a list of shapes", concat_ex,
         "example = { inputs = [[2, 3]], outputs = [[2, 3]] }", "list of 1..MAX_VARIADIC"),
    ]
    expect_refused_lines(bad_lines)

    # Tensors added to an op after it (ABI 1.4: adam_update's step and lr): optional, after the
    # op's older tensors, no newer than the table. Each case replaces one line of adam's row.
    adam_step = '  { name = "step", optional = true, dtype = "float32", since = 4,'
    adam_in = '  { name = "grad" },'
    bad_lines = [
        ("a tensor newer than the table's minor is refused", adam_step,
         '  { name = "step", optional = true, dtype = "float32", since = 99 },', "> ABI minor"),
        ("a tensor added after its op must be optional", adam_step,
         '  { name = "step", dtype = "float32", since = 4 },', "must be optional"),
        ("a tensor added later comes after the op's older tensors", adam_in,
         '  { name = "extra", optional = true, since = 4 }, { name = "grad" },', "appended"),
        ("an unknown dtype rule is refused", adam_step,
         '  { name = "step", optional = true, dtype = "float8", since = 4 },', "unknown dtype"),
    ]
    expect_refused_lines(bad_lines)

    # The accumulation rule's minor, per tensor (dtype_since): with the rule and only with it,
    # no newer than the table. Each case replaces the first line that declares a "mean" under
    # the rule (batch norm inference's).
    mean_line = '  { name = "mean", dtype = "accumulation", dtype_since = 10,'
    bad_lines = [
        ("an accumulation tensor without dtype_since is refused", mean_line,
         '  { name = "mean", dtype = "accumulation" },', "dtype_since goes with"),
        ("dtype_since on another rule is refused", mean_line,
         '  { name = "mean", dtype_since = 10 },', "dtype_since goes with"),
        ("a dtype_since newer than the table's minor is refused", mean_line,
         '  { name = "mean", dtype = "accumulation", dtype_since = 99 },', "> ABI minor"),
    ]
    expect_refused_lines(bad_lines)
    kit = gen_ops.outputs(ROOT)["plugins/kit/include/nnplug/kit/op_kinds.hpp"]
    expect("{NNP_OP_LAYER_NORM_BACKWARD, false, 3, 10},  // mean" in kit and
           "{NNP_OP_ATTENTION_FORWARD, true, 1, 9},  // softmax_lse" in kit,
           "the plugin kit lists the accumulation tensors with their minors")
    table_inc = gen_ops.outputs(ROOT)["api/src/generated/op_table.inc"]
    expect('{"inv_std", true, dtype_rule::accumulation, false, 0, 10}' in table_inc,
           "libnnplug's rows carry each tensor's dtype_since")

    # What the generator derives for a variadic op and an int64[NNP_MAX_DIMS] field.
    files = gen_ops.outputs(ROOT)
    wrappers = files["api/include/nnplug/nnplug_op_wrappers.h"]
    expect("size_t n_xs, const DLTensor* const* xs" in wrappers.replace("\n    ", " "),
           "a variadic input becomes (size_t n_xs, const DLTensor* const* xs) in the C wrapper")
    expect("#define NNP_MAX_VARIADIC 64" in files["api/include/nnplug/nnplug_ops.h"],
           "nnplug_ops.h defines NNP_MAX_VARIADIC")
    expect("int64_t starts[NNP_MAX_DIMS];" in files["api/include/nnplug/nnplug_ops.h"],
           "an int64[NNP_MAX_DIMS] field is declared as int64_t name[NNP_MAX_DIMS]")
    expect("NNP_PIN(nnp_slice_params, ends, 88);" in files["api/tests/generated/op_layout_pins.inc"],
           "an int64[NNP_MAX_DIMS] field is pinned at its offset")
    py = files["api/python/nnplug/_ops_generated.py"]
    expect("('xs', False, 'same_as_input0', True)" in py and "c_int64 * MAX_DIMS" in py,
           "Python's op signatures mark variadic tensors; int64 arrays are c_int64 * MAX_DIMS")
    table = files["api/src/generated/op_table.inc"]
    expect("{\"ys\", false, dtype_rule::same_as_input0, true, 0, 0}" in table,
           "libnnplug's row marks the variadic output")

    # ... and for tensors added later: in libnnplug's row with their minor, out of the C
    # wrapper (whose signature cannot change), in the docs with their minor, and in Python as
    # keywords (adam's step and lr share the keyword of their params field).
    expect("{\"step\", true, dtype_rule::float32, false, 4, 0}" in table and
           "{\"lr\", true, dtype_rule::float_common, false, 4, 0}" in table,
           "libnnplug's row carries a later tensor's minor and the float32 rule")
    adam_wrapper = wrappers.split("nnp_status nnp_adam_update(", 1)[1].split(";", 1)[0]
    expect("step" not in adam_wrapper and "lr" not in adam_wrapper and "Added later" in wrappers,
           "the C wrapper keeps the op's original tensors")
    header = files["api/include/nnplug/nnplug_ops.h"]
    expect("[1] step (optional):" in header and "new in ABI 1.4" in header,
           "nnplug_ops.h lists a later tensor with its minor")
    expect("*step*? (float32; ABI 1.4)" in files["docs/ops.md"],
           "docs/ops.md marks a later tensor's dtype rule and minor")
    ops_py = files["api/python/nnplug/ops.py"]
    expect("step: Union[int, TensorLike] = 1," in ops_py and
           "step: Optional[TensorLike] = None," in ops_py,
           "Python: a tensor named as a params field shares its keyword; others are keywords")

    # Each op's facts for the error tests and the fuzzer (conformance table_ops()), and the
    # collectives for libnnplug and the plugin kit: all from the table.
    cases = files["testing/generated/op_cases.inc"]

    def facts(name):
        rows = cases.split("table_ops()", 1)[1]
        return rows.split(f'"{name}", ', 1)[1].split("\n", 1)[0]
    expect(facts("adam_update").startswith(
        'false, false, false, 0x7u, true, {{"reserved0", offsetof(nnp_adam_params, reserved0), 4}}'),
           "table_ops: adam's in-place outputs, zeroed params refused (step >= 1), reserved0")
    expect(facts("unary_forward").startswith("false, true, false, 0x0u, true, "),
           "table_ops: unary_forward is exact and its zeroed params are refused (UNDEFINED op)")
    expect('{"perm[7]", offsetof(nnp_transpose_params, perm) + 28, 4}' in facts("transpose"),
           "table_ops: an unused_zero array's last entry must be 0")
    expect(facts("conv_backward_bias").startswith(
        'false, false, false, 0x0u, false, {{"reserved1", offsetof(nnp_conv_params, reserved1), 4}}, '),
           "table_ops: optional params (ignored by the shape rule) have no unused_zero entries, "
           "only their reserved fields")
    expect(facts("gemm").endswith("{offsetof(nnp_gemm_params, alpha), "
                                  "offsetof(nnp_gemm_params, beta)}},")
           and facts("gemm").startswith("false, false, true, "),
           "table_ops: gemm is heavy, with its double fields")
    expect(table.split('{NNP_OP_ALL_GATHER, "all_gather"', 1)[1].split("\n", 1)[0]
           .endswith(", true, shapes_all_gather},") and
           table.split('{NNP_OP_GEMM, "gemm"', 1)[1].split("\n", 1)[0]
           .endswith(", false, shapes_gemm},"),
           "libnnplug's rows mark the collectives")
    kit = files["plugins/kit/include/nnplug/kit/op_kinds.hpp"]
    expect('{NNP_OP_BROADCAST, "broadcast", true},' in kit and
           '{NNP_OP_GEMM, "gemm", false},' in kit,
           "the plugin kit's op kinds name every kind and mark the collectives")
    bad_lines = [
        ("unused_zero on a field that is not an array is refused",
         '  { name = "axis", type = "int32", check = "shape", default = -1, doc = "in [-rank, '
         'rank); ONNX default -1" },',
         '  { name = "axis", type = "int32", check = "shape", unused_zero = true, default = -1 },',
         "unused_zero is for arrays"),
        ("an op's exact is true or false", 'name = "clip"\nexact = true',
         'name = "clip"\nexact = 1', "true or false"),
    ]
    for what, old_text, new_text, message in bad_lines:
        with tempfile.TemporaryDirectory() as tmp:
            copy_tree(tmp)
            edit(os.path.join(tmp, "api/ops/ops.toml"), old_text, new_text)
            r = run(tmp, "--check")
            expect(r.returncode == 2 and message in r.stderr, what)

    print(f"test_gen_ops: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
