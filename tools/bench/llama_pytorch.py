#!/usr/bin/env python3
"""PyTorch CPU speed baseline for a SmolLM-135M-shaped Llama, to compare with Muninn's Llama path.

    python3 tools/bench/llama_pytorch.py --threads 1 [--prompt 128] [--decode 64] [--repeats 3]

Model: transformers' LlamaForCausalLM with SmolLM-135M's shape (hidden 576, 9 heads, 3 KV heads,
head_dim 64, intermediate 1536, 30 layers, vocab 49152, tied embeddings, rope_theta 10000,
rms_norm_eps 1e-5), fp32, random weights from transformers' own init under a fixed seed (speed
does not depend on the values). The prompt is `--prompt` random token ids (seeded), batch 1.
Attention is SDPA (transformers' default; `--attn eager` for the plain matmul path).

What is timed (time.perf_counter, under torch.inference_mode, after one untimed warm-up round):
  * prefill: ONE `model(input_ids=prompt, past_key_values=DynamicCache(), use_cache=True,
    logits_to_keep=1)` call with an empty cache, i.e. all layers over the P prompt tokens and the
    lm_head for the last position only (what generate() does for the prompt; `--prefill-logits
    all` computes the [P, V] logits instead). Creating the empty cache is outside the timer.
    prefill_tok_s = P / best time over `--repeats`.
  * decode: after an untimed prefill of the same prompt into a fresh cache, `--decode` D forward
    calls `model(input_ids=[[t]], past_key_values=cache, use_cache=True)`, each on the one new
    token t = argmax of the previous call's logits (greedy; the first t comes from the prefill
    logits). Each call computes logits for that token only; the argmax is inside the timer.
    decode_tok_s = D / best total time over `--repeats` (cache length grows P .. P+D-1).
No generate(), no sampling logic, no tokenizer: the timed work is exactly the forward passes.
Prints one JSON line.
"""
import argparse
import json
import time

import torch
import transformers
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM


def smollm_135m_config(attn):
    return LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, head_dim=64, hidden_act="silu",
        max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
        tie_word_embeddings=True, attn_implementation=attn)


def new_cache(config):
    # transformers 5 builds per-layer caches from the config; 4.x takes no argument
    try:
        return DynamicCache(config=config)
    except TypeError:
        return DynamicCache()


def prefill(model, prompt, keep):
    cache = new_cache(model.config)
    t0 = time.perf_counter()
    out = model(input_ids=prompt, past_key_values=cache, use_cache=True, logits_to_keep=keep)
    dt = time.perf_counter() - t0
    return dt, out, cache


def decode(model, prompt, n):
    out = model(input_ids=prompt, past_key_values=new_cache(model.config), use_cache=True,
                logits_to_keep=1)
    cache = out.past_key_values
    tok = out.logits[:, -1:].argmax(-1)
    t0 = time.perf_counter()
    for _ in range(n):
        out = model(input_ids=tok, past_key_values=cache, use_cache=True)
        tok = out.logits[:, -1:].argmax(-1)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=128, help="prefill length P")
    ap.add_argument("--decode", type=int, default=64, help="new tokens D")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    ap.add_argument("--prefill-logits", default="last", choices=["last", "all"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    transformers.logging.set_verbosity_error()
    model = LlamaForCausalLM(smollm_135m_config(args.attn)).float().eval()
    g = torch.Generator().manual_seed(args.seed)
    prompt = torch.randint(0, model.config.vocab_size, (1, args.prompt), generator=g)
    keep = 1 if args.prefill_logits == "last" else 0  # 0 = all positions

    with torch.inference_mode():
        prefill(model, prompt, keep)  # warm-up: allocator, oneDNN/BLAS first-call setup
        decode(model, prompt, min(args.decode, 4))
        t_prefill = min(prefill(model, prompt, keep)[0] for _ in range(args.repeats))
        t_decode = min(decode(model, prompt, args.decode) for _ in range(args.repeats))

    print(json.dumps({
        "framework": "transformers", "torch": torch.__version__,
        "transformers": transformers.__version__, "threads": args.threads,
        "prompt": args.prompt, "decode": args.decode,
        "prefill_tok_s": round(args.prompt / t_prefill, 2),
        "decode_tok_s": round(args.decode / t_decode, 2),
        "attn": args.attn, "prefill_logits": args.prefill_logits, "repeats": args.repeats,
    }))


if __name__ == "__main__":
    main()
