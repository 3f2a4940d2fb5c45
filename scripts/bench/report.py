#!/usr/bin/python3
"""report.py — writes benchmarks.md (from the template benchmarks.md.in, string.Template) and
the PNG charts (matplotlib) from the raw results of scripts/benchmark.sh.

  /usr/bin/python3 scripts/bench/report.py build/benchmark/benchmarks.json [--out DIR]

Only measured figures are written; a row without a PyTorch figure says why. Each comparison
row has a noise threshold from its repeated rounds (noise()): its time ratio is called faster
or slower only when it differs from 1 by more than that, "within noise" otherwise; a run of one
round has no threshold and calls nothing.
"""
import argparse
import json
import os
import statistics
import string

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ("mlp", "cnn", "vit")


def fmt(x, digits=3):
    if x is None:
        return "–"
    if x >= 1000:
        return f"{x:,.0f}".replace(",", " ")
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.{digits - 1}f}" if x >= 1 else f"{x:.{digits}f}"


def spread(values):
    """(largest - smallest) / median of one side's rounds (images/s or µs); None with fewer
    than 2 rounds."""
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return None
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med > 0 else None


def noise(a, b):
    """The noise threshold of a comparison of two sides' rounds (a, b: the figures of each
    round): the larger of the two spreads; None when either side has one round."""
    sa, sb = spread(a), spread(b)
    return None if sa is None or sb is None else max(sa, sb)


def verdict(ratio, thr):
    """"faster", "slower", "within noise" or None (no ratio, or no threshold) for a time ratio
    nnplug / PyTorch."""
    if ratio is None or thr is None:
        return None
    if abs(ratio - 1.0) <= thr:
        return "within noise"
    return "faster" if ratio < 1.0 else "slower"


def ratio_cell(ratio, thr):
    if ratio is None:
        return "–"
    v = verdict(ratio, thr)
    if v == "slower":
        return f"**{ratio:.2f} slower**"
    return f"{ratio:.2f} {v}" if v else f"{ratio:.2f}"


def pct_range(values):
    lo, hi = f"{100 * min(values):.0f}", f"{100 * max(values):.0f}"
    return f"{lo}%" if lo == hi else f"{lo}–{hi}%"


def noise_cell(thr):
    return "–" if thr is None else f"±{100 * thr:.0f}%"


def stamp(results):
    """The line each chart carries: date, commit, CPU, cores and the SGEMM kernel."""
    m = results["machine"]
    lib = m.get("libraries", {})
    gpu = m.get("gpu")
    gpu_text = f"; GPU {gpu['nvidia_smi'][0].split(',')[0]}" if gpu and gpu.get("nvidia_smi") \
        else ""
    return (f"{m['date']} · commit {m['git']['commit'][:12]}"
            f"{' (modified)' if m['git'].get('dirty') else ''} · {m['cpu'].get('model', '?')}, "
            f"{m.get('usable_cpus')} cores · SGEMM kernel "
            f"{lib.get('openblas_get_corename', '?')}{gpu_text}"
            + (" · --quick" if results.get("quick") else ""))


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def machine_md(m, threads):
    cpu = m["cpu"]
    lib = m.get("libraries", {})
    rows = [("CPU", f"{cpu.get('model', '?')}; {m.get('usable_cpus')} usable of "
                    f"{m.get('hardware_threads')} hardware threads"),
            ("SIMD", f"{cpu.get('simd', '?')} (flags: {', '.join(cpu.get('flags', [])) or 'none'})"),
            ("memory", f"{m.get('memory_gib', '?')} GiB"),
            ("OS", m.get("os", "?")),
            ("OpenBLAS", f"{lib.get('openblas_get_config', lib.get('openblas_error', '?'))}; "
                         f"kernel `{lib.get('openblas_get_corename', '?')}`; "
                         f"`OPENBLAS_CORETYPE={m['env'].get('OPENBLAS_CORETYPE') or '(unset)'}`"),
            ("oneTBB", lib.get("tbb_runtime_version", lib.get("tbb_error", "?"))),
            ("threads", f"{threads} (nnplug's cpu device and PyTorch)")]
    gpu = m.get("gpu")
    rows.append(("GPU", "; ".join(gpu["nvidia_smi"]) + f" (CUDA driver API {gpu['cuda_driver_api']})"
                 if gpu else "none (no `nvidia-smi`)"))
    rows.append(("nnplug devices", "<br>".join(f"`{d}`" for d in m.get("nnplug_devices", []))))
    torches = m.get("torches") or ([m["torch"]] if m.get("torch") else [])
    for t in torches:
        extra = f", CUDA {t['cuda']}, cuDNN {t.get('cudnn')}" if t.get("cuda_available") else ""
        rows.append(("PyTorch", f"{t['version']} (`{t.get('python')}`; BLAS {t.get('blas') or '?'}, "
                                f"oneDNN {'yes' if t.get('mkldnn') else 'no'}{extra})"))
    if not torches:
        rows.append(("PyTorch", "not used"))
    return table(("", ""), rows)


