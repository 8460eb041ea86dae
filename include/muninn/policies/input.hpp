#pragma once
/// \file
/// \brief InputPolicy (the "input" slot): token ids → the first hidden state.
///
/// Concept InputPolicy: `slot` = slot::input, `name`, and `static float scale(std::int64_t h)`:
/// the factor the embedding rows are multiplied by.

#include <cmath>
#include <cstdint>

#include "muninn/policies/detect.hpp"

namespace muninn {
namespace input {

/// \brief Embedding rows times √h (Huginn).
struct scaled_embedding {
  using slot = muninn::slot::input;                        ///< fills the Input slot
  static constexpr const char* name = "scaled_embedding";  ///< spelling used in messages
  /// \brief √h.
  static float scale(std::int64_t h) { return float(std::sqrt(double(h))); }
};

/// \brief Embedding rows as they are (Llama).
struct embedding {
  using slot = muninn::slot::input;                 ///< fills the Input slot
  static constexpr const char* name = "embedding";  ///< spelling used in messages
  /// \brief 1.
  static float scale(std::int64_t) { return 1.0f; }
};

}  // namespace input
}  // namespace muninn
