#!/usr/bin/env python3
"""gpu_report.py — docs/benchmarks-gpu.md from the results of one GPU check with yardsticks
(`scripts/gpu-check.sh --prebuilt DIR --bench --out OUT`): nnplug's cuda backend beside PyTorch
on the same GPU, in the same run.

  scripts/bench/gpu_report.py --keep OUT docs/gpu      # copy the raw results into the repository
  scripts/bench/gpu_report.py docs/gpu > docs/benchmarks-gpu.md

The raw results (summary.txt, yardstick.txt, bench-cuda.json and the nnplug-bench logs of the
yardstick phase) are what the page is generated from; docs/benchmarks.json gives the cpu
backend's training figures for the CPU-vs-GPU table.
"""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import sys

RAW = ["summary.txt", "yardstick.txt", "bench-cuda.json", "y-nnplug-bench-conv-noguard.log",
       "y-nnplug-bench-large.log", "y-nnplug-bench-attention-rows.log",
       "y-nnplug-bench-attention-tiled.log", "y-nnplug-bench-attention-mma.log", "onnx-cuda.json", "ncu-vit.csv", "ncu-cnn.csv"]
# nnplug-bench row -> torch_ops.py row, for the cnn's layers (batch 128).
CNN_OPS = [
    ("conv fwd cnn.conv1", None, "conv1.fwd"),
    ("conv bwd_data cnn.conv1", None, "conv1.bwd_data"),
    ("conv bwd_filter cnn.conv1", "conv bwd_bias cnn.conv1", "conv1.bwd_weight+bias"),
    ("conv fwd cnn.conv2", None, "conv2.fwd"),
    ("conv bwd_data cnn.conv2", None, "conv2.bwd_data"),
    ("conv bwd_filter cnn.conv2", "conv bwd_bias cnn.conv2", "conv2.bwd_weight+bias"),
    ("relu fwd", None, "relu2.fwd"),
    ("relu bwd", None, "relu2.bwd"),
    ("maxpool2 fwd", None, "maxpool.fwd(with indices)"),
    ("maxpool2 bwd", None, "maxpool.bwd"),
    ("dropout fwd", None, "dropout0.25.fwd(train)"),
    ("gemm cnn.fc1 fwd", None, "fc1.fwd"),
    ("gemm cnn.fc1 bwd_x", None, "fc1.bwd_data"),
    ("gemm cnn.fc1 bwd_w", None, "fc1.bwd_weight+bias"),
    ("softmax_xent fwd", None, "softmax_xent.fwd"),
    ("softmax_xent fwd", "softmax_xent bwd", "softmax_xent.fwd+bwd"),
]
# nnplug-bench row(s) -> torch_gpu_rows.py row, with the FLOP count used for both.
GPU_ROWS = [
    (["gemm 1024"], "gemm 1024 fp32"),
    (["gemm 2048"], "gemm 2048 fp32"),
    (["gemm 4096"], "gemm 4096 fp32"),
    (["attention fwd vit"], "sdpa fwd vit"),
    (["attention fwd vit", "attention bwd vit"], "sdpa fwd+bwd vit"),
    (["attention fwd T256"], "sdpa fwd T256"),
    (["attention fwd T256", "attention bwd T256"], "sdpa fwd+bwd T256"),
    (["attention fwd T1024"], "sdpa fwd T1024"),
    (["attention fwd T1024", "attention bwd T1024"], "sdpa fwd+bwd T1024"),
] + [  # 16-bit GEMM (tensor cores, float32 accumulation on both sides)
    ([f"gemm {n} {ty}"], f"gemm {n} {ty}") for ty in ("f16", "bf16") for n in (1024, 2048, 4096)
] + [  # 16-bit attention (cuDNN's fused attention on nnplug's side)
    (names, torch + " " + ty)
    for ty in ("f16", "bf16")
    for shape in ("vit", "T256", "T1024")
    for names, torch in (([f"attention fwd {shape} {ty}"], f"sdpa fwd {shape}"),
                         ([f"attention fwd {shape} {ty}", f"attention bwd {shape} {ty}"],
                          f"sdpa fwd+bwd {shape}"))
] + [  # layer norm: float32, and 16-bit with float32 statistics (ABI 1.10)
    ([f"layer_norm fwd vit{ty}"], f"layer_norm fwd vit{ty}")
    for ty in ("", " f16", " bf16")
] + [
    ([f"layer_norm fwd vit{ty}", f"layer_norm bwd vit{ty}"], f"layer_norm fwd+bwd vit{ty}")
    for ty in ("", " f16", " bf16")
]


