#!/usr/bin/env python3
"""Reads one result file of tools/cuda_run.sh and prints one line of counts for the shell.

  cuda_run_parse.py gtest FILE   ->  "<total> <passed> <failed> <skipped>\t<detail>"
  cuda_run_parse.py bench FILE   ->  "<benchmarks> <errors> <no_device>\t<detail>"

gtest FILE is GoogleTest's --gtest_output=json report; bench FILE is Google Benchmark's
--benchmark_out JSON. <detail> names the first failed or skipped tests (and the first skip reason),
or the first benchmark error. A file that is missing or not valid JSON (a binary killed before it
wrote it) is an error: exit status 1 with the reason on stderr.
"""
import json
import sys


def _load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"{path}: {e}", file=sys.stderr)
        sys.exit(1)


def gtest(path):
    doc = _load(path)
    failed, skipped, skip_reason = [], [], ""
    total = 0
    for suite in doc.get("testsuites", []):
        for case in suite.get("testsuite", []):
            if case.get("status") != "RUN":  # DISABLED_ tests are listed as NOTRUN
                continue
            total += 1
            name = f"{suite.get('name')}.{case.get('name')}"
            if case.get("failures"):
                failed.append(name)
            elif case.get("result") == "SKIPPED":
                skipped.append(name)
                if not skip_reason:
                    for s in case.get("skipped", []) or []:
                        skip_reason = s.get("message", "").strip().splitlines()[-1:] or [""]
                        skip_reason = skip_reason[0]
                        break
    passed = total - len(failed) - len(skipped)
    detail = ""
    if failed:
        detail = "failed: " + ", ".join(failed[:3]) + (" …" if len(failed) > 3 else "")
    elif skipped:
        detail = "skipped: " + ", ".join(skipped[:2]) + (" …" if len(skipped) > 2 else "")
        if skip_reason:
            detail += f" ({skip_reason})"
    print(f"{total} {passed} {len(failed)} {len(skipped)}\t{detail}")


def bench(path):
    doc = _load(path)
    runs = [b for b in doc.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
    errors = [b for b in runs if b.get("error_occurred")]
    no_device = [b for b in errors if str(b.get("error_message", "")).startswith("no CUDA device")]
    detail = ""
    if errors:
        detail = f"{errors[0].get('name')}: {errors[0].get('error_message', '')}"
    print(f"{len(runs)} {len(errors)} {len(no_device)}\t{detail}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("gtest", "bench"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    {"gtest": gtest, "bench": bench}[sys.argv[1]](sys.argv[2])
