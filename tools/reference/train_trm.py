#!/usr/bin/env python3
"""Train and export Muninn's tiny TRM Sudoku demo model (docs/trm_demo.md).

Our own trainer on top of tools/reference/trm_ref.py (its network, its checkpoint writer, its
all_config.yaml writer) with the reference's recipe, scaled down to a CPU:

* data: 4x4 Sudoku (2x2 boxes) generated here with a unique solution: givens removed from a
  random grid (one of the 288) in random order while the solution stays unique, down to a target
  drawn from [--min-givens, --max-givens] = [4, 8] (fewer than 5 or 6 givens is possible only for
  some puzzles: those stop minimal), written in the Sudoku builder's npy layout
  (tools/reference/make_trm_fixtures.py's writers): a train split of groups (a base puzzle and its
  augmentations: digit permutation, transpose with p = 0.5, band / row-in-band and stack /
  column-in-stack permutations; int64 tokens) and a test split (one puzzle per group, uint8)
  whose puzzles appear nowhere in the train split (not even as an augmentation);
* deep supervision with the reference's carried state: every batch slot keeps (z_H, z_L), its
  step count and its puzzle across optimizer steps; one optimizer step = one supervision step of
  every slot; a slot that halted restarts from (H_init, L_init) with a fresh puzzle; the state is
  detached between steps;
* per supervision step the n/T recursion of trm_ref (T - 1 cycles without gradients, the last
  cycle with them);
* losses: stablemax cross-entropy (float64) on the tokens, mean over a puzzle's tokens, summed
  over slots; Q-halt BCE on q_halt with target "this step's prediction is entirely correct",
  weight 0.5; no Q-continue (no_ACT_continue); total / batch;
* training-time halting as the reference: a slot halts at halt_max_steps or when q_halt > 0,
  with exploration (prob 0.1: a minimum of U{2..N} steps);
* optimiser: AdamW on the Parameters (the reference's AdamATan2 is a CUDA extension), linear
  warmup; the puzzle table (one identifier, a buffer) by the reference's sign-SGD rule
  w <- w (1 - lr wd) - lr sign(g); EMA of the Parameters (the puzzle table copied), and the EMA
  weights are what is saved, as the reference does with ema=True. The EMA rate is 0.995, not the
  reference's 0.999: with 0.999 and a run of a few thousand steps the average still holds a large
  share of the initial weights (0.999^1000 = 0.37; a trial run's EMA solved no validation puzzle
  at step 1000 while the raw weights solved 39 % of their training puzzles).

Scaled down from the reference for a CPU: hidden 64, 4 heads, 2 layers, T = 2, n = 2 (the
reference: 512, 8, 2, 3, 6), batch 128 (768), AdamW lr 2e-3 with 100 warmup steps (AdamATan2
1e-4, 2000 warmup), weight decay 0.1 (1.0), 2600 optimizer steps. Kept: the 16-position puzzle
prefix, RoPE attention, post-norm, N_sup = 16, exploration 0.1, the losses and the halting.

Export (--out, default examples/models/trm_sudoku): `step_N` (torch.save of the state dict,
keys `_orig_mod.model.inner.*`, as pretrain.py writes it), `all_config.yaml` (data_paths: [data],
relative to the model folder), `data/test/` (the whole test split), `data/train/dataset.json`
(only the metadata: the sizes the loader takes from it; the train arrays are not shipped),
`data/identifiers.json`, `train_run.json` (command, time, log). Then run
tools/reference/eval_trm_demo.py to measure the model and write expected.json.

    python3 tools/reference/train_trm.py --out examples/models/trm_sudoku --log /tmp/trm_train.log

Reproducible from --seed for a given torch version and thread count (1 thread by default; the
wall-clock guard --max-minutes only stops a run that is far too slow, and the log says so).
"""
import argparse
import copy
import itertools
import json
import math
import os
import shutil
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import trm_ref as R  # noqa: E402
import make_trm_fixtures as FX  # noqa: E402

SEQ_LEN, VOCAB = 16, 6     # 4x4 grid; 0 PAD, 1 blank, 2..5 digits 1..4 (the builder's value + 1)


