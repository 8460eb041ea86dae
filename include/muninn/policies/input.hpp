#pragma once
/// \file
/// \brief InputPolicy (the "input" slot): token ids → the first hidden state.
///
/// Concept InputPolicy: `slot` = slot::input, `name`, and `static float scale(std::int64_t h)`:
/// the factor the embedding rows are multiplied by. An input that is not one embedding row per
/// position also provides
/// - `static std::int64_t tokens_per_position(const Config&)`: K, the tokens one position takes
///   (the model's ids come K per position; 1 when absent), and
/// - `template <class Pass> static void embed(Pass& p, const std::int32_t* ids, std::int64_t rows)`:
///   writes `p.e()` [rows, h] from the host ids [rows, K] of the pass's active rows, in place of
///   the embedding lookup (`input::chunk_compress`, families/calm/chunk_input.hpp).

#include <cmath>
#include <cstdint>
#include <utility>

#include "muninn/policies/detect.hpp"

namespace muninn {

namespace detail {
template <class P, class Config>
using input_tokens_member = decltype(P::tokens_per_position(std::declval<const Config&>()));
template <class Config>
struct input_tokens_bound {
  template <class P>
  using op = input_tokens_member<P, Config>;
};
template <class P, class Pass>
using input_embed_member =
    decltype(P::embed(std::declval<Pass&>(), std::declval<const std::int32_t*>(), std::int64_t()));
template <class Pass>
struct input_embed_bound {
  template <class P>
  using op = input_embed_member<P, Pass>;
};
/// \brief Whether Input writes the first state itself (`embed(pass, ids, rows)`).
template <class Input, class Pass>
inline constexpr bool has_input_embed = detected_v<Input, input_embed_bound<Pass>::template op>;
}  // namespace detail

/// \brief Tokens one position takes under Input for a config: `Input::tokens_per_position(cfg)`
/// when the policy declares it, else 1.
template <class Input, class Config>
std::int64_t input_tokens_per_position(const Config& cfg) {
  if constexpr (detail::detected_v<Input, detail::input_tokens_bound<Config>::template op>)
    return Input::tokens_per_position(cfg);
  else
    return 1;
}

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
