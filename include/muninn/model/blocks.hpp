#pragma once
/// \file
/// \brief One transformer layer (attention + gated MLP) for each BlockPolicy, on any backend.
///
/// A layer runs on a stack of rows that may belong to several sequences ("segments"): the
/// GEMMs see all rows at once (a batch of decode tokens reads each weight once), while RoPE
/// and attention run per segment against that segment's own KV cache.

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
  std::int64_t n_kv_heads = 0;  ///< key/value heads
  std::int64_t head_dim = 0; ///< per-head width
  std::int64_t inter = 0;    ///< MLP inner width
  float eps = 1e-6f;         ///< RMSNorm epsilon
  /// \brief Width of all query heads.
  std::int64_t q_dim() const { return n_heads * head_dim; }
  /// \brief Width of all key (or value) heads.
  std::int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

/// \brief Scratch memory for a stack of rows through a layer (owned by a workspace).
template <class T>
struct layer_scratch {
  T* normed;   ///< [rows, h]
  T* q;        ///< [rows, H·D]
  T* attn;     ///< [rows, H·D]
  T* proj;     ///< [rows, h]
  T* mlp_in;   ///< [rows, 2I]
  T* mlp_act;  ///< [rows, I]
  T* k_tmp;    ///< [rows, Hkv·D]: new keys of a multi-segment stack before they go to each cache
  T* v_tmp;    ///< [rows, Hkv·D]
};

/// \brief One cache slot's key and value rows: [capacity, Hkv·D] each.
template <class T>
struct kv_slot {
  T* k;  ///< keys
  T* v;  ///< values
};

/// \brief The rows a segment occupies in the stack and where its keys/values go.
template <class T>
struct segment_rows {
  std::int64_t row0 = 0;  ///< first row in the stack
  std::int64_t n = 0;     ///< rows (tokens)
  std::int64_t pos0 = 0;  ///< position of the first token in its sequence
  kv_slot<T> kv;          ///< the cache slot this layer call writes (rows pos0 .. pos0+n-1)
};

/// \brief Keys and values one segment's queries attend to: rows [0, nkv).
template <class T>
struct kv_read {
  const T* k;        ///< keys
  const T* v;        ///< values
  std::int64_t nkv;  ///< rows; the last `n` are the segment's own tokens (bottom-right causal mask)
};

/// \brief The default reader: a segment attends to its slot's rows [0, pos0 + n).
struct read_own_slot {
  /// \brief Returns the slot's own rows.
  template <class T>
  kv_read<T> operator()(std::int64_t, const segment_rows<T>& s) const {
    return kv_read<T>{s.kv.k, s.kv.v, s.pos0 + s.n};
  }
};

