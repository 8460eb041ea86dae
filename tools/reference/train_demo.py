"""Train, evaluate and export Muninn's embedded demo model (docs/demo.md).

A small Huginn-architecture model (prelude / recurrent core / coda of sandwich blocks, concat
adapter) learns a synthetic reasoning task whose answer can be checked exactly, with the paper's
recipe: the recurrence depth of every optimizer step is drawn from the log-normal Poisson
distribution, gradients flow only through the last k iterations (truncated
backprop), and the initial recurrent state is random.  More recurrence steps at test time
then let the same weights solve longer problems.

Shipped task "shell" (the shell game): a ball starts under one of three cups, then K = 1..24 swaps
of two cups follow, e.g. ``1:(01)(12)(01)=`` -> ``2``.  Following the ball is a composition of K
permutations with no counting shortcut, so the model has to apply the swaps one after another;
each recurrence step resolves a few of them.  A difficulty curriculum (the largest K grows over
the first half of training) is what makes it learnable in a CPU budget; without it the model
stays at chance.  With ``--max-hops 12`` (otherwise the same command, ~14 min) the curve saturates
at r = 4; with 24 it keeps rising up to r = 8-16.  Other tasks that were tried ("chain", "add",
"digitsum") are kept for the record; docs/demo.md says how they did.

Usage (CPU; the defaults are the recipe of the shipped model, see docs/demo.md):

    python3 tools/reference/train_demo.py train --out examples/models/demo --log /tmp/demo_train.log
    python3 tools/reference/train_demo.py eval  --model examples/models/demo      # re-measure

Training is reproducible from --seed for a given torch version and thread count: the number of
optimizer steps is fixed, and the wall-clock guard (--max-minutes) only stops a run that is far
too slow (the log then says so).  One PyTorch thread is the default on purpose: on a machine
whose cores are shared with other jobs, OpenMP with 2 threads was 5-20x slower per step.

Held-out problems: a hash of the prompt splits all possible problems 1:7 into a test side and a
training side; training never draws a test-side problem, even for small K where the whole
problem space is tiny.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
import zlib
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import huginn_ref as H  # noqa: E402

EVAL_RS = (1, 2, 4, 8, 16, 32)


# ----------------------------------------------------------------------------------------------
# Tasks
# ----------------------------------------------------------------------------------------------
@dataclass
class Problem:
    prompt: List[int]
    answer: List[int]
    text: str
    difficulty: int


class Vocab:
    def __init__(self, tokens: Sequence[str]) -> None:
        self.tokens = list(tokens)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        if len(self.ids) != len(self.tokens):
            raise ValueError("duplicate tokens")

    def __len__(self) -> int:
        return len(self.tokens)

    def enc(self, s: Sequence[str]) -> List[int]:
        return [self.ids[t] for t in s]

    def dec(self, ids: Sequence[int]) -> str:
        return "".join(self.tokens[i] for i in ids)


DIGITS = [str(d) for d in range(10)]
LETTERS = [chr(ord("a") + i) for i in range(16)]


class ChainTask:
    """Pointer chasing through shuffled variable assignments.

    n_statements assignments over distinct letters; the queried variable starts a chain of
    `hops` assignments that ends in a digit; the other statements form >= 2 distractor chains
    that end in other digits.  The answer is [digit, EOS].
    """

    name = "chain"

    def __init__(self, n_statements: int = 12, min_hops: int = 1, max_hops: int = 8, sep: bool = True) -> None:
        if max_hops > n_statements - 2:
            raise ValueError("need at least 2 distractor statements")
        self.n = n_statements
        self.min_hops, self.max_hops = min_hops, max_hops
        self.sep = sep
        self.vocab = Vocab(DIGITS + LETTERS + ["=", ";", "?", "<bos>", "<eos>", "<pad>"])
        self.bos, self.eos, self.pad = (self.vocab.ids[t] for t in ("<bos>", "<eos>", "<pad>"))

    def describe(self) -> str:
        return (
            f"Pointer chasing: {self.n} shuffled assignments 'x=y;' over distinct letters a-p (y a "
            f"letter or a digit), then a query '?x='. The answer is the digit reached by following "
            f"the assignments from x ({self.min_hops}-{self.max_hops} hops, uniform), then <eos>. "
            f"The other assignments form at least two distractor chains ending in other digits."
        )

    def sample(self, rng: random.Random, hops: Optional[int] = None) -> Problem:
        k = rng.randint(self.min_hops, self.max_hops) if hops is None else hops
        letters = rng.sample(LETTERS, self.n)
        digits = rng.sample(DIGITS, 10)
        rest = self.n - k
        # Split the distractor statements into 2..4 chains of length >= 1.
        n_chains = rng.randint(2, min(4, rest))
        cuts = sorted(rng.sample(range(1, rest), n_chains - 1))
        lens = [b - a for a, b in zip([0] + cuts, cuts + [rest])]
        stmts: List[Tuple[str, str]] = []
        pos = 0
        chain_lens = [k] + lens
        query = None
        for c, L in enumerate(chain_lens):
            vs = letters[pos : pos + L]
            pos += L
            stmts.append((vs[0], digits[c]))  # root
            for i in range(1, L):
                stmts.append((vs[i], vs[i - 1]))
            if c == 0:
                query, answer = vs[-1], digits[0]
        rng.shuffle(stmts)
        toks = ["<bos>"]
        for lhs, rhs in stmts:
            toks += [lhs, "=", rhs] + ([";"] if self.sep else [])
        toks += ["?", query, "="]
        text = ";".join(f"{a}={b}" for a, b in stmts) + f";?{query}=" + answer
        return Problem(self.vocab.enc(toks), self.vocab.enc([answer, "<eos>"]), text, k)


class AddTask:
    """Multi-operand addition of 2-digit numbers (paper Appendix A.1 style).

    'a+b+...=' with 2..max_ops operands; the answer is the sum as 3 digits (zero padded) + EOS.
    """

    name = "add"

    def __init__(self, min_ops: int = 2, max_ops: int = 6) -> None:
        self.min_ops, self.max_ops = min_ops, max_ops
        self.vocab = Vocab(DIGITS + ["+", "=", "<bos>", "<eos>", "<pad>"])
        self.bos, self.eos, self.pad = (self.vocab.ids[t] for t in ("<bos>", "<eos>", "<pad>"))

    def describe(self) -> str:
        return (
            f"Multi-operand addition: {self.min_ops}-{self.max_ops} two-digit operands 'ab+cd+...=' "
            f"(operand count uniform); the answer is the sum as three digits then <eos>."
        )

    def sample(self, rng: random.Random, hops: Optional[int] = None) -> Problem:
        n = rng.randint(self.min_ops, self.max_ops) if hops is None else hops
        ops = [rng.randint(0, 99) for _ in range(n)]
        toks = ["<bos>"]
        for i, o in enumerate(ops):
            if i:
                toks.append("+")
            toks += list(f"{o:02d}")
        toks.append("=")
        ans = f"{sum(ops):03d}"
        text = "+".join(f"{o:02d}" for o in ops) + "=" + ans
        return Problem(self.vocab.enc(toks), self.vocab.enc(list(ans) + ["<eos>"]), text, n)


class DigitSumTask:
    """Sum of K single digits: 'd+d+...+d=' -> the sum as two digits, then EOS."""

    name = "digitsum"

    def __init__(self, min_ops: int = 2, max_ops: int = 9) -> None:
        self.min_ops, self.max_ops = min_ops, max_ops
        self.width = len(str(9 * max_ops))
        self.vocab = Vocab(DIGITS + ["+", "=", "<bos>", "<eos>", "<pad>"])
        self.bos, self.eos, self.pad = (self.vocab.ids[t] for t in ("<bos>", "<eos>", "<pad>"))

    def describe(self) -> str:
        return (
            f"Multi-operand addition of single digits: {self.min_ops}-{self.max_ops} operands "
            f"'a+b+...=' (operand count uniform); the answer is the sum as {self.width} digits "
            f"(zero padded) then <eos>."
        )

    def sample(self, rng: random.Random, hops: Optional[int] = None) -> Problem:
        n = rng.randint(self.min_ops, self.max_ops) if hops is None else hops
        ops = [rng.randint(0, 9) for _ in range(n)]
        toks = ["<bos>"] + list("+".join(map(str, ops))) + ["="]
        ans = f"{sum(ops):0{self.width}d}"
        text = "+".join(map(str, ops)) + "=" + ans
        return Problem(self.vocab.enc(toks), self.vocab.enc(list(ans) + ["<eos>"]), text, n)


class ShellTask:
    """The shell game: a ball under one of n cups, then K swaps of two cups; where is the ball?

    Tracking the ball is a composition of K permutations (no counting shortcut), so a model has to
    apply the swaps one after another: K swaps need about K sequential steps.
    Prompt: <bos> start ':' swap_1 ... swap_K '='; answer: [final cup, <eos>].
    """

    name = "shell"

    def __init__(self, n_cups: int = 3, min_k: int = 1, max_k: int = 12) -> None:
        self.n, self.min_k, self.max_k = n_cups, min_k, max_k
        self.swaps = [(i, j) for i in range(n_cups) for j in range(i + 1, n_cups)]
        self.swap_tok = [f"({i}{j})" for i, j in self.swaps]
        self.vocab = Vocab(DIGITS + self.swap_tok + [":", "=", "<bos>", "<eos>", "<pad>"])
        self.bos, self.eos, self.pad = (self.vocab.ids[t] for t in ("<bos>", "<eos>", "<pad>"))

    def describe(self) -> str:
        return (
            f"Shell game: a ball starts under cup s (0-{self.n - 1}); then K = {self.min_k}-"
            f"{self.max_k} swaps (uniform), each token '(ij)' swapping cups i and j; the answer is "
            f"the cup that holds the ball at the end, then <eos>. Prompt 's:(ij)(kl)...=', e.g. "
            f"'1:(01)(12)(01)=' -> '2'."
        )

    def sample(self, rng: random.Random, hops: Optional[int] = None) -> Problem:
        k = rng.randint(self.min_k, self.max_k) if hops is None else hops
        ball = start = rng.randrange(self.n)
        seq = [rng.randrange(len(self.swaps)) for _ in range(k)]
        for s in seq:
            i, j = self.swaps[s]
            if ball == i:
                ball = j
            elif ball == j:
                ball = i
        toks = ["<bos>", str(start), ":"] + [self.swap_tok[s] for s in seq] + ["="]
        text = "".join(toks[1:]) + str(ball)
        return Problem(self.vocab.enc(toks), self.vocab.enc([str(ball), "<eos>"]), text, k)


TASKS = {"chain": ChainTask, "add": AddTask, "digitsum": DigitSumTask, "shell": ShellTask}


def make_task(name: str, args) -> object:
    if name == "chain":
        return ChainTask(args.n_statements, args.min_hops, args.max_hops, not args.no_sep)
    if name == "add":
        return AddTask(args.min_hops, args.max_hops)
    if name == "shell":
        return ShellTask(args.n_cups, args.min_hops, args.max_hops)
    if name == "digitsum":
        return DigitSumTask(args.min_hops, args.max_hops)
    raise ValueError(name)


def task_min(task) -> int:
    return getattr(task, "min_hops", getattr(task, "min_k", getattr(task, "min_ops", 1)))


def task_max(task) -> int:
    return getattr(task, "max_hops", getattr(task, "max_k", getattr(task, "max_ops", 1)))


def curriculum_max(step: int, args, task) -> Optional[int]:
    """Largest difficulty drawn at this step: grows linearly from min to max over the first
    args.curriculum fraction of the steps (None: no curriculum)."""
    if args.curriculum <= 0:
        return None
    lo, hi = task_min(task), task_max(task)
    frac = min(1.0, step / max(1.0, args.curriculum * args.steps))
    return min(hi, lo + int(math.floor(frac * (hi - lo + 1))))


def problem_key(p: Problem) -> Tuple[int, ...]:
    return tuple(p.prompt)


def is_test_problem(p: Problem) -> bool:
    """Deterministic 1-in-8 split of all possible problems (by prompt) into the held-out side."""
    return zlib.crc32(bytes(p.prompt)) % 8 == 0


def make_test_set(task, n: int, seed: int) -> List[Problem]:
    """n distinct held-out problems drawn from the task distribution (restricted to the test side)."""
    rng = random.Random(seed + 1_000_003)
    out: List[Problem] = []
    keys = set()
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 1000 * n:
            raise RuntimeError(f"could not draw {n} distinct held-out problems")
        p = task.sample(rng)
        if is_test_problem(p) and problem_key(p) not in keys:
            keys.add(problem_key(p))
            out.append(p)
    return out


def make_batch(
    task, rng: random.Random, batch: int, max_difficulty: Optional[int] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Input ids [B, T] (right padded) and targets [B, T] with -100 outside the answer.

    Problems on the held-out side of the split are skipped.
    max_difficulty (curriculum): draw the difficulty uniformly from [min, max_difficulty].
    """
    probs = []
    while len(probs) < batch:
        hops = None if max_difficulty is None else rng.randint(task_min(task), max_difficulty)
        p = task.sample(rng, hops)
        if is_test_problem(p):
            continue
        probs.append(p)
    T = max(len(p.prompt) + len(p.answer) for p in probs) - 1
    ids = torch.full((batch, T), task.pad, dtype=torch.long)
    tgt = torch.full((batch, T), -100, dtype=torch.long)
    for b, p in enumerate(probs):
        seq = p.prompt + p.answer
        ids[b, : len(seq) - 1] = torch.tensor(seq[:-1])
        P = len(p.prompt)
        # Position P-1 (the last prompt token) predicts answer[0], and so on.
        tgt[b, P - 1 : P - 1 + len(p.answer)] = torch.tensor(p.answer)
    return ids, tgt


