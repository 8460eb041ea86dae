#!/usr/bin/env python3
"""PyTorch CPU baseline for benchmarks/bench_host_mor.cpp (Mixture-of-Recursions decoding against a
vanilla Llama of the same unrolled depth), same work, same run:

    MUNINN_NUM_THREADS=1 python3 tools/bench/mor_pytorch.py [--build build/host] [--repeats 2] [--muninn-repeats 3]
    python3 tools/bench/mor_pytorch.py --check      # the batched decode below == mor_ref.forward_decode

Models: SmolLM-135M-shaped, fp32, random weights (tools/reference/mor_ref.py's init under a fixed
seed; speed does not depend on the values): hidden 576, 9 heads / 3 KV heads, head_dim 64, MLP
1536, vocab 49152, tied embeddings. MoR: mor_ref's expert-choice Middle-Cycle, 3 recursions of a
10-layer block between an unshared first and last layer (32 unrolled layers), random linear
routers, sigmoid gate, the causal decode rule (`MoRModel.forward_decode`: recursion r >= 1 runs
for a token iff it ran r-1 and sigmoid(router logit) >= 0.5). Vanilla: 32 distinct Llama layers.

Work (the benchmark's): 16 prompts of 8 tokens, 16 greedy tokens each: one prefill call of all 16
prompts stacked (logits of the last position only), then 15 decode calls of one token per row.

Why not `forward_decode` itself: mor_ref runs each batch row on its own (its matmuls are [n, d] for
one row), so a 16-row decode step would read every weight 16 times; Muninn's generate_batch stacks
the rows into one matmul per weight. The functions below do the same per-token maths with
mor_ref's own pieces (rms_norm, apply_rope, attention, the routers, gates, decision rule, KV slots
of MoRCache), but stack every row's tokens (those still recurring, at recursion r) into one matmul
per weight, as Muninn's sequence-wise batching does; attention stays per row over that row's
ragged cache slot. `--check` asserts that on a small model this batched decode gives
forward_decode's logits and depths (prefill + decode steps).

Rows of the table:
  * vanilla sequence-wise: 32-layer Llama batched greedy decode with a KV cache (above, no routing);
  * MoR sequence-wise: MoR batched greedy decode (above);
  * MoR depth-wise: Muninn's continuous depth-wise batching has no PyTorch counterpart; its row
    compares it with the same PyTorch MoR sequence-wise time (same tokens, same routing rule,
    another schedule).
Random weights differ between the two sides (different generators), so the routers send a
different share of tokens deeper: the table prints both mean depths (recursions per decoded token).

Clock: CPU time (time.process_time) at one thread (torch.set_num_threads(1); Muninn runs with
MUNINN_NUM_THREADS=1 and OMP_NUM_THREADS=1, Google Benchmark's cpu_time), best of --repeats after
one untimed warm-up run (PyTorch) / best of --muninn-repeats repetitions (Muninn). Ratio =
PyTorch / Muninn (above 1: Muninn is faster). Prints a markdown table.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import mor_ref as R  # noqa: E402
from muninn_bench import best_repetition, seconds  # noqa: E402

ROWS, PROMPT, NEW, BLOCK, REC = 16, 8, 16, 10, 3


def smollm_mor_config(**kw):
    base = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=2 + BLOCK * REC,
                num_attention_heads=9, num_key_value_heads=3, rms_norm_eps=1e-5, rope_theta=10000.0,
                max_position_embeddings=2048, tie_word_embeddings=True, num_recursion=REC,
                sharing="middle_cycle", type="expert", router_type="linear", router_func="sigmoid")
    base.update(kw)
    return R.MoRConfig(**base)


def segments(rid):
    """[(start, end, row)] of the runs of equal row ids in rid (tokens are stacked row by row)."""
    out, r = [], rid.tolist()
    s = 0
    for i in range(1, len(r) + 1):
        if i == len(r) or r[i] != r[s]:
            out.append((s, i, r[s]))
            s = i
    return out


def layer_batched(cfg, w, x, pos, rid, cache, name, inv_freq):
    """mor_ref.decoder_layer on the stacked tokens of several rows: every projection is one matmul
    over all of them; attention runs per row over that row's slot `name` of `cache`."""
    n, H, Hkv, D = x.shape[0], cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    h = R.rms_norm(x, w["input_layernorm"], cfg.rms_norm_eps)
    q = R.apply_rope((h @ w["self_attn.q_proj"].T).view(n, H, D), pos, inv_freq)
    k = R.apply_rope((h @ w["self_attn.k_proj"].T).view(n, Hkv, D), pos, inv_freq)
    v = (h @ w["self_attn.v_proj"].T).view(n, Hkv, D)
    a = []
    for s, e, b in segments(rid):
        slot = cache.slot(b, name)
        slot.append(k[s:e], v[s:e], pos[s:e])
        a.append(R.attention(q[s:e], slot.k, slot.v, pos[s:e], slot.pos))
    x = x + torch.cat(a).reshape(n, H * D) @ w["self_attn.o_proj"].T
    h = R.rms_norm(x, w["post_attention_layernorm"], cfg.rms_norm_eps)
    return x + (torch.nn.functional.silu(h @ w["mlp.gate_proj"].T) * (h @ w["mlp.up_proj"].T)) @ w["mlp.down_proj"].T


