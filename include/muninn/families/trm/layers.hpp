#pragma once
/// \file
/// \brief The TRM / HRM network over the backend ops: the post-norm block (bidirectional
/// attention or the token-mixing SwiGLU, then the feature SwiGLU, each followed by a weightless
/// RMSNorm), a net (injection added, then the layers) and one supervision step of recursion.
///
/// A batch of n samples is n·S stacked rows (S = prefix + grid): the projections and SwiGLUs are
/// one GEMM over all rows; attention and RoPE run per sample (positions restart at 0 in each).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "muninn/families/trm/weights.hpp"
#include "muninn/ops/attention_mask.hpp"
#include "muninn/ops/ops.hpp"

namespace muninn {

/// \brief Scratch rows of one batch, sized for up to `capacity` samples and reused across steps.
template <class Backend, class T>
struct trm_workspace {
  using buffer = typename Backend::template buffer<T>;  ///< storage on the backend
  std::int64_t capacity = 0;  ///< samples the buffers hold
  buffer qkv;      ///< [n·S, 3D]
  buffer mix;      ///< [n·S, D]: attention output
  buffer gu;       ///< [n·S, 2I], or [n·D, 2·I_S] for mlp_t
  buffer act;      ///< [n·S, I], or [n·D, I_S]
  buffer inj;      ///< [n·S, D]: z_H + x
  buffer t;        ///< [n·D, S]: the transposed state (mlp_t)
  buffer logits;   ///< [n·S, V]
  buffer q;        ///< [n, 2]

