#!/usr/bin/env python3
"""Makes the TRM Sudoku demo's evaluation splits disjoint from its training data under the
augmentations (docs/trm_demo.md): rebuilds the training split exactly as train_trm.py wrote it
(same generator, same seed), keeps the shipped test puzzles that are equivalent to no training
puzzle under the Sudoku builder's symmetries (transpose, band / row-in-band, stack /
column-in-stack permutations, digits relabelled), and divides them by equivalence class between

    <data>/validation/   every third class (in order of first appearance): where the halting
                         threshold is chosen (tools/reference/eval_trm_demo.py)
    <data>/test/         the other classes: what the demo reports

so no puzzle of one split is a variant of a puzzle of another or of a training puzzle. The
training split itself is not shipped (16 000 examples); this script needs only the generator.

    python3 tools/reference/split_trm_demo.py --model examples/models/trm_sudoku

Run it once on the split train_trm.py shipped (it refuses a test split the generator did not
write, so a second run is an error, not a second cut).
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_trm_fixtures as FX  # noqa: E402
import train_trm as TT  # noqa: E402


# train_trm.py's defaults, the shipped recipe (train_run.json's command gives no data flags).
RECIPE = dict(n_train=2000, num_aug=7, n_test=1000, n_val=128, seed=1234, min_givens=4, max_givens=8)


def subset(arrays, rows):
    """Rows of an unaugmented split (one puzzle per group) as a split of their own."""
    n = len(rows)
    return {"inputs": arrays["inputs"][rows], "labels": arrays["labels"][rows],
            "group_indices": np.arange(n + 1, dtype=np.int32), "puzzle_indices": np.arange(n + 1, dtype=np.int32),
            "puzzle_identifiers": np.zeros(n, dtype=np.int32)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.path.join(HERE, "..", "..", "examples", "models", "trm_sudoku"))
    a = ap.parse_args()
    data = os.path.join(a.model, yaml.safe_load(open(os.path.join(a.model, "all_config.yaml")))["data_paths"][0])
    args = RECIPE
    with tempfile.TemporaryDirectory() as tmp:
        train, test, _ = TT.make_data(tmp, args["n_train"], args["num_aug"], args["n_test"], args["n_val"],
                                      args["seed"], args["min_givens"], args["max_givens"])
    shipped = {k: np.load(os.path.join(data, "test", f"all__{k}.npy")) for k in ("inputs", "labels")}
    if not (np.array_equal(shipped["inputs"], test["inputs"]) and np.array_equal(shipped["labels"], test["labels"])):
        raise SystemExit(f"{data}/test is not the split train_trm.py's generator wrote (already divided?)")
    seen = {TT.canonical(x.astype(np.int64) - 1) for x in train["inputs"]}
    classes = {}  # class -> rows of the shipped test split, in order of first appearance
    for i, x in enumerate(test["inputs"]):
        c = TT.canonical(x.astype(np.int64) - 1)
        if c not in seen:
            classes.setdefault(c, []).append(i)
    val_rows, test_rows = [], []
    for k, rows in enumerate(classes.values()):
        (val_rows if k % 3 == 0 else test_rows).extend(rows)
    val_rows.sort()
    test_rows.sort()
    meta = json.load(open(os.path.join(data, "test", "dataset.json")))
    for name, rows in (("validation", val_rows), ("test", test_rows)):
        m = dict(meta, total_groups=len(rows), total_puzzles=len(rows))
        FX.save_split(os.path.join(data, name), subset(test, np.array(rows)), m)
    print(f"shipped test puzzles {len(test['inputs'])}: equivalent to a training puzzle "
          f"{len(test['inputs']) - len(val_rows) - len(test_rows)}; unseen {len(val_rows) + len(test_rows)} in "
          f"{len(classes)} classes -> validation {len(val_rows)}, test {len(test_rows)}")


if __name__ == "__main__":
    main()
