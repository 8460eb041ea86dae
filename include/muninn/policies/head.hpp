#pragma once
/// \file
/// \brief HeadPolicy (the "head" slot): final rows → output.
///
/// Concept HeadPolicy: `slot` = slot::head, `name`, and `template <class Backend, class T> static
/// void logits(const head_args<Backend, T>&)`.

#include <cstdint>

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
  std::int64_t vocab;  ///< V
  const T* norm;       ///< final norm weight [h]
  float eps;           ///< its epsilon
  const T* weight;     ///< output matrix [V, h] (the embedding when tied)
  T* logits;           ///< [rows, V]
};

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
}  // namespace head

}  // namespace muninn
