"""A crash-free run under random request bodies and aborted connections.

The time box comes from MUNINN_SERVE_FUZZ_SECONDS (ctest sets 30 s; 5 s when run by hand without
it). Every answer must be a well-formed HTTP response with an expected status (never a 5xx),
and the server must still answer /health and exit 0 on SIGTERM afterwards."""

import json
import os
import random
import socket
import time

from conftest import model_dir

KEYS = ["prompt", "messages", "max_tokens", "temperature", "top_p", "seed", "stop", "stream", "n", "steps", "exit",
        "threshold", "routing", "top_k", "stream_options", "logprobs", "model", "ignore_eos", "min_p", "echo",
        "content", "role", "x"]
OK_STATUS = {200, 400, 401, 404, 413, 429}


def random_value(rng, depth=0):
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, 1, -1, 2, 7, 64, 127, 128, 10 ** 6, 2 ** 31, 2 ** 63 - 1, -2 ** 63])
    if kind == 2:
        return rng.choice([0.0, 0.5, 1e-9, 1e308, -3.5, 2.0])
    if kind == 3:
        return "".join(rng.choice("ab \n\"\\\u00e9\u4e2d\U0001f600<|>") for _ in range(rng.randrange(20)))
    if kind == 4:
        return rng.choice(["kl", "none", "causal", "scoring", "user", "assistant", "system", "latent-diff"])
    if kind == 5:
        return [rng.randrange(-5, 200) for _ in range(rng.randrange(12))]
    if kind in (6, 7):
        return {rng.choice(KEYS): random_value(rng, depth + 1) for _ in range(rng.randrange(5))}
    return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def random_body(rng):
    r = rng.random()
    if r < 0.15:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
    body = {k: random_value(rng) for k in rng.sample(KEYS, rng.randrange(1, 6))}
    if rng.random() < 0.5:
        body["prompt" if rng.random() < 0.5 else "messages"] = (
            "the" if rng.random() < 0.5 else [{"role": "user", "content": "hi"}])
        body["max_tokens"] = rng.randrange(1, 6)
    text = json.dumps(body).encode()
    if r < 0.3:
        text = text[: rng.randrange(len(text) + 1)]  # truncated
    return text


def exchange(host, port, rng):
    """One request; sometimes aborted half-way (mid-body or before reading the answer)."""
    path = rng.choice(["/v1/completions", "/v1/chat/completions", "/v1/completions", "/v1/models", "/nope"])
    body = random_body(rng)
    length = len(body) if rng.random() < 0.9 else rng.randrange(0, 2 * len(body) + 2)
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection((host, port), timeout=30) as s:
        abort = rng.random()
        if abort < 0.1:
            s.sendall(head + body[: len(body) // 2])
            return None  # gone mid-body
        s.sendall(head + body)
        if length > len(body):
            s.shutdown(socket.SHUT_WR)  # the promised bytes never come
        if abort < 0.2:
            return None  # gone before the answer
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    if not data:
        return None
    status = int(data.split(b" ", 2)[1])
    return status


def test_random_bodies_and_aborted_connections(start_server):
    seconds = float(os.environ.get("MUNINN_SERVE_FUZZ_SECONDS", "5"))
    server = start_server(model_dir("huginn/tiny_text"), "--max-body", "65536", "--timeout", "10")
    rng = random.Random(int(os.environ.get("MUNINN_SERVE_FUZZ_SEED", "1")))
    deadline = time.monotonic() + seconds
    statuses = {}
    n = 0
    while time.monotonic() < deadline:
        st = exchange(server.host, server.port, rng)
        statuses[st] = statuses.get(st, 0) + 1
        n += 1
        assert st is None or st in OK_STATUS, f"status {st} after {n} requests"
        assert server.proc.poll() is None, "".join(server.output)
    assert n > 10 and statuses.get(200, 0) > 0 and statuses.get(400, 0) > 0, statuses
    import urllib.request
    with urllib.request.urlopen(server.base + "/health", timeout=10) as r:
        assert r.status == 200
    assert server.stop() == 0
