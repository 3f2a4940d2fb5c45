#!/usr/bin/python3
"""test_quick.py — the CTest bench.script_quick (label slow): runs `scripts/benchmark.sh --quick
--no-build` on an existing build into a fresh folder and checks that the document, the raw JSON
and the charts exist, that the document's per-model table has numbers, and that a run of one
round calls no ratio faster or slower (there is no noise threshold). It compares with Debian's
PyTorch, and with the PyPI one of build/torch-venv only where that exists (the test downloads
nothing).

  /usr/bin/python3 scripts/bench/test_quick.py BUILD_DIR OUT_DIR
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    build, out = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    torches = ["--torch-python", "/usr/bin/python3"]
    venv_python = os.path.join(ROOT, "build", "torch-venv", "bin", "python")
    if os.access(venv_python, os.X_OK):
        torches += ["--torch-python", venv_python]
    subprocess.run([os.path.join(ROOT, "scripts", "benchmark.sh"), "--quick", "--no-build",
                    "--build-dir", build, "--out", out, *torches], check=True)
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
    # the ONNX models (where a Python here exports them) and the Python overhead rows
    onnx = results["onnx"]
    if not onnx.get("skipped"):
        for model in ("mlp", "cnn", "vit", "resnet18", "mobilenet_v2", "vit_tiny"):
            assert onnx["models"][model]["eager_median"] > 0, model
            assert onnx["models"][model]["graphs_median"] > 0, model
            if onnx.get("onnxruntime"):  # timed beside each of the two nnplug runs
                assert onnx["models"][model]["onnxruntime_median"] > 0, model
                assert onnx["models"][model]["graphs_onnxruntime_median"] > 0, model
            assert re.search(rf"^\| `{model}` \| [\d.]+ → \*\*[\d.]+\*\* \|", text, re.M), \
                f"no ONNX row with numbers for {model}"
    rows = results["python_overhead"]["rows"]
    assert any(r["inputs"] == "device" and r["device"] == "cpu" and r["median_us"] > 0
               for r in rows), rows
    assert re.search(r"^\| gemm 4x4 \| device \| cpu \| [\d.]+ \|", text, re.M)
    # one round: no noise threshold, so no verdict anywhere
    if not results.get("torch_skipped"):
        assert "no noise threshold" in text
    for word in (" faster |", "slower**", "within noise |", "nnplug is faster on"):
        assert word not in text, f"a one-round run states '{word}'"
    for phrase in ("not analysed", "not established", "not measured"):
        assert phrase not in text, phrase
    if not results.get("torch_skipped"):
        assert os.path.getsize(os.path.join(out, "figures", "benchmarks_op_ratios.png")) > 0
    check_verdicts(results, out)
    print("test_quick: benchmarks.md, benchmarks.json and the charts are there; verdicts follow "
          "the noise threshold")


def check_verdicts(results, out):
    """The quick run's results with 3 made-up rounds per side: a ratio beyond the rounds' spread
    is called faster or slower, one inside it within noise."""
    sys.path.insert(0, os.path.join(ROOT, "scripts", "bench"))
    import report
    results["rounds"] = 3
    fake = {"mlp": ([100, 101, 102], [50, 50.5, 51]),     # 0.50: faster
            "cnn": ([100, 100, 100], [99, 101, 100]),     # 1.00: within noise
            "vit": ([50, 51, 50], [100, 100, 100])}       # 2.00: slower
    for model, (n, t) in fake.items():
        v = results["training"][f"{model}/cpu"]
        v["nnplug"] = [{"images_per_second": x} for x in n]
        v["torch"] = [{"images_per_second": x} for x in t]
        v["nnplug_median"], v["torch_median"] = statistics.median(n), statistics.median(t)
        v["torch_medians"] = {v.get("torch_version") or "1": v["torch_median"]}
    fake_out = os.path.join(out, "verdicts")
    report.write(results, fake_out)
    with open(os.path.join(fake_out, "benchmarks.md")) as f:
        text = f.read()
    for model, cell in (("mlp", "0.50 faster"), ("cnn", "1.00 within noise"),
                        ("vit", "**2.00 slower**")):
        row = rf"^\| {model} \| cpu \|.*\| ±\d+% \| {re.escape(cell)} \|"
        assert re.search(row, text, re.M), f"{model}: expected '{cell}':\n{text[:4000]}"
    assert report.verdict(1.05, 0.1) == "within noise" and report.verdict(0.8, 0.1) == "faster"
    assert report.verdict(1.2, None) is None and report.spread([5]) is None


if __name__ == "__main__":
    main()