def step_batched(m, ids, cache, layers=None):
    """One call on ids [B, n] (the next n tokens of every row): the MoR causal decode rule of
    forward_decode (layers None) or a plain stack `layers` (vanilla). Logits of the last position
    of each row [B, V] and the recursion depth of every token [B, n]."""
    c, W = m.cfg, m.weights
    B, n = ids.shape
    N = B * n
    rid = torch.arange(B).repeat_interleave(n)
    pos = (cache.length + torch.arange(n)).repeat(B)
    x = W["embed"][ids.reshape(-1)]
    dep = torch.zeros(N, dtype=torch.long)
    if layers is not None:
        for p, w in enumerate(layers):
            x = layer_batched(c, w, x, pos, rid, cache, ("layer", p), m.inv_freq)
    else:
        x = layer_batched(c, W["first"], x, pos, rid, cache, "first", m.inv_freq)
        act = torch.arange(N)
        for r in range(c.num_recursion):
            logit = m.router_logits(r, x[act])[:, 0]
            g = m.expert_gate(logit)
            if r > 0:
                keep = m.expert_continue(logit)
                act, g = act[keep], g[keep]
                if act.numel() == 0:
                    break
            y = x[act]
            for l, w in enumerate(m.block_layers(r)):
                y = layer_batched(c, w, y, pos[act], rid[act], cache, ("rec", r, l), m.inv_freq)
            x = x.index_add(0, act, g[:, None] * y)
            dep[act] += 1
        x = layer_batched(c, W["last"], x, pos, rid, cache, "last", m.inv_freq)
    cache.length += n
    return m.head(x.view(B, n, -1)[:, -1]), dep.view(B, n)


@torch.no_grad()
def generate_batched(m, prompts, new, layers=None):
    """Greedy: one prefill call, then new-1 decode calls. New ids [B, new] and the depths of the
    tokens fed by the decode calls [B, new-1]."""
    cache = R.MoRCache(m.cfg, prompts.shape[0])
    logits, _ = step_batched(m, prompts, cache, layers)
    out, deps = [logits.argmax(-1)], []
    for _ in range(new - 1):
        logits, dep = step_batched(m, out[-1][:, None], cache, layers)
        out.append(logits.argmax(-1))
        deps.append(dep)
    return torch.stack(out, 1), torch.cat(deps, 1)


def check():
    """The batched decode is mor_ref.forward_decode (logits and depths), on a small model."""
    cfg = R.MoRConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=8,
                      num_attention_heads=4, num_key_value_heads=2, num_recursion=3, sharing="middle_cycle",
                      type="expert", router_func="sigmoid")
    m = R.MoRModel(cfg).init_weights(5, router_std=1.0)
    ids = torch.randint(0, 64, (5, 6), generator=torch.Generator().manual_seed(2))
    ref_cache, cache = R.MoRCache(cfg, 5), R.MoRCache(cfg, 5)
    seen = set()
    with torch.no_grad():
        for chunk in (ids, ids[:, :1], ids[:, 1:2], ids[:, 2:3]):
            ref, info = m.forward_decode(chunk, ref_cache)
            got, dep = step_batched(m, chunk, cache)
            assert torch.allclose(got, ref[:, -1], atol=1e-4, rtol=1e-4), (got - ref[:, -1]).abs().max()
            assert dep.tolist() == info["depth"], (dep.tolist(), info["depth"])
            seen |= {d for row in info["depth"] for d in row}
        # the plain stack: forward_recursive over the unrolled layers, one prefill call
        got, _ = step_batched(m, ids, R.MoRCache(cfg, 5), layers=m.unrolled_layers())
        assert torch.allclose(got, m.forward_recursive(ids)[:, -1], atol=1e-4, rtol=1e-4)
    assert len(seen) > 1, f"every token ran the same depth {seen}: the check exercises no routing"
    print(f"check ok: batched decode == mor_ref.forward_decode (depths seen {sorted(seen)}), "
          "plain stack == forward_recursive")


