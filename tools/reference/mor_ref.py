#!/usr/bin/env python3
"""Muninn's own fp32 PyTorch reference for Mixture-of-Recursions (MoR, Bae et al. 2025) on a Llama
decoder. Written from the semantics of the paper's training/eval code (not copied from it); the
exact rules implemented, and where this file had to choose, are listed in tools/reference/README.md
("Mixture-of-Recursions reference").

Pieces:

* Llama layer maths as transformers computes it: pre-norm RMSNorm (fp32 variance, cast back to the
  input dtype before the weight multiply), rotate-half RoPE with fp32 inv_freq, GQA, softmax in
  fp32, scale head_dim^-0.5, SwiGLU, no biases.
* Parameter sharing (`sharing_layout`): cycle, sequence, middle_cycle, middle_sequence, with the
  reference's rule for an unrolled depth that the recursion count does not divide (layers are
  dropped: linspace + half-even rounding).
* `RecursiveModel`-style plain forward over the unrolled stack for all four strategies
  (`MoRModel.forward_recursive`: every token through every layer, no routing).
* Per-recursion copies of the shared block (`block_layers(r)`): every recursion stores its own
  copy of the block in a checkpoint; they are the same tensors when tied (cycle strategies),
  follow the sharing map under the sequence strategies (recursion r's layer l is unrolled layer
  l + r·B after the first layer, as the reference's MoR transform places it), and hold their own
  values where a model was saved with untied copies (`untie`: the reference's expert-choice
  transform creates a fresh attention module per recursion, so a model trained with it holds a
  different attention at every recursion). Every forward runs recursion r with its own copy.
* MoR routing (the reference's MoR code runs cycle and middle_cycle; with per-recursion copies
  the sequence strategies run too):
  - expert-choice, mode "scoring" (`forward_scoring`): the reference's non-causal top-k over the
    whole sequence;
  - expert-choice, mode "decode" (`forward_decode`): the causal threshold rule, usable with the
    per-(recursion, layer) ragged KV cache (`MoRCache`), so one forward of the whole sequence and
    a token-by-token decode give the same logits;
  - token-choice (`forward_token`): top-1 over Nr depths, causal, cached or not;
  - recursive KV sharing (`kv_sharing=True`): recursion 0 writes K/V of every token, deeper
    recursions reuse recursion 0's K/V of the same layer-in-block.
* `save(dir)` / `MoRModel.load(dir)`: the reference's HF-Trainer checkpoint layout (config.json =
  LlamaConfig + a "mor" block, pytorch_model.bin with every recursion copy of a tied tensor pointing
  at one storage, untied copies stored apart) plus a reference-style Hydra `mor.yaml`.

Everything is per batch row (sequences never padded), fp32, CPU.
"""
import json
import math
import os
import zipfile
from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import torch
import torch.nn.functional as F

PROJ = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
NORMS = ("input_layernorm", "post_attention_layernorm")
LAYER_KEYS = PROJ + NORMS

SHARINGS = ("cycle", "sequence", "middle_cycle", "middle_sequence")


# ----------------------------------------------------------------------------------------------
# configuration


