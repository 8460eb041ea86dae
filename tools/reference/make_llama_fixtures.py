#!/usr/bin/env python3
"""Writes the Llama golden fixtures in tests/data/llama/ with the real Hugging Face `transformers`.

    python3 tools/reference/make_llama_fixtures.py --out tests/data/llama     # ~10 s on CPU

Every fixture folder is a complete, self-contained `LlamaForCausalLM` checkpoint written by
`save_pretrained` (config.json, generation_config.json, safetensors) plus the expectations:

  expected.json   prompt ids, greedy continuation, a longer prompt's last-position logits, RoPE
                  inverse frequencies, versions and notes
  logits.npy      float32 [S, V] logits of the prompt (batch 1)

The models are tiny and random, but every weight is random (RMSNorm weights and biases too), so a
loader that forgets a tensor or a norm weight shows up as a logit error. The expectations come from
the model reloaded from disk with `from_pretrained(dtype=float32, attn_implementation="eager")` in
`eval()` / `no_grad`, i.e. from the files the C++ side reads, never from the in-memory model.

The script checks itself with assertions: round trip of the weights, greedy with and without the
KV cache, an independent float64 NumPy forward written from the files (it parses both config
styles, the way the C++ reader has to), shard count, and the config keys of each style.

It needs transformers 5.x: that major version's own config.json style ("rope_parameters", "dtype")
is the native one here, and one folder is rewritten into the 4.x style ("rope_theta" and
"rope_scaling" at top level, "torch_dtype"), exactly as transformers 4.55 writes it.
"""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from safetensors.torch import load_file
from transformers import LlamaConfig, LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))

# The 4.x release whose config.json layout the rewritten folder copies. 4.56 and 4.57 already write
# "dtype" (with top-level rope keys); 4.55 is the last one writing "torch_dtype", which is what the
# Llama checkpoints on the Hub (written by 4.4x) carry, so it is the style worth testing.
V4_STYLE_VERSION = "4.55.4"

# Tolerance for comparing any two fp32 forwards of the same weights (documented for the C++ tests).
LOGIT_TOL = 1e-4

# Greedy must be decided by a clear winner, or a C++ forward that differs by 1e-6 could pick the
# other token. Prompts are drawn until every greedy step has at least this top-1 / top-2 gap.
MIN_MARGIN = 0.05

BASE = dict(hidden_size=64, hidden_act="silu", attention_dropout=0.0, initializer_range=0.02,
            pretraining_tp=1, use_cache=True)

# One entry per fixture folder. "kw" goes to LlamaConfig; the rest steers the script.
VARIANTS = [
    dict(name="tiny_tied_mha", seed=11, dtype="float32", prompt_len=10, long_len=40, new=12,
         covers="tied embeddings (no lm_head.weight in the file), MHA, default RoPE",
         kw=dict(vocab_size=128, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=4, max_position_embeddings=128, rms_norm_eps=1e-6,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                 tie_word_embeddings=True)),
    dict(name="tiny_untied_gqa", seed=12, dtype="float32", prompt_len=10, long_len=40, new=12,
         covers="separate lm_head, GQA 4 query heads / 2 KV heads, llama3 RoPE scaling "
                "(original_max_position_embeddings 32 < long prompt 40)",
         kw=dict(vocab_size=150, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5,
                 rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                  "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": 32},
                 tie_word_embeddings=False)),
    dict(name="tiny_linear_bias", seed=13, dtype="float32", prompt_len=9, long_len=40, new=12,
         covers="linear RoPE scaling (factor 2), attention_bias (q/k/v/o) and mlp_bias "
                "(gate/up/down), explicit head_dim 16 != hidden/heads 32",
         kw=dict(vocab_size=128, intermediate_size=112, num_hidden_layers=2,
                 num_attention_heads=2, num_key_value_heads=2, head_dim=16,
                 max_position_embeddings=128, rms_norm_eps=1e-6,
                 rope_parameters={"rope_type": "linear", "rope_theta": 50000.0, "factor": 2.0},
                 attention_bias=True, mlp_bias=True, tie_word_embeddings=True)),
    dict(name="tiny_bf16_sharded", seed=14, dtype="bfloat16", shard="30KB", prompt_len=11,
         long_len=72, new=12,
         covers="bf16 weights in >= 3 safetensors shards + model.safetensors.index.json, separate "
                "lm_head, GQA 4/2, llama3 RoPE with Llama-3.1's rope_theta 500000 and "
                "original_max_position_embeddings 64 (long prompt 72); expectations computed in "
                "fp32 from the bf16 weights",
         kw=dict(vocab_size=128, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5,
                 rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                  "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": 64},
                 tie_word_embeddings=False)),
    dict(name="tiny_text", seed=15, dtype="float32", new=12, text=True, embed_std=0.5,
         covers="vocab of tests/data/tokenizer/llama3.json (byte-level BPE, 736 ids), "
                "tokenizer_config.json with bos/eos and a Llama-3-style chat_template, text prompt "
                "in, text out; eos_token_id is a list",
         kw=dict(vocab_size=None, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5,
                 rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
                 tie_word_embeddings=True)),
]

