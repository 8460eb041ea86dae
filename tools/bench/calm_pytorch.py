#!/usr/bin/env python3
"""PyTorch CPU baseline for the two sampling-bound parts of a CALM step, on the checkpoint that
benchmarks/bench_host_calm.cpp writes (CALM-M shape, random weights):

    build/host/benchmarks/bench_host_calm --benchmark_filter=CalmHead   # writes $TMPDIR/muninn_bench_calm_m once
    python3 tools/bench/calm_pytorch.py --threads 1 [--dir /tmp/muninn_bench_calm_m] [--repeats 5]

The model is tools/reference/calm_ref.py's (the energy head and the autoencoder decoder written
as plain tensor ops, fp32, eager), loaded from the same files and cast to fp32 as Muninn's host
backend computes. What is timed (time.perf_counter, torch.inference_mode, best of --repeats after
one warm-up):
  * head/N:   z = head(h, u) for one hidden state and N noise rows (N = 1, 200);
  * decode/N: argmax(ae.decode(z)) for N latents, i.e. N*K tokens (the [N*K, V] logits exist at
              once here; Muninn decodes in blocks).
Prints one JSON line of milliseconds per call.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import calm_ref as C  # noqa: E402


def best_ms(fn, repeats):
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "muninn_bench_calm_m"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    m = C.CALM.load(a.dir, ae_dir=os.path.join(a.dir, "ae"))
    m.w = {k: v.float() for k, v in m.w.items()}
    m.ae.w = {k: v.float() for k, v in m.ae.w.items()}
    d, nz, l = m.cfg.hidden_size, m.cfg.noise_size, m.cfg.latent_size
    out = {"threads": a.threads, "torch": torch.__version__}
    with torch.inference_mode():
        h = torch.full((d,), 0.5)
        for n in (1, 200):
            u = torch.rand(n, nz) - 0.5
            z = torch.full((n, l), 0.25)
            out[f"head_{n}_ms"] = best_ms(lambda: m.head(h, u), a.repeats)
            out[f"decode_{n}_ms"] = best_ms(lambda: m.ae.decode(z).argmax(-1), a.repeats)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
