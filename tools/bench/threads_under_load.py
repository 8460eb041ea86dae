#!/usr/bin/env python3
"""Muninn at one thread and at its default thread count, on an idle machine and next to busy processes.

    python3 tools/bench/threads_under_load.py --build build/host [--busy 0 1] [--rounds 3] [--only llama demo]

For every workload (the host benchmarks' models and the CLI demos) and every load level (`--busy N`:
N child processes that each spin on a core for the whole run), runs the workload with
MUNINN_NUM_THREADS=1 and with the default thread count (MUNINN_NUM_THREADS and OMP_NUM_THREADS
unset: the cores this process may use), alternating, `--rounds` times, and prints the median wall
time of each and the ratio default / one. Benchmarks report Google Benchmark's real time per
iteration; CLI demos the process's wall time and CPU time. `uptime` is printed before and after:
the load of *other* work on the machine changes what "idle" means, so say what it was.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def workloads(build):
    b = os.path.join(build, "benchmarks")
    cli = os.path.join(build, "bin", "muninn")
    models = os.path.join(ROOT, "examples", "models")
    trm = os.path.join(models, "trm_sudoku")
    return [
        ("llama", "bench", [os.path.join(b, "bench_host_llama")], "."),
        ("huginn", "bench", [os.path.join(b, "bench_host_model")], "BM_Small(Prefill|Decode/8)"),
        ("mor", "bench", [os.path.join(b, "bench_host_mor")], "."),
        ("calm", "bench", [os.path.join(b, "bench_host_calm")], "BM_(CalmStep|LlamaDecode)"),
        ("trm", "bench", [os.path.join(b, "bench_host_trm")], "."),
        ("batch", "bench", [os.path.join(b, "bench_host_threads")], "BM_LlamaBatch/threads:0/busy:0$"),
        ("demo", "cli", [cli, "demo", "--problems", "50"], None),
        ("mor_demo", "cli", [cli, "demo", "--model", os.path.join(models, "mor_demo")], None),
        ("trm_demo", "cli", [cli, "demo", "--model", trm], None),
        ("solve", "cli", [cli, "solve", "--model", os.path.join(trm, "step_2600"), "--data", os.path.join(trm, "data"),
                          "--limit", "20"], None),
    ]


def env_for(threads):
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    env.pop("MUNINN_NUM_THREADS", None)
    if threads != "default":
        env["MUNINN_NUM_THREADS"] = threads
    return env


def run_bench(argv, flt, threads, min_time):
    out = subprocess.run(argv + [f"--benchmark_filter={flt}", "--benchmark_format=json",
                                 f"--benchmark_min_time={min_time}"],
                         env=env_for(threads), capture_output=True, text=True, check=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        res[b["name"]] = (b["real_time"] * unit, None)
    return res


def run_cli(argv, threads):
    t0 = time.perf_counter()
    before = os.times()
    subprocess.run(argv, env=env_for(threads), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"": (time.perf_counter() - t0, cpu)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/host")
    ap.add_argument("--busy", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", default="0.5")
    ap.add_argument("--only", nargs="*", help="workload names (default: all)")
    a = ap.parse_args()
    print("uptime before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print("| workload | busy processes | 1 thread (s) | default threads (s) | default / 1 | CPU s (1 / default) |")
    print("|---|---|---|---|---|---|")
    for busy in a.busy:
        procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            time.sleep(0.2)
            for name, kind, argv, flt in workloads(a.build):
                if a.only and name not in a.only:
                    continue
                times = {"1": {}, "default": {}}
                for _ in range(a.rounds):
                    for t in ("1", "default"):
                        r = run_bench(argv, flt, t, a.min_time) if kind == "bench" else run_cli(argv, t)
                        for k, v in r.items():
                            times[t].setdefault(k, []).append(v)
                for k in times["1"]:
                    one = statistics.median(v[0] for v in times["1"][k])
                    dflt = statistics.median(v[0] for v in times["default"][k])
                    cpu = ""
                    if times["1"][k][0][1] is not None:
                        cpu = (f"{statistics.median(v[1] for v in times['1'][k]):.2f} / "
                               f"{statistics.median(v[1] for v in times['default'][k]):.2f}")
                    label = f"{name} {k}".strip()
                    print(f"| {label} | {busy} | {one:.4g} | {dflt:.4g} | {dflt / one:.2f} | {cpu} |", flush=True)
        finally:
            for p in procs:
                p.kill()
                p.wait()
    print("uptime after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