# ----------------------------------------------------------------------------------------------
# 4x4 Sudoku


def all_grids():
    """Every valid 4x4 Sudoku grid (288), [288, 16] with digits 1..4, by backtracking."""
    out = []

    def rec(cells):
        i = len(cells)
        if i == 16:
            out.append(list(cells))
            return
        r, c = divmod(i, 4)
        for d in range(1, 5):
            if any(cells[r * 4 + cc] == d for cc in range(c)) or any(cells[rr * 4 + c] == d for rr in range(r)):
                continue
            br, bc = r // 2 * 2, c // 2 * 2
            if any(cells[rr * 4 + cc] == d for rr in range(br, r + 1) for cc in range(bc, bc + 2) if rr * 4 + cc < i):
                continue
            cells.append(d)
            rec(cells)
            cells.pop()
    rec([])
    g = np.array(out, dtype=np.int64)
    assert len(g) == 288 and all(FX.sudoku4_valid(x.reshape(4, 4)) for x in g)
    return g


def n_solutions(grids, q):
    """Number of grids consistent with the givens of q (0 = blank)."""
    m = q > 0
    return int((grids[:, m] == q[m]).all(1).sum())


def make_puzzle(grids, rng, min_givens, max_givens):
    """A random grid, then its givens removed in random order while the solution stays unique,
    down to a target drawn uniformly from [min_givens, max_givens] (or until no given can go: a
    minimal puzzle, 4-6 givens at 4x4). Returns (puzzle, solution), digits 0..4."""
    sol = grids[rng.integers(len(grids))]
    target = int(rng.integers(min_givens, max_givens + 1))
    q = sol.copy()
    for i in rng.permutation(16):
        if (q > 0).sum() <= target:
            break
        v = q[i]
        q[i] = 0
        if n_solutions(grids, q) != 1:
            q[i] = v
    return q, sol


def build_split(pairs, num_aug, rng):
    """The Sudoku builder's arrays for a list of (puzzle, solution): each base puzzle and its
    num_aug augmentations (FX.shuffle_sudoku4) are one group, each example its own puzzle with
    identifier 0. Tokens value + 1; uint8 without augmentation, int64 with it (as the builder)."""
    res = {k: [] for k in ("inputs", "labels", "puzzle_identifiers", "puzzle_indices", "group_indices")}
    res["puzzle_indices"].append(0)
    res["group_indices"].append(0)
    for q, sol in pairs:
        # as the builder reads its CSV: uint8 digits
        qi, si = q.astype(np.uint8).reshape(4, 4), sol.astype(np.uint8).reshape(4, 4)
        for aug in range(1 + num_aug):
            inp, lab = (qi, si) if aug == 0 else FX.shuffle_sudoku4(qi, si, rng)
            res["inputs"].append(inp)
            res["labels"].append(lab)
            res["puzzle_indices"].append(len(res["inputs"]))
            res["puzzle_identifiers"].append(0)
        res["group_indices"].append(len(res["puzzle_identifiers"]))

    def seq(s):
        arr = np.concatenate(s).reshape(len(s), -1)
        return arr + 1
    arrays = {"inputs": seq(res["inputs"]), "labels": seq(res["labels"]),
              "group_indices": np.array(res["group_indices"], dtype=np.int32),
              "puzzle_indices": np.array(res["puzzle_indices"], dtype=np.int32),
              "puzzle_identifiers": np.array(res["puzzle_identifiers"], dtype=np.int32)}
    groups = len(arrays["group_indices"]) - 1
    meta = dict(seq_len=SEQ_LEN, vocab_size=VOCAB, pad_id=0, ignore_label_id=0, blank_identifier_id=0,
                num_puzzle_identifiers=1, total_groups=groups, mean_puzzle_examples=1,
                total_puzzles=groups, sets=["all"])
    return arrays, meta


