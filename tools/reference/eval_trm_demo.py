#!/usr/bin/env python3
"""Measures the shipped TRM Sudoku demo model with tools/reference/trm_ref.py (docs/trm_demo.md).

Reads the model folder the way the reference's evaluation does: `all_config.yaml` (its
`data_paths[0]`, relative to the model folder), the sizes from `<data>/train/dataset.json`, the
newest `step_N`, and the test split `<data>/test/` (collated as the reference collates a test
batch). Runs every test puzzle for up to 16 supervision steps and prints

    steps=S accuracy=A                       for S = 1, 2, 4, 8, 16 (fixed number of steps)
    steps=auto accuracy=A mean_steps=M       Q-halt: a puzzle stops after the first step whose
                                             q_halt > 0 (at most 16 steps)

(A = exact-puzzle accuracy: every cell right), and writes them with per-puzzle detail to
`<model>/expected.json`, so that a C++ demo can be checked against these numbers.

    python3 tools/reference/eval_trm_demo.py --model examples/models/trm_sudoku

Fixed S: the predictions after step S of one 16-step run (a step never depends on later ones, so
this is the run stopped at S). Q-halt: trm_ref's solve(halting="q").

When `<data>/validation/` exists (tools/reference/split_trm_demo.py writes it), a halting
threshold is chosen there (the best accuracy, then the fewest mean steps) and the test split gets
one more line, `steps=auto(q_halt>X) ...`; expected.json records X as `halt_threshold`, which
`muninn demo` reads.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import trm_ref as R  # noqa: E402
import make_trm_fixtures as FX  # noqa: E402

FIXED_STEPS = (1, 2, 4, 8, 16)
MAX_STEPS = 16


THRESHOLDS = [x / 4 for x in range(-16, 33)]  # -4 .. 8 in steps of 0.25


def load_split(split_dir):
    meta = json.load(open(os.path.join(split_dir, "dataset.json")))
    arrays = {k: np.load(os.path.join(split_dir, f"all__{k}.npy")) for k in
              ("inputs", "labels", "puzzle_identifiers", "puzzle_indices", "group_indices")}
    batch, _ = FX.example_batch(arrays, meta, range(len(arrays["inputs"])))
    return arrays, batch


def stop_at_threshold(trace, threshold):
    """Per puzzle: the first step whose q_halt > threshold (else the last), and that step's
    predictions (the run stopped there: a step never depends on later ones)."""
    q = torch.stack([r["q_halt"] for r in trace])  # [S, B]
    over = q > threshold
    steps = torch.where(over.any(0), over.float().argmax(0) + 1, torch.full_like(over[0], len(trace), dtype=torch.long))
    preds = torch.stack([r["preds"] for r in trace])  # [S, B, L]
    return steps, preds[steps - 1, torch.arange(q.shape[1])]


def calibrate(model, batch):
    """The threshold chosen on the validation split: the best exact accuracy within 16 steps,
    ties broken by fewer mean steps, then by the smaller threshold."""
    labels = batch["labels"]
    valid = labels != R.IGNORE_LABEL_ID
    with torch.no_grad():
        trace = model.solve(batch, MAX_STEPS)["trace"]
    rows = []
    for x in THRESHOLDS:
        steps, preds = stop_at_threshold(trace, x)
        acc = float(((preds == labels) | ~valid).all(-1).float().mean())
        rows.append((x, acc, float(steps.float().mean())))
    best = min(rows, key=lambda r: (-r[1], r[2], r[0]))
    return best, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.path.join(HERE, "..", "..", "examples", "models", "trm_sudoku"))
    ap.add_argument("--no-write", action="store_true", help="print only; leave expected.json alone")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--train-data", default=None,
                    help="the full dataset train_trm.py wrote (--data): also report the accuracy on test "
                         "puzzles that are / are not equivalent to a training puzzle under the augmentations")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.time()
    folder = args.model
    y = yaml.safe_load(open(os.path.join(folder, "all_config.yaml")))
    data_rel = y["data_paths"][0]
    data = os.path.join(folder, data_rel)
    cfg, model = R.read_run(folder, data)
    model.eval()
    ckpt = sorted((int(n[5:]), n) for n in os.listdir(folder) if n.startswith("step_") and n[5:].isdigit())[-1][1]

    test_dir = os.path.join(data, "test")
    meta = json.load(open(os.path.join(test_dir, "dataset.json")))
    arrays = {k: np.load(os.path.join(test_dir, f"all__{k}.npy")) for k in
              ("inputs", "labels", "puzzle_identifiers", "puzzle_indices", "group_indices")}
    n = len(arrays["inputs"])
    batch, _ = FX.example_batch(arrays, meta, range(n))
    labels = batch["labels"]
    valid = labels != R.IGNORE_LABEL_ID

    def exact(preds):
        return ((preds == labels) | ~valid).all(-1)

    with torch.no_grad():
        fixed = model.solve(batch, MAX_STEPS)
        q = model.solve(batch, MAX_STEPS, halting="q")
    lines, results = [], {"fixed": [], "auto": None}
    for s in FIXED_STEPS:
        ok = exact(fixed["trace"][s - 1]["preds"])
        acc = float(ok.float().mean())
        lines.append(f"steps={s} accuracy={acc:.4f}")
        results["fixed"].append(dict(steps=s, correct=int(ok.sum()), accuracy=round(acc, 6),
                                     exact="".join("1" if v else "0" for v in ok.tolist())))
    ok = exact(q["preds"])
    acc, mean_steps = float(ok.float().mean()), float(q["steps"].float().mean())
    lines.append(f"steps=auto accuracy={acc:.4f} mean_steps={mean_steps:.4f}")
    results["auto"] = dict(rule=cfg.halt_rule, max_steps=MAX_STEPS, correct=int(ok.sum()), accuracy=round(acc, 6),
                           mean_steps=round(mean_steps, 6), steps=q["steps"].tolist(),
                           steps_histogram=np.bincount(q["steps"].numpy(), minlength=MAX_STEPS + 1)[1:].tolist(),
                           exact="".join("1" if v else "0" for v in ok.tolist()))
    calibration = None
    val_dir = os.path.join(data, "validation")
    if os.path.isdir(val_dir):
        _, val_batch = load_split(val_dir)
        (x, vacc, vsteps), rows = calibrate(model, val_batch)
        steps, preds = stop_at_threshold(fixed["trace"], x)
        ok = exact(preds)
        acc, mean_steps = float(ok.float().mean()), float(steps.float().mean())
        lines.append(f"steps=auto(q_halt>{x:g}) accuracy={acc:.4f} mean_steps={mean_steps:.4f}")
        calibration = dict(split=f"{data_rel}/validation", puzzles=len(val_batch["labels"]), threshold=x,
                           validation_accuracy=round(vacc, 6), validation_mean_steps=round(vsteps, 6),
                           rule="the best validation accuracy within 16 steps, then the fewest mean steps, then the "
                                "smaller threshold, over -4 .. 8 in steps of 0.25",
                           test_correct=int(ok.sum()), test_accuracy=round(acc, 6), test_mean_steps=round(mean_steps, 6),
                           sweep=[dict(threshold=r[0], accuracy=round(r[1], 6), mean_steps=round(r[2], 6)) for r in rows])
    for line in lines:
        print(line)

    # how close the decisions are to their boundaries (what an fp32 port must reproduce)
    tr = fixed["trace"]
    qmargin = float(torch.stack([r["q_halt"] for r in tr]).abs().min())
    top2 = torch.stack([r["logits"] for r in tr]).topk(2, dim=-1).values
    pmargin = float((top2[..., 0] - top2[..., 1]).min())
    e = {
        "about": "the TRM Sudoku demo measured with tools/reference/trm_ref.py (fp32, CPU); "
                 "written by tools/reference/eval_trm_demo.py",
        "torch_version": torch.__version__.split("+")[0],
        "command": "python3 tools/reference/eval_trm_demo.py --model examples/models/trm_sudoku",
        "files": {"checkpoint": ckpt, "config": "all_config.yaml",
                  "sizes_from": f"{data_rel}/train/dataset.json", "test_split": f"{data_rel}/test"},
        "metric": "exact-puzzle accuracy: every cell of the puzzle predicted right (argmax, first index on ties)",
        "test_puzzles": n,
        "lines": lines,
        "fixed": results["fixed"],
        "auto": results["auto"],
        "margins": {"min_abs_q_halt_over_all_steps": round(qmargin, 6),
                    "min_pred_top1_top2_over_all_steps": round(pmargin, 6)},
    }
    if calibration:
        e["halt_threshold"] = calibration["threshold"]
        e["calibration"] = calibration
    if args.train_data:
        import train_trm as TT
        tr_in = np.load(os.path.join(args.train_data, "train", "all__inputs.npy"))
        tr_pi = np.load(os.path.join(args.train_data, "train", "all__puzzle_indices.npy"))
        seen_classes = {TT.canonical(x.astype(np.int64) - 1) for x in tr_in[tr_pi[:-1]]}
        seen = torch.tensor([TT.canonical(x.astype(np.int64) - 1) in seen_classes for x in arrays["inputs"]])
        split = {}
        for name, m in (("class_seen_in_training", seen), ("class_unseen", ~seen)):
            row = {"puzzles": int(m.sum())}
            for s in FIXED_STEPS:
                row[f"steps={s}"] = round(float(exact(fixed["trace"][s - 1]["preds"])[m].float().mean()), 4)
            row["steps=auto"] = round(float(exact(q["preds"])[m].float().mean()), 4)
            row["mean_steps"] = round(float(q["steps"][m].float().mean()), 4)
            split[name] = row
            print(name, row, file=sys.stderr)
        e["by_class"] = split
    if not args.no_write:
        with open(os.path.join(folder, "expected.json"), "w") as f:
            json.dump(e, f, indent=1)
            f.write("\n")
    print(f"({n} test puzzles, {time.time() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
