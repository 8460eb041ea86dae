"""Muninn's own PyTorch reference implementation of Huginn-0125 (recurrent-depth "Raven").

Written from the Huginn-0125 paper and the behaviour of the released checkpoint and its
modelling code as docs/inference.md and docs/architecture.md describe it, not copied from the upstream
modelling file.  It is the oracle for the C++ golden tests and a
small, readable model for demos and training experiments.

Everything runs in float32.  Checkpoints in BF16/F16 are upcast to float32 on load, so the
reference output of a low-precision checkpoint is the output of the fp32 model whose weights
are the rounded values.

Public API (kept stable, other scripts import it):

    HuginnConfig                      dataclass, fields named like the HF config.json keys
                                      (plus two Muninn extensions: block_type "sandwich" |
                                      "pre_norm", and num_key_value_heads for GQA)
    Huginn(config)                    nn.Module, state_dict names == HF checkpoint names
      .forward(input_ids, num_steps, input_states=None, init="zero", cache=None,
               position_offset=None, return_latents=False, generator=None)
      .embed_inputs / .initialize_state / .iterate_one_step / .predict_from_latents
      .generate_greedy(ids, max_new_tokens, num_steps)         (uses a HuginnCache)
      .generate_greedy_nocache(ids, max_new_tokens, num_steps) (recomputes from scratch)
      .generate_adaptive(ids, max_new_tokens, num_steps, criterion, threshold, min_steps=0,
                         check_every=1, kv_budget=0, fallback="latest", warm=None, init="zero",
                         prefill="per-token", output="final")
                                      (per-token exits; the prompt is fed one
                                      token per forward, or in lockstep with criterion "none")
      .forward_adaptive_token(token, cache, num_steps, ...)    (one such forward)
      .forward_adaptive_prompt(tokens, cache, num_steps, criterion, ...)  (prompt forward with exits)
      .forward_adaptive_lockstep(tokens, cache, num_steps, init="zero", seed=0)
                                      (fixed-depth multi-token forward)
      .generate_parallel(ids, max_new_tokens, num_steps=32, inner_recurrence=4, ...)
                                      (diffusion-style sampler, greedy, counter-based random streams)
      .init_weights(seed, golden=False)
      .save_pretrained(dir, dtype=torch.float32, shards=1, include_freqs_cis=True,
                       duplicate_lm_head=True, omit_config_keys=())
      Huginn.from_pretrained(dir)
    HuginnCache                       one KV slot per executed block call
    AdaptiveKVCache                   per-token KV for adaptive decoding: latest / none fallback,
                                      kv_budget slot sharing (latest-m4, compress-s)
    HaltTracker                       exit criteria kl, entropy-diff, latent-diff, argmax-stable,
                                      cosine
    mix64 / counter_bits / derive_seed / truncated_normal_stream / counter_states
                                      Muninn's counter-based random numbers (include/muninn/core/random.hpp)
    compute_freqs_cis(head_dim, block_size, base)
    apply_rope(x, freqs), rms_norm(x, weight, eps)
    sample_num_steps(mean_recurrence, mean_backprop_depth, generator)
    load_safetensors_dir(dir) -> dict[name, tensor] (as stored, no upcast)
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "HuginnConfig",
    "Huginn",
    "HuginnCache",
    "AdaptiveKVCache",
    "HaltTracker",
    "SandwichBlock",
    "PreNormBlock",
    "RMSNorm",
    "CausalSelfAttention",
    "GatedMLP",
    "compute_freqs_cis",
    "apply_rope",
    "rms_norm",
    "sample_num_steps",
    "load_safetensors_dir",
]

NumSteps = Union[int, Tuple[int, int], Sequence[int]]


# ----------------------------------------------------------------------------------------------
# Config
# ----------------------------------------------------------------------------------------------
BLOCK_CLASS_NAMES = {"sandwich": "SandwichBlock", "pre_norm": "PreNormBlock"}


@dataclass
class HuginnConfig:
    """Run-time sizes of a Huginn model; field names follow the released config.json."""

    n_embd: int
    num_attention_heads: int
    intermediate_size: int
    vocab_size: int
    padded_vocab_size: int
    n_layers_in_prelude: int
    n_layers_in_recurrent_block: int
    n_layers_in_coda: int
    mean_recurrence: int
    block_size: int
    norm_eps: float = 1e-6
    qk_bias: bool = True
    bias: bool = False
    tie_embeddings: bool = True
    rope_base: float = 50000.0
    injection_type: str = "linear"
    init_scale: float = 1.0
    mean_backprop_depth: int = 8
    # Muninn extensions (not in the Huginn release).  block_type "pre_norm" is a Llama-style block
    # x = x + attn(norm_1(x)); x = x + mlp(norm_2(x)).  num_key_value_heads None means MHA.
    block_type: str = "sandwich"
    num_key_value_heads: Optional[int] = None

    def __post_init__(self) -> None:
        if self.n_embd % self.num_attention_heads != 0:
            raise ValueError(f"n_embd {self.n_embd} not divisible by heads {self.num_attention_heads}")
        if self.block_type not in ("sandwich", "pre_norm"):
            raise ValueError(f"block_type {self.block_type!r} not supported (sandwich|pre_norm)")
        if self.num_key_value_heads is not None:
            kv = self.num_key_value_heads
            if kv < 1 or self.num_attention_heads % kv != 0:
                raise ValueError(
                    f"num_attention_heads {self.num_attention_heads} not a multiple of num_key_value_heads {kv}"
                )
            if kv == self.num_attention_heads:
                self.num_key_value_heads = None  # plain MHA: one canonical spelling
            elif self.qk_bias:
                # qk_bias is [2, 1, H, D]: its k half has no meaning with fewer k heads.
                raise ValueError(
                    "Huginn has no GQA: num_key_value_heads must equal the head count "
                    f"when qk_bias is true (got {kv} kv heads for {self.num_attention_heads} heads)"
                )
        if self.head_dim % 2 != 0:
            raise ValueError(f"head_dim {self.head_dim} must be even for the pairwise RoPE")
        if self.injection_type not in ("linear", "add"):
            raise ValueError(f"injection_type {self.injection_type!r} not supported (linear|add)")
        if self.padded_vocab_size < self.vocab_size:
            raise ValueError("padded_vocab_size < vocab_size")

    # -- derived -------------------------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        return self.n_embd // self.num_attention_heads

    @property
    def n_heads(self) -> int:
        return self.num_attention_heads

    @property
    def n_kv_heads(self) -> int:
        return self.num_attention_heads if self.num_key_value_heads is None else self.num_key_value_heads

    @property
    def n_layers(self) -> int:
        return self.n_layers_in_prelude + self.n_layers_in_recurrent_block + self.n_layers_in_coda

    @property
    def effective_expected_depth(self) -> int:
        return (
            self.n_layers_in_prelude
            + self.n_layers_in_coda
            + self.n_layers_in_recurrent_block * self.mean_recurrence
        )

    @property
    def init_values(self) -> Dict[str, float]:
        """Init stds of the "takase" strategy."""
        std = math.sqrt(2.0 / (5.0 * self.n_embd))
        return {
            "std": std,
            "out_proj": std / math.sqrt(2.0 * self.effective_expected_depth),
            "embedding": std,
            "embed_scale": math.sqrt(self.n_embd),
        }

    # -- json ----------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict) -> "HuginnConfig":
        d = dict(d)
        # Aliases used by the HF config class.
        if "num_attention_heads" not in d and "n_heads" in d:
            d["num_attention_heads"] = d["n_heads"]
        if "n_embd" not in d and "hidden_size" in d:
            d["n_embd"] = d["hidden_size"]
        if "padded_vocab_size" not in d and "vocab_size" in d:
            d["padded_vocab_size"] = d["vocab_size"]
        if "head_dim" in d and d["head_dim"] != d["n_embd"] // d["num_attention_heads"]:
            raise ValueError("head_dim inconsistent with n_embd / heads")
        # block_type is the Muninn key; a Huginn config has only block_class_name. They must agree.
        by_class = {"SandwichBlock": "sandwich", "PreNormBlock": "pre_norm"}
        cls_name = d.get("block_class_name", "SandwichBlock")
        if cls_name not in by_class:
            raise ValueError(f"unsupported block_class_name {cls_name!r}")
        d.setdefault("block_type", by_class[cls_name])
        if "block_class_name" in d and by_class[cls_name] != d["block_type"]:
            raise ValueError(f"block_class_name {cls_name!r} contradicts block_type {d['block_type']!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @classmethod
    def from_json(cls, path: str) -> "HuginnConfig":
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        with open(path, "r", encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    def to_dict(self, torch_dtype: str = "float32", omit_keys: Iterable[str] = ()) -> dict:
        """A dict shaped like the released config.json (plus num_attention_heads for clarity)."""
        iv = self.init_values
        d = {
            "activation_checkpoint_impl": "per-iteration",
            "architecture_class_name": "RecurrentGPT",
            "architectures": ["RavenForCausalLM"],
            "bias": self.bias,
            "block_class_name": BLOCK_CLASS_NAMES[self.block_type],
            "block_size": self.block_size,
            "effective_expected_depth": self.effective_expected_depth,
            "head_dim": self.head_dim,
            "init_orthogonal": False,
            "init_scale": self.init_scale,
            "init_strategy": "takase",
            "init_values": iv,
            "injection_type": self.injection_type,
            "intermediate_size": self.intermediate_size,
            "mean_backprop_depth": self.mean_backprop_depth,
            "mean_recurrence": self.mean_recurrence,
            "mlp_class_name": "GatedMLP",
            "model_type": "huginn_raven",
            "n_embd": self.n_embd,
            "n_heads": self.num_attention_heads,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.n_kv_heads,
            "n_layers": self.n_layers,
            "n_layers_in_coda": self.n_layers_in_coda,
            "n_layers_in_prelude": self.n_layers_in_prelude,
            "n_layers_in_recurrent_block": self.n_layers_in_recurrent_block,
            "nonlin_name": "SiLU",
            "norm_class_name": "RMSNorm_llama",
            "norm_eps": self.norm_eps,
            "padded_vocab_size": self.padded_vocab_size,
            "padding_multiple": 64,
            "qk_bias": self.qk_bias,
            "rope_base": self.rope_base,
            "sampling_scheme": "poisson-lognormal-filling",
            "state_init": "like-init",
            "test_time_noise": 0,
            "test_time_noise_type": "fixed",
            "tie_embeddings": self.tie_embeddings,
            "torch_dtype": torch_dtype,
            "transformers_version": "4.44.2",
            "vocab_size": self.vocab_size,
        }
        if self.block_type != "sandwich":
            d["block_type"] = self.block_type
        for k in omit_keys:
            d.pop(k, None)
        return d

    def to_json(self, path: str, torch_dtype: str = "float32", omit_keys: Iterable[str] = ()) -> None:
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(torch_dtype, omit_keys), f, indent=2, sort_keys=True)
            f.write("\n")


# ----------------------------------------------------------------------------------------------
# Elementary functions (module level so tests can swap them for deliberately wrong variants)
# ----------------------------------------------------------------------------------------------
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm_llama: statistics in fp32, cast back to x.dtype, then the weight."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return y.to(x.dtype) * weight


def compute_freqs_cis(head_dim: int, block_size: int, base: float) -> torch.Tensor:
    """RoPE table [1, block_size, 1, head_dim/2, 2] (cos, sin), fp32 arithmetic."""
    exps = torch.arange(0, head_dim, 2, dtype=torch.float32)[: head_dim // 2] / head_dim
    inv_freq = 1.0 / (float(base) ** exps)
    t = torch.arange(block_size, dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)
    table = torch.stack([torch.cos(freqs), torch.sin(freqs)], dim=-1)
    return table.view(1, block_size, 1, head_dim // 2, 2)


def rope_inv_freq(head_dim: int, base: float) -> torch.Tensor:
    exps = torch.arange(0, head_dim, 2, dtype=torch.float32)[: head_dim // 2] / head_dim
    return 1.0 / (float(base) ** exps)


def apply_rope(x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    """Interleaved-pair rotation. x [B,S,H,D], freqs [1,S,1,D/2,2]; computed in fp32."""
    B, S, H, D = x.shape
    xp = x.float().reshape(B, S, H, D // 2, 2)
    xr, xi = xp[..., 0], xp[..., 1]
    c, s = freqs[..., 0].float(), freqs[..., 1].float()
    out = torch.stack([xr * c - xi * s, xi * c + xr * s], dim=-1)
    return out.reshape(B, S, H, D).to(x.dtype)


def causal_mask(q_len: int, kv_len: int, device=None) -> Optional[torch.Tensor]:
    """Mask rules. None means no mask; True entries may be attended.

    q_len == kv_len: standard causal. q_len < kv_len: bottom-right aligned causal (query i sits at
    kv position kv_len - q_len + i). q_len == 1 is the same rule and needs no mask at all.
    """
    if q_len == 1:
        return None
    if q_len > kv_len:
        raise ValueError(f"q_len {q_len} > kv_len {kv_len}")
    qi = torch.arange(q_len, device=device).unsqueeze(1)
    kj = torch.arange(kv_len, device=device).unsqueeze(0)
    return kj <= qi + (kv_len - q_len)


def expand_kv(t: torch.Tensor, n_heads: int) -> torch.Tensor:
    """GQA: [B,Hkv,S,D] -> [B,H,S,D] where query head h reads kv head h // (H/Hkv)."""
    group = n_heads // t.shape[1]
    return t if group == 1 else t.repeat_interleave(group, dim=1)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """SDPA with the default 1/sqrt(D) scale. q [B,H,*,D]; k,v [B,Hkv,*,D] with H % Hkv == 0."""
    k, v = expand_kv(k, q.shape[1]), expand_kv(v, q.shape[1])
    mask = causal_mask(q.shape[2], k.shape[2], device=q.device)
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def sample_num_steps(
    mean_recurrence: int, mean_backprop_depth: int, generator: Optional[torch.Generator] = None
) -> Tuple[int, int]:
    """Training depth sampler "poisson-lognormal-filling" -> (n_no_grad, k_grad)."""
    t = max(mean_recurrence - mean_backprop_depth, 0)
    s = mean_backprop_depth
    sigma = 0.5
    mu = math.log(t + s) - sigma**2 / 2
    rate = torch.zeros(1).log_normal_(mean=mu, std=sigma, generator=generator)
    p = int(torch.poisson(rate, generator=generator).item()) + 1
    return max(p - s, 0), min(s, p)


