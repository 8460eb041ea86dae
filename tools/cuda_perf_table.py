#!/usr/bin/env python3
"""Turns a GPU run's benchmark reports into the Markdown tables of docs/performance.md.

  cuda_perf_table.py FACTS BENCH_JSON...

FACTS is the facts.txt tools/cuda_run.sh writes (nvidia-smi's query line names the card); each
BENCH_JSON is a Google Benchmark --benchmark_out file (bench_cuda_ops.json, bench_cuda_model.json,
...). The output is one section per file: the device and its limits from the report's context, a
table with the time of each benchmark and every counter it reports (GB/s and %BW against DRAM
bandwidth, TFLOP/s and %FLOP against the dense peak, tokens/s and %ceiling against the
weight-bandwidth bound of batch-1 decode), and for the model benchmarks the headline figures:
Huginn-shaped batch-1 decode at r = 32 in bf16 against its weight-bandwidth bound (goal: 90 %) and
prefill throughput. A benchmark that reported an error shows the error in place of its numbers.
"""
import json
import re
import sys

# Counters in the order the tables show them; any other counter follows in name order.
COUNTER_ORDER = ["tokens/s", "weight_GB/s", "%ceiling", "GB/s", "%BW", "TFLOP/s", "%FLOP"]
HIDDEN = {"reps"}  # bookkeeping, not a result
DECODE_GOAL = 90.0  # % of the weight-bandwidth bound, batch-1 decode at r = 32 in bf16

TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def card(facts_path):
    """The card as nvidia-smi names it (name, memory, driver, compute capability), or 'unknown'."""
    try:
        lines = open(facts_path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return "unknown"
    for i, line in enumerate(lines):
        if line.startswith("== nvidia-smi query") and i + 2 < len(lines) and "," in lines[i + 2]:
            return lines[i + 2].strip()
    for line in lines:
        if line.startswith("Model name:"):
            return "host CPU: " + line.split(":", 1)[1].strip()
    return "unknown"


def number(x):
    """Three significant digits, no exponent for ordinary magnitudes."""
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def benchmark_rows(doc):
    return [b for b in doc.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]


def counters_of(rows):
    fields = {"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
              "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit", "label",
              "error_occurred", "error_message", "aggregate_name", "aggregate_unit", "bytes_per_second",
              "items_per_second"}
    found = set()
    for b in rows:
        found.update(k for k, v in b.items() if k not in fields and k not in HIDDEN and isinstance(v, (int, float)))
    ordered = [c for c in COUNTER_ORDER if c in found]
    return ordered + sorted(found - set(ordered))


def clean_name(name):
    return re.sub(r"(/(manual_time|real_time|iterations:[0-9]+))+$", "", name)


def table(doc):
    rows = benchmark_rows(doc)
    counters = counters_of(rows)
    row = lambda cells: "| " + " | ".join(cells) + " |"
    out = [row(["benchmark", "time"] + counters), "|---|" + "---:|" * (1 + len(counters))]
    for b in rows:
        name = clean_name(b["name"])
        if b.get("error_occurred"):
            out.append(row([name, "error: " + b.get("error_message", "")] + [""] * len(counters)))
            continue
        t = f"{number(b['real_time'])} {b.get('time_unit', 'ns').replace('us', 'µs')}"
        out.append(row([name, t] + [number(b[c]) if c in b else "" for c in counters]))
    return out


def headlines(doc):
    """Decode at r = 32 against the weight-bandwidth bound, and prefill throughput."""
    out = []
    for b in benchmark_rows(doc):
        if b.get("error_occurred"):
            continue
        name = clean_name(b["name"])
        if re.match(r"decode/.*/r:32$", name) and "%ceiling" in b:
            verdict = "meets" if b["%ceiling"] >= DECODE_GOAL else "misses"
            out.append(f"- `{name}`: {number(b['tokens/s'])} tokens/s, {number(b['%ceiling'])} % of the "
                       f"weight-bandwidth bound ({verdict} the {DECODE_GOAL:.0f} % goal)")
        elif name.startswith("prefill/") and "tokens/s" in b:
            flops = f", {number(b['TFLOP/s'])} TFLOP/s" if "TFLOP/s" in b else ""
            out.append(f"- `{name}`: {number(b['tokens/s'])} tokens/s{flops}")
    return out


def section(path, device):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    ctx = doc.get("context", {})
    title = path.rsplit("/", 1)[-1].removesuffix(".json")
    lines = [f"### {title}", ""]
    limits = []
    if "peak_bandwidth_GB/s" in ctx:
        limits.append(f"DRAM {number(float(ctx['peak_bandwidth_GB/s']))} GB/s")
    for key, what in (("peak_bf16_TFLOP/s", "bf16"), ("peak_fp32_TFLOP/s", "fp32")):
        if key in ctx:
            limits.append(f"{what} {number(float(ctx[key]))} TFLOP/s")
    lines.append(f"Device: {ctx.get('cuda_device', device)}" + (f" (limits: {', '.join(limits)})" if limits else "") +
                 f"; run {ctx.get('date', '?')}, {ctx.get('num_cpus', '?')} host CPUs.")
    lines.append("")
    heads = headlines(doc)
    if heads:
        lines += heads + [""]
    lines += table(doc) + [""]
    return lines


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    device = card(argv[1])
    lines = [f"## GPU run: {device}", ""]
    for path in argv[2:]:
        lines += section(path, device)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