def chart_training(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tr = results["training"]
    series = []  # (label, medians, rounds) per bar group

    def rounds_of(v, who):
        return [x["images_per_second"] for x in v.get(who, [])]
    for b in results["backends"]:
        vs = [tr.get(f"{m}/{b}", {}) for m in MODELS]
        series.append((f"nnplug {b}", [v.get("nnplug_median") for v in vs],
                       [rounds_of(v, "nnplug") for v in vs]))
        if any(v.get("torch_median") for v in vs):
            several = len(results["machine"].get("torches") or []) > 1
            series.append((f"PyTorch {b}" + (" (the faster per model)" if several else ""),
                           [v.get("torch_median") for v in vs],
                           [rounds_of(v, "torch") for v in vs]))
    # one panel per model, each on its own linear axis from 0 (the models' speeds differ by
    # an order of magnitude)
    fig, axes = plt.subplots(1, len(MODELS), figsize=(8, 3.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, (ax, model) in enumerate(zip(axes, MODELS)):
        for i, (label, vals, rounds) in enumerate(series):
            if not vals[j]:
                continue
            lo, hi = min(rounds[j] or [vals[j]]), max(rounds[j] or [vals[j]])
            # the whiskers span the slowest and the fastest round
            bars = ax.bar([i], [vals[j]], 0.7, yerr=[[vals[j] - lo], [hi - vals[j]]],
                          capsize=3, color=colors[i % len(colors)], label=label)
            ax.bar_label(bars, fmt="%.0f", fontsize=7, padding=2)
        ax.set_xticks([])
        ax.set_title(model, fontsize=9)
        ax.set_ylim(bottom=0)
        ax.margins(y=0.12)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("training images / s (higher is faster)", fontsize=8)
    legend = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, h)
    fig.legend(list(legend.values()), list(legend.keys()), loc="lower center", ncol=len(series),
               fontsize=8,
               bbox_to_anchor=(0.5, 0.04))
    fig.suptitle(f"Fashion-MNIST training, batch 128, {results['threads']} threads: medians of "
                 f"{results['rounds']} round{'s' if results['rounds'] != 1 else ''} (whiskers: slowest "
                 "and fastest round)", fontsize=9)
    fig.text(0.01, 0.01, stamp(results), fontsize=6, color="dimgray")
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def chart_ratios(results, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in rows if r["ratio"] is not None]
    colors = {"faster": "tab:green", "slower": "tab:red"}
    fig, ax = plt.subplots(figsize=(7, 0.22 * len(rows) + 1.6))
    ys = list(range(len(rows)))
    # the whiskers show each row's noise threshold around 1 ± noise, scaled to the ratio
    has_noise = any(r["noise"] is not None for r in rows)
    # whiskers (with several rounds): the row's noise threshold, as a share of its ratio
    ax.barh(ys, [r["ratio"] for r in rows],
            xerr=[r["ratio"] * (r["noise"] or 0) for r in rows] if has_noise else None,
            color=[colors.get(verdict(r["ratio"], r["noise"]), "tab:gray") for r in rows],
            error_kw={"elinewidth": 0.6, "capsize": 1.5})
    ax.set_yticks(ys)
    ax.set_yticklabels([r["name"] for r in rows], fontsize=6)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(left=0)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("time nnplug / time PyTorch (< 1: nnplug faster); " +
                  ("green faster, red slower, grey within noise (whiskers: the noise threshold)"
                   if has_noise else "one round: no noise threshold, no verdict"), fontsize=7)
    fig.text(0.01, 0.005, stamp(results), fontsize=6, color="dimgray")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def training_md(results):
    tr, bks = results["training"], results["backends"]
    gpu = "cuda" in bks
    several = len({ver for v in tr.values() for ver in v.get("torch_medians", {})}) > 1
    header = ["model", "backend", "images per epoch", "nnplug images/s (rounds → median)",
              "PyTorch images/s (rounds → median)", "noise", "time nnplug ÷ PyTorch"]
    if several:
        header[4] = "faster PyTorch: images/s (rounds → median)"
    if gpu:
        header.append("nnplug cuda ÷ cpu speed-up")
    rows, by_verdict, others, thresholds, any_ratio = [], {}, [], [], False
    for m in MODELS:
        for b in bks:
            v = tr.get(f"{m}/{b}")
            if not v:
                continue
            ns = [x["images_per_second"] for x in v["nnplug"]]
            ts = [x["images_per_second"] for x in v["torch"]]
            nm, tm = v["nnplug_median"], v["torch_median"]
            ratio = tm / nm if (nm and tm) else None
            thr = noise(ns, ts) if ts else None
            if thr is not None:
                thresholds.append(thr)
            any_ratio = any_ratio or ratio is not None
            vd = verdict(ratio, thr)
            if vd:
                by_verdict.setdefault(vd, []).append(f"{m} on {b} ({ratio:.2f})")
            who = f"{v['torch_version']}: " if several and v.get("torch_version") else ""
            row = [m, b, v["images"],
                   " / ".join(fmt(x) for x in ns) + f" → **{fmt(nm)}**",
                   (who + " / ".join(fmt(x) for x in ts) + f" → **{fmt(tm)}**") if ts else
                   "not run", noise_cell(thr), ratio_cell(ratio, thr)]
            if several:
                others.extend(f"{m} on {b}: PyTorch {ver} {fmt(med)}"
                              for ver, med in v.get("torch_medians", {}).items()
                              if ver != v.get("torch_version"))
            if gpu:
                c = tr.get(f"{m}/cpu", {}).get("nnplug_median")
                row.append(f"{nm / c:.1f}×" if (b == "cuda" and c and nm) else "")
            rows.append(row)
    text = []
    if any_ratio:
        text.append("Time ratio = PyTorch's images/s ÷ nnplug's (the same images in both): "
                    "below 1 nnplug is faster.")
        if thresholds:
            text.append(f"Noise threshold per row: the larger of the two sides' spread between "
                        f"rounds ((largest − smallest) ÷ median), here {pct_range(thresholds)}; "
                        "a ratio "
                        "is called faster or slower only when it differs from 1 by more.")
            for vd, label in (("faster", "nnplug is faster on"),
                              ("slower", "**nnplug is slower** on"),
                              ("within noise", "Within noise on")):
                if by_verdict.get(vd):
                    text.append(f"{label}: " + ", ".join(by_verdict[vd]) + ".")
        else:
            text.append("With a single round per row there is no noise threshold, and no row "
                        "is called faster or slower.")
    if others:
        text.append("Each row compares with the faster PyTorch for that model; the other's "
                    "medians (images/s): " + "; ".join(others) + ".")
    return table(header, rows), " ".join(text)


# What the cpu backend's implementation does on rows it is slower on, by row-name prefix: facts
# of the implementation only, printed for the rows the run measured as slower beyond noise.
WHY_SLOWER = [
    ("conv fwd cnn.conv1", "one input channel: im2col + SGEMM has a depth of C·R·S = 9, far "
     "below the depth at which the SGEMM kernel reaches its speed."),
    ("conv bwd_filter cnn.conv1", "one input channel: per image dW [32, 9] = dY · colᵀ is an "
     "SGEMM whose output has only C·R·S = 9 columns."),
    ("gemm ", "nnplug splits a GEMM into one single-threaded SGEMM per thread (output panels or "
     "K slices, each packing the whole other operand; docs/cpu-backend.md); "
     "`nnplug-bench --vs-blas 9` compares it with a direct `cblas_sgemm` on the same shapes."),
    ("relu ", "elementwise kernels such as relu are plain loops compiled for baseline x86-64 "
     "(SSE2, four floats per instruction); the plugin's AVX2 code is in its convolution, "
     "pooling, attention, GELU, layer norm and dropout kernels, while PyTorch's ATen kernels "
     "are built per CPU capability and dispatched at run time (AVX2, AVX-512)."),
    ("maxpool2 bwd", "the backward recomputes each window's maximum from x (no stored "
     "indices) and is compiled for baseline x86-64 (see relu)."),
    ("layer_norm ", "rows in parallel with AVX2 + FMA intrinsics: each row's statistics in "
     "4-lane double accumulators, 8 floats a step (PyTorch's ATen kernels take 16 where the "
     "CPU has AVX-512); "
     "the backward reads x and dy once per row and adds the parameter gradients per block of "
     "64 rows in double, then the blocks in order (deterministic)."),
    ("gelu ", "erf and exp through nnplug's own polynomials (backends/cpu/vmath.hpp: "
     "Abramowitz-Stegun erf, one exp and one division per element), 8 lanes with AVX2 + FMA "
     "intrinsics (PyTorch's ATen kernel takes 16 where the CPU has AVX-512)."),
    ("matmul attention", "a batched MatMul of 512 products of 17 x 17 x 16 runs one "
     "single-threaded OpenBLAS call per product, whose fixed cost per call (argument checks, "
     "buffer locks, packing) is most of the time at this size."),
    ("attention ", "with at most 32 keys (the vit's heads) a fused kernel, query rows in "
     "registers (docs/cpu-backend.md); with more, "
     "per (batch, head) single-threaded OpenBLAS calls S = s Q Kᵀ and Y = P V "
     "with the softmax rows between (vectorised exp), the Tq x Tk score tile in the task's "
     "scratch; nnplug's backward recomputes the probabilities from the forward's "
     "log-sum-exp (FlashAttention-2's formulation); PyTorch's row is autograd over "
     "`scaled_dot_product_attention` (matmul, softmax, matmul where that does not exist) and "
     "reuses the forward's saved tensors."),
]


def why_slower(names):
    lines = []
    for prefix, text in WHY_SLOWER:
        hit = [n for n in names if n.startswith(prefix)]
        if hit:
            lines.append(f"- **{', '.join(hit)}**: {text}")
            names = [n for n in names if n not in hit]
    if names:
        lines.append(f"- {', '.join(names)}.")
    return "\n".join(lines)


def ops_md(results, fig_dir, fig_rel):
    ops = results["ops"]
    limits = {r["name"]: r for r in (ops.get("limits") or {}).get("rows", [])}
    sg = [r["rate"] for n, r in limits.items() if n.startswith("limit sgemm")]
    peak = max(sg) if sg else None
    triad = limits.get("limit triad", {}).get("rate")
    several = len(ops.get("torch_all") or {}) > 1
    sections, all_rows, by_verdict, thresholds = [], [], {}, []
    for b, data in ops["nnplug"].items():
        torch_rows = {r["name"]: r for r in ops["torch"].get(b, {}).get("rows", [])}
        rows = []
        for r in data["rows"]:
            t = torch_rows.get(r["name"])
            ratio = r["median_us"] / t["median_us"] if t and t["median_us"] > 0 else None
            thr = noise(r.get("rounds_us", []), t.get("rounds_us", [])) if t else None
            if thr is not None:
                thresholds.append(thr)
            lim = ""
            if b == "cpu" and r["unit"] == "GFLOP/s":
                n = r["name"].split()[-1]
                ref = limits.get(f"limit sgemm {n}") if r["name"].startswith("gemm ") else None
                ref_rate = ref["rate"] if ref else peak
                if ref_rate:
                    lim = f"{100 * r['rate'] / ref_rate:.0f}% of {fmt(ref_rate)} " + \
                          ("(SGEMM same size)" if ref else "(best SGEMM)")
            elif b == "cpu" and r["unit"] == "GB/s" and triad:
                lim = f"{100 * r['rate'] / triad:.0f}% of {fmt(triad)} (triad)"
            rate = f"{fmt(r['rate'])} {r['unit']}" if r["unit"] else ""
            t_cell = "–"
            if t:
                t_cell = fmt(t["median_us"]) + (f" ({t['torch']})" if several and t.get("torch")
                                                 else "")
            rows.append([r["name"], r["shape"], fmt(r["median_us"]), rate, lim, t_cell,
                         noise_cell(thr), ratio_cell(ratio, thr)])
            if ratio is not None:
                name = f"{r['name']} ({b})" if b != "cpu" else r["name"]
                all_rows.append({"name": name, "ratio": ratio, "noise": thr})
                vd = verdict(ratio, thr)
                if vd:
                    by_verdict.setdefault(vd, []).append(name)
        sections.append(f"### Backend `{b}` ({data.get('description', '')}, "
                        f"{data.get('num_threads')} threads)\n\n" +
                        table(["op", "shape", "nnplug µs", "nnplug rate", "of the limit",
                               "faster PyTorch µs" if several else "PyTorch µs", "noise",
                               "time nnplug ÷ PyTorch"], rows))
    n_cmp = len(all_rows)
    if n_cmp:
        text = f"{n_cmp} rows have a PyTorch counterpart"
        text += (", each compared with the faster PyTorch on that row (its version beside its "
                 "time)." if several else ".")
        if thresholds:
            text += (" Noise threshold per row: the larger of the two sides' spread between "
                     "rounds ((largest − smallest) ÷ median), here "
                     f"{pct_range(thresholds)} (median "
                     f"{100 * statistics.median(thresholds):.0f}%); a ratio is called faster or "
                     "slower only when it differs from 1 by more. nnplug is faster on "
                     f"{len(by_verdict.get('faster', []))}, slower on "
                     f"{len(by_verdict.get('slower', []))} and within noise on "
                     f"{len(by_verdict.get('within noise', []))} of them"
                     + (": slower on " + ", ".join(by_verdict["slower"]) + "."
                        if by_verdict.get("slower") else "."))
        else:
            text += (" With a single round per row there is no noise threshold, and no row is "
                     "called faster or slower.")
        cpu_slower = [n for n in by_verdict.get("slower", []) if not n.endswith(")")]
        if cpu_slower:
            text += ("\n\nWhat the cpu backend does on the rows it is slower on:\n\n" +
                     why_slower(cpu_slower) + "\n\n")
    else:
        text = "No PyTorch comparison (see above)."
    text += (" PyTorch rows left out have no counterpart doing the same work (N-D "
             "convolutions, pooling variants, bias gradients, dispatch). `of the limit` divides "
             "nnplug's rate by the measured SGEMM of the same size (square GEMMs) or the best "
             "measured SGEMM (other compute rows), or by the triad bandwidth (memory-bound rows; "
             "the triad streams three 64 MiB arrays from memory, so a row whose data stay in "
             "the caches can exceed it).")
    fig = ""
    if all_rows:
        chart_ratios(results, all_rows, os.path.join(fig_dir, "benchmarks_op_ratios.png"))
        fig = f"![per-op time ratio nnplug / PyTorch]({fig_rel}/benchmarks_op_ratios.png)"
    lim_rows = [[r["name"], r["shape"], fmt(r["median_us"]), f"{fmt(r['rate'])} {r['unit']}"]
                for r in limits.values()]
    lim_md = table(["limit", "shape", "µs", "rate"], lim_rows) if lim_rows else "Not measured."
    return "\n\n".join(sections), text, fig, lim_md


def distributed_md(results):
    d = results["distributed"]
    if d.get("skipped"):
        return f"Skipped: {d['skipped']}."
    tr = results["training"].get("cnn/cpu", {})
    nm1, tm1 = tr.get("nnplug_median"), tr.get("torch_median")
    nm2, tm2 = d.get("nnplug_median"), d.get("torch_median")

    def row(label, n, t, nr, tr_):
        ratio = t / n if (n and t) else None
        thr = noise([x["images_per_second"] for x in nr], [x["images_per_second"] for x in tr_])
        return [label, " / ".join(fmt(x["images_per_second"]) for x in nr) + f" → **{fmt(n)}**",
                (" / ".join(fmt(x["images_per_second"]) for x in tr_) + f" → **{fmt(t)}**")
                if tr_ else "not run", noise_cell(thr), ratio_cell(ratio, thr)]
    rows = [row("1 process × 2 threads (the training table's cnn/cpu runs)", nm1, tm1,
                tr.get("nnplug", []), tr.get("torch", [])),
            row("2 ranks × 1 thread (nnplug `mpi` transport; PyTorch DDP over gloo)", nm2, tm2,
                d["nnplug"], d["torch"])]
    out = [f"The cnn on the first {d['images']} training images, 2 epochs per run (the first "
           "the warm-up), global batch 128 split across the ranks, nnplug and PyTorch "
           "alternated. PyTorch DDP runs `scripts/torch-ddp-bench.py` with "
           "`OPENBLAS_NUM_THREADS=1`"
           + (f" on PyTorch {d['torch_version']} (the faster one for the cnn)"
              if d.get("torch_version") else "") + ".", "",
           table(["configuration", "nnplug images/s (rounds → median)",
                  "PyTorch images/s (rounds → median)", "noise", "time nnplug ÷ PyTorch"],
                 rows)]
    comm = d.get("comm", {})
    if comm.get("rows"):
        out += ["", "`nnplug-comm-bench`: nnplug's all-reduce (float32 SUM, in place, on `cpu:0`) "
                "against a direct `MPI_Allreduce`, alternated, medians of the slowest rank"
                + (f" ({comm['header'].strip()})" if comm.get("header") else "") + ":", "",
                table(["size", "reps", "nnplug µs", "MPI_Allreduce µs", "nnplug ÷ MPI",
                       "nnplug GB/s"],
                      [[c["size"], c["reps"], fmt(c["nnplug_us"]), fmt(c["mpi_us"]),
                        f"{c['ratio']:.2f}", fmt(c["gb_per_s"])] for c in comm["rows"]])]
    return "\n".join(out)


ONNX_TARGETS = {"cnn": 1.0, "vit": 1.0, "resnet18": 1.5, "mobilenet_v2": 1.5}


def dirty_text(git):
    """What the page says after the commit when tracked files differed from it at the start:
    their names where the record has them (older records have only the flag)."""
    if not git.get("dirty"):
        return ""
    changed = git.get("changed") or []
    if not changed:
        return " (with uncommitted changes)"
    more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
    return " (with uncommitted changes to " + ", ".join(f"`{c}`" for c in changed[:5]) + more + ")"


def onnx_md(results):
    """The ONNX models' table: nnplug cpu eager and with graph launches, each against the
    onnxruntime timed beside it (records from before graphs runs timed onnxruntime compare
    both with the eager run's)."""
    o = results.get("onnx")
    if not o:
        return "Not run (a benchmark record from before this section)."
    if o.get("skipped"):
        return f"Skipped: {o['skipped']}."
    ort = o.get("onnxruntime")
    paired = any(v.get("graphs_onnxruntime_ms") for v in o["models"].values())
    rows = []
    for name, v in o["models"].items():
        cells = [f"`{name}`"]
        # each nnplug figure against the onnxruntime timed beside it (records from before graph
        # runs timed it: the eager run's)
        for key, ort_key in (("eager", "onnxruntime"),
                             ("graphs", "graphs_onnxruntime" if paired else "onnxruntime")):
            ms, ort_list = v.get(key + "_median"), v.get(ort_key + "_ms") or []
            ort_ms = statistics.median(ort_list) if ort_list else None
            thr = noise(v[key + "_ms"], ort_list) if ort_ms else None
            ratio = ms / ort_ms if (ms and ort_ms) else None
            cells += [" / ".join(fmt(x) for x in v[key + "_ms"]) + f" → **{fmt(ms)}**",
                      (" / ".join(fmt(x) for x in ort_list) + f" → **{fmt(ort_ms)}**")
                      if ort_ms else "not run",
                      ratio_cell(ratio, thr)]
        target = ONNX_TARGETS.get(name)
        cells.append(f"≤ {target:.1f}" if target else "–")
        rows.append(cells)
    where = ("in the same process as each nnplug run, the two alternating in blocks of "
             "0.25 s, each after an untimed pause of 0.05 s (the other side's idle threads asleep) "
             "and with its first run untimed" if paired else "in the eager run's process")
    text = [f"`python -m nnplug.onnx bench MODEL --backend cpu --batch {o['batch']}` on the six "
            "models of `scripts/make_onnx_models.py` (random weights; torchvision's at "
            + ("32×32, `--small`" if results.get("quick") else "224×224") + "), "
            "run by `" + o["runner"] + "`: milliseconds per `Model.run` (host arrays in and "
            "out), median of each round's timed runs, then the median of the rounds; eager runs "
            "(one Python call per node) and graph launches (`--graphs`: one captured graph per "
            "run), beside "
            + (f"onnxruntime {ort}'s CPU execution provider (default threads) {where}."
               if ort else "no onnxruntime (not installed)."),
            "The ratios are nnplug's time ÷ onnxruntime's; the targets are those of the ONNX "
            "runner's issue (batch 32, cpu).", ""]
    head = ["model", "nnplug eager ms (rounds → median)", "onnxruntime ms", "÷ onnxruntime",
            "nnplug graphs ms (rounds → median)", "onnxruntime ms", "÷ onnxruntime", "target"]
    text.append(table(head, rows))
    return "\n".join(text)


def overhead_md(results):
    """The Python call overhead table (scripts/bench/python_overhead.py)."""
    po = results.get("python_overhead")
    if not po:
        return "Not run (a benchmark record from before this section)."
    rows = [[r["op"], r["inputs"], r["device"], fmt(r["median_us"]),
             f"{fmt(r['p10_us'])}–{fmt(r['p90_us'])}",
             f"{r['target_us']:.0f}" if r.get("target_us") else "–",
             "–" if r.get("target_us") is None else ("met" if r["ok"] else "**missed**")]
            for r in po["rows"]]
    return "\n".join([
        "`scripts/bench/python_overhead.py`: wall time of one call of a 4×4 op from Python "
        f"(median over {po['repeats']} batches of {po['number']} calls; p10–p90 across the "
        "batches) with each kind of input: DeviceArrays already on the device, numpy arrays "
        "(copied in and out), torch tensors (DLPack), each with and without `out=`. numpy's "
        "`@` and `torch.mm` on the same 4×4 matrices are the floor of a Python call.", "",
        table(["op", "inputs", "device", "median µs", "p10–p90 µs", "target µs", ""], rows)])


def write(results, out_dir):
    fig_dir = os.path.join(out_dir, "figures")
    os.makedirs(fig_dir, exist_ok=True)
    m = results["machine"]
    threads = results["threads"]
    chart_training(results, os.path.join(fig_dir, "benchmarks_training.png"))
    ops_tables, ops_text, ops_fig, limits_md = ops_md(results, fig_dir, "figures")
    training_table, training_text = training_md(results)
    ts = results.get("torch_skipped")
    torches = m.get("torches") or ([m["torch"]] if m.get("torch") else [])
    torch_status = (f"**The PyTorch comparison was skipped**: {ts}; the PyTorch columns are "
                    "empty." if ts else
                    "PyTorch " + ", ".join(f"{t['version']} (`{t.get('python')}`)"
                                           for t in torches) +
                    ("; every row compares with the faster of them for that row." if
                     len(torches) > 1 else "."))
    total = sum(p.get("seconds", 0) for p in results.get("phases", []))
    phases = ", ".join(f"{p['name']} {p['seconds']:.0f} s" for p in results.get("phases", [])
                       if "seconds" in p)
    with open(os.path.join(HERE, "benchmarks.md.in")) as f:
        tmpl = string.Template(f.read())
    doc = tmpl.substitute(
        command=results.get("command") or "scripts/benchmark.sh",
        date=m["date"], commit=m["git"]["commit"][:12],
        dirty=dirty_text(m["git"]),
        total=f"{total:.0f} s ({phases})" if phases else "(not recorded)",
        quick_note=("\n\n**This is a `--quick` smoke run**: tiny step counts and one round; its "
                    "figures are not benchmarks." if results.get("quick") else ""),
        machine=machine_md(m, threads), rounds=f"{results['rounds']} round"
        + ("s" if results["rounds"] != 1 else ""), threads=threads,
        reps=results["config"]["reps"], warmup=results["config"]["warmup"],
        torch_status=torch_status, training_table=training_table,
        training_text=training_text, training_figure="figures/benchmarks_training.png",
        ops_text=ops_text, ops_tables=ops_tables, ops_figure=ops_fig, limits_table=limits_md,
        distributed=distributed_md(results), onnx=onnx_md(results),
        python_overhead=overhead_md(results), commands="\n".join(results.get("commands", [])))
    with open(os.path.join(out_dir, "benchmarks.md"), "w") as f:
        f.write(doc)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", help="benchmarks.json written by scripts/benchmark.sh")
    p.add_argument("--out", help="folder of benchmarks.md and figures/ (default: the JSON's)")
    args = p.parse_args()
    try:
        with open(args.results) as f:
            results = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"report: cannot read {args.results}: {e}")
    write(results, args.out or os.path.dirname(os.path.abspath(args.results)))


if __name__ == "__main__":
    main()