def make_data(root, n_train, num_aug, n_test, n_val, seed, min_givens, max_givens):
    """Writes root/{train,test}/ and returns (train arrays, test arrays, validation arrays).
    Test and validation puzzles are minimal puzzles whose input string is in no train example
    (augmentations included) and in no other split."""
    rng = np.random.default_rng(seed)
    grids = all_grids()
    seen, train_pairs = set(), []
    while len(train_pairs) < n_train:
        q, s = make_puzzle(grids, rng, min_givens, max_givens)
        if q.tobytes() not in seen:
            seen.add(q.tobytes())
            train_pairs.append((q, s))
    train, train_meta = build_split(train_pairs, num_aug, rng)
    used = {(x - 1).astype(np.int64).tobytes() for x in train["inputs"]}
    held = []
    while len(held) < n_test + n_val:
        q, s = make_puzzle(grids, rng, min_givens, max_givens)
        if q.tobytes() not in used:
            used.add(q.tobytes())
            held.append((q, s))
    test, test_meta = build_split(held[:n_test], 0, rng)
    val, _ = build_split(held[n_test:], 0, rng)
    shutil.rmtree(root, ignore_errors=True)
    FX.save_split(os.path.join(root, "train"), train, train_meta)
    FX.save_split(os.path.join(root, "test"), test, test_meta)
    with open(os.path.join(root, "identifiers.json"), "w") as f:
        json.dump(["<blank>"], f)
    FX.check_dataset(root)
    assert train["inputs"].dtype == np.int64 and test["inputs"].dtype == np.uint8
    return train, test, val


