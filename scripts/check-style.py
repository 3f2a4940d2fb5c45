#!/usr/bin/env python3
"""Checks the C and C++ style of the repository: the naming convention (.clang-tidy states it)
and the formatting (.clang-format).

The convention (the standard library's and the C ABI's, nnp_*): types (struct, class, union,
enum, type aliases) and namespaces in lower_case; functions and variables in lower_case;
constants may be kCamelCase; macros UPPER_CASE; template parameters CamelCase, and so are
the aliases that stand for one (`using T = typename decltype(tag)::type;`: T, To, From).

Three modes:
  scripts/check-style.py                  fast: the declarations of types, aliases and
                                           namespaces in every tracked C/C++/CUDA source,
                                           by pattern (what the test command runs, < 1 s)
  scripts/check-style.py --format          the same files are formatted as the root .clang-format
                                           says (clang-format --dry-run; skipped with a note
                                           when clang-format is missing)
  scripts/check-style.py --clang-tidy BUILD_DIR
                                           complete: clang-tidy's readability-identifier-naming
                                           with the root .clang-tidy over BUILD_DIR's
                                           compile_commands.json (configure with
                                           -DCMAKE_EXPORT_COMPILE_COMMANDS=ON; C++ files only,
                                           minutes on 2 cores)
Generated files (a "GENERATED" line in their first lines) are skipped: their generator's
templates follow the convention. Exit status 1 when a name breaks the rule, listing each.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIRS = ("api", "backends", "comm", "conformance", "examples", "fuzz", "geometry",
               "plugins", "testing")
EXTENSIONS = (".c", ".h", ".cpp", ".hpp", ".cu", ".cuh", ".inc")
LOWER = re.compile(r"[a-z][a-z0-9_]*\Z")
# A type alias standing for a template parameter (`using T = typename decltype(tag)::type;` in a
# dtype dispatch) is named as one: T, To, From (.clang-tidy's TypeAliasIgnoredRegexp).
TYPE_PARAMETER_ALIAS = re.compile(r"[A-Z][a-z]{0,3}\Z")

# A type declared or defined: `struct name {`, `class name final :`, `enum class name : int {`,
# `struct name;` (template parameter lists, `template <class T>`, end in `>` or `,` and do not
# match). Elaborated uses (`struct nnp_device* d`) are followed by `*`, `&` or a name: no match.
TYPE_DECL = re.compile(
    r"^\s*(?:template\s*<.*>\s*)?(?:typedef\s+)?(struct|class|union|enum(?:\s+class|\s+struct)?)"
    r"\s+(?:\[\[[^\]]*\]\]\s*)?([A-Za-z_]\w*)\s*(?:final\s*)?(?=[{:;]|$)")
ALIAS = re.compile(r"^\s*(?:template\s*<.*>\s*)?using\s+([A-Za-z_]\w*)\s*=")
NAMESPACE = re.compile(r"^\s*(?:inline\s+)?namespace\s+([A-Za-z_][\w:]*)\s*\{")


def tracked_sources():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others",
                              "--exclude-standard", "--", *SOURCE_DIRS],
                             check=True, capture_output=True, text=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the folders
        out = []
        for d in SOURCE_DIRS:
            for base, _, files in os.walk(os.path.join(ROOT, d)):
                out += [os.path.relpath(os.path.join(base, f), ROOT) for f in files]
    return sorted(f for f in set(out)
                  if f.endswith(EXTENSIONS) and os.path.isfile(os.path.join(ROOT, f)))


def is_generated(lines):
    return any("GENERATED" in line for line in lines[:8])


def check_file(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    if is_generated(lines):
        return []
    bad = []
    for n, line in enumerate(lines, 1):
        code = line.split("//", 1)[0]
        for pattern, what in ((TYPE_DECL, None), (ALIAS, "type alias"),
                              (NAMESPACE, "namespace")):
            m = pattern.match(code)
            if not m:
                continue
            kind = what or m.group(1)
            name = m.group(m.lastindex)
            if kind == "type alias" and TYPE_PARAMETER_ALIAS.match(name):
                continue
            for part in name.split("::"):
                if not LOWER.match(part):
                    bad.append(f"{rel}:{n}: {kind} '{part}' is not lower_case")
    return bad


def run_clang_tidy(build_dir):
    db = os.path.join(build_dir, "compile_commands.json")
    if not os.path.exists(db):
        sys.exit(f"check-style: {db} not found (configure with "
                 "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON)")
    files = sorted({e["file"] for e in json.load(open(db))
                    if e["file"].endswith((".cpp", ".c"))})
    header_filter = "^" + re.escape(ROOT) + "/(" + "|".join(SOURCE_DIRS) + ")/"
    failed = 0
    for f in files:
        r = subprocess.run(["clang-tidy", "-p", build_dir, "--quiet",
                            f"--header-filter={header_filter}", f],
                           capture_output=True, text=True)
        warnings = [l for l in r.stdout.split("\n") if "readability-identifier-naming" in l]
        for w in warnings:
            print(w)
        failed += len(warnings)
    print(f"check-style: clang-tidy over {len(files)} files: {failed} names break the rule")
    return 1 if failed else 0


def check_format():
    """clang-format --dry-run over the tracked sources that are not generated."""
    import shutil
    exe = shutil.which("clang-format")
    if exe is None:
        print("check-style: --format skipped: clang-format not found")
        return 0
    files = []
    for rel in tracked_sources():
        with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
            if not is_generated(f.read().split("\n")):
                files.append(rel)
    r = subprocess.run([exe, "--dry-run", "--Werror", *files], cwd=ROOT,
                       capture_output=True, text=True)
    bad = sorted({line.split(":")[0] for line in r.stderr.split("\n") if ": error:" in line})
    for b in bad:
        print(f"{b}: not formatted (clang-format -i {b})")
    if r.returncode != 0 and not bad:  # clang-format itself failed: say how
        print(r.stderr.strip())
    print(f"check-style: {len(files)} files, {len(bad)} not formatted (.clang-format)")
    return 1 if r.returncode != 0 else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--format", action="store_true",
                    help="check the formatting (clang-format) instead of the names")
    ap.add_argument("--clang-tidy", metavar="BUILD_DIR",
                    help="run clang-tidy's naming check over BUILD_DIR's compile database")
    args = ap.parse_args()
    if args.clang_tidy:
        return run_clang_tidy(args.clang_tidy)
    if args.format:
        return check_format()
    files = tracked_sources()
    bad = [b for f in files for b in check_file(f)]
    for b in bad:
        print(b)
    print(f"check-style: {len(files)} files, {len(bad)} names break the rule (.clang-tidy)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
