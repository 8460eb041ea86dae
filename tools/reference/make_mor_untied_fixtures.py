#!/usr/bin/env python3
"""Writes the Mixture-of-Recursions fixtures with untied recursion copies in tests/data/mor_untied/
with tools/reference/mor_ref.py.

    python3 tools/reference/make_mor_untied_fixtures.py --out tests/data/mor_untied   # ~20 s on CPU

A MoR checkpoint stores the shared block once per recursion. The reference's expert-choice
transform creates a fresh attention module for every recursion, so a model trained with it holds
a different attention at each recursion and runs each one; under the sequence strategies the
recursions' blocks are different layers by construction. These cases save such models (every
routing kind, every sharing strategy, attention or other parts untied, a recursion equal to
another but stored apart, recursive KV sharing) and the logits our reference computes from those
same untied weights. Each case also asserts that running recursion 0's copy everywhere gives other
logits, so a loader that ties the copies fails the C++ tests.

Same files as tests/data/mor (make_mor_fixtures.py writes them and runs the same checks, among
them an independent float64 NumPy forward read from the files); tests/data/mor_untied/README.md
lists the cases.
"""
import argparse
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_mor_fixtures as F  # noqa: E402
import mor_ref as M  # noqa: E402
from fixture_json import dump  # noqa: E402

# smaller than tests/data/mor so that a case with several attention copies stays under 100 KB
LLAMA = dict(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1,
             rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=64)
ATTN = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")
# tokens each greedy continuation of 6 holds: these small random models often settle on one
# token; two still make the cached decode see its own output change
MIN_DISTINCT = 2
# tying the copies must move some logit by at least this much (100x the logit tolerance)
MIN_TIED_GAP = 1e-2


def untie(keys=ATTN, recursions=None, same_as=None):
    return lambda model, seed: model.untie(seed + 99, keys=keys, recursions=recursions, same_as=same_as)


def nothing(model, seed):
    return None


EXPERT = dict(type="expert", router_type="linear", router_func="sigmoid", alpha=0.1)
TOKEN = dict(type="token", router_type="linear", router_func="softmax", alpha=1.0)

CASES = [
    dict(name="expert_cycle_attn", seed=11, prepare=untie(),
         covers="expert-choice, cycle, Nr 3, L 6 (B 2): every recursion holds its own attention "
                "(q, k, v, o), MLP and norms tied (as the reference's expert transform saves them); "
                "untied lm_head (with no unshared layer a tied head mostly echoes the input token)",
         cfg=dict(vocab_size=32, num_hidden_layers=6, num_recursion=3, sharing="cycle",
                  tie_word_embeddings=False, **EXPERT)),
    dict(name="expert_sequence_attn", seed=12, prepare=untie(),
         covers="expert-choice, sequence, Nr 3, L 6 (B 2): recursion r's block is unrolled layers "
                "2r, 2r+1, whose MLP and norms follow the sequence map (r0: w0 w0, r1: w0 w1, "
                "r2: w1 w1), and every recursion holds its own attention",
         cfg=dict(vocab_size=32, num_hidden_layers=6, num_recursion=3, sharing="sequence",
                  tie_word_embeddings=False, **EXPERT)),
    dict(name="expert_mcyc_attn", seed=13, prepare=untie(),
         covers="the paper's final recipe (expert-choice, middle_cycle, Nr 3, L 8 = 1+2*3+1, "
                "linear router, sigmoid alpha 0.1) saved with a separate attention per recursion",
         cfg=dict(vocab_size=32, num_hidden_layers=8, num_recursion=3, sharing="middle_cycle", **EXPERT)),
    dict(name="expert_mseq_attn", seed=14, prepare=untie(),
         covers="expert-choice, middle_sequence, Nr 3, L 8: first and last layer apart, the block "
                "in sequence order (r0: w1 w1, r1: w1 w2, r2: w2 w2), attention per recursion",
         cfg=dict(vocab_size=32, num_hidden_layers=8, num_recursion=3, sharing="middle_sequence", **EXPERT)),
    dict(name="expert_mcyc_attn_kvshare", seed=15, prepare=untie(),
         covers="expert-choice middle_cycle Nr 3 with recursive KV sharing and attention per "
                "recursion: recursions >= 1 use their own q and o over recursion 0's keys and values "
                "(their own k, v are stored but unused), capacity [1.0, 0.5, 0.25]",
         cfg=dict(vocab_size=32, num_hidden_layers=8, num_recursion=3, sharing="middle_cycle",
                  capacity=[1.0, 0.5, 0.25], kv_sharing=True, **EXPERT)),
    dict(name="token_cycle_attn", seed=21, prepare=untie(),
         covers="token-choice, cycle, Nr 3, L 6, softmax alpha 1.0: every recursion holds its own "
                "attention",
         cfg=dict(vocab_size=32, num_hidden_layers=6, num_recursion=3, sharing="cycle", **TOKEN)),
    dict(name="token_sequence_tied", seed=22, prepare=nothing,
         covers="token-choice, sequence, Nr 3, L 6: the blocks differ per recursion only as the "
                "sequence map makes them (r0: w0 w0, r1: w0 w1, r2: w1 w1), every tensor of a "
                "shared layer one storage",
         cfg=dict(vocab_size=32, num_hidden_layers=6, num_recursion=3, sharing="sequence", **TOKEN)),
    dict(name="token_mcyc_attn_r2_as_r1", seed=23, prepare=untie(recursions=[1, 2], same_as={2: 1}),
         covers="token-choice, middle_cycle, Nr 3: recursions 1 and 2 hold an attention other than "
                "recursion 0's, recursion 2's equal to recursion 1's but stored apart (separate "
                "records with the same bytes)",
         cfg=dict(vocab_size=32, num_hidden_layers=8, num_recursion=3, sharing="middle_cycle", **TOKEN)),
    dict(name="token_mseq_mlp_norm", seed=24,
         prepare=untie(keys=("input_layernorm", "mlp.gate_proj"), recursions=[0, 2]),
         covers="token-choice, middle_sequence, Nr 3, sigmoid alpha 0.5, loss-free bias: recursions "
                "0 and 2 hold their own input_layernorm and gate_proj (other parts than attention "
                "differ), attention tied",
         cfg=dict(vocab_size=32, num_hidden_layers=8, num_recursion=3, sharing="middle_sequence",
                  type="token", router_type="linear", router_func="sigmoid", alpha=0.5,
                  balancing="loss_free")),
]