namespace detail {

template <class Backend, class T, class Reader>
void attention_sublayer(const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, const T* in,
                        std::int64_t rows, const segment_rows<T>* segs, std::int64_t nseg, const float* rope,
                        const layer_scratch<T>& s, Reader&& reader) {
  const std::int64_t h = d.h, qd = d.q_dim(), kvd = d.kv_dim();
  const T* wq = w.wqkv.data();
  const T* wk = wq + qd * h;
  const T* wv = wk + kvd * h;
  gemm_nt(be, rows, qd, h, 1.0f, in, h, wq, h, 0.0f, s.q, qd);
  if (nseg == 1) {
    // One sequence: K and V land directly in its cache rows.
    gemm_nt(be, rows, kvd, h, 1.0f, in, h, wk, h, 0.0f, segs[0].kv.k + segs[0].pos0 * kvd, kvd);
    gemm_nt(be, rows, kvd, h, 1.0f, in, h, wv, h, 0.0f, segs[0].kv.v + segs[0].pos0 * kvd, kvd);
  } else {
    gemm_nt(be, rows, kvd, h, 1.0f, in, h, wk, h, 0.0f, s.k_tmp, kvd);
    gemm_nt(be, rows, kvd, h, 1.0f, in, h, wv, h, 0.0f, s.v_tmp, kvd);
    for (std::int64_t i = 0; i < nseg; ++i) {
      const auto& g = segs[i];
      be.copy(g.kv.k + g.pos0 * kvd, s.k_tmp + g.row0 * kvd, std::size_t(g.n * kvd));
      be.copy(g.kv.v + g.pos0 * kvd, s.v_tmp + g.row0 * kvd, std::size_t(g.n * kvd));
    }
  }
  const T* qb = w.qk_bias.size() ? w.qk_bias.data() : nullptr;
  const T* kb = qb ? qb + qd : nullptr;
  const float scale = 1.0f / std::sqrt(float(d.head_dim));
  for (std::int64_t i = 0; i < nseg; ++i) {
    const auto& g = segs[i];
    T* q = s.q + g.row0 * qd;
    rope_interleaved(be, q, g.n, qd, d.n_heads, d.head_dim, qb, rope, g.pos0);
    rope_interleaved(be, g.kv.k + g.pos0 * kvd, g.n, kvd, d.n_kv_heads, d.head_dim, kb, rope, g.pos0);
    const kv_read<T> r = reader(i, g);
    attention(be, q, qd, r.k, r.v, kvd, s.attn + g.row0 * qd, qd, g.n, r.nkv, d.n_heads, d.n_kv_heads, d.head_dim,
              scale);
  }
  gemm_nt(be, rows, h, qd, 1.0f, s.attn, qd, w.attn_proj.data(), qd, 0.0f, s.proj, h);
}

template <class Backend, class T>
void mlp_sublayer(const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, const T* in,
                  std::int64_t rows, const layer_scratch<T>& s) {
  const std::int64_t h = d.h, I = d.inter;
  gemm_nt(be, rows, 2 * I, h, 1.0f, in, h, w.fc.data(), h, 0.0f, s.mlp_in, 2 * I);
  silu_mul(be, s.mlp_in, 2 * I, s.mlp_act, I, rows, I);
  gemm_nt(be, rows, h, I, 1.0f, s.mlp_act, I, w.mlp_proj.data(), I, 0.0f, s.proj, h);
}

}  // namespace detail

/// \brief Runs one sandwich layer in place on the stack x[rows, h].
///
/// Huginn's sandwich block re-normalises the residual stream after each sublayer
/// (reference/huginn.md §2.1): `x = n2(attn(n1(x)) + x); x = n4(mlp(n3(x)) + x)`.
/// `reader(i, seg)` says which keys/values segment i attends to (its own slot by default; the
/// model substitutes gathered rows for the KV fallback policies).
template <class Backend, class T, class Reader = read_own_slot>
void layer_forward(block::sandwich, const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, T* x,
                   std::int64_t rows, const segment_rows<T>* segs, std::int64_t nseg, const float* rope,
                   const layer_scratch<T>& s, Reader&& reader = {}) {
  rmsnorm(be, x, w.norm[0].data(), s.normed, rows, d.h, d.eps);
  detail::attention_sublayer(be, w, d, s.normed, rows, segs, nseg, rope, s, reader);
  add_rmsnorm(be, s.proj, x, w.norm[1].data(), x, rows, d.h, d.eps);
  rmsnorm(be, x, w.norm[2].data(), s.normed, rows, d.h, d.eps);
  detail::mlp_sublayer(be, w, d, s.normed, rows, s);
  add_rmsnorm(be, s.proj, x, w.norm[3].data(), x, rows, d.h, d.eps);
}

/// \brief Pre-norm (Llama-style) layer in place on x[rows, h]: `x += attn(n1(x)); x += mlp(n2(x))`.
template <class Backend, class T, class Reader = read_own_slot>
void layer_forward(block::pre_norm, const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, T* x,
                   std::int64_t rows, const segment_rows<T>* segs, std::int64_t nseg, const float* rope,
                   const layer_scratch<T>& s, Reader&& reader = {}) {
  rmsnorm(be, x, w.norm[0].data(), s.normed, rows, d.h, d.eps);
  detail::attention_sublayer(be, w, d, s.normed, rows, segs, nseg, rope, s, reader);
  add(be, x, s.proj, x, rows * d.h);
  rmsnorm(be, x, w.norm[1].data(), s.normed, rows, d.h, d.eps);
  detail::mlp_sublayer(be, w, d, s.normed, rows, s);
  add(be, x, s.proj, x, rows * d.h);
}

}  // namespace muninn
