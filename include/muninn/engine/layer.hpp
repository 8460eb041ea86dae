#pragma once
/// \file
/// \brief One transformer layer over a stack of active rows: the sublayer verbs a BlockPolicy
/// composes (norm, attention, MLP, residual), with GEMMs on all rows at once and RoPE and
/// attention per run against that run's KV view.

#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "muninn/engine/layer_weights.hpp"
#include "muninn/engine/rows.hpp"
#include "muninn/ops/bias.hpp"
#include "muninn/ops/ops.hpp"

namespace muninn {

/// \brief Sizes a layer needs at run time, taken from the config once.
struct layer_dims {
  std::int64_t h = 0;           ///< hidden size
  std::int64_t n_heads = 0;     ///< query heads
  std::int64_t n_kv_heads = 0;  ///< key/value heads
  std::int64_t head_dim = 0;    ///< per-head width
  std::int64_t inter = 0;       ///< MLP inner width
  float eps = 1e-6f;            ///< RMSNorm epsilon
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
  T* k_tmp;    ///< [rows, Hkv·D]: new keys of a multi-run stack before they go to each cache
  T* v_tmp;    ///< [rows, Hkv·D]
};

/// \brief One cache slot's key and value rows: [capacity, Hkv·D] each, row p = position p.
template <class T>
struct kv_slot {
  T* k;  ///< keys
  T* v;  ///< values
};

/// \brief Keys and values one run's queries attend to: rows [0, nkv), the last `n` being the
/// run's own tokens (bottom-right causal mask).
template <class T>
struct kv_read {
  const T* k;        ///< keys
  const T* v;        ///< values
  std::int64_t nkv;  ///< rows
  /// \brief Backend memory: the position of each key row, for a cache whose rows are not the
  /// positions 0 … nkv−1 (a ragged cache keeps only some tokens); attention then masks by
  /// position. nullptr: the bottom-right causal mask over row order.
  const std::int32_t* k_pos = nullptr;
};

/// \brief Where each run of a layer call writes its keys/values and what it reads.
template <class T>
struct kv_views {
  std::vector<kv_slot<T>> write;  ///< per run: the slot its new K/V rows go to (rows pos0 … pos0+n−1)
  /// \brief Per run: the slot row its first new K/V row goes to, for caches that keep only some
  /// tokens (ragged rows); empty: the run's position (dense rows).
  std::vector<std::int64_t> write_row;
  /// \brief True when no run keeps keys or values of its own (recursive KV sharing: every run
  /// reads another layer call's): the K/V projections and their RoPE are skipped.
  bool no_new_kv = false;
  const std::int32_t* row_pos = nullptr;  ///< backend memory: each stacked row's position (for reads with k_pos)
  /// \brief Per run: the rows it attends to (its slot's rows [0, pos0 + n) when empty).
  std::function<kv_read<T>(std::size_t run, const engine::row_run&)> read;
};

namespace engine {
namespace detail {
// The attention op under another name: inside layer_pass, the member `attention` hides it, and a
// qualified call would skip argument-dependent lookup (and so the CUDA overload, declared later).
template <class Backend, class... Args>
void attention_op(const Backend& be, Args&&... args) {
  attention(be, std::forward<Args>(args)...);
}
}  // namespace detail

/// \brief The sublayer verbs of one layer applied to the stack x[rows, h].
///
/// A BlockPolicy's `forward(layer)` composes them; `Rope` is the RopePolicy.
template <class Backend, class T, class Rope>
class layer_pass {
 public:
  /// \brief Binds one layer's weights to the stack x and its runs.
  layer_pass(const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, T* x,
             const active_rows& rows, const kv_views<T>& kv, const float* rope, const layer_scratch<T>& s)
      : be_(be), w_(w), d_(d), x_(x), rows_(rows), kv_(kv), rope_(rope), s_(s) {}

