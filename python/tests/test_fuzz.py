"""Random arguments for a few seconds: every call returns or raises a Python exception (never
crashes, hangs or leaves the model unusable). Deterministic per seed; MUNINN_FUZZ_SECONDS sets the time."""
import os
import random
import time

import numpy as np

from conftest import DATA

VALUES = [None, 0, 1, -1, 2, 3, 7, 64, 127, 128, 1024, 2 ** 31, 2 ** 63, -2 ** 63, 0.0, 0.5, -0.5, 1.5, 1e30,
          float("nan"), float("inf"), True, False, "", "kl", "zero", "random", "parallel", "exact", "fast",
          "latest-m4-compress-s4", [1, 2], [], [[1]], (1,), {"a": 1}, b"x", np.int64(3), np.float32(0.5),
          np.array([1, 2]), np.array([[1, 2]]), np.zeros((2, 2, 2)), object()]
NAMES = ["steps", "max_new_tokens", "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "seed",
         "exit", "exit_threshold", "min_steps", "max_steps", "check_every", "init_state", "sampler", "greedy",
         "stop", "ignore_eos", "draft_steps", "lookahead", "warm_start", "kv_budget", "headway", "max_wavefront",
         "freeze", "cache_lookup", "routing", "bogus", "device", "num_samples"]


def random_ids(rng):
    kind = rng.randrange(6)
    n = rng.randrange(0, 12)
    if kind == 0:
        return [rng.randrange(-5, 140) for _ in range(n)]
    if kind == 1:
        return np.array([rng.randrange(0, 128) for _ in range(n)], dtype=rng.choice([np.int8, np.int32, np.int64]))
    if kind == 2:
        return [[rng.randrange(0, 128) for _ in range(rng.randrange(1, 5))] for _ in range(rng.randrange(1, 3))]
    if kind == 3:
        return rng.choice(VALUES)
    if kind == 4:
        return "hello"
    return np.arange(16, dtype=np.int64).reshape(4, 4)[:, ::2]


def test_random_arguments(muninn):
    seconds = float(os.environ.get("MUNINN_FUZZ_SECONDS", "4"))
    models = [muninn.load(DATA / "huginn" / "tiny_f32"), muninn.load(DATA / "llama" / "tiny_text"),
              muninn.load(DATA / "calm" / "calm", ae=str(DATA / "calm" / "ae"))]
    rng = random.Random(1234)
    calls = raised = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        m = rng.choice(models)
        kwargs = {rng.choice(NAMES): rng.choice(VALUES) for _ in range(rng.randrange(0, 4))}
        method = rng.choice(["forward", "generate", "score", "brierlm", "ae_encode", "stream"])
        calls += 1
        try:
            if method == "generate":
                kwargs.setdefault("max_new_tokens", rng.randrange(0, 6))
                m.generate(random_ids(rng), **kwargs)
            elif method == "stream":
                kwargs.setdefault("max_new_tokens", rng.randrange(0, 6))
                list(m.generate(random_ids(rng), stream=True, **kwargs))
            elif method == "ae_encode":
                m.ae_encode(random_ids(rng))
            else:
                getattr(m, method)(random_ids(rng), **kwargs)
        except (muninn.Error, TypeError, ValueError):
            raised += 1
    assert calls > 50 and raised > 0
    for m in models[:2]:  # still usable
        m.forward([1, 2, 3])