@dataclass
class MoRConfig:
    # Llama part
    vocab_size: int = 64
    hidden_size: int = 32
    intermediate_size: int = 64
    num_hidden_layers: int = 8        # L as configured, BEFORE the non-divisible drop
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 128
    tie_word_embeddings: bool = True
    # recursion / MoR part (names follow the reference's YAML)
    num_recursion: int = 3
    sharing: str = "middle_cycle"
    ln_share: bool = True
    type: str = "expert"              # "expert" | "token"
    capacity: Optional[List[float]] = None   # None -> (Nr - r) / Nr
    router_type: str = "linear"       # "linear" | "mlp"
    router_func: Optional[str] = "sigmoid"   # expert: "sigmoid" | "tanh" | None; token: "softmax" | "sigmoid"
    alpha: float = 0.1
    temp: float = 1.0
    balancing: str = "loss"           # token only: "loss" | "loss_free" (loss_free -> router_bias)
    kv_sharing: bool = False

    def __post_init__(self):
        assert self.sharing in SHARINGS, self.sharing
        assert self.type in ("expert", "token"), self.type
        assert self.router_type in ("linear", "mlp"), self.router_type
        assert self.ln_share, "only ln_share=True (every released config) is implemented"
        if self.type == "expert":
            assert self.router_func in ("sigmoid", "tanh", None), self.router_func
        else:
            assert self.router_func in ("softmax", "sigmoid"), self.router_func
        assert self.balancing in ("loss", "loss_free"), self.balancing
        assert self.hidden_size % self.num_attention_heads == 0
        assert self.num_attention_heads % self.num_key_value_heads == 0
        if self.capacity is None:
            # the reference fills the default as the strings str((Nr - r) / Nr) and parses them back
            self.capacity = [float(str((self.num_recursion - r) / self.num_recursion))
                             for r in range(self.num_recursion)]
        self.capacity = [float(c) for c in self.capacity]
        assert len(self.capacity) == self.num_recursion
        assert all(a >= b for a, b in zip(self.capacity, self.capacity[1:])), "capacity must not increase"
        if self.kv_sharing:
            assert self.capacity[0] == 1.0, "KV sharing needs every token at recursion 0"

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads

    @property
    def middle(self):
        return self.sharing.startswith("middle")

    @property
    def layout(self):
        return sharing_layout(self.num_hidden_layers, self.num_recursion, self.sharing)

    @property
    def block_depth(self):
        return self.layout["block_depth"]

    def mor_block(self):
        """The "mor" block of config.json (our own format; names mirror the reference's YAML)."""
        lay = self.layout
        return {
            "num_recursion": self.num_recursion,
            "sharing": self.sharing,
            "ln_share": self.ln_share,
            "type": self.type,
            "router_type": self.router_type,
            "router_func": self.router_func,
            "alpha": self.alpha,
            "capacity": list(self.capacity),
            "temp": self.temp,
            "balancing": self.balancing if self.type == "token" else None,
            "kv_sharing": {"enable": self.kv_sharing},
            "block_depth": lay["block_depth"],
            "num_hidden_layers_configured": self.num_hidden_layers,
            "kept_layers": lay["kept"],
        }

    def llama_config_dict(self):
        """config.json: transformers' LlamaConfig for the unrolled (post-drop) depth + "mor"."""
        from transformers import LlamaConfig
        lay = self.layout
        c = LlamaConfig(
            vocab_size=self.vocab_size, hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size, num_hidden_layers=len(lay["kept"]),
            num_attention_heads=self.num_attention_heads,
            num_key_value_heads=self.num_key_value_heads, head_dim=self.head_dim,
            rms_norm_eps=self.rms_norm_eps, max_position_embeddings=self.max_position_embeddings,
            rope_parameters={"rope_type": "default", "rope_theta": self.rope_theta},
            tie_word_embeddings=self.tie_word_embeddings, hidden_act="silu",
            attention_bias=False, mlp_bias=False, architectures=["MoRLlamaForCausalLM"],
            dtype="float32")
        d = c.to_diff_dict()  # what save_pretrained writes (defaults of PretrainedConfig omitted)
        d["mor"] = self.mor_block()
        return d

    @classmethod
    def from_config_json(cls, d):
        m = d["mor"]
        rp = d.get("rope_parameters") or {}
        theta = rp.get("rope_theta", d.get("rope_theta", 10000.0))
        return cls(vocab_size=d["vocab_size"], hidden_size=d["hidden_size"],
                   intermediate_size=d["intermediate_size"],
                   num_hidden_layers=m["num_hidden_layers_configured"],
                   num_attention_heads=d["num_attention_heads"],
                   num_key_value_heads=d["num_key_value_heads"], rms_norm_eps=d["rms_norm_eps"],
                   rope_theta=float(theta), max_position_embeddings=d["max_position_embeddings"],
                   tie_word_embeddings=d["tie_word_embeddings"],
                   num_recursion=m["num_recursion"], sharing=m["sharing"], ln_share=m["ln_share"],
                   type=m["type"], capacity=m["capacity"], router_type=m["router_type"],
                   router_func=m["router_func"], alpha=m["alpha"], temp=m["temp"],
                   balancing=m["balancing"] or "loss", kv_sharing=m["kv_sharing"]["enable"])

    def yaml_text(self):
        """A reference-style Hydra config holding the same settings (capacity is the
        comma-joined string the reference parses with split(','))."""
        def s(v):
            if v is None:
                return "null"
            if isinstance(v, bool):
                return "true" if v else "false"
            return str(v)
        cap = ",".join(repr(float(c)) for c in self.capacity)
        expert_func = self.router_func if self.type == "expert" else "sigmoid"
        token_func = self.router_func if self.type == "token" else "softmax"
        return "\n".join([
            "# MoR settings in the layout of the reference's Hydra configs (conf/pretrain/*.yaml).",
            "recursive:",
            "  enable: true",
            f"  num_recursion: {self.num_recursion}",
            f"  sharing: {self.sharing}",
            f"  ln_share: {s(self.ln_share)}",
            "mor:",
            "  enable: true",
            f"  type: {self.type}",
            f"  capacity: '{cap}'",
            f"  router_type: {self.router_type}",
            f"  temp: {s(float(self.temp))}",
            "  expert:",
            f"    router_func: {s(expert_func)}",
            f"    alpha: {s(float(self.alpha)) if self.type == 'expert' else '0.1'}",
            "    sampling: aux_loss",
            "    gating: weighted",
            "  token:",
            f"    router_func: {s(token_func)}",
            f"    alpha: {s(float(self.alpha)) if self.type == 'token' else '1.0'}",
            f"    balancing: {self.balancing if self.type == 'token' else 'loss'}",
            "kv_sharing:",
            f"  enable: {s(self.kv_sharing)}",
            "",
        ])


