#pragma once
/// \file
/// \brief The attention mixer: multi-head (grouped-query) attention over the runs of a stack of
/// active rows, with the projections on all rows at once and RoPE and attention per run.
///
/// Keys and values go where the `kv_views` say: into each run's KV cache slot (causal decoding,
/// the language models) or, with no slot given, into scratch rows that only the run's own queries
/// see (a model that reads its whole input at once: TRM / HRM with a bidirectional mask).

#include <cmath>
#include <cstdint>
#include <utility>

#include "muninn/core/error.hpp"
#include "muninn/engine/kv_views.hpp"
#include "muninn/engine/layer_dims.hpp"
#include "muninn/engine/rows.hpp"
#include "muninn/nn/linear.hpp"
#include "muninn/nn/residual.hpp"
#include "muninn/ops/ops.hpp"

namespace muninn::nn {

namespace detail {
// The attention op under another name: a qualified call would skip argument-dependent lookup
// (and so the CUDA overload, declared later), and a member named `attention` hides the op.
template <class Backend, class... Args>
void attention_op(const Backend& be, Args&&... args) {
  attention(be, std::forward<Args>(args)...);
}
}  // namespace detail

/// \brief The attention mixer's parameters on the backend, in the layers' layout.
/// \tparam W the matrices' handle: a pointer to T, or on the host a weight_view (bf16 / q8 weights)
template <class T, class W = const T*>
struct attention_params {
  W wqkv{};                    ///< [(H + 2·Hkv)·D, h]: the q rows, then k, then v
  const T* qk_bias = nullptr;  ///< q bias [H·D] then k bias [Hkv·D], added before RoPE; null: none
  const T* v_bias = nullptr;   ///< [Hkv·D], or null
  W o{};                       ///< output projection [h, H·D]
  const T* o_bias = nullptr;   ///< [h], or null
};

/// \brief out[rows, h] = (or +=, with residual::add) o(attention(q, k, v of `in`)).
///
/// \tparam Rope a RopePolicy: `Rope::apply` rotates q and k of each run at its own positions
/// (and adds the q/k bias first). A null `rope` table means no rotary embedding (then the
/// weights may have no q/k bias).
template <class Rope>
struct attention_mixer {
  /// \brief One mixer call over `rows`; `in` and `out` are [rows, h], `s` the layer's scratch.
  template <class Backend, class T, class W>
  static void forward(const Backend& be, const attention_params<T, W>& w, const layer_dims& d, const T* in,
                      const engine::active_rows& rows, const kv_views<T>& kv, const float* rope,
                      const layer_scratch<T>& s, T* out, residual r) {
    MUNINN_CHECK(rope || !w.qk_bias, "attention: a q/k bias is added by the RoPE step, and there is no RoPE table");
    const std::int64_t qd = d.q_dim(), kvd = d.kv_dim();
    // No cache: q, k and v all stay in scratch, so one GEMM against the fused weight can write
    // them side by side (rows of width qd + 2·kvd); else q alone, k and v to where the cache says.
    const bool fused = s.qkv && kv.write.empty() && !kv.no_new_kv;
    const std::int64_t ldq = fused ? qd + 2 * kvd : qd, ldk = fused ? ldq : kvd;
    if (fused)
      project_fused(be, w, d, in, rows.size(), s.qkv);
    else
      project(be, w, d, in, rows, kv, s);
    const float scale = 1.0f / std::sqrt(float(d.head_dim));
    const auto& runs = rows.runs();
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const engine::row_run& g = runs[i];
      T* q = (fused ? s.qkv : s.q) + g.row0 * ldq;
      if (rope) {
        Rope::apply(be, q, g.n, ldq, d.n_heads, d.head_dim, w.qk_bias, rope, g.pos0);
        if (!kv.no_new_kv)
          Rope::apply(be, fused ? q + qd : new_keys(kv, s, rows, i, kvd), g.n, ldk, d.n_kv_heads, d.head_dim,
                      w.qk_bias ? w.qk_bias + qd : nullptr, rope, g.pos0);
      }
      const kv_read<T> k = fused ? kv_read<T>{q + qd, q + qd + kvd, g.n} : keys_of(kv, s, rows, i, kvd);
      T* o = s.attn + g.row0 * qd;
      if (k.k_pos) {
        MUNINN_CHECK(kv.row_pos != nullptr, "a KV read with key positions needs the rows' positions");
        detail::attention_op(be, q, ldq, k.k, k.v, ldk, o, qd, g.n, k.nkv, d.n_heads, d.n_kv_heads, d.head_dim, scale,
                             attn_mask::causal, kv.row_pos + g.row0, k.k_pos);
      } else if (kv.mask == attn_mask::full) {
        detail::attention_op(be, q, ldq, k.k, k.v, ldk, o, qd, g.n, k.nkv, d.n_heads, d.n_kv_heads, d.head_dim, scale,
                             attn_mask::full, static_cast<const std::int32_t*>(nullptr),
                             static_cast<const std::int32_t*>(nullptr));
      } else {
        detail::attention_op(be, q, ldq, k.k, k.v, ldk, o, qd, g.n, k.nkv, d.n_heads, d.n_kv_heads, d.head_dim, scale);
      }
    }
    linear_gemm(be, rows.size(), d.h, qd, 1.0f, s.attn, qd, w.o, qd, r == residual::add ? 1.0f : 0.0f, out, d.h);
    if (w.o_bias) add_bias_rows(be, out, d.h, w.o_bias, rows.size(), d.h);
  }

