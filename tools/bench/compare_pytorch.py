#!/usr/bin/env python3
"""Runs Muninn's host benchmarks and the same work in PyTorch (CPU) in one go, and prints a
markdown table with both timings and their ratio.

    python3 tools/bench/compare_pytorch.py --build build/release [--threads 1]

Work compared:
  * gemm_nt shapes of bench_host_ops (Y = X W^T, fp32) — torch.nn.functional.linear;
  * the small Huginn of bench_host_model (h 512, layers (2,4,2), vocab 8192, r 8): prefill of
    128 tokens and decode of one token with a 512-token cache — tools/reference/huginn_ref.py.
Both sides use the same thread count (torch.set_num_threads / OMP_NUM_THREADS).

Clock: with one thread both sides are timed in CPU time (Google Benchmark's cpu_time for Muninn,
time.process_time for PyTorch), so time spent descheduled on a shared machine counts on neither
side; with more threads both are wall time (real_time, time.perf_counter), and a loaded machine
moves the figures. --clock overrides the choice.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import huginn_ref as H  # noqa: E402
from muninn_bench import UNIT  # noqa: E402




def run_bench(binary, flt, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([binary, f"--benchmark_filter={flt}", "--benchmark_format=json",
                          "--benchmark_min_time=0.3"], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["benchmarks"]


CLOCK = {"cpu": time.process_time, "wall": time.perf_counter}
KEY = {"cpu": "cpu_time", "wall": "real_time"}  # the matching Google Benchmark field


def best_time(fn, clock, repeat=5, inner=3):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        for _ in range(inner):
            fn()
        best = min(best, (clock() - t0) / inner)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=["cpu", "wall"], help="default: cpu at one thread, else wall")
    a = ap.parse_args()
    a.clock = a.clock or ("cpu" if a.threads == 1 else "wall")
    clock, key = CLOCK[a.clock], KEY[a.clock]
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    rows = []

    ops = os.path.join(a.build, "benchmarks", "bench_host_ops")
    suffix = f"threads:{a.threads}" + ("/real_time" if a.threads > 1 else "")
    for b in run_bench(ops, f"BM_gemm_nt/.*/{suffix}$", a.threads):
        name = b["name"]
        parts = dict(p.split(":") for p in name.split("/")[1:4])
        M, N, K = int(parts["M"]), int(parts["N"]), int(parts["K"])
        ours = b[key] * UNIT[b["time_unit"]]
        x, w = torch.randn(M, K), torch.randn(N, K)
        theirs = best_time(lambda: torch.nn.functional.linear(x, w), clock)
        rows.append((f"gemm {M}x{N}x{K}", ours, theirs, 2.0 * M * N * K))

    cfg = H.HuginnConfig(n_embd=512, num_attention_heads=8, intermediate_size=1536, vocab_size=8192,
                         padded_vocab_size=8192, n_layers_in_prelude=2, n_layers_in_recurrent_block=4,
                         n_layers_in_coda=2, mean_recurrence=8, block_size=1024)
    model = H.Huginn(cfg).eval()
    model.init_weights(1)
    mb = os.path.join(a.build, "benchmarks", "bench_host_model")
    res = {b["name"]: b for b in run_bench(mb, "BM_Small(Prefill|Decode)", a.threads)}
    with torch.no_grad():
        ids = torch.randint(0, 8192, (1, 128))
        t_prefill = best_time(lambda: model(ids, 8), clock, repeat=3, inner=1)
        cache = H.HuginnCache()
        model(torch.full((1, 512), 3), 8, cache=cache)
        def decode():
            model(torch.tensor([[5]]), 8, cache=cache)
            cache.clear_last_k_entries(1)
        t_decode = best_time(decode, clock, repeat=5, inner=3)
    for name, theirs, label in (("BM_SmallPrefill/128/8", t_prefill, "small Huginn prefill 128 tok, r=8"),
                                ("BM_SmallDecode/8", t_decode, "small Huginn decode 1 tok, 512 cached, r=8")):
        b = res.get(name)
        if b:
            rows.append((label, b[key] * UNIT[b["time_unit"]], theirs, None))

    print(f"threads: {a.threads}; clock: {a.clock} time; torch {torch.__version__}")
    print("| work | Muninn | PyTorch | PyTorch / Muninn | Muninn GFLOP/s |")
    print("|---|---|---|---|---|")
    for name, ours, theirs, flops in rows:
        gf = f"{flops / ours * 1e-9:.1f}" if flops else "–"
        print(f"| {name} | {ours * 1e3:.3f} ms | {theirs * 1e3:.3f} ms | {theirs / ours:.2f}× | {gf} |")


if __name__ == "__main__":
    main()
