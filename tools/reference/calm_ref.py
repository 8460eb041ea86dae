#!/usr/bin/env python3
"""Muninn's own fp32 PyTorch reference for CALM (Continuous Autoregressive Language Models,
Shao et al. 2025): the chunk autoencoder, the energy-head CALM on a Llama backbone, its samplers,
generation and the BrierLM estimator. Written from the semantics of the authors' code (not copied
from it); tools/reference/README.md ("CALM reference") lists the exact rules, including the random
streams that replace the reference's torch / Python RNG so that the C++ port can draw the same
numbers.

Pieces
------
* `AEConfig` / `CALMConfig`: the fields of the reference's AutoencoderConfig / CALMConfig.
  `config_json()` gives the dict the reference's `save_pretrained` (transformers 4.43) writes:
  the fields that differ from PretrainedConfig's defaults plus `architectures`, `torch_dtype`,
  `transformers_version`; the CALM config has NO `model_type` key.
* `Autoencoder`: encoder (embed -> stage-0 AELayers per token -> flatten token-major ->
  squeeze Linear(K*H -> H) -> stage-1 AELayers -> RMSNorm -> Linear(H -> 2l) -> mean, log_std)
  and decoder (Linear(l -> H) -> stage-0 AELayers -> expand Linear(H -> K*H) -> split token-major
  -> stage-1 AELayers -> RMSNorm -> logits = h . W_lm^T, W_lm = the encoder's embedding).
  AELayer = x + SwiGLU(RMSNorm(x)); stage 0 has num_layers // 2 layers, stage 1 the rest.
* `CALM`: embed_proj (Linear(K*d -> 2d) -> SiLU -> Linear(2d -> d) -> LayerNorm) over the
  concatenated K token embeddings of each chunk; Llama backbone (causal, rotate-half RoPE at
  chunk positions 0..L-1, final RMSNorm); the energy head (`head`); the samplers; `generate`;
  `brier`.
* Random streams (`stream_seed`, `uniform01_at`, `head_noise`; include/muninn/core/random.hpp).
* Checkpoints: `Autoencoder.save/load`, `CALM.save` (the reference's `pytorch_model.bin` with
  every alias, or `model.safetensors` without the AE and with the head once), `CALM.load`.

API
---
    import sys; sys.path.insert(0, "tools/reference")
    import calm_ref as C
    ae = C.Autoencoder(C.AEConfig(vocab_size=64, ...)).init_weights(seed)
    mean, log_std = ae.encode(ids)             # ids [T] (T multiple of K) -> [T/K, l] each
    logits = ae.decode(z)                      # z [P, l] -> [P*K, V]
    m = C.CALM(C.CALMConfig(...), ae).init_weights(seed)
    hidden = m.backbone(ids)                   # ids [T] -> final normed hidden [T/K, d]
    z = m.head(h, u)                           # h [n, d] (or [d]), u [n, noise] -> [n, l]
    u = C.head_noise(seed, p, j0, count, noise_size)          # kind-1 stream, float32
    chunks = m.decode_chunks(z)                # [n, l] -> list of K-tuples (argmax)
    chunk, info = m.sample_chunk(h, p, seed, temperature, num_samples=200, sampler="approx"|"exact")
    out = m.generate(prompt, max_length, temperature, seed, num_samples=200, sampler="approx")
    b = m.brier(ids, seed)                     # Brier-1..4, BrierLM, the sampled chunks
    m.save(dir, ae_path="/mnt/authors/calm_ae", fmt="bin"|"safetensors"); C.CALM.load(dir, ae_dir=None)
    ae.save(dir); C.Autoencoder.load(dir)

Every computation is batch 1 (rows of the reference are independent), fp32, CPU. `margins` lists
passed to the decoding functions collect the top-1 minus top-2 logit gap of every argmax.

expected.json (tests/data/calm/, written by make_calm_fixtures.py; README.md there has tables)
----------------------------------------------------------------------------------------------
Floats are rounded to 8 significant digits (`v`, `temperature`: exact doubles); every tensor is
flattened row-major into one list; ids are int lists. K = patch_size, V = vocab, l = latent_size,
d = CALM hidden, nz = noise_size; p = chunk position (its hidden state predicts chunk p+1).
  "generator"         {"script", "attempt", "ae_weight_seed", "calm_weight_seed", "ids_seed",
                       "torch_version"}
  "config"            {"vocab_size", "pad_token_id", "eos_token_id", "bos_token_id",
                       "patch_size", "latent_size", "noise_size", "hidden_size" (d),
                       "ae_hidden_size", "num_hidden_layers", "num_mlp_layers",
                       "num_attention_heads", "num_key_value_heads"}
  "tolerances"        {"float": abs tolerance for every float list, "brier": for Brier values}
  "min_argmax_margin" every argmax behind an id in this file has top1 - top2 >= this
  "checkpoint"        {"calm_bin_keys", "calm_bin_storages", "ae_bin_keys", "ae_bin_storages",
                       "calm_safetensors_keys"}
  "ids"               [6*K] the test sequence (6 chunks)
  "ae"                {"mean" [6*l], "log_std" [6*l]: encoder outputs of the 6 chunks of ids;
                       "decoded_logits" [6*K*V]: decoder(mean), row = token (chunk-major);
                       "decoded_ids" [6*K]: their argmax}
  "embed_proj"        [6*d] embed_proj output (the backbone input) of the 6 chunks
  "hidden"            [6*d] final normed backbone hidden at positions 0..5 (causal)
  "head_noise"        [6*3*nz] explicit noise u, layout [p][s][k] (3 samples per position)
  "head_samples"      [6*3*l] head(hidden[p], u[p][s]), layout [p][s][i]
  "head_stream"       {"seed": 1234, "samples_per_position": 2,
                       "noise" [6*2*nz]: kind-1 noise of samples j = 0, 1 at p = 0..5, [p][j][k],
                       "samples" [6*2*l]: head outputs from that noise,
                       "chunks" [6*2*K]: their argmax decoded chunks, [p][j][t]}
  "generate"          list of cases {"name", "prompt", "padded_prompt", "temperature",
                       "sampler" ("approx" | "exact"), "num_samples" (approx, T < 1 only),
                       "n", "alpha" (exact only), "seed", "max_length",
                       "output": the final ids with every PAD removed,
                       "full": the ids before PAD removal, "finished_by_eos",
                       "steps": one per generated chunk {"position" p, "hidden" [d], "chunk" [K];
                         approx T < 1: "pool" [N*K] decoded samples j = 0..N-1, "m" (the m that
                         had candidates), "v" (kind-2 uniform); exact: "draws" (head samples
                         used), "bernoulli" (kind-3 uniforms used), "pool" [draws*K] every drawn
                         chunk in order}}
                       names: t1, t1_2_n16, t1_3_n16, exact_t1_2, exact_t0_4, eos_t1, pad_t1
  "brier"             {"seed": 1234, "brier1".."brier4", "brierlm" (= 100*max(prod, 0)^0.25),
                       "positions": 5, "chunks" [5*2*K]: decoded samples j = 0, 1 at p = 0..4
                       (kind-1 rule with seed stream_seed(1234, 4, 0)), [p][j][t],
                       "estimates" [5*4]: acc1 + acc2 - var, [p][n-1]}
"""
import json
import math
import os
import random
import sys
import zipfile
from collections import Counter
from dataclasses import dataclass, fields
from typing import Optional

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from huginn_ref import counter_bits, mix64  # noqa: E402
from mor_ref import apply_rope, rope_inv_freq  # noqa: E402  (HF rotate-half RoPE, as in the MoR reference)

