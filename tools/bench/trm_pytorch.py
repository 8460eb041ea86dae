#!/usr/bin/env python3
"""PyTorch CPU speed baseline for TRM at Sudoku size, to compare with benchmarks/bench_host_trm.

    python3 tools/bench/trm_pytorch.py --threads 2 [--batch 1 16] [--repeats 3] [--build build/host]

Model: tools/reference/trm_ref.py's TRM (our reference, the reference code bases' maths) at the
paper's Sudoku shape: seq_len 81 + 16 prefix positions = 97, hidden 512, 8 heads, expansion 4,
2 layers, H_cycles 3, L_cycles 6, fp32, eager, random weights (the reference init under a fixed
seed; speed does not depend on the values); `attention` (RoPE) and `mlp_t` (no positions).

What is timed (see Clock below, under torch.inference_mode, after one untimed warm-up call):
`model.solve(batch, max_steps=1)`, i.e. the initial state, one supervision step (21 net calls)
and the heads, for B puzzles — the same work as BM_TrmStep/<variant>/<B>. puzzles_per_s = B / best
time over --repeats. torch.set_num_threads(--threads): give the benchmark's thread count
(OMP_NUM_THREADS). Prints one JSON line per (variant, batch).

Clock (--clock): with one thread the default is CPU time (time.process_time), which time spent
descheduled on a shared machine does not inflate; with more threads, wall time (time.perf_counter).
--build DIR also runs Muninn's benchmark for each row in the same run, just before PyTorch's, on
the same clock (Google Benchmark's cpu_time or real_time, best of --repeats repetitions), and
adds its time and the ratio PyTorch / Muninn (above 1: Muninn is faster) to the line.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import trm_ref as R  # noqa: E402
from muninn_bench import best_seconds  # noqa: E402


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
    ap.add_argument("--clock", choices=["cpu", "wall"], help="default: cpu at one thread, else wall")
    ap.add_argument("--build", help="also time Muninn's bench_host_trm from this build folder")
    a = ap.parse_args()
    a.clock = a.clock or ("cpu" if a.threads == 1 else "wall")
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    torch.set_num_threads(a.threads)
    for mlp_t in (False, True):
        m = build(mlp_t)
        for B in a.batch:
            g = torch.Generator().manual_seed(1)
            batch = dict(inputs=torch.randint(1, 11, (B, 81), generator=g, dtype=torch.int32),
                         puzzle_identifiers=torch.zeros(B, dtype=torch.int32))
            extra = {}
            if a.build:
                flt = f"^BM_TrmStep/{int(mlp_t)}/{B}/"
                extra["muninn_seconds"] = round(best_seconds(a.build, "bench_host_trm", flt, a.threads, a.clock,
                                                               a.repeats), 4)
            with torch.inference_mode():
                m.solve(batch, max_steps=1)
                best = float("inf")
                for _ in range(a.repeats):
                    t0 = clock()
                    m.solve(batch, max_steps=1)
                    best = min(best, clock() - t0)
            print(json.dumps(dict(variant="mlp_t" if mlp_t else "attention", batch=B, threads=a.threads,
                                  clock=a.clock, seconds=round(best, 4), puzzles_per_s=round(B / best, 3),
                                  **extra, **({"ratio": round(best / extra["muninn_seconds"], 3)} if extra else {}),
                                  torch=torch.__version__)), flush=True)


if __name__ == "__main__":
    main()
