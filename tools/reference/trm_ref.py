#!/usr/bin/env python3
"""Muninn's own PyTorch reference for the Tiny Recursive Model (TRM, Jolicoeur-Martineau 2025) and
the Hierarchical Reasoning Model (HRM, Wang et al. 2025). Written from the semantics of the two
reference code bases (not copied from them); tools/reference/README.md ("TRM / HRM reference")
lists the exact rules and where this file had to choose.

Pieces:

* The network: token embedding x sqrt(D) behind a puzzle-embedding prefix (16 positions for TRM,
  ceil(puzzle_emb_ndim / D) = 1 for HRM; only the first carries the table row), post-norm blocks
  with a weightless RMSNorm (fp32 variance), bidirectional attention with rotate-half RoPE over
  all positions (the prefix included) and a fused qkv projection, SwiGLU with the reference's
  inter size rule ceil_256(round(e*h*2/3)), the token-mixing variant (`mlp_t`: a SwiGLU over the
  sequence axis, normalised over the sequence axis), learned or no positions.
* The recursion of one supervision step: TRM runs one net for both updates (H_cycles outer cycles
  of L_cycles z_L updates and one z_H update); HRM has an L net and an H net with their own layer
  counts. Injection is added to the state before the net's layers.
* Heads: `lm_head` on z_H without the prefix, `q_head` on z_H position 0, in the forward dtype and
  cast to fp32 afterwards (the reference's order).
* The supervision loop: `ACTModel.act_step` is the reference's carried-state ACT wrapper (halted
  slots restart from H_init / L_init and take the fresh batch row); `solve` is the inference loop
  with a fixed number of supervision steps (the reference's evaluation) or Q-halt (a sample stops
  at the first step whose halt logit says so; halting on a strict >), reporting each sample's step.
* The released checkpoint layout: `state_dict()` of the module tree ACTLossHead(model) and
  torch.compile's `_orig_mod` wrapper (keys `_orig_mod.model.inner.*` or `model.inner.*`), the
  run's `all_config.yaml` as the training script dumps it, and a reader for both.

Compute dtypes: `forward_dtype` "float32" or "bfloat16" as in the reference (weights are fp32 and
cast to the activation dtype at every use; RMSNorm and RoPE in fp32); every forward also takes a
`dtype` override, used for the float64 self-check and for the fp32 run of a bf16 checkpoint.
"""
import math
import os
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

ARCHS = ("trm", "hrm")
IGNORE_LABEL_ID = -100

# The model class names the reference's configs name (arch.name) and the loss head.
ARCH_NAMES = {
    "trm": "recursive_reasoning.trm@TinyRecursiveReasoningModel_ACTV1",
    "hrm": "hrm.hrm_act_v1@HierarchicalReasoningModel_ACTV1",
}
LOSS_NAME = "losses@ACTLossHead"


# ----------------------------------------------------------------------------------------------
# configuration


