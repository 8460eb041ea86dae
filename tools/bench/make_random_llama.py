#!/usr/bin/env python3
"""Writes a random-weight LlamaForCausalLM folder (config.json + model.safetensors, fp32) in the
SmolLM-135M shape (hidden 576, 9 heads / 3 KV heads, MLP 1536, vocab 49152, tied embeddings) for
timing runs such as tools/bench/serve_load.py. Standard library only; weights are N(0, 0.02)
draws (a pool of 2^20 reused across tensors: the values do not matter to a timing).

  python3 tools/bench/make_random_llama.py OUT_DIR [--layers 30]
"""

import argparse
import array
import json
import os
import random
import struct


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=30)
    ap.add_argument("--hidden", type=int, default=576)
    ap.add_argument("--heads", type=int, default=9)
    ap.add_argument("--kv-heads", type=int, default=3)
    ap.add_argument("--mlp", type=int, default=1536)
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--context", type=int, default=2048)
    a = ap.parse_args()
    h, hd = a.hidden, a.hidden // a.heads
    shapes = [("model.embed_tokens.weight", [a.vocab, h])]
    for i in range(a.layers):
        p = f"model.layers.{i}."
        shapes += [(p + "input_layernorm.weight", [h]), (p + "post_attention_layernorm.weight", [h]),
                   (p + "self_attn.q_proj.weight", [a.heads * hd, h]),
                   (p + "self_attn.k_proj.weight", [a.kv_heads * hd, h]),
                   (p + "self_attn.v_proj.weight", [a.kv_heads * hd, h]),
                   (p + "self_attn.o_proj.weight", [h, a.heads * hd]),
                   (p + "mlp.gate_proj.weight", [a.mlp, h]), (p + "mlp.up_proj.weight", [a.mlp, h]),
                   (p + "mlp.down_proj.weight", [h, a.mlp])]
    shapes.append(("model.norm.weight", [h]))
    rng = random.Random(0)
    pool = array.array("f", (rng.gauss(0.0, 0.02) for _ in range(1 << 20))).tobytes()
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes:
        n = 1
        for d in shape:
            n *= d
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + 4 * n]}
        offset += 4 * n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(a.out, exist_ok=True)
    ones = array.array("f", [1.0]).tobytes()
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape in shapes:
            n = 1
            for d in shape:
                n *= d
            if name.endswith("norm.weight"):
                f.write(ones * n)
                continue
            left = 4 * n
            while left > 0:
                k = min(left, len(pool))
                f.write(pool[:k])
                left -= k
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": h, "head_dim": hd,
              "intermediate_size": a.mlp, "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads,
              "num_hidden_layers": a.layers, "vocab_size": a.vocab, "max_position_embeddings": a.context,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True, "hidden_act": "silu",
              "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32", "bos_token_id": 1,
              "eos_token_id": 2}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"{a.out}: {offset / 1e6:.0f} MB of fp32 weights, {len(shapes)} tensors")


if __name__ == "__main__":
    main()
