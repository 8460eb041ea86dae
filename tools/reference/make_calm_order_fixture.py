#!/usr/bin/env python3
"""Writes tests/data/calm/reference_order/: a CALM generation below T = 1 with given draws, picked
as the authors' code picks (candidates in first-appearance order, Python's random.choices), on the
tiny model of tests/data/calm.

    /path/to/venv/bin/python tools/reference/make_calm_order_fixture.py      # ~5 s on CPU

Files: noise.npy (float32 [steps, N, noise_size], the head noise of each step), uniforms.npy
(float64 [steps], each step's random.random() draw) and expected.json (prompt, temperature, N,
max_length, the generated ids, and the ids Muninn's default key order gives with the same draws).
The draws come from seeded generators (torch for the noise, Python's random for the uniforms);
the seed is the first one for which the key order picks another chunk on some step and every
argmax margin is at least MIN_MARGIN (so fp32 rounding cannot flip a token). The script is
deterministic and checks itself with assertions before it writes anything.
"""
import argparse
import json
import os
import random
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import calm_ref as C  # noqa: E402

PROMPT = [12, 50, 30, 27, 29]
TEMPERATURE = 0.5
N = 16
STEPS = 8                    # chunks generated unless EOS comes first
MIN_MARGIN = 1e-3            # top-1 minus top-2 logit gap of every decoded token


def draws(seed, noise_size):
    g = torch.Generator().manual_seed(seed)
    noise = (torch.rand((STEPS, N, noise_size), generator=g) - 0.5).to(torch.float32)
    rng = random.Random(seed)
    uniforms = [rng.random() for _ in range(STEPS)]
    return noise, uniforms


def run(m, noise, uniforms, order, margins=None):
    K = m.cfg.patch_size
    max_length = (len(PROMPT) + K - 1) // K * K + STEPS * K
    return m.generate_given(PROMPT, max_length, TEMPERATURE, noise, uniforms, order, margins), max_length


def check_given_uniform_choice():
    """choose_reference's pick is random.choices' pick when the Random draws the same uniform."""
    pool = [(5,), (3,), (5,), (3,), (3,), (7,), (7,)]
    for seed in range(200):
        u = random.Random(seed).random()
        want = random.Random(seed).choices([(5,), (3,), (7,)], weights=[1, 3, 1], k=1)[0]
        assert C.CALM.choose_reference(pool, 2, u) == (want, 2), seed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.join(HERE, "..", "..", "tests", "data", "calm")
    ap.add_argument("--data", default=root, help="tests/data/calm (reads calm/ and ae/)")
    ap.add_argument("--out", default=os.path.join(root, "reference_order"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    check_given_uniform_choice()
    m = C.CALM.load(os.path.join(a.data, "calm"), ae_dir=os.path.join(a.data, "ae"))
    for seed in range(1000):
        noise, uniforms = draws(seed, m.cfg.noise_size)
        margins = []
        ref, max_length = run(m, noise, uniforms, "reference", margins)
        key, _ = run(m, noise, uniforms, "key")
        if min(margins) < MIN_MARGIN or ref["full"] == key["full"]:
            continue
        # the first step where the orders part: same pool, another pick
        s = next(i for i, (x, y) in enumerate(zip(ref["steps"], key["steps"])) if x["chunk"] != y["chunk"])
        assert ref["steps"][s]["pool"] == key["steps"][s]["pool"]
        break
    else:
        raise SystemExit("no seed gave a step where the orders differ")
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "noise.npy"), noise.numpy())
    np.save(os.path.join(a.out, "uniforms.npy"), np.array(uniforms, dtype=np.float64))
    expected = {
        "draw_seed": seed, "prompt": PROMPT, "temperature": TEMPERATURE, "num_samples": N,
        "max_length": max_length, "steps": len(ref["steps"]),
        "reference_output": ref["output"], "key_output": key["output"],
        "first_differing_step": s, "min_margin": round(min(margins), 6),
    }
    with open(os.path.join(a.out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(json.dumps(expected))


if __name__ == "__main__":
    main()
