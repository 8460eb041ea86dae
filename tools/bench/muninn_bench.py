"""Runs one of Muninn's Google Benchmark binaries for a comparison script and reads its JSON
(tools/bench/*_pytorch.py share it, so that each side's best-of is taken the same way)."""
import json
import os
import subprocess

UNIT = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}  # Google Benchmark time_unit -> seconds
CLOCK_KEY = {"cpu": "cpu_time", "wall": "real_time"}    # a script's --clock -> the benchmark's field


def best_repetition(build, binary, flt, threads, repeats, key="cpu_time"):
    """The repetition with the least `key` (cpu_time or real_time) among `repeats` repetitions of
    the benchmark of BUILD/benchmarks/BINARY matching `flt`, at `threads` threads (MUNINN_NUM_THREADS
    and OMP_NUM_THREADS): Google Benchmark's JSON row, times in UNIT[row["time_unit"]] seconds."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MUNINN_NUM_THREADS=str(threads))
    out = subprocess.run([os.path.join(build, "benchmarks", binary), f"--benchmark_filter={flt}",
                          f"--benchmark_repetitions={repeats}", "--benchmark_format=json"],
                         env=env, check=True, capture_output=True, text=True)
    runs = [b for b in json.loads(out.stdout)["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    return min(runs, key=lambda b: b[key])


def seconds(row, key="cpu_time"):
    """A benchmark row's `key` time in seconds."""
    return row[key] * UNIT[row["time_unit"]]


def best_seconds(build, binary, flt, threads, clock, repeats):
    """Best of `repeats` repetitions of one benchmark, in seconds of `clock` ("cpu" or "wall"): the
    same best-of as the PyTorch side of the comparison scripts."""
    key = CLOCK_KEY[clock]
    return seconds(best_repetition(build, binary, flt, threads, repeats, key), key)