# Folders whose config is rewritten into the other major version's style: name -> source folder.
# The safetensors and the expectations are byte copies; only config.json / generation_config.json
# differ, so a failure there but not in the source folder is a config-reading bug.
# tiny_bf16_sharded is the one copied: bf16, sharded, llama3 RoPE and a 4.x config is exactly the
# shape of the Llama 3.x checkpoints on the Hub, and it is the smallest folder.
V4_COPIES = {"tiny_bf16_sharded_v4": "tiny_bf16_sharded"}

TEXT_PROMPTS = ["Hello world, how", "The cat sat", "Once upon a", "I think that", "Good morning",
                "She said that", "We went to the", "It was a dark", "My name is", "In the end"]
TEXT_LONG = ("The quick brown fox jumps over the lazy dog. Then it ran into the forest, "
             "where the old trees stood")
CHAT_MESSAGES = [{"role": "system", "content": "You are terse."},
                 {"role": "user", "content": " Hi there! "}]

# A Llama-3-shaped template written for this tokenizer's special tokens: BOS once, then per
# message a header, two newlines, the trimmed content and the end-of-turn token.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|begin_header|>' + message['role'] + '<|end_header|>\n\n' + message['content'] | trim"
    " + '<|end_turn|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|begin_header|>assistant<|end_header|>\n\n' }}{% endif %}"
)


# ----------------------------------------------------------------------------------------------
# weights


def randomise(model, seed, quiet_rows=(), embed_std=0.25):
    """Overwrites every parameter: norms ~ N(1, 0.1), biases ~ N(0, 0.05), embeddings and lm_head
    ~ N(0, 0.25), q/k/v/gate/up ~ N(0, 0.2), o_proj/down_proj ~ N(0, 0.3).

    The scales are larger than a trained model's on purpose. Embedding / head 0.25 spreads the
    logits over a few units (hidden 64: logit std ~ 8 * 0.25 = 2), which keeps greedy decisive
    and makes a missing weight obvious. The projections must be large enough that the layers'
    output, not the token's own embedding, dominates the residual stream: with tied embeddings
    and std 0.1 projections, x_final ~ e_token and greedy just repeats the last token forever.

    tiny_text uses embed_std 0.5: with 736 candidates the top-2 gap is small unless the logits
    spread more. quiet_rows: embedding rows scaled to std 0.05 (tiny_text: special tokens, byte
    fragments that are not valid UTF-8 alone, control characters). With tied weights their
    logits are then small, so the greedy continuation is printable text."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                mean, std = 1.0, 0.1
            elif name.endswith(".bias"):
                mean, std = 0.0, 0.05
            elif "embed_tokens" in name or name.startswith("lm_head"):
                mean, std = 0.0, embed_std
            elif "o_proj" in name or "down_proj" in name:
                mean, std = 0.0, 0.3
            else:
                mean, std = 0.0, 0.2
            p.copy_(torch.randn(p.shape, generator=g) * std + mean)
            if "embed_tokens" in name and len(quiet_rows):
                p[list(quiet_rows)] *= 0.05 / std


def load_tensors(folder):
    """All tensors of a checkpoint folder (single file or sharded index), as stored."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = {}
    for f in files:
        part = load_file(os.path.join(folder, f))
        assert not set(part) & set(out), "tensor stored twice"
        out.update(part)
    return out


# ----------------------------------------------------------------------------------------------
# independent float64 reference, written from the checkpoint files


