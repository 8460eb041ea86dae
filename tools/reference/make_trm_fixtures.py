#!/usr/bin/env python3
"""Writes the TRM / HRM golden fixtures in tests/data/trm/ with tools/reference/trm_ref.py.

    python3 tools/reference/make_trm_fixtures.py --out tests/data/trm        # ~1 min on CPU

Optional cross-check against the reference code bases (not needed to write the fixtures):

    python3 tools/reference/make_trm_fixtures.py --out /tmp/trm \
        --upstream-trm PATH/TinyRecursiveModels --upstream-hrm PATH/HRM

Two tiny datasets in the reference's npy layout (data/sudoku4: a 4x4 Sudoku written the way the
Sudoku builder writes Sudoku-Extreme; data/arc4: an ARC-style set on a 4x4 canvas with several
examples per puzzle and one puzzle identifier per (task, augmentation)), and four checkpoint
folders in the released layout (`step_N` + `all_config.yaml`) with their expected outputs;
tests/data/trm/README.md describes every file and key. The script is seeded, single-threaded,
writes byte-identical files on every run and checks itself with assertions (check_case,
check_dataset, numpy_from_files, wrong_variants).
"""
import argparse
import dataclasses
import json
import math
import os
import shutil
import sys
import zipfile

import numpy as np
import torch
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import trm_ref as R  # noqa: E402
from fixture_json import dump, r8  # noqa: E402

# fp32 tolerance for two implementations' logits and q values after up to N_sup steps
LOGIT_TOL = 1e-4
# the fp32 reference must stay this close to a float64 run of the same weights at every step
# (random recursions are chaotic unless the block weights are scaled down: see GAIN)
MAX_FP64_DEV = 5e-6
# every Q-halt decision in an fp32 fixture is at least this far from its boundary
MIN_Q_MARGIN = 1e-3
# top-1 / top-2 logit gap of every prediction recorded for an fp32 fixture
MIN_PRED_MARGIN = 1e-4
# a deliberately wrong variant must move some recorded logit by more than this
MIN_WRONG_DELTA = 1e-2

N_SUP = 16            # halt_max_steps, the reference's value
RECORDED = (1, 2, N_SUP)

# ----------------------------------------------------------------------------------------------
# datasets (our own generators; the file layout, dtypes and dataset.json are the builders')

SUDOKU_META_KEYS = ("pad_id", "ignore_label_id", "blank_identifier_id", "vocab_size", "seq_len",
                    "num_puzzle_identifiers", "total_groups", "mean_puzzle_examples",
                    "total_puzzles", "sets")


def write_meta(folder, meta):
    """json.dump(PuzzleDatasetMetadata(...).model_dump(), f): field order of the class, one line,
    no trailing newline; mean_puzzle_examples is a float."""
    d = {k: meta[k] for k in SUDOKU_META_KEYS if k in meta}
    d["mean_puzzle_examples"] = float(d["mean_puzzle_examples"])
    with open(os.path.join(folder, "dataset.json"), "w") as f:
        json.dump(d, f)


def save_split(folder, arrays, meta):
    os.makedirs(folder, exist_ok=True)
    write_meta(folder, meta)
    for k in ("inputs", "labels", "group_indices", "puzzle_indices", "puzzle_identifiers"):
        np.save(os.path.join(folder, f"all__{k}.npy"), arrays[k])