# ----------------------------------------------------------------------------------------------
# Counter-based random numbers (the same maths as include/muninn/core/random.hpp)
# ----------------------------------------------------------------------------------------------
_M64 = (1 << 64) - 1


def mix64(z: int) -> int:
    """splitmix64 finaliser on a Python int (mod 2^64)."""
    z &= _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _mix64_np(z):
    import numpy as np

    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def counter_bits(seed: int, index: int, attempt: int) -> int:
    """64 random bits for element `index` of stream `seed`, draw `attempt`."""
    key = mix64(seed ^ 0x9E3779B97F4A7C15)
    b = mix64(key + index)
    return mix64(b ^ ((attempt * 0xD1B54A32D192ED03) & _M64))


def derive_seed(seed: int, kind: int, n: int) -> int:
    """Seed of sub-stream (kind, n) of a run seed: mix64(seed ^ mix64((kind << 32) + n))."""
    return mix64((seed & _M64) ^ mix64(((kind << 32) + n) & _M64))


def truncated_normal_stream(seed: int, first: int, count: int, sd: float) -> torch.Tensor:
    """float32 [count]: element i = truncated_normal(seed, first + i, sd).

    Box-Muller (cosine branch) on counter_bits(seed, index, attempt): u1 = (hi32 + 1) / 2^32,
    t = lo32, z = sqrt(-2 ln u1) cos(2 pi t / 2^32); draws with |z| > 3 are redrawn with
    attempt + 1 (32 attempts, then 0).  The value is float32(z * float32(sd)).  libm's log / cos
    in double instead of Muninn's polynomials: they may differ in the last double ulp, which
    the float32 rounding almost always hides.
    """
    import numpy as np

    sd32 = float(np.float32(sd))
    idx = np.arange(first, first + count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        key = np.uint64(mix64((seed & _M64) ^ 0x9E3779B97F4A7C15))
        base = _mix64_np(key + idx)
        out = np.zeros(count, dtype=np.float64)
        todo = np.ones(count, dtype=bool)
        for attempt in range(32):
            bits = _mix64_np(base ^ np.uint64((attempt * 0xD1B54A32D192ED03) & _M64))
            u1 = ((bits >> np.uint64(32)).astype(np.float64) + 1.0) / 4294967296.0
            t = (bits & np.uint64(0xFFFFFFFF)).astype(np.float64)
            z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * t / 4294967296.0)
            ok = todo & (z >= -3.0) & (z <= 3.0)
            out[ok] = z[ok] * sd32
            todo &= ~ok
            if not todo.any():
                break
    return torch.from_numpy(out.astype(np.float32))


def state_sd(config: "HuginnConfig") -> float:
    """Standard deviation of a like-init state: sqrt(2/(5h)) * init_scale * sqrt(h), as Muninn."""
    h = config.n_embd
    return math.sqrt(2.0 / (5.0 * h)) * config.init_scale * math.sqrt(h)


def counter_states(config: "HuginnConfig", seed: int, first_position: int, rows: int) -> torch.Tensor:
    """[1, rows, h] like-init states of positions first_position.. from stream `seed`
    (element i of position p is truncated_normal(seed, p*h + i, sd)): Muninn's
    state_init::truncated_normal, so chunking does not change them."""
    h = config.n_embd
    sd = state_sd(config)
    if sd <= 0:
        return torch.zeros(1, rows, h)
    return truncated_normal_stream(seed, first_position * h, rows * h, sd).view(1, rows, h)


