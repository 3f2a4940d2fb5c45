#!/usr/bin/python3
"""test_quick.py — the CTest bench.script_quick (label slow): runs `scripts/benchmark.sh --quick
--no-build` on an existing build into a fresh folder and checks that the document, the raw JSON
and the charts exist and that the document's per-model table has numbers.

  /usr/bin/python3 scripts/bench/test_quick.py BUILD_DIR OUT_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    build, out = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([os.path.join(ROOT, "scripts", "benchmark.sh"), "--quick", "--no-build",
                    "--build-dir", build, "--out", out], check=True)
    doc = os.path.join(out, "benchmarks.md")
    for path in (doc, os.path.join(out, "benchmarks.json"),
                 os.path.join(out, "figures", "benchmarks_training.png")):
        assert os.path.getsize(path) > 0, path
    with open(os.path.join(out, "benchmarks.json")) as f:
        results = json.load(f)
    with open(doc) as f:
        text = f.read()
    for model in ("mlp", "cnn", "vit"):
        # | mlp | cpu | 2560 | 30 680 → **30 680** | ...
        row = re.search(rf"^\| {model} \| cpu \| \d+ \| [\d .]+ → \*\*[\d .]+\*\* \|", text, re.M)
        assert row, f"no per-model row with numbers for {model}:\n{text[:3000]}"
        assert results["training"][f"{model}/cpu"]["nnplug_median"] > 0
    assert "| gemm 1024 |" in text and "limit sgemm 1024" in text
    if not results.get("torch_skipped"):
        assert os.path.getsize(os.path.join(out, "figures", "benchmarks_op_ratios.png")) > 0
    print("test_quick: benchmarks.md, benchmarks.json and the charts are there")


if __name__ == "__main__":
    main()
