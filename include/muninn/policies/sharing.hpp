#pragma once
/// \file
/// \brief SharingPolicy (the "sharing" slot): which stored layer each executed layer runs.
///
/// Concept SharingPolicy: `slot` = slot::sharing, `name`, `recurrent` (whether the core group runs
/// once per recurrence step), and
/// - `static std::int64_t layer(const sharing_layout&, layer_group g, std::int64_t step, std::int64_t j)`:
///   the stored layer of group g that runs as the j-th layer of recurrence step `step` (j < the
///   group's stored layers; the prelude and coda run at step 0);
/// - `static void check(const sharing_layout&, const std::string& source)`: throws, naming
///   `source`, when a model's layer groups do not fit the strategy.
///
/// The strategies of recursive transformers (Bae et al. 2025) with B stored core layers laid out
/// for R recursions (the config's mean_recurrence): `cycle` runs layers 0 … B−1 at every step
/// (layer l + r·B of the unrolled depth uses the weights of l); `sequence` repeats each layer R
/// times in a row (the unrolled depth is w0 ×R, w1 ×R, …, chopped into steps of B layers, so step
/// s runs the layers (s·B + j) / R); the `middle_` variants keep unshared prelude and coda layers
/// around the shared core — Huginn's prelude / core / coda is `middle_cycle`
/// (`recurrent_core`). Every strategy runs under any RecurrencePolicy, and the KV cache keys its
/// slots by executed layer, so caching is unchanged.

#include <cstdint>
#include <string>

#include "muninn/core/error.hpp"
#include "muninn/engine/kv_cache.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {

/// \brief The stored layers of a model's groups, and the recursions its core was laid out for.
struct sharing_layout {
  std::int64_t prelude = 0;     ///< layers run once before the recurrence
  std::int64_t core = 0;        ///< B: stored layers of the shared core, run at every step
  std::int64_t coda = 0;        ///< layers run once after it
  std::int64_t recursions = 0;  ///< R: the recursions the sequence strategies spread each layer over
};

/// \brief Which layers are reused and how.
namespace sharing {
namespace detail {
inline void check_core(const sharing_layout& l, const char* name, const std::string& source) {
  MUNINN_CHECK(l.core >= 1, source, ": sharing::", name, " needs a core of at least one layer (n_layers_in_recurrent_block)");
}
inline void check_no_middle(const sharing_layout& l, const char* name, const std::string& source) {
  MUNINN_CHECK(l.prelude == 0 && l.coda == 0, source, ": sharing::", name, " shares every layer, but the config has ",
               l.prelude, " prelude and ", l.coda, " coda layers (use sharing::middle_", name, ")");
}
inline void check_recursions(const sharing_layout& l, const char* name, const std::string& source) {
  MUNINN_CHECK(l.recursions >= 1, source, ": sharing::", name,
               " spreads each core layer over mean_recurrence steps, which must be >= 1");
}
// Sequence order: executed core layer s·B + j of the unrolled depth (steps past R start the
// unrolled depth again) runs stored layer (s·B + j) / R.
inline std::int64_t sequence_layer(const sharing_layout& l, layer_group g, std::int64_t step, std::int64_t j) {
  if (g != layer_group::core) return j;
  return ((step % l.recursions) * l.core + j) / l.recursions;
}
}  // namespace detail

/// \brief Prelude and coda unshared, the core's B layers in order at every step (Huginn's
/// prelude / core / coda; Mixture-of-Recursions' Middle-Cycle with one first and one last layer).
struct middle_cycle {
  using slot = muninn::slot::sharing;                  ///< fills the Sharing slot
  static constexpr bool recurrent = true;              ///< whether a core runs once per step
  static constexpr const char* name = "middle_cycle";  ///< spelling used in messages
  /// \brief Stored layer j of every group at every step.
  static std::int64_t layer(const sharing_layout&, layer_group, std::int64_t, std::int64_t j) { return j; }
  /// \brief A core of at least one layer.
  static void check(const sharing_layout& l, const std::string& source) { detail::check_core(l, "middle_cycle", source); }
};

/// \brief Huginn's name for middle_cycle: prelude and coda unshared, one core block applied r times.
using recurrent_core = middle_cycle;

/// \brief Every layer shared: the core's B layers in order at every step, no prelude or coda.
struct cycle {
  using slot = muninn::slot::sharing;           ///< fills the Sharing slot
  static constexpr bool recurrent = true;       ///< whether a core runs once per step
  static constexpr const char* name = "cycle";  ///< spelling used in messages
  /// \brief Stored layer j at every step.
  static std::int64_t layer(const sharing_layout&, layer_group, std::int64_t, std::int64_t j) { return j; }
  /// \brief A core, and no prelude or coda.
  static void check(const sharing_layout& l, const std::string& source) {
    detail::check_core(l, "cycle", source);
    detail::check_no_middle(l, "cycle", source);
  }
};

/// \brief Every layer shared, each repeated R times in a row: step s runs stored layers
/// (s·B + j) / R, j < B (steps past R start over).
struct sequence {
  using slot = muninn::slot::sharing;              ///< fills the Sharing slot
  static constexpr bool recurrent = true;          ///< whether a core runs once per step
  static constexpr const char* name = "sequence";  ///< spelling used in messages
  /// \brief The sequence order over the core.
  static std::int64_t layer(const sharing_layout& l, layer_group g, std::int64_t step, std::int64_t j) {
    return detail::sequence_layer(l, g, step, j);
  }
  /// \brief A core, R >= 1, and no prelude or coda.
  static void check(const sharing_layout& l, const std::string& source) {
    detail::check_core(l, "sequence", source);
    detail::check_no_middle(l, "sequence", source);
    detail::check_recursions(l, "sequence", source);
  }
};

/// \brief Prelude and coda unshared around a core in sequence order (see sequence).
struct middle_sequence {
  using slot = muninn::slot::sharing;                     ///< fills the Sharing slot
  static constexpr bool recurrent = true;                 ///< whether a core runs once per step
  static constexpr const char* name = "middle_sequence";  ///< spelling used in messages
  /// \brief The sequence order over the core; prelude and coda as stored.
  static std::int64_t layer(const sharing_layout& l, layer_group g, std::int64_t step, std::int64_t j) {
    return detail::sequence_layer(l, g, step, j);
  }
  /// \brief A core and R >= 1.
  static void check(const sharing_layout& l, const std::string& source) {
    detail::check_core(l, "middle_sequence", source);
    detail::check_recursions(l, "middle_sequence", source);
  }
};

/// \brief No reuse at all: every layer runs once (a plain transformer: no core).
struct none {
  using slot = muninn::slot::sharing;          ///< fills the Sharing slot
  static constexpr bool recurrent = false;     ///< whether a core runs once per step
  static constexpr const char* name = "none";  ///< spelling used in messages
  /// \brief Stored layer j.
  static std::int64_t layer(const sharing_layout&, layer_group, std::int64_t, std::int64_t j) { return j; }
  /// \brief No core.
  static void check(const sharing_layout& l, const std::string& source) {
    MUNINN_CHECK(l.core == 0, source, ": sharing::none needs n_layers_in_recurrent_block = 0, config has ", l.core);
  }
};
}  // namespace sharing

}  // namespace muninn