def tied_gap(model, d):
    """Largest logit change when every recursion runs recursion 0's copy (what a loader that tied
    the copies would run), over the case's scoring and causal passes."""
    t = model.tied()
    if model.cfg.type == "expert":
        return max(F.maxdiff(t.forward_scoring(d["ids"])[0], d["score_logits"]),
                   F.maxdiff(t.forward_decode(d["ids"])[0], d["dec_logits"]))
    return F.maxdiff(t.forward_token(d["ids"])[0], d["score_logits"])


def distinct_storages(model):
    """Storage records per stored tensor group, to describe the file."""
    sd = model.state_dict()
    return len({id(t) for t in sd.values()}), len(sd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "tests", "data", "mor_untied"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)
    for case in CASES:
        for attempt in range(500):
            got = F.try_case(case, attempt, llama=LLAMA, prepare=case["prepare"], min_distinct=MIN_DISTINCT)
            if got is None:
                continue
            model, d = got
            if tied_gap(model, d) < MIN_TIED_GAP:
                continue
            # the untied copies must really be there (sequence strategies differ anyway)
            rec = model.weights.get("block_rec")
            assert rec is not None
            folder = os.path.join(args.out, case["name"])
            shutil.rmtree(folder, ignore_errors=True)
            model.save(folder)
            try:
                n_records, n_keys = F.check_case(case, model, d, folder)
            except AssertionError as e:  # fp32 round-off of this attempt beyond a self-check's bound
                print(f"{case['name']}: attempt {attempt} failed a check ({e}); next")
                continue
            break
        else:
            raise SystemExit(f"{case['name']}: no attempt met the margins")
        e = F.expected_json(case, model, d, n_records, n_keys)
        e["generator"] = "tools/reference/make_mor_untied_fixtures.py (mor_ref.py), seed %d" % d["seed"]
        e["tied_logit_gap"] = F.r8(tied_gap(model, d))
        with open(os.path.join(folder, "expected.json"), "w") as f:
            f.write(dump(e) + "\n")
        size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
        print(f"{case['name']}: attempt {attempt}, {n_keys} keys / {n_records} storages, "
              f"{size // 1024} KB, tied gap {e['tied_logit_gap']:.3f}, new {d['new'].tolist()}")


if __name__ == "__main__":
    main()
