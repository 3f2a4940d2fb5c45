#!/usr/bin/python3
"""report.py — writes benchmarks.md (from the template benchmarks.md.in, string.Template) and
the PNG charts (matplotlib) from the raw results of scripts/benchmark.sh.

  /usr/bin/python3 scripts/bench/report.py docs/benchmarks.json [--out docs]

Only measured figures are written; a row without a PyTorch figure says why. A ratio above 1
(nnplug slower) is marked and listed in the text.
"""
import argparse
import json
import os
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


def is_slower(r):
    """nnplug slower: the ratio is above 1 as printed (two decimals)."""
    return r is not None and round(r, 2) > 1.0


def ratio_cell(r):
    if r is None:
        return "–"
    return f"**{r:.2f} slower**" if is_slower(r) else f"{r:.2f}"


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
    series = []
    for b in results["backends"]:
        series.append((f"nnplug {b}", [tr.get(f"{m}/{b}", {}).get("nnplug_median") for m in MODELS]))
        if any(tr.get(f"{m}/{b}", {}).get("torch_median") for m in MODELS):
            several = len(results["machine"].get("torches") or []) > 1
            series.append((f"PyTorch {b}" + (" (the faster per model)" if several else ""),
                           [tr[f"{m}/{b}"].get("torch_median") for m in MODELS]))
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(series)
    for i, (label, vals) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(MODELS))]
        bars = ax.bar([x for x, v in zip(xs, vals) if v], [v for v in vals if v], width,
                      label=label)
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(range(len(MODELS)))
    ax.set_xticklabels(MODELS)
    ax.set_ylabel("training images / s (log scale)")
    ax.set_title(f"Fashion-MNIST training, batch 128, {results['threads']} threads "
                 f"(medians of {results['rounds']} rounds)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def chart_ratios(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in rows if r["ratio"] is not None]
    fig, ax = plt.subplots(figsize=(7, 0.22 * len(rows) + 1.2))
    ys = range(len(rows))
    ax.barh(list(ys), [r["ratio"] for r in rows],
            color=["tab:red" if is_slower(r["ratio"]) else "tab:green" for r in rows])
    ax.set_yticks(list(ys))
    ax.set_yticklabels([r["name"] for r in rows], fontsize=6)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("time nnplug / time PyTorch (log scale; < 1: nnplug faster)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def training_md(results):
    tr, bks = results["training"], results["backends"]
    gpu = "cuda" in bks
    several = len({ver for v in tr.values() for ver in v.get("torch_medians", {})}) > 1
    header = ["model", "backend", "images per epoch", "nnplug images/s (rounds → median)",
              "PyTorch images/s (rounds → median)", "time nnplug ÷ PyTorch"]
    if several:
        header[4] = "fastest PyTorch: images/s (rounds → median)"
    if gpu:
        header.append("nnplug cuda ÷ cpu speed-up")
    rows, slower, faster, others = [], [], [], []
    for m in MODELS:
        for b in bks:
            v = tr.get(f"{m}/{b}")
            if not v:
                continue
            ns = [x["images_per_second"] for x in v["nnplug"]]
            ts = [x["images_per_second"] for x in v["torch"]]
            nm, tm = v["nnplug_median"], v["torch_median"]
            ratio = tm / nm if (nm and tm) else None
            if ratio is not None:
                (slower if is_slower(ratio) else faster).append(f"{m} on {b} ({ratio:.2f})")
            who = f"{v['torch_version']}: " if several and v.get("torch_version") else ""
            row = [m, b, v["images"],
                   " / ".join(fmt(x) for x in ns) + f" → **{fmt(nm)}**",
                   (who + " / ".join(fmt(x) for x in ts) + f" → **{fmt(tm)}**") if ts else
                   "not run", ratio_cell(ratio)]
            if several:
                others.extend(f"{m} on {b}: PyTorch {ver} {fmt(med)}"
                              for ver, med in v.get("torch_medians", {}).items()
                              if ver != v.get("torch_version"))
            if gpu:
                c = tr.get(f"{m}/cpu", {}).get("nnplug_median")
                row.append(f"{nm / c:.1f}×" if (b == "cuda" and c and nm) else "")
            rows.append(row)
    text = []
    if faster or slower:
        text.append("Time ratio = PyTorch's images/s ÷ nnplug's (the same images in both): "
                    "below 1 nnplug is faster.")
        if faster:
            text.append("nnplug is faster or equal on: " + ", ".join(faster) + ".")
        if slower:
            text.append("**nnplug is slower** on: " + ", ".join(slower) + ".")
        else:
            text.append("nnplug is slower on none of the measured models.")
    if others:
        text.append("Each row compares with the faster PyTorch for that model; the other's "
                    "medians (images/s): " + "; ".join(others) + ".")
    return table(header, rows), " ".join(text)


# What is known about why nnplug's cpu backend is slower on a row, by row-name prefix. Each
# text states facts of the implementation or measurements, and says where the cause is not
# established; it is printed only for rows the run measured as slower.
WHY_SLOWER = [
    ("conv fwd cnn.conv1", "one input channel: im2col + SGEMM has a depth of C·R·S = 9, far "
     "too shallow for the SGEMM kernel to reach its speed (PyTorch has oneDNN; which "
     "algorithm it picks for this layer was not checked). A direct kernel for few input "
     "channels is not written yet."),
    ("conv bwd_filter cnn.conv1", "one input channel: per image dW [32, 9] = dY · colᵀ is an "
     "SGEMM whose output has only C·R·S = 9 columns, far from the kernel's speed; a direct "
     "kernel for few input channels is not written yet."),
    ("gemm ", "nnplug splits a GEMM into one single-threaded SGEMM per thread (output panels or "
     "K slices, each packing the whole other operand; docs/cpu-backend.md); against a direct "
     "`cblas_sgemm` on the same shapes it is measured by `nnplug-bench --vs-blas 9`, which is "
     "not part of this run. The cause of this row's gap to PyTorch is not established."),
    ("relu ", "elementwise kernels are plain loops compiled for baseline x86-64 (SSE2, four "
     "floats per instruction); the plugin has AVX2 clones only for the Winograd transforms "
     "and dropout's Philox, while PyTorch's ATen kernels are built per CPU capability and "
     "dispatched at run time (AVX2, AVX-512). How much of the gap this explains is not "
     "measured."),
    ("maxpool2 bwd", "the backward recomputes each window's maximum from x (no stored "
     "indices) and is compiled for baseline x86-64 (see relu)."),
    ("layer_norm ", "two passes over each row of 64 elements with per-row scalar work, "
     "compiled for baseline x86-64 (see relu); rows this short leave little to vectorise."),
    ("gelu ", "erf and exp through nnplug's own vectorised polynomials (backends/cpu/vmath.hpp), "
     "compiled for baseline x86-64 (see relu). Not profiled further."),
    ("attention ", "PyTorch 1.13 has no fused attention: its forward keeps the probabilities "
     "and its backward reuses them, where nnplug's backward recomputes them from the "
     "log-sum-exp (FlashAttention-2's formulation), doing more arithmetic for less memory."),
]


def why_slower(names):
    lines = []
    for prefix, text in WHY_SLOWER:
        hit = [n for n in names if n.startswith(prefix)]
        if hit:
            lines.append(f"- **{', '.join(hit)}**: {text}")
            names = [n for n in names if n not in hit]
    lines += [f"- **{n}**: not analysed yet." for n in names]
    return "\n".join(lines)


def ops_md(results, fig_dir, fig_rel):
    ops = results["ops"]
    limits = {r["name"]: r for r in (ops.get("limits") or {}).get("rows", [])}
    sg = [r["rate"] for n, r in limits.items() if n.startswith("limit sgemm")]
    peak = max(sg) if sg else None
    triad = limits.get("limit triad", {}).get("rate")
    sections, all_rows, slower = [], [], []
    for b, data in ops["nnplug"].items():
        torch_rows = {r["name"]: r for r in ops["torch"].get(b, {}).get("rows", [])}
        rows = []
        for r in data["rows"]:
            t = torch_rows.get(r["name"])
            ratio = r["median_us"] / t["median_us"] if t and t["median_us"] > 0 else None
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
            rows.append([r["name"], r["shape"], fmt(r["median_us"]), rate, lim,
                         fmt(t["median_us"]) if t else "–", ratio_cell(ratio)])
            if ratio is not None:
                all_rows.append({"name": f"{r['name']} ({b})" if b != "cpu" else r["name"],
                                 "ratio": ratio})
                if is_slower(ratio):
                    slower.append(r["name"] + (f" ({b})" if b != "cpu" else ""))
        sections.append(f"### Backend `{b}` ({data.get('description', '')}, "
                        f"{data.get('num_threads')} threads)\n\n" +
                        table(["op", "shape", "nnplug µs", "nnplug rate", "of the limit",
                               "PyTorch µs", "time nnplug ÷ PyTorch"], rows))
    n_cmp = len(all_rows)
    if n_cmp:
        text = (f"{n_cmp} rows have a PyTorch counterpart; nnplug is slower on {len(slower)} of "
                f"them" + (": " + ", ".join(slower) + "." if slower else "."))
        cpu_slower = [n for n in slower if not n.endswith(")")]
        if cpu_slower:
            text += ("\n\nWhere the cpu backend is slower, and what is known of why:\n\n" +
                     why_slower(cpu_slower) + "\n\n")
    else:
        text = "No PyTorch comparison (see above)."
    text += (" PyTorch rows left out have no counterpart doing the same work (N-D "
             "convolutions, pooling variants, bias gradients, dispatch). `of the limit` divides "
             "nnplug's rate by the measured SGEMM of the same size (square GEMMs) or the best "
             "measured SGEMM (other compute rows), or by the triad bandwidth (memory-bound rows; the triad streams three 64 MiB arrays from "
             "memory, so a row whose data stay in the caches can exceed it).")
    fig = ""
    if all_rows:
        chart_ratios(all_rows, os.path.join(fig_dir, "benchmarks_op_ratios.png"))
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
        return [label, " / ".join(fmt(x["images_per_second"]) for x in nr) + f" → **{fmt(n)}**",
                (" / ".join(fmt(x["images_per_second"]) for x in tr_) + f" → **{fmt(t)}**")
                if tr_ else "not run", ratio_cell(ratio)]
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
                  "PyTorch images/s (rounds → median)", "time nnplug ÷ PyTorch"], rows)]
    comm = d.get("comm", {})
    if comm.get("rows"):
        out += ["", "`nnplug-comm-bench`: nnplug's all-reduce (float32 SUM, in place, on `cpu:0`) "
                "against a direct `MPI_Allreduce`, alternated, medians of the slowest rank"
                + (f" ({comm['header'].strip()})" if comm.get("header") else "") + ":", "",
                table(["size", "reps", "nnplug µs", "MPI_Allreduce µs", "nnplug ÷ MPI",
                       "nnplug GB/s"],
                      [[c["size"], c["reps"], fmt(c["nnplug_us"]), fmt(c["mpi_us"]),
                        ratio_cell(c["ratio"]), fmt(c["gb_per_s"])] for c in comm["rows"]])]
    return "\n".join(out)


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
                    ("; training compares with the faster of them per model, per-op times "
                     f"with {torches[0]['version']}." if len(torches) > 1 else "."))
    total = sum(p.get("seconds", 0) for p in results.get("phases", []))
    phases = ", ".join(f"{p['name']} {p['seconds']:.0f} s" for p in results.get("phases", [])
                       if "seconds" in p)
    with open(os.path.join(HERE, "benchmarks.md.in")) as f:
        tmpl = string.Template(f.read())
    doc = tmpl.substitute(
        command=results.get("command") or "scripts/benchmark.sh",
        date=m["date"], commit=m["git"]["commit"][:12],
        dirty=" (with uncommitted changes)" if m["git"].get("dirty") else "",
        total=f"{total:.0f} s ({phases})" if phases else "(not recorded)",
        quick_note=("\n\n**This is a `--quick` smoke run**: tiny step counts and one round; its "
                    "figures are not benchmarks." if results.get("quick") else ""),
        machine=machine_md(m, threads), rounds=f"{results['rounds']} round"
        + ("s" if results["rounds"] != 1 else ""), threads=threads,
        reps=results["config"]["reps"], warmup=results["config"]["warmup"],
        torch_status=torch_status, training_table=training_table,
        training_text=training_text, training_figure="figures/benchmarks_training.png",
        ops_text=ops_text, ops_tables=ops_tables, ops_figure=ops_fig, limits_table=limits_md,
        distributed=distributed_md(results), commands="\n".join(results.get("commands", [])))
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
