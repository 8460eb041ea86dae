#pragma once
/// \file
/// \brief The TRM / HRM network from the nn blocks: the post-norm block (bidirectional
/// attention or the token-mixing SwiGLU, then the feature SwiGLU, each followed by a weightless
/// RMSNorm), a net (injection added, then the layers) and one supervision step of recursion.
///
/// A batch of n samples is n·S stacked rows (S = prefix + grid), one run of positions 0 … S−1 per
/// sample: the projections and SwiGLUs are one GEMM over all rows; attention and RoPE run per
/// sample, which sees only its own rows (no KV cache, a full mask).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "muninn/engine/kv_views.hpp"
#include "muninn/engine/layer_dims.hpp"
#include "muninn/engine/rows.hpp"
#include "muninn/families/trm/weights.hpp"
#include "muninn/nn/attention.hpp"
#include "muninn/nn/norm.hpp"
#include "muninn/nn/swiglu.hpp"
#include "muninn/nn/token_mixer.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/rope.hpp"

namespace muninn {

/// \brief Scratch rows of one batch, sized for up to `capacity` samples and reused across steps.
template <class Backend, class T>
struct trm_workspace {
  using buffer = typename Backend::template buffer<T>;  ///< storage on the backend
  std::int64_t capacity = 0;  ///< samples the buffers hold
  buffer q;        ///< [n·S, D]: attention queries
  buffer k;        ///< [n·S, D]: attention keys
  buffer v;        ///< [n·S, D]: attention values
  buffer attn;     ///< [n·S, D]: attention output before its projection
  buffer gu;       ///< [n·S, 2I], or [n·D, 2·I_S] for mlp_t
  buffer act;      ///< [n·S, I], or [n·D, I_S]
  buffer inj;      ///< [n·S, D]: z_H + x
  buffer t;        ///< [n·D, S]: the transposed state (mlp_t)
  buffer logits;   ///< [n·S, V]
  buffer q_halt;   ///< [n, 2]
  engine::active_rows samples;  ///< one run per sample: positions 0 … S−1 (grown with the batch)

  /// \brief Grows the buffers to hold `n` samples of config `c` (never shrinks).
  void reserve(const Backend& be, const trm_config& c, std::int64_t n) {
    if (n <= capacity) return;
    const auto S = std::size_t(c.total_len()), D = std::size_t(c.hidden_size), N = std::size_t(n);
    const auto I = std::size_t(c.swiglu_inter(c.hidden_size));
    const auto Is = c.mlp_t ? std::size_t(c.swiglu_inter(c.total_len())) : 0;
    if (!c.mlp_t) {
      for (buffer* b : {&q, &k, &v, &attn}) *b = be.template alloc<T>(N * S * D);
    } else {
      t = be.template alloc<T>(N * D * S);
    }
    gu = be.template alloc<T>(std::max(N * S * 2 * I, N * D * 2 * Is));
    act = be.template alloc<T>(std::max(N * S * I, N * D * Is));
    inj = be.template alloc<T>(N * S * D);
    logits = be.template alloc<T>(N * S * std::size_t(c.vocab_size));
    q_halt = be.template alloc<T>(N * 2);
    capacity = n;
  }
};

/// \brief The stacked rows of n samples: sample b is sequence b at positions 0 … S−1.
template <class Backend, class T>
const engine::active_rows& trm_sample_rows(trm_workspace<Backend, T>& ws, std::int64_t n, std::int64_t S) {
  if (ws.samples.size() != n * S) {
    ws.samples = engine::active_rows{};
    for (std::int64_t b = 0; b < n; ++b) ws.samples.append(std::int32_t(b), 0, S);
  }
  return ws.samples;
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
  const nn::rms_norm<T> post{nullptr, D, c.rms_norm_eps};
  if (c.mlp_t) {
    const std::int64_t Is = c.swiglu_inter(S);
    const nn::token_mixer<T> mix{{w.mix_gate_up.data(), w.mix_down.data(), S, Is}, {nullptr, S, c.rms_norm_eps}};
    mix(be, h, n, S, D, ws.t.data(), ws.gu.data(), ws.act.data());
  } else {
    const layer_dims d{D, c.num_heads, c.num_heads, c.head_dim(), c.swiglu_inter(D), c.rms_norm_eps};
    const layer_scratch<T> s{nullptr, ws.q.data(), ws.attn.data(), nullptr, nullptr, nullptr, ws.k.data(), ws.v.data()};
    kv_views<T> kv;  // no cache: each sample attends to its own rows
    kv.mask = attn_mask::full;
    const nn::attention_params<T> p{w.qkv.data(), nullptr, nullptr, w.o.data(), nullptr};
    nn::attention_mixer<rope::half>::forward(be, p, d, static_cast<const T*>(h), trm_sample_rows(ws, n, S), kv, rope,
                                             s, h, nn::residual::add);
    post(be, h, h, R);
  }
  const nn::swiglu<T> mlp{w.gate_up.data(), w.down.data(), D, c.swiglu_inter(D)};
  mlp(be, h, R, h, nn::residual::add, ws.gu.data(), ws.act.data());
  post(be, h, h, R);
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
  gemm_nt(be, n, 2, D, 1.0f, zH, S * D, w.q_w.data(), D, 0.0f, ws.q_halt.data(), 2);
  add_bias_rows(be, ws.q_halt.data(), 2, w.q_b.data(), n, 2);
}

}  // namespace muninn
