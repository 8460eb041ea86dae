#!/usr/bin/env python3
"""Runs the same muninn CLI work with two builds of the CLI, alternating, and prints each build's
best CPU time (user + sys of the process) per workload and their ratio (a markdown table). For "does
this build change (for instance link-time optimisation) slow the CLI down": CPU time, so that other
processes on a shared machine disturb it less than wall time; best of --rounds.

    python3 tools/bench/compare_cli_builds.py --old /tmp/old/bin/muninn --new build/host/bin/muninn \\
        --llama /tmp/muninn_bench_smollm135m --rounds 5

--llama: a Llama folder (the SmolLM-135M-shaped random model that bench_host_frontend writes to
/tmp/muninn_bench_smollm135m at its first run, or any other). The Huginn, MoR demo models are the
shipped ones (examples/models). One thread (MUNINN_NUM_THREADS=1, OMP_NUM_THREADS=1).
"""
import argparse
import os
import resource
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def workloads(llama):
    prompt = ",".join(str(i) for i in range(1, 129))
    gen = ["generate", "--model", llama, "--tokens", prompt]
    demo = os.path.join(ROOT, "examples", "models")
    return {
        "Llama, prefill 128 + 1 token": gen + ["--max-new-tokens", "1"],
        "Llama, + 32 decoded tokens": gen + ["--max-new-tokens", "33"],
        "the same, q8": gen + ["--quantize", "q8", "--max-new-tokens", "33"],
        "the same, bf16": gen + ["--dtype", "bf16", "--max-new-tokens", "33"],
        "Huginn demo model, 60 tokens at r = 256": ["generate", "--model", os.path.join(demo, "demo"), "--tokens",
                                                    "1,2,3", "--max-new-tokens", "60", "--steps", "256"],
        "`muninn demo --problems 50`": ["demo", "--problems", "50"],
        "`muninn demo` (MoR)": ["demo", "--model", os.path.join(demo, "mor_demo")],
    }


def cpu_seconds(cmd, env):
    """CPU time of one run of `cmd` (its process and children), which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, help="the baseline muninn executable")
    ap.add_argument("--new", required=True, help="the muninn executable under test")
    ap.add_argument("--llama", required=True, help="a Llama model folder")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1", MUNINN_NUM_THREADS="1")
    best = {}
    work = workloads(args.llama)
    for _ in range(args.rounds):
        for name, argv in work.items():
            for label, exe in (("old", args.old), ("new", args.new)):
                t = cpu_seconds([exe] + argv, env)
                best.setdefault(name, {})[label] = min(best.get(name, {}).get(label, t), t)
    print("| work | old (s CPU) | new (s CPU) | new / old |")
    print("|---|---|---|---|")
    for name in work:
        old, new = best[name]["old"], best[name]["new"]
        print(f"| {name} | {old:.3f} | {new:.3f} | {new / old:.3f} |")


if __name__ == "__main__":
    main()