def sudoku4_solution(rng):
    """A random valid 4x4 Sudoku (2x2 boxes): the base pattern under random symmetries."""
    base = np.array([[(2 * (r % 2) + r // 2 + c) % 4 + 1 for c in range(4)] for r in range(4)])
    digits = np.concatenate([[0], rng.permutation(4) + 1])
    rows = np.concatenate([b * 2 + rng.permutation(2) for b in rng.permutation(2)])
    cols = np.concatenate([s * 2 + rng.permutation(2) for s in rng.permutation(2)])
    g = digits[base[rows][:, cols]]
    return g.T if rng.random() < 0.5 else g


def sudoku4_valid(g):
    ok = all(sorted(g[r]) == [1, 2, 3, 4] for r in range(4)) and all(sorted(g[:, c]) == [1, 2, 3, 4] for c in range(4))
    return ok and all(sorted(g[r:r + 2, c:c + 2].ravel()) == [1, 2, 3, 4] for r in (0, 2) for c in (0, 2))


def shuffle_sudoku4(board, solution, rng):
    """The Sudoku builder's augmentation at 4x4: a digit permutation (blank kept), transpose with
    p = 0.5, band / row-in-band and stack / column-in-stack permutations. Returns int64 arrays
    (the builder's digit map is an int64 array, which is why augmented splits are int64)."""
    digit_map = np.pad(rng.permutation(np.arange(1, 5)), (1, 0))
    transpose = rng.random() < 0.5
    row_perm = np.concatenate([b * 2 + rng.permutation(2) for b in rng.permutation(2)])
    col_perm = np.concatenate([s * 2 + rng.permutation(2) for s in rng.permutation(2)])
    mapping = np.array([row_perm[i // 4] * 4 + col_perm[i % 4] for i in range(16)])

    def apply(x):
        if transpose:
            x = x.T
        return digit_map[x.flatten()[mapping].reshape(4, 4)]
    return apply(board), apply(solution)


def make_sudoku4(root, rng):
    """data/sudoku4: test split 8 puzzles (uint8, no augmentation), train split 4 puzzles x
    (1 + 2 augmentations) (int64). Tokens: 0 PAD, 1 blank, 2..5 digits 1..4 (vocab 6)."""
    def puzzle():
        sol = sudoku4_solution(rng)
        assert sudoku4_valid(sol)
        q = sol.copy()
        q.ravel()[rng.choice(16, size=int(rng.integers(6, 11)), replace=False)] = 0
        # as the builder reads its CSV: a digit string ('.' for blanks) -> uint8 - ord('0')
        qs = "".join(str(v) if v else "." for v in q.ravel())
        a = "".join(str(v) for v in sol.ravel())
        inp = np.frombuffer(qs.replace(".", "0").encode(), dtype=np.uint8).reshape(4, 4) - ord("0")
        lab = np.frombuffer(a.encode(), dtype=np.uint8).reshape(4, 4) - ord("0")
        return inp, lab

    out = {}
    for split, n, num_aug in (("train", 4, 2), ("test", 8, 0)):
        res = {k: [] for k in ("inputs", "labels", "puzzle_identifiers", "puzzle_indices", "group_indices")}
        res["puzzle_indices"].append(0)
        res["group_indices"].append(0)
        pid = eid = 0
        for _ in range(n):
            oi, ol = puzzle()
            for aug in range(1 + num_aug):
                inp, lab = (oi, ol) if aug == 0 else shuffle_sudoku4(oi, ol, rng)
                res["inputs"].append(inp)
                res["labels"].append(lab)
                eid += 1
                pid += 1
                res["puzzle_indices"].append(eid)
                res["puzzle_identifiers"].append(0)
            res["group_indices"].append(pid)

        def seq(s):
            arr = np.concatenate(s).reshape(len(s), -1)
            assert np.all((arr >= 0) & (arr <= 4))
            return arr + 1
        arrays = {"inputs": seq(res["inputs"]), "labels": seq(res["labels"]),
                  "group_indices": np.array(res["group_indices"], dtype=np.int32),
                  "puzzle_indices": np.array(res["puzzle_indices"], dtype=np.int32),
                  "puzzle_identifiers": np.array(res["puzzle_identifiers"], dtype=np.int32)}
        groups = len(arrays["group_indices"]) - 1
        # the Sudoku builder writes total_puzzles = number of groups (not of puzzles)
        meta = dict(seq_len=16, vocab_size=6, pad_id=0, ignore_label_id=0, blank_identifier_id=0,
                    num_puzzle_identifiers=1, total_groups=groups, mean_puzzle_examples=1,
                    total_puzzles=groups, sets=["all"])
        save_split(os.path.join(root, split), arrays, meta)
        out[split] = (arrays, meta)
    with open(os.path.join(root, "identifiers.json"), "w") as f:
        json.dump(["<blank>"], f)
    assert out["train"][0]["inputs"].dtype == np.int64 and out["test"][0]["inputs"].dtype == np.uint8
    return out


ARC_TASKS = ("recolour", "flip", "transpose")


def arc_apply(task, g):
    if task == "recolour":
        return np.where(g == 1, 2, np.where(g == 2, 1, g)).astype(np.uint8)
    if task == "flip":
        return np.fliplr(g).copy()
    return g.T.copy()


def arc_to_seq(inp, out, rng, translate):
    """The ARC builder's encoding on a 4x4 canvas: colours +2, PAD 0, an EOS (1) row under and
    column right of the grid, optional random top-left offset."""
    C = 4
    if translate:
        pr = int(rng.integers(0, C - max(inp.shape[0], out.shape[0]) + 1))
        pc = int(rng.integers(0, C - max(inp.shape[1], out.shape[1]) + 1))
    else:
        pr = pc = 0
    res = []
    for g in (inp, out):
        nr, nc = g.shape
        g = np.pad(g + 2, ((pr, C - pr - nr), (pc, C - pc - nc)), constant_values=0)
        er, ec = pr + nr, pc + nc
        if er < C:
            g[er, pc:ec] = 1
        if ec < C:
            g[pr:er, ec] = 1
        res.append(g.flatten())
    return res


def make_arc4(root, rng):
    """data/arc4: 3 tasks x 2 augmentations (identity, a colour permutation) = 6 puzzles with
    identifiers 1..6 (0 = blank); a group is a task's augmented variants. train: 3 examples per
    puzzle (translated, except one), test: 1 or 2 examples per puzzle (untranslated). uint8 tokens
    (0 PAD, 1 EOS, 2..11 colours; vocab 12), int32 indices."""
    ids = ["<blank>"]
    puzzles = []  # (task, colour map, identifier)
    for task in ARC_TASKS:
        group = []
        for aug in range(2):
            cmap = np.arange(10, dtype=np.uint8) if aug == 0 else \
                np.concatenate([[0], rng.permutation(np.arange(1, 10, dtype=np.uint8))]).astype(np.uint8)
            name = f"{task}" if aug == 0 else f"{task}_t0_{''.join(str(c) for c in cmap)}"
            ids.append(name)
            group.append((task, cmap, len(ids) - 1))
        puzzles.append(group)

    def example(task, cmap):
        h, w = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        g = rng.integers(0, 10, size=(h, w)).astype(np.uint8)
        return cmap[g], cmap[arc_apply(task, g)]

    out = {}
    for split in ("train", "test"):
        res = {k: [] for k in ("inputs", "labels", "puzzle_identifiers", "puzzle_indices", "group_indices")}
        res["puzzle_indices"].append(0)
        res["group_indices"].append(0)
        eid = pid = 0
        for gi, group in enumerate(puzzles):
            for pi, (task, cmap, ident) in enumerate(group):
                n = 3 if split == "train" else (2 if (gi, pi) == (0, 0) else 1)
                keep = int(rng.integers(0, n))
                for e in range(n):
                    i, o = example(task, cmap)
                    si, so = arc_to_seq(i, o, rng, translate=split == "train" and e != keep)
                    res["inputs"].append(si)
                    res["labels"].append(so)
                    eid += 1
                res["puzzle_indices"].append(eid)
                res["puzzle_identifiers"].append(ident)
                pid += 1
            res["group_indices"].append(pid)
        arrays = {"inputs": np.stack(res["inputs"], 0), "labels": np.stack(res["labels"], 0)}
        for k in ("puzzle_identifiers", "puzzle_indices", "group_indices"):
            arrays[k] = np.array(res[k], dtype=np.int32)
        meta = dict(seq_len=16, vocab_size=12, pad_id=0, ignore_label_id=0, blank_identifier_id=0,
                    num_puzzle_identifiers=len(ids), total_groups=len(puzzles),
                    mean_puzzle_examples=eid / pid, total_puzzles=pid, sets=["all"])
        save_split(os.path.join(root, split), arrays, meta)
        out[split] = (arrays, meta)
    with open(os.path.join(root, "identifiers.json"), "w") as f:
        json.dump(ids, f)
    assert out["test"][0]["inputs"].dtype == np.uint8
    return out


def check_dataset(root):
    """Reload a dataset folder as the reference's PuzzleDataset reads it and check the layout."""
    for split in ("train", "test"):
        d = os.path.join(root, split)
        meta = json.load(open(os.path.join(d, "dataset.json")))
        a = {k: np.load(os.path.join(d, f"all__{k}.npy")) for k in
             ("inputs", "labels", "puzzle_identifiers", "puzzle_indices", "group_indices")}
        N, P, G = len(a["inputs"]), len(a["puzzle_identifiers"]), len(a["group_indices"]) - 1
        assert a["inputs"].shape == a["labels"].shape == (N, meta["seq_len"])
        assert a["inputs"].dtype in (np.uint8, np.int64) and a["inputs"].dtype == a["labels"].dtype
        for k in ("puzzle_identifiers", "puzzle_indices", "group_indices"):
            assert a[k].dtype == np.int32 and a[k].ndim == 1
        pi, gi = a["puzzle_indices"], a["group_indices"]
        assert len(pi) == P + 1 and pi[0] == 0 and pi[-1] == N and np.all(np.diff(pi) >= 0)
        assert gi[0] == 0 and gi[-1] == P and np.all(np.diff(gi) >= 0)
        assert np.all((a["puzzle_identifiers"] >= 0) & (a["puzzle_identifiers"] < meta["num_puzzle_identifiers"]))
        assert a["inputs"].max() < meta["vocab_size"] and a["labels"].max() < meta["vocab_size"]
        assert meta["total_groups"] == G


def example_batch(arrays, meta, examples, pad_rows=0):
    """A test batch as the reference collates it: int32, labels equal to ignore_label_id -> -100,
    the puzzle identifier of each example found through puzzle_indices (searchsorted right - 1),
    padded rows: PAD inputs, -100 labels, the blank identifier."""
    pi = arrays["puzzle_indices"]
    rows_in = [arrays["inputs"][i].astype(np.int32) for i in examples]
    rows_lab = [arrays["labels"][i].astype(np.int32) for i in examples]
    ids = [int(arrays["puzzle_identifiers"][np.searchsorted(pi, i, side="right") - 1]) for i in examples]
    for _ in range(pad_rows):
        rows_in.append(np.full(meta["seq_len"], meta["pad_id"], np.int32))
        rows_lab.append(np.full(meta["seq_len"], R.IGNORE_LABEL_ID, np.int32))
        ids.append(meta["blank_identifier_id"])
    lab = np.stack(rows_lab)
    if meta["ignore_label_id"] is not None:
        lab[lab == meta["ignore_label_id"]] = R.IGNORE_LABEL_ID
    return dict(inputs=torch.from_numpy(np.stack(rows_in)), labels=torch.from_numpy(lab),
                puzzle_identifiers=torch.tensor(ids, dtype=torch.int32)), ids


# ----------------------------------------------------------------------------------------------
# cases

CASES = [
    dict(name="trm_att_f32", seed=11, dataset="arc4", step=51020, compiled=True, location="cuda:0",
         examples=[0, 1, 4], pad_rows=1, gain=0.5,
         covers="TRM attention variant, fp32 forward, 2 layers, T = H_cycles 2, n = L_cycles 3, "
                "RoPE over the 16 prefix positions and the grid; ARC-style data with puzzle "
                "identifiers 1..6 and a padded batch row (blank identifier); keys "
                "`_orig_mod.model.inner.*` (torch.compile), storages tagged cuda:0",
         cfg=dict(arch="trm", hidden_size=12, num_heads=3, expansion=4, H_cycles=2, L_cycles=3,
                  L_layers=2, H_layers=0, pos_encodings="rope", forward_dtype="float32")),
    dict(name="trm_mlpt_f32", seed=12, dataset="sudoku4", step=1560, compiled=False, location=None,
         examples=[0, 1, 2, 3], pad_rows=0, gain=0.4,
         covers="TRM token-mixing variant (mlp_t: SwiGLU over the 32 positions, normalised over "
                "the sequence axis), no positional encoding, fp32, 1 layer, T 3, n 2; 4x4 Sudoku; "
                "keys `model.inner.*` (DISABLE_COMPILE), storages cpu",
         cfg=dict(arch="trm", hidden_size=12, num_heads=2, expansion=4, H_cycles=3, L_cycles=2,
                  L_layers=1, H_layers=0, pos_encodings="none", mlp_t=True, forward_dtype="float32")),
    dict(name="trm_att_bf16", seed=13, dataset="sudoku4", step=780, compiled=True, location=None,
         examples=[4, 5, 6, 7], pad_rows=0, gain=0.5,
         covers="TRM attention variant with forward_dtype bfloat16 (the released setting): "
                "H_init / L_init stored bf16, activations bf16, RMSNorm and RoPE in fp32, q head "
                "in bf16 then cast to fp32; 1 layer, T 2, n 2; 4x4 Sudoku; also the fp32 run of "
                "the same checkpoint and its drift from the bf16 reference",
         cfg=dict(arch="trm", hidden_size=12, num_heads=2, expansion=4, H_cycles=2, L_cycles=2,
                  L_layers=1, H_layers=0, pos_encodings="rope", forward_dtype="bfloat16")),
    dict(name="hrm_f32", seed=14, dataset="sudoku4", step=2604, compiled=True, location="cuda:0",
         examples=[0, 2, 5, 7], pad_rows=0, gain=0.5,
         covers="HRM (upstream layout): H net 1 layer, L net 2 layers, H_cycles 2, L_cycles 2, "
                "puzzle prefix of 1 position, halting by q_halt > q_continue, fp32 forward "
                "(`forward_dtype: float32` given on the command line; HRM's arch YAML has no "
                "forward_dtype and its default is bfloat16); `data_path` string; keys "
                "`_orig_mod.model.inner.*`, storages tagged cuda:0",
         cfg=dict(arch="hrm", hidden_size=12, num_heads=2, expansion=4, H_cycles=2, L_cycles=2,
                  L_layers=2, H_layers=1, pos_encodings="rope", forward_dtype="float32")),
]






def pred_margin(logits):
    top = torch.topk(logits.float(), 2, dim=-1).values
    return float((top[..., 0] - top[..., 1]).min())


def halting_steps(model, trace, n):
    """Per sample: the first step s at which the Q rule holds (else n), and the smallest
    |decision value| over the steps it evaluated (q_halt, or q_halt - q_continue)."""
    B = trace[0]["q_halt"].shape[0]
    steps, margin = [], float("inf")
    for b in range(B):
        s_halt = n
        for s, rec in enumerate(trace[:n], start=1):
            qh, qc = float(rec["q_halt"][b]), float(rec["q_continue"][b])
            v = qh if model.cfg.halt_rule == "q_halt > 0" else qh - qc
            margin = min(margin, abs(v))
            if v > 0:
                s_halt = s
                break
        steps.append(s_halt)
    return steps, margin


def tune_q_bias(model, batch):
    """Sets the q head bias so that the samples halt at different steps under Q-halt and every
    decision keeps MIN_Q_MARGIN; returns False when no bias on the grid does."""
    qh = model.inner.q_head
    trm_rule = model.cfg.halt_rule == "q_halt > 0"

    def set_bias(c):
        with torch.no_grad():
            qh.bias.copy_(torch.tensor([c, 0.0]) if trm_rule else torch.tensor([c / 2, -c / 2]))

    set_bias(0.0)
    tr = model.solve(batch, N_SUP)["trace"]
    # the decision value without bias, per step and sample; a bias c shifts it by c
    raw = np.array([(r["q_halt"] if trm_rule else r["q_halt"] - r["q_continue"]).double().numpy() for r in tr])
    scored = []
    for c in np.linspace(-4, 4, 321):
        v = raw + c
        steps = [int(np.argmax(v[:, b] > 0)) + 1 if (v[:, b] > 0).any() else N_SUP for b in range(v.shape[1])]
        margin = min(float(np.abs(v[:s, b]).min()) for b, s in enumerate(steps))
        scored.append(((len(set(steps)), N_SUP in steps, min(steps) > 1, margin), float(c)))
    for score, c in sorted(scored, reverse=True)[:20]:
        if score[0] < 3 or score[3] < 2 * MIN_Q_MARGIN:
            break
        set_bias(c)  # verify with the bias inside the q head's own arithmetic
        steps, margin = halting_steps(model, model.solve(batch, N_SUP)["trace"], N_SUP)
        if margin >= MIN_Q_MARGIN and len(set(steps)) >= 3:
            return True
    return False


def make_model(case, attempt, batch, meta):
    cfg = R.RecursiveConfig(seq_len=meta["seq_len"], vocab_size=meta["vocab_size"],
                            num_puzzle_identifiers=meta["num_puzzle_identifiers"],
                            halt_max_steps=N_SUP, **case["cfg"])
    model = R.ACTModel(cfg).eval()
    g = torch.Generator().manual_seed(1000 * case["seed"] + attempt)
    model.inner.init_weights(g, q_std=1.0, puzzle_std=1.0 / math.sqrt(cfg.hidden_size))
    with torch.no_grad():  # contractive recursion: see MAX_FP64_DEV
        for name, p in model.named_parameters():
            if ".layers." in name:
                p.mul_(case["gain"])
    if not tune_q_bias(model, batch):
        return None
    # fp32 cases: the fixture itself; bf16 case: its fp32 run (what a host port computes)
    f32 = model.solve(batch, N_SUP, dtype=torch.float32)
    f64 = model.solve(batch, N_SUP, dtype=torch.float64)
    dev = max(max(float((a[k].double() - b[k]).abs().max()) for k in ("logits", "q_halt", "q_continue"))
              for a, b in zip(f32["trace"], f64["trace"]))
    if dev > MAX_FP64_DEV:
        return None
    steps, margin = halting_steps(model, f32["trace"], N_SUP)
    if margin < MIN_Q_MARGIN:
        return None
    recorded = [f32["trace"][s - 1]["logits"] for s in RECORDED]
    recorded += [f32["trace"][s - 1]["logits"][b] for b, s in enumerate(steps)]
    if min(pred_margin(x) for x in recorded) < MIN_PRED_MARGIN:
        return None
    return model


# ----------------------------------------------------------------------------------------------
# independent float64 NumPy forward read from the written files (what the C++ side must do)


def numpy_from_files(folder, run_root, batch, n_steps):
    """Reads all_config.yaml, the dataset's train/dataset.json (its path in the YAML is relative to
    run_root, the training run's working directory) and step_N (any prefix), fills in
    the reference classes' defaults, and runs n_steps supervision steps in float64. Returns
    per step (logits [B,L,V], q_halt [B], q_continue [B])."""
    y = yaml.safe_load(open(os.path.join(folder, "all_config.yaml")))
    a = y["arch"]
    data_path = y["data_paths"][0] if "data_paths" in y else y["data_path"]
    meta = json.load(open(os.path.join(run_root, data_path, "train", "dataset.json")))
    hrm = "Hierarchical" in a["name"]
    D, H = a["hidden_size"], a["num_heads"]
    hd, eps, theta = D // H, a.get("rms_norm_eps", 1e-5), a.get("rope_theta", 10000.0)
    ndim = a.get("puzzle_emb_ndim", 0)
    P = -(ndim // -D) if (hrm or a.get("puzzle_emb_len", 16) == 0) else a.get("puzzle_emb_len", 16)
    mlp_t = a.get("mlp_t", False) and not hrm
    S = meta["seq_len"] + P
    (ck,) = [n for n in os.listdir(folder) if n.startswith("step_")]
    sd = torch.load(os.path.join(folder, ck), map_location="cpu", weights_only=True)
    pre = "_orig_mod.model.inner." if "_orig_mod.model.inner.H_init" in sd else "model.inner."
    W = {k[len(pre):]: v.double().numpy() for k, v in sd.items()}

    def rms(x):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)

    def swiglu(x, p):
        gu = x @ W[p + "gate_up_proj.weight"].T
        g, u = np.split(gu, 2, axis=-1)
        return (g / (1 + np.exp(-g)) * u) @ W[p + "down_proj.weight"].T

    inv = 1.0 / theta ** (np.arange(0, hd, 2) / hd)
    ang = np.arange(S)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))

    def rope(x):  # [B,S,H,hd]
        x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
        return x * cos[None, :, None] + np.concatenate([-x2, x1], -1) * sin[None, :, None]

    def attn(x, p):
        B = x.shape[0]
        qkv = (x @ W[p + "qkv_proj.weight"].T).reshape(B, S, 3 * H, hd)
        q, k, v = qkv[:, :, :H], qkv[:, :, H:2 * H], qkv[:, :, 2 * H:]
        if a["pos_encodings"] == "rope":
            q, k = rope(q), rope(k)
        s = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd)
        e = np.exp(s - s.max(-1, keepdims=True))
        o = np.einsum("bhqk,bkhd->bqhd", e / e.sum(-1, keepdims=True), v).reshape(B, S, H * hd)
        return o @ W[p + "o_proj.weight"].T

    def net(level, n_layers, h, inj):
        h = h + inj
        for i in range(n_layers):
            p = f"{level}.layers.{i}."
            if mlp_t:
                t = h.transpose(0, 2, 1)
                h = rms(t + swiglu(t, p + "mlp_t.")).transpose(0, 2, 1)
            else:
                h = rms(h + attn(h, p + "self_attn."))
            h = rms(h + swiglu(h, p + "mlp."))
        return h

    n_L = sum(1 for k in W if k.startswith("L_level.layers.") and k.endswith("mlp.down_proj.weight"))
    n_H = sum(1 for k in W if k.startswith("H_level.layers.") and k.endswith("mlp.down_proj.weight"))
    assert n_L == a["L_layers"] and (not hrm or n_H == a["H_layers"])
    inp, ids = batch["inputs"].numpy(), batch["puzzle_identifiers"].numpy()
    B = inp.shape[0]
    pz = np.zeros((B, P * D))
    pz[:, :ndim] = W["puzzle_emb.weights"][ids]
    emb = np.concatenate([pz.reshape(B, P, D), W["embed_tokens.embedding_weight"][inp]], 1)
    if a["pos_encodings"] == "learned":
        emb = 0.707106781 * (emb + W["embed_pos.embedding_weight"])
    x = np.sqrt(D) * emb
    zH = np.broadcast_to(W["H_init"], (B, S, D)).copy()
    zL = np.broadcast_to(W["L_init"], (B, S, D)).copy()
    out = []
    for _ in range(n_steps):
        for _ in range(a["H_cycles"]):
            for _ in range(a["L_cycles"]):
                zL = net("L_level", a["L_layers"], zL, zH + x)
            zH = net("H_level", a["H_layers"], zH, zL) if hrm else net("L_level", a["L_layers"], zH, zL)
        q = zH[:, 0] @ W["q_head.weight"].T + W["q_head.bias"]
        out.append(((zH @ W["lm_head.weight"].T)[:, P:], q[:, 0], q[:, 1]))
    return out


# ----------------------------------------------------------------------------------------------
# deliberately wrong variants: each must move the recorded outputs


def wrong_variants(model, batch, ref):
    """Runs mistakes a port could make and returns {name: max |Δ| over the recorded logits and all
    q values}; each must exceed MIN_WRONG_DELTA."""
    cfg = model.cfg
    out = {}

    def run(name, patch, undo):
        patch()
        try:
            o = model.solve(batch, N_SUP)
        finally:
            undo()
        d = max(float((o["trace"][s - 1]["logits"].float() - ref["trace"][s - 1]["logits"].float()).abs().max())
                for s in RECORDED)
        d = max(d, max(float((a["q_halt"] - b["q_halt"]).abs().max()) for a, b in zip(o["trace"], ref["trace"])))
        out[name] = d

    real_rope = R.rope_tables
    if cfg.pos_encodings == "rope":
        def shifted(c, dt):
            cos, sin = real_rope(c, dt)
            k = c.prefix_len
            return torch.cat([cos[:k], cos[:c.total_len - k]]), torch.cat([sin[:k], sin[:c.total_len - k]])
        run("rope positions restart at 0 after the prefix", lambda: setattr(R, "rope_tables", shifted),
            lambda: setattr(R, "rope_tables", real_rope))
        real_rot = R.rotate_half

        def interleaved(x):  # GPT-J pairs (2i, 2i+1) instead of halves (needs the tables re-laid)
            return torch.stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2)
        run("RoPE on interleaved pairs instead of rotate-half", lambda: setattr(R, "rotate_half", interleaved),
            lambda: setattr(R, "rotate_half", real_rot))
    if not cfg.mlp_t:
        real_sdpa = R.F.scaled_dot_product_attention

        def causal(q, k, v, is_causal=False):
            return real_sdpa(q, k, v, is_causal=True)
        run("causal attention", lambda: setattr(R.F, "scaled_dot_product_attention", causal),
            lambda: setattr(R.F, "scaled_dot_product_attention", real_sdpa))
    if cfg.arch == "hrm":
        inner_ = model.inner

        def swap_nets():
            inner_.H_level, inner_.L_level = inner_.L_level, inner_.H_level

        run("H and L nets swapped", swap_nets, swap_nets)
    real_norm = R.rms_norm
    if cfg.mlp_t:
        blk = R.Block.forward

        def feature_norm(self, h, rope):
            t = h.transpose(1, 2)
            h = real_norm((t + self.mlp_t(t)).transpose(1, 2), self.eps)
            return real_norm(h + self.mlp(h), self.eps)
        run("mlp_t normalised over features instead of the sequence",
            lambda: setattr(R.Block, "forward", feature_norm), lambda: setattr(R.Block, "forward", blk))
    inner = model.inner
    hinit, linit = inner.H_init.clone(), inner.L_init.clone()

    def swap():
        inner.H_init.copy_(linit)
        inner.L_init.copy_(hinit)

    def restore():
        inner.H_init.copy_(hinit)
        inner.L_init.copy_(linit)
    run("H_init and L_init swapped", swap, restore)
    table = inner.puzzle_emb.weights.clone()
    run("puzzle embedding ignored (zero prefix)", lambda: inner.puzzle_emb.weights.zero_(),
        lambda: inner.puzzle_emb.weights.copy_(table))
    real_fwd = R.Inner.forward

    def x_in_zH(self, zH, zL, inputs, ids, dtype=None):
        dtype = dtype or self.cfg.dtype
        rope = R.rope_tables(self.cfg, dtype) if self.cfg.pos_encodings == "rope" else None
        x = self.input_embeddings(inputs, ids, dtype)
        zH, zL = zH.to(dtype), zL.to(dtype)
        lvl = self.H_level if self.cfg.arch == "hrm" else self.L_level
        for _ in range(self.cfg.H_cycles):
            for _ in range(self.cfg.L_cycles):
                zL = self.L_level(zL, zH + x, rope)
            zH = lvl(zH, zL + x, rope)
        q = self.q_head(zH[:, 0]).to(torch.float32)
        return zH, zL, self.lm_head(zH)[:, self.cfg.prefix_len:], q[..., 0], q[..., 1]
    run("x injected into the z_H update as well", lambda: setattr(R.Inner, "forward", x_in_zH),
        lambda: setattr(R.Inner, "forward", real_fwd))

    def no_scale(self, inputs, ids, dtype):
        return real_emb(self, inputs, ids, dtype) / math.sqrt(self.cfg.hidden_size)
    real_emb = R.Inner.input_embeddings
    run("embedding not scaled by sqrt(D)", lambda: setattr(R.Inner, "input_embeddings", no_scale),
        lambda: setattr(R.Inner, "input_embeddings", real_emb))
    return out


# ----------------------------------------------------------------------------------------------
# checks of the written files


def zip_layout(path):
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        tops = {i.filename.split("/")[0] for i in infos}
        pkl = z.read(f"{os.path.basename(path)}/data.pkl")
        return dict(tops=tops, stored=all(i.compress_type == zipfile.ZIP_STORED for i in infos),
                    names=[i.filename for i in infos], pkl=pkl)


def check_case(case, model, folder, run_root, batch, fixed, qhalt):
    cfg = model.cfg
    ck = os.path.join(folder, f"step_{case['step']}")
    lay = zip_layout(ck)
    assert lay["tops"] == {f"step_{case['step']}"} and lay["stored"], lay["tops"]
    assert (b"cuda:0" in lay["pkl"]) == (case["location"] == "cuda:0")
    assert b"_rebuild_tensor_v2" in lay["pkl"] and b"OrderedDict" in lay["pkl"]
    raw = torch.load(ck, map_location="cpu", weights_only=True)
    assert type(raw).__name__ == "OrderedDict" and hasattr(raw, "_metadata")
    prefix = "_orig_mod.model.inner." if case["compiled"] else "model.inner."
    assert all(k.startswith(prefix) for k in raw), list(raw)[:3]
    assert raw[prefix + "H_init"].dtype == cfg.dtype and raw[prefix + "puzzle_emb.weights"].dtype == torch.float32
    assert all(v.dtype == torch.float32 for k, v in raw.items() if not k.endswith("_init"))
    # reload through the YAML + dataset.json, as evaluate.py does: bit-identical outputs
    cfg2, m2 = R.read_run(folder, os.path.join(run_root, "data", case["dataset"]))
    assert cfg2 == cfg, (cfg2, cfg)
    again = m2.eval().solve(batch, N_SUP)
    for a, b in zip(fixed["trace"], again["trace"]):
        assert torch.equal(a["logits"], b["logits"]) and torch.equal(a["q_halt"], b["q_halt"])
        assert torch.equal(a["q_continue"], b["q_continue"])
    # the reference's carried-state ACT loop until all_finish == solve(fixed)
    carry = model.initial_carry(batch)
    calls = 0
    while True:
        carry, o = model.act_step(carry, batch)
        calls += 1
        if carry["halted"].all():
            break
    assert calls == N_SUP and torch.equal(o["logits"], fixed["logits"]) and torch.equal(o["q_halt"], fixed["q_halt"])
    # Q-halt in the carried loop: a halted slot restarts with the fresh row; its first outputs
    # after the restart are step-1 outputs again
    carry = model.initial_carry(batch)
    for s in range(1, N_SUP + 1):
        carry, o = model.act_step(carry, batch, halting="q")
        for b in range(len(qhalt["steps"])):
            if int(carry["steps"][b]) == s:
                assert torch.equal(o["logits"][b], fixed["trace"][s - 1]["logits"][b])
        if s == max(qhalt["steps"]):
            break
    for b, s in enumerate(qhalt["steps"].tolist()):
        assert torch.equal(qhalt["logits"][b], fixed["trace"][s - 1]["logits"][b])
    # an independent float64 forward from the files
    if cfg.forward_dtype == "float32":
        ref64 = numpy_from_files(folder, run_root, batch, N_SUP)
        for s, (lg, qh, qc) in enumerate(ref64, start=1):
            t = fixed["trace"][s - 1]
            d = max(np.abs(lg - t["logits"].double().numpy()).max(), np.abs(qh - t["q_halt"].double().numpy()).max(),
                    np.abs(qc - t["q_continue"].double().numpy()).max())
            assert d < 10 * MAX_FP64_DEV, (case["name"], s, d)
    # the YAML holds exactly the reference's keys
    y = yaml.safe_load(open(os.path.join(folder, "all_config.yaml")))
    if cfg.arch == "trm":
        assert "data_paths" in y and "data_path" not in y and "ema" in y
    else:
        assert "data_path" in y and "data_paths" not in y and "ema" not in y
        assert "mlp_t" not in y["arch"] and "puzzle_emb_len" not in y["arch"]


def drift(model, batch, ref):
    """The fp32 run of a bf16 checkpoint (what a host computing in fp32 does) against the bf16
    reference, per supervision step."""
    f32 = model.solve(batch, N_SUP, dtype=torch.float32)
    rows = []
    for s, (a, b) in enumerate(zip(ref["trace"], f32["trace"]), start=1):
        dl = (a["logits"].float() - b["logits"]).abs()
        rows.append(dict(step=s, max_abs_logit=r8(dl.max()), mean_abs_logit=r8(dl.mean()),
                         pred_agreement=r8((a["preds"] == b["preds"]).float().mean()),
                         max_abs_q_halt=r8((a["q_halt"] - b["q_halt"]).abs().max()),
                         max_abs_q_continue=r8((a["q_continue"] - b["q_continue"]).abs().max())))
    steps32, _ = halting_steps(model, f32["trace"], N_SUP)
    return rows, f32, steps32


def accuracy(preds, labels):
    mask = labels != R.IGNORE_LABEL_ID
    correct = (mask & (preds == labels)).sum(-1)
    n = mask.sum(-1)
    return [int(v) for v in correct], [int(v) for v in n], [bool(c == m) for c, m in zip(correct, n)]


def expected_json(case, model, batch, ids, fixed, qhalt, f64dev, wrong, drift_rows=None, f32=None, steps32=None):
    cfg = model.cfg
    prefix = "_orig_mod.model.inner." if case["compiled"] else "model.inner."
    sd = R.saved_module(model, case["compiled"]).state_dict()
    labels = batch["labels"]
    tr = fixed["trace"]
    e = {
        "case": case["name"],
        "covers": case["covers"],
        "generator": f"tools/reference/make_trm_fixtures.py (trm_ref.py), weight seed {case['seed']}",
        "torch_version": torch.__version__.split("+")[0],
        "tolerances": ({"logits": LOGIT_TOL, "q": LOGIT_TOL} if cfg.forward_dtype == "float32" else
                       {"fp32_run_logits": LOGIT_TOL, "fp32_run_q": LOGIT_TOL}),
        "checkpoint": {
            "file": f"step_{case['step']}",
            "prefix": prefix,
            "location": case["location"] or "cpu",
            "keys": [[k, str(v.dtype).replace("torch.", ""), list(v.shape)] for k, v in sd.items()],
        },
        "dataset": f"data/{case['dataset']}",
        "config": {k: v for k, v in dataclasses.asdict(cfg).items()},
        "derived": {"prefix_len": cfg.prefix_len, "total_len": cfg.total_len, "head_dim": cfg.head_dim,
                    "swiglu_inter": R.swiglu_inter(cfg.hidden_size, cfg.expansion),
                    "mlp_t_inter": R.swiglu_inter(cfg.total_len, cfg.expansion) if cfg.mlp_t else None,
                    "net_calls_per_step": (cfg.H_cycles * (cfg.L_cycles + 1)),
                    "halt_rule": cfg.halt_rule},
        "batch": {
            "examples": list(case["examples"]) + [-1] * case["pad_rows"],
            "inputs": batch["inputs"].tolist(),
            "labels": labels.tolist(),
            "puzzle_identifiers": ids,
        },
        "halt_max_steps": N_SUP,
        "recorded_steps": list(RECORDED),
        "logits_file": "logits.npy",
        "q_halt": [[r8(v) for v in rec["q_halt"].tolist()] for rec in tr],
        "q_continue": [[r8(v) for v in rec["q_continue"].tolist()] for rec in tr],
        "preds": [tr[s - 1]["preds"].tolist() for s in RECORDED],
        "fixed": {"steps": fixed["steps"].tolist()},
        "qhalt": {"rule": cfg.halt_rule, "steps": qhalt["steps"].tolist(),
                  "logits_file": "halt_logits.npy", "preds": qhalt["preds"].tolist(),
                  "q_halt": r8(qhalt["q_halt"].tolist()), "q_continue": r8(qhalt["q_continue"].tolist())},
    }
    for name, out in (("fixed", fixed), ("qhalt", qhalt)):
        c, n, exact = accuracy(out["preds"], labels)
        e[name].update(correct_tokens=c, valid_tokens=n, exact=exact)
    if cfg.forward_dtype == "float32":
        _, qmargin = halting_steps(model, tr, N_SUP)
        recorded = [tr[s - 1]["logits"] for s in RECORDED] + [qhalt["logits"]]
        e["margins"] = {"min_q_decision": r8(qmargin), "min_pred_top1_top2": r8(min(pred_margin(x) for x in recorded)),
                        "max_abs_dev_from_float64": r8(f64dev)}
    else:
        _, qmargin = halting_steps(model, f32["trace"], N_SUP)
        e["margins"] = {"fp32_run_min_q_decision": r8(qmargin),
                        "fp32_run_min_pred_top1_top2": r8(min(pred_margin(f32["trace"][s - 1]["logits"]) for s in RECORDED)),
                        "fp32_run_max_abs_dev_from_float64": r8(f64dev)}
        ties = sum(int(((rec["logits"] == rec["logits"].max(-1, keepdim=True).values).sum(-1) > 1).sum())
                   for rec in tr)
        e["bf16"] = {"argmax_ties_over_all_steps": ties,
                     "note": "logits are bf16 values; preds take the first index of the maximum"}
        e["fp32_run"] = {"about": "the same checkpoint computed in fp32 (H_init / L_init upcast), "
                                  "as the host backend does; logits_file holds its recorded steps too",
                         "logits_file": "logits_fp32.npy",
                         "q_halt": [[r8(v) for v in rec["q_halt"].tolist()] for rec in f32["trace"]],
                         "q_continue": [[r8(v) for v in rec["q_continue"].tolist()] for rec in f32["trace"]],
                         "qhalt_steps": steps32,
                         "drift_from_bf16": drift_rows}
    e["wrong_variants"] = {k: r8(v) for k, v in wrong.items()}
    return e


# ----------------------------------------------------------------------------------------------
# optional cross-check against the reference code bases


def upstream_check(case, model, batch, fixed, trm_repo=None, hrm_repo=None):
    """Loads the written state dict into the reference's own classes and compares the outputs of
    its evaluation loop (model.eval(), calls until all_finish) bit for bit."""
    import importlib
    import types
    repo = trm_repo if model.cfg.arch == "trm" else hrm_repo
    if repo is None:
        return None
    if "einops" not in sys.modules:
        try:
            import einops  # noqa: F401
        except ImportError:  # stand-in: the reference only permutes B S H D <-> B H S D
            m = types.ModuleType("einops")
            m.rearrange = lambda t, pattern: t.permute(0, 2, 1, 3)
            sys.modules["einops"] = m
    if "flash_attn" not in sys.modules:
        fa = types.ModuleType("flash_attn")
        fa.flash_attn_func = lambda q, k, v, causal=False: torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal).transpose(1, 2)
        sys.modules["flash_attn"] = fa
    for k in [k for k in sys.modules if k == "models" or k.startswith("models.")]:
        del sys.modules[k]
    sys.path.insert(0, repo)
    try:
        if model.cfg.arch == "trm":
            mod = importlib.import_module("models.recursive_reasoning.trm")
            cls = mod.TinyRecursiveReasoningModel_ACTV1
        else:
            mod = importlib.import_module("models.hrm.hrm_act_v1")
            cls = mod.HierarchicalReasoningModel_ACTV1
        c = dataclasses.asdict(model.cfg)
        c.pop("arch")
        if model.cfg.arch == "hrm":
            for k in ("mlp_t", "puzzle_emb_len", "no_ACT_continue"):
                c.pop(k)
        c["batch_size"] = batch["inputs"].shape[0]
        up = cls(c)
        sd = R.saved_module(model, compiled=False).state_dict()
        up.load_state_dict({k[len("model."):]: v for k, v in sd.items()}, strict=True, assign=True)
        up.eval()
        with torch.inference_mode():
            carry = up.initial_carry(batch)
            outs = []
            while True:
                carry, o = up(carry=carry, batch=batch)
                outs.append(o)
                if carry.halted.all():
                    break
        assert len(outs) == N_SUP
        worst = 0.0
        for s, o in enumerate(outs, start=1):
            t = fixed["trace"][s - 1]
            for a, b in ((o["logits"], t["logits"]), (o["q_halt_logits"], t["q_halt"]),
                         (o["q_continue_logits"], t["q_continue"])):
                worst = max(worst, float((a.float() - b.float()).abs().max()))
        return worst
    finally:
        sys.path.remove(repo)
        for k in [k for k in sys.modules if k == "models" or k.startswith("models.")]:
            del sys.modules[k]


# ----------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "tests", "data", "trm"))
    ap.add_argument("--upstream-trm", default=None, help="a checkout of TinyRecursiveModels (optional check)")
    ap.add_argument("--upstream-hrm", default=None, help="a checkout of sapientinc/HRM (optional check)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    assert R.swiglu_inter(512, 4) == 1536 and R.swiglu_inter(97, 4) == 512 and R.swiglu_inter(916, 4) == 2560

    out = args.out
    os.makedirs(out, exist_ok=True)
    data_root = os.path.join(out, "data")
    shutil.rmtree(data_root, ignore_errors=True)
    rng = np.random.default_rng(2025)
    datasets = {"sudoku4": make_sudoku4(os.path.join(data_root, "sudoku4"), rng),
                "arc4": make_arc4(os.path.join(data_root, "arc4"), rng)}
    for name in datasets:
        check_dataset(os.path.join(data_root, name))

    for case in CASES:
        arrays, meta = datasets[case["dataset"]]["test"]
        train_meta = datasets[case["dataset"]]["train"][1]
        batch, ids = example_batch(arrays, meta, case["examples"], case["pad_rows"])
        for attempt in range(200):
            model = make_model(case, attempt, batch, train_meta)
            if model is not None:
                break
        else:
            raise SystemExit(f"{case['name']}: no attempt met the margins")
        cfg = model.cfg
        fixed = model.solve(batch, N_SUP)
        qhalt = model.solve(batch, N_SUP, halting="q")
        steps, _ = halting_steps(model, fixed["trace"], N_SUP)
        assert qhalt["steps"].tolist() == steps and fixed["steps"].tolist() == [N_SUP] * len(steps)
        f64 = model.solve(batch, N_SUP, dtype=torch.float64)
        f32 = fixed if cfg.forward_dtype == "float32" else model.solve(batch, N_SUP, dtype=torch.float32)
        f64dev = max(float((a["logits"].double() - b["logits"]).abs().max()) for a, b in zip(f32["trace"], f64["trace"]))
        wrong = wrong_variants(model, batch, fixed)
        assert min(wrong.values()) > MIN_WRONG_DELTA, wrong

        folder = os.path.join(out, case["name"])
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        R.save_checkpoint(model, os.path.join(folder, f"step_{case['step']}"), compiled=case["compiled"],
                          location=case["location"])
        extra = ["forward_dtype"] if cfg.arch == "hrm" else []
        R.write_all_config(os.path.join(folder, "all_config.yaml"), R.pretrain_config_dict(
            cfg, data_path=f"data/{case['dataset']}",
            run_name=case["name"] if cfg.arch == "trm" else f"HierarchicalReasoningModel_ACTV1 {case['name']}",
            overrides={"arch_extra": extra,
                       **({"evaluators": [{"name": "arc@ARC"}]} if case["dataset"] == "arc4" else {})}))
        check_case(case, model, folder, out, batch, fixed, qhalt)
        logits = torch.stack([fixed["trace"][s - 1]["logits"].float() for s in RECORDED]).numpy()
        np.save(os.path.join(folder, "logits.npy"), logits)
        np.save(os.path.join(folder, "halt_logits.npy"), qhalt["logits"].float().numpy())
        drift_rows = f32 = steps32 = None
        if cfg.forward_dtype == "bfloat16":
            drift_rows, f32, steps32 = drift(model, batch, fixed)
            np.save(os.path.join(folder, "logits_fp32.npy"),
                    torch.stack([f32["trace"][s - 1]["logits"] for s in RECORDED]).numpy())
        e = expected_json(case, model, batch, ids, fixed, qhalt, f64dev, wrong, drift_rows, f32, steps32)
        with open(os.path.join(folder, "expected.json"), "w") as f:
            f.write(dump(e) + "\n")
        up = upstream_check(case, model, batch, fixed, args.upstream_trm, args.upstream_hrm)
        size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
        msg = (f"{case['name']}: attempt {attempt}, {len(e['checkpoint']['keys'])} keys, {size // 1024} KB, "
               f"halt steps {qhalt['steps'].tolist()}, fp64 dev {f64dev:.1e}, "
               f"smallest wrong-variant delta {min(wrong.values()):.3f}")
        if up is not None:
            assert up == 0.0, (case["name"], up)
            msg += ", upstream max |Δ| 0"
        print(msg)
        if drift_rows:
            for r in drift_rows:
                if r["step"] in RECORDED:
                    print(f"   bf16 vs fp32 step {r['step']:2d}: max |Δlogit| {r['max_abs_logit']:.4f}, "
                          f"mean {r['mean_abs_logit']:.4f}, argmax agreement {r['pred_agreement']:.3f}, "
                          f"max |Δq_halt| {r['max_abs_q_halt']:.4f}")
            print(f"   Q-halt steps: bf16 {qhalt['steps'].tolist()}, fp32 run {steps32}")
    total = 0
    for dirpath, _, files in os.walk(out):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
    print(f"total {total // 1024} KB")


if __name__ == "__main__":
    main()
