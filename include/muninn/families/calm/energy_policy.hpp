#pragma once
/// \file
/// \brief `head::energy`: CALM's energy head as a HeadPolicy — the final RMSNorm gives the hidden
/// state, and the head's sampler turns it into K tokens (generator → autoencoder decoder → chunk
/// choice at temperature T).

#include <cstdint>

#include "muninn/families/calm/chunk_sampler.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/detect.hpp"
#include "muninn/policies/head.hpp"

namespace muninn {
namespace head {

/// \brief The energy head: output rows are the normalised hidden states [h]; an emission is one
/// K-token chunk drawn by `calm_chunk_sampler` from the generator and the autoencoder the model's
/// weights hold (`weights().head`, `weights().autoencoder()`, settings `config().calm`).
/// Implements the HeadPolicy concept (policies/head.hpp) with `output_width`, `tokens_per_row`
/// and `make_sampler`.
struct energy {
  using slot = muninn::slot::head;               ///< fills the Head slot
  static constexpr const char* name = "energy";  ///< spelling used in messages
  static constexpr bool reads_output_matrix = false;  ///< rows are hidden states, no GEMM
  /// \brief Output rows are hidden states: width h.
  template <class Config>
  static std::int64_t output_width(const Config& cfg) {
    return cfg.n_embd;
  }
  /// \brief K tokens per emission.
  template <class Config>
  static std::int64_t tokens_per_row(const Config& cfg) {
    return cfg.calm.patch_size;
  }
  /// \brief Output rows = RMSNorm(x) (the generator reads them; no vocabulary GEMM).
  template <class Backend, class T>
  static void logits(const head_args<Backend, T>& a) {
    rmsnorm(a.be, a.x, a.norm, a.logits, a.rows, a.h, a.eps);
  }
  /// \brief The sampler of a model's head: reads the model's weights, owns its scratch.
  template <class Model>
  static calm_chunk_sampler<typename Model::backend_type, typename Model::value_type> make_sampler(const Model& m) {
    return {m.backend(), m.weights().head, m.weights().autoencoder(), m.config().calm};
  }
};

}  // namespace head
}  // namespace muninn
