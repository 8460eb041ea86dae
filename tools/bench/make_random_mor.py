#!/usr/bin/env python3
"""Writes a random-weight Mixture-of-Recursions folder in the SmolLM-135M shape (hidden 576,
9 heads / 3 KV heads, MLP 1536, vocab 49152, 30 layers, tied embeddings) with expert-choice
routing over 3 recursions of a middle_cycle block, as the reference saves it (config.json with
its "mor" block, mor.yaml, pytorch_model.bin), for timing runs such as tools/bench/serve_load.py.
Needs PyTorch (tools/reference/mor_ref.py writes it); the values do not matter to a timing.

  python3 tools/bench/make_random_mor.py OUT_DIR [--layers 30] [--recursions 3]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from mor_ref import MoRConfig, MoRModel  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=30)
    ap.add_argument("--recursions", type=int, default=3)
    ap.add_argument("--context", type=int, default=2048)
    a = ap.parse_args()
    cfg = MoRConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=a.layers,
                    num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=a.context,
                    num_recursion=a.recursions, sharing="middle_cycle", type="expert", router_func="sigmoid")
    torch.manual_seed(0)
    MoRModel(cfg).init_weights(0).save(a.out)
    print(f"wrote {a.out}: {a.layers} layers, {a.recursions} recursions of a {cfg.block_depth}-layer block")


if __name__ == "__main__":
    main()
