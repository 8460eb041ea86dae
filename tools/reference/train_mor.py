#!/usr/bin/env python3
"""Train, evaluate and export Muninn's tiny Mixture-of-Recursions demo model (docs/mor_demo.md).

A Llama with middle_cycle sharing (first layer, one shared block run up to Nr = 3 times, last
layer; tools/reference/mor_ref.py) learns a synthetic token stream in which some positions are
easy and some are hard, with the paper's final MoR recipe: expert-choice routing, one linear
router per recursion, sigmoid gate with alpha = 0.1, capacities (1, 2/3, 1/3), and the auxiliary
BCE router loss (coefficient 0.001) whose targets are "this token is in the top-k of its
recursion", so that sigmoid(logit) >= 0.5 can decide causally at decode time.

Tasks: "echo-sum" (the shipped model) and "hop-chain" (HopChainTask, multi-hop lookups in an
in-context permutation; tried for a model in which depth pays and not
shipped: see docs/mor_demo.md). Recursive KV sharing (--kv-sharing, the reference's
kv_sharing.enable) is supported by the training forward.

Task "echo-sum" (the shipped one): after <bos>, G = 16 groups of three tokens [v, e, s]:
  v  a value digit 0..k-1 (k = 10), uniform at random   (predicting it: "free", not learnable)
  e  the echo letter of v (a..j)                        (predicted at v: EASY, identity-like)
  s  the sum letter (A..J) of (v_g + v_{g-1} + ... + v_{g-w+1}) mod k over the last w = 5 values
                                                        (predicted at e: HARD, a composition)
So exactly one third of the positions are hard (the echo letters, where the model must add
w values gathered from the stream) and the router can tell them apart causally (an echo letter
is the current token). Capacity 1/3 at the last recursion = the number of hard positions.
(The previous sum letter is in the stream, so s_g = s_{g-1} + v_g - v_{g-w} mod k is a
three-operand shortcut.)

What the shipped model shows (docs/mor_demo.md has the numbers): the routers become near-binary
and the causal rule reproduces the scoring-mode accuracy, but the routers send the HARD tokens
through ONE recursion and give the extra recursions to easy and free tokens: the task is solved
by the shallow path (first layer, one block pass, last layer), and a second or third pass of the
shared block, whose attention at depth r sees only the tokens selected at r, disturbs the hard
tokens' result while it costs the easy ones nothing. In the runs tried (docs/mor_demo.md) the share of
hard tokens in the last recursion fell to 0 as soon as the shallow path had learned them; with
the capacity warmup some runs first ranked the hard tokens highest while those were at chance.

Capacity warmup (training only, --cap-warmup): capacities start at 1 and follow a cosine down to
(1, 2/3, 1/3), like the reference's cap_warmup_step (which its final config leaves off).

Training runs a batched, differentiable copy of mor_ref's scoring forward (mor_ref's forwards run
under no_grad, one row at a time); after training the weights are exported into a mor_ref
MoRModel, the two forwards are asserted equal (max |delta logits| < 1e-5), and the checkpoint is
written with mor_ref's save (config.json with the "mor" block, pytorch_model.bin, mor.yaml).
Every number in demo.json is measured with mor_ref on the reloaded checkpoint.

Usage (CPU; defaults = the shipped recipe, see docs/mor_demo.md):

    python3 tools/reference/train_mor.py train --out examples/models/mor_demo --log /tmp/mor_train.log
    python3 tools/reference/train_mor.py eval  --model examples/models/mor_demo   # re-measure

`train` trains the MoR model and (--variants) two baselines with the same data, seed,
steps and batch: "fixed" (the same architecture with capacity 1 at every recursion: every token
runs all 3 recursions) and "vanilla" (a plain 3-layer Llama with the same unique parameters, no
routers). They are saved under <out>/fixed and <out>/vanilla.

Reproducible from --seed for a given torch version and thread count (1 thread by default).
Held-out sequences: a hash of the token ids splits sequences 1:7; training never draws a
held-out one.
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
from typing import Dict, List

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mor_ref as M  # noqa: E402

FREE, EASY, HARD = 0, 1, 2
CLASS_NAMES = {FREE: "free", EASY: "easy", HARD: "hard"}


# ----------------------------------------------------------------------------------------------
# task
# ----------------------------------------------------------------------------------------------
class EchoSumTask:
    name = "echo-sum"
    class_names = CLASS_NAMES

    def __init__(self, k: int = 10, groups: int = 16, window: int = 5) -> None:
        assert 2 <= k <= 20 and groups >= 1 and window >= 1
        self.k, self.groups, self.window = k, groups, window
        self.tokens = (["<bos>"] + [str(i) if k <= 10 else f"v{i}" for i in range(k)]
                       + [chr(ord("a") + i) for i in range(k)] + [chr(ord("A") + i) for i in range(k)])
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.bos = 0
        self.T = 1 + 3 * groups

    def params(self):
        return {"k": self.k, "groups": self.groups, "window": self.window, "T": self.T}

    def value(self, v):
        return 1 + v

    def echo(self, v):
        return 1 + self.k + v

    def sum_tok(self, s):
        return 1 + 2 * self.k + s

    def describe(self) -> str:
        return (f"echo-sum: <bos> then {self.groups} groups [v e s]; v = a random value token "
                f"0..{self.k - 1}; e = the echo letter of v (a..{chr(ord('a') + self.k - 1)}); "
                f"s = the sum letter (A..{chr(ord('A') + self.k - 1)}) of (v_g + ... + v_(g-{self.window - 1})) "
                f"mod {self.k}, the sum of the last {self.window} values (values before the first group "
                f"count as 0). Predicting e at v is EASY (identity-like), predicting s at e is HARD "
                f"(gather {self.window} values, add mod {self.k}), predicting the next v is FREE "
                f"(random, not scored). T = {self.T} tokens, one third of the positions hard.")

    def sample(self, rng: random.Random):
        vals = [rng.randrange(self.k) for _ in range(self.groups)]
        ids = [self.bos]
        for g, v in enumerate(vals):
            s = sum(vals[max(0, g - self.window + 1): g + 1]) % self.k
            ids += [self.value(v), self.echo(v), self.sum_tok(s)]
        return ids

    def classes(self, ids):
        """Per position: the class of the prediction made there (of ids[t+1]); the last is FREE."""
        out = []
        for t, x in enumerate(ids):
            if t == len(ids) - 1:
                out.append(FREE)
            elif 1 <= x <= self.k:
                out.append(EASY)
            elif self.k < x <= 2 * self.k:
                out.append(HARD)
            else:
                out.append(FREE)
        return out


class HopChainTask:
    """Multi-hop lookups in an in-context permutation (--task hop-chain; not shipped, see
    docs/mor_demo.md "What was tried").

    <bos>, then a table: a random cyclic permutation f of the n symbols a.. (one n-cycle), one
    token 'x>y' per pair, in random order; then Q queries. A query asks for f^h(x): either as one
    token ?hx (fused=True) or as two tokens [x ?h] (fused=False), followed by the answer symbol.
    Per sequence the hop counts are the multiset `mix` (mix[i] queries with h = hmin + i),
    shuffled; x uniform.

    Predictions: at the query token (?hx, or ?h) the answer, class 1 + h - hmin (scored);
    everything else (the table, the next query's tokens) is free (class 0, not scored).

    Why depth should pay: one attention layer follows at most one pointer (a query reads the
    table entry whose key is its current symbol, which it must hold when its query vector is
    formed). With [x ?h] the first layer only fetches x, every pass of the shared block can follow
    one pointer and the last layer one more: a token that ran d recursions follows at most d + 1
    pointers (h <= 2 at depth 1, h = 3 needs depth 2, h = 4 depth 3), pointer doubling inside the
    table aside. With ?hx the first layer can follow one as well (d + 2). With recursive KV
    sharing (--kv-sharing 1) every recursion attends over recursion 0's keys and values of every
    token, so the table is visible at every depth without running deep itself. With h <= n/2 the
    cycle gives no shorter backward route."""

    name = "hop-chain"

    def __init__(self, n: int = 8, mix=(2, 2, 2, 2), hmin: int = 1, fused: bool = False) -> None:
        self.n, self.mix, self.hmin, self.fused = n, tuple(mix), hmin, fused
        self.H, self.nq = len(mix), sum(mix)
        self.hops = list(range(hmin, hmin + self.H))
        assert 3 <= n <= 20 and self.hops[-1] <= n // 2
        syms = [chr(ord("a") + i) for i in range(n)]
        qtok = [f"?{h}{x}" for h in self.hops for x in syms] if fused else [f"?{h}" for h in self.hops]
        self.tokens = ["<bos>"] + syms + qtok + [f"{a}>{b}" for a in syms for b in syms]
        self.q0 = 1 + n
        self.pair0 = 1 + n + len(qtok)
        self.bos = 0
        self.T = 1 + n + (2 if fused else 3) * self.nq
        self.class_names = {0: "free", **{i + 1: f"h{h}" for i, h in enumerate(self.hops)}}

    def sym(self, x):
        return 1 + x

    def params(self):
        return {"n": self.n, "mix": list(self.mix), "hmin": self.hmin, "fused": self.fused, "T": self.T}

    def describe(self) -> str:
        n = self.n
        return (f"hop-chain: <bos>, then a random cyclic permutation f of the symbols a..{chr(ord('a') + n - 1)} "
                f"as {n} table tokens 'x>y' in random order, then a start symbol s0 and {self.nq} queries "
                f"[?h s_j] with s_j = f^h(s_(j-1)) (the answer is the next query's start); per sequence "
                f"{'/'.join(map(str, self.mix))} queries with h = {'/'.join(str(h) for h in range(1, self.H + 1))}, "
                f"shuffled. Scored: the answer, predicted at the hop token ?h, class h; table, start symbol "
                f"and next hop token FREE (class 0, not scored). T = {self.T}.")

    def sample(self, rng: random.Random, hmax=None):
        """hmax (training curriculum): every query's hop index drawn uniformly from those with
        h <= hmax instead of the mix."""
        n = self.n
        order = list(range(n))
        rng.shuffle(order)
        f = [0] * n
        for i in range(n):
            f[order[i]] = order[(i + 1) % n]
        keys = list(range(n))
        rng.shuffle(keys)
        ids = [self.bos] + [self.pair0 + x * n + f[x] for x in keys]
        hops = [i for i, c in enumerate(self.mix) for _ in range(c)]
        rng.shuffle(hops)
        if hmax is not None and hmax < self.hops[-1]:
            hops = [rng.randrange(hmax - self.hmin + 1) for _ in hops]
        for i in hops:
            x = y = rng.randrange(n)
            for _ in range(self.hops[i]):
                y = f[y]
            if self.fused:
                ids += [self.q0 + i * n + x, self.sym(y)]
            else:
                ids += [self.sym(x), self.q0 + i, self.sym(y)]
        return ids

    def classes(self, ids):
        """Per position: the class of the prediction made there (of ids[t+1]); the last is FREE."""
        per = self.n if self.fused else 1
        return [FREE if t == len(ids) - 1 or not self.q0 <= x < self.pair0 else 1 + (x - self.q0) // per
                for t, x in enumerate(ids)]


def is_heldout(ids) -> bool:
    return zlib.crc32(bytes(ids)) % 8 == 0


def make_heldout(task, n, seed):
    rng = random.Random(seed + 1_000_003)
    out, seen = [], set()
    while len(out) < n:
        s = task.sample(rng)
        if is_heldout(s) and tuple(s) not in seen:
            seen.add(tuple(s))
            out.append(s)
    return out


def make_batch(task, rng, batch, hmax=None):
    rows = []
    while len(rows) < batch:
        s = task.sample(rng) if hmax is None else task.sample(rng, hmax)
        if not is_heldout(s):
            rows.append(s)
    return torch.tensor(rows, dtype=torch.long)


# ----------------------------------------------------------------------------------------------
# differentiable batched twin of mor_ref's scoring forward
# ----------------------------------------------------------------------------------------------
class TrainMoR(nn.Module):
    """Same maths as mor_ref.MoRModel.forward_scoring (expert-choice, middle_cycle), batched over
    rows (all rows have the same length, so every recursion has the same k in every row), with
    autograd. plain=True: forward_recursive (every layer on every token, no routers/gates)."""

    def __init__(self, cfg: M.MoRConfig, seed: int, plain: bool = False, init_std: float = 0.02):
        super().__init__()
        assert cfg.sharing == "middle_cycle" and cfg.type == "expert" and cfg.router_type == "linear"
        assert cfg.router_func == "sigmoid" and cfg.tie_word_embeddings
        self.cfg, self.plain = cfg, plain
        g = torch.Generator().manual_seed(seed)
        d = cfg.hidden_size
        shapes = M.MoRModel(cfg)._layer_shapes()
        nlayers_out = 2 + cfg.block_depth  # used for the residual-branch init scale

        def layer():
            p = nn.ParameterDict()
            for k, shp in shapes.items():
                key = k.replace(".", "__")
                if k in M.NORMS:
                    p[key] = nn.Parameter(torch.ones(shp))
                else:
                    std = init_std / math.sqrt(2 * nlayers_out) if k in ("self_attn.o_proj", "mlp.down_proj") else init_std
                    p[key] = nn.Parameter(torch.randn(shp, generator=g) * std)
            return p

        self.embed = nn.Parameter(torch.randn(cfg.vocab_size, d, generator=g) * init_std)
        self.first = layer()
        self.block = nn.ModuleList([layer() for _ in range(cfg.block_depth)])
        self.last = layer()
        self.norm = nn.Parameter(torch.ones(d))
        self.routers = nn.ParameterList(
            [nn.Parameter(torch.randn(1, d, generator=g) * init_std) for _ in range(cfg.num_recursion)])
        self.register_buffer("inv_freq", M.rope_inv_freq(cfg.head_dim, cfg.rope_theta), persistent=False)

    @staticmethod
    def w(p, k):
        return p[k.replace(".", "__")]

    def rms(self, x, w):
        xf = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.cfg.rms_norm_eps)
        return w * xf

    def layer(self, p, x, pos, shared=None, keep=None):
        """x [B,n,d] at absolute positions pos [B,n] (ascending per row): causal by index.
        shared: (k, v, kpos) of recursion 0 (recursive KV sharing): no K/V projection, the queries
        attend to every shared key at a position <= theirs. keep: a list that receives this
        layer's (k, v, pos) (recursion 0 with KV sharing)."""
        c = self.cfg
        B, n, _ = x.shape
        H, Hkv, D = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        f = pos.float()[..., None] * self.inv_freq
        emb = torch.cat((f, f), -1)
        cos, sin = emb.cos()[:, :, None, :], emb.sin()[:, :, None, :]
        h = self.rms(x, self.w(p, "input_layernorm"))
        q = (h @ self.w(p, "self_attn.q_proj").T).view(B, n, H, D)
        q = q * cos + M.rotate_half(q) * sin
        if shared is None:
            k = (h @ self.w(p, "self_attn.k_proj").T).view(B, n, Hkv, D)
            v = (h @ self.w(p, "self_attn.v_proj").T).view(B, n, Hkv, D)
            k = k * cos + M.rotate_half(k) * sin
            kpos = pos
            if keep is not None:
                keep.append((k, v, pos))
        else:
            k, v, kpos = shared
        rep = H // Hkv
        k = k.repeat_interleave(rep, dim=2)
        v = v.repeat_interleave(rep, dim=2)
        # the same operations as mor_ref.attention (einsum, -inf mask, fp32 softmax)
        sc = torch.einsum("bnhd,bmhd->bhnm", q, k) * D ** -0.5
        future = kpos[:, None, None, :] > pos[:, None, :, None]
        sc = sc.masked_fill(future, float("-inf"))
        a = torch.einsum("bhnm,bmhd->bnhd", torch.softmax(sc, dim=-1), v)
        x = x + a.reshape(B, n, H * D) @ self.w(p, "self_attn.o_proj").T
        h = self.rms(x, self.w(p, "post_attention_layernorm"))
        mlp = (F.silu(h @ self.w(p, "mlp.gate_proj").T) * (h @ self.w(p, "mlp.up_proj").T))
        return x + mlp @ self.w(p, "mlp.down_proj").T

    def run_block(self, x, pos, shared=None, keep=None):
        """The B shared layers; shared / keep: per layer-in-block, as in layer()."""
        for l, p in enumerate(self.block):
            x = self.layer(p, x, pos, shared=shared[l] if shared else None, keep=keep)
        return x

    def forward(self, ids, capacity=None):
        """Returns logits [B,T,V], the summed aux BCE loss, and per recursion the selection [B,k].
        capacity: per-recursion override (training-time capacity warmup); default cfg.capacity."""
        c = self.cfg
        capacity = c.capacity if capacity is None else capacity
        B, T = ids.shape
        d = c.hidden_size
        pos = torch.arange(T).expand(B, T)
        x = self.embed[ids]
        x = self.layer(self.first, x, pos)
        aux = x.new_zeros(())
        sels = []
        if self.plain:
            assert not c.kv_sharing
            for _ in range(c.num_recursion):
                x = self.run_block(x, pos)
        else:
            rec0 = []  # KV sharing: recursion 0's (k, v, pos) per layer-in-block
            cand = pos
            for r in range(c.num_recursion):
                xc = x.gather(1, cand[..., None].expand(-1, -1, d))
                logit = (xc / c.temp) @ self.routers[r].T
                logit = logit[..., 0]
                g = c.alpha * torch.sigmoid(logit)
                k = max(1, int(capacity[r] * T))
                vals, idx = torch.topk(g, k, dim=1, sorted=False)
                idx, order = torch.sort(idx, dim=1)
                vals = vals.gather(1, order)
                tgt = torch.zeros_like(logit).scatter_(1, idx, 1.0)
                aux = aux + F.binary_cross_entropy_with_logits(logit, tgt, reduction="sum") / (B * cand.shape[1])
                sel = cand.gather(1, idx)
                xs = x.gather(1, sel[..., None].expand(-1, -1, d))
                if c.kv_sharing:
                    # recursion 0 runs every token (capacity 1), so its K/V cover the whole row
                    assert r > 0 or k == T
                    y = self.run_block(xs, sel, shared=rec0 if r > 0 else None, keep=rec0 if r == 0 else None)
                else:
                    y = self.run_block(xs, sel)
                x = x.scatter_add(1, sel[..., None].expand(-1, -1, d), vals[..., None] * y)
                sels.append(sel)
                cand = sel
        x = self.layer(self.last, x, pos)
        logits = self.rms(x, self.norm) @ self.embed.T
        return logits, aux, sels

    def to_ref(self) -> M.MoRModel:
        """The same weights as a mor_ref MoRModel (detached copies)."""
        m = M.MoRModel(self.cfg)

        def lay(p):
            return {k: self.w(p, k).detach().clone() for k in M.LAYER_KEYS}

        emb = self.embed.detach().clone()
        m.weights = {"embed": emb, "lm_head": emb, "norm": self.norm.detach().clone(),
                     "first": lay(self.first), "block": [lay(p) for p in self.block],
                     "last": lay(self.last), "routers": [{"w": r.detach().clone()} for r in self.routers],
                     "router_bias": None}
        return m


# ----------------------------------------------------------------------------------------------
# evaluation with mor_ref (what the checkpoint means)
# ----------------------------------------------------------------------------------------------
def ref_forward(m: M.MoRModel, ids, mode):
    """mode: scoring | causal | plain. Returns logits [B,T,V], depth per row (list) or None,
    router sigmoid values per recursion (flat lists)."""
    nr = m.cfg.num_recursion
    sig = [[] for _ in range(nr)]
    if mode == "plain":
        return m.forward_recursive(ids), None, sig, None
    if mode == "scoring":
        logits, info = m.forward_scoring(ids)
        T = ids.shape[1]
        depths, agree = [], [[0, 0] for _ in range(nr)]
        for steps in info:
            dep = [0] * T
            for r, st in enumerate(steps):
                for t in st["selected"]:
                    dep[t] += 1
                chosen = set(st["selected"])
                for t, lg in zip(st["candidates"], st["logits"]):
                    s = 1.0 / (1.0 + math.exp(-lg))
                    sig[r].append(s)
                    agree[r][0] += int((s >= 0.5) == (t in chosen))
                    agree[r][1] += 1
            depths.append(dep)
        return logits, depths, sig, agree
    logits, info = m.forward_decode(ids)
    for row in info["logits"]:
        for lgs in row:
            for r, lg in enumerate(lgs):
                if lg is not None:
                    sig[r].append(1.0 / (1.0 + math.exp(-lg)))
    return logits, info["depth"], sig, None


def measure(m: M.MoRModel, task, seqs, mode, batch=50):
    """Accuracies by class, depth histogram by class, router stats, predictions per position."""
    nr = m.cfg.num_recursion
    names = task.class_names
    cls_acc = {c: [0, 0] for c in names if c != FREE}
    depth_hist = {c: [0] * (nr + 1) for c in names}
    sig_all = [[] for _ in range(nr)]
    agree_all = [[0, 0] for _ in range(nr)]
    preds, depths = [], []
    for s in range(0, len(seqs), batch):
        ids = torch.tensor(seqs[s:s + batch], dtype=torch.long)
        logits, dep, sig, agree = ref_forward(m, ids, mode)
        for r in range(nr):
            sig_all[r] += sig[r]
            if agree:
                agree_all[r][0] += agree[r][0]
                agree_all[r][1] += agree[r][1]
        am = logits.argmax(-1).tolist()
        for b, row in enumerate(ids.tolist()):
            cl = task.classes(row)
            for t in range(len(row) - 1):
                if cl[t] in cls_acc:
                    cls_acc[cl[t]][0] += int(am[b][t] == row[t + 1])
                    cls_acc[cl[t]][1] += 1
            if dep is not None:
                for t, dd in enumerate(dep[b]):
                    depth_hist[cl[t]][dd] += 1
            preds.append(am[b])
            depths.append(dep[b] if dep is not None else [nr] * len(row))
    res = {"accuracy": {names[c]: v[0] / v[1] for c, v in cls_acc.items()}}
    tot = sum(v[0] for v in cls_acc.values()) / sum(v[1] for v in cls_acc.values())
    res["accuracy"]["scored"] = tot
    if mode != "plain":
        res["depth_histogram"] = {names[c]: {str(d): h[d] for d in range(1, nr + 1)}
                                  for c, h in depth_hist.items()}
        n_tok = sum(sum(h) for h in depth_hist.values())
        res["mean_depth"] = {names[c]: sum(d * h[d] for d in range(nr + 1)) / max(1, sum(h))
                             for c, h in depth_hist.items()}
        res["mean_depth"]["all"] = sum(d * h[d] for h in depth_hist.values() for d in range(nr + 1)) / n_tok
        res["block_compute_vs_all_depth"] = res["mean_depth"]["all"] / nr
        rs = {}
        for r in range(nr):
            v = sig_all[r]
            if not v:
                continue
            hist = [0] * 10
            for x in v:
                hist[min(9, int(x * 10))] += 1
            rs[str(r)] = {"n": len(v),
                          "near_binary_0.1": sum(1 for x in v if x <= 0.1 or x >= 0.9) / len(v),
                          "frac_ge_0.5": sum(1 for x in v if x >= 0.5) / len(v),
                          "histogram_10_bins": hist}
            if agree_all[r][1]:
                rs[str(r)]["sampling_accuracy"] = agree_all[r][0] / agree_all[r][1]
        res["router_sigmoid"] = rs
    return res, preds, depths


def r4(o):
    if isinstance(o, float):
        return round(o, 4)
    if isinstance(o, dict):
        return {k: r4(v) for k, v in o.items()}
    if isinstance(o, list):
        return [r4(v) for v in o]
    return o


def eval_all(folder, task, seqs, log=print):
    """Every model in folder (MoR, and fixed / vanilla if present), measured with mor_ref."""
    out = {}
    m = M.MoRModel.load(folder)
    # the causal rule over a whole sequence == token-by-token decoding with the ragged KV cache
    worst, same_depth = 0.0, True
    for s in seqs[:2]:
        ids = torch.tensor([s], dtype=torch.long)
        full, info = m.forward_decode(ids)
        cache, steps, deps = None, [], []
        for t in range(len(s)):
            lg, inf = m.forward_decode(ids[:, t:t + 1], cache)
            cache = inf["cache"]
            steps.append(lg[:, 0])
            deps += inf["depth"][0]
        worst = max(worst, (torch.stack(steps, 1) - full).abs().max().item())
        same_depth &= deps == info["depth"][0]
    log(f"causal rule: whole-sequence forward vs token-by-token cached decode on 2 sequences: "
        f"max |delta logits| {worst:.2e}, depths equal: {same_depth}")
    assert worst < 1e-4 and same_depth
    for mode in ("scoring", "causal"):
        res, _, _ = measure(m, task, seqs, mode)
        out[f"mor_{mode}"] = r4(res)
    for v, nr in FIXED_DEPTH.items():
        fx = os.path.join(folder, v)
        if os.path.exists(os.path.join(fx, "config.json")):
            res, _, _ = measure(M.MoRModel.load(fx), task, seqs, "scoring")
            out[f"fixed_depth{nr}"] = r4(res)
    va = os.path.join(folder, "vanilla")
    if os.path.exists(os.path.join(va, "config.json")):
        res, _, _ = measure(M.MoRModel.load(va), task, seqs, "plain")
        out["vanilla"] = r4(res)
    for k, v in out.items():
        log(f"{k:14s} accuracy {json.dumps(v['accuracy'])}")
        if "depth_histogram" in v:
            log(f"{'':14s} depths {json.dumps(v['depth_histogram'])} mean {json.dumps(v['mean_depth'])}")
            for r, rs in v["router_sigmoid"].items():
                log(f"{'':14s} router r={r}: near-binary {rs['near_binary_0.1']:.4f} "
                    f"sigma>=0.5 {rs['frac_ge_0.5']:.4f}"
                    + (f" sampling-acc {rs['sampling_accuracy']:.4f}" if "sampling_accuracy" in rs else "")
                    + f" hist {rs['histogram_10_bins']}")
    return out


# ----------------------------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------------------------
FIXED_DEPTH = {"fixed": 3, "fixed2": 2, "fixed1": 1}


def make_cfg(args, task, variant):
    """mor: the MoR; fixed / fixed2 / fixed1: the same layers with every token at depth 3 / 2 / 1
    (capacity 1 at every recursion, still gated); vanilla: plain Llama first, block, last."""
    common = dict(vocab_size=len(task.tokens), hidden_size=args.d, intermediate_size=args.intermediate,
                  num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
                  max_position_embeddings=max(64, task.T), rope_theta=10000.0, rms_norm_eps=1e-5,
                  sharing="middle_cycle", type="expert", router_type="linear",
                  router_func="sigmoid", alpha=0.1, temp=1.0)
    kv = dict(kv_sharing=bool(args.kv_sharing))
    if variant == "mor":
        return M.MoRConfig(num_hidden_layers=2 + 3 * args.block_depth, num_recursion=3,
                           capacity=[1.0, 2 / 3, 1 / 3], **common, **kv)
    if variant in FIXED_DEPTH:
        nr = FIXED_DEPTH[variant]
        return M.MoRConfig(num_hidden_layers=2 + nr * args.block_depth, num_recursion=nr,
                           capacity=[1.0] * nr, **common, **kv)
    return M.MoRConfig(num_hidden_layers=2 + args.block_depth, num_recursion=1, capacity=[1.0],
                       kv_sharing=False, **common)


def capacity_at(step, args, cfg):
    """Training-only capacity warmup (the reference has one, cap_warmup_step, off in its final
    config): every capacity starts at 1 and follows a cosine down to its target over the first
    args.cap_warmup steps, so that every token runs every recursion early on and each router sees
    the gradient of every token before the top-k starts to exclude tokens."""
    if step >= args.cap_warmup:
        return None
    w = 0.5 * (1 + math.cos(math.pi * step / args.cap_warmup))
    return [c + (1 - c) * w for c in cfg.capacity]


def lr_at(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    prog = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * prog)))