_M64 = (1 << 64) - 1
TRANSFORMERS_VERSION = "4.43.0"   # the version the reference pins; its save_pretrained layout
EXACT_MAX_DRAWS = 1_000_000


# ----------------------------------------------------------------------------------------------
# random streams (include/muninn/core/random.hpp)


def stream_seed(seed, kind, n):
    """mix64(seed ^ mix64((kind << 32) + n)), all mod 2^64."""
    return mix64((seed & _M64) ^ mix64(((kind << 32) + n) & _M64))


def uniform01_at(seed, index):
    """Top 53 bits of counter_bits(seed, index, 0) times 2^-53: a double in [0, 1)."""
    return (counter_bits(seed, index, 0) >> 11) * (2.0 ** -53)


def head_noise(seed, p, j0, count, noise_size):
    """float32 [count, noise_size]: sample j = j0..j0+count-1 at chunk position p,
    u[j][k] = float32(uniform01_at(stream_seed(seed, 1, p), j*noise_size + k) - 0.5)
    (the subtraction in double, one rounding to fp32)."""
    s = stream_seed(seed, 1, p)
    vals = [uniform01_at(s, j * noise_size + k) - 0.5
            for j in range(j0, j0 + count) for k in range(noise_size)]
    return torch.tensor(vals, dtype=torch.float64).to(torch.float32).view(count, noise_size)


def alg2_uniform(seed, p):
    """The kind-2 choice uniform of Algorithm 2 at position p."""
    return uniform01_at(stream_seed(seed, 2, p), 0)


def bernoulli_uniform(seed, p, i):
    """The i-th kind-3 uniform of the exact sampler at position p."""
    return uniform01_at(stream_seed(seed, 3, p), i)


class _GivenUniform(random.Random):
    """A random.Random whose random() returns one given uniform: random.choices(k=1) draws
    exactly one, so the standard library's own choices() then picks as it would have with it."""

    def __init__(self, u):
        super().__init__(0)
        self.u = u

    def random(self):
        return self.u


def brier_seed(seed):
    """Seed that replaces `seed` in the kind-1 rule for BrierLM's head samples (kind 4)."""
    return stream_seed(seed, 4, 0)


# ----------------------------------------------------------------------------------------------
# configs


_PRETRAINED_DEFAULTS = {"pad_token_id": None, "bos_token_id": None, "eos_token_id": None,
                        "tie_word_embeddings": True}


def _config_json(cfg, skip, architecture):
    """What transformers 4.43's save_pretrained writes (to_diff_dict vs PretrainedConfig()):
    every field of the config class, the token ids and tie_word_embeddings when they differ from
    PretrainedConfig's defaults, plus architectures / torch_dtype / transformers_version."""
    d = {}
    for f in fields(cfg):
        if f.name in skip:
            continue
        v = getattr(cfg, f.name)
        if f.name in _PRETRAINED_DEFAULTS and v == _PRETRAINED_DEFAULTS[f.name]:
            continue
        d[f.name] = v
    d["architectures"] = [architecture]
    d["torch_dtype"] = "float32"
    d["transformers_version"] = TRANSFORMERS_VERSION
    return dict(sorted(d.items()))


def _write_json(path, d):
    """json.dumps(indent=2, sort_keys=True) + newline, as PretrainedConfig.to_json_file."""
    with open(path, "w") as f:
        f.write(json.dumps(d, indent=2, sort_keys=True) + "\n")