def canonical(q):
    """The smallest relabelled form of q over the 128 spatial symmetries of the augmentation
    (transpose, band / row, stack / column permutations; digits relabelled by first appearance)."""
    maps = []
    perms = list(itertools.permutations(range(2)))
    for tr, bp, r0, r1, sp, c0, c1 in itertools.product((0, 1), perms, perms, perms, perms, perms, perms):
        rows = [bp[0] * 2 + r0[0], bp[0] * 2 + r0[1], bp[1] * 2 + r1[0], bp[1] * 2 + r1[1]]
        cols = [sp[0] * 2 + c0[0], sp[0] * 2 + c0[1], sp[1] * 2 + c1[0], sp[1] * 2 + c1[1]]
        m = np.array([rows[i // 4] * 4 + cols[i % 4] for i in range(16)]).reshape(4, 4)
        maps.append((m.T if tr else m).ravel())
    best = None
    for m in maps:
        lab, y = {0: 0}, []
        for v in q[m]:
            lab.setdefault(int(v), len(lab))
            y.append(lab[int(v)])
        best = tuple(y) if best is None or tuple(y) < best else best
    return best


# ----------------------------------------------------------------------------------------------
# the reference's losses


def stablemax_cross_entropy(logits, labels, ignore_index=R.IGNORE_LABEL_ID):
    """-log stablemax(logits)[label] per token, in float64; 0 where the label is ignored.
    s(x) = x + 1 for x >= 0, 1 / (1 - x) for x < 0."""
    x = logits.to(torch.float64)
    s = torch.where(x < 0, 1 / (1 - x + 1e-30), x + 1)
    logp = torch.log(s / s.sum(-1, keepdim=True))
    valid = labels != ignore_index
    lp = torch.gather(logp, -1, torch.where(valid, labels, 0).long().unsqueeze(-1)).squeeze(-1)
    return -torch.where(valid, lp, 0)


# ----------------------------------------------------------------------------------------------
# training


class Sampler:
    """The reference's training order: per epoch the groups shuffled, one random member of each
    group; an endless stream of example indices."""

    def __init__(self, arrays, rng):
        self.gi, self.pi, self.rng = arrays["group_indices"], arrays["puzzle_indices"], rng
        self.buf = []

    def take(self, n):
        while len(self.buf) < n:
            G = len(self.gi) - 1
            for g in self.rng.permutation(G):
                p = self.rng.integers(self.gi[g], self.gi[g + 1])
                self.buf.append(int(self.rng.integers(self.pi[p], self.pi[p + 1])))
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def as_batch(arrays, idx):
    """Rows idx as the reference collates them (int32; ignore_label_id 0 -> -100; identifier 0)."""
    inp = torch.from_numpy(arrays["inputs"][idx].astype(np.int32))
    lab = torch.from_numpy(arrays["labels"][idx].astype(np.int32))
    lab = torch.where(lab == 0, R.IGNORE_LABEL_ID, lab)
    return dict(inputs=inp, labels=lab, puzzle_identifiers=torch.zeros(len(idx), dtype=torch.int32))


@torch.no_grad()
def evaluate(model, arrays, steps=(1, 2, 4, 8, 16)):
    """Exact-puzzle accuracy after each S in steps (fixed; one run of max(steps) steps, read at
    every S), and with Q-halt (a puzzle stops after the first step with q_halt > 0, at most
    max(steps) steps; read from the same run, since a stopped puzzle's later steps do not
    change its earlier ones)."""
    batch = as_batch(arrays, np.arange(len(arrays["inputs"])))
    n = max(steps)
    tr = model.solve(batch, n)["trace"]
    exact = [(r["preds"] == batch["labels"]).all(-1) for r in tr]
    res = {s: float(exact[s - 1].float().mean()) for s in steps}
    stop = torch.full((len(batch["inputs"]),), n, dtype=torch.int64)
    for s in range(n, 0, -1):
        stop = torch.where(model.q_says_halt(tr[s - 1]["q_halt"], tr[s - 1]["q_continue"]), s, stop)
    res["auto"] = float(torch.stack(exact, 1).gather(1, (stop - 1).unsqueeze(1)).float().mean())
    res["mean_steps"] = float(stop.float().mean())
    return res


def train(args, train_arrays, val_arrays, log):
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed + 1)
    cfg = R.RecursiveConfig(
        arch="trm", seq_len=SEQ_LEN, vocab_size=VOCAB, num_puzzle_identifiers=1,
        hidden_size=args.hidden, num_heads=args.heads, expansion=args.expansion,
        H_cycles=args.T, L_cycles=args.n, H_layers=0, L_layers=args.layers,
        pos_encodings="none" if args.mlp_t else "rope", halt_max_steps=args.n_sup,
        halt_exploration_prob=args.explore, forward_dtype="float32", mlp_t=args.mlp_t,
        puzzle_emb_len=16, no_ACT_continue=True)
    model = R.ACTModel(cfg)
    model.inner.init_weights(torch.Generator().manual_seed(args.seed))   # q head: weight 0, bias -5
    inner = model.inner
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    ema = copy.deepcopy(model)
    table = inner.puzzle_emb.weights
    table.requires_grad_(True)
    ema_params = dict(ema.named_parameters())
    n_params = sum(p.numel() for p in params)
    log(f"config {cfg}")
    log(f"parameters {n_params}")

    B, N = args.batch, cfg.halt_max_steps
    sampler = Sampler(train_arrays, rng)
    zH, zL = inner.initial_state(B, torch.float32)
    steps = torch.zeros(B, dtype=torch.int32)
    halted = torch.ones(B, dtype=torch.bool)
    data = as_batch(train_arrays, sampler.take(B))
    t0 = time.time()
    stats = dict(n=0, exact=0.0, steps=0.0, qacc=0.0, lm=0.0, count=0)
    history = []
    step = 0
    for step in range(1, args.steps + 1):
        # 1. halted slots restart from (H_init, L_init) with a fresh puzzle
        if halted.any():
            idx = halted.nonzero().flatten()
            fresh = as_batch(train_arrays, sampler.take(len(idx)))
            for k in data:
                data[k][idx] = fresh[k]
            zH0, zL0 = inner.initial_state(len(idx), torch.float32)
            zH[idx], zL[idx], steps[idx] = zH0, zL0, 0
        # 2. one supervision step (n/T recursion, gradients through the last cycle only)
        lr = args.lr * min(1.0, step / args.warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        zH, zL, logits, q_halt, _ = inner(zH, zL, data["inputs"], data["puzzle_identifiers"])
        labels = data["labels"]
        with torch.no_grad():
            steps = steps + 1
            valid = labels != R.IGNORE_LABEL_ID
            correct = valid & (logits.argmax(-1) == labels)
            seq_correct = correct.sum(-1) == valid.sum(-1)
            halted = steps >= N
            halted = halted | (q_halt > 0)
            min_halt = (torch.rand(B) < cfg.halt_exploration_prob) * torch.randint(2, N + 1, (B,))
            halted = halted & (steps >= min_halt)
        lm = (stablemax_cross_entropy(logits, labels) / valid.sum(-1, keepdim=True).clamp_min(1)).sum()
        q_loss = F.binary_cross_entropy_with_logits(q_halt, seq_correct.to(q_halt.dtype), reduction="sum")
        loss = (lm + 0.5 * q_loss) / B
        opt.zero_grad(set_to_none=True)
        table.grad = None
        loss.backward()
        if args.clip:
            torch.nn.utils.clip_grad_norm_(params, args.clip)
        opt.step()
        with torch.no_grad():
            if table.grad is not None:   # sign-SGD on the puzzle table (the reference's rule)
                table.mul_(1 - lr * args.wd).add_(-lr * torch.sign(table.grad))
            for name, p in model.named_parameters():
                ema_params[name].mul_(args.ema).add_(p, alpha=1 - args.ema)
            ema.inner.puzzle_emb.weights.copy_(table)
        # metrics over the slots that halted (as the reference's)
        h = halted
        stats["n"] += int(h.sum())
        stats["exact"] += float(seq_correct[h].sum())
        stats["steps"] += float(steps[h].sum())
        stats["qacc"] += float(((q_halt[h] >= 0) == seq_correct[h]).sum())
        stats["lm"] += float(lm.detach()) / B
        stats["count"] += 1
        if step % args.log_every == 0 or step == args.steps:
            n = max(stats["n"], 1)
            el = time.time() - t0
            msg = (f"step {step} lr {lr:.2e} lm {stats['lm'] / stats['count']:.4f} halted {stats['n']} "
                   f"exact {stats['exact'] / n:.3f} steps {stats['steps'] / n:.2f} q_acc {stats['qacc'] / n:.3f} "
                   f"t {el:.0f}s")
            if step % args.eval_every == 0 or step == args.steps:
                r = evaluate(ema, val_arrays)
                msg += " | val(EMA) " + " ".join(f"S{s}={r[s]:.3f}" for s in (1, 2, 4, 8, 16))
                msg += f" auto={r['auto']:.3f}@{r['mean_steps']:.2f}"
                history.append(dict(step=step, seconds=round(el, 1), **{str(k): v for k, v in r.items()}))
            log(msg)
            stats = dict(n=0, exact=0.0, steps=0.0, qacc=0.0, lm=0.0, count=0)
        if time.time() - t0 > args.max_minutes * 60:
            log(f"wall-clock guard: stopped at step {step} after {time.time() - t0:.0f} s "
                f"(--max-minutes {args.max_minutes}); the run is NOT the recipe's")
            break
    table.requires_grad_(False)
    ema.inner.puzzle_emb.weights.requires_grad_(False)
    return ema, step, time.time() - t0, history, n_params


# ----------------------------------------------------------------------------------------------


def export(args, ema, step, wall, history, n_params, data_root, command):
    out = args.out
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        if name.startswith("step_"):
            os.remove(os.path.join(out, name))
    ema.eval()
    R.save_checkpoint(ema, os.path.join(out, f"step_{step}"), compiled=True)
    cfg = ema.cfg
    overrides = dict(global_batch_size=args.batch, epochs=step, lr=args.lr, lr_warmup_steps=args.warmup,
                     weight_decay=args.wd, puzzle_emb_lr=args.lr, puzzle_emb_weight_decay=args.wd,
                     eval_interval=args.eval_every, seed=args.seed, ema=True, ema_rate=args.ema,
                     project_name="Muninn-trm-sudoku4", checkpoint_path=".")
    R.write_all_config(os.path.join(out, "all_config.yaml"), R.pretrain_config_dict(
        cfg, data_path="data", run_name="trm_sudoku", overrides=overrides))
    # the shipped data: the test split, train/dataset.json (sizes) and identifiers.json
    dst = os.path.join(out, "data")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(os.path.join(data_root, "test"), os.path.join(dst, "test"))
    os.makedirs(os.path.join(dst, "train"))
    shutil.copy(os.path.join(data_root, "train", "dataset.json"), os.path.join(dst, "train", "dataset.json"))
    shutil.copy(os.path.join(data_root, "identifiers.json"), os.path.join(dst, "identifiers.json"))
    # the reloaded checkpoint must give the trained model's outputs
    cfg2, m2 = R.read_run(out, dst)
    assert cfg2 == cfg, (cfg2, cfg)
    test = {k: np.load(os.path.join(dst, "test", f"all__{k}.npy")) for k in ("inputs", "labels")}
    b = as_batch(test, np.arange(min(64, len(test["inputs"]))))
    a1, a2 = ema.solve(b, cfg.halt_max_steps), m2.solve(b, cfg.halt_max_steps)
    assert all(torch.equal(x["logits"], y["logits"]) for x, y in zip(a1["trace"], a2["trace"]))
    run = dict(command=command, torch_version=torch.__version__.split("+")[0], threads=args.threads,
               optimizer_steps=step, wall_seconds=round(wall, 1), parameters=n_params,
               batch=args.batch, validation_history=history)
    with open(os.path.join(out, "train_run.json"), "w") as f:
        json.dump(run, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "examples", "models", "trm_sudoku"))
    ap.add_argument("--data", default="/tmp/trm_sudoku4_data", help="where the full dataset is written")
    ap.add_argument("--log", default=None)
    ap.add_argument("--n-train", type=int, default=2000, help="base training puzzles (groups)")
    ap.add_argument("--num-aug", type=int, default=7, help="augmentations per training puzzle")
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--n-val", type=int, default=128, help="held-out puzzles for the training log")
    ap.add_argument("--min-givens", type=int, default=4)
    ap.add_argument("--max-givens", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--expansion", type=float, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--T", type=int, default=2, help="H_cycles")
    ap.add_argument("--n", type=int, default=2, help="L_cycles")
    ap.add_argument("--mlp-t", action="store_true")
    ap.add_argument("--n-sup", type=int, default=16, help="halt_max_steps")
    ap.add_argument("--explore", type=float, default=0.1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=2600)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--ema", type=float, default=0.995)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--max-minutes", type=float, default=24)
    ap.add_argument("--no-export", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    command = "python3 tools/reference/train_trm.py " + " ".join(sys.argv[1:])
    logf = open(args.log, "a") if args.log else None

    def log(msg):
        print(msg, flush=True)
        if logf:
            logf.write(msg + "\n")
            logf.flush()
    log(command)
    t = time.time()
    train_arrays, test_arrays, val_arrays = make_data(args.data, args.n_train, args.num_aug, args.n_test,
                                                      args.n_val, args.seed, args.min_givens, args.max_givens)
    classes_train = {canonical(x - 1) for x in train_arrays["inputs"][train_arrays["puzzle_indices"][:-1]]}
    classes_test = {canonical(x - 1) for x in test_arrays["inputs"]}
    log(f"data: train {len(train_arrays['inputs'])} examples ({args.n_train} groups), test "
        f"{len(test_arrays['inputs'])}, val {len(val_arrays['inputs'])}; givens in test "
        f"{np.bincount((test_arrays['inputs'] > 1).sum(1)).tolist()}; essentially different puzzles: "
        f"train {len(classes_train)}, test {len(classes_test)}, test not in train "
        f"{len(classes_test - classes_train)} ({time.time() - t:.0f} s)")
    ema, step, wall, history, n_params = train(args, train_arrays, val_arrays, log)
    log(f"trained {step} steps in {wall:.0f} s")
    r = evaluate(ema, test_arrays)
    log("test(EMA) " + " ".join(f"S{s}={r[s]:.3f}" for s in (1, 2, 4, 8, 16)) +
        f" auto={r['auto']:.3f}@{r['mean_steps']:.2f}")
    if not args.no_export:
        export(args, ema, step, wall, history, n_params, args.data, command)
        log(f"exported to {args.out}")


if __name__ == "__main__":
    main()
