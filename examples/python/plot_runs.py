#!/usr/bin/python3
"""plot_runs.py — turns training logs of examples/c/train and examples/python/train.py into one
PNG. Each file is recognised by its header:

- a --log CSV (epoch,model,backend,train_loss,...): train loss, and train and test accuracy, per
  epoch; one line per run, labelled by backend and model (and the file name when two runs share
  both). A file may hold several runs (rows appended by several invocations): a run starts again
  wherever the epoch number does not grow or the model/backend changes.
- a --loss-log CSV (epoch,step,loss: the loss of every training step, step counted from 1 in
  each epoch): the loss against the step counted over all epochs, one line per file (labelled
  by the file name), with its running mean over a window of 1/50 of the run.

Given both kinds, the figure has the per-epoch panels and the per-step panel side by side.

  /usr/bin/python3 examples/python/plot_runs.py runs_cpu.csv runs_reference.csv -o runs.png
  /usr/bin/python3 examples/python/plot_runs.py losses.csv -o losses.png
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLUMNS = ["epoch", "model", "backend", "train_loss", "train_accuracy", "test_accuracy",
           "seconds", "images_per_second"]
STEP_COLUMNS = ["epoch", "step", "loss"]


def read_runs(path):
    """(kind, runs): kind "epoch" (a --log file) or "step" (a --loss-log file); each run is a
    dict with its rows, numeric fields converted."""
    try:
        f = open(path, newline="")
    except OSError as e:
        sys.exit(f"plot_runs: error: cannot open {path}: {e.strerror}")
    with f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames or []
        if fields == STEP_COLUMNS:
            return "step", read_step_runs(path, reader)
        missing = [c for c in COLUMNS if c not in fields]
        if missing:
            sys.exit(f"plot_runs: error: {path} is not a training log: missing columns "
                     f"{', '.join(missing)} (of a --log file), and its header is not "
                     f"{','.join(STEP_COLUMNS)} (of a --loss-log file)")
        runs = []
        for line, row in enumerate(reader, 2):
            try:
                rec = {"epoch": int(row["epoch"]), "model": row["model"],
                       "backend": row["backend"]}
                for c in COLUMNS[3:]:
                    rec[c] = float(row[c])
            except (TypeError, ValueError):
                sys.exit(f"plot_runs: error: {path}:{line}: malformed row {row}")
            last = runs[-1] if runs else None
            if (last is None or rec["epoch"] <= last["rows"][-1]["epoch"]
                    or rec["model"] != last["model"] or rec["backend"] != last["backend"]):
                runs.append({"model": rec["model"], "backend": rec["backend"], "rows": [],
                             "file": os.path.basename(path)})
            runs[-1]["rows"].append(rec)
    return "epoch", runs


def read_step_runs(path, reader):
    """The runs of a --loss-log file: each row's step x counted over all epochs of its run; a
    run starts again wherever (epoch, step) does not grow."""
    runs = []
    for line, row in enumerate(reader, 2):
        try:
            epoch, step, loss = int(row["epoch"]), int(row["step"]), float(row["loss"])
        except (TypeError, ValueError):
            sys.exit(f"plot_runs: error: {path}:{line}: malformed row {row}")
        if epoch < 1 or step < 1:
            sys.exit(f"plot_runs: error: {path}:{line}: epoch and step count from 1: {row}")
        last = runs[-1]["rows"][-1] if runs else None
        if last is None or (epoch, step) <= (last["epoch"], last["step"]):
            runs.append({"file": os.path.basename(path), "rows": []})
            last = None
        x = 1 if last is None else last["x"] + (step - last["step"] if epoch == last["epoch"]
                                                else step)
        runs[-1]["rows"].append({"epoch": epoch, "step": step, "loss": loss, "x": x})
    return runs


def running_mean(values, window):
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot_steps(ax, runs):
    for i, r in enumerate(runs):
        label = r["file"] + (f" #{i + 1}" if [q["file"] for q in runs].count(r["file"]) > 1
                             else "")
        xs, ys = [x["x"] for x in r["rows"]], [x["loss"] for x in r["rows"]]
        line, = ax.plot(xs, ys, linewidth=0.6, alpha=0.35)
        ax.plot(xs, running_mean(ys, max(1, len(ys) // 50)), color=line.get_color(),
                label=label)
        # epoch boundaries: the first step of every epoch after the first
        for x in r["rows"][1:]:
            if x["step"] == 1 and len(runs) == 1:
                ax.axvline(x["x"], color="grey", linewidth=0.5, alpha=0.5)
    ax.set(title="loss per training step (thick: running mean)",
           xlabel="step (over all epochs)", ylabel="loss")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("logs", nargs="+", help="CSV files written with --log or --loss-log")
    p.add_argument("-o", "--output", default="runs.png", help="PNG to write (default runs.png)")
    p.add_argument("--title", default="nnplug on Fashion-MNIST")
    args = p.parse_args()
    runs, step_runs = [], []
    for path in args.logs:
        kind, found = read_runs(path)
        (step_runs if kind == "step" else runs).extend(found)
    if not runs and not step_runs:
        sys.exit("plot_runs: error: the logs hold no rows")
    names = [f"{r['backend']} {r['model']}" for r in runs]
    for i, r in enumerate(runs):
        label = names[i]
        if names.count(label) > 1:
            label += f" ({r['file']} #{names[:i + 1].count(label)})"
        r["label"] = label

    n_panels = (2 if runs else 0) + (1 if step_runs else 0)
    fig, axes = plt.subplots(1, n_panels, figsize=(5.5 * n_panels, 4.2), squeeze=False)
    axes = list(axes[0])
    if runs:
        ax_loss, ax_acc = axes[0], axes[1]
        for r in runs:
            ep = [x["epoch"] for x in r["rows"]]
            line, = ax_loss.plot(ep, [x["train_loss"] for x in r["rows"]], marker="o",
                                 label=r["label"])
            ax_acc.plot(ep, [x["test_accuracy"] for x in r["rows"]], marker="o",
                        color=line.get_color(), label=f"{r['label']} test")
            ax_acc.plot(ep, [x["train_accuracy"] for x in r["rows"]], linestyle="--",
                        color=line.get_color(), marker="x", label=f"{r['label']} train")
        ax_loss.set(title="train loss (mean cross-entropy)", xlabel="epoch", ylabel="loss")
        ax_acc.set(title="accuracy (solid: test, dashed: train)", xlabel="epoch",
                   ylabel="accuracy")
        for ax in (ax_loss, ax_acc):
            ax.grid(alpha=0.3)
            ax.xaxis.get_major_locator().set_params(integer=True)
        ax_loss.legend(fontsize=8)
        ax_acc.legend(fontsize=7, ncol=1)
    if step_runs:
        plot_steps(axes[-1], step_runs)
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    what = [f"{len(runs)} run(s)"] if runs else []
    what += [f"{len(step_runs)} per-step run(s)"] if step_runs else []
    print(f"wrote {args.output} ({', '.join(what)})")


if __name__ == "__main__":
    main()