@dataclass
class AEConfig:
    """The reference's AutoencoderConfig (same names and defaults)."""
    ae_dropout: float = 0.15
    kl_clamp: float = 0.5
    kl_weight: float = 1e-3
    patch_size: int = 4
    vocab_size: int = 32000
    hidden_size: int = 512
    intermediate_size: int = 1280
    num_encoder_layers: int = 2
    num_decoder_layers: int = 2
    latent_size: int = 128
    hidden_act: str = "silu"
    max_position_embeddings: int = 2048
    initializer_range: float = 0.02
    rms_norm_eps: float = 1e-6
    pad_token_id: Optional[int] = None
    bos_token_id: Optional[int] = 1
    eos_token_id: Optional[int] = 2
    pretraining_tp: int = 1
    tie_word_embeddings: bool = False
    mlp_bias: bool = False

    def config_json(self):
        return _config_json(self, (), "Autoencoder")

    @classmethod
    def from_json(cls, d):
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class CALMConfig:
    """The reference's CALMConfig (same names and defaults; model_type is never written)."""
    ae_path: Optional[str] = None
    model_type: str = "energy"
    patch_size: int = 4
    num_mlp_layers: int = 4
    num_samples: int = 8
    beta: float = 1.0
    noise_size: int = 64
    vocab_size: int = 32000
    hidden_size: int = 768
    intermediate_size: int = 2048
    num_hidden_layers: int = 12
    latent_size: int = 128
    num_attention_heads: int = 12
    num_key_value_heads: int = 12
    hidden_act: str = "silu"
    max_position_embeddings: int = 2048
    initializer_range: float = 0.02
    rms_norm_eps: float = 1e-6
    use_cache: bool = True
    pad_token_id: Optional[int] = None
    bos_token_id: Optional[int] = 1
    eos_token_id: Optional[int] = 2
    pretraining_tp: int = 1
    tie_word_embeddings: bool = False
    rope_theta: float = 10000.0
    rope_scaling: Optional[dict] = None
    attention_bias: bool = False
    attention_dropout: float = 0.0
    mlp_bias: bool = False

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads

    def config_json(self):
        return _config_json(self, ("model_type",), "EnergyTransformer")

    def generation_config_json(self):
        """generation_config.json as save_pretrained writes it next to the CALM config."""
        d = {"_from_model_config": True}
        for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        d["transformers_version"] = TRANSFORMERS_VERSION
        return d

    @classmethod
    def from_json(cls, d):
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


# ----------------------------------------------------------------------------------------------
# maths


def rms_norm(x, w, eps):
    """HF LlamaRMSNorm: variance in fp32, cast back to the input dtype, then times the weight."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return w * xf.to(x.dtype)


def layer_norm(x, w, b, eps=1e-6):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def linear(x, w, b=None):
    return F.linear(x, w, b)


def swiglu(x, gate, up, down):
    return linear(F.silu(linear(x, gate)) * linear(x, up), down)








def causal_attention(q, k, v):
    """q [n,H,D], k/v [n,Hkv,D]; causal; query head h reads KV head h // (H/Hkv)."""
    n, H, D = q.shape
    rep = H // k.shape[1]
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    s = torch.einsum("nhd,mhd->hnm", q, k) * D ** -0.5
    mask = torch.ones(n, n, dtype=torch.bool).triu(1)
    s = s.masked_fill(mask[None], float("-inf"))
    p = torch.softmax(s.float(), dim=-1).to(q.dtype)
    return torch.einsum("hnm,mhd->nhd", p, v)


def argmax_margin(logits, margins):
    """Row-wise argmax (first maximum); appends the smallest top1 - top2 gap to `margins`."""
    if margins is not None:
        top = torch.topk(logits, 2, dim=-1).values
        margins.append(float((top[..., 0] - top[..., 1]).min()))
    return logits.argmax(-1)


def _randn(g, shape, mean=0.0, std=1.0):
    return torch.randn(shape, generator=g) * std + mean


# ----------------------------------------------------------------------------------------------
# autoencoder


