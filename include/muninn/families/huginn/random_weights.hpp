#pragma once
/// \file
/// \brief Random Huginn weights (the stack of model/random_weights.hpp and, for a concat
/// injection, the adapter), for benchmarks, tests and examples.

#include <cmath>
#include <cstdint>

#include "muninn/families/huginn/config.hpp"
#include "muninn/families/huginn/weights.hpp"
#include "muninn/model/random_weights.hpp"
#include "muninn/policies/block.hpp"

namespace muninn {

/// \brief make_random_weights, plus the adapter [h, 2h] (σ = √(2/(5h))) when
/// `cfg.injection_type` is "linear"; the adapter's numbers come from their own counter range, so
/// the stack's are those make_random_weights draws. The layers hold the norms of `cfg.block_type`
/// when Block is block::from_config.
template <class Backend, class T, class Block>
huginn_weights<Backend, T> make_random_huginn_weights(const Backend& be, const huginn_config& cfg, std::uint64_t seed) {
  const int norms = block::layer_norms<Block>(cfg.block_type);
  huginn_weights<Backend, T> w(make_random_weights<Backend, T, Block>(be, cfg, seed, norms));
  if (cfg.injection_type == "linear") {
    const std::int64_t h = cfg.n_embd;
    std::uint64_t stream = std::uint64_t(1) << 60;  // far past every draw of the stack
    w.adapter = detail::random_tensor<Backend, T>(be, std::size_t(h * 2 * h), float(std::sqrt(2.0 / (5.0 * double(h)))),
                                                  seed, stream, &w.parameter_count);
  }
  return w;
}

}  // namespace muninn