  /// \brief Grows the buffers to hold `n` samples of config `c` (never shrinks).
  void reserve(const Backend& be, const trm_config& c, std::int64_t n) {
    if (n <= capacity) return;
    const auto S = std::size_t(c.total_len()), D = std::size_t(c.hidden_size), N = std::size_t(n);
    const auto I = std::size_t(c.swiglu_inter(c.hidden_size));
    const auto Is = c.mlp_t ? std::size_t(c.swiglu_inter(c.total_len())) : 0;
    if (!c.mlp_t) {
      qkv = be.template alloc<T>(N * S * 3 * D);
      mix = be.template alloc<T>(N * S * D);
    } else {
      t = be.template alloc<T>(N * D * S);
    }
    gu = be.template alloc<T>(std::max(N * S * 2 * I, N * D * 2 * Is));
    act = be.template alloc<T>(std::max(N * S * I, N * D * Is));
    inj = be.template alloc<T>(N * S * D);
    logits = be.template alloc<T>(N * S * std::size_t(c.vocab_size));
    q = be.template alloc<T>(N * 2);
    capacity = n;
  }
};

/// \brief h ← rmsnorm(h + down(silu(gate(h)) · up(h))) on [rows, width]: a SwiGLU with its
/// residual and weightless post-norm (the feature MLP, and the token mixer on transposed rows).
template <class Backend, class T>
void trm_swiglu_post_norm(const Backend& be, const T* gate_up, const T* down, T* h, std::int64_t rows,
                          std::int64_t width, std::int64_t inter, float eps, T* gu, T* act) {
  gemm_nt(be, rows, 2 * inter, width, 1.0f, h, width, gate_up, width, 0.0f, gu, 2 * inter);
  silu_mul(be, gu, 2 * inter, act, inter, rows, inter);
  gemm_nt(be, rows, width, inter, 1.0f, act, inter, down, inter, 1.0f, h, width);  // the residual, as beta = 1
  rmsnorm(be, h, static_cast<const T*>(nullptr), h, rows, width, eps);
}

/// \brief One post-norm block on n samples h [n·S, D], in place.
///
/// Attention: h ← rms(h + o(attn(rope(q), rope(k), v))) with every position seeing every other
/// (no mask) and RoPE over positions 0..S−1 of each sample. mlp_t: per sample t = hᵀ [D, S],
/// t ← rms(t + swiglu_S(t)) normalised over the sequence axis, h = tᵀ. Then the feature SwiGLU.
template <class Backend, class T>
void trm_block_forward(const Backend& be, const trm_config& c, const trm_layer_weights<Backend, T>& w,
                       const float* rope, T* h, std::int64_t n, trm_workspace<Backend, T>& ws) {
  const std::int64_t S = c.total_len(), D = c.hidden_size, R = n * S;
  if (c.mlp_t) {
    const std::int64_t Is = c.swiglu_inter(S);
    transpose_batched(be, h, n, S, D, ws.t.data());
    trm_swiglu_post_norm(be, w.mix_gate_up.data(), w.mix_down.data(), ws.t.data(), n * D, S, Is, c.rms_norm_eps,
                         ws.gu.data(), ws.act.data());
    transpose_batched(be, static_cast<const T*>(ws.t.data()), n, D, S, h);
  } else {
    const std::int64_t H = c.num_heads, hd = c.head_dim();
    T* qkv = ws.qkv.data();
    gemm_nt(be, R, 3 * D, D, 1.0f, h, D, w.qkv.data(), D, 0.0f, qkv, 3 * D);
    const float scale = 1.0f / std::sqrt(float(hd));
    for (std::int64_t b = 0; b < n; ++b) {
      T* qb = qkv + b * S * 3 * D;
      if (rope) rope_half(be, qb, S, 3 * D, 2 * H, hd, static_cast<const T*>(nullptr), rope, std::int64_t(0));  // q and k heads
      attention(be, qb, 3 * D, qb + D, qb + 2 * D, 3 * D, ws.mix.data() + b * S * D, D, S, S, H, H, hd, scale,
                attn_mask::full, nullptr, nullptr);
    }
    gemm_nt(be, R, D, D, 1.0f, ws.mix.data(), D, w.o.data(), D, 1.0f, h, D);
    rmsnorm(be, h, static_cast<const T*>(nullptr), h, R, D, c.rms_norm_eps);
  }
  trm_swiglu_post_norm(be, w.gate_up.data(), w.down.data(), h, R, D, c.swiglu_inter(D), c.rms_norm_eps, ws.gu.data(),
                       ws.act.data());
}

/// \brief A net: state ← layers(state + injection), in place on n samples.
template <class Backend, class T>
void trm_net_forward(const Backend& be, const trm_config& c, const std::vector<trm_layer_weights<Backend, T>>& net,
                     const float* rope, T* state, const T* injection, std::int64_t n, trm_workspace<Backend, T>& ws) {
  add(be, state, injection, state, n * c.total_len() * c.hidden_size);
  for (const auto& layer : net) trm_block_forward(be, c, layer, rope, state, n, ws);
}

/// \brief One supervision step of recursion on n samples: H_cycles times, L_cycles updates
/// z_L ← L(z_L, z_H + x) then z_H ← H(z_H, z_L) (TRM: one net for both; HRM: its two nets).
template <class Backend, class T>
void trm_recursion(const Backend& be, const trm_config& c, const trm_weights<Backend, T>& w, T* zH, T* zL,
                   const T* x, std::int64_t n, trm_workspace<Backend, T>& ws) {
  const std::int64_t elems = n * c.total_len() * c.hidden_size;
  const float* rope = c.pos_encodings == "rope" ? w.rope.data() : nullptr;
  const auto& H_net = c.arch == trm_arch::hrm ? w.H_level : w.L_level;
  for (std::int64_t h = 0; h < c.H_cycles; ++h) {
    for (std::int64_t l = 0; l < c.L_cycles; ++l) {
      add(be, static_cast<const T*>(zH), x, ws.inj.data(), elems);
      trm_net_forward(be, c, w.L_level, rope, zL, ws.inj.data(), n, ws);
    }
    trm_net_forward(be, c, H_net, rope, zH, static_cast<const T*>(zL), n, ws);
  }
}

/// \brief The heads on z_H: logits [n·S, V] for every position (the caller drops the prefix) and
/// q [n, 2] = q_head(z_H at position 0) in the compute type.
template <class Backend, class T>
void trm_heads(const Backend& be, const trm_config& c, const trm_weights<Backend, T>& w, const T* zH, std::int64_t n,
               trm_workspace<Backend, T>& ws) {
  const std::int64_t S = c.total_len(), D = c.hidden_size, V = c.vocab_size;
  gemm_nt(be, n * S, V, D, 1.0f, zH, D, w.lm_head.data(), D, 0.0f, ws.logits.data(), V);
  gemm_nt(be, n, 2, D, 1.0f, zH, S * D, w.q_w.data(), D, 0.0f, ws.q.data(), 2);
  add_bias_rows(be, ws.q.data(), 2, w.q_b.data(), n, 2);
}

}  // namespace muninn
