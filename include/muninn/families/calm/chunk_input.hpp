#pragma once
/// \file
/// \brief `input::chunk_compress`: CALM's compressor as an InputPolicy, K tokens into one position.

#include <cstdint>

#include "muninn/families/calm/layers.hpp"
#include "muninn/nn/norm.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {
namespace input {

/// \brief K tokens per position (the reference's `embed_proj`): the K backbone embeddings of a
/// chunk side by side → Linear(K·d → 2d) → SiLU → Linear(2d → d) → LayerNorm (ε 1e-6).
/// Implements the InputPolicy concept (policies/input.hpp) with `tokens_per_position` and
/// `embed`; reads `config().calm.patch_size` and `weights().compressor` (family::calm, or a
/// user family built on calm_model_config and calm_weights).
struct chunk_compress {
  using slot = muninn::slot::input;                      ///< fills the Input slot
  static constexpr const char* name = "chunk_compress";  ///< spelling used in messages
  /// \brief The embedding rows enter the compressor unscaled.
  static float scale(std::int64_t) { return 1.0f; }
  /// \brief K.
  template <class Config>
  static std::int64_t tokens_per_position(const Config& cfg) {
    return cfg.calm.patch_size;
  }
  /// \brief p.e() [rows, d] = the compressed chunks of the host ids [rows, K].
  template <class Pass>
  static void embed(Pass& p, const std::int32_t* ids, std::int64_t rows) {
    using B = typename Pass::backend_type;
    using T = typename Pass::value_type;
    const auto& m = p.model();
    const auto& be = m.backend();
    const auto& c = m.weights().compressor;
    const std::int64_t d = m.dims().h, K = m.config().calm.patch_size;
    auto& s = p.ws().template reuse<calm_scratch<B, T>>([] { return calm_scratch<B, T>(); });
    std::int32_t* dids = s.ids(be, 0, std::size_t(rows * K));
    be.upload(dids, ids, std::size_t(rows * K));
    T* e = s.get(be, 0, std::size_t(rows * K * d));
    muninn::embedding(be, m.weights().wte.data(), m.config().vocab_size, d, dids, rows * K, 1.0f, e);
    T* a = s.get(be, 1, std::size_t(rows * 2 * d));
    linear_forward(be, c.l0, e, rows, a);
    silu(be, a, rows * 2 * d);
    linear_forward(be, c.l2, a, rows, p.e());
    nn::layer_norm<T>{c.ln.w.data(), c.ln.b.data(), d, 1e-6f}(be, p.e(), p.e(), rows);
  }
};

}  // namespace input
}  // namespace muninn