# ----------------------------------------------------------------------------------------------
# KV cache
# ----------------------------------------------------------------------------------------------
class HuginnCache:
    """Dynamic KV cache with one slot per executed block call ("full"/"skip").

    Slot ids: prelude block i -> i; core layer j at recurrence step s (0-based) ->
    n_prelude + n_core*s + j; coda block c -> -(c+1).  Each slot holds the K/V (after qk_bias and
    RoPE) of the token positions that executed that block call.  The token counter advances only
    on writes to slot 0 (the first prelude block runs for every token).  Writes to already present
    positions are allowed only for coda slots (an exit check re-running the coda); the last write
    wins.  A read returns the present positions in order; missing positions are skipped.
    """

    def __init__(self) -> None:
        self.keys: Dict[int, torch.Tensor] = {}  # slot -> [B,Hkv,n,D]
        self.values: Dict[int, torch.Tensor] = {}
        self.positions: Dict[int, List[int]] = {}
        self.seen_tokens = 0

    def update(self, k: torch.Tensor, v: torch.Tensor, slot: int) -> Tuple[torch.Tensor, torch.Tensor]:
        s_new = k.shape[2]
        if slot == 0:
            self.seen_tokens += s_new
        new_pos = list(range(self.seen_tokens - s_new, self.seen_tokens))
        if slot not in self.keys:
            self.keys[slot], self.values[slot], self.positions[slot] = k, v, new_pos
        else:
            pos = self.positions[slot]
            overlap = set(pos) & set(new_pos)
            if overlap:
                if slot >= 0:
                    raise RuntimeError(f"KV slot {slot}: positions {sorted(overlap)} written twice")
                keep = [i for i, p in enumerate(pos) if p not in overlap]
                idx = torch.tensor(keep, dtype=torch.long, device=k.device)
                self.keys[slot] = self.keys[slot].index_select(2, idx)
                self.values[slot] = self.values[slot].index_select(2, idx)
                pos = [pos[i] for i in keep]
            self.keys[slot] = torch.cat([self.keys[slot], k], dim=2)
            self.values[slot] = torch.cat([self.values[slot], v], dim=2)
            self.positions[slot] = pos + new_pos
            order = sorted(range(len(self.positions[slot])), key=lambda i: self.positions[slot][i])
            if order != list(range(len(order))):
                idx = torch.tensor(order, dtype=torch.long, device=k.device)
                self.keys[slot] = self.keys[slot].index_select(2, idx)
                self.values[slot] = self.values[slot].index_select(2, idx)
                self.positions[slot] = [self.positions[slot][i] for i in order]
        return self.keys[slot], self.values[slot]

    def clear_last_k_entries(self, k: int) -> None:
        """Forget the last k token positions in every slot (speculative / diffusion samplers)."""
        self.seen_tokens -= k
        for slot in list(self.keys):
            keep = [i for i, p in enumerate(self.positions[slot]) if p < self.seen_tokens]
            idx = torch.tensor(keep, dtype=torch.long, device=self.keys[slot].device)
            self.keys[slot] = self.keys[slot].index_select(2, idx)
            self.values[slot] = self.values[slot].index_select(2, idx)
            self.positions[slot] = [self.positions[slot][i] for i in keep]

    @property
    def num_slots(self) -> int:
        return len(self.keys)

    def slot_ids(self) -> List[int]:
        return sorted(self.keys)


# ----------------------------------------------------------------------------------------------
# Token-by-token adaptive decoding: per-token KV with fallbacks (latest-m4, compress-s)
# and exit criteria
# ----------------------------------------------------------------------------------------------
KV_FALLBACKS = ("latest", "none")
HALT_CRITERIA = ("none", "kl", "entropy-diff", "latent-diff", "argmax-stable", "cosine")
LOGIT_CRITERIA = ("kl", "entropy-diff", "argmax-stable")
ADAPTIVE_PREFILLS = ("per-token", "prompt")
ADAPTIVE_OUTPUTS = ("final", "last-checked")


class AdaptiveKVCache:
    """KV cache for adaptive decoding, where tokens may run different step counts.

    A forward feeds one token, or (fixed depth only) a block of n tokens in lockstep: every token
    of the block runs step s together, writes its step-s entries and attends to the block's
    step-s entries under the causal mask.

    Slots are the logical slots of HuginnCache (prelude i -> i, core step s layer j -> P + C*s + j,
    coda c -> -(c+1)).  With kv_budget k > 0 a core slot is stored at its physical slot
    P + C*(s % k) + j, so a later step overwrites an earlier one (compress-s{C*k}).

    A read at a core slot returns, for every earlier position p, the entry p wrote there.  If p
    never wrote it (p exited after e steps, e <= the physical step), then
      fallback "latest": p's entry of its last step e-1, same layer j (latest-m4);
      fallback "none":   p is left out of the keys and values (skip).
    Prelude and coda slots exist for every position (coda entries are overwritten by each head
    run of that position; the last write wins).

    Protocol: begin(pos, n=1) before a forward of n tokens (pos = number of finished tokens),
    then the model's blocks call update(k, v, slot) with k, v [1, Hkv, n, D], then
    finish(steps_used) (the same count for all n tokens).  Batch 1 only.
    With trace=True every write is also appended to self.trace as (pos, logical slot, k, v),
    one entry per token (k, v [1, Hkv, 1, D]).
    """

    def __init__(self, n_prelude: int, n_core: int, kv_budget: int = 0, fallback: str = "latest",
                 trace: bool = False) -> None:
        if fallback not in KV_FALLBACKS:
            raise ValueError(f"unknown KV fallback {fallback!r} (latest|none)")
        if kv_budget < 0:
            raise ValueError(f"kv_budget must be >= 0, got {kv_budget}")
        self.P, self.C, self.kv_budget, self.fallback = n_prelude, n_core, kv_budget, fallback
        self.entries: Dict[int, Dict[int, Tuple[torch.Tensor, torch.Tensor]]] = {}  # physical slot -> pos -> (k, v)
        self.steps_used: List[int] = []
        self.pos, self.n = -1, 0
        self.trace: Optional[List[Tuple[int, int, torch.Tensor, torch.Tensor]]] = [] if trace else None

    def physical_slot(self, slot: int) -> int:
        if slot < self.P:  # prelude and coda (negative) slots are not shared
            return slot
        s, j = divmod(slot - self.P, self.C)
        if self.kv_budget > 0:
            s %= self.kv_budget
        return self.P + self.C * s + j

    def begin(self, pos: int, n: int = 1) -> None:
        if pos != len(self.steps_used):
            raise RuntimeError(f"AdaptiveKVCache: begin({pos}) after {len(self.steps_used)} finished tokens")
        if n < 1:
            raise ValueError(f"AdaptiveKVCache: begin() of {n} tokens")
        self.pos, self.n = pos, n

    def finish(self, steps_used: int) -> None:
        if steps_used < 1:
            raise ValueError("a token runs at least one recurrence step")
        self.steps_used.extend([int(steps_used)] * self.n)
        self.pos, self.n = -1, 0

    @property
    def seen_tokens(self) -> int:
        return len(self.steps_used)

    def truncate(self, new_len: int) -> None:
        """Forget every position >= new_len (all slots, and their steps_used).

        The diffusion-style sampler's clear_last_k_entries(k) is truncate(seen_tokens - k)."""
        if self.pos >= 0:
            raise RuntimeError("AdaptiveKVCache.truncate inside begin()/finish()")
        if not 0 <= new_len <= len(self.steps_used):
            raise ValueError(f"AdaptiveKVCache.truncate({new_len}) with {len(self.steps_used)} tokens")
        for here in self.entries.values():
            for p in [p for p in here if p >= new_len]:
                del here[p]
        del self.steps_used[new_len:]

    def clear_last_k_entries(self, k: int) -> None:
        self.truncate(self.seen_tokens - k)

    def update(self, k: torch.Tensor, v: torch.Tensor, slot: int) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.pos < 0:
            raise RuntimeError("AdaptiveKVCache.update outside begin()/finish()")
        if k.shape[0] != 1 or k.shape[2] != self.n:
            raise ValueError(f"AdaptiveKVCache expects {self.n} token(s) of batch 1, got k {tuple(k.shape)}")
        phys = self.physical_slot(slot)
        here = self.entries.setdefault(phys, {})
        for i in range(self.n):
            ki, vi = k[:, :, i : i + 1], v[:, :, i : i + 1]
            here[self.pos + i] = (ki, vi)
            if self.trace is not None:
                self.trace.append((self.pos + i, slot, ki, vi))
        ks, vs = [], []
        for p in range(self.pos):
            ent = here.get(p)
            if ent is None:
                if slot < self.P:
                    raise RuntimeError(f"position {p} has no entry in prelude/coda slot {slot}")
                if self.fallback == "none":
                    continue
                j = (slot - self.P) % self.C
                last = self.P + self.C * (self.steps_used[p] - 1) + j
                ent = self.entries[self.physical_slot(last)][p]
            ks.append(ent[0])
            vs.append(ent[1])
        ks.append(k)
        vs.append(v)
        return torch.cat(ks, dim=2), torch.cat(vs, dim=2)


class HaltTracker:
    """One token's exit test, values in float64 from the fp32 logits / states.

    "Previous" values start as: uniform log-probabilities log(1/V) (kl), entropy 100
    (entropy-diff), argmax -1 with counter 0 (argmax-stable), the token's initial state
    (latent-diff, cosine).  They are replaced at every evaluated step only.  update() returns
    True to exit: value < threshold, except argmax-stable: counter >= threshold.
    """

    def __init__(self, criterion: str, threshold: float, x0: torch.Tensor, vocab: int) -> None:
        if criterion not in HALT_CRITERIA:
            raise ValueError(f"unknown exit criterion {criterion!r} {HALT_CRITERIA}")
        self.criterion, self.threshold = criterion, float(threshold)
        self.x0 = x0.detach().clone()
        self.prev_x = x0.detach().reshape(-1).double().clone()
        # x0 [1, n, h] with n > 1 (a prompt forward): latent criteria take the mean of the n
        # per-position values (the reference's reduce=True); logit criteria get the last row
        self.rows = x0.numel() // x0.shape[-1] if x0.dim() > 1 else 1
        if self.rows > 1:
            self.prev_x = x0.detach().reshape(self.rows, -1).double().clone()
        self.prev_logp = torch.full((vocab,), -math.log(vocab), dtype=torch.float64)
        self.prev_entropy = 100.0
        self.prev_argmax, self.count = -1, 0
        self.value = float("nan")
        self.history: List[float] = []  # the value at each evaluated step
        self.top_gaps: List[float] = []  # logit criteria: top1 - top2 logit at each evaluated step

    @property
    def needs_logits(self) -> bool:
        return self.criterion in LOGIT_CRITERIA

    def update(self, x: torch.Tensor, logits: Optional[torch.Tensor]) -> bool:
        c = self.criterion
        if c == "none":
            return False
        if c in ("latent-diff", "cosine") and self.rows > 1:
            xd = x.detach().reshape(self.rows, -1).double()
            nx = torch.linalg.vector_norm(xd, dim=-1)
            if c == "latent-diff":
                per = torch.linalg.vector_norm(xd - self.prev_x, dim=-1) / nx.clamp(min=1e-30)
            else:
                den = (nx * torch.linalg.vector_norm(self.prev_x, dim=-1)).clamp(min=1e-30)
                per = 1.0 - (xd * self.prev_x).sum(-1) / den
            val = float(per.mean())
            self.prev_x = xd.clone()
            exit_now = val < self.threshold
        elif c in ("latent-diff", "cosine"):
            xd = x.detach().reshape(-1).double()
            if c == "latent-diff":
                val = float(torch.linalg.vector_norm(xd - self.prev_x)) / max(float(torch.linalg.vector_norm(xd)), 1e-30)
            else:
                den = float(torch.linalg.vector_norm(xd)) * float(torch.linalg.vector_norm(self.prev_x))
                val = 1.0 - float(torch.dot(xd, self.prev_x)) / max(den, 1e-30)
            self.prev_x = xd.clone()
            exit_now = val < self.threshold
        else:
            lf = logits.detach().reshape(-1)
            logp = torch.log_softmax(lf.double(), dim=-1)
            top2 = lf.topk(2).values
            self.top_gaps.append(float(top2[0] - top2[1]))
            if c == "argmax-stable":
                am = int(torch.argmax(lf))  # first maximum on ties
                self.count = self.count + 1 if am == self.prev_argmax else 0
                self.prev_argmax = am
                val = float(self.count)
                exit_now = val >= self.threshold
            elif c == "entropy-diff":
                p = logp.exp()
                H = float(-(p * torch.log(p + 1e-10)).sum())
                val = abs(H - self.prev_entropy)
                self.prev_entropy = H
                exit_now = val < self.threshold
            else:  # kl
                val = float((self.prev_logp.exp() * (self.prev_logp - logp)).sum())
                self.prev_logp = logp
                exit_now = val < self.threshold
        self.value = val
        self.history.append(val)
        return exit_now