# Dense peak TFLOP/s by mode (no sparsity), from NVIDIA's H100 and H200 datasheets: exact float32
# on the CUDA cores, TF32 and float16/bfloat16 on the tensor cores. Keyed by a substring of
# nvidia-smi's GPU name; the SXM parts first (H100 PCIe and NVL have lower clocks).
PEAKS = [
    ("H100 PCIe", {"fp32": 51.2, "tf32": 378.0, "f16": 756.0, "bf16": 756.0}),
    ("H100 NVL", {"fp32": 60.0, "tf32": 417.5, "f16": 835.5, "bf16": 835.5}),
    ("H200", {"fp32": 67.0, "tf32": 494.7, "f16": 989.4, "bf16": 989.4}),
    ("H100", {"fp32": 67.0, "tf32": 494.7, "f16": 989.4, "bf16": 989.4}),
]
# FLOPs of nnplug-bench's GEMM and attention rows (bench_ops.cpp): 2 N^3; attention forward
# 4 B H T^2 D, backward 10 B H T^2 D.
ATTENTION_SHAPES = {"vit": (128, 4, 17, 16), "T256": (8, 8, 256, 64), "T1024": (2, 8, 1024, 64)}


def row_flops(name):
    """(FLOPs, mode) of an nnplug-bench GEMM or attention row, or None."""
    m = re.match(r"^gemm (\d+)(?: (f16|bf16))?$", name)
    if m:
        return 2.0 * int(m.group(1)) ** 3, m.group(2) or "fp32"
    m = re.match(r"^attention (fwd|bwd) (vit|T256|T1024)(?: (f16|bf16))?$", name)
    if m:
        b, h, t, d = ATTENTION_SHAPES[m.group(2)]
        return (4.0 if m.group(1) == "fwd" else 10.0) * b * h * t * t * d, m.group(3) or "fp32"
    return None


def roofline(rows, gpu_name):
    """Markdown lines: each GEMM and attention row's TFLOP/s against the chip's peak."""
    peak = next((pk for key, pk in PEAKS if key in gpu_name), None)
    out = ["## GEMM and attention against the chip's peak\n",
           f"Achieved TFLOP/s of nnplug-bench's rows (median) against the dense peak of "
           f"`{gpu_name or 'this GPU'}` in the row's mode, from NVIDIA's datasheet: exact float32 "
           f"on the CUDA cores{' (' + str(peak['fp32']) + ' TFLOP/s)' if peak else ''}, "
           f"float16/bfloat16 on the tensor cores{' (' + str(peak['bf16']) + ')' if peak else ''}."
           f" Attention at short sequences is bound by memory, not by arithmetic.\n",
           "| row | mode | TFLOP/s | peak TFLOP/s | % of peak |", "|---|---|---|---|---|"]
    for name, us in rows.items():
        f = row_flops(name)
        if f is None or not us:
            continue
        tflops = f[0] / (us * 1e6)
        pk = peak[f[1]] if peak else None
        out.append(f"| {name} | {f[1]} | {tflops:.1f} | {fmt(pk, 1)} | "
                   f"{f'{100 * tflops / pk:.1f}' if pk else '—'} |")
    return out + [""]