@dataclass
class RecursiveConfig:
    """The model config of both references (names as in their pydantic classes), plus `arch`."""
    arch: str = "trm"
    # from the dataset's metadata (train/dataset.json)
    seq_len: int = 16
    vocab_size: int = 6
    num_puzzle_identifiers: int = 1
    # architecture
    hidden_size: int = 16
    num_heads: int = 2
    expansion: float = 4
    H_cycles: int = 2
    L_cycles: int = 3
    H_layers: int = 0          # TRM: ignored (one net, L_level)
    L_layers: int = 2
    puzzle_emb_ndim: Optional[int] = None   # None -> hidden_size (the configs' ${.hidden_size})
    pos_encodings: str = "rope"             # rope | learned | none (none: TRM only)
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    halt_max_steps: int = 16
    halt_exploration_prob: float = 0.1
    forward_dtype: str = "bfloat16"         # the class default of both references
    # TRM only
    mlp_t: bool = False
    puzzle_emb_len: int = 16                # 0 -> ceil(puzzle_emb_ndim / hidden_size)
    no_ACT_continue: bool = True

    def __post_init__(self):
        assert self.arch in ARCHS, self.arch
        if self.puzzle_emb_ndim is None:
            self.puzzle_emb_ndim = self.hidden_size
        assert self.puzzle_emb_ndim > 0, "Muninn's reference needs a puzzle embedding"
        assert self.hidden_size % self.num_heads == 0
        assert self.forward_dtype in ("float32", "bfloat16"), self.forward_dtype
        assert self.pos_encodings in ("rope", "learned", "none"), self.pos_encodings
        if self.arch == "hrm":
            assert self.pos_encodings in ("rope", "learned"), "HRM has rope or learned positions"
            assert not self.mlp_t, "HRM has no token-mixing variant"
        assert self.H_cycles >= 1 and self.L_cycles >= 1 and self.L_layers >= 1
        assert self.arch == "trm" or self.H_layers >= 1

    @property
    def head_dim(self):
        return self.hidden_size // self.num_heads

    @property
    def prefix_len(self):
        """Puzzle-embedding positions in front of the grid."""
        ceil = -(self.puzzle_emb_ndim // -self.hidden_size)
        if self.arch == "trm" and self.puzzle_emb_len != 0:
            return self.puzzle_emb_len
        return ceil

    @property
    def total_len(self):
        return self.seq_len + self.prefix_len

    @property
    def dtype(self):
        return getattr(torch, self.forward_dtype)

    @property
    def halt_rule(self):
        """The Q-halt rule of the reference's training loop, used for learned halting."""
        if self.arch == "trm" and self.no_ACT_continue:
            return "q_halt > 0"
        return "q_halt > q_continue"

    def arch_keys(self):
        """The model keys a reference arch YAML holds (config/arch/*.yaml); the rest take the
        class defaults. TRM's arch YAML also names forward_dtype, mlp_t, puzzle_emb_len and
        no_ACT_continue; upstream HRM's names none of them (its forward_dtype defaults to bf16)."""
        keys = ["halt_exploration_prob", "halt_max_steps", "H_cycles", "L_cycles", "H_layers",
                "L_layers", "hidden_size", "num_heads", "expansion", "puzzle_emb_ndim",
                "pos_encodings"]
        if self.arch == "trm":
            keys += ["forward_dtype", "mlp_t", "puzzle_emb_len", "no_ACT_continue"]
        return keys

    @classmethod
    def from_run(cls, arch_block, dataset_json):
        """A config from the `arch` block of all_config.yaml and the dataset's metadata, with the
        reference classes' defaults for everything the YAML does not hold."""
        name = arch_block["name"]
        arch = "hrm" if "Hierarchical" in name else "trm"
        kw = {k: v for k, v in arch_block.items() if k in cls.__dataclass_fields__}
        kw.update(arch=arch, seq_len=dataset_json["seq_len"], vocab_size=dataset_json["vocab_size"],
                  num_puzzle_identifiers=dataset_json["num_puzzle_identifiers"])
        return cls(**kw)


def swiglu_inter(hidden, expansion):
    """The reference's SwiGLU width: round(e * h * 2/3) rounded up to a multiple of 256."""
    n = round(expansion * hidden * 2 / 3)
    return -(n // -256) * 256


# ----------------------------------------------------------------------------------------------
# maths


def trunc_normal_(t, std, generator=None, lower=-2.0, upper=2.0):
    """JAX-style truncated normal (the references' init): uniform in [erf(l/√2), erf(u/√2)],
    erfinv, times √2·σ' where σ' corrects the truncation so the result has std `std`, clipped."""
    with torch.no_grad():
        if std == 0:
            return t.zero_()
        sqrt2 = math.sqrt(2)
        a, b = math.erf(lower / sqrt2), math.erf(upper / sqrt2)
        z = (b - a) / 2
        c = (2 * math.pi) ** -0.5
        pdf_u, pdf_l = c * math.exp(-0.5 * lower ** 2), c * math.exp(-0.5 * upper ** 2)
        comp = std / math.sqrt(1 - (upper * pdf_u - lower * pdf_l) / z - ((pdf_u - pdf_l) / z) ** 2)
        u = torch.empty(t.shape, dtype=torch.float32).uniform_(a, b, generator=generator)
        u = u.erfinv_().mul_(sqrt2 * comp).clip_(lower * comp, upper * comp)
        return t.copy_(u)


def norm_dtype(dtype):
    """RMSNorm and RoPE run in fp32 (float64 in the float64 self-check)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def rms_norm(x, eps):
    """Weightless RMSNorm over the last axis, variance in fp32, cast back."""
    h = x.to(norm_dtype(x.dtype))
    h = h * torch.rsqrt(h.square().mean(-1, keepdim=True) + eps)
    return h.to(x.dtype)


def rope_tables(cfg, dtype):
    """cos, sin [S, head_dim] over positions 0..S-1 (prefix included), rotate-half layout."""
    d = cfg.head_dim
    ft = norm_dtype(dtype)
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=ft) / d))
    t = torch.arange(cfg.total_len, dtype=ft)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_rope(x, cos, sin):
    """x [B,S,H,hd] rotated in the tables' dtype and cast back to its own."""
    dt = x.dtype
    x = x.to(cos.dtype)
    return (x * cos.unsqueeze(-2) + rotate_half(x) * sin.unsqueeze(-2)).to(dt)


# ----------------------------------------------------------------------------------------------
# modules: attribute names are the reference's, so state_dict() has its key names and order


class CastedLinear(nn.Module):
    """fp32 weight (and bias) cast to the input's dtype at every call."""

    def __init__(self, n_in, n_out, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_out, n_in))
        self.bias = nn.Parameter(torch.zeros(n_out)) if bias else None

    def forward(self, x):
        b = self.bias.to(x.dtype) if self.bias is not None else None
        return F.linear(x, self.weight.to(x.dtype), b)


class CastedEmbedding(nn.Module):
    def __init__(self, n, dim):
        super().__init__()
        self.embedding_weight = nn.Parameter(torch.empty(n, dim))

    def forward(self, ids, dtype):
        return F.embedding(ids, self.embedding_weight.to(dtype))


class PuzzleEmbedding(nn.Module):
    """The puzzle table: a persistent fp32 buffer `weights` [num_ids, ndim] (not a Parameter)."""

    def __init__(self, n, dim):
        super().__init__()
        self.register_buffer("weights", torch.zeros(n, dim), persistent=True)

    def forward(self, ids, dtype):
        return self.weights[ids].to(dtype)


class Attention(nn.Module):
    """Bidirectional multi-head attention, fused qkv (rows: q heads, k heads, v heads), no bias."""

    def __init__(self, cfg):
        super().__init__()
        self.H, self.hd = cfg.num_heads, cfg.head_dim
        self.qkv_proj = CastedLinear(cfg.hidden_size, 3 * self.H * self.hd, bias=False)
        self.o_proj = CastedLinear(self.H * self.hd, cfg.hidden_size, bias=False)

    def forward(self, h, rope):
        B, S, _ = h.shape
        qkv = self.qkv_proj(h).view(B, S, 3 * self.H, self.hd)
        q, k, v = qkv[:, :, :self.H], qkv[:, :, self.H:2 * self.H], qkv[:, :, 2 * self.H:]
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=False)
        return self.o_proj(o.transpose(1, 2).reshape(B, S, self.H * self.hd))