# ----------------------------------------------------------------------------------------------
# Modules (attribute names == HF checkpoint names)
# ----------------------------------------------------------------------------------------------
class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: HuginnConfig) -> None:
        super().__init__()
        self.n_heads, self.head_dim, self.n_embd = cfg.num_attention_heads, cfg.head_dim, cfg.n_embd
        self.n_kv_heads = cfg.n_kv_heads
        q_dim, kv_dim = self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim
        self.split_sizes = [q_dim, kv_dim, kv_dim]
        self.Wqkv = nn.Linear(cfg.n_embd, q_dim + 2 * kv_dim, bias=cfg.bias)  # rows [q; k; v]
        if cfg.qk_bias:
            self.qk_bias = nn.Parameter(torch.zeros(2, 1, cfg.num_attention_heads, cfg.head_dim))
        else:
            self.qk_bias = None
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)

    def forward(self, x, freqs, cache: Optional[HuginnCache], slot: int) -> torch.Tensor:
        B, S, _ = x.shape
        q, k, v = self.Wqkv(x).split(self.split_sizes, dim=-1)
        q = q.view(B, S, self.n_heads, self.head_dim)
        k = k.view(B, S, self.n_kv_heads, self.head_dim)
        v = v.view(B, S, self.n_kv_heads, self.head_dim)
        if self.qk_bias is not None:  # before RoPE, V untouched
            q = q + self.qk_bias[0]
            k = k + self.qk_bias[1]
        q = apply_rope(q, freqs)
        k = apply_rope(k, freqs)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if cache is not None:
            k, v = cache.update(k, v, slot)
        y = attend(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(B, S, self.n_embd))


