#pragma once
/// \file
/// \brief Policy tag types: the compile-time slots of `muninn::arch`.
///
/// A policy is a type. Each family below has a trait (`is_block_policy` ...) so that `arch`
/// can reject a type put in the wrong slot with a message that names the slot.

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "muninn/model/halting.hpp"

namespace muninn {

/// \brief Layer structures (the "block" slot). Concept: BlockPolicy.
namespace block {
/// \brief Huginn's block: `x = n2(attn(n1(x)) + x); x = n4(mlp(n3(x)) + x)` — four RMSNorms.
struct sandwich {
  static constexpr int num_norms = 4;  ///< RMSNorm weights per layer
  static constexpr const char* name = "sandwich";  ///< spelling used in messages and config checks
};
/// \brief Llama-style pre-norm block: `x += attn(n1(x)); x += mlp(n2(x))` — two RMSNorms.
struct pre_norm {
  static constexpr int num_norms = 2;  ///< RMSNorm weights per layer
  static constexpr const char* name = "pre_norm";  ///< spelling used in messages and config checks
};
}  // namespace block

/// \brief How the prelude output `e` enters each recurrence step (the "injection" slot). Concept: InjectionPolicy.
namespace injection {
/// \brief `x = adapter([x, e])`, adapter Linear(2h→h) without bias; the state comes first (Huginn).
struct concat_linear {
  static constexpr bool has_weight = true;  ///< whether the injection has a weight to load
  static constexpr const char* name = "concat_linear";  ///< spelling used in messages and config checks
};
/// \brief `x = x + e`: no weight.
struct add {
  static constexpr bool has_weight = false;  ///< whether the injection has a weight to load
  static constexpr const char* name = "add";  ///< spelling used in messages and config checks
};
}  // namespace injection

/// \brief The recurrent state before the first step (the "state_init" slot): the default a call may override.
/// Concept: StateInitPolicy.
namespace state_init {
/// \brief i.i.d. truncated normal, std √(2/(5h))·init_scale·√h, cut at ±3σ, seeded (Huginn's "like-init").
struct truncated_normal {
  static constexpr const char* name = "truncated_normal";  ///< spelling used in messages and config checks
};
/// \brief All zeros: deterministic, what reference comparisons use.
struct zero {
  static constexpr const char* name = "zero";  ///< spelling used in messages and config checks
};
/// \brief A state tensor supplied by the caller.
struct given {
  static constexpr const char* name = "given";  ///< spelling used in messages and config checks
};
}  // namespace state_init

/// \brief Which layers are reused and how (the "sharing" slot). Concept: SharingPolicy.
namespace sharing {
/// \brief Huginn: prelude and coda unshared, one core block of layers applied r times.
struct recurrent_core {
  static constexpr bool recurrent = true;  ///< whether a core runs r times
  static constexpr const char* name = "recurrent_core";  ///< spelling used in messages and config checks
};
/// \brief No reuse at all: every layer runs once (a plain transformer; r must be 0).
struct none {
  static constexpr bool recurrent = false;  ///< whether a core runs r times
  static constexpr const char* name = "none";  ///< spelling used in messages and config checks
};
}  // namespace sharing

/// \brief Which tokens take which recursion (the "router" slot). Concept: RouterPolicy.
namespace router {
/// \brief Every token runs every step.
struct none {
  static constexpr bool routes = false;  ///< whether tokens may take different depths by routing
  static constexpr const char* name = "none";  ///< spelling used in messages and config checks
};
}  // namespace router

/// \brief Where each executed layer keeps its keys and values (the "kv_cache" slot). Concept: KvCachePolicy.
namespace kv_cache {
/// \brief One slot per executed layer call: prelude i → i, core step s layer j → P + C·s + j, coda c after
/// the deepest core slot (Huginn's `HuginnDynamicCache` indexing, reference/huginn.md §4.1).
///
/// With a run-time budget of k recurrences (`context_limits::kv_budget`), step s uses the slots of
/// step s mod k (the paper's zero-shot KV sharing; the reference's `compress-s{4k}`), so memory per
/// token no longer grows with r.
struct per_layer_slot {
  static constexpr const char* name = "per_layer_slot";  ///< spelling used in messages and config checks
  /// \brief Distinct core steps that own slots: all of them, or the budget.
  static std::int64_t core_steps(std::int64_t max_steps, std::int64_t budget) {
    return budget > 0 ? std::min(budget, max_steps) : max_steps;
  }
  /// \brief Slots needed for prelude P, core C, coda D layers and at most `max_steps` recurrences.
  static std::int64_t num_slots(std::int64_t P, std::int64_t C, std::int64_t D, std::int64_t max_steps,
                                std::int64_t budget = 0) {
    return P + C * core_steps(max_steps, budget) + D;
  }
  /// \brief Slot of prelude layer i.
  static std::int64_t prelude_slot(std::int64_t i) { return i; }
  /// \brief Slot of core layer j at recurrence step s (0-based).
  static std::int64_t core_slot(std::int64_t P, std::int64_t C, std::int64_t s, std::int64_t j, std::int64_t budget = 0) {
    return P + C * (budget > 0 ? s % budget : s) + j;
  }
  /// \brief Slot of coda layer c.
  static std::int64_t coda_slot(std::int64_t P, std::int64_t C, std::int64_t max_steps, std::int64_t c,
                                std::int64_t budget = 0) {
    return P + C * core_steps(max_steps, budget) + c;
  }
};
}  // namespace kv_cache

/// \brief When the recurrence stops (the "halting" slot). Concept: HaltingPolicy.
///
/// The criteria themselves are run-time values (`halting_options`), so one compiled model serves
/// every `--exit` flag; the policy fixes whether early exit is compiled in and its default.
namespace halting {
/// \brief Exactly the requested number of steps for every token; asking for an exit criterion is an error.
struct fixed {
  static constexpr bool early_exit = false;  ///< whether per-token exit is compiled in
  static constexpr halt_criterion default_criterion = halt_criterion::none;  ///< criterion when a call does not choose
  static constexpr const char* name = "fixed";  ///< spelling used in messages and config checks
};
/// \brief Per-token early exit with the criterion chosen per call (none by default).
struct adaptive {
  static constexpr bool early_exit = true;  ///< whether per-token exit is compiled in
  static constexpr halt_criterion default_criterion = halt_criterion::none;  ///< criterion when a call does not choose
  static constexpr const char* name = "adaptive";  ///< spelling used in messages and config checks
};
/// \brief Per-token early exit on KL(p_{i-1} ‖ p_i) < 5e-4 unless a call chooses otherwise.
struct kl_divergence {
  static constexpr bool early_exit = true;  ///< whether per-token exit is compiled in
  static constexpr halt_criterion default_criterion = halt_criterion::kl;  ///< criterion when a call does not choose
  static constexpr const char* name = "kl_divergence";  ///< spelling used in messages and config checks
};
}  // namespace halting

/// \brief What turns the final state into an output (the "head" slot). Concept: HeadPolicy.
namespace head {
/// \brief `ln_f → coda → ln_f → x·Wᵀ` with W the embedding when tied (Huginn applies the same ln_f twice).
struct softmax {
  static constexpr const char* name = "softmax";  ///< spelling used in messages and config checks
};
}  // namespace head

/// \brief Traits that say which slot a policy type belongs to.
template <class P>
struct is_block_policy : std::false_type {};
template <>
struct is_block_policy<block::sandwich> : std::true_type {};
template <>
struct is_block_policy<block::pre_norm> : std::true_type {};

template <class P>
struct is_injection_policy : std::false_type {};
template <>
struct is_injection_policy<injection::concat_linear> : std::true_type {};
template <>
struct is_injection_policy<injection::add> : std::true_type {};

template <class P>
struct is_state_init_policy : std::false_type {};
template <>
struct is_state_init_policy<state_init::truncated_normal> : std::true_type {};
template <>
struct is_state_init_policy<state_init::zero> : std::true_type {};
template <>
struct is_state_init_policy<state_init::given> : std::true_type {};

template <class P>
struct is_sharing_policy : std::false_type {};
template <>
struct is_sharing_policy<sharing::recurrent_core> : std::true_type {};
template <>
struct is_sharing_policy<sharing::none> : std::true_type {};

template <class P>
struct is_router_policy : std::false_type {};
template <>
struct is_router_policy<router::none> : std::true_type {};

template <class P>
struct is_kv_cache_policy : std::false_type {};
template <>
struct is_kv_cache_policy<kv_cache::per_layer_slot> : std::true_type {};

template <class P>
struct is_halting_policy : std::false_type {};
template <>
struct is_halting_policy<halting::fixed> : std::true_type {};
template <>
struct is_halting_policy<halting::adaptive> : std::true_type {};
template <>
struct is_halting_policy<halting::kl_divergence> : std::true_type {};

template <class P>
struct is_head_policy : std::false_type {};
template <>
struct is_head_policy<head::softmax> : std::true_type {};

}  // namespace muninn