class SwiGLU(nn.Module):
    """down(silu(gate) * up); gate_up_proj rows: the gate half, then the up half."""

    def __init__(self, hidden, expansion):
        super().__init__()
        inter = swiglu_inter(hidden, expansion)
        self.gate_up_proj = CastedLinear(hidden, 2 * inter, bias=False)
        self.down_proj = CastedLinear(inter, hidden, bias=False)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class Block(nn.Module):
    """Post-norm block: h = norm(h + mix(h)); h = norm(h + mlp(h)). mix is attention, or for
    mlp_t a SwiGLU over the sequence axis whose residual sum is normalised over that axis."""

    def __init__(self, cfg):
        super().__init__()
        self.mlp_t_variant = cfg.mlp_t
        self.eps = cfg.rms_norm_eps
        if cfg.mlp_t:
            self.mlp_t = SwiGLU(cfg.total_len, cfg.expansion)
        else:
            self.self_attn = Attention(cfg)
        self.mlp = SwiGLU(cfg.hidden_size, cfg.expansion)

    def forward(self, h, rope):
        if self.mlp_t_variant:
            t = h.transpose(1, 2)                       # [B, D, S]
            t = rms_norm(t + self.mlp_t(t), self.eps)   # norm over S
            h = t.transpose(1, 2)
        else:
            h = rms_norm(h + self.self_attn(h, rope), self.eps)
        return rms_norm(h + self.mlp(h), self.eps)