class GatedMLP(nn.Module):
    def __init__(self, cfg: HuginnConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, 2 * cfg.intermediate_size, bias=cfg.bias)  # rows [gate; up]
        self.proj = nn.Linear(cfg.intermediate_size, cfg.n_embd, bias=cfg.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.fc(x).chunk(2, dim=-1)
        return self.proj(F.silu(gate) * up)


class SandwichBlock(nn.Module):
    """x = n2(attn(n1(x)) + x); x = n4(mlp(n3(x)) + x)."""

    def __init__(self, cfg: HuginnConfig) -> None:
        super().__init__()
        self.norm_1 = RMSNorm(cfg.n_embd, cfg.norm_eps)
        self.attn = CausalSelfAttention(cfg)
        self.norm_2 = RMSNorm(cfg.n_embd, cfg.norm_eps)
        self.mlp = GatedMLP(cfg)
        self.norm_3 = RMSNorm(cfg.n_embd, cfg.norm_eps)
        self.norm_4 = RMSNorm(cfg.n_embd, cfg.norm_eps)

    def forward(self, x, freqs, cache: Optional[HuginnCache] = None, slot: int = 0) -> torch.Tensor:
        x = self.norm_2(self.attn(self.norm_1(x), freqs, cache, slot) + x)
        x = self.norm_4(self.mlp(self.norm_3(x)) + x)
        return x


class PreNormBlock(nn.Module):
    """Muninn extension, Llama style: x = x + attn(n1(x)); x = x + mlp(n2(x)).

    Only norm_1 and norm_2 exist; the other tensor names are those of SandwichBlock.
    """

    def __init__(self, cfg: HuginnConfig) -> None:
        super().__init__()
        self.norm_1 = RMSNorm(cfg.n_embd, cfg.norm_eps)
        self.attn = CausalSelfAttention(cfg)
        self.norm_2 = RMSNorm(cfg.n_embd, cfg.norm_eps)
        self.mlp = GatedMLP(cfg)

    def forward(self, x, freqs, cache: Optional[HuginnCache] = None, slot: int = 0) -> torch.Tensor:
        x = x + self.attn(self.norm_1(x), freqs, cache, slot)
        x = x + self.mlp(self.norm_2(x))
        return x


BLOCK_CLASSES = {"sandwich": SandwichBlock, "pre_norm": PreNormBlock}


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------
class Huginn(nn.Module):
    def __init__(self, config: HuginnConfig) -> None:
        super().__init__()
        self.config = cfg = config
        t = nn.ModuleDict()
        t["wte"] = nn.Embedding(cfg.padded_vocab_size, cfg.n_embd)
        Block = BLOCK_CLASSES[cfg.block_type]
        t["prelude"] = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers_in_prelude))
        if cfg.injection_type == "linear":
            t["adapter"] = nn.Linear(2 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        t["core_block"] = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers_in_recurrent_block))
        t["coda"] = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers_in_coda))
        t["ln_f"] = RMSNorm(cfg.n_embd, cfg.norm_eps)
        self.transformer = t
        self.lm_head = None if cfg.tie_embeddings else nn.Linear(cfg.n_embd, cfg.padded_vocab_size, bias=False)
        self.register_buffer(
            "freqs_cis", compute_freqs_cis(cfg.head_dim, cfg.block_size, cfg.rope_base), persistent=True
        )
        self.emb_scale = math.sqrt(cfg.n_embd)
        self.eval()

    # -- pieces ---------------------------------------------------------------------------
    def _freqs(self, position_offset: int, seq_len: int) -> torch.Tensor:
        if position_offset < 0 or position_offset + seq_len > self.config.block_size:
            raise ValueError(
                f"positions [{position_offset}, {position_offset + seq_len}) outside block_size "
                f"{self.config.block_size}"
            )
        return self.freqs_cis[:, position_offset : position_offset + seq_len]

    def embed_inputs(self, input_ids, freqs, cache: Optional[HuginnCache] = None) -> torch.Tensor:
        """wte * sqrt(h) -> prelude blocks (cache slots 0..n_prelude-1)."""
        e = self.transformer["wte"](input_ids) * self.emb_scale
        for i, block in enumerate(self.transformer["prelude"]):
            e = block(e, freqs, cache, i)
        return e

    def initialize_state(
        self, e: torch.Tensor, init: str = "zero", generator: Optional[torch.Generator] = None,
        seed: int = 0, first_position: int = 0,
    ) -> torch.Tensor:
        """Initial recurrent state: "zero", or "random"/"like-init" = trunc-normal, or
        "muninn" = the same distribution from Muninn's counter-based stream `seed` (element i of
        position p = truncated_normal(seed, p*h + i, sd); e [1, n, h] holds positions
        first_position..), which the C++ state_init::truncated_normal reproduces exactly."""
        if init == "zero":
            return torch.zeros_like(e)
        if init == "muninn":
            if e.dim() != 3 or e.shape[0] != 1:
                raise ValueError("init 'muninn' needs a [1, n, h] batch-1 tensor")
            return counter_states(self.config, seed, first_position, e.shape[1]).to(e.dtype)
        if init in ("random", "like-init"):
            h = self.config.n_embd
            std = math.sqrt(2.0 / (5.0 * h)) * self.config.init_scale
            if std <= 0:
                return torch.zeros_like(e)
            x = torch.empty_like(e)
            with torch.no_grad():
                nn.init.trunc_normal_(x, 0.0, std, -3.0 * std, 3.0 * std, generator=generator)
            return x * math.sqrt(h)
        raise ValueError(f"unknown init {init!r} (zero|random|muninn)")

    def iterate_one_step(
        self, e, x, freqs, step: int, cache: Optional[HuginnCache] = None
    ) -> torch.Tensor:
        """One recurrence: inject e into state x, then the core blocks (slots P + C*step + j)."""
        cfg = self.config
        if cfg.injection_type == "linear":
            x = self.transformer["adapter"](torch.cat([x, e], dim=-1))  # state first
        else:
            x = x + e
        base = cfg.n_layers_in_prelude + cfg.n_layers_in_recurrent_block * step
        for j, block in enumerate(self.transformer["core_block"]):
            x = block(x, freqs, cache, base + j)
        return x

    def predict_from_latents(self, x, freqs, cache: Optional[HuginnCache] = None) -> torch.Tensor:
        """ln_f -> coda (slots -1, -2, ...) -> ln_f -> head, from the raw state; fp32 logits."""
        x = self.transformer["ln_f"](x)
        for c, block in enumerate(self.transformer["coda"]):
            x = block(x, freqs, cache, -(c + 1))
        x = self.transformer["ln_f"](x)  # the same ln_f again
        w = self.transformer["wte"].weight if self.lm_head is None else self.lm_head.weight
        return F.linear(x, w).float()

    # -- forward ---------------------------------------------------------------------------------
    def forward(
        self,
        input_ids: torch.Tensor,
        num_steps: NumSteps,
        input_states: Optional[torch.Tensor] = None,
        init: str = "zero",
        cache: Optional[HuginnCache] = None,
        position_offset: Optional[int] = None,
        return_latents: bool = False,
        generator: Optional[torch.Generator] = None,
    ):
        """Logits [B,S,V] float32 (and, if asked, the list of raw states after each step).

        num_steps: an int (all steps in the ambient grad mode), or (n_no_grad, n_grad): the first
            n_no_grad steps under torch.no_grad, then n_grad steps with grad (truncated backprop).
        position_offset: first position of input_ids; None means cache.seen_tokens (or 0).
        """
        if input_ids.dim() != 2:
            raise ValueError("input_ids must be [B, S]")
        if isinstance(num_steps, int):
            # Unlike M (where a scalar means "all steps under no_grad"), a scalar follows the
            # ambient grad mode, so a trainer gets gradients through every step. Values are equal.
            n_nograd, n_grad = 0, num_steps
        else:
            n_nograd, n_grad = int(num_steps[0]), int(num_steps[1])
        if position_offset is None:
            position_offset = cache.seen_tokens if cache is not None else 0
        S = input_ids.shape[1]
        freqs = self._freqs(position_offset, S)

        e = self.embed_inputs(input_ids, freqs, cache)
        if input_states is not None:
            if input_states.shape != e.shape:
                raise ValueError(f"input_states shape {tuple(input_states.shape)} != {tuple(e.shape)}")
            x = input_states.to(e.dtype)
        else:
            x = self.initialize_state(e, init, generator)

        latents: List[torch.Tensor] = []
        if n_nograd > 0:
            with torch.no_grad():
                for s in range(n_nograd):
                    x = self.iterate_one_step(e, x, freqs, s, cache)
                    if return_latents:
                        latents.append(x)
        for s in range(n_nograd, n_nograd + n_grad):
            x = self.iterate_one_step(e, x, freqs, s, cache)
            if return_latents:
                latents.append(x)

        logits = self.predict_from_latents(x, freqs, cache)
        return (logits, latents) if return_latents else logits

    # -- generation ------------------------------------------------------------------------------
    @torch.no_grad()
    def generate_greedy(self, ids: torch.Tensor, max_new_tokens: int, num_steps: int) -> torch.Tensor:
        """Greedy decode with a HuginnCache and zero initial states; returns new ids [B, n]."""
        ids = ids if ids.dim() == 2 else ids.unsqueeze(0)
        cache = HuginnCache()
        logits = self.forward(ids, num_steps, cache=cache)
        out = []
        nxt = logits[:, -1].argmax(-1)
        out.append(nxt)
        for _ in range(max_new_tokens - 1):
            logits = self.forward(nxt.unsqueeze(1), num_steps, cache=cache)
            nxt = logits[:, -1].argmax(-1)
            out.append(nxt)
        return torch.stack(out, dim=1)

    @torch.no_grad()
    def generate_greedy_nocache(self, ids: torch.Tensor, max_new_tokens: int, num_steps: int) -> torch.Tensor:
        """Greedy decode recomputing the whole sequence every step; returns new ids [B, n]."""
        seq = ids if ids.dim() == 2 else ids.unsqueeze(0)
        out = []
        for _ in range(max_new_tokens):
            nxt = self.forward(seq, num_steps)[:, -1].argmax(-1)
            out.append(nxt)
            seq = torch.cat([seq, nxt.unsqueeze(1)], dim=1)
        return torch.stack(out, dim=1)

    @torch.no_grad()
    def forward_adaptive_token(
        self,
        token: int,
        cache: AdaptiveKVCache,
        num_steps: int,
        criterion: str = "none",
        threshold: float = 0.0,
        min_steps: int = 0,
        check_every: int = 1,
        x0: Optional[torch.Tensor] = None,
        init: str = "zero",
        generator: Optional[torch.Generator] = None,
        output: str = "final",
        seed: int = 0,
    ) -> Tuple[torch.Tensor, int, torch.Tensor, HaltTracker]:
        """Feed ONE token at position cache.seen_tokens, with a per-token exit test.

        x0: the initial state [1,1,h] (warm start); None means initialize_state(e, init).
        The check after step s (0-based) runs when s+1 < num_steps, s >= min_steps and
        (s - min_steps) % check_every == 0.  Logit criteria run the head (coda slots rewritten)
        at every check; state criteria run it only at the exit.
        output: "final" (no exit: the head runs on the final state) or "last-checked" (the
        reference's behaviour: with a logit criterion, no exit, and the last step s = num_steps-1
        not a check step of the reference's gating (s >= min_steps, (s - min_steps) % check_every
        == 0), the logits are those of the last check and the head is not rerun, so the coda KV
        of this position is the one written at that check; the steps used are num_steps).
        Returns (exit logits [V] fp32, steps used, final raw state [1,1,h], the tracker).
        """
        if num_steps < 1:
            raise ValueError(f"num_steps must be >= 1, got {num_steps}")
        if check_every < 1:
            raise ValueError(f"check_every must be >= 1, got {check_every}")
        if output not in ADAPTIVE_OUTPUTS:
            raise ValueError(f"unknown output {output!r} {ADAPTIVE_OUTPUTS}")
        pos = cache.seen_tokens
        cache.begin(pos)
        freqs = self._freqs(pos, 1)
        ids = torch.tensor([[int(token)]], dtype=torch.long, device=self.freqs_cis.device)
        e = self.embed_inputs(ids, freqs, cache)
        if x0 is None:
            x = self.initialize_state(e, init, generator, seed=seed, first_position=pos)
        else:
            x = x0.reshape(e.shape).to(e.dtype)
        V = self.config.padded_vocab_size
        tracker = HaltTracker(criterion, threshold, x, V)
        x, logits, used = self._adaptive_steps(e, x, freqs, cache, num_steps, tracker, min_steps, check_every, output)
        cache.finish(used)
        return logits[0, -1], used, x, tracker

    def _adaptive_steps(self, e, x, freqs, cache, num_steps, tracker, min_steps, check_every, output):
        """The recurrence of one adaptive forward (one token or a lockstep block) with its exit test.

        The test after step s runs when s + 1 < num_steps, s >= min_steps and
        (s - min_steps) % check_every == 0; a logit criterion sees the last row's logits.
        Returns (final raw state, logits [1, n, V], steps used)."""
        logits, used, last_checked = None, num_steps, None
        for s in range(num_steps):
            x = self.iterate_one_step(e, x, freqs, s, cache)
            check = (tracker.criterion != "none" and s + 1 < num_steps and s >= min_steps
                     and (s - min_steps) % check_every == 0)
            if not check:
                continue
            lg = self.predict_from_latents(x, freqs, cache) if tracker.needs_logits else None
            last_checked = lg
            if tracker.update(x, lg[0, -1] if lg is not None else None):
                logits = lg if lg is not None else self.predict_from_latents(x, freqs, cache)
                used = s + 1
                break
        if logits is None:
            last = num_steps - 1
            ref_checks_last = last >= min_steps and (last - min_steps) % check_every == 0
            if output == "last-checked" and last_checked is not None and not ref_checks_last:
                logits = last_checked  # the reference keeps the last check's outputs
            else:
                logits = self.predict_from_latents(x, freqs, cache)
        return x, logits, used

    @torch.no_grad()
    def forward_adaptive_prompt(
        self,
        tokens: Sequence[int],
        cache: AdaptiveKVCache,
        num_steps: int,
        criterion: str,
        threshold: float,
        min_steps: int = 0,
        check_every: int = 1,
        init: str = "zero",
        output: str = "final",
        seed: int = 0,
    ) -> Tuple[torch.Tensor, int, torch.Tensor, torch.Tensor, HaltTracker]:
        """Feed n tokens in ONE lockstep forward WITH the exit test (the reference's first call of
        generate_with_adaptive_compute, do_not_exit_in_prefill=False, reduce=True).

        All n tokens start from initialize_state(e, init) and run the steps together (KV as in
        forward_adaptive_lockstep).  Checks and `output` as in forward_adaptive_token; kl,
        entropy-diff and argmax-stable use the LAST row's logits, latent-diff and cosine the mean
        over the n rows of the per-row value.  On an exit after step s every row used s + 1 steps.
        Returns (logits [n, V] fp32, steps used, final raw states [1, n, h], initial states, tracker).
        """
        if num_steps < 1:
            raise ValueError(f"num_steps must be >= 1, got {num_steps}")
        if check_every < 1:
            raise ValueError(f"check_every must be >= 1, got {check_every}")
        if output not in ADAPTIVE_OUTPUTS:
            raise ValueError(f"unknown output {output!r} {ADAPTIVE_OUTPUTS}")
        n = len(tokens)
        pos = cache.seen_tokens
        cache.begin(pos, n)
        freqs = self._freqs(pos, n)
        ids = torch.tensor([[int(t) for t in tokens]], dtype=torch.long, device=self.freqs_cis.device)
        e = self.embed_inputs(ids, freqs, cache)
        x0 = self.initialize_state(e, init, seed=seed, first_position=pos)
        tracker = HaltTracker(criterion, threshold, x0, self.config.padded_vocab_size)
        x, logits, used = self._adaptive_steps(e, x0, freqs, cache, num_steps, tracker, min_steps, check_every, output)
        cache.finish(used)
        return logits[0], used, x, x0, tracker

    @torch.no_grad()
    def forward_adaptive_lockstep(
        self,
        tokens: Sequence[int],
        cache: AdaptiveKVCache,
        num_steps: int,
        init: str = "zero",
        generator: Optional[torch.Generator] = None,
        seed: int = 0,
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Feed n tokens at positions cache.seen_tokens.. in ONE fixed-depth forward (no exit test).

        All n tokens run steps 0..num_steps-1 together: at step s each writes its step-s K/V
        (physical slot s % kv_budget with a budget) and attends, under the causal mask, to the
        step-s entries of the earlier tokens of this call plus what the cache holds for the
        tokens before it.  Every token starts from initialize_state(e, init): there is no warm
        start inside the call ("first call").
        Returns (logits [n, V] fp32, final raw states [1, n, h], initial states [1, n, h]).
        """
        if num_steps < 1:
            raise ValueError(f"num_steps must be >= 1, got {num_steps}")
        n = len(tokens)
        pos = cache.seen_tokens
        cache.begin(pos, n)
        freqs = self._freqs(pos, n)
        ids = torch.tensor([[int(t) for t in tokens]], dtype=torch.long, device=self.freqs_cis.device)
        e = self.embed_inputs(ids, freqs, cache)
        x0 = self.initialize_state(e, init, generator, seed=seed, first_position=pos)
        x = x0
        for s in range(num_steps):
            x = self.iterate_one_step(e, x, freqs, s, cache)
        logits = self.predict_from_latents(x, freqs, cache)
        cache.finish(num_steps)
        return logits[0], x, x0

    @torch.no_grad()
    def generate_adaptive(
        self,
        ids: torch.Tensor,
        max_new_tokens: int,
        num_steps: int,
        criterion: str = "none",
        threshold: float = 0.0,
        min_steps: int = 0,
        check_every: int = 1,
        kv_budget: int = 0,
        fallback: str = "latest",
        warm: Optional[str] = None,
        init: str = "zero",
        return_details: bool = False,
        cache: Optional[AdaptiveKVCache] = None,
        prefill: str = "per-token",
        output: str = "final",
    ):
        """Greedy decoding with per-token exits; the new tokens are fed one per forward.

        The prompt: with an exit criterion it is fed one token per forward too, so that every
        prompt token exits at its own step (forward_adaptive_token).  With criterion "none" it is
        fed in ONE lockstep forward (forward_adaptive_lockstep, the HF "first call"): all prompt
        tokens run the steps together and start from the init state.
        KV: AdaptiveKVCache with kv_budget (0: a slot per step) and fallback ("latest" | "none").
        warm: None, "raw" (start each generated token fed from the previous position's final raw
        state) or "normalized" (ln_f of that state); the prompt always starts from the init state,
        also when fed one token at a time, and the first new token continues the last prompt token.
        The new token is the argmax of the exit logits.
        prefill (with an exit criterion): "per-token" (above) or "prompt": the whole prompt in ONE
        lockstep forward from the init state WITH the exit test (forward_adaptive_prompt, the
        reference's first call): every prompt position records the same step count, the next
        token comes from the last row.  With criterion "none" the prompt is always one forward.
        output: "final" or "last-checked" (forward_adaptive_token), for every fed forward; the
        warm-start state is always the final raw state.

        Returns (new ids [1, n], steps per generated token [n], steps per fed position
        [len(prompt) + n - 1]); generated token i was chosen by fed position len(prompt)-1+i.
        With return_details a 4th item is a dict, one entry per fed position: "logits" (exit
        logits [V]), "states" (final raw state [1,1,h]), "x0" (initial state [1,1,h]), "checks"
        (criterion values in check order), "check_gaps" (logit criteria: top1-top2 logit gap at
        each check); and "cache".
        """
        seq = ids if ids.dim() == 2 else ids.unsqueeze(0)
        if seq.shape[0] != 1:
            raise ValueError("generate_adaptive: batch 1 only")
        if warm not in (None, "none", "raw", "normalized"):
            raise ValueError(f"unknown warm start {warm!r} (None|raw|normalized)")
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        if prefill not in ADAPTIVE_PREFILLS:
            raise ValueError(f"unknown prefill {prefill!r} {ADAPTIVE_PREFILLS}")
        if output not in ADAPTIVE_OUTPUTS:
            raise ValueError(f"unknown output {output!r} {ADAPTIVE_OUTPUTS}")
        cfg = self.config
        if cache is None:
            cache = AdaptiveKVCache(cfg.n_layers_in_prelude, cfg.n_layers_in_recurrent_block, kv_budget, fallback)
        prompt = [int(t) for t in seq[0].tolist()]
        fed_steps: List[int] = []
        all_logits: List[torch.Tensor] = []
        checks: List[List[float]] = []
        check_gaps: List[List[float]] = []
        states: List[torch.Tensor] = []
        starts: List[torch.Tensor] = []
        new: List[int] = []
        prev_state: Optional[torch.Tensor] = None

        def feed(tok: int, may_warm: bool) -> torch.Tensor:
            # The prompt always starts from the init state (the reference continues thoughts
            # only for generated tokens); each generated token may continue the previous one.
            nonlocal prev_state
            x0 = None
            if may_warm and warm in ("raw", "normalized") and prev_state is not None:
                x0 = prev_state if warm == "raw" else self.transformer["ln_f"](prev_state)
            lg, used, x, tr = self.forward_adaptive_token(
                tok, cache, num_steps, criterion, threshold, min_steps, check_every, x0, init, output=output
            )
            prev_state = x
            fed_steps.append(used)
            all_logits.append(lg)
            checks.append(list(tr.history))
            check_gaps.append(list(tr.top_gaps))
            states.append(x)
            starts.append(tr.x0)
            return lg

        if criterion == "none":
            lgs, xs, x0s = self.forward_adaptive_lockstep(prompt, cache, num_steps, init)
            for i in range(len(prompt)):
                fed_steps.append(num_steps)
                all_logits.append(lgs[i])
                checks.append([])
                check_gaps.append([])
                states.append(xs[:, i : i + 1])
                starts.append(x0s[:, i : i + 1])
            prev_state, lg = states[-1], all_logits[-1]
        elif prefill == "prompt":
            lgs, used, xs, x0s, tr = self.forward_adaptive_prompt(
                prompt, cache, num_steps, criterion, threshold, min_steps, check_every, init, output
            )
            for i in range(len(prompt)):
                last = i == len(prompt) - 1  # the prompt's checks belong to its last position
                fed_steps.append(used)
                all_logits.append(lgs[i])
                checks.append(list(tr.history) if last else [])
                check_gaps.append(list(tr.top_gaps) if last else [])
                states.append(xs[:, i : i + 1])
                starts.append(x0s[:, i : i + 1])
            prev_state, lg = states[-1], all_logits[-1]
        else:
            for tok in prompt:
                lg = feed(tok, False)
        for i in range(max_new_tokens):
            nxt = int(torch.argmax(lg))
            new.append(nxt)
            if i + 1 < max_new_tokens:
                lg = feed(nxt, True)
        n_p = len(prompt)
        gen_steps = fed_steps[n_p - 1 :]
        assert len(gen_steps) == max_new_tokens
        out = torch.tensor([new], dtype=torch.long, device=seq.device)
        if return_details:
            details = {"logits": all_logits, "states": states, "x0": starts, "checks": checks,
                       "check_gaps": check_gaps, "cache": cache}
            return out, gen_steps, fed_steps, details
        return out, gen_steps, fed_steps

    # -- diffusion-style (parallel) sampling ---------------------------------------------------------
    @torch.no_grad()
    def generate_parallel(
        self,
        prompt_ids,
        max_new_tokens: int,
        num_steps: int = 32,
        inner_recurrence: int = 4,
        headway: int = 1,
        max_wavefront: int = 128,
        ema_embeds: float = 0.1,
        state_noise_mixing: float = 0.5,
        dampened_state_mixer: bool = True,
        sqrt_mixer: bool = False,
        freeze: str = "latent-diff",
        exit_threshold: float = 0.03,
        continuous_compute: bool = False,
        max_diffusion_steps: int = 4096,
        kv_budget: int = 1,
        stop_ids: Sequence[int] = (),
        seed: int = 0,
        init: str = "muninn",
    ):
        """Diffusion-style sampling: a wave of not-yet-frozen positions is refined in parallel.

        The upstream sampler `generate_diffusion_style` with full_prefill=True, batch 1 and greedy
        decoding (argmax, first index on ties).  Outline:

        * Prefill: the prompt in ONE lockstep forward at num_steps steps (kv_budget as below),
          from the init state; its last logits give the first new token.  frozen = prompt + that
          token; the wave is the one position P = len(prompt) with a fresh state.
        * Each diffusion step t feeds the wave, positions [c, c+S) with c = the cache length, as
          ONE multi-token forward: prelude (with cache), ema blend of the embeddings, noise mix of
          the states, `inner_recurrence` core steps at step indices 0..inner-1 (all wave positions
          in lockstep under the causal mask, attending to the cached earlier positions), coda and
          head on all S rows.  The argmax of each row is the proposal for the next position; the
          wave grows by `headway` fresh positions (trimmed to max_wavefront), and the freeze
          rule moves a prefix of the wave into the frozen tokens; the cache is cut back to the
          first position that will be fed again.
        * KV: AdaptiveKVCache(kv_budget, fallback "none").  kv_budget 1 is upstream's default
          "latest-m4-compress-s4" (for Huginn-0125's 4-layer core: one slot per core layer shared
          by every recurrence step, last write wins); kv_budget 0 is "full" (a slot per step).

        Random numbers (init "muninn", the only one supported): Muninn's counter-based streams,
        sd = state_sd(config):
          prefill state of prompt position p, element i: truncated_normal(seed, p*h+i, sd);
          a fresh state of position p made before the loop (n = 0) or in loop step t (n = t+1):
            truncated_normal(derive_seed(seed, 1, n), p*h+i, sd);
          the noise state of position p at loop step t: truncated_normal(derive_seed(seed, 2, t), p*h+i, sd);
          the j-th extra token guess at loop step t (headway > 1):
            counter_bits(derive_seed(seed, 3, t), j, 0) % min(65510, vocab_size).

        Upstream behaviour reproduced on purpose (quirks):
         1. After the prefill the recurrence counter of position P (the first new token's
            position, whose state has not run yet) is already num_steps, so its noise is
            damped by 1/(1+num_steps) at the first step.
         2. latent-diff compares the wave's states with `previous_states[c - old_c:]`.  Before
            the loop previous_states is the fresh state of P and old_c = 0, so at step 0 the
            slice is empty: no freeze can happen at step 0.  After a freeze previous_states is
            the sliced wave (it starts at the new c = k-1) but old_c is the OLD cache index, so
            the next comparison is misaligned: the state of position c+i is compared with the
            previous state of position c + (c - old_c) + i (and fewer positions are compared).
         3. latent-diff freezes up to the LAST converged position (k = c + last index + 1): earlier
            unconverged positions are frozen with it; the state of position k-1 stays in the wave.
         4. The ema blend is aligned (old_embeds is the previous wave's blended embeddings, indexed
            from old_c); at step 0 it blends with embeddings recomputed without the cache over the
            whole sequence (the same prelude output for position P, up to round-off).
         5. Appended fresh states count positions that may be trimmed away at once by
            max_wavefront (a "standing wave": positions_kept = max_wavefront - S may be 0, then
            the new proposal of the last position is dropped from current_sequence).
         6. token-stability counts, per position, the steps at which the proposal equalled the
            previous one; the count never resets when the proposal changes; frozen positions
            (the prompt included) gain +1 every step.  It freezes up to the last position whose
            count exceeds num_steps // inner_recurrence.
         7. fixed freezes `headway` positions per step once step > num_steps // inner_recurrence.
            With a trimmed wave (positions kept < headway) upstream indexes past the sequence and
            fails; we raise ValueError there.
         8. Stop ids are honoured only when step > num_steps (not num_steps // inner): latent-diff
            tests frozen[old_k:k] (old_k = k of the previous step, 0 before the first freeze, so
            the first freeze also tests the prompt; k keeps its value on a step without a
            freeze, so the slice is then empty); fixed and token-stability test the last
            `headway` frozen tokens, whether or not this step froze anything.
         9. The loop also stops when step > max_diffusion_steps (checked before step += 1, so the
            reported diffusion_steps is then one less than the steps run), or when len(frozen) -
            P >= max_new_tokens, or when len(current_sequence) > block_size (both tested before a
            step).  The returned tokens are frozen[P:], not truncated to max_new_tokens.
        10. The extra guesses for headway > 1 come from randint(0, 65510) upstream (the size of
            Huginn's vocabulary); we draw modulo min(65510, vocab_size) so a small model works.
        11. Fresh states upstream are drawn in bf16 (initialize_state of a bf16 zeros tensor);
            ours are float32 (the streams above replace torch's generator anyway).

        Returns (new ids [1, n], details) with details: diffusion_steps, num_core_forward_passes,
        num_tokens_forward, num_cache_clears, num_standing_waves, recurrence_per_position and
        token_stable_per_position (the first len(frozen) entries), trace (per step
        [cache_index, S before the append, len(frozen) after the step]), and for margin checks
        "gaps" (top1 - top2 logit of every greedy decision) and "criteria" (every latent-diff value).
        """
        if init != "muninn":
            raise ValueError("generate_parallel: only init 'muninn' (counter-based streams) is supported")
        if freeze not in ("latent-diff", "fixed", "token-stability"):
            raise ValueError(f"unknown freeze strategy {freeze!r} (latent-diff|fixed|token-stability)")
        if headway < 1 or inner_recurrence < 1 or num_steps < 1 or max_new_tokens < 1:
            raise ValueError("headway, inner_recurrence, num_steps and max_new_tokens must be >= 1")
        cfg = self.config
        dev = self.freqs_cis.device
        seq = prompt_ids if torch.is_tensor(prompt_ids) else torch.tensor(prompt_ids, dtype=torch.long)
        seq = seq if seq.dim() == 2 else seq.unsqueeze(0)
        if seq.shape[0] != 1:
            raise ValueError("generate_parallel: batch 1 only")
        input_ids = seq.to(dev)
        P = input_ids.shape[1]
        h = cfg.n_embd
        stops = set(int(t) for t in stop_ids)
        cache = AdaptiveKVCache(cfg.n_layers_in_prelude, cfg.n_layers_in_recurrent_block, kv_budget, "none")

        def fresh(n_stream: int, first_pos: int, rows: int) -> torch.Tensor:
            return counter_states(cfg, derive_seed(seed, 1, n_stream), first_pos, rows).to(dev)

        blocked_size = max(cfg.block_size, P + max_new_tokens + headway + 1)
        rec_counter = torch.zeros(blocked_size, dtype=torch.long)
        tok_stable = torch.zeros(blocked_size, dtype=torch.long)
        n_core = n_tok = n_clears = n_standing = 0
        gaps: List[float] = []
        criteria: List[float] = []
        trace: List[List[int]] = []

        def top_gaps(lg: torch.Tensor) -> None:
            t2 = lg.topk(2, dim=-1).values
            gaps.extend(float(v) for v in (t2[:, 0] - t2[:, 1]))

        # prefill: the whole prompt in one lockstep forward at num_steps
        lg, _, _ = self.forward_adaptive_lockstep(input_ids[0].tolist(), cache, num_steps, init="muninn", seed=seed)
        n_core += 1
        n_tok += P
        top_gaps(lg[-1:])
        next_token = lg[-1:].argmax(-1, keepdim=True)  # [1, 1]
        frozen = cur = torch.cat([input_ids, next_token], dim=1)
        rec_counter[: frozen.shape[1]] += num_steps  # quirk 1: position P included
        states = fresh(0, P, 1)

        if ema_embeds > 0.0:  # quirk 4: recomputed without the cache over the whole sequence
            old_embeds = self.embed_inputs(cur, self._freqs(0, cur.shape[1]), None)
        previous_states = states.clone()
        old_cache_index = 0
        old_k = k = 0
        step = 0
        while (frozen.shape[1] - P) < max_new_tokens and cur.shape[1] <= cfg.block_size:
            c = cache.seen_tokens
            S = states.shape[1]
            if cur.shape[1] < c + S:
                raise ValueError("generate_parallel: the wave reaches past the sequence (upstream fails here)")
            freqs = self._freqs(c, S)
            cache.begin(c, S)
            new_embeds = self.embed_inputs(cur[:, c : c + S], freqs, cache)
            if ema_embeds > 0.0:
                matching_old = old_embeds[:, c - old_cache_index :]
                e = new_embeds.clone() * (1 - ema_embeds)
                e[:, : matching_old.shape[1], :] += matching_old * ema_embeds
                old_embeds = e.clone()
            else:
                e = new_embeds
            if state_noise_mixing > 0:
                rand_states = counter_states(cfg, derive_seed(seed, 2, step), c, S).to(dev)
                if dampened_state_mixer:
                    active = rec_counter[c : c + S]
                    noise = (state_noise_mixing / (1 + active))[None, :, None].to(dtype=states.dtype, device=dev)
                else:
                    noise = torch.as_tensor(state_noise_mixing, dtype=states.dtype, device=dev)
                if sqrt_mixer:
                    states = states * F.relu(1 - noise).sqrt() + noise.sqrt() * rand_states
                else:
                    states = states * (1 - noise) + noise * rand_states
            for s in range(inner_recurrence):
                states = self.iterate_one_step(e, states, freqs, s, cache)
                rec_counter[c : c + S] += 1
                n_core += 1
                n_tok += S
            all_logits = self.predict_from_latents(states, freqs, cache)
            cache.finish(inner_recurrence)
            final_logits = all_logits[0, max(frozen.shape[1] - 1 - c, 0) :, :]
            top_gaps(final_logits)
            new_tokens = final_logits.argmax(-1, keepdim=True).T  # [1, n]
            potential = torch.cat([frozen, new_tokens[:, :-1]], dim=1)
            tok_stable[: cur.shape[1]] += (cur == potential)[0].long()
            if headway > 1:
                ks = derive_seed(seed, 3, step)
                mod = min(65510, cfg.vocab_size)  # quirk 10
                extra = torch.tensor([[counter_bits(ks, j, 0) % mod for j in range(headway - 1)]],
                                     dtype=torch.long, device=dev)
            else:
                extra = torch.zeros(1, 0, dtype=torch.long, device=dev)
            cur = torch.cat([frozen, new_tokens, extra], dim=1)
            if continuous_compute and states.shape[1] >= headway:
                new_state = states[:, -headway:].clone()
            else:
                new_state = fresh(step + 1, c + S, headway)
            states = torch.cat([states, new_state], dim=1)

            if max_wavefront > 0 and states.shape[1] > max_wavefront:
                h_in = max_wavefront - (states.shape[1] - headway)
                states = states[:, :max_wavefront]
                cur = cur[:, : c + max_wavefront]
                n_standing += 1
            else:
                h_in = headway

            if freeze == "latent-diff":
                matching_prev = previous_states[:, c - old_cache_index :]  # quirk 2
                match = states[:, : matching_prev.shape[1], :]
                crit = (match - matching_prev).norm(dim=-1) / match.norm(dim=-1)
                criteria.extend(float(v) for v in crit[0])
                exits = crit < exit_threshold
                if exits.sum() > 0:
                    k = c + int(exits.nonzero()[-1][1]) + 1  # quirk 3
                    clr = cur.shape[1] - h_in - k + 1
                    cache.clear_last_k_entries(clr)
                    n_clears += clr
                    states = states[:, k - c - 1 :, :]
                    frozen = cur[:, :k]
                else:
                    clr = states.shape[1] - h_in
                    cache.clear_last_k_entries(clr)
                    n_clears += clr
            elif freeze == "token-stability":
                thr = num_steps // inner_recurrence
                if bool((tok_stable > thr).any()):
                    k = int((tok_stable > thr).nonzero()[-1][0]) + 1
                    clr = cur.shape[1] - h_in - k + 1
                    cache.clear_last_k_entries(clr)
                    n_clears += clr
                    states = states[:, k - c - 1 :, :]
                    frozen = cur[:, :k]
                else:
                    clr = states.shape[1] - h_in
                    cache.clear_last_k_entries(clr)
                    n_clears += clr
                    k = 0
            else:  # fixed
                if step > num_steps // inner_recurrence:
                    if h_in < headway:  # quirk 7
                        raise ValueError("generate_parallel: freeze 'fixed' with a trimmed wave (upstream fails here)")
                    clr = states.shape[1] - headway - h_in
                    cache.clear_last_k_entries(clr)
                    n_clears += clr
                    states = states[:, h_in:, :]
                    frozen = torch.cat([frozen, new_tokens[:, :h_in]], dim=-1)
                else:
                    clr = states.shape[1] - h_in
                    cache.clear_last_k_entries(clr)
                    n_clears += clr
            trace.append([c, S, int(frozen.shape[1])])

            if step > num_steps:  # quirk 8
                if freeze == "latent-diff":
                    tail = frozen[0, old_k:k].tolist()
                else:
                    tail = frozen[0, -headway:].tolist()
                if any(int(t) in stops for t in tail):
                    break
            if step > max_diffusion_steps:  # quirk 9
                break
            previous_states = states.clone()
            old_cache_index = c
            step += 1
            old_k = k

        n = frozen.shape[1]
        details = {
            "diffusion_steps": step,
            "num_core_forward_passes": n_core,
            "num_tokens_forward": n_tok,
            "num_cache_clears": n_clears,
            "num_standing_waves": n_standing,
            "recurrence_per_position": rec_counter[:n].tolist(),
            "token_stable_per_position": tok_stable[:n].tolist(),
            "trace": trace,
            "gaps": gaps,
            "criteria": criteria,
            "cache": cache,
        }
        return frozen[:, P:].clone(), details

    # -- init ------------------------------------------------------------------------------------
    @torch.no_grad()
    def init_weights(self, seed: int, golden: bool = False) -> None:
        """"takase" init: trunc-normal at +-3 sigma; out projections scaled; norms 1; qk_bias 0.

        Both halves of mlp.fc use sigma, as the training code does (the HF _init_weights uses the
        out_proj std for the up half; irrelevant for inference).  golden=True additionally draws
        norm weights 1 + 0.1*randn and qk_bias 0.1*randn (and bias vectors, if any) so that bugs
        in those paths change the outputs of the golden fixtures.
        """
        g = torch.Generator().manual_seed(seed)
        iv = self.config.init_values
        std, out_std = iv["std"], iv["out_proj"]

        def tn(t: torch.Tensor, s: float) -> None:
            nn.init.trunc_normal_(t, 0.0, s, -3.0 * s, 3.0 * s, generator=g)

        tn(self.transformer["wte"].weight, iv["embedding"])
        if self.lm_head is not None:
            tn(self.lm_head.weight, std)
        if "adapter" in self.transformer:
            tn(self.transformer["adapter"].weight, std)
        blocks = list(self.transformer["prelude"]) + list(self.transformer["core_block"]) + list(
            self.transformer["coda"]
        )
        for b in blocks:
            tn(b.attn.Wqkv.weight, std)
            tn(b.attn.proj.weight, out_std)
            tn(b.mlp.fc.weight, std)
            tn(b.mlp.proj.weight, out_std)
        norms = [m for m in self.modules() if isinstance(m, RMSNorm)]
        for n in norms:
            if golden:
                n.weight.copy_(1.0 + 0.1 * torch.randn(n.weight.shape, generator=g))
            else:
                n.weight.fill_(1.0)
        for b in blocks:
            if b.attn.qk_bias is not None:
                if golden:
                    b.attn.qk_bias.copy_(0.1 * torch.randn(b.attn.qk_bias.shape, generator=g))
                else:
                    b.attn.qk_bias.zero_()
        for m in self.modules():
            if isinstance(m, nn.Linear) and m.bias is not None:
                if golden:
                    m.bias.copy_(0.02 * torch.randn(m.bias.shape, generator=g))
                else:
                    m.bias.zero_()

    # -- checkpoints -----------------------------------------------------------------------------
    def hf_state_dict(self, include_freqs_cis: bool = True, duplicate_lm_head: bool = True) -> Dict[str, torch.Tensor]:
        """Tensors under their HF names, in module order (fp32, detached, contiguous copies)."""
        sd: Dict[str, torch.Tensor] = {}
        for name, p in self.named_parameters():
            sd[name] = p.detach().clone().contiguous()
        if self.lm_head is None and duplicate_lm_head:
            sd["lm_head.weight"] = self.transformer["wte"].weight.detach().clone().contiguous()
        if include_freqs_cis:
            sd["freqs_cis"] = self.freqs_cis.detach().clone().contiguous()
        return sd

    def save_pretrained(
        self,
        out_dir: str,
        dtype: torch.dtype = torch.float32,
        shards: int = 1,
        include_freqs_cis: bool = True,
        duplicate_lm_head: bool = True,
        omit_config_keys: Iterable[str] = (),
    ) -> List[str]:
        """Write config.json and safetensors file(s). freqs_cis always stays float32.

        shards == 1: model.safetensors; shards > 1: model-0000k-of-0000n.safetensors plus
        model.safetensors.index.json {"metadata": {"total_size"}, "weight_map"}.
        Returns the list of written file names.
        """
        from safetensors.torch import save_file

        os.makedirs(out_dir, exist_ok=True)
        dtype_name = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[dtype]
        self.config.to_json(os.path.join(out_dir, "config.json"), dtype_name, omit_config_keys)
        sd = self.hf_state_dict(include_freqs_cis, duplicate_lm_head)
        tensors = {k: (v if k == "freqs_cis" else v.to(dtype)).contiguous() for k, v in sd.items()}
        names = list(tensors)
        written = ["config.json"]
        meta = {"format": "pt"}
        if shards <= 1:
            save_file(tensors, os.path.join(out_dir, "model.safetensors"), metadata=meta)
            return written + ["model.safetensors"]
        nbytes = {k: t.numel() * t.element_size() for k, t in tensors.items()}
        total = sum(nbytes.values())
        # Contiguous split by bytes in module order; every shard gets at least one tensor.
        groups: List[List[str]] = [[]]
        acc = 0
        for idx, k in enumerate(names):
            left = len(names) - idx
            need = shards - len(groups)
            if groups[-1] and need > 0 and (acc >= total * len(groups) / shards or left <= need):
                groups.append([])
            groups[-1].append(k)
            acc += nbytes[k]
        if len(groups) != shards or any(not g for g in groups):
            raise RuntimeError(f"could not split {len(names)} tensors into {shards} shards")
        weight_map = {}
        for i, g in enumerate(groups):
            fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
            save_file({k: tensors[k] for k in g}, os.path.join(out_dir, fname), metadata=meta)
            written.append(fname)
            for k in g:
                weight_map[k] = fname
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        with open(os.path.join(out_dir, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
            json.dump(index, f, indent=2)
            f.write("\n")
        return written + ["model.safetensors.index.json"]

    @classmethod
    def from_pretrained(cls, model_dir: str) -> "Huginn":
        """Load config.json + safetensors (single or sharded); all tensors upcast to float32.

        A stored freqs_cis is used as is (bit-exactness); otherwise the table is computed in
        fp32.  A stored duplicate lm_head.weight is ignored when embeddings are tied.
        """
        cfg = HuginnConfig.from_json(os.path.join(model_dir, "config.json"))
        model = cls(cfg)
        stored = load_safetensors_dir(model_dir)
        own = dict(model.named_parameters())
        missing = [k for k in own if k not in stored]
        if missing:
            raise KeyError(f"{model_dir}: missing tensors {missing}")
        for k, t in stored.items():
            if k == "freqs_cis":
                if tuple(t.shape) != tuple(model.freqs_cis.shape):
                    raise ValueError(f"freqs_cis shape {tuple(t.shape)} != {tuple(model.freqs_cis.shape)}")
                model.freqs_cis.copy_(t.float())
            elif k == "lm_head.weight" and cfg.tie_embeddings:
                continue
            elif k in own:
                if tuple(t.shape) != tuple(own[k].shape):
                    raise ValueError(f"{k}: shape {tuple(t.shape)} != {tuple(own[k].shape)}")
                with torch.no_grad():
                    own[k].copy_(t.float())
            else:
                raise KeyError(f"{model_dir}: unexpected tensor {k}")
        model.eval()
        return model


def load_safetensors_dir(model_dir: str) -> Dict[str, torch.Tensor]:
    """All tensors of model.safetensors or of the shards named by model.safetensors.index.json."""
    from safetensors.torch import load_file

    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index, "r", encoding="utf-8") as f:
            weight_map = json.load(f)["weight_map"]
        out: Dict[str, torch.Tensor] = {}
        for fname in sorted(set(weight_map.values())):
            part = load_file(os.path.join(model_dir, fname))
            for k, v in part.items():
                if weight_map.get(k) != fname:
                    raise KeyError(f"{fname}: tensor {k} not mapped to this shard in the index")
                out[k] = v
        absent = [k for k in weight_map if k not in out]
        if absent:
            raise KeyError(f"index names tensors not found in shards: {absent}")
        return out
    return load_file(os.path.join(model_dir, "model.safetensors"))