# ----------------------------------------------------------------------------------------------
# Evaluation: the same procedure as the C++ demo (prefill the prompt, then greedy-decode
# len(answer) tokens one at a time with a KV cache, r recurrence steps per call).
# ----------------------------------------------------------------------------------------------
@torch.no_grad()
def greedy_answers(
    model: H.Huginn, prompts: List[List[int]], n_new: int, r: int, init: str, generator=None
) -> List[List[int]]:
    out: List[Optional[List[int]]] = [None] * len(prompts)
    groups: Dict[int, List[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault(len(p), []).append(i)
    for L, idx in sorted(groups.items()):
        for s in range(0, len(idx), 256):
            sel = idx[s : s + 256]
            ids = torch.tensor([prompts[i] for i in sel], dtype=torch.long)
            cache = H.HuginnCache()
            logits = model(ids, r, init=init, cache=cache, generator=generator)
            nxt = logits[:, -1].argmax(-1)
            toks = [nxt]
            for _ in range(n_new - 1):
                logits = model(nxt.unsqueeze(1), r, init=init, cache=cache, generator=generator)
                nxt = logits[:, -1].argmax(-1)
                toks.append(nxt)
            res = torch.stack(toks, 1).tolist()
            for j, i in enumerate(sel):
                out[i] = res[j]
    return out  # type: ignore[return-value]


def accuracy(model, problems: List[Problem], r: int, init: str, seed: int = 0) -> Tuple[float, Dict[int, float]]:
    g = torch.Generator().manual_seed(seed) if init == "random" else None
    n_new = len(problems[0].answer)
    ans = greedy_answers(model, [p.prompt for p in problems], n_new, r, init, g)
    ok = [a == p.answer for a, p in zip(ans, problems)]
    by: Dict[int, List[bool]] = {}
    for o, p in zip(ok, problems):
        by.setdefault(p.difficulty, []).append(o)
    return sum(ok) / len(ok), {d: sum(v) / len(v) for d, v in sorted(by.items())}


def eval_table(model, problems, rs=EVAL_RS, inits=("zero", "random"), log=print) -> Dict[str, Dict[str, float]]:
    table: Dict[str, Dict[str, float]] = {}
    for init in inits:
        table[init] = {}
        for r in rs:
            acc, by = accuracy(model, problems, r, init)
            table[init][str(r)] = acc
            per = " ".join(f"{d}:{a:.2f}" for d, a in by.items())
            log(f"  eval init={init:6s} r={r:3d} acc={acc:.4f}  by difficulty {per}")
    return table


# ----------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------
def build_model(args, vocab_size: int) -> H.Huginn:
    cfg = H.HuginnConfig(
        n_embd=args.n_embd,
        num_attention_heads=args.heads,
        intermediate_size=args.intermediate,
        vocab_size=vocab_size,
        padded_vocab_size=vocab_size,
        n_layers_in_prelude=args.layers[0],
        n_layers_in_recurrent_block=args.layers[1],
        n_layers_in_coda=args.layers[2],
        mean_recurrence=args.mean_recurrence,
        mean_backprop_depth=args.backprop_depth,
        block_size=args.block_size,
    )
    model = H.Huginn(cfg)
    model.init_weights(args.seed)
    return model


def lr_at(step: int, args) -> float:
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    # Trapezoid as in the paper's run: constant, then a linear cooldown over the last part.
    cool = int(args.steps * args.cooldown)
    if step >= args.steps - cool:
        return args.lr * max(args.steps - step, 0) / max(cool, 1)
    return args.lr


def train(args) -> None:
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    task = make_task(args.task, args)
    logf = open(args.log, "a", encoding="utf-8") if args.log else None

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        if logf:
            logf.write(line + "\n")
            logf.flush()

    log(f"args: {vars(args)}")
    log(f"task: {task.describe()}")
    # Held-out split: a problem belongs to the test side iff a hash of its prompt says so, so
    # the two sides never share a problem even where a difficulty has only a few problems.
    test = make_test_set(task, args.n_test, args.seed)
    quick = test[: args.n_quick]

    model = build_model(args, len(task.vocab))
    cfg = model.config
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: h={cfg.n_embd} heads={cfg.n_heads} I={cfg.intermediate_size} layers="
        f"({cfg.n_layers_in_prelude},{cfg.n_layers_in_recurrent_block},{cfg.n_layers_in_coda}) "
        f"vocab={cfg.vocab_size} params={n_params}")

    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if (p.dim() < 2 or "norm" in n or "qk_bias" in n) else decay).append(p)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.wd}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
    )
    data_rng = random.Random(args.seed)
    depth_gen = torch.Generator().manual_seed(args.seed + 514229)
    state_gen = torch.Generator().manual_seed(args.seed + 317811)

    t0 = time.time()
    ema = None
    step = 0
    hist_r: Dict[int, int] = {}
    for step in range(args.steps):
        if time.time() - t0 > args.max_minutes * 60:
            log(f"wall-clock guard hit at step {step}; stopping early")
            break
        model.train()
        n_nograd, k_grad = H.sample_num_steps(args.mean_recurrence, args.backprop_depth, depth_gen)
        hist_r[n_nograd + k_grad] = hist_r.get(n_nograd + k_grad, 0) + 1
        cur = curriculum_max(step, args, task)
        ids, tgt = make_batch(task, data_rng, args.batch, cur)
        logits = model(ids, (n_nograd, k_grad), init=args.train_init, generator=state_gen)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        if step % args.log_every == 0:
            log(f"step {step:5d} loss {loss.item():.4f} ema {ema:.4f} r={n_nograd + k_grad:2d} "
                f"(grad {k_grad}) lr {lr_at(step, args):.2e} max_difficulty {cur} elapsed {time.time() - t0:7.1f}s")
        if args.eval_every and step and step % args.eval_every == 0:
            model.eval()
            accs = []
            for r in (1, 4, 8, 16, 32):
                a, _ = accuracy(model, quick, r, "zero")
                accs.append(f"r{r}={a:.3f}")
            log(f"step {step:5d} quick-eval (zero init, {len(quick)} problems): " + " ".join(accs))
    wall = time.time() - t0
    steps_done = step + 1
    log(f"training done: {steps_done} steps in {wall:.1f}s; depth histogram "
        f"{dict(sorted(hist_r.items()))}")

    # Export, then measure on the reloaded checkpoint (what the C++ side will load).
    model.eval()
    out = args.out
    os.makedirs(out, exist_ok=True)
    n_bytes = n_params * 4
    dtype = torch.float32 if n_bytes <= 3_000_000 else torch.bfloat16
    files = model.save_pretrained(out, dtype=dtype)
    log(f"saved {files} to {out} as {dtype}")
    reloaded = H.Huginn.from_pretrained(out)
    table = eval_table(reloaded, test, log=log)
    demo = {
        "task": task.describe(),
        "task_name": task.name,
        "token_map": {t: i for i, t in enumerate(task.vocab.tokens)},
        "bos": task.bos,
        "eos": task.eos,
        "pad": task.pad,
        "train": {
            "mean_recurrence": args.mean_recurrence,
            "backprop_depth": args.backprop_depth,
            "depth_sampler": "poisson-lognormal-filling (huginn.md 7.1), one depth per optimizer step",
            "state_init": args.train_init,
            "loss": "cross entropy on the answer tokens only",
            "optimizer": f"AdamW lr {args.lr} betas (0.9, 0.95) wd {args.wd}, warmup {args.warmup}, "
                         f"linear cooldown over the last {args.cooldown:.0%}, grad clip {args.clip}",
            "curriculum": (f"largest difficulty grows linearly from {task_min(task)} to {task_max(task)} over "
                           f"the first {args.curriculum:.0%} of the steps; difficulty uniform below it"
                           if args.curriculum > 0 else "none"),
            "model": f"h={cfg.n_embd} heads={cfg.n_heads} intermediate={cfg.intermediate_size} layers="
                     f"({cfg.n_layers_in_prelude},{cfg.n_layers_in_recurrent_block},{cfg.n_layers_in_coda}) "
                     f"params={n_params}",
            "batch": args.batch,
            "steps": steps_done,
            "seed": args.seed,
            "threads": args.threads,
            "wall_seconds": round(wall, 1),
            "hardware": args.hardware,
            "torch": torch.__version__,
            "command": " ".join(["python3", "tools/reference/train_demo.py"] + sys.argv[1:]),
        },
        "init": "zero",
        "held_out": "problems whose zlib.crc32(bytes(prompt)) % 8 == 0; training never draws them",
        "eval": "prefill the prompt, then greedy-decode len(answer) tokens one at a time with a KV "
                "cache and r recurrence steps per call; exact match of all answer tokens",
        "reference_accuracy": table["zero"],
        "reference_accuracy_random_init": table["random"],
        "problems": [
            {"prompt": p.prompt, "answer": p.answer, "text": p.text, "difficulty": p.difficulty}
            for p in test
        ],
    }
    with open(os.path.join(out, "demo.json"), "w", encoding="utf-8") as f:
        json.dump(demo, f, separators=(",", ":"))
        f.write("\n")
    log(f"wrote {os.path.join(out, 'demo.json')}")
    for init in ("zero", "random"):
        for r in EVAL_RS:
            log(f"[{init}] r={r} accuracy={table[init][str(r)]:.4f} mean_steps={r}")


