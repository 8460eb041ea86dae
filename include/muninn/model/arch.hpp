#pragma once
/// \file
/// \brief `muninn::arch`: names one model structure by its policies, and checks the combination.

#include <type_traits>

#include "muninn/model/policies.hpp"

namespace muninn {

/// \brief A model structure: one type per policy slot, with Huginn's choices as defaults.
///
/// \tparam Block      models BlockPolicy (`block::sandwich`, `block::pre_norm`)
/// \tparam Injection  models InjectionPolicy (`injection::concat_linear`, `injection::add`)
/// \tparam StateInit  models StateInitPolicy (`state_init::truncated_normal`, `zero`, `given`)
/// \tparam Sharing    models SharingPolicy (`sharing::recurrent_core`, `sharing::none`)
/// \tparam Router     models RouterPolicy (`router::none`)
/// \tparam KvCache    models KvCachePolicy (`kv_cache::per_layer_slot`)
/// \tparam Halting    models HaltingPolicy (`halting::fixed`, `halting::adaptive`, `halting::kl_divergence`)
/// \tparam Head       models HeadPolicy (`head::softmax`)
///
/// A type in the wrong slot, or a combination that cannot work, fails to compile with a
/// `static_assert` that names the slot and the rule.
template <class Block = block::sandwich, class Injection = injection::concat_linear,
          class StateInit = state_init::truncated_normal, class Sharing = sharing::recurrent_core,
          class Router = router::none, class KvCache = kv_cache::per_layer_slot, class Halting = halting::fixed,
          class Head = head::softmax>
struct arch {
  static_assert(is_block_policy<Block>::value,
                "muninn::arch: the Block slot needs a BlockPolicy (block::sandwich or block::pre_norm)");
  static_assert(is_injection_policy<Injection>::value,
                "muninn::arch: the Injection slot needs an InjectionPolicy (injection::concat_linear or injection::add)");
  static_assert(is_state_init_policy<StateInit>::value,
                "muninn::arch: the StateInit slot needs a StateInitPolicy (state_init::truncated_normal, zero or given)");
  static_assert(is_sharing_policy<Sharing>::value,
                "muninn::arch: the Sharing slot needs a SharingPolicy (sharing::recurrent_core or sharing::none)");
  static_assert(is_router_policy<Router>::value, "muninn::arch: the Router slot needs a RouterPolicy (router::none)");
  static_assert(is_kv_cache_policy<KvCache>::value,
                "muninn::arch: the KvCache slot needs a KvCachePolicy (kv_cache::per_layer_slot)");
  static_assert(is_halting_policy<Halting>::value, "muninn::arch: the Halting slot needs a HaltingPolicy (halting::fixed, halting::adaptive, halting::kl_divergence)");
  static_assert(is_head_policy<Head>::value, "muninn::arch: the Head slot needs a HeadPolicy (head::softmax)");
  static_assert(Sharing::recurrent || std::is_same_v<Injection, injection::add>,
                "muninn::arch: injection::concat_linear feeds a recurrent state, so it needs a recurrent Sharing "
                "policy (sharing::recurrent_core); use injection::add with sharing::none");
  static_assert(Sharing::recurrent || !Router::routes,
                "muninn::arch: a Router chooses recursion depths, so it needs a recurrent Sharing policy");

  using block_policy = Block;          ///< the BlockPolicy
  using injection_policy = Injection;  ///< the InjectionPolicy
  using state_init_policy = StateInit; ///< the StateInitPolicy (default for calls that do not choose)
  using sharing_policy = Sharing;      ///< the SharingPolicy
  using router_policy = Router;        ///< the RouterPolicy
  using kv_cache_policy = KvCache;     ///< the KvCachePolicy
  using halting_policy = Halting;      ///< the HaltingPolicy
  using head_policy = Head;            ///< the HeadPolicy
};

/// \brief Huginn-0125 (Geiping et al. 2025): sandwich blocks, concat adapter, random state, recurrent core,
/// fixed depth.
using huginn_arch = arch<>;

/// \brief Huginn with per-token early exit compiled in (criterion chosen per call): what the CLI runs.
using huginn_adaptive_arch = arch<block::sandwich, injection::concat_linear, state_init::truncated_normal,
                                  sharing::recurrent_core, router::none, kv_cache::per_layer_slot, halting::adaptive>;

}  // namespace muninn