def train_one(args, task, variant, out, heldout, log):
    torch.manual_seed(args.seed)
    cfg = make_cfg(args, task, variant)
    model = TrainMoR(cfg, args.seed, plain=(variant == "vanilla"))
    n_unique = sum(p.numel() for n, p in model.named_parameters() if not n.startswith("routers"))
    log(f"[{variant}] config: d={cfg.hidden_size} I={cfg.intermediate_size} heads={cfg.num_attention_heads}/"
        f"{cfg.num_key_value_heads} layers={cfg.layout['kept']} owners={cfg.layout['owner']} "
        f"capacity={cfg.capacity} unique params (no routers)={n_unique}")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and not n.startswith("routers")]
    rest = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and not n.startswith("routers"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd}, {"params": rest, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    rng = random.Random(args.seed)
    qids = torch.tensor(heldout[:64], dtype=torch.long)
    qcls = torch.tensor([task.classes(s) for s in heldout[:64]])
    t0 = time.time()
    ema = None
    step = -1
    for step in range(args.steps):
        if args.stop_after and step >= args.stop_after:
            log(f"[{variant}] --stop-after {args.stop_after}: stopping at step {step} of the "
                f"{args.steps}-step schedule")
            step -= 1
            break
        if time.time() - t0 > args.max_minutes * 60:
            log(f"[{variant}] wall-clock guard hit at step {step}; stopping early")
            step -= 1
            break
        model.train()
        hmax = None
        if getattr(args, "curriculum", 0):
            # hop curriculum: h <= hmin for the first `curriculum` steps, one more hop every
            # `curriculum` steps after that, the full mix once every hop count is allowed
            hmax = task.hmin + step // args.curriculum
        ids = make_batch(task, rng, args.batch, hmax)
        logits, aux, _ = model(ids, capacity_at(step, args, cfg))
        V = logits.shape[-1]
        lm = F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
        loss = lm + args.aux_coeff * aux
        for gr in opt.param_groups:
            gr["lr"] = lr_at(step, args)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        ema = lm.item() if ema is None else 0.98 * ema + 0.02 * lm.item()
        if step % args.log_every == 0 or step == args.steps - 1:
            msg = f"[{variant}] step {step:5d} lm {lm.item():.4f} ema {ema:.4f} aux {aux.item():.4f} " \
                  f"lr {lr_at(step, args):.2e} {time.time() - t0:6.1f}s"
            if step % (args.log_every * 4) == 0 or step == args.steps - 1:
                with torch.no_grad():
                    model.eval()
                    lg, _, sels = model(qids)
                    am = lg[:, :-1].argmax(-1) == qids[:, 1:]
                    qc = qcls[:, :-1]
                    msg += " | heldout64 " + " ".join(f"{n} {am[qc == c].float().mean().item():.3f}"
                                                      for c, n in task.class_names.items() if c != FREE)
                    if sels and variant == "mor":
                        # mean depth per class over the 64 rows
                        dep = torch.zeros_like(qcls)
                        for sl in sels:
                            dep.scatter_add_(1, sl, torch.ones_like(sl))
                        msg += " | mean depth " + " ".join(f"{n} {dep[qcls == c].float().mean().item():.2f}"
                                                           for c, n in task.class_names.items())
            log(msg)
    wall = time.time() - t0
    steps_done = step + 1
    log(f"[{variant}] trained {steps_done} steps in {wall:.1f}s")
    model.eval()
    ref = model.to_ref()
    # the training forward and mor_ref's forward agree on the trained weights
    ids = torch.tensor(heldout[:32], dtype=torch.long)
    with torch.no_grad():
        mine, _, _ = model(ids)
    theirs = ref.forward_recursive(ids) if variant == "vanilla" else ref.forward_scoring(ids)[0]
    delta = (mine - theirs).abs().max().item()
    log(f"[{variant}] max |training forward - mor_ref forward| on 32 held-out rows = {delta:.3e}")
    ref.save(out)  # saved before the check so that a failed check leaves the weights to inspect
    assert delta < 1e-5, delta
    back = M.MoRModel.load(out)
    again = back.forward_recursive(ids) if variant == "vanilla" else back.forward_scoring(ids)[0]
    assert torch.equal(again, theirs), "reloaded checkpoint differs"
    run = dict(steps=steps_done, wall_seconds=round(wall, 1), unique_params=n_unique,
               train_vs_ref_max_abs_delta=delta, final_lm_loss_ema=round(ema, 4),
               bin_bytes=os.path.getsize(os.path.join(out, "pytorch_model.bin")),
               torch=torch.__version__, threads=args.threads,
               command=" ".join(["python3", "tools/reference/train_mor.py"] + sys.argv[1:]))
    with open(os.path.join(out, "train_run.json"), "w", encoding="utf-8") as f:
        json.dump(run, f, indent=1)
        f.write("\n")
    return run


def write_heldout(folder, task, seqs, log):
    m = M.MoRModel.load(folder)
    _, p_s, d_s = measure(m, task, seqs, "scoring")
    _, p_c, d_c = measure(m, task, seqs, "causal")
    rows = []
    for i, s in enumerate(seqs):
        rows.append({"ids": s, "targets": s[1:] + [-1], "cls": task.classes(s),
                     "pred_scoring": p_s[i], "depth_scoring": d_s[i],
                     "pred_causal": p_c[i], "depth_causal": d_c[i]})
    doc = {
        "schema": "one object per held-out sequence: ids = token ids (length T, starting with <bos>); "
                  "targets[t] = ids[t+1] (-1 at the last position); cls[t] = class of the prediction "
                  "made at position t (0 free: not scored; the others: see classes); "
                  "pred_scoring / pred_causal = the reference's argmax next token at t (mor_ref "
                  "forward_scoring / forward_decode over the whole sequence); depth_scoring / "
                  "depth_causal = recursions the token at t ran (1..3). Accuracy of a class = mean of "
                  "pred[t] == targets[t] over positions with that cls.",
        "task": task.describe(), "T": task.T, "classes": {str(k): v for k, v in task.class_names.items()},
        "token_map": {t: i for i, t in enumerate(task.tokens)}, "bos": task.bos,
        "num_recursion": m.cfg.num_recursion, "capacity": m.cfg.capacity,
        "sequences": rows,
    }
    path = os.path.join(folder, "heldout.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    log(f"wrote {path}")


def reproduce_command(args):
    """One command that trains all three models (sequentially; every model is seeded on its own,
    so this gives the same weights as separate processes with the same flags) and exports."""
    task = (f"--k {args.k} --groups {args.groups} --window {args.window}" if args.task == "echo-sum" else
            f"--n {args.n} --mix {args.mix} --hmin {args.hmin} --fused {args.fused} --curriculum {args.curriculum}")
    return (f"python3 tools/reference/train_mor.py train --task {args.task} {task} "
            f"--kv-sharing {args.kv_sharing} --d {args.d} --intermediate {args.intermediate} --heads {args.heads} "
            f"--kv-heads {args.kv_heads} --block-depth {args.block_depth} --steps {args.steps} "
            f"--batch {args.batch} --lr {args.lr} --wd {args.wd} --warmup {args.warmup} "
            f"--aux-coeff {args.aux_coeff} --cap-warmup {args.cap_warmup} --seed {args.seed} "
            f"--threads {args.threads} --max-minutes {args.max_minutes} --out {args.out}")


def make_task(name, p):
    if name == "echo-sum":
        return EchoSumTask(p["k"], p["groups"], p["window"])
    mix = p["mix"]
    return HopChainTask(p["n"], tuple(int(x) for x in mix.split(",")) if isinstance(mix, str) else tuple(mix),
                        p["hmin"], bool(p["fused"]))


def train(args):
    torch.set_num_threads(args.threads)
    task = make_task(args.task, vars(args))
    logf = open(args.log, "a", encoding="utf-8") if args.log else None

    def log(msg):
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        if logf:
            logf.write(line + "\n")
            logf.flush()

    log(f"args: {vars(args)}")
    log(f"task: {task.describe()}")
    heldout = make_heldout(task, args.n_heldout, args.seed)
    os.makedirs(args.out, exist_ok=True)
    variants = [v for v in args.variants.split(",") if v]
    for v in variants if not args.export_only else []:
        folder = args.out if v == "mor" else os.path.join(args.out, v)
        train_one(args, task, v, folder, heldout, log)
    if args.no_export:
        return
    runs = {}
    for v in ("mor", *FIXED_DEPTH, "vanilla"):
        f = os.path.join(args.out if v == "mor" else os.path.join(args.out, v), "train_run.json")
        if os.path.exists(f):
            runs[v] = json.load(open(f, encoding="utf-8"))
    results = eval_all(args.out, task, heldout, log)
    write_heldout(args.out, task, heldout, log)
    demo = {
        "task": task.describe(),
        "task_name": task.name,
        "task_params": task.params(),
        "token_map": {t: i for i, t in enumerate(task.tokens)},
        "classes": {str(k): v for k, v in task.class_names.items()},
        "held_out": f"{args.n_heldout} distinct sequences with zlib.crc32(bytes(ids)) % 8 == 0 (drawn "
                    f"with random.Random(seed + 1000003)); training never draws such a sequence; "
                    f"stored in heldout.json",
        "eval": "teacher-forced next-token argmax accuracy over whole held-out sequences, by class of "
                "the prediction (classes: see task); mor_scoring = mor_ref forward_scoring (non-causal top-k, capacities "
                "1, 2/3, 1/3 of T); mor_causal = mor_ref forward_decode (recursion r >= 1 iff the "
                "token ran r-1 and sigmoid(router logit) >= 0.5; one call over the whole sequence "
                "equals token-by-token decoding with the ragged KV cache); fixed_depthN = the same "
                "layers with N recursions and capacity 1 at every recursion (every token runs N); "
                "vanilla = plain Llama of first, block, last (the same unique parameters, depth 3 "
                "layers). Depth = recursions of the shared block a token ran. router_sigmoid: "
                "sigmoid(router logit) of every evaluated candidate per recursion; near_binary_0.1 = "
                "fraction within 0.1 of 0 or 1; sampling_accuracy = agreement of sigmoid >= 0.5 with "
                "top-k membership (scoring mode).",
        "results": results,
        "train": {
            "recipe": "MoR expert-choice, middle_cycle sharing, Nr=3, linear router per recursion, "
                      "sigmoid gate alpha=0.1 (H += g*f(H), f including its residual), capacities "
                      "(1, 2/3, 1/3), auxiliary BCE router loss (targets: in the top-k of its "
                      f"recursion; sum / (batch * candidates), summed over recursions) x {args.aux_coeff}",
            "capacity_warmup": (f"training only: capacities start at 1 and follow a cosine down to "
                                f"(1, 2/3, 1/3) over the first {args.cap_warmup} steps"
                                if args.cap_warmup else "none"),
            "loss": "causal LM cross entropy over every position + aux_coeff * router BCE",
            "optimizer": f"AdamW lr {args.lr} betas (0.9, 0.95) wd {args.wd} (matrices), warmup "
                         f"{args.warmup}, cosine to 0.1x, grad clip {args.clip}",
            "model": f"d={args.d} intermediate={args.intermediate} heads={args.heads} kv_heads="
                     f"{args.kv_heads} block_depth={args.block_depth} vocab={len(task.tokens)} T={task.T}",
            "init": f"normal std 0.02 (o_proj/down_proj 0.02/sqrt(2*layers)), norms 1, tied embeddings",
            "batch": args.batch,
            "schedule_steps": args.steps,
            "runs": runs,
            "seed": args.seed,
            "threads": args.threads,
            "hardware": args.hardware,
            "torch": torch.__version__,
            "wall_seconds_total": round(sum(r["wall_seconds"] for r in runs.values()), 1),
            "export_command": " ".join(["python3", "tools/reference/train_mor.py"] + sys.argv[1:]),
            "commands_per_model": {v: r["command"] for v, r in runs.items()},
            "reproduce": reproduce_command(args),
        },
        "eval_command": f"python3 tools/reference/train_mor.py eval --model {args.out}",
    }
    with open(os.path.join(args.out, "demo.json"), "w", encoding="utf-8") as f:
        json.dump(demo, f, indent=1)
        f.write("\n")
    log(f"wrote {os.path.join(args.out, 'demo.json')}")


def evaluate(args):
    torch.set_num_threads(args.threads)
    demo = json.load(open(os.path.join(args.model, "demo.json"), encoding="utf-8"))
    task = make_task(demo.get("task_name", "echo-sum"), demo["task_params"])
    held = json.load(open(os.path.join(args.model, "heldout.json"), encoding="utf-8"))
    seqs = [r["ids"] for r in held["sequences"]]
    results = eval_all(args.model, task, seqs)
    same = json.dumps(results, sort_keys=True) == json.dumps(demo["results"], sort_keys=True)
    print("matches demo.json: " + ("yes" if same else "NO"))
    if not same:
        for k in results:
            if results[k] != demo["results"].get(k):
                print(f"  differs: {k}")
        sys.exit(1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--task", default="echo-sum", choices=["hop-chain", "echo-sum"])
    t.add_argument("--n", type=int, default=8, help="hop-chain: symbols in the permutation")
    t.add_argument("--mix", default="2,2,2,2", help="hop-chain: queries per sequence with h = 1, 2, ...")
    t.add_argument("--hmin", type=int, default=1, help="hop-chain: hop count of the first --mix entry")
    t.add_argument("--fused", type=int, default=0, help="hop-chain: one query token ?hx (1) or [x ?h] (0)")
    t.add_argument("--curriculum", type=int, default=0,
                   help="hop-chain: steps per stage of a hop curriculum (0: none)")
    t.add_argument("--kv-sharing", type=int, default=0, help="recursive KV sharing (1) or not (0)")
    t.add_argument("--k", type=int, default=10, help="number of values")
    t.add_argument("--groups", type=int, default=16, help="[v e s] groups per sequence")
    t.add_argument("--window", type=int, default=5, help="values summed for a hard target")
    t.add_argument("--d", type=int, default=64)
    t.add_argument("--intermediate", type=int, default=32)
    t.add_argument("--heads", type=int, default=4)
    t.add_argument("--kv-heads", type=int, default=2)
    t.add_argument("--block-depth", type=int, default=1)
    t.add_argument("--steps", type=int, default=2000)
    t.add_argument("--batch", type=int, default=64)
    t.add_argument("--lr", type=float, default=3e-3)
    t.add_argument("--wd", type=float, default=0.1)
    t.add_argument("--warmup", type=int, default=100)
    t.add_argument("--clip", type=float, default=1.0)
    t.add_argument("--aux-coeff", type=float, default=0.001)
    t.add_argument("--cap-warmup", type=int, default=1000,
                   help="steps of training-only capacity warmup (cosine from 1 to the targets)")
    t.add_argument("--seed", type=int, default=1234)
    t.add_argument("--stop-after", type=int, default=0,
                   help="stop after this many optimizer steps of the --steps schedule (a "
                        "deterministic stand-in for a run that the wall-clock guard stopped)")
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--max-minutes", type=float, default=60.0, help="per model (wall-clock guard)")
    t.add_argument("--n-heldout", type=int, default=200)
    t.add_argument("--variants", default="mor,fixed,vanilla",
                   help="models to train (each seeded alike, so separate processes give the same "
                        "weights); the export measures every model found under --out")
    t.add_argument("--no-export", action="store_true", help="train only; no eval / demo.json")
    t.add_argument("--export-only", action="store_true",
                   help="no training: measure the models already under --out (trained with the same "
                        "task flags, e.g. as parallel --no-export runs) and write demo.json / heldout.json")
    t.add_argument("--log-every", type=int, default=50)
    t.add_argument("--log", default="")
    t.add_argument("--hardware", default="CPU: AMD EPYC VM, 2 vCPUs shared with other jobs; 1 PyTorch thread")
    t.add_argument("--out", required=True)
    e = sub.add_parser("eval")
    e.add_argument("--model", required=True)
    e.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    (train if args.cmd == "train" else evaluate)(args)


if __name__ == "__main__":
    main()
