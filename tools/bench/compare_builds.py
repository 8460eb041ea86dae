#!/usr/bin/env python3
"""Runs one Google Benchmark binary from two builds, alternating, and prints the best time of each
benchmark from each build and their ratio (a markdown table). For "is the new engine as fast as
the old one": build the old commit beside the new one and compare.

    git worktree add /tmp/old <commit> && cmake -S /tmp/old -B /tmp/old/build -DCMAKE_BUILD_TYPE=Release \\
        -DMUNINN_ENABLE_CUDA=OFF && cmake --build /tmp/old/build --target bench_host_model bench_host_runtime
    python3 tools/bench/compare_builds.py --old /tmp/old/build --new build/host --bench bench_host_model --rounds 5

Threads: `--threads`, else OMP_NUM_THREADS, else 1 (set as OMP_NUM_THREADS and MUNINN_NUM_THREADS). Best of `--rounds` alternating runs, so a burst of noise on
a shared machine hits both builds alike.
"""
import argparse
import collections
import json
import os
import subprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, help="build directory of the baseline")
    ap.add_argument("--new", required=True, help="build directory under test")
    ap.add_argument("--bench", required=True, help="benchmark binary name under benchmarks/")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--filter", default="", help="--benchmark_filter for both builds (e.g. the benchmarks both have)")
    ap.add_argument("--threads", default=os.environ.get("OMP_NUM_THREADS", "1"))
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=args.threads, MUNINN_NUM_THREADS=args.threads)
    best = collections.defaultdict(dict)
    for _ in range(args.rounds):
        for label, build in (("old", args.old), ("new", args.new)):
            cmd = [os.path.join(build, "benchmarks", args.bench), "--benchmark_min_time=0.3", "--benchmark_format=json"]
            if args.filter:
                cmd.append("--benchmark_filter=" + args.filter)
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            for b in json.loads(out.stdout)["benchmarks"]:
                t = b["real_time"]
                best[b["name"]][label] = min(best[b["name"]].get(label, t), t)
    unit = "(times in each benchmark's own unit)"
    print(f"| benchmark | old | new | new / old |  {unit}")
    print("|---|---|---|---|")
    for name, v in best.items():
        print(f"| {name} | {v['old']:.3f} | {v['new']:.3f} | {v['new'] / v['old']:.3f} |")


if __name__ == "__main__":
    main()
