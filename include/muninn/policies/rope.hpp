#pragma once
/// \file
/// \brief RopePolicy (the "rope" slot): which dimensions of a head rotate together.
///
/// Concept RopePolicy: `slot` = slot::rope, `name`, and `template <class Backend, class T> static
/// void apply(const Backend&, T* x, rows, ld, n_heads, head_dim, const T* bias, const float* table,
/// std::int64_t pos0)`: adds the optional bias, then rotates rows at positions pos0, pos0 + 1, ….
/// Both pairings read the same table layout ([position][D/2][2] = cos, sin).

#include <cstdint>

#include "muninn/ops/rope.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {
namespace rope {

/// \brief Adjacent pairs (2i, 2i+1), the complex-number form (Huginn).
struct interleaved {
  using slot = muninn::slot::rope;                    ///< fills the Rope slot
  static constexpr const char* name = "interleaved";  ///< spelling used in messages
  /// \brief Rotates the heads of x in place.
  template <class Backend, class T>
  static void apply(const Backend& be, T* x, std::int64_t rows, std::int64_t ld, std::int64_t heads, std::int64_t dim,
                    const T* bias, const float* table, std::int64_t pos0) {
    rope_interleaved(be, x, rows, ld, heads, dim, bias, table, pos0);
  }
};

/// \brief Pairs (i, i + D/2), Hugging Face's rotate_half (Llama).
struct half {
  using slot = muninn::slot::rope;             ///< fills the Rope slot
  static constexpr const char* name = "half";  ///< spelling used in messages
  /// \brief Rotates the heads of x in place.
  template <class Backend, class T>
  static void apply(const Backend& be, T* x, std::int64_t rows, std::int64_t ld, std::int64_t heads, std::int64_t dim,
                    const T* bias, const float* table, std::int64_t pos0) {
    rope_half(be, x, rows, ld, heads, dim, bias, table, pos0);
  }
};

}  // namespace rope
}  // namespace muninn
