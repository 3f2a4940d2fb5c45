#!/usr/bin/python3
"""plot_runs.py — turns training logs (the --log CSV of examples/c/train and
examples/python/train.py) into one PNG: train loss, and train and test accuracy, per epoch;
one line per run, labelled by backend and model (and the file name when two runs share both).

  /usr/bin/python3 examples/python/plot_runs.py runs_cpu.csv runs_reference.csv -o runs.png

A CSV may hold several runs (rows appended by several invocations): a run starts again
wherever the epoch number does not grow or the model/backend changes.
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


def read_runs(path):
    """List of runs; each run is dict(label=..., rows=[...]) with numeric fields converted."""
    try:
        f = open(path, newline="")
    except OSError as e:
        sys.exit(f"plot_runs: error: cannot open {path}: {e.strerror}")
    with f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            sys.exit(f"plot_runs: error: {path} is not a training log: missing columns "
                     f"{', '.join(missing)}")
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
    return runs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("logs", nargs="+", help="CSV files written with --log")
    p.add_argument("-o", "--output", default="runs.png", help="PNG to write (default runs.png)")
    p.add_argument("--title", default="nnplug on Fashion-MNIST")
    args = p.parse_args()
    runs = [r for path in args.logs for r in read_runs(path)]
    if not runs:
        sys.exit("plot_runs: error: the logs hold no rows")
    names = [f"{r['backend']} {r['model']}" for r in runs]
    for i, r in enumerate(runs):
        label = names[i]
        if names.count(label) > 1:
            label += f" ({r['file']} #{names[:i + 1].count(label)})"
        r["label"] = label

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4.2))
    for r in runs:
        ep = [x["epoch"] for x in r["rows"]]
        line, = ax_loss.plot(ep, [x["train_loss"] for x in r["rows"]], marker="o",
                             label=r["label"])
        ax_acc.plot(ep, [x["test_accuracy"] for x in r["rows"]], marker="o", color=line.get_color(),
                    label=f"{r['label']} test")
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
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output} ({len(runs)} run(s))")


if __name__ == "__main__":
    main()
