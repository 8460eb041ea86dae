#pragma once
/// \file
/// \brief Random weights of a layer stack with Huginn's "takase" initialisation, for benchmarks,
/// tests and examples (families/huginn/random_weights.hpp adds the concat adapter).

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "muninn/core/config.hpp"
#include "muninn/core/dtype.hpp"
#include "muninn/core/error.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/ops/random.hpp"
#include "muninn/ops/rope.hpp"
#include "muninn/policies/block.hpp"

namespace muninn {

namespace detail {

template <class Backend, class T>
typename Backend::template buffer<T> random_tensor(const Backend& be, std::size_t n, float std_, std::uint64_t seed,
                                                  std::uint64_t& stream, std::int64_t* counter, float constant = 0.0f) {
  std::vector<float> host(n, constant);
  if (std_ > 0) fill_truncated_normal(host_backend{}, host.data(), std::int64_t(n), seed, stream, std_);
  stream += n;
  auto buf = be.template alloc<T>(n);
  engine::upload_floats(be, buf.data(), host.data(), std::int64_t(n));
  if (counter) *counter += std::int64_t(n);
  return buf;
}

}  // namespace detail

/// \brief A layer stack's weights drawn as Huginn's training code initialises them (its "takase"
/// init): truncated normal at ±3σ with σ = √(2/(5h)), output projections σ/√(2·depth), norms 1,
/// qk_bias 0.
///
/// \tparam Block the BlockPolicy, which fixes the number of norms per layer. block::from_config
/// runs the block whose norms a layer holds, so it needs `norms` (block::layer_norms of the config's
/// block); for another Block, `norms` (when given) overrides Block::num_norms.
/// `depth` is the effective expected depth P + C·mean_recurrence + D used by the reference init.
template <class Backend, class T, class Block>
model_weights<Backend, T> make_random_weights(const Backend& be, const model_config& cfg, std::uint64_t seed,
                                              int norms = -1) {
  if (norms < 0) {
    constexpr bool chosen_by_layers = std::is_same_v<Block, block::from_config>;
    MUNINN_CHECK(!chosen_by_layers, "make_random_weights: block::from_config runs the block whose norms the layers "
                 "hold: give the norms per layer (block::layer_norms of the config's block)");
    norms = Block::num_norms;
  }
  MUNINN_CHECK(norms <= Block::num_norms, "make_random_weights: ", norms, " norms per layer; block::", Block::name,
               " holds at most ", Block::num_norms);
  const std::int64_t h = cfg.n_embd, H = cfg.n_heads, Hkv = cfg.n_kv_heads > 0 ? cfg.n_kv_heads : cfg.n_heads;
  const std::int64_t D = cfg.head_dim > 0 ? cfg.head_dim : h / H, I = cfg.intermediate_size, V = cfg.vocab_size;
  const double depth = double(cfg.n_layers_in_prelude + cfg.n_layers_in_recurrent_block * cfg.mean_recurrence +
                              cfg.n_layers_in_coda);
  const float sigma = float(std::sqrt(2.0 / (5.0 * double(h))));
  const float out_sigma = float(sigma / std::sqrt(2.0 * std::max(depth, 1.0)));
  std::uint64_t stream = 0;
  model_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  using detail::random_tensor;
  w.wte = random_tensor<Backend, T>(be, std::size_t(V * h), sigma, seed, stream, cnt);
  w.ln_f = random_tensor<Backend, T>(be, std::size_t(h), 0.0f, seed, stream, cnt, 1.0f);
  auto layer = [&]() {
    layer_weights<Backend, T> l;
    for (int i = 0; i < norms; ++i)
      l.norm[i] = random_tensor<Backend, T>(be, std::size_t(h), 0.0f, seed, stream, cnt, 1.0f);
    l.wqkv = random_tensor<Backend, T>(be, std::size_t((H + 2 * Hkv) * D * h), sigma, seed, stream, cnt);
    if (cfg.qk_bias) l.qk_bias = random_tensor<Backend, T>(be, std::size_t(2 * H * D), 0.0f, seed, stream, cnt);
    l.attn_proj = random_tensor<Backend, T>(be, std::size_t(h * H * D), out_sigma, seed, stream, cnt);
    l.fc = random_tensor<Backend, T>(be, std::size_t(2 * I * h), sigma, seed, stream, cnt);
    l.mlp_proj = random_tensor<Backend, T>(be, std::size_t(h * I), out_sigma, seed, stream, cnt);
    return l;
  };
  for (std::int64_t i = 0; i < cfg.n_layers_in_prelude; ++i) w.prelude.push_back(layer());
  for (std::int64_t i = 0; i < cfg.n_layers_in_recurrent_block; ++i) w.core.push_back(layer());
  for (std::int64_t i = 0; i < cfg.n_layers_in_coda; ++i) w.coda.push_back(layer());
  const auto table = make_rope_table(D, cfg.block_size, cfg.rope_base);
  w.rope = be.template alloc<float>(table.size());
  be.upload(w.rope.data(), table.data(), table.size());
  return w;
}

}  // namespace muninn