def sharing_layout(L, Nr, sharing):
    """Layer -> weight-set map of the reference's parameter sharing.

    Returns dict(block_depth=B, kept=[original layer index of every unrolled layer],
    owner=[for unrolled layer p, the unrolled index whose weights it uses]).
    If B·Nr (+2) != L the reference drops layers: keep round(x) for x in linspace(0, L-1, B·Nr)
    (middle variants: linspace(1, L-2, B·Nr) plus the first and the last layer), half-even."""
    assert sharing in SHARINGS
    middle = sharing.startswith("middle")
    B = (L - 2) // Nr if middle else L // Nr
    assert B >= 1, "not enough layers"
    n = B * Nr
    if middle:
        inner = list(range(1, L - 1)) if n == L - 2 else \
            [int(v) for v in np.round(np.linspace(1, L - 2, n))]
        kept = [0] + inner + [L - 1]
    else:
        kept = list(range(L)) if n == L else [int(v) for v in np.round(np.linspace(0, L - 1, n))]
    owner = []
    for p in range(len(kept)):
        if sharing == "cycle":
            owner.append(p % B)
        elif sharing == "sequence":
            owner.append(p // Nr)
        elif p == 0 or p == len(kept) - 1:
            owner.append(p)
        elif sharing == "middle_cycle":
            owner.append(1 + (p - 1) % B)
        else:
            owner.append(1 + (p - 1) // Nr)
    return dict(block_depth=B, kept=kept, owner=owner)


# ----------------------------------------------------------------------------------------------
# Llama maths


def rms_norm(x, w, eps):
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return w * xf.to(x.dtype)


def rope_inv_freq(head_dim, theta):
    return 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_rope(x, pos, inv_freq):
    """x [n, heads, D] at absolute positions pos [n]."""
    f = pos.float()[:, None] * inv_freq[None, :]
    emb = torch.cat((f, f), dim=-1)
    cos, sin = emb.cos()[:, None, :].to(x.dtype), emb.sin()[:, None, :].to(x.dtype)
    return x * cos + rotate_half(x) * sin


def attention(q, k, v, q_pos, k_pos):
    """q [n,H,D]; k, v [m,Hkv,D]; causal by absolute position (key allowed iff k_pos <= q_pos).
    Query head h reads KV head h // (H / Hkv)."""
    H, D = q.shape[1], q.shape[2]
    rep = H // k.shape[1]
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    s = torch.einsum("nhd,mhd->hnm", q, k) * D ** -0.5
    s = s.masked_fill(k_pos[None, None, :] > q_pos[None, :, None], float("-inf"))
    p = torch.softmax(s.float(), dim=-1).to(q.dtype)
    return torch.einsum("hnm,mhd->nhd", p, v)


class KV:
    """One cache slot: K (after RoPE), V and the absolute positions of the tokens it holds."""

    def __init__(self, cfg):
        self.k = torch.zeros(0, cfg.num_key_value_heads, cfg.head_dim)
        self.v = torch.zeros(0, cfg.num_key_value_heads, cfg.head_dim)
        self.pos = torch.zeros(0, dtype=torch.long)

    def append(self, k, v, pos):
        self.k = torch.cat([self.k.to(k.dtype), k])
        self.v = torch.cat([self.v.to(v.dtype), v])
        self.pos = torch.cat([self.pos, pos])

    def __len__(self):
        return self.pos.numel()


def decoder_layer(cfg, w, x, pos, inv_freq, slot=None, shared=None):
    """One Llama decoder layer (output includes the residual) on the tokens x [n, d] at absolute
    positions pos [n]. Attention is causal by position over `slot`'s earlier entries plus these
    tokens; the new K/V are appended to `slot` (a KV, or None for a throw-away slot).
    shared: a KV holding another layer's K/V (recursive KV sharing): then no K/V projection runs,
    nothing is written, and the queries attend to `shared` (causal by position)."""
    n, H, Hkv, D = x.shape[0], cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    h = rms_norm(x, w["input_layernorm"], cfg.rms_norm_eps)
    q = apply_rope((h @ w["self_attn.q_proj"].T).view(n, H, D), pos, inv_freq)
    if shared is not None:
        K, V, P = shared.k, shared.v, shared.pos
    else:
        k = apply_rope((h @ w["self_attn.k_proj"].T).view(n, Hkv, D), pos, inv_freq)
        v = (h @ w["self_attn.v_proj"].T).view(n, Hkv, D)
        if slot is None:
            slot = KV(cfg)
        slot.append(k, v, pos)
        K, V, P = slot.k, slot.v, slot.pos
    a = attention(q, K, V, pos, P).reshape(n, H * D)
    x = x + a @ w["self_attn.o_proj"].T
    h = rms_norm(x, w["post_attention_layernorm"], cfg.rms_norm_eps)
    return x + (F.silu(h @ w["mlp.gate_proj"].T) * (h @ w["mlp.up_proj"].T)) @ w["mlp.down_proj"].T


class MoRCache:
    """Per batch row, one KV per slot: "first", ("rec", r, l), "last" (and ("layer", p) for the
    plain recursive forward). Slots at recursion r hold only the tokens that ran recursion r, so
    their lengths differ per row and per recursion (ragged)."""

    def __init__(self, cfg, batch):
        self.cfg = cfg
        self.rows = [dict() for _ in range(batch)]
        self.length = 0  # tokens seen per row (rows are never padded)

    def slot(self, b, name):
        if name not in self.rows[b]:
            self.rows[b][name] = KV(self.cfg)
        return self.rows[b][name]

    def lengths(self, b):
        return {k: len(v) for k, v in self.rows[b].items()}


# ----------------------------------------------------------------------------------------------
# the model


def _rand(shape, g, mean=0.0, std=1.0):
    return torch.randn(shape, generator=g) * std + mean


class MoRModel:
    """Weights: embed [V,d], lm_head (the same tensor when tied), norm [d]; first / last: the
    unshared layers of the middle variants (None for cycle); block[l], l < B: the shared layers;
    routers: expert -> one per recursion, token -> one with Nr outputs. A router is a dict:
    linear {"w": [out,d]}, mlp {"w0": [2d,d], "w2": [out,2d]} (Linear, GELU, Linear)."""

    def __init__(self, cfg: MoRConfig):
        self.cfg = cfg
        self.inv_freq = rope_inv_freq(cfg.head_dim, cfg.rope_theta)
        self.weights = None

    # -- weights --------------------------------------------------------------------------------

    def _layer_shapes(self):
        c = self.cfg
        d, i, kvd = c.hidden_size, c.intermediate_size, c.num_key_value_heads * c.head_dim
        return {"self_attn.q_proj": (d, d), "self_attn.k_proj": (kvd, d),
                "self_attn.v_proj": (kvd, d), "self_attn.o_proj": (d, d),
                "mlp.gate_proj": (i, d), "mlp.up_proj": (i, d), "mlp.down_proj": (d, i),
                "input_layernorm": (d,), "post_attention_layernorm": (d,)}

    def init_weights(self, seed, router_std=0.2, bias_std=0.05):
        """Random golden weights (every tensor random, norms ~ N(1, 0.1)); scales as in the Llama
        fixtures so the layers dominate the residual stream and the logits spread."""
        c = self.cfg
        g = torch.Generator().manual_seed(seed)
        d = c.hidden_size

        def layer():
            w = {}
            for k, shp in self._layer_shapes().items():
                if k in NORMS:
                    w[k] = _rand(shp, g, 1.0, 0.1)
                elif k in ("self_attn.o_proj", "mlp.down_proj"):
                    w[k] = _rand(shp, g, 0.0, 0.3)
                else:
                    w[k] = _rand(shp, g, 0.0, 0.2)
            return w

        def router(out):
            if c.router_type == "linear":
                return {"w": _rand((out, d), g, 0.0, router_std)}
            return {"w0": _rand((2 * d, d), g, 0.0, router_std),
                    "w2": _rand((out, 2 * d), g, 0.0, router_std / math.sqrt(2))}

        W = {"embed": _rand((c.vocab_size, d), g, 0.0, 0.25), "norm": _rand((d,), g, 1.0, 0.1)}
        W["lm_head"] = W["embed"] if c.tie_word_embeddings else _rand((c.vocab_size, d), g, 0.0, 0.25)
        W["first"] = layer() if c.middle else None
        W["block"] = [layer() for _ in range(c.block_depth)]
        W["last"] = layer() if c.middle else None
        W["block_rec"] = self._sequence_copies(W["block"]) if c.sharing.endswith("sequence") else None
        if c.type == "expert":
            W["routers"] = [router(1) for _ in range(c.num_recursion)]
            W["router_bias"] = None
        else:
            W["routers"] = [router(c.num_recursion)]
            W["router_bias"] = _rand((c.num_recursion,), g, 0.0, bias_std) \
                if c.balancing == "loss_free" else None
        self.weights = W
        return self

    def _sequence_copies(self, block):
        """Recursion r's block under a sequence strategy: unrolled layer p = off + l + r·B (the
        MoR transform's placement) runs the weights of its owner in the sharing map; `block`
        holds the unique shared layers in owner order."""
        c, lay = self.cfg, self.cfg.layout
        off, B = (1 if c.middle else 0), c.block_depth
        owners = sorted(set(lay["owner"][off:off + B * c.num_recursion]))
        rank = {o: j for j, o in enumerate(owners)}
        return [[block[rank[lay["owner"][off + l + r * B]]] for l in range(B)]
                for r in range(c.num_recursion)]

    def block_layers(self, r):
        """The B layers recursion r runs: its own copies when the recursions' copies differ
        (block_rec), else the shared block."""
        rec = self.weights.get("block_rec")
        return rec[r] if rec else self.weights["block"]

    def untie(self, seed, keys=("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                "self_attn.o_proj"), recursions=None, same_as=None):
        """Gives recursions `recursions` (default: all) fresh random `keys` of every block layer,
        drawn as init_weights draws them: a model saved with untied copies (the reference's
        expert transform creates the attention anew per recursion). same_as {r: r2}: recursion r
        gets a separate tensor with recursion r2's values (equal, but not the same storage)."""
        c, W = self.cfg, self.weights
        g = torch.Generator().manual_seed(seed)
        shapes = self._layer_shapes()
        rec = W.get("block_rec") or [list(W["block"]) for _ in range(c.num_recursion)]
        rec = [[dict(w) for w in layers] for layers in rec]
        for r in (range(c.num_recursion) if recursions is None else recursions):
            for l in range(c.block_depth):
                for k in keys:
                    if k in NORMS:
                        rec[r][l][k] = _rand(shapes[k], g, 1.0, 0.1)
                    elif k in ("self_attn.o_proj", "mlp.down_proj"):
                        rec[r][l][k] = _rand(shapes[k], g, 0.0, 0.3)
                    else:
                        rec[r][l][k] = _rand(shapes[k], g, 0.0, 0.2)
        for r, r2 in (same_as or {}).items():
            for l in range(c.block_depth):
                for k in keys:
                    rec[r][l][k] = rec[r2][l][k].clone()
        W["block_rec"] = rec
        W["block"] = rec[0] if not c.sharing.endswith("sequence") else W["block"]
        return self

    def tied(self):
        """A copy that runs recursion 0's block at every recursion (what a loader that ignored the
        other copies would run)."""
        m = MoRModel(self.cfg)
        m.weights = dict(self.weights)
        m.weights["block_rec"] = None
        m.weights["block"] = self.block_layers(0)
        return m

    def to(self, dtype):
        """A copy with every weight in `dtype` (float64 for exactness checks; RoPE angles stay
        fp32 as in transformers, cos / sin are then cast to the activation dtype)."""
        def cv(o):
            if isinstance(o, torch.Tensor):
                return o.to(dtype)
            if isinstance(o, dict):
                return {k: cv(v) for k, v in o.items()}
            if isinstance(o, list):
                return [cv(v) for v in o]
            return o
        m = MoRModel(self.cfg)
        m.weights = cv(self.weights)
        if self.cfg.tie_word_embeddings:
            m.weights["lm_head"] = m.weights["embed"]
        return m

    # -- pieces ---------------------------------------------------------------------------------

    def router_logits(self, r, x):
        """Raw router output for hidden states x [n, d] (input divided by temp): [n, out]."""
        R = self.weights["routers"][r]
        x = x / self.cfg.temp
        if self.cfg.router_type == "linear":
            return x @ R["w"].T
        return F.gelu(x @ R["w0"].T) @ R["w2"].T

    def expert_gate(self, logit):
        c = self.cfg
        if c.router_func == "sigmoid":
            return c.alpha * torch.sigmoid(logit)
        if c.router_func == "tanh":
            return c.alpha * torch.tanh(logit)
        return logit

    def expert_continue(self, logit):
        """Decode-rule decision: sigmoid(logit) >= 0.5; tanh(logit) >= 0; no gate: logit >= 0."""
        if self.cfg.router_func == "sigmoid":
            return torch.sigmoid(logit) >= 0.5
        if self.cfg.router_func == "tanh":
            return torch.tanh(logit) >= 0
        return logit >= 0

    def block(self, x, pos, r, cache_row=None):
        """The B shared layers at recursion r on tokens x [n,d] (absolute positions pos [n]).
        Without KV sharing each (r, l) has its own slot; with it, r = 0 writes slot (0, l) and
        r >= 1 reads slot (0, l) (which must already hold every token up to these positions)."""
        for l, w in enumerate(self.block_layers(r)):
            if self.cfg.kv_sharing and r > 0:
                x = decoder_layer(self.cfg, w, x, pos, self.inv_freq, shared=cache_row(("rec", 0, l)))
            else:
                slot = cache_row(("rec", r, l)) if cache_row is not None else None
                x = decoder_layer(self.cfg, w, x, pos, self.inv_freq, slot=slot)
        return x

    def head(self, x):
        return rms_norm(x, self.weights["norm"], self.cfg.rms_norm_eps) @ self.weights["lm_head"].T

    def _rows(self, ids, cache):
        ids = torch.as_tensor(ids, dtype=torch.long)
        if ids.dim() == 1:
            ids = ids[None]
        if cache is None:
            cache = MoRCache(self.cfg, ids.shape[0])
        assert len(cache.rows) == ids.shape[0]
        return ids, cache

    # -- plain recursive forward (no routing), all four strategies -------------------------------

    @torch.no_grad()
    def forward_recursive(self, ids):
        """Every token through every unrolled layer, weights by sharing_layout's owner map.
        (Only meaningful for weights built for the strategy: the unique layers are first, block,
        last for the middle variants; block for cycle / sequence.)"""
        c = self.cfg
        ids, _ = self._rows(ids, None)
        out = []
        for b in range(ids.shape[0]):
            T = ids.shape[1]
            pos = torch.arange(T)
            x = self.weights["embed"][ids[b]]
            for w in self.unrolled_layers():
                x = decoder_layer(c, w, x, pos, self.inv_freq)
            out.append(self.head(x))
        return torch.stack(out)

    def unrolled_layers(self):
        """The weights of every unrolled layer in order: first, recursion r's layer l at
        off + l + r·B, last."""
        c = self.cfg
        layers = [self.weights["first"]] if c.middle else []
        for r in range(c.num_recursion):
            layers += self.block_layers(r)
        return layers + ([self.weights["last"]] if c.middle else [])

    # -- expert-choice, reference scoring ------------------------------------------------------

    def capacity_k(self, r, T):
        return max(1, int(self.cfg.capacity[r] * T))

    @torch.no_grad()
    def forward_scoring(self, ids):
        """Expert-choice as the reference scores a whole sequence (non-causal top-k).
        Returns logits [B,T,V] and info: per row, per recursion, "selected" (ascending full
        positions), "logits" (router logits of the candidates, in candidate order), "candidates",
        "k", and "margin" (gap between the k-th and (k+1)-th candidate logit; inf if k = all)."""
        c = self.cfg
        assert c.type == "expert"
        ids, _ = self._rows(ids, None)
        B, T = ids.shape
        out, info = [], []
        for b in range(B):
            pos = torch.arange(T)
            x = self.weights["embed"][ids[b]]
            if c.middle:
                x = decoder_layer(c, self.weights["first"], x, pos, self.inv_freq)
            rec0 = {}  # KV sharing: recursion 0's K/V of every token, per layer-in-block

            def row(name):
                if name not in rec0:
                    rec0[name] = KV(c)
                return rec0[name]

            cand = pos
            steps = []
            for r in range(c.num_recursion):
                logit = self.router_logits(r, x[cand])[:, 0]
                g = self.expert_gate(logit)
                k = self.capacity_k(r, T)
                assert k <= cand.numel()
                vals, idx = torch.topk(g, k, sorted=False)
                order = torch.argsort(idx)
                idx, vals = idx[order], vals[order]
                sel = cand[idx]
                srt = torch.sort(logit, descending=True).values
                margin = float(srt[k - 1] - srt[k]) if k < cand.numel() else float("inf")
                y = self.block(x[sel], sel, r, cache_row=row if c.kv_sharing else None)
                x = x.index_add(0, sel, vals[:, None] * y)  # H += g * f(H) (f includes residual)
                steps.append(dict(candidates=cand.tolist(), logits=logit.tolist(), k=k,
                                  selected=sel.tolist(), margin=margin))
                cand = sel
            if c.middle:
                x = decoder_layer(c, self.weights["last"], x, pos, self.inv_freq)
            out.append(self.head(x))
            info.append(steps)
        return torch.stack(out), info

    # -- expert-choice, causal decode rule -----------------------------------------------------

    @torch.no_grad()
    def forward_decode(self, ids, cache=None):
        """Expert-choice with the causal rule: recursion 0 always runs; recursion r >= 1 runs for
        a token iff it ran r-1 and sigmoid(logit_r) >= 0.5 (tanh: tanh >= 0); the applied gate is
        still alpha*sigmoid(logit_r). Recursion r attends over the tokens that ran r (slot (r,l)),
        causally. `ids` [B,n] are the next n tokens after what `cache` holds (one call with the
        whole sequence == n calls of one token). Returns logits [B,n,V], info: "depth" [B][n],
        "logits" [B][n][r] router logits evaluated (None where not evaluated), "cache"."""
        c = self.cfg
        assert c.type == "expert"
        ids, cache = self._rows(ids, cache)
        B, n = ids.shape
        pos = torch.arange(cache.length, cache.length + n)
        out, depth, rlog = [], [], []
        for b in range(B):
            slot = lambda name, b=b: cache.slot(b, name)  # noqa: E731
            x = self.weights["embed"][ids[b]]
            if c.middle:
                x = decoder_layer(c, self.weights["first"], x, pos, self.inv_freq, slot=slot("first"))
            act = torch.arange(n)
            dep = torch.zeros(n, dtype=torch.long)
            lg = [[None] * c.num_recursion for _ in range(n)]
            for r in range(c.num_recursion):
                if act.numel() == 0:
                    break
                logit = self.router_logits(r, x[act])[:, 0]
                for i, t in enumerate(act.tolist()):
                    lg[t][r] = float(logit[i])
                g = self.expert_gate(logit)
                if r > 0:
                    keep = self.expert_continue(logit)
                    act, g = act[keep], g[keep]
                    if act.numel() == 0:
                        break
                y = self.block(x[act], pos[act], r, cache_row=slot)
                x = x.index_add(0, act, g[:, None] * y)
                dep[act] += 1
            if c.middle:
                x = decoder_layer(c, self.weights["last"], x, pos, self.inv_freq, slot=slot("last"))
            out.append(self.head(x))
            depth.append(dep.tolist())
            rlog.append(lg)
        cache.length += n
        return torch.stack(out), dict(depth=depth, logits=rlog, cache=cache)

    # -- token-choice ---------------------------------------------------------------------------

    @torch.no_grad()
    def forward_token(self, ids, cache=None):
        """Token-choice (top-1 over depths), causal; `cache` as in forward_decode.
        Returns logits [B,n,V], info: "choice" j* [B][n] (the token runs j*+1 recursions),
        "probs" [B][n][Nr] (p, unbiased), "margin" [B][n] (best minus second best of p + bias)."""
        c = self.cfg
        assert c.type == "token"
        ids, cache = self._rows(ids, cache)
        B, n = ids.shape
        pos = torch.arange(cache.length, cache.length + n)
        out, choice, probs, margins = [], [], [], []
        for b in range(B):
            slot = lambda name, b=b: cache.slot(b, name)  # noqa: E731
            x = self.weights["embed"][ids[b]]
            if c.middle:
                x = decoder_layer(c, self.weights["first"], x, pos, self.inv_freq, slot=slot("first"))
            z = self.router_logits(0, x)
            p = (torch.sigmoid(z) if c.router_func == "sigmoid" else torch.softmax(z, -1)) * c.alpha
            psel = p + self.weights["router_bias"] if c.balancing == "loss_free" else p
            j = psel.argmax(-1)
            top2 = torch.topk(psel, 2, dim=-1).values
            gate = p.gather(-1, j[:, None])
            h, final = x.clone(), x.clone()
            for r in range(c.num_recursion):
                act = (j >= r).nonzero()[:, 0]
                if act.numel() == 0:
                    break
                h[act] = self.block(h[act], pos[act], r, cache_row=slot)
                done = (j == r).nonzero()[:, 0]
                final[done] = x[done] + gate[done] * h[done]  # intermediate steps ungated
            x = final
            if c.middle:
                x = decoder_layer(c, self.weights["last"], x, pos, self.inv_freq, slot=slot("last"))
            out.append(self.head(x))
            choice.append(j.tolist())
            probs.append(p.tolist())
            margins.append((top2[:, 0] - top2[:, 1]).tolist())
        cache.length += n
        return torch.stack(out), dict(choice=choice, probs=probs, margin=margins, cache=cache)

    # -- convenience ----------------------------------------------------------------------------

    def forward_causal(self, ids, cache=None):
        """The causal forward of this model type: expert -> decode rule, token -> token-choice."""
        return (self.forward_decode if self.cfg.type == "expert" else self.forward_token)(ids, cache)

    @torch.no_grad()
    def generate_greedy(self, ids, n, cached=True):
        """Greedy continuation with the causal forward. Returns new ids [B,n], the logits of every
        step [n][B,V], and per fed position the per-token info (depth or choice) [B][P+n-1]."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        key = "depth" if self.cfg.type == "expert" else "choice"
        if cached:
            logits, info = self.forward_causal(ids)
            cache, fed = info["cache"], [list(v) for v in info[key]]
            steps, new = [logits[:, -1]], [logits[:, -1].argmax(-1)]
            for _ in range(n - 1):
                logits, info = self.forward_causal(new[-1][:, None], cache)
                for b in range(ids.shape[0]):
                    fed[b] += info[key][b]
                steps.append(logits[:, -1])
                new.append(logits[:, -1].argmax(-1))
        else:
            seq, steps, new = ids, [], []
            for _ in range(n):
                logits, info = self.forward_causal(seq)
                steps.append(logits[:, -1])
                new.append(logits[:, -1].argmax(-1))
                fed = info[key]
                seq = torch.cat([seq, new[-1][:, None]], 1)
        return torch.stack(new, 1), steps, fed

    @staticmethod
    def nll(logits, ids):
        """HF causal-LM loss: mean cross entropy of logits[:, :-1] against ids[:, 1:]."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        V = logits.shape[-1]
        return F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1)).item()

    # -- checkpoint ------------------------------------------------------------------------------

    def _layer_prefixes(self):
        """(prefix of the first layer, prefix of recursion r's block list, prefix of the last
        layer, prefix of the router of recursion r / of the token router)."""
        c, Nr = self.cfg, self.cfg.num_recursion
        o = 1 if c.middle else 0
        if c.type == "expert":
            return (("model.layers.0." if c.middle else None),
                    lambda r: f"model.layers.{o + r}.block.",
                    (f"model.layers.{Nr + 1}." if c.middle else None),
                    lambda r: f"model.layers.{o + r}.mor_router.router.")
        return (("model.layers.0." if c.middle else None),
                lambda r: f"model.layers.{o}.block_list.{r}.",
                ("model.layers.2." if c.middle else None),
                lambda r: f"model.layers.{o}.mor_router.router.")

    def state_dict(self):
        """Reference key names; every recursion copy of a tied tensor IS the same tensor, so
        torch.save writes one storage per tied group; untied copies are stored apart."""
        c, W = self.cfg, self.weights
        first, block, last, router = self._layer_prefixes()
        sd = {"model.embed_tokens.weight": W["embed"]}
        if first:
            for k in LAYER_KEYS:
                sd[first + k + ".weight"] = W["first"][k]
        for r in range(c.num_recursion):
            for l, w in enumerate(self.block_layers(r)):
                for k in LAYER_KEYS:
                    sd[f"{block(r)}{l}.{k}.weight"] = w[k]
        nrouters = c.num_recursion if c.type == "expert" else 1
        for r in range(nrouters):
            R = W["routers"][r]
            if c.router_type == "linear":
                sd[router(r) + "weight"] = R["w"]
            else:  # nn.Sequential(Linear, GELU, Linear): indices 0 and 2
                sd[router(r) + "0.weight"] = R["w0"]
                sd[router(r) + "2.weight"] = R["w2"]
        if c.type == "token" and c.balancing == "loss_free":
            sd["model.layers.1.router_bias" if c.middle else "model.layers.0.router_bias"] = W["router_bias"]
        if last:
            for k in LAYER_KEYS:
                sd[last + k + ".weight"] = W["last"][k]
        sd["model.norm.weight"] = W["norm"]
        sd["lm_head.weight"] = W["lm_head"]
        return sd

    def save(self, folder):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(self.cfg.llama_config_dict(), f, indent=2, sort_keys=True)
            f.write("\n")
        with open(os.path.join(folder, "mor.yaml"), "w") as f:
            f.write(self.cfg.yaml_text())
        torch.save(self.state_dict(), os.path.join(folder, "pytorch_model.bin"))

    @classmethod
    def load(cls, folder):
        """Reads config.json + pytorch_model.bin with every recursion's copy of the block
        (block_rec when some copy differs from recursion 0's)."""
        cfg = MoRConfig.from_config_json(json.load(open(os.path.join(folder, "config.json"))))
        sd = torch.load(os.path.join(folder, "pytorch_model.bin"), map_location="cpu",
                        weights_only=True)
        m = cls(cfg)
        first, block, last, router = m._layer_prefixes()
        layer = lambda p: {k: sd[p + k + ".weight"] for k in LAYER_KEYS}  # noqa: E731
        W = {"embed": sd["model.embed_tokens.weight"], "norm": sd["model.norm.weight"],
             "lm_head": sd["lm_head.weight"]}
        W["first"] = layer(first) if first else None
        W["last"] = layer(last) if last else None
        rec = [[layer(f"{block(r)}{l}.") for l in range(cfg.block_depth)] for r in range(cfg.num_recursion)]
        W["block"] = rec[0]
        same = all(torch.equal(rec[r][l][k], rec[0][l][k]) for r in range(cfg.num_recursion)
                   for l in range(cfg.block_depth) for k in LAYER_KEYS)
        W["block_rec"] = None if same else rec
        nrouters = cfg.num_recursion if cfg.type == "expert" else 1
        W["routers"] = []
        for r in range(nrouters):
            if cfg.router_type == "linear":
                W["routers"].append({"w": sd[router(r) + "weight"]})
            else:
                W["routers"].append({"w0": sd[router(r) + "0.weight"], "w2": sd[router(r) + "2.weight"]})
        bk = "model.layers.1.router_bias" if cfg.middle else "model.layers.0.router_bias"
        W["router_bias"] = sd.get(bk)
        m.weights = W
        return m


def storage_records(path):
    """Names of the tensor-storage records inside a torch.save zip file."""
    with zipfile.ZipFile(path) as z:
        return sorted(n for n in z.namelist() if "/data/" in n and not n.endswith(".pkl"))