class Autoencoder:
    """Weights keyed by the reference's names (`encoder.*`, `decoder.*`); the decoder's output
    matrix is the encoder's embedding (key `decoder.lm_head_weight`, one tensor)."""

    def __init__(self, cfg: AEConfig):
        self.cfg = cfg
        self.w = None

    def shapes(self):
        """(name, shape, kind) in the reference's state_dict order (without the alias)."""
        c = self.cfg
        H, I, K, l, V = c.hidden_size, c.intermediate_size, c.patch_size, c.latent_size, c.vocab_size

        def ae_layer(prefix):
            return [(prefix + "mlp.gate_proj.weight", (I, H), "lin"),
                    (prefix + "mlp.up_proj.weight", (I, H), "lin"),
                    (prefix + "mlp.down_proj.weight", (H, I), "lin"),
                    (prefix + "layernorm.weight", (H,), "norm")]
        out = [("encoder.embed_tokens.weight", (V, H), "embed")]
        for i in range(c.num_encoder_layers):
            out += ae_layer(f"encoder.encoder_layers.{i}.")
        out += [("encoder.hidden_to_latent.weight", (2 * l, H), "lin"),
                ("encoder.hidden_to_latent.bias", (2 * l,), "bias"),
                ("encoder.squeeze_layer.weight", (H, K * H), "lin"),
                ("encoder.squeeze_layer.bias", (H,), "bias"),
                ("encoder.norm.weight", (H,), "norm"),
                ("decoder.latent_to_hidden.weight", (H, l), "lin"),
                ("decoder.latent_to_hidden.bias", (H,), "bias")]
        for i in range(c.num_decoder_layers):
            out += ae_layer(f"decoder.decoder_layers.{i}.")
        out += [("decoder.expand_layer.weight", (K * H, H), "lin"),
                ("decoder.expand_layer.bias", (K * H,), "bias"),
                ("decoder.norm.weight", (H,), "norm")]
        return out

    def init_weights(self, seed, bias_std=0.1, norm_std=0.1):
        """Random weights: embedding N(0,1), Linear N(0, 1/fan_in), biases N(0, bias_std),
        RMSNorm weights N(1, norm_std)."""
        g = torch.Generator().manual_seed(seed)
        w = {}
        for name, shape, kind in self.shapes():
            if kind == "embed":
                w[name] = _randn(g, shape)
            elif kind == "lin":
                w[name] = _randn(g, shape, std=shape[1] ** -0.5)
            elif kind == "bias":
                w[name] = _randn(g, shape, std=bias_std)
            else:
                w[name] = _randn(g, shape, mean=1.0, std=norm_std)
        self.w = w
        return self

    @property
    def lm_head(self):
        return self.w["encoder.embed_tokens.weight"]

    def _layer(self, prefix, x):
        w, eps = self.w, self.cfg.rms_norm_eps
        h = rms_norm(x, w[prefix + "layernorm.weight"], eps)
        return x + swiglu(h, w[prefix + "mlp.gate_proj.weight"], w[prefix + "mlp.up_proj.weight"],
                          w[prefix + "mlp.down_proj.weight"])

    def encode(self, ids):
        """ids [T] (T a multiple of K) -> mean, log_std [T/K, l] (raw halves of hidden_to_latent)."""
        c, w = self.cfg, self.w
        K, H = c.patch_size, c.hidden_size
        ids = torch.as_tensor(ids, dtype=torch.long).view(-1, K)
        x = w["encoder.embed_tokens.weight"][ids]                  # [P, K, H]
        half = c.num_encoder_layers // 2
        for i in range(half):
            x = self._layer(f"encoder.encoder_layers.{i}.", x)
        x = x.reshape(-1, K * H)                                     # token-major concat
        x = linear(x, w["encoder.squeeze_layer.weight"], w["encoder.squeeze_layer.bias"])
        for i in range(half, c.num_encoder_layers):
            x = self._layer(f"encoder.encoder_layers.{i}.", x)
        x = rms_norm(x, w["encoder.norm.weight"], c.rms_norm_eps)
        lat = linear(x, w["encoder.hidden_to_latent.weight"], w["encoder.hidden_to_latent.bias"])
        mean, log_std = torch.chunk(lat, 2, dim=-1)
        return mean, log_std

    def decode(self, z):
        """z [P, l] -> logits [P*K, V] (chunk p's token k is row p*K + k)."""
        c, w = self.cfg, self.w
        x = linear(z, w["decoder.latent_to_hidden.weight"], w["decoder.latent_to_hidden.bias"])
        half = c.num_decoder_layers // 2
        for i in range(half):
            x = self._layer(f"decoder.decoder_layers.{i}.", x)
        x = linear(x, w["decoder.expand_layer.weight"], w["decoder.expand_layer.bias"])
        x = x.reshape(-1, c.hidden_size)                             # [P*K, H], token-major split
        for i in range(half, c.num_decoder_layers):
            x = self._layer(f"decoder.decoder_layers.{i}.", x)
        x = rms_norm(x, w["decoder.norm.weight"], c.rms_norm_eps)
        return linear(x, self.lm_head)

    def state_dict(self, prefix=""):
        """The reference's state_dict order. Like nn.Module.state_dict, every entry is its own
        tensor object (a detached view), so `decoder.lm_head_weight` is a second tensor on the
        embedding's storage: torch.save writes one storage record for both."""
        sd = {}
        for name, _, _ in self.shapes():
            if name == "decoder.latent_to_hidden.weight":
                sd[prefix + "decoder.lm_head_weight"] = self.lm_head.detach()
            sd[prefix + name] = self.w[name].detach()
        return sd

    def save(self, folder):
        os.makedirs(folder, exist_ok=True)
        _write_json(os.path.join(folder, "config.json"), self.cfg.config_json())
        torch.save(self.state_dict(), os.path.join(folder, "pytorch_model.bin"))

    @classmethod
    def from_state_dict(cls, cfg, sd, prefix=""):
        """Reads `prefix + encoder.* / decoder.*`; the decoder matrix is `decoder.lm_head_weight`
        when present, else the embedding (the alias is restored)."""
        ae = cls(cfg)
        ae.w = {name: sd[prefix + name] for name, _, _ in ae.shapes()}
        head = sd.get(prefix + "decoder.lm_head_weight")
        if head is not None:
            assert torch.equal(head, ae.w["encoder.embed_tokens.weight"]), "untied AE head"
        return ae

    @classmethod
    def load(cls, folder):
        cfg = AEConfig.from_json(json.load(open(os.path.join(folder, "config.json"))))
        sd = _load_weights(folder)
        return cls.from_state_dict(cfg, sd)


def _load_weights(folder):
    p = os.path.join(folder, "pytorch_model.bin")
    if os.path.exists(p):
        return torch.load(p, map_location="cpu", weights_only=True)
    from safetensors.torch import load_file
    return load_file(os.path.join(folder, "model.safetensors"))


def storage_records(path):
    """Names of the tensor-storage records inside a torch.save zip file."""
    with zipfile.ZipFile(path) as z:
        return sorted(n for n in z.namelist() if "/data/" in n and not n.endswith(".pkl"))


# ----------------------------------------------------------------------------------------------
# CALM


