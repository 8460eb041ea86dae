#pragma once
/// \file
/// \brief One transformer layer over a stack of active rows: the sublayer verbs a BlockPolicy
/// composes (norm, attention, MLP, residual), built from the nn blocks (rms_norm,
/// attention_mixer, swiglu) with GEMMs on all rows at once and RoPE and attention per run
/// against that run's KV view.

#include <cstdint>
#include <memory>
#include <type_traits>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/engine/kv_views.hpp"
#include "muninn/engine/layer_dims.hpp"
#include "muninn/engine/rows.hpp"
#include "muninn/nn/attention.hpp"
#include "muninn/nn/layer_weights.hpp"
#include "muninn/nn/norm.hpp"
#include "muninn/nn/residual.hpp"
#include "muninn/nn/swiglu.hpp"
#include "muninn/nn/token_mixer.hpp"
#include "muninn/ops/ops.hpp"

namespace muninn::nn {

/// \brief The sublayer verbs of one layer applied to the stack x[rows, h].
///
/// A BlockPolicy's `forward(layer)` composes them; `Rope` is the RopePolicy.
template <class Backend, class T, class Rope>
class layer_pass {
 public:
  /// \brief Binds one layer's weights to the stack x and its runs.
  layer_pass(const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, T* x,
             const engine::active_rows& rows, const kv_views<T>& kv, const float* rope, const layer_scratch<T>& s)
      : be_(be), w_(w), d_(d), x_(x), rows_(rows), kv_(kv), rope_(rope), s_(s) {}

  /// \brief The stack x itself (a post-norm block feeds it to its sublayers unnormalised).
  const T* input() const { return x_; }
  /// \brief normed = RMSNorm_i(x); returns normed.
  const T* norm(int i) {
    norm_at(i)(be_, x_, s_.normed, rows_.size());
    return s_.normed;
  }
  /// \brief proj = o_proj(attention(q, k, v of `in`)), writing the new keys/values to the cache.
  void attention(const T* in) {
    const attention_params<T, weight_arg> p{matrix(w_.wqkv, w_.converted.wqkv, d_.h), data_or_null(w_.qk_bias),
                                            data_or_null(w_.v_bias), matrix(w_.attn_proj, w_.converted.attn_proj, d_.q_dim()),
                                            data_or_null(w_.o_bias)};
    attention_mixer<Rope>::forward(be_, p, d_, in, rows_, kv_, rope_, s_, s_.proj, residual::none);
  }
  /// \brief proj = down(silu(gate(in)) · up(in)).
  void mlp(const T* in) {
    const swiglu<T, weight_arg> m{matrix(w_.fc, w_.converted.fc, d_.h), matrix(w_.mlp_proj, w_.converted.mlp_proj, d_.inter),
                                  d_.h, d_.inter, data_or_null(w_.fc_bias), data_or_null(w_.mlp_proj_bias)};
    m(be_, in, rows_.size(), s_.proj, residual::none, s_.mlp_in, s_.mlp_act);
  }
  /// \brief The token-mixing MLP in place on x: per run (every run one sample of the same length
  /// S, stacked in order), t = xᵀ, t = RMSNorm_S(t + mlp_S(t)) weightless over the positions, x = tᵀ.
  /// Scratch: normed holds t [rows, h]; mlp_in and mlp_act the MLP's [samples·h, 2·I_S] and
  /// [samples·h, I_S], which the caller sizes (they may exceed the feature MLP's).
  void token_mlp() {
    const auto& runs = rows_.runs();
    MUNINN_CHECK(!runs.empty() && w_.token_proj.size(), "token_mlp: the layer has no token-mixing weights");
    const std::int64_t S = runs[0].n, Is = std::int64_t(w_.token_proj.size()) / S;
    for (std::size_t i = 0; i < runs.size(); ++i)
      MUNINN_CHECK(runs[i].n == S && runs[i].row0 == std::int64_t(i) * S,
                   "token_mlp: every sample must be one run of the same length, stacked in order");
    const token_mixer<T> mix{{w_.token_fc.data(), w_.token_proj.data(), S, Is}, {nullptr, S, d_.eps}};
    mix(be_, x_, std::int64_t(runs.size()), S, d_.h, s_.normed, s_.mlp_in, s_.mlp_act);
  }
  /// \brief x = RMSNorm_i(proj + x) (Huginn's sandwich re-normalises the residual stream).
  void add_norm(int i) { norm_at(i).add(be_, s_.proj, x_, rows_.size()); }
  /// \brief x = x + proj (pre-norm residual).
  void add_residual() { add(be_, x_, s_.proj, x_, rows_.size() * d_.h); }
  /// \brief Whether the layer stores a weight for RMSNorm i (block::from_config tells a sandwich
  /// layer, which stores four, from a pre-norm one).
  bool holds_norm(int i) const { return w_.norm[i].size() > 0; }
  /// \brief The weights this call runs (a user's BlockPolicy may read them, or tell layers apart).
  const layer_weights<Backend, T>& weights() const { return w_; }

 private:
  static constexpr bool host = std::is_same_v<typename Backend::tag, host_tag>;
  // What the GEMMs take for a matrix: on the host a weight_view (fp32, bf16 or q8), else a pointer.
  using weight_arg = std::conditional_t<host, weight_view, const T*>;

  static const T* data_or_null(const typename Backend::template buffer<T>& b) { return b.size() ? b.data() : nullptr; }
  // A matrix [N, K]: its converted copy when it has one, else its buffer.
  static weight_arg matrix(const typename Backend::template buffer<T>& b, const std::shared_ptr<const host_weight>& c,
                           std::int64_t K) {
    if constexpr (host) {
      return c ? c->view() : weight_view::f32(b.data(), K);
    } else {
      (void)c;
      (void)K;
      return b.data();
    }
  }
  // A layer that stores no weight for norm i (TRM / HRM's post-norm) normalises without one.
  rms_norm<T> norm_at(int i) const { return rms_norm<T>{data_or_null(w_.norm[i]), d_.h, d_.eps}; }

  const Backend& be_;
  const layer_weights<Backend, T>& w_;
  const layer_dims& d_;
  T* x_;
  const engine::active_rows& rows_;
  const kv_views<T>& kv_;
  const float* rope_;
  const layer_scratch<T>& s_;
};

/// \brief Runs one layer of BlockPolicy `Block` in place on the stack x.
template <class Block, class Rope, class Backend, class T>
void run_layer(const Backend& be, const layer_weights<Backend, T>& w, const layer_dims& d, T* x,
               const engine::active_rows& rows, const kv_views<T>& kv, const float* rope, const layer_scratch<T>& s) {
  layer_pass<Backend, T, Rope> l(be, w, d, x, rows, kv, rope, s);
  Block::forward(l);
}

}  // namespace muninn::nn
