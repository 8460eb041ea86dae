#pragma once
// Random model weights drawn on the device for the CUDA benchmarks (bench_cuda_model.cu,
// bench_cuda_families.cu). make_random_weights draws on the host, which takes minutes for a few
// billion values; this draws the same layout with the same σ on the GPU, so building a 3.5 B
// model takes a second. Same layout and σ as make_random_weights, not the same values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "muninn/cuda.cuh"
#include "muninn/muninn.hpp"

namespace muninn_bench {

/// Parameters of one layer (qkv, proj, fc, mlp proj; norms and biases are negligible).
inline double layer_params(const muninn::model_config& c) {
  const double h = double(c.n_embd), q = double(c.n_heads * c.head_dim), kv = double(c.n_kv_heads * c.head_dim);
  const double I = double(c.intermediate_size);
  return h * (q + 2 * kv) + q * h + 2 * I * h + I * h;
}

/// Huginn's initialisation ("takase"): truncated normal σ = √(2/(5h)), output projections
/// σ/√(2·depth), norms 1, qk_bias 0; `Block` fixes the norms per layer. `untied_head` draws an
/// lm_head of its own. The layer stack only: device_random_huginn_weights adds Huginn's adapter.
template <class T, class Block>
muninn::model_weights<muninn::cuda_backend, T> device_random_weights(const muninn::cuda_backend& be,
                                                                     const muninn::model_config& cfg, std::uint64_t seed,
                                                                     bool untied_head = false) {
  using i64 = std::int64_t;
  const i64 h = cfg.n_embd, H = cfg.n_heads, Hkv = cfg.n_kv_heads > 0 ? cfg.n_kv_heads : cfg.n_heads;
  const i64 D = cfg.head_dim > 0 ? cfg.head_dim : h / H, I = cfg.intermediate_size, V = cfg.vocab_size;
  const double depth = double(cfg.n_layers_in_prelude + cfg.n_layers_in_recurrent_block * cfg.mean_recurrence +
                              cfg.n_layers_in_coda);
  const float sigma = float(std::sqrt(2.0 / (5.0 * double(h))));
  const float out_sigma = float(sigma / std::sqrt(2.0 * std::max(depth, 1.0)));
  muninn::model_weights<muninn::cuda_backend, T> w;
  std::uint64_t counter = 0;  // each tensor draws from its own counter range
  const std::vector<T> ones(std::size_t(h), muninn::from_float<T>(1.0f));
  auto normal = [&](i64 n, float sd) {
    auto b = be.alloc<T>(std::size_t(n));
    muninn::fill_truncated_normal(be, b.data(), n, seed, counter, sd);
    counter += std::uint64_t(n);
    w.parameter_count += n;
    return b;
  };
  auto norm = [&]() {
    auto b = be.alloc<T>(std::size_t(h));
    be.upload(b.data(), ones.data(), ones.size());
    w.parameter_count += h;
    return b;
  };
  w.wte = normal(V * h, sigma);
  if (untied_head) w.lm_head = normal(V * h, sigma);
  w.ln_f = norm();
  auto layer = [&]() {
    muninn::layer_weights<muninn::cuda_backend, T> l;
    for (int i = 0; i < Block::num_norms; ++i) l.norm[i] = norm();
    l.wqkv = normal((H + 2 * Hkv) * D * h, sigma);
    if (cfg.qk_bias) {
      l.qk_bias = be.alloc_zeroed<T>(std::size_t(2 * H * D));
      w.parameter_count += 2 * H * D;
    }
    l.attn_proj = normal(h * H * D, out_sigma);
    l.fc = normal(2 * I * h, sigma);
    l.mlp_proj = normal(h * I, out_sigma);
    return l;
  };
  for (i64 i = 0; i < cfg.n_layers_in_prelude; ++i) w.prelude.push_back(layer());
  for (i64 i = 0; i < cfg.n_layers_in_recurrent_block; ++i) w.core.push_back(layer());
  for (i64 i = 0; i < cfg.n_layers_in_coda; ++i) w.coda.push_back(layer());
  const auto table = muninn::make_rope_table(D, cfg.block_size, cfg.rope_base);
  w.rope = be.alloc<float>(table.size());
  be.upload(w.rope.data(), table.data(), table.size());
  be.synchronize();
  return w;
}

/// The stack of device_random_weights and Huginn's [h, 2h] concat adapter (same σ), drawn from
/// its own seed.
template <class T, class Block>
muninn::huginn_weights<muninn::cuda_backend, T> device_random_huginn_weights(const muninn::cuda_backend& be,
                                                                            const muninn::model_config& cfg,
                                                                            std::uint64_t seed) {
  muninn::huginn_weights<muninn::cuda_backend, T> w(device_random_weights<T, Block>(be, cfg, seed));
  const std::int64_t h = cfg.n_embd;
  w.adapter = be.alloc<T>(std::size_t(h * 2 * h));
  muninn::fill_truncated_normal(be, w.adapter.data(), h * 2 * h, seed + 1, 0, float(std::sqrt(2.0 / (5.0 * double(h)))));
  w.parameter_count += h * 2 * h;
  be.synchronize();
  return w;
}

}  // namespace muninn_bench
