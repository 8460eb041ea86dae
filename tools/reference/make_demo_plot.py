"""Plot the demo's accuracy against the recurrence depth r (docs/demo.md).

Reads lines of the form ``r=<R> accuracy=<A> mean_steps=<S>`` -- the output of ``muninn demo`` --
from a file or stdin; other lines (the bar chart, progress output) are ignored.  ``r=auto`` is the
adaptive (exit criterion) setting; it is drawn at x = its mean number of steps.  A line may start
with a ``[label]`` to put it into a separate series (train_demo.py prints ``[zero]`` and
``[random]`` lines), so several runs can go into one plot.

    build/muninn demo | python3 tools/reference/make_demo_plot.py --out docs/demo.png
    python3 tools/reference/make_demo_plot.py run1.txt run2.txt --out docs/demo.png
    python3 tools/reference/make_demo_plot.py out.txt --reference examples/models/demo/demo.json ...

--reference adds the PyTorch accuracies stored in demo.json as a dashed line.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Dict, List, Optional, TextIO, Tuple

LINE = re.compile(
    r"(?:\[(?P<label>[^\]]+)\]\s*)?\br=(?P<r>auto|\d+)\s+accuracy=(?P<acc>[-+0-9.eE]+)"
    r"\s+mean_steps=(?P<steps>[-+0-9.eE]+)"
)

Series = Dict[str, Dict[str, list]]


def parse(stream: TextIO, default_label: str, series: Series) -> None:
    """Add the matching lines of stream to series[label] = {"fixed": [(r, acc)], "auto": [(steps, acc)]}."""
    for line in stream:
        m = LINE.search(line)
        if not m:
            continue
        label = m.group("label") or default_label
        s = series.setdefault(label, {"fixed": [], "auto": []})
        acc, steps = float(m.group("acc")), float(m.group("steps"))
        if m.group("r") == "auto":
            s["auto"].append((steps, acc))
        else:
            s["fixed"].append((int(m.group("r")), acc))


def plot(series: Series, out: str, title: str, reference: Optional[Dict[str, float]] = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    xs_all: List[float] = []
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, s) in enumerate(series.items()):
        c = colors[i % len(colors)]
        fixed = sorted(s["fixed"])
        if fixed:
            xs, ys = zip(*fixed)
            ax.plot(xs, ys, "o-", color=c, label=f"{label}: fixed r")
            xs_all += list(xs)
        for steps, acc in s["auto"]:
            ax.plot([steps], [acc], marker="*", markersize=15, color=c, linestyle="none",
                    markeredgecolor="black", label=f"{label}: adaptive (mean {steps:.1f} steps)")
            ax.annotate(f"auto\n{acc:.2f}", (steps, acc), textcoords="offset points", xytext=(8, -22),
                        fontsize=8)
            xs_all.append(steps)
    if reference:
        ref = sorted((int(r), a) for r, a in reference.items())
        xs, ys = zip(*ref)
        ax.plot(xs, ys, "--", color="gray", label="PyTorch reference")
        xs_all += list(xs)
    ax.set_xscale("log", base=2)
    if xs_all:
        ticks = sorted({int(x) for x in xs_all if float(x).is_integer() and x >= 1})
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlabel("recurrence steps r (log scale)")
    ax.set_ylabel("exact-match accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", help="files with demo output (default: stdin)")
    ap.add_argument("--out", required=True, help="PNG to write")
    ap.add_argument("--title", default="Muninn demo: accuracy vs recurrence depth")
    ap.add_argument("--label", default="muninn", help="series name for lines without [label]")
    ap.add_argument("--reference", help="demo.json whose reference_accuracy is drawn dashed")
    args = ap.parse_args(argv)

    series: Series = {}
    if args.inputs:
        for path in args.inputs:
            with open(path, "r", encoding="utf-8") as f:
                parse(f, args.label if len(args.inputs) == 1 else path, series)
    else:
        parse(sys.stdin, args.label, series)
    if not any(s["fixed"] or s["auto"] for s in series.values()):
        print("make_demo_plot: no 'r=<R> accuracy=<A> mean_steps=<S>' lines in the input", file=sys.stderr)
        return 1
    ref = None
    if args.reference:
        with open(args.reference, "r", encoding="utf-8") as f:
            ref = json.load(f)["reference_accuracy"]
    plot(series, args.out, args.title, ref)
    n = sum(len(s["fixed"]) + len(s["auto"]) for s in series.values())
    print(f"wrote {args.out} ({n} points, {len(series)} series)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
