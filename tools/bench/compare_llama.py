#!/usr/bin/env python3
"""Runs Muninn's Llama benchmark and transformers' on the same work, at the same thread counts,
in one go, and prints a markdown table with tokens/s and the ratio Muninn / transformers.

    python3 tools/bench/compare_llama.py --build build/host [--threads 1 2]

Work (both sides, see benchmarks/bench_host_llama.cpp and tools/bench/llama_pytorch.py): a
SmolLM-135M-shaped random Llama in fp32; prefill = one call over a 128-token prompt on an empty
cache (logits of the last position); decode = 64 greedy single-token calls after it. Muninn's
figure is Google Benchmark's rate; transformers' is the best of 3 repeats. Threads: OMP_NUM_THREADS
for Muninn, torch.set_num_threads for PyTorch.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def muninn(build, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([os.path.join(build, "benchmarks", "bench_host_llama"), "--benchmark_format=json",
                          "--benchmark_min_time=1", "--benchmark_filter=BM_Llama(Prefill|Decode)$"], env=env, check=True, capture_output=True, text=True)
    rates = {b["name"].split("/")[0]: b["tok_s"] for b in json.loads(out.stdout)["benchmarks"]}
    return rates["BM_LlamaPrefill"], rates["BM_LlamaDecode"]


def transformers(threads):
    out = subprocess.run([sys.executable, os.path.join(HERE, "llama_pytorch.py"), "--threads", str(threads),
                          "--prompt", "128", "--decode", "64", "--repeats", "3"],
                         check=True, capture_output=True, text=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["prefill_tok_s"], r["decode_tok_s"], r.get("torch"), r.get("transformers")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build/host")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    print("| threads | work | Muninn tok/s | transformers tok/s | ratio |")
    print("|---|---|---|---|---|")
    versions = None
    for t in args.threads:
        mp, md = muninn(args.build, t)
        tp, td, torch_v, tf_v = transformers(t)
        versions = (torch_v, tf_v)
        print(f"| {t} | prefill 128 | {mp:.1f} | {tp:.1f} | {mp / tp:.2f}x |")
        print(f"| {t} | decode 64 | {md:.1f} | {td:.1f} | {md / td:.2f}x |")
    print(f"\ntorch {versions[0]}, transformers {versions[1]}")


if __name__ == "__main__":
    main()
