#!/usr/bin/env python3
"""Tests of gen_ops.py (CTest ops_generator_checks): on a copy of the table and its derived
files, --check passes when nothing changed, names a derived file that was edited by hand or
left stale by a table edit, the layout rules refuse padding and out-of-order fields, the
variadic rules refuse a variadic tensor that is not last, is optional or has a one-shape
example, and variadic tensors and int64[NNP_MAX_DIMS] fields reach the C header, wrappers,
layout pins, libnnplug's rows and Python."""
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
        groups = '  { name = "groups", type = "int32", check = "min:1", default = 1 },\n'
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
    for what, prefix, line, message in bad_lines:
        with tempfile.TemporaryDirectory() as tmp:
            copy_tree(tmp)
            toml = os.path.join(tmp, "api/ops/ops.toml")
            with open(toml) as f:
                text = f.read()
            old = prefix + text.split(prefix, 1)[1].split("\n", 1)[0]
            with open(toml, "w") as f:
                f.write(text.replace(old, line, 1))
            r = run(tmp, "--check")
            expect(r.returncode == 2 and message in r.stderr, what)

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
    expect("{\"ys\", false, dtype_rule::same_as_input0, true}" in table,
           "libnnplug's row marks the variadic output")

    print(f"test_gen_ops: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
