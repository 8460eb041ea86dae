#pragma once
/// \file
/// \brief One transformer layer (attention + gated MLP) for each BlockPolicy, on any backend.

#include <cmath>
#include <cstdint>

#include "muninn/model/policies.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/ops/ops.hpp"

namespace muninn {

/// \brief Sizes a layer needs at run time, taken from the config once.
struct layer_dims {
  std::int64_t h = 0;        ///< hidden size
  std::int64_t n_heads = 0;  ///< query heads
  std::int64_t n_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t inter = 0;    ///< MLP inner width
  float eps = 1e-6f;
  std::int64_t q_dim() const { return n_heads * head_dim; }
  std::int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

/// \brief Scratch memory for one chunk of `n` tokens through a layer (owned by an inference context).
template <class T>
struct layer_scratch {
  T* normed;    ///< [n, h]
  T* q;         ///< [n, H·D]
  T* attn;      ///< [n, H·D]
  T* proj;      ///< [n, h]
  T* mlp_in;    ///< [n, 2I]
  T* mlp_act;   ///< [n, I]
};

/// \brief Where a layer's keys and values live for this call: rows [0, pos0 + n) of one cache slot.
template <class T>
struct kv_slot {
  T* k;  ///< [capacity, Hkv·D]
  T* v;  ///< [capacity, Hkv·D]
};

namespace detail {

/// \brief The attention sublayer on already-normalised input `in`; result in s.proj.
template <class Backend, class T>
void attention_sublayer(const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, const T* in,
                        std::int64_t n, std::int64_t pos0, kv_slot<T> kv, const float* rope, const layer_scratch<T>& s) {
  const std::int64_t h = d.h, qd = d.q_dim(), kvd = d.kv_dim();
  const T* wq = w.wqkv.data();
  const T* wk = wq + qd * h;
  const T* wv = wk + kvd * h;
  T* k_new = kv.k + pos0 * kvd;
  T* v_new = kv.v + pos0 * kvd;
  // Three GEMMs instead of one fused [n, q+2kv] output: K and V land directly in the cache rows.
  gemm_nt(be, n, qd, h, 1.0f, in, h, wq, h, 0.0f, s.q, qd);
  gemm_nt(be, n, kvd, h, 1.0f, in, h, wk, h, 0.0f, k_new, kvd);
  gemm_nt(be, n, kvd, h, 1.0f, in, h, wv, h, 0.0f, v_new, kvd);
  const T* qb = w.qk_bias.size() ? w.qk_bias.data() : nullptr;
  const T* kb = qb ? qb + qd : nullptr;
  rope_interleaved(be, s.q, n, qd, d.n_heads, d.head_dim, qb, rope, pos0);
  rope_interleaved(be, k_new, n, kvd, d.n_kv_heads, d.head_dim, kb, rope, pos0);
  attention(be, s.q, qd, kv.k, kv.v, kvd, s.attn, qd, n, pos0 + n, d.n_heads, d.n_kv_heads, d.head_dim,
            1.0f / std::sqrt(float(d.head_dim)));
  gemm_nt(be, n, h, qd, 1.0f, s.attn, qd, w.attn_proj.data(), qd, 0.0f, s.proj, h);
}

/// \brief The gated-MLP sublayer on normalised input `in`; result in s.proj.
template <class Backend, class T>
void mlp_sublayer(const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, const T* in,
                  std::int64_t n, const layer_scratch<T>& s) {
  const std::int64_t h = d.h, I = d.inter;
  gemm_nt(be, n, 2 * I, h, 1.0f, in, h, w.fc.data(), h, 0.0f, s.mlp_in, 2 * I);
  silu_mul(be, s.mlp_in, 2 * I, s.mlp_act, I, n, I);
  gemm_nt(be, n, h, I, 1.0f, s.mlp_act, I, w.mlp_proj.data(), I, 0.0f, s.proj, h);
}

}  // namespace detail

/// \brief Runs one layer in place on x[n, h] for tokens at positions [pos0, pos0 + n).
///
/// Huginn's sandwich block re-normalises the residual stream after each sublayer
/// (reference/huginn.md §2.1): `x = n2(attn(n1(x)) + x); x = n4(mlp(n3(x)) + x)`.
template <class Backend, class T>
void layer_forward(block::sandwich, const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, T* x,
                   std::int64_t n, std::int64_t pos0, kv_slot<T> kv, const float* rope, const layer_scratch<T>& s) {
  rmsnorm(be, x, w.norm[0].data(), s.normed, n, d.h, d.eps);
  detail::attention_sublayer(be, w, d, s.normed, n, pos0, kv, rope, s);
  add_rmsnorm(be, s.proj, x, w.norm[1].data(), x, n, d.h, d.eps);
  rmsnorm(be, x, w.norm[2].data(), s.normed, n, d.h, d.eps);
  detail::mlp_sublayer(be, w, d, s.normed, n, s);
  add_rmsnorm(be, s.proj, x, w.norm[3].data(), x, n, d.h, d.eps);
}

/// \brief Pre-norm (Llama-style) layer: `x += attn(n1(x)); x += mlp(n2(x))`.
template <class Backend, class T>
void layer_forward(block::pre_norm, const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, T* x,
                   std::int64_t n, std::int64_t pos0, kv_slot<T> kv, const float* rope, const layer_scratch<T>& s) {
  rmsnorm(be, x, w.norm[0].data(), s.normed, n, d.h, d.eps);
  detail::attention_sublayer(be, w, d, s.normed, n, pos0, kv, rope, s);
  add(be, x, s.proj, x, n * d.h);
  rmsnorm(be, x, w.norm[1].data(), s.normed, n, d.h, d.eps);
  detail::mlp_sublayer(be, w, d, s.normed, n, s);
  add(be, x, s.proj, x, n * d.h);
}

}  // namespace muninn