class Level(nn.Module):
    """One net: state + injection, then the layers."""

    def __init__(self, cfg, n_layers):
        super().__init__()
        self.layers = nn.ModuleList([Block(cfg) for _ in range(n_layers)])

    def forward(self, state, injection, rope):
        h = state + injection
        for layer in self.layers:
            h = layer(h, rope)
        return h


class Inner(nn.Module):
    """The network of one supervision step (the reference's `inner`)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        D, dt = cfg.hidden_size, cfg.dtype
        # Buffers of this module come first in state_dict(), then the children in this order.
        self.register_buffer("H_init", torch.zeros(D, dtype=dt), persistent=True)
        self.register_buffer("L_init", torch.zeros(D, dtype=dt), persistent=True)
        self.embed_tokens = CastedEmbedding(cfg.vocab_size, D)
        self.lm_head = CastedLinear(D, cfg.vocab_size, bias=False)
        self.q_head = CastedLinear(D, 2, bias=True)
        self.puzzle_emb = PuzzleEmbedding(cfg.num_puzzle_identifiers, cfg.puzzle_emb_ndim)
        if cfg.pos_encodings == "learned":
            self.embed_pos = CastedEmbedding(cfg.total_len, D)
        if cfg.arch == "hrm":
            self.H_level = Level(cfg, cfg.H_layers)
        self.L_level = Level(cfg, cfg.L_layers)

    # -- init ------------------------------------------------------------------------------------

    def init_weights(self, generator, q_std=None, puzzle_std=None):
        """The references' init (trunc normal, std 1/sqrt(fan_in); embeddings 1/sqrt(D); H_init,
        L_init std 1 in the forward dtype), except that the q head (reference: weight 0, bias -5)
        and the puzzle table (reference: zeros) get random values when the std is given, so a
        loader that drops them shows."""
        D = self.cfg.hidden_size
        for name, p in self.named_parameters():
            if name.endswith("embedding_weight"):
                trunc_normal_(p, 1.0 / math.sqrt(D), generator)
            elif name.endswith("bias"):
                p.data.zero_()
            else:
                trunc_normal_(p, 1.0 / math.sqrt(p.shape[1]), generator)
        for buf in (self.H_init, self.L_init):
            buf.copy_(trunc_normal_(torch.empty(D), 1.0, generator).to(buf.dtype))
        with torch.no_grad():
            if q_std is None:
                self.q_head.weight.zero_()
                self.q_head.bias.fill_(-5)
            else:
                trunc_normal_(self.q_head.weight, q_std, generator)
            if puzzle_std:
                trunc_normal_(self.puzzle_emb.weights, puzzle_std, generator)
        return self

    # -- forward ---------------------------------------------------------------------------------

    def input_embeddings(self, inputs, puzzle_identifiers, dtype):
        """[B, prefix + seq_len, D]: the puzzle row (zero-padded to prefix*D) then the tokens,
        (learned positions), times sqrt(D)."""
        cfg = self.cfg
        emb = self.embed_tokens(inputs.to(torch.int32), dtype)
        pz = self.puzzle_emb(puzzle_identifiers, dtype)
        pad = cfg.prefix_len * cfg.hidden_size - pz.shape[-1]
        if pad > 0:
            pz = F.pad(pz, (0, pad))
        emb = torch.cat((pz.view(-1, cfg.prefix_len, cfg.hidden_size), emb), dim=-2)
        if cfg.pos_encodings == "learned":
            emb = 0.707106781 * (emb + self.embed_pos.embedding_weight.to(dtype))
        return math.sqrt(cfg.hidden_size) * emb

    def initial_state(self, batch_size, dtype):
        """(z_H, z_L) of a fresh sample: H_init, L_init broadcast over the positions."""
        S, D = self.cfg.total_len, self.cfg.hidden_size
        zH = self.H_init.to(dtype).expand(batch_size, S, D).clone()
        zL = self.L_init.to(dtype).expand(batch_size, S, D).clone()
        return zH, zL

    def forward(self, zH, zL, inputs, puzzle_identifiers, dtype=None):
        """One supervision step from the state (z_H, z_L). Returns the new state (detached), logits
        [B, seq_len, V] (forward dtype), q_halt [B] and q_continue [B] (fp32). With gradients
        enabled, only the last cycle carries them, as in the reference (TRM: the last of the
        H_cycles; HRM: the last L update and the last H update)."""
        cfg = self.cfg
        dtype = dtype or cfg.dtype
        rope = rope_tables(cfg, dtype) if cfg.pos_encodings == "rope" else None
        x = self.input_embeddings(inputs, puzzle_identifiers, dtype)
        zH, zL = zH.to(dtype), zL.to(dtype)
        if cfg.arch == "trm":
            # H_cycles outer cycles: L_cycles updates z_L <- net(z_L, z_H + x), then
            # z_H <- net(z_H, z_L), one net for both.
            with torch.no_grad():
                for _ in range(cfg.H_cycles - 1):
                    for _ in range(cfg.L_cycles):
                        zL = self.L_level(zL, zH + x, rope)
                    zH = self.L_level(zH, zL, rope)
            for _ in range(cfg.L_cycles):
                zL = self.L_level(zL, zH + x, rope)
            zH = self.L_level(zH, zL, rope)
        else:
            # HRM: per H cycle, L_cycles updates of z_L by the L net, then z_H by the H net.
            with torch.no_grad():
                for h in range(cfg.H_cycles):
                    for l in range(cfg.L_cycles):
                        if not (h == cfg.H_cycles - 1 and l == cfg.L_cycles - 1):
                            zL = self.L_level(zL, zH + x, rope)
                    if h != cfg.H_cycles - 1:
                        zH = self.H_level(zH, zL, rope)
            zL = self.L_level(zL, zH + x, rope)
            zH = self.H_level(zH, zL, rope)
        logits = self.lm_head(zH)[:, cfg.prefix_len:]
        q = self.q_head(zH[:, 0]).to(torch.float32 if dtype != torch.float64 else dtype)
        return zH.detach(), zL.detach(), logits, q[..., 0], q[..., 1]


class ACTModel(nn.Module):
    """The ACT wrapper (the reference's `model`): carried per-slot state and halting."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.inner = Inner(cfg)

    def initial_carry(self, batch, dtype=None):
        """All slots halted, so the first act_step takes every batch row and resets every slot."""
        B = batch["inputs"].shape[0]
        dtype = dtype or self.cfg.dtype
        zH, zL = self.inner.initial_state(B, dtype)
        return dict(zH=zH, zL=zL, steps=torch.zeros(B, dtype=torch.int32),
                    halted=torch.ones(B, dtype=torch.bool),
                    data={k: torch.zeros_like(v) for k, v in batch.items()})

    @torch.no_grad()
    def act_step(self, carry, batch, halting="fixed", dtype=None):
        """The reference's ACT call: halted slots restart from (H_init, L_init), steps 0, and take
        the fresh batch row (the others keep theirs); one inner step; steps += 1; a slot halts at
        steps >= halt_max_steps, and with halting="q" also by the Q rule (the reference applies it
        in training only, with exploration, which is left out here)."""
        dtype = dtype or self.cfg.dtype
        h = carry["halted"]
        zH0, zL0 = self.inner.initial_state(h.shape[0], dtype)
        zH = torch.where(h.view(-1, 1, 1), zH0, carry["zH"].to(dtype))
        zL = torch.where(h.view(-1, 1, 1), zL0, carry["zL"].to(dtype))
        steps = torch.where(h, 0, carry["steps"])
        data = {k: torch.where(h.view((-1,) + (1,) * (batch[k].ndim - 1)), batch[k], v)
                for k, v in carry["data"].items()}
        zH, zL, logits, q_halt, q_cont = self.inner(zH, zL, data["inputs"], data["puzzle_identifiers"], dtype)
        steps = steps + 1
        halted = steps >= self.cfg.halt_max_steps
        if halting == "q":
            halted = halted | self.q_says_halt(q_halt, q_cont)
        new = dict(zH=zH, zL=zL, steps=steps, halted=halted, data=data)
        return new, dict(logits=logits, q_halt=q_halt, q_continue=q_cont, preds=logits.argmax(-1))

    def q_says_halt(self, q_halt, q_cont):
        """The Q rule, strict: TRM with no_ACT_continue q_halt > 0, else q_halt > q_continue."""
        if self.cfg.halt_rule == "q_halt > 0":
            return q_halt > 0
        return q_halt > q_cont

    @torch.no_grad()
    def solve(self, batch, max_steps=None, halting="fixed", dtype=None, record_states=False):
        """Inference: up to `max_steps` supervision steps (default halt_max_steps; more is allowed)
        with the state carried per sample. halting="fixed" runs every sample max_steps steps (the
        reference's evaluation); "q" stops a sample after the first step at which the Q rule
        holds, and it leaves the batch. Returns dict:
          steps [B] (steps each sample used), logits [B, L, V] and preds [B, L] at its last step,
          q_halt / q_continue [B] at its last step, and trace: per step s = 1..max_steps the
          outputs of the samples still running then ("active" mask, logits, q_halt, q_continue,
          preds; with record_states also zH, zL) computed for ALL samples (a stopped sample's
          entries are what it would have computed, so fixed and Q-halt runs share one trace)."""
        cfg = self.cfg
        dtype = dtype or cfg.dtype
        N = max_steps or cfg.halt_max_steps
        B = batch["inputs"].shape[0]
        zH, zL = self.inner.initial_state(B, dtype)
        active = torch.ones(B, dtype=torch.bool)
        steps = torch.zeros(B, dtype=torch.int32)
        out = dict(logits=None, preds=None, q_halt=None, q_continue=None)
        trace = []
        for s in range(1, N + 1):
            zH, zL, logits, qh, qc = self.inner(zH, zL, batch["inputs"], batch["puzzle_identifiers"], dtype)
            preds = logits.argmax(-1)  # first index on ties
            rec = dict(active=active.clone(), logits=logits, q_halt=qh, q_continue=qc, preds=preds)
            if record_states:
                rec.update(zH=zH.clone(), zL=zL.clone())
            trace.append(rec)
            steps = torch.where(active, s, steps)
            for k, v in (("logits", logits), ("preds", preds), ("q_halt", qh), ("q_continue", qc)):
                out[k] = v.clone() if out[k] is None else torch.where(
                    active.view((-1,) + (1,) * (v.ndim - 1)), v, out[k])
            if halting == "q":
                active = active & ~self.q_says_halt(qh, qc)
            if not active.any():
                break
        out.update(steps=steps, trace=trace)
        return out


class ACTLossHead(nn.Module):
    """Only the module path of the reference's loss head (`model`), for the key names."""

    def __init__(self, model):
        super().__init__()
        self.model = model


class Compiled(nn.Module):
    """torch.compile's wrapper: the compiled module is the child `_orig_mod`."""

    def __init__(self, mod):
        super().__init__()
        self._orig_mod = mod


# ----------------------------------------------------------------------------------------------
# the released layout: checkpoint, all_config.yaml


def saved_module(model, compiled=True):
    """The module whose state_dict() the training script saves: torch.compile(ACTLossHead(model))
    (keys `_orig_mod.model.inner.*`) or, with DISABLE_COMPILE, ACTLossHead(model) (`model.inner.*`)."""
    head = ACTLossHead(model)
    return Compiled(head) if compiled else head


def save_checkpoint(model, path, compiled=True, location=None):
    """torch.save(state_dict, path) as pretrain.py writes `step_N` (an OrderedDict with its
    `_metadata`). location="cuda:0" tags every storage as the GPU runs do (the bytes are the same;
    torch.serialization.location_tag is swapped while saving, no GPU needed)."""
    sd = saved_module(model, compiled).state_dict()
    if location is None:
        torch.save(sd, path)
        return sd
    real = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: location
    try:
        torch.save(sd, path)
    finally:
        torch.serialization.location_tag = real
    return sd


def load_checkpoint(path, cfg):
    """A model from a step_N file; accepts both prefixes (the way HRM's evaluate.py retries with
    `_orig_mod.` removed) and storages saved on cuda:0."""
    sd = torch.load(path, map_location="cpu", weights_only=True)
    prefix = "_orig_mod.model." if any(k.startswith("_orig_mod.") for k in sd) else "model."
    inner = {k[len(prefix):]: v for k, v in sd.items()}
    m = ACTModel(cfg)
    m.load_state_dict(inner, strict=True, assign=True)
    return m


def pretrain_config_dict(cfg, *, data_path, run_name, project_name=None, overrides=None):
    """The dict the reference's training script dumps as all_config.yaml (PretrainConfig.model_dump()):
    every field of its PretrainConfig with its value, and under `arch` the name, the loss and
    only the model keys the arch YAML held. TRM: `data_paths` list and its extra fields; HRM
    (upstream): `data_path` string. overrides: top-level values to replace, and "arch_extra", a
    list of model keys added on the command line (e.g. HRM's `+arch.forward_dtype=float32`)."""
    arch = {"name": ARCH_NAMES[cfg.arch],
            "loss": {"name": LOSS_NAME, "loss_type": "stablemax_cross_entropy"}}
    for k in cfg.arch_keys() + list((overrides or {}).get("arch_extra", [])):
        v = getattr(cfg, k)
        arch[k] = int(v) if k == "expansion" and float(v).is_integer() else v
    base = os.path.basename(data_path)
    o = dict(overrides or {})
    o.pop("arch_extra", None)
    if cfg.arch == "trm":
        project = project_name or f"{base.capitalize()}-ACT-torch"
        d = dict(arch=arch, data_paths=[data_path], data_paths_test=[], evaluators=[],
                 global_batch_size=768, epochs=50000, lr=1e-4, lr_min_ratio=1.0,
                 lr_warmup_steps=2000, weight_decay=1.0, beta1=0.9, beta2=0.95,
                 puzzle_emb_lr=1e-4, puzzle_emb_weight_decay=1.0, project_name=project,
                 run_name=run_name, load_checkpoint=None,
                 checkpoint_path=f"checkpoints/{project}/{run_name}", seed=0,
                 checkpoint_every_eval=True, eval_interval=5000, min_eval_interval=0,
                 eval_save_outputs=[], ema=True, ema_rate=0.999, freeze_weights=False)
    else:
        project = project_name or f"{base.capitalize()} ACT-torch"
        d = dict(arch=arch, data_path=data_path, global_batch_size=768, epochs=20000, lr=1e-4,
                 lr_min_ratio=1.0, lr_warmup_steps=2000, weight_decay=1.0, beta1=0.9, beta2=0.95,
                 puzzle_emb_lr=1e-4, puzzle_emb_weight_decay=1.0, project_name=project,
                 run_name=run_name, checkpoint_path=f"checkpoints/{project}/{run_name}", seed=0,
                 checkpoint_every_eval=True, eval_interval=2000, eval_save_outputs=[])
    for k, v in o.items():
        assert k in d, k
        d[k] = v
    return d


def write_all_config(path, d):
    """yaml.dump(config.model_dump(), f): PyYAML's defaults (keys sorted, block style)."""
    import yaml
    with open(path, "wt") as f:
        yaml.dump(d, f)


def read_run(folder, dataset_dir):
    """(config, model) from a run folder (all_config.yaml + the newest step_N) and the dataset's
    train/dataset.json, the way the reference's evaluate.py builds the model."""
    import json
    import yaml
    y = yaml.safe_load(open(os.path.join(folder, "all_config.yaml")))
    meta = json.load(open(os.path.join(dataset_dir, "train", "dataset.json")))
    cfg = RecursiveConfig.from_run(y["arch"], meta)
    steps = sorted((int(n[5:]), n) for n in os.listdir(folder) if n.startswith("step_") and n[5:].isdigit())
    return cfg, load_checkpoint(os.path.join(folder, steps[-1][1]), cfg)