def onnx_table(o, title, mode, six):
    """Markdown lines of one onnx_gpu_rows.py run (its JSON object)."""
    p = [title]
    p.append(f"`scripts/bench/onnx_gpu_rows.py`: the {'six ' if six else ''}models of "
             f"`scripts/make_onnx_models.py` (random weights, full size) loaded by `nnplug.onnx` on "
             f"{o['device']}, checked on "
             f"{o['rows'][0].get('check_torch', {}).get('n', '—') if o['rows'] else '—'} inputs "
             f"against PyTorch {o['torch']} on the same GPU ({mode})"
             + (f" and onnxruntime {o['onnxruntime']} (CPU execution provider)" if six else "")
             + f", rtol {o['rtol']:g} / atol {o['atol']:g}; milliseconds per batch with host "
             "arrays in and out on both sides, median.\n")
    p.append("| model | within tolerance, top-1 equal | max abs diff vs PyTorch | batch | nnplug eager ms | nnplug graphs ms | PyTorch eager ms | graphs ÷ PyTorch |")
    p.append("|---|---|---|---|---|---|---|---|")
    for row in o["rows"]:
        if "refused" in row:
            p.append(f"| {row['model']} | refused: {row['refused'][:80]} | — | — | — | — | — | — |")
            continue
        ct, co = row.get("check_torch", {}), row.get("check_onnxruntime")
        ok = ct.get("ok") and (co is None or co.get("ok"))
        agree = f"{'yes' if ok else 'NO'} ({ct.get('top1_agree')}/{ct.get('n')})"
        p.append(f"| {row['model']} | {agree} | {ct.get('max_abs', float('nan')):.2g} | "
                 f"{row.get('batch', '—')} | {fmt(row.get('nnplug_ms'), 2)} | "
                 f"{fmt(row.get('nnplug_graphs_ms'), 2)} | {fmt(row.get('torch_ms'), 2)} | "
                 f"{ratio(row.get('nnplug_graphs_ms'), row.get('torch_ms'))} |")
    return p + [""]


def bench_rows(text):
    """name -> median us from nnplug-bench's table output."""
    rows = {}
    for line in text.splitlines():
        parts = re.split(r"\s{2,}", line.strip())  # name, shape, "median min cpu [rate unit]"
        if len(parts) >= 3 and re.match(r"^[0-9.]+ ", parts[2] + " "):
            rows[parts[0]] = float(parts[2].split()[0])
    return rows


def load(d):
    out = {"summary": open(os.path.join(d, "summary.txt")).read(), "yard": {}}
    for line in open(os.path.join(d, "yardstick.txt")):
        name, _, js = line.strip().partition(" ")
        if js.startswith("{"):
            out["yard"][name] = json.loads(js)
    out["bench"] = {r["name"]: r["median_us"]
                    for r in json.load(open(os.path.join(d, "bench-cuda.json")))["rows"]}
    for key, f in (("noguard", "y-nnplug-bench-conv-noguard.log"),
                   ("large", "y-nnplug-bench-large.log"),
                   ("attention_rows", "y-nnplug-bench-attention-rows.log"),
                   ("attention_tiled", "y-nnplug-bench-attention-tiled.log"),
                   ("attention_mma", "y-nnplug-bench-attention-mma.log")):
        p = os.path.join(d, f)
        out[key] = bench_rows(open(p).read()) if os.path.exists(p) else {}
    p = os.path.join(d, "onnx-cuda.json")
    out["onnx"] = json.load(open(p)) if os.path.exists(p) else None
    out["ncu"] = {m: ncu_kernels(os.path.join(d, f"ncu-{m}.csv")) for m in ("vit", "cnn")}
    out["train"] = {}
    for line in out["summary"].splitlines():
        m = re.match(r"\s*train (\w+) (eager|graph)\s+PASS\s+\S+\s+(\{.*\})", line)
        if m:
            out["train"][(m.group(1), m.group(2))] = json.loads(m.group(3))
    return out


def ncu_kernels(path):
    """[(kernel, launches, total us)] from `ncu --csv --print-summary per-kernel` output, the
    largest total first; [] when the file is missing."""
    if not os.path.exists(path):
        return []
    lines = [ln for ln in open(path) if ln.startswith('"')]
    rows = list(csv.reader(lines))
    if not rows:
        return []
    col = {h: k for k, h in enumerate(rows[0])}
    agg = {}
    for r in rows[1:]:
        name = re.sub(r"\(.*", "", r[col["Kernel Name"]]).replace("nnp::<unnamed>::", "")
        name = re.sub(r"^void ", "", name)
        n = int(r[col["Invocations"]])
        us = n * float(r[col["Average"]].replace(",", "")) / 1000.0
        a = agg.setdefault(name, [0, 0.0])
        a[0] += n
        a[1] += us
    return sorted(((k, v[0], v[1]) for k, v in agg.items()), key=lambda x: -x[2])


def last_epoch(y):
    return y["epoch_seconds"][-1] if "epoch_seconds" in y else y["last_epoch_seconds"]


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "—"


def fmt(v, digits=3):
    return f"{v:.{digits}f}" if isinstance(v, (int, float)) else "—"


