#!/usr/bin/python3
"""ctest-times.py — the slowest tests of a CTest run, with their timeouts.

  scripts/ctest-times.py BUILD_DIR JUNIT_XML [--top 5] [--margin 3]

Reads the run's JUnit report (`ctest --output-junit JUNIT_XML`) for each test's time and
`ctest --show-only=json-v1` for each test's TIMEOUT property (the ctest --timeout default where
a test has none: pass it with --default-timeout). Prints the TOP slowest tests as
"seconds  timeout  name", and a note for every test whose timeout is less than MARGIN times
its measured time (the project's rule: README.md, "The two commands"). Exit status 0 either
way: timings on a shared machine vary, and CTest itself fails a test that runs out of time.
"""
import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ET


def timeouts(build_dir, default):
    out = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    result = {}
    for test in json.loads(out)["tests"]:
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        result[test["name"]] = float(props.get("TIMEOUT", default))
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build_dir")
    p.add_argument("junit")
    p.add_argument("--top", type=int, default=5)
    p.add_argument("--margin", type=float, default=3.0)
    p.add_argument("--default-timeout", type=float, default=1500.0)
    args = p.parse_args()
    limit = timeouts(args.build_dir, args.default_timeout)
    times = []
    for case in ET.parse(args.junit).getroot().iter("testcase"):
        skipped = case.find("skipped") is not None
        if not skipped:
            times.append((float(case.get("time", 0)), case.get("name")))
    times.sort(reverse=True)
    print(f"slowest {min(args.top, len(times))} of {len(times)} tests (seconds, timeout):")
    for seconds, name in times[:args.top]:
        print(f"  {seconds:7.1f} s  {limit.get(name, args.default_timeout):6.0f} s  {name}")
    for seconds, name in times:
        timeout = limit.get(name, args.default_timeout)
        if timeout < args.margin * seconds:
            print(f"  note: {name} took {seconds:.1f} s, more than 1/{args.margin:g} of its "
                  f"timeout {timeout:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