class CALM:
    """Weights keyed by the reference's names: `transformer.*`, `embed_proj.{0,2,3}.*` and the
    head under `mlp_generator.*` (saved under `generative_head.*` as well); `ae` is the
    Autoencoder (saved under `ae_model.*`)."""

    def __init__(self, cfg: CALMConfig, ae: Autoencoder):
        self.cfg = cfg
        self.ae = ae
        self.w = None
        assert ae.cfg.patch_size == cfg.patch_size and ae.cfg.latent_size == cfg.latent_size
        assert ae.cfg.vocab_size == cfg.vocab_size
        self.inv_freq = rope_inv_freq(cfg.head_dim, cfg.rope_theta)

    # -- weights

    def transformer_shapes(self):
        c = self.cfg
        d, I, V, D = c.hidden_size, c.intermediate_size, c.vocab_size, c.head_dim
        kv = c.num_key_value_heads * D
        out = [("transformer.embed_tokens.weight", (V, d), "embed")]
        for i in range(c.num_hidden_layers):
            p = f"transformer.layers.{i}."
            out += [(p + "self_attn.q_proj.weight", (c.num_attention_heads * D, d), "lin"),
                    (p + "self_attn.k_proj.weight", (kv, d), "lin"),
                    (p + "self_attn.v_proj.weight", (kv, d), "lin"),
                    (p + "self_attn.o_proj.weight", (d, c.num_attention_heads * D), "lin"),
                    (p + "mlp.gate_proj.weight", (I, d), "lin"),
                    (p + "mlp.up_proj.weight", (I, d), "lin"),
                    (p + "mlp.down_proj.weight", (d, I), "lin"),
                    (p + "input_layernorm.weight", (d,), "norm"),
                    (p + "post_attention_layernorm.weight", (d,), "norm")]
        out.append(("transformer.norm.weight", (d,), "norm"))
        return out

    def head_shapes(self):
        """Head tensors without prefix, in the reference's order."""
        c = self.cfg
        d, nz, l = c.hidden_size, c.noise_size, c.latent_size

        def lin(name, o, i):
            return [(name + ".weight", (o, i), "lin"), (name + ".bias", (o,), "bias")]

        def ln(name):
            return [(name + ".weight", (d,), "norm"), (name + ".bias", (d,), "lnbias")]
        out = lin("noise_embd", d, nz) + lin("hidden_embd", d, d) + ln("norm_hidden") + ln("norm_noise")
        for b in range(c.num_mlp_layers):
            p = f"mlp_blocks.{b}."
            out += ln(p + "in_ln") + lin(p + "linears.0", d, 2 * d) + lin(p + "linears.2", d, d) \
                + lin(p + "linears.4", 2 * d, d) + lin(p + "down_proj", d, d)
        out += ln("final_layer.in_ln") + lin("final_layer.linears.0", d, d) \
            + lin("final_layer.linears.2", l, d)
        return out

    def embed_proj_shapes(self):
        c = self.cfg
        d, K = c.hidden_size, c.patch_size
        return [("embed_proj.0.weight", (2 * d, K * d), "lin"), ("embed_proj.0.bias", (2 * d,), "bias"),
                ("embed_proj.2.weight", (d, 2 * d), "lin"), ("embed_proj.2.bias", (d,), "bias"),
                ("embed_proj.3.weight", (d,), "norm"), ("embed_proj.3.bias", (d,), "lnbias")]

    def init_weights(self, seed, bias_std=0.1, norm_std=0.1, gain=None, noise_columns=1.0):
        """Random weights: embedding N(0,1), Linear N(0, (gain/sqrt(fan_in))^2) (gain 1 unless
        `gain[name]` says otherwise), biases N(0, bias_std), norm weights N(1, norm_std),
        LayerNorm biases N(0, bias_std). The head's last Linear is random, not zero.
        `noise_columns` scales the columns of every head block's first Linear that read the
        noise stream (the first d inputs): < 1 makes the samples depend less on the noise than
        on the hidden state, so that chunks repeat within a position and differ across them."""
        gain = gain or {}
        g = torch.Generator().manual_seed(seed)
        w = {}
        shapes = (self.transformer_shapes()
                  + [("mlp_generator." + n, s, k) for n, s, k in self.head_shapes()]
                  + self.embed_proj_shapes())
        for name, shape, kind in shapes:
            if kind == "embed":
                w[name] = _randn(g, shape)
            elif kind == "lin":
                w[name] = _randn(g, shape, std=gain.get(name, 1.0) * shape[1] ** -0.5)
            elif kind in ("bias", "lnbias"):
                w[name] = _randn(g, shape, std=bias_std)
            else:
                w[name] = _randn(g, shape, mean=1.0, std=norm_std)
        d = self.cfg.hidden_size
        for b in range(self.cfg.num_mlp_layers):
            w[f"mlp_generator.mlp_blocks.{b}.linears.0.weight"][:, :d] *= noise_columns
        self.w = w
        return self

    # -- forward pieces

    def embed_chunks(self, ids):
        """ids [T] -> embed_proj(concat of the K token embeddings) [T/K, d]."""
        c, w = self.cfg, self.w
        ids = torch.as_tensor(ids, dtype=torch.long)
        e = w["transformer.embed_tokens.weight"][ids].reshape(-1, c.patch_size * c.hidden_size)
        x = F.silu(linear(e, w["embed_proj.0.weight"], w["embed_proj.0.bias"]))
        x = linear(x, w["embed_proj.2.weight"], w["embed_proj.2.bias"])
        return layer_norm(x, w["embed_proj.3.weight"], w["embed_proj.3.bias"], 1e-6)

    def backbone(self, ids):
        """ids [T] -> final normed hidden [T/K, d]; chunk i at RoPE position i; causal."""
        c, w = self.cfg, self.w
        x = self.embed_chunks(ids)
        n, H, Hkv, D = x.shape[0], c.num_attention_heads, c.num_key_value_heads, c.head_dim
        pos = torch.arange(n)
        for i in range(c.num_hidden_layers):
            p = f"transformer.layers.{i}."
            h = rms_norm(x, w[p + "input_layernorm.weight"], c.rms_norm_eps)
            q = apply_rope(linear(h, w[p + "self_attn.q_proj.weight"]).view(n, H, D), pos, self.inv_freq)
            k = apply_rope(linear(h, w[p + "self_attn.k_proj.weight"]).view(n, Hkv, D), pos, self.inv_freq)
            v = linear(h, w[p + "self_attn.v_proj.weight"]).view(n, Hkv, D)
            x = x + linear(causal_attention(q, k, v).reshape(n, H * D), w[p + "self_attn.o_proj.weight"])
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], c.rms_norm_eps)
            x = x + swiglu(h, w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"],
                           w[p + "mlp.down_proj.weight"])
        return rms_norm(x, w["transformer.norm.weight"], c.rms_norm_eps)

    def head(self, h, u):
        """Energy head: h [n, d] or [d] (broadcast), u [n, noise] -> z [n, l]."""
        w = {k[len("mlp_generator."):]: v for k, v in self.w.items() if k.startswith("mlp_generator.")}
        if h.dim() == 1:
            h = h.unsqueeze(0)
        h = h.expand(u.shape[0], -1)
        u = u.to(h.dtype)   # the reference draws the noise in the hidden state's dtype
        e = layer_norm(linear(u, w["noise_embd.weight"], w["noise_embd.bias"]),
                       w["norm_noise.weight"], w["norm_noise.bias"])
        c = layer_norm(linear(h, w["hidden_embd.weight"], w["hidden_embd.bias"]),
                       w["norm_hidden.weight"], w["norm_hidden.bias"])
        for b in range(self.cfg.num_mlp_layers):
            p = f"mlp_blocks.{b}."
            a = torch.cat((layer_norm(e, w[p + "in_ln.weight"], w[p + "in_ln.bias"]), c), dim=-1)
            t = F.silu(linear(a, w[p + "linears.0.weight"], w[p + "linears.0.bias"]))
            t = F.silu(linear(t, w[p + "linears.2.weight"], w[p + "linears.2.bias"]))
            t = linear(t, w[p + "linears.4.weight"], w[p + "linears.4.bias"])
            gate, up = torch.chunk(t, 2, dim=-1)
            e = e + linear(F.silu(gate) * up, w[p + "down_proj.weight"], w[p + "down_proj.bias"])
        t = layer_norm(e, w["final_layer.in_ln.weight"], w["final_layer.in_ln.bias"])
        t = F.silu(linear(t, w["final_layer.linears.0.weight"], w["final_layer.linears.0.bias"]))
        return linear(t, w["final_layer.linears.2.weight"], w["final_layer.linears.2.bias"])

    def decode_chunks(self, z, margins=None):
        """z [n, l] -> n chunks (K-tuples of ints), each the argmax of the AE decoder's logits."""
        K = self.cfg.patch_size
        ids = argmax_margin(self.ae.decode(z), margins).view(-1, K)
        return [tuple(int(t) for t in row) for row in ids]

    def samples(self, h, p, seed, j0, count, margins=None):
        """Decoded chunks of head samples j0..j0+count-1 at position p (kind-1 noise)."""
        u = head_noise(seed, p, j0, count, self.cfg.noise_size)
        return self.decode_chunks(self.head(h, u), margins)

    # -- samplers

    @staticmethod
    def check_temperature(T):
        """The reference's rule for Algorithm 2: 0 < T <= 1 and 1/T an integer within rel 1e-9;
        returns n = round(1/T)."""
        if not (0 < T <= 1.0):
            raise ValueError("Temperature must be in the range (0, 1].")
        inv = 1.0 / T
        if not math.isclose(inv, round(inv), rel_tol=1e-9, abs_tol=0.0):
            raise ValueError(f"1/T = {inv} is not an integer")
        return int(round(inv))

    @staticmethod
    def exact_params(T):
        """Algorithm 1's n and alpha: inv = 1/T in double; if inv is an integer within rel 1e-9,
        n = round(inv), alpha = 0; else n = floor(inv), alpha = inv - n (double)."""
        if not (0 < T <= 1.0):
            raise ValueError("Temperature must be in the range (0, 1].")
        inv = 1.0 / T
        if math.isclose(inv, round(inv), rel_tol=1e-9, abs_tol=0.0):
            return int(round(inv)), 0.0
        n = math.floor(inv)
        return n, inv - n

    @staticmethod
    def choose_alg2(pool, n, v):
        """Algorithm 2's count-and-choose with the contract's deterministic draw: candidates of
        the first m = n, n-1, ..., 1 with any chunk counted >= m, ordered by their K-token key
        ascending, weights C(count, m) (double), the first candidate with v*W < cumsum.
        Returns (chunk, m)."""
        counts = Counter(pool)
        for m in range(n, 0, -1):
            cands = sorted(c for c, k in counts.items() if k >= m)
            if not cands:
                continue
            weights = [float(math.comb(counts[c], m)) for c in cands]
            W = 0.0
            for x in weights:
                W += x
            cum = 0.0
            for c, x in zip(cands, weights):
                cum += x
                if v * W < cum:
                    return c, m
            return cands[-1], m   # unreachable: v < 1
        raise AssertionError("empty pool")

    @staticmethod
    def choose_reference(pool, n, u):
        """Algorithm 2 as the authors' code draws it, with its one uniform given: the candidates of
        the first m = n, n-1, ..., 1 with any chunk counted >= m in first-appearance order (a
        Counter's insertion order), integer weights math.comb(count, m), and Python's own
        random.choices fed u as its random() (so the cumulative sums, the float total and the
        bisection are the standard library's). Returns (chunk, m)."""
        counts = Counter(pool)
        for m in range(n, 0, -1):
            cands = [c for c, k in counts.items() if k >= m]
            if cands:
                weights = [math.comb(counts[c], m) for c in cands]
                return _GivenUniform(u).choices(cands, weights=weights, k=1)[0], m
        raise AssertionError("empty pool")

    @staticmethod
    def exact_sampler(draw, uniform, T):
        """Algorithm 1 (exact, acceptance prop. to P(x)^(1/T)) over chunk draws `draw(j)`
        (j = 0, 1, ... in order) and Bernoulli uniforms `uniform(i)` (i = 0, 1, ...):
          loop: x* = draw; draw n-1 more, restart at the first one != x* (the rest of the n are
          not drawn); alpha = 0: accept x*; else for i = 1, 2, ...: x = draw; x == x*: accept;
          else restart if uniform < alpha / i (double).
        Returns (chunk, draws used, uniforms used)."""
        n, alpha = CALM.exact_params(T)
        j = 0
        b = 0
        while True:
            if j > EXACT_MAX_DRAWS:
                raise RuntimeError("exact sampler: too many draws")
            first = draw(j)
            j += 1
            ok = True
            for _ in range(n - 1):
                x = draw(j)
                j += 1
                if x != first:
                    ok = False
                    break
            if not ok:
                continue
            if alpha == 0.0:
                return first, j, b
            i = 1
            while True:
                x = draw(j)
                j += 1
                if x == first:
                    return first, j, b
                q = uniform(b)
                b += 1
                if q < alpha / i:
                    break
                i += 1

    def sample_chunk(self, h, p, seed, temperature, num_samples=200, sampler="approx", margins=None):
        """Next chunk from hidden h [d] at chunk position p. Returns (chunk, info)."""
        if sampler == "exact":
            cache = {}

            def draw(j):
                if j not in cache:
                    cache[j] = self.samples(h, p, seed, j, 1, margins)[0]
                return cache[j]
            chunk, draws, bern = self.exact_sampler(draw, lambda i: bernoulli_uniform(seed, p, i),
                                                     temperature)
            return chunk, {"draws": draws, "bernoulli": bern, "pool": [cache[j] for j in range(draws)]}
        n = self.check_temperature(temperature)
        if temperature == 1.0:   # one head sample, no choice draw (the reference's T = 1 path)
            return self.samples(h, p, seed, 0, 1, margins)[0], {}
        pool = self.samples(h, p, seed, 0, num_samples, margins)
        v = alg2_uniform(seed, p)
        chunk, m = self.choose_alg2(pool, n, v)
        return chunk, {"pool": pool, "m": m, "v": v}

    def generate(self, prompt, max_length, temperature, seed, num_samples=200, sampler="approx",
                 margins=None):
        """The reference's generate (batch 1): right-pad the prompt with PAD to a multiple of K;
        each step samples the next chunk from the last chunk position's hidden state (the whole
        prefix is recomputed; the reference uses its KV cache, same maths); stop after a chunk
        containing EOS, or once the length (PAD included) >= max_length; finally every PAD is
        removed. Returns a dict (see the module docstring, "generate")."""
        c = self.cfg
        K = c.patch_size
        ids = list(prompt)
        if len(ids) % K:
            ids += [c.pad_token_id] * (K - len(ids) % K)
        padded = list(ids)
        steps = []
        eos = False
        while True:
            hidden = self.backbone(ids)
            p = hidden.shape[0] - 1
            chunk, info = self.sample_chunk(hidden[p], p, seed, temperature, num_samples, sampler,
                                            margins)
            steps.append(dict(position=p, hidden=hidden[p], chunk=list(chunk), **info))
            ids += list(chunk)
            if c.eos_token_id in chunk:
                eos = True
                break
            if len(ids) >= max_length:
                break
        return {"padded_prompt": padded, "full": ids,
                "output": [t for t in ids if t != c.pad_token_id],
                "finished_by_eos": eos, "steps": steps}

    def generate_given(self, prompt, max_length, temperature, noise, uniforms, order="reference",
                       margins=None):
        """generate() with the random draws given, as a reference run makes them: step s feeds
        head noise noise[s] ([S, noise_size], S = num_samples) and, below T = 1, the choice
        uniform uniforms[s]. order "reference" picks as the authors' code (choose_reference),
        "key" as Muninn's default (choose_alg2). Returns the dict of generate()."""
        c = self.cfg
        K = c.patch_size
        ids = list(prompt)
        if len(ids) % K:
            ids += [c.pad_token_id] * (K - len(ids) % K)
        padded = list(ids)
        steps = []
        eos = False
        n = self.check_temperature(temperature)
        while True:
            s = len(steps)
            hidden = self.backbone(ids)
            p = hidden.shape[0] - 1
            pool = self.decode_chunks(self.head(hidden[p], noise[s]), margins)
            if temperature == 1.0:
                chunk, m = pool[0], 1
            elif order == "reference":
                chunk, m = self.choose_reference(pool, n, uniforms[s])
            else:
                chunk, m = self.choose_alg2(pool, n, uniforms[s])
            steps.append(dict(position=p, chunk=list(chunk), pool=pool, m=m))
            ids += list(chunk)
            if c.eos_token_id in chunk:
                eos = True
                break
            if len(ids) >= max_length:
                break
        return {"padded_prompt": padded, "full": ids,
                "output": [t for t in ids if t != c.pad_token_id],
                "finished_by_eos": eos, "steps": steps}

    def brier(self, ids, seed, margins=None):
        """The CALM BrierLM estimate (K >= 4 path), teacher forced: positions p = 0..L-2 predict
        chunk p+1 with head samples j = 0, 1 (kind-1 rule with seed stream_seed(seed, 4, 0));
        acc_k = cumprod(pred_k == target), var = cumprod(pred_1 == pred_2) along the chunk;
        Brier-n = mean over positions of acc_1 + acc_2 - var at index n-1;
        BrierLM = 100 * max(b1*b2*b3*b4, 0) ** 0.25."""
        K = self.cfg.patch_size
        assert K >= 4, "only the K >= 4 estimator is implemented"
        ids = list(ids)
        L = len(ids) // K
        assert L >= 2 and len(ids) == L * K
        hidden = self.backbone(ids[:(L - 1) * K])
        s4 = brier_seed(seed)
        chunks, est = [], []
        for p in range(L - 1):
            x1, x2 = self.samples(hidden[p], p, s4, 0, 2, margins)
            y = ids[(p + 1) * K:(p + 2) * K]
            chunks.append((x1, x2))
            a1 = a2 = v = 1
            row = []
            for k in range(4):
                a1 *= int(x1[k] == y[k])
                a2 *= int(x2[k] == y[k])
                v *= int(x1[k] == x2[k])
                row.append(a1 + a2 - v)
            est.append(row)
        b = [sum(r[n] for r in est) / len(est) for n in range(4)]
        prod = b[0] * b[1] * b[2] * b[3]
        return {"brier": b, "brierlm": 100.0 * max(prod, 0.0) ** 0.25, "chunks": chunks,
                "estimates": est}

    # -- checkpoints

    def state_dict(self, fmt="bin"):
        """fmt "bin": the reference's EnergyTransformer.state_dict() (order and aliases: the AE
        under ae_model.* with decoder.lm_head_weight = the embedding tensor, the head under
        mlp_generator.* and generative_head.* as the same tensors). fmt "safetensors": no AE, the
        head once under generative_head.*. Every entry is its own tensor object (a detached view,
        as nn.Module.state_dict gives); aliases share the storage."""
        sd = {}
        if fmt == "bin":
            sd.update(self.ae.state_dict("ae_model."))
        for name, _, _ in self.transformer_shapes():
            sd[name] = self.w[name].detach()
        prefixes = ("mlp_generator.", "generative_head.") if fmt == "bin" else ("generative_head.",)
        for pre in prefixes:
            for name, _, _ in self.head_shapes():
                sd[pre + name] = self.w["mlp_generator." + name].detach()
        for name, _, _ in self.embed_proj_shapes():
            sd[name] = self.w[name].detach()
        return sd

    def save(self, folder, ae_path, fmt="bin"):
        os.makedirs(folder, exist_ok=True)
        cfg = CALMConfig(**{f.name: getattr(self.cfg, f.name) for f in fields(self.cfg)})
        cfg.ae_path = ae_path
        _write_json(os.path.join(folder, "config.json"), cfg.config_json())
        _write_json(os.path.join(folder, "generation_config.json"), cfg.generation_config_json())
        sd = self.state_dict(fmt)
        if fmt == "bin":
            torch.save(sd, os.path.join(folder, "pytorch_model.bin"))
        else:
            from safetensors.torch import save_file
            save_file({k: v.contiguous() for k, v in sd.items()},
                      os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})

    @classmethod
    def load(cls, folder, ae_dir=None):
        """config.json + pytorch_model.bin or model.safetensors. The head is read from
        generative_head.* or mlp_generator.*; the AE from ae_model.* when present, else from
        `ae_dir` (a saved Autoencoder folder). config.json's ae_path is never opened."""
        cfg = CALMConfig.from_json(json.load(open(os.path.join(folder, "config.json"))))
        sd = _load_weights(folder)
        if any(k.startswith("ae_model.") for k in sd):
            ae_cfg = AEConfig.from_json(json.load(open(os.path.join(ae_dir, "config.json")))) \
                if ae_dir else _ae_config_from(cfg, sd)
            ae = Autoencoder.from_state_dict(ae_cfg, sd, "ae_model.")
        else:
            ae = Autoencoder.load(ae_dir)
        m = cls(cfg, ae)
        w = {}
        for name, _, _ in m.transformer_shapes() + m.embed_proj_shapes():
            w[name] = sd[name]
        for name, _, _ in m.head_shapes():
            a, b = sd.get("generative_head." + name), sd.get("mlp_generator." + name)
            if a is not None and b is not None:
                assert torch.equal(a, b), name
            w["mlp_generator." + name] = a if a is not None else b
        m.w = w
        return m


def _ae_config_from(cfg, sd):
    """AE sizes from the tensors (when no AE config.json is at hand)."""
    emb = sd["ae_model.encoder.embed_tokens.weight"]
    n_enc = len({k.split(".")[3] for k in sd if k.startswith("ae_model.encoder.encoder_layers.")})
    n_dec = len({k.split(".")[3] for k in sd if k.startswith("ae_model.decoder.decoder_layers.")})
    return AEConfig(vocab_size=emb.shape[0], hidden_size=emb.shape[1],
                    intermediate_size=sd["ae_model.encoder.encoder_layers.0.mlp.gate_proj.weight"].shape[0],
                    latent_size=sd["ae_model.decoder.latent_to_hidden.weight"].shape[1],
                    patch_size=cfg.patch_size, num_encoder_layers=n_enc, num_decoder_layers=n_dec,
                    rms_norm_eps=cfg.rms_norm_eps, pad_token_id=cfg.pad_token_id,
                    bos_token_id=cfg.bos_token_id, eos_token_id=cfg.eos_token_id)
