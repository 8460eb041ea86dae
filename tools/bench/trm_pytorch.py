#!/usr/bin/env python3
"""PyTorch CPU speed baseline for TRM at Sudoku size, to compare with benchmarks/bench_host_trm.

    python3 tools/bench/trm_pytorch.py --threads 2 [--batch 1 16] [--repeats 3]

Model: tools/reference/trm_ref.py's TRM (our reference, the reference code bases' maths) at the
paper's Sudoku shape: seq_len 81 + 16 prefix positions = 97, hidden 512, 8 heads, expansion 4,
2 layers, H_cycles 3, L_cycles 6, fp32, eager, random weights (the reference init under a fixed
seed; speed does not depend on the values); `attention` (RoPE) and `mlp_t` (no positions).

What is timed (time.perf_counter, under torch.inference_mode, after one untimed warm-up call):
`model.solve(batch, max_steps=1)`, i.e. the initial state, one supervision step (21 net calls)
and the heads, for B puzzles — the same work as BM_TrmStep/<variant>/<B>. puzzles_per_s = B / best
time over --repeats. torch.set_num_threads(--threads): give the benchmark's thread count
(OMP_NUM_THREADS). Prints one JSON line per (variant, batch).
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import trm_ref as R  # noqa: E402


def build(mlp_t):
    cfg = R.RecursiveConfig(arch="trm", seq_len=81, vocab_size=11, num_puzzle_identifiers=1, hidden_size=512,
                            num_heads=8, expansion=4, H_cycles=3, L_cycles=6, L_layers=2,
                            pos_encodings="none" if mlp_t else "rope", forward_dtype="float32", mlp_t=mlp_t,
                            puzzle_emb_len=16)
    m = R.ACTModel(cfg).eval()
    m.inner.init_weights(torch.Generator().manual_seed(7), q_std=0.02, puzzle_std=0.02)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for mlp_t in (False, True):
        m = build(mlp_t)
        for B in a.batch:
            g = torch.Generator().manual_seed(1)
            batch = dict(inputs=torch.randint(1, 11, (B, 81), generator=g, dtype=torch.int32),
                         puzzle_identifiers=torch.zeros(B, dtype=torch.int32))
            with torch.inference_mode():
                m.solve(batch, max_steps=1)
                best = float("inf")
                for _ in range(a.repeats):
                    t0 = time.perf_counter()
                    m.solve(batch, max_steps=1)
                    best = min(best, time.perf_counter() - t0)
            print(json.dumps(dict(variant="mlp_t" if mlp_t else "attention", batch=B, threads=a.threads,
                                  seconds=round(best, 4), puzzles_per_s=round(B / best, 3),
                                  torch=torch.__version__)), flush=True)


if __name__ == "__main__":
    main()
