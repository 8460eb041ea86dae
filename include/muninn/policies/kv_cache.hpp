#pragma once
/// \file
/// \brief KvCachePolicy: where each executed layer keeps its keys and values (the "kv_cache" slot).
///
/// Concept KvCachePolicy: `slot` = slot::kv_cache, `name`, `template <class Backend, class T>
/// using storage = …` (a class modelling KvStorage, see engine/kv_cache.hpp, that an
/// `inference_context` owns) and `static std::int64_t num_slots(const kv_layout&, const
/// context_limits&)` (slots per token, for sizing before a context exists).

#include <algorithm>
#include <cstdint>

#include "muninn/engine/kv_cache.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {
namespace kv_cache {

/// \brief One slot per executed layer call: prelude i → i, core step s layer j → P + C·s + j,
/// coda c after the deepest core slot (Huginn's cache indexing).
///
/// With a run-time budget of k recurrences (`context_limits::kv_budget`), step s uses the slots of
/// step s mod k (the paper's zero-shot KV sharing), so memory per token no longer grows with r.
/// Tokens that exit early are shown to later tokens as `context_limits::fallback` says.
struct per_layer_slot {
  using slot = muninn::slot::kv_cache;                     ///< fills the KvCache slot
  static constexpr const char* name = "per_layer_slot";    ///< spelling used in messages
  /// \brief The cache object of one sequence.
  template <class Backend, class T>
  using storage = engine::executed_layer_cache<Backend, T, per_layer_slot>;

  /// \brief Distinct core steps that own slots: all of them, or the budget.
  static std::int64_t core_steps(const context_limits& lim) {
    return lim.kv_budget > 0 ? std::min(lim.kv_budget, lim.max_steps) : lim.max_steps;
  }
  /// \brief Slots per token.
  static std::int64_t num_slots(const kv_layout& l, const context_limits& lim) {
    return l.prelude + l.core * (l.core > 0 ? core_steps(lim) : 0) + l.coda;
  }
  /// \brief Slot of `layer` of `group` at recurrence `step` (0-based).
  static std::int64_t slot_id(const kv_layout& l, const context_limits& lim, layer_group group, std::int64_t step,
                              std::int64_t layer) {
    switch (group) {
      case layer_group::prelude: return layer;
      case layer_group::core: return l.prelude + l.core * (lim.kv_budget > 0 ? step % lim.kv_budget : step) + layer;
      case layer_group::coda: break;
    }
    return l.prelude + l.core * (l.core > 0 ? core_steps(lim) : 0) + layer;
  }
};

/// \brief One slot per layer (a plain stack: Llama).
struct per_layer {
  using slot = muninn::slot::kv_cache;               ///< fills the KvCache slot
  static constexpr const char* name = "per_layer";   ///< spelling used in messages
  /// \brief The cache object of one sequence.
  template <class Backend, class T>
  using storage = engine::slot_cache<Backend, T, per_layer>;
  /// \brief Slots per token: one per layer.
  static std::int64_t num_slots(const kv_layout& l, const context_limits&) { return l.prelude + l.core + l.coda; }
  /// \brief Slot of `layer` of `group` (the step is ignored: every layer runs once).
  static std::int64_t slot_id(const kv_layout& l, const context_limits&, layer_group group, std::int64_t,
                              std::int64_t layer) {
    return (group == layer_group::prelude ? 0 : group == layer_group::core ? l.prelude : l.prelude + l.core) + layer;
  }
};

/// \brief Recursion-wise caching (Mixture-of-Recursions): a slot per (recursion, layer) as
/// per_layer_slot indexes them (recursion = step), each holding only the tokens routed through
/// it, so deeper slots are shorter. Memory per token is what the held rows take
/// (`storage::used_bytes`), not the full depth.
struct recursion_wise {
  using slot = muninn::slot::kv_cache;                   ///< fills the KvCache slot
  static constexpr const char* name = "recursion_wise";  ///< spelling used in messages
  /// \brief The cache object of one sequence.
  template <class Backend, class T>
  using storage = engine::ragged_slot_cache<Backend, T, recursion_wise>;
  /// \brief Slots: one per prelude layer, per (recursion, core layer) and per coda layer.
  static std::int64_t num_slots(const kv_layout& l, const context_limits& lim) {
    return per_layer_slot::num_slots(l, lim);
  }
  /// \brief Slot of `layer` of `group` at recursion `step`.
  static std::int64_t slot_id(const kv_layout& l, const context_limits& lim, layer_group group, std::int64_t step,
                              std::int64_t layer) {
    return per_layer_slot::slot_id(l, lim, group, step, layer);
  }
};

/// \brief No cache at all: every call sees only its own rows (models that take their whole input at
/// once; a context of this kind cannot decode token by token).
struct none {
  using slot = muninn::slot::kv_cache;          ///< fills the KvCache slot
  static constexpr const char* name = "none";   ///< spelling used in messages
  /// \brief The cache object of one sequence: a scratch slot.
  template <class Backend, class T>
  using storage = engine::scratch_only_cache<Backend, T>;
  /// \brief No slot is kept per token.
  static std::int64_t num_slots(const kv_layout&, const context_limits&) { return 0; }
};

}  // namespace kv_cache
}  // namespace muninn