def report(d, cpu_json):
    r = load(d)
    s = r["summary"]
    head = {k: v for k, v in (ln.split(": ", 1) for ln in s.splitlines()
                              if re.match(r"^(commit|gpu|cuda \(driver\)|torch|nvidia-\S+|torch cuda .*?): ", ln))}
    libs = [ln.strip() for ln in s.splitlines() if re.match(r"\s+(cuBLAS|cuDNN) from", ln)]
    conf = re.search(r"cuda:0: \d+ passed, \d+ failed, \d+ unsupported", s)
    y, t = r["yard"], r["train"]
    p = []
    p.append("# Benchmarks on a GPU\n")
    p.append("<!-- Generated by scripts/bench/gpu_report.py from the raw results in docs/gpu/ "
             "(one run of `scripts/gpu-check.sh --prebuilt DIR --bench`); do not edit by hand. -->\n")
    p.append("nnplug's cuda backend beside PyTorch on the same GPU, in the same run of one command:\n")
    p.append("```sh\nCUDA_ARCHS=90 TORCH_BENCH_DIR=... scripts/gpu-check.sh --build-only   # toolkit machine\n"
             "scripts/gpu-check.sh --prebuilt .device-carry --bench --out OUT     # GPU machine\n"
             "scripts/bench/gpu_report.py --keep OUT docs/gpu && scripts/bench/gpu_report.py docs/gpu > docs/benchmarks-gpu.md\n```\n")
    p.append("| | |\n|---|---|")
    for k in ("gpu", "cuda (driver)", "torch", "nvidia-cublas", "nvidia-cudnn-cu13"):
        if k in head:
            p.append(f"| {k} | {head[k]} |")
    for ln in libs:
        p.append(f"| nnplug found | {ln} |")
    if "commit" in head:
        p.append(f"| nnplug commit | `{head['commit'][:12]}` |")
    if conf:
        p.append(f"| conformance | `{conf.group(0)}` (`--cases full`) |")
    p.append("")
    p.append("PyTorch's rows are its second epoch (`torch_fashion_mnist.py --epochs 2`); nnplug's are "
             "`train --epochs 2`'s `last_epoch_seconds`; exact float32 on both sides (`--no-tf32`) "
             "unless a row says TF32. \"CUDA graph\" is PyTorch with forward, backward and a "
             "capturable Adam captured in one `torch.cuda.CUDAGraph`, against `train --graph`. "
             "Ratios are nnplug's time ÷ PyTorch's: below 1 nnplug is faster.\n")
    p.append("## Training, batch 128: seconds per 60 000-image epoch\n")
    p.append("| model | nnplug eager | nnplug `--graph` | PyTorch eager | PyTorch CUDA graph | graph ÷ CUDA graph | eager ÷ eager |")
    p.append("|---|---|---|---|---|---|---|")
    for m in ("mlp", "cnn", "vit"):
        ne = t.get((m, "eager"), {}).get("last_epoch_seconds")
        ng = t.get((m, "graph"), {}).get("last_epoch_seconds")
        te = last_epoch(y[f"torch-{m}-eager-fp32"]) if f"torch-{m}-eager-fp32" in y else None
        tg = last_epoch(y[f"torch-{m}-graph-fp32"]) if f"torch-{m}-graph-fp32" in y else None
        p.append(f"| {m} | {fmt(ne)} | {fmt(ng)} | {fmt(te)} | {fmt(tg)} | {ratio(ng, tg)} | {ratio(ne, te)} |")
    for key, what in (("nnplug-vit-graph-attention-tiled", "tiled attention at T = 17"),
                      ("nnplug-vit-graph-attention-rows", "per-row attention kernels at T = 17")):
        if key in y and "torch-vit-graph-fp32" in y:
            a, b = last_epoch(y[key]), last_epoch(y["torch-vit-graph-fp32"])
            p.append(f"| vit, {what} | — | {fmt(a)} | — | {fmt(b)} | {ratio(a, b)} | — |")
    if "torch-cnn-graph-tf32" in y and "nnplug-cnn-graph-tf32" in y:
        a, b = last_epoch(y["nnplug-cnn-graph-tf32"]), last_epoch(y["torch-cnn-graph-tf32"])
        p.append(f"| cnn, TF32 | — | {fmt(a)} (`--tf32`) | — | {fmt(b)} | {ratio(a, b)} | — |")
    p.append("")
    p.append("## Training, batch 1024, eager: seconds per epoch\n")
    p.append("| model | nnplug | PyTorch | nnplug ÷ PyTorch |\n|---|---|---|---|")
    for m in ("cnn", "vit"):
        a = last_epoch(y[f"nnplug-{m}-b1024"]) if f"nnplug-{m}-b1024" in y else None
        b = last_epoch(y[f"torch-{m}-b1024-fp32"]) if f"torch-{m}-b1024-fp32" in y else None
        p.append(f"| {m} | {fmt(a)} | {fmt(b)} | {ratio(a, b)} |")
    p.append("")
    if any(k.endswith("-bf16") for k in y):
        p.append("## Mixed precision (bfloat16): seconds per epoch\n")
        p.append("`train --precision bfloat16` (bfloat16 activations, GEMMs, convolutions, "
                 "attention and LayerNorm with float32 statistics; float32 master weights, Adam "
                 "and loss) against PyTorch's "
                 "`torch.autocast(dtype=torch.bfloat16)` with float32 parameters "
                 "(`scripts/bench/torch_train.py --precision bfloat16`, second epoch).\n")
        p.append("The accuracy column is nnplug's test accuracy after the two epochs, in "
                 "bfloat16 and (same batch, graphs or eager) in float32.\n")
        p.append("| model, batch | nnplug | PyTorch | nnplug ÷ PyTorch | nnplug test accuracy, "
                 "bfloat16 / float32 |\n|---|---|---|---|---|")
        for m, batch, a_key, b_key, f32 in (
                [(m, "128, graphs", f"nnplug-{m}-graph-bf16", f"torch-{m}-graph-bf16",
                  t.get((m, "graph"))) for m in ("mlp", "cnn", "vit")]
                + [(m, "1024, eager", f"nnplug-{m}-b1024-bf16", f"torch-{m}-b1024-bf16",
                    y.get(f"nnplug-{m}-b1024")) for m in ("cnn", "vit")]):
            a = last_epoch(y[a_key]) if a_key in y else None
            b = last_epoch(y[b_key]) if b_key in y else None
            acc = (f"{fmt(y.get(a_key, {}).get('test_accuracy'), 4)} / "
                   f"{fmt((f32 or {}).get('test_accuracy'), 4)}")
            p.append(f"| {m}, {batch} | {fmt(a)} | {fmt(b)} | {ratio(a, b)} | {acc} |")
        p.append("")
    ops = {}
    if "torch-ops-fp32" in y:
        ops = {o["op"]: o["median_ms"] * 1e3 for o in y["torch-ops-fp32"]["ops"]}
    if ops:
        p.append("## Per op, the cnn's layers (batch 128, float32): microseconds per call\n")
        p.append("Each call synchronised (launch and synchronisation included on both sides); "
                 "nnplug-bench against `torch_ops.py --no-tf32`.\n")
        p.append("| nnplug-bench row | PyTorch row | nnplug µs | PyTorch µs | nnplug ÷ PyTorch |\n|---|---|---|---|---|")
        for a, b, tn in CNN_OPS:
            if a not in r["bench"] or tn not in ops:
                continue
            v = r["bench"][a] + (r["bench"].get(b, 0.0) if b else 0.0)
            name = a + (f" + {b}" if b else "")
            p.append(f"| {name} | {tn} | {v:.1f} | {ops[tn]:.1f} | {ratio(v, ops[tn])} |")
        p.append("")
    tr = {x["name"]: x for x in y.get("torch-gpu-rows", {}).get("rows", [])}
    allrows = dict(r["bench"])  # nnplug-bench's default rows and the large set's
    allrows.update(r["large"])
    if tr:
        p.append("## GEMM, attention and layer norm against PyTorch\n")
        p.append("`torch_gpu_rows.py` times `torch.mm`, `F.scaled_dot_product_attention` (layout "
                 "[B, H, T, D]) and `F.layer_norm` as nnplug-bench times its rows, in float32 unless "
                 "a row names f16 or bf16 (float32 accumulation on both sides). GFLOP/s from "
                 "PyTorch's FLOP count for both.\n")
        p.append("| nnplug-bench row(s) | PyTorch row | shape | nnplug µs | PyTorch µs | nnplug ÷ PyTorch | PyTorch GFLOP/s |")
        p.append("|---|---|---|---|---|---|---|")
        for names, tn in GPU_ROWS:
            if tn not in tr or not all(n in allrows for n in names):
                continue
            v = sum(allrows[n] for n in names)
            x = tr[tn]
            p.append(f"| {' + '.join(names)} | {tn} | {x['shape']} | {v:.1f} | {x['median_us']:.1f} | "
                     f"{ratio(v, x['median_us'])} | {x['gflops'] if x['gflops'] else '—'} |")
        for n in ("gemm 1024 tf32", "gemm 2048 tf32", "gemm 4096 tf32"):
            if n in tr:
                p.append(f"| (nnplug-bench has no TF32 row) | {n} | {tr[n]['shape']} | — | "
                         f"{tr[n]['median_us']:.1f} | — | {tr[n]['gflops']} |")
        p.append("")
    if any(row_flops(n) for n in allrows):
        p.extend(roofline(allrows, head.get("gpu", "").split(",")[0]))
    if r["attention_rows"]:
        mma = bool(r["attention_mma"])
        p.append("## Attention: the default kernels against the per-row and tiled kernels\n")
        p.append("The attention rows with `NNPLUG_CUDA_ATTENTION_KERNEL=rows` (the per-row kernels) "
                 "and `=tiled` (the tiled kernels wherever they run"
                 + ("; `=mma`, the same tiles on tensor cores in 3xTF32" if mma else "")
                 + "; a measurement switch, "
                 "docs/cuda-backend.md) in the same run, beside the default choice (the "
                 "short-sequence kernels for Tq, Tk ≤ 32 and D, Dv ≤ 64, the tiled kernels for "
                 "more than 32 keys) and PyTorch's `F.scaled_dot_product_attention` (float32):\n")
        p.append("| row | default µs | per-row kernels µs | tiled kernels µs | "
                 + ("tensor-core kernels µs | " if mma else "")
                 + "PyTorch row | PyTorch µs | default ÷ PyTorch | default GFLOP/s |")
        p.append("|---|---|---|---|---|---|---|---|" + ("---|" if mma else ""))
        for names, tn in GPU_ROWS:
            if not names[0].startswith("attention") or not all(n in r["bench"] for n in names):
                continue
            v = sum(r["bench"][n] for n in names)
            old = sum(r["attention_rows"].get(n, float("nan")) for n in names)
            tiled = sum(r["attention_tiled"].get(n, float("nan")) for n in names)
            tc = (f" {sum(r['attention_mma'].get(n, float('nan')) for n in names):.1f} |"
                  if mma else "")
            tv = tr[tn]["median_us"] if tn in tr else None
            gf = tr[tn]["gflops"] * tv / v if tn in tr and tr[tn].get("gflops") else None
            p.append(f"| {' + '.join(names)} | {v:.1f} | {old:.1f} | {tiled:.1f} |{tc} {tn} | "
                     f"{fmt(tv, 1)} | {ratio(v, tv)} | {fmt(gf, 0)} |")
        p.append("")
    if r["onnx"]:
        p.extend(onnx_table(r["onnx"], "## ONNX models on the GPU (`nnplug.onnx`)\n",
                            "exact float32", True))
    if y.get("onnx-f16"):
        p.extend(onnx_table(y["onnx-f16"], "## ONNX models in float16 on the GPU\n",
                            "in float16; `--float16` converts the models with "
                            "`make_onnx_models.to_float16` (a model the device refuses is listed "
                            "as refused, and fails the step)", False))
    twins = re.search(r"twins\s+(PASS|FAIL)\s+\S+\s+(\{.*\})", s)
    if twins:
        tw = json.loads(twins.group(2))
        p.append("## The PyTorch bridge on CUDA tensors\n")
        p.append(f"`scripts/torch_twins_check.py --device cuda --steps {tw['steps']}`: a small CNN "
                 "(two convolutions, LayerNorm, a linear layer) trained with SGD on CUDA tensors, "
                 "once as PyTorch built it and once with its Conv2d, Linear and LayerNorm swapped for "
                 f"`nnplug.torch` twins on {tw['nnplug_device']}, from the same weights: the largest "
                 f"difference of a step's loss is {tw['max_abs_diff']:.2g} (step {tw['at_step']}; "
                 f"allowed {tw['tol']:g}); final losses {tw['final_loss_nnplug']:.7f} (twins) and "
                 f"{tw['final_loss_torch']:.7f} (PyTorch), from {tw['first_loss']:.4f}.\n")
    if any(r["ncu"].values()):
        p.append("## Where a training step's GPU time goes\n")
        p.append("Nsight Compute (`ncu --metrics gpu__time_duration.sum --print-summary per-kernel`) "
                 "over 400 kernel launches of `train --epochs 1 --limit 2560` after the first 400, "
                 "eager, batch 128. Nsight Compute runs one kernel at a time with its clocks fixed, so "
                 "the times are longer than in a normal run: read the shares, not the microseconds. "
                 "The ten largest kernels of each model:\n")
        for m, ks in r["ncu"].items():
            if not ks:
                continue
            tot = sum(k[2] for k in ks)
            p.append(f"**{m}** ({sum(k[1] for k in ks)} launches, {tot:.0f} µs):\n")
            p.append("| kernel | launches | µs per launch | share |\n|---|---|---|---|")
            for name, n, us in ks[:10]:
                p.append(f"| `{name[:72]}` | {n} | {us / n:.1f} | {100 * us / tot:.1f} % |")
            p.append("")
    if r["noguard"]:
        p.append("## What the convolutions' non-finite guard costs\n")
        p.append("The same rows with `NNPLUG_CUDA_CONV_NONFINITE_GUARD=0` (a measurement switch "
                 "only; docs/cuda-backend.md), in the same run:\n")
        p.append("| row | with the guard µs | without µs | difference µs |\n|---|---|---|---|")
        for n in sorted(k for k in r["noguard"] if k.startswith("conv ") and "bias" not in k):
            if n in r["bench"]:
                p.append(f"| {n} | {r['bench'][n]:.1f} | {r['noguard'][n]:.1f} | "
                         f"{r['bench'][n] - r['noguard'][n]:+.1f} |")
        if "nnplug-cnn-graph-noguard" in y and ("cnn", "graph") in t:
            a, b = t[("cnn", "graph")]["last_epoch_seconds"], last_epoch(y["nnplug-cnn-graph-noguard"])
            p.append(f"| cnn epoch, `--graph` (s) | {a:.3f} | {b:.3f} | {a - b:+.3f} ({(a / b - 1) * 100:+.1f} %) |")
        p.append("")
    if cpu_json and os.path.exists(cpu_json):
        cj = json.load(open(cpu_json))
        cpu = {}
        for key, row in cj.get("training", {}).items():
            model, _, backend = key.partition("/")
            if backend == "cpu":
                cpu[model] = [x["images_per_second"] for x in row.get("nnplug", [])]
        if cpu:
            p.append("## CPU against GPU: seconds per 60 000-image epoch\n")
            p.append("The cpu backend's images/s from docs/benchmarks.md (its own machine, named "
                     "there), scaled to 60 000 images, against the cuda backend above.\n")
            p.append("| model | cpu backend | cuda eager | cuda `--graph` | cpu ÷ cuda `--graph` |\n|---|---|---|---|---|")
            for m in ("mlp", "cnn", "vit"):
                if m not in cpu:
                    continue
                c = 60000 / statistics.median(cpu[m])
                g = t.get((m, "graph"), {}).get("last_epoch_seconds")
                e = t.get((m, "eager"), {}).get("last_epoch_seconds")
                p.append(f"| {m} | {c:.2f} | {fmt(e)} | {fmt(g)} | {c / g:.0f}× |" if g else
                         f"| {m} | {c:.2f} | {fmt(e)} | — | — |")
            p.append("")
    return "\n".join(p) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default="docs/gpu", help="the raw results")
    ap.add_argument("--keep", metavar="OUT", help="copy these raw results of gpu-check's OUT into DIR first")
    ap.add_argument("--cpu-json", default="docs/benchmarks.json")
    a = ap.parse_args()
    if a.keep:
        os.makedirs(a.dir, exist_ok=True)
        for f in RAW:
            src, dst = os.path.join(a.keep, f), os.path.join(a.dir, f)
            if not os.path.exists(src):
                continue
            if f.startswith("ncu-"):  # the CSV rows only (not the profiler's process lines)
                with open(src) as fi, open(dst, "w") as fo:
                    fo.writelines(ln for ln in fi if ln.startswith('"'))
            elif f == "summary.txt":  # the output folder as the run was told, not its path
                with open(src) as fi, open(dst, "w") as fo:
                    fo.write(re.sub(r"\(outputs in [^)]*\)", "(outputs in OUT)", fi.read()))
            else:
                shutil.copy(src, dst)
        return
    sys.stdout.write(report(a.dir, a.cpu_json))


if __name__ == "__main__":
    main()
