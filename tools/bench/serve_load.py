#!/usr/bin/env python3
"""Load test for `muninn serve` (loopback only, bounded in requests and time; not part of CI).

Starts the server on a free loopback port for each (batching mode, concurrency) pair, sends
--requests streamed completions from C concurrent clients (asyncio, raw HTTP: the standard library
only), and prints one table row per pair: generated tokens/s, time to first token (mean, p50,
p99), inter-token latency (p50, p99), and for a baseline (sequence-wise batching, or llama.cpp's
llama-server with --llama-server/--gguf and mode llama-server) the ratio of continuous to its
tokens/s. Every request asks for a fixed number of tokens (ignore_eos), drawn
per request from --min-tokens..--max-tokens with a fixed seed, so both modes do the same work.

  python3 tools/bench/serve_load.py --exe build/host/bin/muninn --model tests/data/llama/tiny_text \\
      --concurrency 1,4,16,64 --requests 128
"""

import argparse
import asyncio
import json
import random
import re
import statistics
import subprocess
import sys
import time


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def start_server(exe, model, flags, timeout=120):
    cmd = [exe, "serve", "--model", model, "--host", "127.0.0.1", "--port", "0", *flags]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"muninn serve exited with {proc.wait()}")
        m = re.search(r"listening on http://([^:]+):(\d+)", line)
        if m:
            return proc, m.group(1), int(m.group(2))
    proc.kill()
    raise SystemExit("muninn serve did not start in time")


