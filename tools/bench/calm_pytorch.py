#!/usr/bin/env python3
"""PyTorch CPU baseline for the two sampling-bound parts of a CALM step, on the checkpoint that
benchmarks/bench_host_calm.cpp writes (CALM-M shape, random weights):

    build/host/benchmarks/bench_host_calm --benchmark_filter=CalmHead   # writes $TMPDIR/muninn_bench_calm_m once
    python3 tools/bench/calm_pytorch.py --threads 1 [--dir /tmp/muninn_bench_calm_m] [--repeats 5] [--build build/host]

The model is tools/reference/calm_ref.py's (the energy head and the autoencoder decoder written
as plain tensor ops, fp32, eager), loaded from the same files and cast to fp32 as Muninn's host
backend computes. What is timed (see Clock below, torch.inference_mode, after one warm-up call;
best of --repeats samples, each the mean of as many calls as fill about 0.5 s):
  * head/N:   z = head(h, u) for one hidden state and N noise rows (N = 1, 200);
  * decode/N: argmax(ae.decode(z)) for N latents, i.e. N*K tokens (the [N*K, V] logits exist at
              once here; Muninn decodes in blocks).
Prints one JSON line of milliseconds per call.

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

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import calm_ref as C  # noqa: E402
from muninn_bench import best_seconds  # noqa: E402


def best_ms(fn, repeats, clock):
    # Each of the `repeats` samples averages enough calls to last ~0.5 s, as a Google Benchmark
    # repetition does (its default minimum time): a best of single 10 ms calls would pick the luckiest
    # call on a shared machine, a best of averages the luckiest half second, on both sides.
    t0 = clock()
    fn()
    inner = max(1, round(0.5 / max(clock() - t0, 1e-6)))
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        for _ in range(inner):
            fn()
        best = min(best, (clock() - t0) / inner)
    return best * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "muninn_bench_calm_m"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--clock", choices=["cpu", "wall"], help="default: cpu at one thread, else wall")
    ap.add_argument("--build", help="also time Muninn's bench_host_calm from this build folder")
    a = ap.parse_args()
    a.clock = a.clock or ("cpu" if a.threads == 1 else "wall")
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    torch.set_num_threads(a.threads)
    m = C.CALM.load(a.dir, ae_dir=os.path.join(a.dir, "ae"))
    m.w = {k: v.float() for k, v in m.w.items()}
    m.ae.w = {k: v.float() for k, v in m.ae.w.items()}
    d, nz, l = m.cfg.hidden_size, m.cfg.noise_size, m.cfg.latent_size
    out = {"threads": a.threads, "clock": a.clock, "torch": torch.__version__}
    with torch.inference_mode():
        h = torch.full((d,), 0.5)
        for n in (1, 200):
            u = torch.rand(n, nz) - 0.5
            z = torch.full((n, l), 0.25)
            for key, bench, fn in (("head", "BM_CalmHead", lambda: m.head(h, u)),
                                   ("decode", "BM_CalmDecode", lambda: m.ae.decode(z).argmax(-1))):
                if a.build:
                    ours = best_seconds(a.build, "bench_host_calm", f"^{bench}/{n}/", a.threads, a.clock,
                                          a.repeats) * 1e3
                    out[f"{key}_{n}_muninn_ms"] = ours
                out[f"{key}_{n}_ms"] = best_ms(fn, a.repeats, clock)
                if a.build:
                    out[f"{key}_{n}_ratio"] = round(out[f"{key}_{n}_ms"] / ours, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
