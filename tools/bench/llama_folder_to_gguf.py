#!/usr/bin/env python3
"""Writes a Llama folder's fp32 weights (config.json + model.safetensors, as
tools/bench/make_random_llama.py writes them) as an F32 GGUF that llama.cpp's llama-server can
serve, for side-by-side timing runs (tools/bench/serve_load.py, mode llama-server). Measurement
only: nothing it writes is committed.

    python tools/bench/llama_folder_to_gguf.py --llama-src DIR MODEL_DIR OUT.gguf

Same weights on both sides: q and k rows are reordered from the Hugging Face layout (rotary
halves) to the interleaved pairs llama.cpp's Llama graph rotates, as llama.cpp's own converter
does, so both servers compute the same model. The folder carries no tokenizer (requests send
token ids), while llama-server needs one to stream text: the GGUF gets a placeholder SentencePiece
vocabulary of the model's size (`<unk>`, `<s>`, `</s>`, then `t3`, `t4`, …), which changes no
computation. Needs numpy and llama.cpp's gguf-py (`--llama-src`: a llama.cpp source tree).
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

from gguf_llama import LAYER_TENSORS, add_llama_hparams


def read_safetensors(path):
    """name -> float32 array, for an all-F32 safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
    data = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        if spec["dtype"] != "F32":
            sys.exit(f"{path}: tensor {name} is {spec['dtype']}; this script reads F32 only")
        b, e = spec["data_offsets"]
        out[name] = np.frombuffer(data[base + b:base + e], dtype=np.float32).reshape(spec["shape"])
    return out


def to_interleaved(w, heads):
    """Rows of q or k from rotary halves (HF) to interleaved pairs (llama.cpp's Llama graph)."""
    rows, cols = w.shape
    d = rows // heads
    return w.reshape(heads, 2, d // 2, cols).swapaxes(1, 2).reshape(rows, cols)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-src", required=True, help="a llama.cpp source tree (for its gguf-py)")
    ap.add_argument("model")
    ap.add_argument("out")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.llama_src, "gguf-py"))
    import gguf  # llama.cpp's own writer

    with open(os.path.join(a.model, "config.json")) as f:
        cfg = json.load(f)
    if not cfg.get("tie_word_embeddings", False):
        sys.exit(f"{a.model}: only tied embeddings are written (as make_random_llama.py makes them)")
    t = read_safetensors(os.path.join(a.model, "model.safetensors"))
    H, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", H // heads)

    w = gguf.GGUFWriter(a.out, "llama")
    add_llama_hparams(w, hidden=H, layers=L, intermediate=cfg["intermediate_size"], heads=heads, kv_heads=kv,
                      head_dim=hd, vocab=V, context=cfg["max_position_embeddings"], rope_theta=cfg["rope_theta"],
                      rms_eps=cfg["rms_norm_eps"])
    w.add_file_type(0)  # all F32
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(3, V)])
    w.add_token_scores([0.0] * V)
    w.add_token_types([2, 3, 3] + [1] * (V - 3))  # unknown, control, control, normal
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)

    w.add_tensor("token_embd.weight", t["model.embed_tokens.weight"])
    w.add_tensor("output_norm.weight", t["model.norm.weight"])
    rotary = {"self_attn.q_proj.weight": heads, "self_attn.k_proj.weight": kv}  # rows to reorder, per head
    for i in range(L):
        for hf, name in LAYER_TENSORS.items():
            x = t[f"model.layers.{i}.{hf}"]
            w.add_tensor(f"blk.{i}.{name}", to_interleaved(x, rotary[hf]) if hf in rotary else x)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{a.out}: {L} layers, vocabulary {V} (placeholder), F32")
    return 0


if __name__ == "__main__":
    sys.exit(main())