def start_llama_server(exe, gguf, parallel, ctx_per_slot, threads, timeout=300):
    """llama.cpp's llama-server on a free loopback port: `parallel` slots (its continuous
    batching), each with ctx_per_slot positions; returns once /health answers 200."""
    import socket
    import urllib.request
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [exe, "-m", gguf, "--host", "127.0.0.1", "--port", str(port), "-np", str(parallel),
           "-c", str(parallel * ctx_per_slot), "-t", str(threads), "-tb", str(threads), "--no-webui"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited with {proc.returncode}: {' '.join(cmd)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc, "127.0.0.1", port
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("llama-server did not start in time")


async def read_chunked(reader):
    """Yields the body of a chunked HTTP response piece by piece."""
    while True:
        size_line = await reader.readline()
        if not size_line:
            return
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            return
        data = await reader.readexactly(size)
        await reader.readexactly(2)
        yield data


async def one_request(host, port, body, deadline):
    """Sends one streamed completion; returns (arrival times of token events, start time)."""
    reader, writer = await asyncio.open_connection(host, port)
    payload = json.dumps(body).encode()
    writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (host.encode(), len(payload)) + payload)
    t0 = time.perf_counter()
    await writer.drain()
    status = await reader.readline()
    if b" 200 " not in status:
        rest = await reader.read()
        raise RuntimeError(f"{status!r} {rest[:300]!r}")
    chunked = False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
            chunked = True
    times = []
    buf = b""
    pieces = read_chunked(reader) if chunked else None
    while time.perf_counter() < deadline:
        data = await pieces.__anext__() if chunked else await reader.read(65536)
        if not data:
            break
        buf += data
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            if not event.startswith(b"data: "):
                continue
            if event == b"data: [DONE]":
                writer.close()
                return times, t0
            chunk = json.loads(event[6:])
            if chunk.get("choices") and chunk["choices"][0].get("finish_reason") is None:
                times.append(time.perf_counter())
    writer.close()
    return times, t0


async def run_load(host, port, bodies, concurrency, time_limit):
    deadline = time.perf_counter() + time_limit
    todo = list(bodies)
    results = []

    async def client():
        while todo and time.perf_counter() < deadline:
            body = todo.pop()
            try:
                results.append(await asyncio.wait_for(one_request(host, port, body, deadline),
                                                      max(0.1, deadline - time.perf_counter())))
            except (asyncio.TimeoutError, StopAsyncIteration):
                return

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return results, time.perf_counter() - t0


def summarize(results, wall):
    tokens = sum(len(t) for t, _ in results)
    ttft = [t[0] - t0 for t, t0 in results if t]
    itl = [b - a for t, _ in results for a, b in zip(t, t[1:])]
    return {
        "requests": len(results),
        "tokens": tokens,
        "tok_s": tokens / wall if wall > 0 else 0.0,
        "ttft_mean": statistics.mean(ttft) if ttft else float("nan"),
        "ttft_p50": percentile(ttft, 50),
        "ttft_p99": percentile(ttft, 99),
        "itl_p50": percentile(itl, 50),
        "itl_p99": percentile(itl, 99),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--concurrency", default="1,4,16,64")
    ap.add_argument("--requests", type=int, default=128, help="requests per (mode, concurrency) run")
    ap.add_argument("--min-tokens", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--prompt-len", type=int, default=16, help="prompt length in token ids")
    ap.add_argument("--vocab", type=int, default=64, help="prompt ids are drawn below this")
    ap.add_argument("--extra", default="{}", help="extra body fields as JSON (steps, exit, threshold, routing)")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per run at most")
    ap.add_argument("--modes", default="continuous,sequence")
    ap.add_argument("--server-flags", default="", help="more flags for muninn serve (space-separated)")
    ap.add_argument("--llama-server", help="llama.cpp's llama-server: mode llama-server runs the same "
                    "requests on it (measurement only; build it beside ours)")
    ap.add_argument("--gguf", help="the model as GGUF for --llama-server")
    ap.add_argument("--threads", type=int, default=2, help="llama-server's threads (-t, -tb)")
    a = ap.parse_args()

    rng = random.Random(1)
    extra = json.loads(a.extra)
    concurrencies = [int(c) for c in a.concurrency.split(",")]
    print(f"model {a.model}, {a.requests} requests per run, prompts of {a.prompt_len} ids, "
          f"{a.min_tokens}..{a.max_tokens} tokens each, extra {extra}")
    print("| batching | streams | requests | tokens | tokens/s | TTFT mean ms | TTFT p50 ms | TTFT p99 ms | "
          "ITL p50 ms | ITL p99 ms | continuous / this |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in concurrencies:
        bodies = [dict(prompt=[rng.randrange(2, a.vocab) for _ in range(a.prompt_len)],
                       max_tokens=rng.randint(a.min_tokens, a.max_tokens), temperature=0, ignore_eos=True,
                       stream=True, **extra) for _ in range(a.requests)]
        rates = {}
        for mode in a.modes.split(","):
            if mode == "llama-server":
                proc, host, port = start_llama_server(a.llama_server, a.gguf, max(c, 1),
                                                      a.prompt_len + a.max_tokens + 8, a.threads)
            else:
                flags = ["--batching", mode, "--max-batch", str(max(c, 1)), "--max-queue", str(a.requests)]
                flags += a.server_flags.split()
                proc, host, port = start_server(a.exe, a.model, flags)
            try:
                results, wall = asyncio.run(run_load(host, port, list(reversed(bodies)), c, a.time_limit))
            finally:
                proc.terminate()
                proc.wait(60)
            s = summarize(results, wall)
            rates[mode] = s["tok_s"]
            base = "sequence" if mode == "sequence" else "llama-server" if mode == "llama-server" else None
            ratio = (f"{rates['continuous'] / rates[base]:.2f}x"
                     if base and rates.get("continuous") and s["tok_s"] else "")
            print(f"| {mode} | {c} | {s['requests']} | {s['tokens']} | {s['tok_s']:.0f} | "
                  f"{1e3 * s['ttft_mean']:.1f} | {1e3 * s['ttft_p50']:.1f} | {1e3 * s['ttft_p99']:.1f} | "
                  f"{1e3 * s['itl_p50']:.2f} | {1e3 * s['itl_p99']:.2f} | {ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