def read_rope(cfg):
    """(theta, params) from either config style. 5.x nests everything under "rope_parameters";
    4.x has "rope_theta" at top level and the scaling dict (or null) in "rope_scaling", whose type
    key is "rope_type", or "type" in configs older than 4.43."""
    if "rope_parameters" in cfg:
        params = dict(cfg["rope_parameters"] or {})
        theta = params.get("rope_theta", cfg.get("rope_theta", 10000.0))
    else:
        params = dict(cfg.get("rope_scaling") or {})
        theta = cfg.get("rope_theta", 10000.0)
    params["rope_type"] = params.get("rope_type", params.get("type", "default"))
    return float(theta), params


def inv_freq_f64(cfg):
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    theta, p = read_rope(cfg)
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    kind = p["rope_type"]
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / p["factor"]
    if kind == "llama3":
        factor, lo, hi = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
        old = p.get("original_max_position_embeddings", cfg["max_position_embeddings"])
        wavelen = 2 * math.pi / inv
        smooth = (old / wavelen - lo) / (hi - lo)
        mid = (1 - smooth) * inv / factor + smooth * inv
        return np.where(wavelen < old / hi, inv, np.where(wavelen > old / lo, inv / factor, mid))
    raise ValueError(f"rope_type {kind} not handled by the reference")