  /// \brief normed = RMSNorm_i(x); returns normed.
  const T* norm(int i) {
    rmsnorm(be_, x_, w_.norm[i].data(), s_.normed, rows_.size(), d_.h, d_.eps);
    return s_.normed;
  }
  /// \brief proj = o_proj(attention(q, k, v of `in`)), writing the new keys/values to the cache.
  void attention(const T* in) {
    project_qkv(in);
    const std::int64_t qd = d_.q_dim(), kvd = d_.kv_dim();
    const T* qb = w_.qk_bias.size() ? w_.qk_bias.data() : nullptr;
    const float scale = 1.0f / std::sqrt(float(d_.head_dim));
    const auto& runs = rows_.runs();
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const row_run& g = runs[i];
      T* q = s_.q + g.row0 * qd;
      Rope::apply(be_, q, g.n, qd, d_.n_heads, d_.head_dim, qb, rope_, g.pos0);
      if (!kv_.no_new_kv) {
        T* k = kv_.write[i].k + write_row(i) * kvd;
        Rope::apply(be_, k, g.n, kvd, d_.n_kv_heads, d_.head_dim, qb ? qb + qd : nullptr, rope_, g.pos0);
      }
      const kv_read<T> r = kv_.read ? kv_.read(i, g) : kv_read<T>{kv_.write[i].k, kv_.write[i].v, write_row(i) + g.n};
      T* out = s_.attn + g.row0 * qd;
      if (r.k_pos) {
        MUNINN_CHECK(kv_.row_pos != nullptr, "a KV read with key positions needs the rows' positions");
        detail::attention_op(be_, q, qd, r.k, r.v, kvd, out, qd, g.n, r.nkv, d_.n_heads, d_.n_kv_heads, d_.head_dim,
                             scale, attn_mask::causal, kv_.row_pos + g.row0, r.k_pos);
      } else {
        detail::attention_op(be_, q, qd, r.k, r.v, kvd, out, qd, g.n, r.nkv, d_.n_heads, d_.n_kv_heads, d_.head_dim,
                             scale);
      }
    }
    linear(s_.attn, qd, w_.attn_proj, w_.o_bias, d_.h, s_.proj);
  }
  /// \brief proj = down(silu(gate(in)) · up(in)).
  void mlp(const T* in) {
    const std::int64_t I = d_.inter;
    linear(in, d_.h, w_.fc, w_.fc_bias, 2 * I, s_.mlp_in);
    silu_mul(be_, s_.mlp_in, 2 * I, s_.mlp_act, I, rows_.size(), I);
    linear(s_.mlp_act, I, w_.mlp_proj, w_.mlp_proj_bias, d_.h, s_.proj);
  }
  /// \brief x = RMSNorm_i(proj + x) (Huginn's sandwich re-normalises the residual stream).
  void add_norm(int i) { add_rmsnorm(be_, s_.proj, x_, w_.norm[i].data(), x_, rows_.size(), d_.h, d_.eps); }
  /// \brief x = x + proj (pre-norm residual).
  void add_residual() { add(be_, x_, s_.proj, x_, rows_.size() * d_.h); }

 private:
  using buffer = typename Backend::template buffer<T>;

  // out[rows, n] = in[rows, k] · Wᵀ (+ bias).
  void linear(const T* in, std::int64_t k, const buffer& W, const buffer& bias, std::int64_t n, T* out) {
    gemm_nt(be_, rows_.size(), n, k, 1.0f, in, k, W.data(), k, 0.0f, out, n);
    if (bias.size()) add_bias_rows(be_, out, n, bias.data(), rows_.size(), n);
  }

  // q for all rows; k and v straight into the cache when one run, else through k_tmp / v_tmp.
  void project_qkv(const T* in) {
    const std::int64_t h = d_.h, qd = d_.q_dim(), kvd = d_.kv_dim(), rows = rows_.size();
    const T* wq = w_.wqkv.data();
    const T* wk = wq + qd * h;
    const T* wv = wk + kvd * h;
    gemm_nt(be_, rows, qd, h, 1.0f, in, h, wq, h, 0.0f, s_.q, qd);
    if (kv_.no_new_kv) return;
    const auto& runs = rows_.runs();
    const bool direct = runs.size() == 1;
    T* k = direct ? kv_.write[0].k + write_row(0) * kvd : s_.k_tmp;
    T* v = direct ? kv_.write[0].v + write_row(0) * kvd : s_.v_tmp;
    gemm_nt(be_, rows, kvd, h, 1.0f, in, h, wk, h, 0.0f, k, kvd);
    gemm_nt(be_, rows, kvd, h, 1.0f, in, h, wv, h, 0.0f, v, kvd);
    if (w_.v_bias.size()) add_bias_rows(be_, v, kvd, w_.v_bias.data(), rows, kvd);
    if (direct) return;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const row_run& g = runs[i];
      be_.copy(kv_.write[i].k + write_row(i) * kvd, s_.k_tmp + g.row0 * kvd, std::size_t(g.n * kvd));
      be_.copy(kv_.write[i].v + write_row(i) * kvd, s_.v_tmp + g.row0 * kvd, std::size_t(g.n * kvd));
    }
  }

  // Slot row of run i's first new K/V row.
  std::int64_t write_row(std::size_t i) const {
    return kv_.write_row.empty() ? rows_.runs()[i].pos0 : kv_.write_row[i];
  }

  const Backend& be_;
  const layer_weights<Backend, T>& w_;
  const layer_dims& d_;
  T* x_;
  const active_rows& rows_;
  const kv_views<T>& kv_;
  const float* rope_;
  const layer_scratch<T>& s_;
};

/// \brief Runs one layer of BlockPolicy `Block` in place on the stack x.
template <class Block, class Rope, class Backend, class T>
void run_layer(const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, T* x,
               const active_rows& rows, const kv_views<T>& kv, const float* rope, const layer_scratch<T>& s) {
  layer_pass<Backend, T, Rope> l(be, w, d, x, rows, kv, rope, s);
  Block::forward(l);
}

}  // namespace engine
}  // namespace muninn
