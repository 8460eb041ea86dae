#!/usr/bin/env python3
"""The Python module's cost per generated token: Model.generate against the same call made from
C++ (benchmarks/bench_host_frontend.cpp) on the SmolLM-135M-shaped random Llama, in one run.

    python3 tools/bench/compare_python.py --build build/host [--rounds 3] [--threads 2]

Needs the module installed in the Python that runs it (tools/python_test.sh leaves one in
build/pyvenv). Both sides run generate(prompt of 128 tokens, max_new_tokens=N, greedy,
ignore_eos) on the same folder (written by the C++ benchmark at first use) with N = 1 and N = 65;
(t65 - t1) / 64 is the time of one decode step. Python runs it plain and with stream=True
(iterating the tokens). Then the same on the tiny Llama fixture (tests/data/llama/tiny_text,
8-token prompt, 200 calls a side per round), where a token costs tens of microseconds and the
binding's own cost per token shows. Rounds alternate C++ and Python; each figure is the fastest
call of all rounds (the least disturbed by other load). Prints a markdown table.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def cpp_times(bench, env, name, min_time):
    """Seconds of the fastest call of `name`/1 and of `name`/65 (the counter fastest_s)."""
    out = subprocess.run([bench, f"--benchmark_filter=^{name}/", "--benchmark_format=json",
                          f"--benchmark_min_time={min_time}"], env=env, check=True, capture_output=True, text=True)
    t = {int(b["name"].split("/")[1]): b["fastest_s"] for b in json.loads(out.stdout)["benchmarks"]}
    return t[1], t[65]


def python_times(model, prompt, stream, calls=1):
    """Seconds per call for 1 and 65 new tokens: the fastest of `calls` calls."""
    out = []
    for n in (1, 65):
        best = float("inf")
        for _ in range(calls):
            t0 = time.perf_counter()
            if stream:
                made = len(list(model.generate(prompt, max_new_tokens=n, ignore_eos=True, stream=True)))
            else:
                made = len(model.generate(prompt, max_new_tokens=n, ignore_eos=True).ids)
            best = min(best, time.perf_counter() - t0)
            assert made == n
        out.append(best)
    return tuple(out)


CHILD = """
import json, sys, time
import muninn
sys.path.insert(0, sys.argv[3])
from compare_python import python_times
m = muninn.load(sys.argv[1])
prompt = [(i * 7919 + 13) % m.vocab_size for i in range(128)]
print(json.dumps(python_times(m, prompt, sys.argv[2] == "stream")))
"""


def fresh_python_times(folder, stream, env):
    """python_times in a new process that loads the model first, as the C++ benchmark does."""
    out = subprocess.run([sys.executable, "-c", CHILD, folder, "stream" if stream else "plain",
                          os.path.dirname(os.path.abspath(__file__))], env=env, check=True, capture_output=True,
                         text=True)
    return tuple(json.loads(out.stdout))


def table_rows(threads, work, cpp, runs, unit, scale):
    """Rows of the table: C++, then each Python way, with the cost per token against C++."""
    c1, c65 = min(c[0] for c in cpp), min(c[1] for c in cpp)
    c_step = (c65 - c1) / 64
    rows = [f"| {threads} | {work} | C++ (bench_host_frontend) | {c1 * scale:.3f} {unit} | {c65 * scale:.3f} {unit} | "
            f"{c_step * scale:.4f} {unit} | | |"]
    for name, r in runs:
        p1, p65 = min(p[0] for p in r), min(p[1] for p in r)
        p_step = (p65 - p1) / 64
        rows.append(f"| {threads} | {work} | {name} | {p1 * scale:.3f} {unit} | {p65 * scale:.3f} {unit} | "
                    f"{p_step * scale:.4f} {unit} | {(p_step - c_step) * 1e6:+.1f} us | "
                    f"{100 * (p_step / c_step - 1):+.2f} % |")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build/host", help="CMake build folder holding benchmarks/bench_host_frontend")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fresh", action="store_true",
                    help="time the SmolLM-shaped calls from Python in a new process each round, as the C++ side runs")
    args = ap.parse_args()
    os.environ["MUNINN_NUM_THREADS"] = str(args.threads)  # read by the module's thread pool at first use
    import muninn

    env = dict(os.environ)
    bench = os.path.join(args.build, "benchmarks", "bench_host_frontend")
    folder = env.setdefault("MUNINN_BENCH_SMOLLM_DIR", "/tmp/muninn_bench_smollm135m")
    cpp_times(bench, env, "BM_FrontendGenerate", "0.01")  # writes the folder on first use, warms the page cache
    model = muninn.load(folder)
    tiny = muninn.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "llama",
                                    "tiny_text"))
    prompt = [(i * 7919 + 13) % 49152 for i in range(128)]
    tiny_prompt = [(i * 7919 + 13) % tiny.vocab_size for i in range(8)]
    python_times(model, prompt, False)  # warm-up
    cpp, py, st, tcpp, tpy, tst = [], [], [], [], [], []
    for _ in range(args.rounds):
        cpp.append(cpp_times(bench, env, "BM_FrontendGenerate", "0.01"))
        py.append(fresh_python_times(folder, False, env) if args.fresh else python_times(model, prompt, False))
        st.append(fresh_python_times(folder, True, env) if args.fresh else python_times(model, prompt, True))
        tcpp.append(cpp_times(bench, env, "BM_FrontendGenerateTiny", "0.3"))
        tpy.append(python_times(tiny, tiny_prompt, False, calls=200))
        tst.append(python_times(tiny, tiny_prompt, True, calls=200))
    print("| threads | work | caller | 1 new token | 65 new tokens | decode step | per token vs C++ | overhead |")
    print("|---|---|---|---|---|---|---|---|")
    for row in table_rows(args.threads, "SmolLM-135M shape, prompt 128", cpp,
                          (("Python generate", py), ("Python stream=True", st)), "s", 1.0):
        print(row)
    for row in table_rows(args.threads, "tiny_text, prompt 8", tcpp,
                          (("Python generate", tpy), ("Python stream=True", tst)), "ms", 1e3):
        print(row)
    print(f"\nrounds {args.rounds}; muninn {muninn.__version__}, Python {sys.version.split()[0]}", file=sys.stderr)


if __name__ == "__main__":
    main()