def numpy_forward(folder, ids):
    """Llama forward in float64 from config.json + safetensors; returns logits [S, V]."""
    cfg = json.load(open(os.path.join(folder, "config.json")))
    W = {k: v.to(torch.float64).numpy() for k, v in load_tensors(folder).items()}
    H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or cfg["hidden_size"] // H
    eps = cfg["rms_norm_eps"]
    S = len(ids)

    def norm(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    def lin(x, name):
        y = x @ W[name + ".weight"].T
        return y + W[name + ".bias"] if name + ".bias" in W else y

    # Rotate-half RoPE: dimension i pairs with i + D/2 (not adjacent pairs), angle pos * inv_freq.
    ang = np.arange(S, dtype=np.float64)[:, None] * inv_freq_f64(cfg)[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))

    def rope(x):  # [S, heads, D]
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        return x * cos[:, None] + np.concatenate([-x2, x1], -1) * sin[:, None]

    x = W["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((S, S), -np.inf), 1)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = norm(x, W[p + "input_layernorm.weight"])
        q = rope(lin(h, p + "self_attn.q_proj").reshape(S, H, D))
        k = rope(lin(h, p + "self_attn.k_proj").reshape(S, Hkv, D))
        v = lin(h, p + "self_attn.v_proj").reshape(S, Hkv, D)
        att = np.empty((S, H, D))
        for hq in range(H):
            kv = hq // (H // Hkv)  # query heads share KV heads in consecutive groups
            s = q[:, hq] @ k[:, kv].T / math.sqrt(D) + mask
            e = np.exp(s - s.max(-1, keepdims=True))
            att[:, hq] = (e / e.sum(-1, keepdims=True)) @ v[:, kv]
        x = x + lin(att.reshape(S, H * D), p + "self_attn.o_proj")
        h = norm(x, W[p + "post_attention_layernorm.weight"])
        g = lin(h, p + "mlp.gate_proj")
        x = x + lin(g / (1 + np.exp(-g)) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    x = norm(x, W["model.norm.weight"])
    head = W.get("lm_head.weight")
    if head is None:
        assert cfg["tie_word_embeddings"], "no lm_head.weight in an untied checkpoint"
        head = W["model.embed_tokens.weight"]
    return x @ head.T


# ----------------------------------------------------------------------------------------------
# HF model runs


def load_hf(folder):
    m = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    return m.eval()


@torch.no_grad()
def logits_of(model, ids):
    return model(torch.tensor([ids]), use_cache=False).logits[0].float().numpy()


@torch.no_grad()
def greedy_nocache_manual(model, ids, n):
    """Greedy by full recomputation; returns new ids and the smallest top-1/top-2 gap."""
    seq, margin = list(ids), float("inf")
    for _ in range(n):
        last = model(torch.tensor([seq]), use_cache=False).logits[0, -1]
        top = torch.topk(last, 2).values
        margin = min(margin, float(top[0] - top[1]))
        seq.append(int(last.argmax()))
    return seq[len(ids):], margin


@torch.no_grad()
def hf_generate(model, ids, n, use_cache, pad_id):
    out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                         do_sample=False, max_new_tokens=n, use_cache=use_cache, pad_token_id=pad_id)
    return out[0, len(ids):].tolist()


def eos_ids(cfg):
    e = cfg.eos_token_id
    return set(e if isinstance(e, list) else [e] if e is not None else [])


def printable(text):
    """Valid UTF-8 (no U+FFFD from a partial byte sequence) and no control character but \\n."""
    return "\ufffd" not in text and all(c == "\n" or ord(c) >= 32 for c in text)


def acceptable(new, margin, n, banned):
    """Not degenerate: full length, no EOS / special ids (generation would stop or the text would
    hide them), at least half distinct, and decided by a clear margin."""
    return (len(new) == n and not set(new) & banned and len(set(new)) >= n // 2
            and margin >= MIN_MARGIN)


# ----------------------------------------------------------------------------------------------
# config styles


def to_v4_style(cfg):
    """config.json dict as transformers 4.55 writes it for the same model: rope_theta and
    rope_scaling at top level (rope_scaling null for default RoPE, else the scaling dict with
    "rope_type" and without "rope_theta"), "torch_dtype" for "dtype", no null pad_token_id
    (4.x drops keys equal to the PretrainedConfig default), keys sorted."""
    out = dict(cfg)
    rp = dict(out.pop("rope_parameters"))
    out["rope_theta"] = float(rp.pop("rope_theta"))
    out["rope_scaling"] = None if rp["rope_type"] == "default" else rp
    out["torch_dtype"] = out.pop("dtype")
    if out.get("pad_token_id") is None:
        out.pop("pad_token_id", None)
    out["transformers_version"] = V4_STYLE_VERSION
    return dict(sorted(out.items()))


def generation_config_v4(gen):
    """generation_config.json as 4.55 writes it from a model config: only the token ids."""
    keep = ["_from_model_config", "bos_token_id", "eos_token_id", "pad_token_id"]
    out = {k: gen[k] for k in keep if k in gen and gen[k] is not None}
    out["transformers_version"] = V4_STYLE_VERSION
    return out


def check_style(cfg, style):
    if style == "v5":
        assert "rope_parameters" in cfg and "dtype" in cfg, cfg.keys()
        assert {"rope_type", "rope_theta"} <= set(cfg["rope_parameters"])
        assert not {"rope_theta", "rope_scaling", "torch_dtype"} & set(cfg)
    else:
        assert {"rope_theta", "rope_scaling", "torch_dtype"} <= set(cfg), cfg.keys()
        assert not {"rope_parameters", "dtype"} & set(cfg)
        rs = cfg["rope_scaling"]
        assert rs is None or ("rope_type" in rs and "rope_theta" not in rs)
    for k in ["hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
              "intermediate_size", "num_hidden_layers", "rms_norm_eps", "vocab_size",
              "tie_word_embeddings", "attention_bias", "mlp_bias", "max_position_embeddings"]:
        assert k in cfg, k


def write_config_json(path, obj):
    """The byte layout of transformers' to_json_string: indent 2, sorted keys, newline."""
    with open(path, "w") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_expected(path, obj):
    """expected.json: one key per line, nested dicts one level deeper, lists kept on one line."""
    def block(d, pad):
        items = [f'{pad} {json.dumps(k)}: ' + (block(v, pad + " ") if isinstance(v, dict)
                                              else json.dumps(v, ensure_ascii=False))
                 for k, v in d.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    text = block(obj, "") + "\n"
    assert json.loads(text) == obj
    with open(path, "w") as f:
        f.write(text)


# ----------------------------------------------------------------------------------------------


def make_variant(v, out_dir, tok):
    folder = os.path.join(out_dir, v["name"])
    shutil.rmtree(folder, ignore_errors=True)
    kw = dict(BASE, **v["kw"])
    n_base = tok.get_vocab_size(with_added_tokens=False)  # ids >= n_base are the added tokens
    if v.get("text"):
        # Llama-3.1-like: eos is a list (end of text and end of turn)
        kw.update(vocab_size=tok.get_vocab_size(with_added_tokens=True),
                  bos_token_id=tok.token_to_id("<|begin_text|>"),
                  eos_token_id=[tok.token_to_id("<|end_text|>"), tok.token_to_id("<|end_turn|>")],
                  pad_token_id=None)
    cfg = LlamaConfig(**kw)
    torch.manual_seed(v["seed"])
    model = LlamaForCausalLM(cfg)
    quiet = []
    if v.get("text"):
        quiet = [i for i in range(cfg.vocab_size) if i >= n_base or not printable(tok.decode([i]))]
    randomise(model, v["seed"], quiet, v.get("embed_std", 0.25))
    dtype = getattr(torch, v["dtype"])
    model = model.to(dtype)
    model.save_pretrained(folder, max_shard_size=v.get("shard", "50MB"))
    os.chmod(folder, 0o755)
    for f in os.listdir(folder):
        os.chmod(os.path.join(folder, f), 0o644)  # save_pretrained writes 0600 safetensors

    # round trip: the fp32 model loaded from disk holds the saved values exactly (bf16 -> fp32 is
    # exact, so this also pins "expectations come from bf16-rounded weights")
    m = load_hf(folder)
    src = {k: t.float() for k, t in model.state_dict().items()}
    for k, t in m.state_dict().items():
        assert t.dtype == torch.float32, (k, t.dtype)
        assert torch.equal(t, src[k]), k
    stored = load_tensors(folder)
    assert all(t.dtype == dtype for t in stored.values())
    assert ("lm_head.weight" in stored) == (not cfg.tie_word_embeddings)
    n_params = sum(t.numel() for t in stored.values())
    if "shard" in v:
        shards = [f for f in os.listdir(folder) if f.startswith("model-") and f.endswith(".safetensors")]
        assert len(shards) >= 3 and os.path.exists(os.path.join(folder, "model.safetensors.index.json")), shards
    else:
        assert os.listdir(folder).count("model.safetensors") == 1

    n = v["new"]
    banned = eos_ids(cfg) | {cfg.bos_token_id}
    if v.get("text"):
        banned |= set(range(n_base, cfg.vocab_size))  # the added (special) tokens
        for prompt_text in TEXT_PROMPTS:
            prompt = tok.encode(prompt_text).ids  # the post-processor prepends <|begin_text|>
            new, margin = greedy_nocache_manual(m, prompt, n)
            text_out = tok.decode(new)
            if acceptable(new, margin, n, banned) and printable(text_out) and len(prompt) <= 12:
                break
        else:
            raise SystemExit(f"{v['name']}: no acceptable text prompt")
        long_ids = tok.encode(TEXT_LONG).ids
    else:
        rng = np.random.default_rng(v["seed"])
        for _ in range(200):
            prompt = [int(i) for i in rng.integers(3, cfg.vocab_size, v["prompt_len"])]
            new, margin = greedy_nocache_manual(m, prompt, n)
            if acceptable(new, margin, n, banned):
                break
        else:
            raise SystemExit(f"{v['name']}: no acceptable prompt")
        long_ids = [int(i) for i in rng.integers(3, cfg.vocab_size, v["long_len"])]

    pad = min(eos_ids(cfg))
    assert hf_generate(m, prompt, n, True, pad) == new, "generate(use_cache=True) != manual greedy"
    assert hf_generate(m, prompt, n, False, pad) == new, "generate(use_cache=False) != manual greedy"

    logits = logits_of(m, prompt)
    long_last = logits_of(m, long_ids)[-1]
    assert logits.shape == (len(prompt), cfg.vocab_size) and logits.dtype == np.float32
    assert long_last.shape == (cfg.vocab_size,)
    assert float(logits.std()) > 0.5, "logits nearly flat"
    # the last prompt position with the cache must match the full forward too
    with torch.no_grad():
        pre = m(torch.tensor([prompt[:-1]]), use_cache=True)
        step = m(torch.tensor([prompt[-1:]]), past_key_values=pre.past_key_values, use_cache=True)
    assert np.abs(step.logits[0, -1].numpy() - logits[-1]).max() <= LOGIT_TOL

    ref = numpy_forward(folder, prompt)
    ref_long = numpy_forward(folder, long_ids)[-1]
    d_prompt = float(np.abs(ref - logits).max())
    d_long = float(np.abs(ref_long - long_last).max())
    assert d_prompt <= LOGIT_TOL and d_long <= LOGIT_TOL, (v["name"], d_prompt, d_long)

    inv_hf = m.model.rotary_emb.inv_freq.float().numpy()
    inv_ref = inv_freq_f64(json.load(open(os.path.join(folder, "config.json"))))
    assert np.allclose(inv_hf, inv_ref, rtol=1e-6, atol=0), (inv_hf, inv_ref)
    rope = dict(cfg.rope_parameters)
    if rope["rope_type"] == "llama3":
        # the scaling must matter for these sizes: some frequencies kept, some divided by the
        # factor, some in the smoothed band between the two wavelength bounds
        plain = inv_freq_f64(dict(json.load(open(os.path.join(folder, "config.json"))),
                                  rope_parameters={"rope_theta": rope["rope_theta"]}))
        ratio = plain / inv_ref
        assert np.any(np.isclose(ratio, 1.0)), ratio
        assert np.any(np.isclose(ratio, rope["factor"])), ratio
        assert np.any((ratio > 1.0 + 1e-6) & (ratio < rope["factor"] - 1e-6)), ratio
        assert len(long_ids) > rope["original_max_position_embeddings"]

    np.save(os.path.join(folder, "logits.npy"), logits)
    cfg_json = json.load(open(os.path.join(folder, "config.json")))
    check_style(cfg_json, "v5")
    expected = {
        "prompt_ids": prompt,
        "logits_file": "logits.npy",
        "greedy": {"max_new_tokens": n, "ids": new, "min_margin": round(margin, 4)},
        "long": {"prompt_ids": long_ids, "last_logits": [float(x) for x in long_last]},
        "rope_inv_freq": [float(x) for x in inv_hf],
        "config_style": "v5",
        "weights_dtype": v["dtype"],
        "n_params": n_params,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "max_abs_diff_vs_float64_reference": {"prompt": d_prompt, "long_last": d_long},
        "notes": (f"{v['covers']}. Random weights, seed {v['seed']}. prompt_ids: batch 1, positions "
                  f"0..S-1. logits.npy: float32 [S, V] of LlamaForCausalLM.from_pretrained(dtype="
                  f"float32, attn_implementation='eager'), eval, no_grad. greedy.ids: the "
                  f"{n} NEW tokens of generate(do_sample=False, use_cache=True) (use_cache=False "
                  f"gives the same); min_margin: smallest top-1 minus top-2 logit over those steps. "
                  f"long: a {len(long_ids)}-token prompt, float32 logits of its last position. "
                  f"rope_inv_freq: the model's float32 inverse frequencies. Compare fp32 logits "
                  f"with max |diff| <= {LOGIT_TOL}."),
    }
    if "shard" in v:
        expected["n_shards"] = len(shards)
    if v["dtype"] == "bfloat16":
        expected["notes"] += (" Weights are stored as bf16; the expectations are the fp32 forward "
                              "of those bf16 values converted to fp32.")
    if v.get("text"):
        expected["prompt_text"] = prompt_text
        expected["prompt_ids_no_bos"] = tok.encode(prompt_text, add_special_tokens=False).ids
        assert expected["prompt_ids_no_bos"] == prompt[1:] and prompt[0] == cfg.bos_token_id
        expected["greedy"]["text"] = tok.decode(new)
        expected["greedy"]["full_text"] = tok.decode(prompt + new)  # special tokens skipped
        expected["long"]["prompt_text"] = TEXT_LONG
        expected["chat"] = write_text_files(folder, tok)
        expected["notes"] += (" prompt_ids: tokenizers' encode(prompt_text), whose post-processor "
                              "prepends <|begin_text|> (700); prompt_ids_no_bos: add_special_tokens="
                              "False. greedy.text: decode of the new ids (skip_special_tokens=True). "
                              "chat: apply_chat_template of tokenizer_config.json's template, ids "
                              "encoded without adding specials (the template writes the BOS).")
    write_expected(os.path.join(folder, "expected.json"), expected)
    print(f"{v['name']:20s} params {n_params:6d} prompt {len(prompt):2d} new {new} margin "
          f"{margin:.3f} |d| vs f64 {d_prompt:.1e}/{d_long:.1e}")
    return expected


def write_text_files(folder, tok):
    """tokenizer.json (copy of the committed llama3 test tokenizer) and a tokenizer_config.json
    shaped like Llama 3's; returns the chat-template expectation rendered by transformers."""
    shutil.copy(os.path.join(REPO, "tests", "data", "tokenizer", "llama3.json"),
                os.path.join(folder, "tokenizer.json"))
    write_config_json(os.path.join(folder, "tokenizer_config.json"), {
        "bos_token": "<|begin_text|>",
        "eos_token": "<|end_turn|>",
        "chat_template": CHAT_TEMPLATE,
        # Llama 3 ships true here; false keeps transformers' decode equal to tokenizers' decode
        "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": 128,
        "tokenizer_class": "PreTrainedTokenizerFast",
    })
    from transformers import AutoTokenizer
    hf_tok = AutoTokenizer.from_pretrained(folder)
    bos = tok.token_to_id("<|begin_text|>")
    assert hf_tok.bos_token_id == bos and hf_tok.eos_token_id == tok.token_to_id("<|end_turn|>")
    for text in TEXT_PROMPTS + [TEXT_LONG]:
        assert hf_tok(text).input_ids == tok.encode(text).ids
    out = {"messages": CHAT_MESSAGES, "add_generation_prompt": True}
    out["text"] = hf_tok.apply_chat_template(CHAT_MESSAGES, tokenize=False, add_generation_prompt=True)
    out["ids"] = tok.encode(out["text"], add_special_tokens=False).ids
    enc = hf_tok.apply_chat_template(CHAT_MESSAGES, tokenize=True, add_generation_prompt=True)
    enc = enc["input_ids"] if isinstance(enc, dict) or hasattr(enc, "keys") else enc
    assert list(enc) == out["ids"] and out["ids"][0] == bos and out["ids"].count(bos) == 1
    return out


def make_v4_copy(name, src_name, out_dir, expected_src):
    src, folder = os.path.join(out_dir, src_name), os.path.join(out_dir, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for f in os.listdir(src):
        if f.endswith(".safetensors") or f.endswith(".index.json") or f == "logits.npy":
            shutil.copyfile(os.path.join(src, f), os.path.join(folder, f))
    cfg5 = json.load(open(os.path.join(src, "config.json")))
    cfg4 = to_v4_style(cfg5)
    check_style(cfg4, "v4")
    write_config_json(os.path.join(folder, "config.json"), cfg4)
    gen5 = json.load(open(os.path.join(src, "generation_config.json")))
    write_config_json(os.path.join(folder, "generation_config.json"), generation_config_v4(gen5))

    # transformers 5 must read the 4.x file into the same rope parameters and the same logits
    c_src = LlamaConfig.from_pretrained(src)
    c_new = LlamaConfig.from_pretrained(folder)
    assert c_new.rope_parameters == c_src.rope_parameters, (c_new.rope_parameters, c_src.rope_parameters)
    m = load_hf(folder)
    logits = logits_of(m, expected_src["prompt_ids"])
    assert np.array_equal(logits, np.load(os.path.join(src, "logits.npy")))
    long_last = logits_of(m, expected_src["long"]["prompt_ids"])[-1]
    assert [float(x) for x in long_last] == expected_src["long"]["last_logits"]
    ref = numpy_forward(folder, expected_src["prompt_ids"])  # the reference parses the 4.x keys
    assert np.abs(ref - logits).max() <= LOGIT_TOL

    expected = dict(expected_src)
    expected["config_style"] = "v4"
    expected["notes"] = (f"Same weights and expectations as {src_name} (safetensors and logits.npy "
                         f"are byte copies); config.json and generation_config.json rewritten by "
                         f"this script into the transformers {V4_STYLE_VERSION} layout: top-level "
                         f"rope_theta and rope_scaling (with rope_type), torch_dtype. "
                         + expected_src["notes"])
    write_expected(os.path.join(folder, "expected.json"), expected)
    print(f"{name:20s} 4.x-style copy of {src_name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "llama"))
    ap.add_argument("--tokenizer", default=os.path.join(REPO, "tests", "data", "tokenizer", "llama3.json"))
    args = ap.parse_args()
    major = int(transformers.__version__.split(".")[0])
    if major != 5:
        sys.exit(f"needs transformers 5.x (found {transformers.__version__}): the native config "
                 "style and the 4.x rewrite assume it")
    from tokenizers import Tokenizer
    torch.set_num_threads(1)  # fixed reduction order, so reruns give the same bytes
    transformers.logging.set_verbosity_error()
    os.makedirs(args.out, exist_ok=True)
    tok = Tokenizer.from_file(args.tokenizer)
    done = {}
    for v in VARIANTS:
        done[v["name"]] = make_variant(v, args.out, tok)
    for name, src in V4_COPIES.items():
        make_v4_copy(name, src, args.out, done[src])
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.out) for f in fs)
    print(f"total {total / 1e6:.2f} MB in {args.out}")


if __name__ == "__main__":
    main()