def muninn(build, flt, repeats):
    """Best-of-`repeats` cpu_time (s) of one bench_host_mor benchmark at one thread, its tokens
    per repetition and its mean_depth counter."""
    best = best_repetition(build, "bench_host_mor", f"^{flt}(/|$)", 1, repeats)
    # tokens/s is a rate over real time per iteration: tokens per iteration = rate * real_time
    tokens = best["tokens/s"] * seconds(best, "real_time")
    return seconds(best), tokens, best.get("mean_depth")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", help="also time Muninn's bench_host_mor from this build folder")
    ap.add_argument("--repeats", type=int, default=2, help="PyTorch timed runs (after one warm-up)")
    ap.add_argument("--muninn-repeats", type=int, default=3)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.check:
        return check()
    m = R.MoRModel(smollm_mor_config()).init_weights(3)
    g = torch.Generator().manual_seed(11)
    # 32 distinct layers for the vanilla model (the MoR model's first and last layer plus 30 fresh)
    shapes = m._layer_shapes()
    vanilla = [m.weights["first"]] + [{k: R._rand(s, g, 1.0 if k in R.NORMS else 0.0, 0.1 if k in R.NORMS else 0.2)
                                       for k, s in shapes.items()} for _ in range(BLOCK * REC)] + [m.weights["last"]]
    prompts = torch.randint(0, 49152, (ROWS, PROMPT), generator=g)
    rows = []
    for name, bench, layers in (("vanilla 32 layers, sequence-wise", "BM_VanillaSequenceWise", vanilla),
                                ("MoR sequence-wise", "BM_MorSequenceWise", None),
                                ("MoR depth-wise (Muninn) vs MoR sequence-wise (PyTorch)", "BM_MorDepthWise", None)):
        ours = muninn(a.build, bench, a.muninn_repeats) if a.build else None
        if bench == "BM_MorDepthWise" and rows:
            pt, tokens, depth = rows[-1][2], rows[-1][3], rows[-1][4]
        else:
            new, deps = generate_batched(m, prompts, NEW, layers)  # warm-up, untimed
            pt = float("inf")
            for _ in range(a.repeats):
                t0 = time.process_time()
                new, deps = generate_batched(m, prompts, NEW, layers)
                pt = min(pt, time.process_time() - t0)
            tokens = new.numel()
            depth = None if layers is not None else deps.float().mean().item()
        rows.append((name, bench, pt, tokens, depth, ours))
        print(f"# {name}: pytorch {pt:.3f} s" + (f", muninn {ours[0]:.3f} s" if ours else ""), file=sys.stderr,
              flush=True)
    print(f"torch {torch.__version__}, 1 thread, CPU time (process_time / cpu_time), "
          f"PyTorch best of {a.repeats}, Muninn best of {a.muninn_repeats}\n")
    print("| work | PyTorch s | Muninn s | PyTorch / Muninn | tokens (PT / Mu) | mean depth (PT / Mu) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, bench, pt, tokens, depth, ours in rows:
        mu = f"{ours[0]:.3f}" if ours else "-"
        ratio = f"{pt / ours[0]:.2f}" if ours else "-"
        tok = f"{tokens} / {round(ours[1]) if ours else '-'}"
        dp = "-" if depth is None else f"{depth:.2f} / " + (f"{ours[2]:.2f}" if ours and ours[2] else "-")
        print(f"| {name} | {pt:.3f} | {mu} | {ratio} | {tok} | {dp} |")


if __name__ == "__main__":
    main()
