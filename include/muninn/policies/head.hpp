#pragma once
/// \file
/// \brief HeadPolicy (the "head" slot): final rows → output.
///
/// Concept HeadPolicy: `slot` = slot::head, `name`, and `template <class Backend, class T> static
/// void logits(const head_args<Backend, T>&)`. Optional: `static std::int64_t output_width(const
/// model_config&)`, the width of each output row (the vocabulary size when absent).

#include <cstdint>
#include <utility>

#include "muninn/core/config.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {

/// \brief Rows a head turns into logits.
template <class Backend, class T>
struct head_args {
  const Backend& be;   ///< the backend
  T* x;                ///< rows [rows, h], normalised in place
  std::int64_t rows;   ///< rows
  std::int64_t h;      ///< hidden size
  std::int64_t vocab;  ///< V: the width of an output row (head_output_width)
  const T* norm;       ///< final norm weight [h]
  float eps;           ///< its epsilon
  const T* weight;     ///< output matrix [V, h] (the embedding when tied)
  T* logits;           ///< [rows, V]
};

namespace detail {
template <class P>
using head_output_width_member = decltype(P::output_width(std::declval<const model_config&>()));
}  // namespace detail

/// \brief Width of one output row of Head for a config: `Head::output_width(cfg)` when the policy
/// declares it, else the vocabulary size.
template <class Head>
std::int64_t head_output_width(const model_config& cfg) {
  if constexpr (detail::detected_v<Head, detail::head_output_width_member>)
    return Head::output_width(cfg);
  else
    return cfg.vocab_size;
}

namespace head {
/// \brief `logits = RMSNorm(x) · Wᵀ`, W the embedding when tied.
struct softmax {
  using slot = muninn::slot::head;                ///< fills the Head slot
  static constexpr const char* name = "softmax";  ///< spelling used in messages
  /// \brief Final norm, then one GEMM against the output matrix.
  template <class Backend, class T>
  static void logits(const head_args<Backend, T>& a) {
    rmsnorm(a.be, a.x, a.norm, a.x, a.rows, a.h, a.eps);
    gemm_nt(a.be, a.rows, a.vocab, a.h, 1.0f, a.x, a.h, a.weight, a.h, 0.0f, a.logits, a.vocab);
  }
};

/// \brief The final RMSNorm and nothing else: each output row is the normalised hidden state
/// [h]. A backbone whose output is not a token distribution (CALM feeds its energy head with it)
/// uses this head.
struct final_norm {
  using slot = muninn::slot::head;                   ///< fills the Head slot
  static constexpr const char* name = "final_norm";  ///< spelling used in messages
  /// \brief Output rows are hidden states: width h.
  static std::int64_t output_width(const model_config& cfg) { return cfg.n_embd; }
  /// \brief logits = RMSNorm(x) (the weight matrix is not read).
  template <class Backend, class T>
  static void logits(const head_args<Backend, T>& a) {
    rmsnorm(a.be, a.x, a.norm, a.logits, a.rows, a.h, a.eps);
  }
};
}  // namespace head

}  // namespace muninn