 private:
  // Slot row of run i's first new K/V row.
  template <class T>
  static std::int64_t write_row(const kv_views<T>& kv, const engine::active_rows& rows, std::size_t i) {
    return kv.write_row.empty() ? rows.runs()[i].pos0 : kv.write_row[i];
  }
  // Where run i's new keys are: its cache slot, or its rows of the scratch when there is no cache.
  template <class T>
  static T* new_keys(const kv_views<T>& kv, const layer_scratch<T>& s, const engine::active_rows& rows, std::size_t i,
                     std::int64_t kvd) {
    if (kv.write.empty()) return s.k_tmp + rows.runs()[i].row0 * kvd;
    return kv.write[i].k + write_row(kv, rows, i) * kvd;
  }
  // What run i attends to: what its cache hands back, or its own new rows when there is no cache.
  template <class T>
  static kv_read<T> keys_of(const kv_views<T>& kv, const layer_scratch<T>& s, const engine::active_rows& rows,
                            std::size_t i, std::int64_t kvd) {
    const engine::row_run& g = rows.runs()[i];
    if (kv.write.empty()) return kv_read<T>{s.k_tmp + g.row0 * kvd, s.v_tmp + g.row0 * kvd, g.n};
    if (kv.read) return kv.read(i, g);
    return kv_read<T>{kv.write[i].k, kv.write[i].v, write_row(kv, rows, i) + g.n};
  }
  // q, k and v of all rows with one GEMM into qkv [n, qd + 2·kvd] (a call without a cache).
  template <class Backend, class T, class W>
  static void project_fused(const Backend& be, const attention_params<T, W>& w, const layer_dims& d, const T* in,
                            std::int64_t n, T* qkv) {
    const std::int64_t h = d.h, qd = d.q_dim(), kvd = d.kv_dim(), ld = qd + 2 * kvd;
    linear_gemm(be, n, ld, h, 1.0f, in, h, w.wqkv, h, 0.0f, qkv, ld);
    if (w.v_bias) add_bias_rows(be, qkv + qd + kvd, ld, w.v_bias, n, kvd);
  }
  // q for all rows; k and v straight into the cache when one run, else through k_tmp / v_tmp
  // (which, without a cache, is where they stay).
  template <class Backend, class T, class W>
  static void project(const Backend& be, const attention_params<T, W>& w, const layer_dims& d, const T* in,
                      const engine::active_rows& rows, const kv_views<T>& kv, const layer_scratch<T>& s) {
    const std::int64_t h = d.h, qd = d.q_dim(), kvd = d.kv_dim(), n = rows.size();
    const W wk = weight_rows(w.wqkv, qd, h);
    const W wv = weight_rows(w.wqkv, qd + kvd, h);
    linear_gemm(be, n, qd, h, 1.0f, in, h, w.wqkv, h, 0.0f, s.q, qd);
    if (kv.no_new_kv) return;
    const auto& runs = rows.runs();
    const bool direct = runs.size() == 1 && !kv.write.empty();
    T* k = direct ? kv.write[0].k + write_row(kv, rows, 0) * kvd : s.k_tmp;
    T* v = direct ? kv.write[0].v + write_row(kv, rows, 0) * kvd : s.v_tmp;
    linear_gemm(be, n, kvd, h, 1.0f, in, h, wk, h, 0.0f, k, kvd);
    linear_gemm(be, n, kvd, h, 1.0f, in, h, wv, h, 0.0f, v, kvd);
    if (w.v_bias) add_bias_rows(be, v, kvd, w.v_bias, n, kvd);
    if (direct || kv.write.empty()) return;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const engine::row_run& g = runs[i];
      be.copy(kv.write[i].k + write_row(kv, rows, i) * kvd, s.k_tmp + g.row0 * kvd, std::size_t(g.n * kvd));
      be.copy(kv.write[i].v + write_row(kv, rows, i) * kvd, s.v_tmp + g.row0 * kvd, std::size_t(g.n * kvd));
    }
  }
};

}  // namespace muninn::nn