def evaluate(args) -> None:
    torch.set_num_threads(args.threads)
    model = H.Huginn.from_pretrained(args.model)
    with open(os.path.join(args.model, "demo.json"), "r", encoding="utf-8") as f:
        demo = json.load(f)
    probs = [Problem(p["prompt"], p["answer"], p["text"], p.get("difficulty", 0)) for p in demo["problems"]]
    if args.n_test:
        probs = probs[: args.n_test]
    rs = [int(r) for r in args.rs.split(",")]
    table = eval_table(model, probs, rs=rs, inits=args.inits.split(","))
    for init, row in table.items():
        for r, a in row.items():
            print(f"[{init}] r={r} accuracy={a:.4f} mean_steps={r}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--task", default="shell", choices=sorted(TASKS))
    t.add_argument("--n-statements", type=int, default=12, help="chain task: assignments per problem")
    t.add_argument("--min-hops", type=int, default=1, help="smallest difficulty (swaps, hops, operands)")
    t.add_argument("--max-hops", type=int, default=24, help="largest difficulty")
    t.add_argument("--n-cups", type=int, default=3, help="shell task: number of cups")
    t.add_argument("--no-sep", action="store_true", help="chain task: no ';' between statements")
    t.add_argument("--n-embd", type=int, default=64)
    t.add_argument("--heads", type=int, default=4)
    t.add_argument("--intermediate", type=int, default=192)
    t.add_argument("--layers", type=int, nargs=3, default=[1, 2, 1])
    t.add_argument("--block-size", type=int, default=64)
    t.add_argument("--mean-recurrence", type=int, default=8)
    t.add_argument("--backprop-depth", type=int, default=4)
    t.add_argument("--train-init", default="random", choices=["random", "zero"])
    t.add_argument("--steps", type=int, default=6000)
    t.add_argument("--batch", type=int, default=64)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--wd", type=float, default=0.01)
    t.add_argument("--warmup", type=int, default=100)
    t.add_argument("--cooldown", type=float, default=0.2)
    t.add_argument("--clip", type=float, default=1.0)
    t.add_argument("--curriculum", type=float, default=0.5,
                   help="fraction of the steps over which the largest difficulty grows from min to max")
    t.add_argument("--seed", type=int, default=1234)
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--max-minutes", type=float, default=24.0)
    t.add_argument("--n-test", type=int, default=512)
    t.add_argument("--n-quick", type=int, default=256)
    t.add_argument("--eval-every", type=int, default=250)
    t.add_argument("--log-every", type=int, default=25)
    t.add_argument("--log", default="")
    t.add_argument("--hardware", default="CPU: AMD EPYC VM, 2 vCPUs shared with other jobs; 1 PyTorch thread")
    t.add_argument("--out", required=True)
    e = sub.add_parser("eval")
    e.add_argument("--model", required=True)
    e.add_argument("--rs", default=",".join(map(str, EVAL_RS)))
    e.add_argument("--inits", default="zero,random")
    e.add_argument("--n-test", type=int, default=0)
    e.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    if args.cmd == "train":
        train(args)
    else:
        evaluate(args)


if __name__ == "__main__":
    main()
