#pragma once
/// \file
/// \brief `muninn::arch`: names one model structure by its policies, checks each against its
/// slot's concept, and lets a user change one slot by name (`with<>`).

#include <type_traits>

#include "muninn/policies/concepts.hpp"
#include "muninn/policies/input.hpp"
#include "muninn/policies/recurrence.hpp"
#include "muninn/policies/rope.hpp"
#include "muninn/policies/router.hpp"
#include "muninn/policies/sharing.hpp"

namespace muninn {

template <class Arch, class... Policies>
struct arch_with;

/// \brief A model structure: one type per policy slot.
///
/// \tparam Block      BlockPolicy (`block::sandwich`, `block::pre_norm`)
/// \tparam Injection  InjectionPolicy (`injection::concat_linear`, `injection::add`, `injection::none`)
/// \tparam StateInit  StateInitPolicy (`state_init::truncated_normal`, `zero`, `given`)
/// \tparam Sharing    SharingPolicy (`sharing::middle_cycle` = `recurrent_core`, `cycle`, `sequence`, `middle_sequence`, `none`)
/// \tparam Router     RouterPolicy (`router::none`, `router::expert_choice`, `router::token_choice`)
/// \tparam KvCache    KvCachePolicy (`kv_cache::per_layer_slot`, `kv_cache::per_layer`, `kv_cache::recursion_wise`)
/// \tparam Halting    HaltingPolicy (`halting::fixed`, `halting::adaptive`, `halting::kl_divergence`)
/// \tparam Head       HeadPolicy (`head::softmax`, `head::final_norm`)
/// \tparam Input      InputPolicy (`input::scaled_embedding`, `input::embedding`)
/// \tparam Rope       RopePolicy (`rope::interleaved`, `rope::half`)
/// \tparam Recurrence RecurrencePolicy (`recurrence::core_loop`, `recurrence::none`, `recurrence::mixture`)
/// \tparam Family     FamilyPolicy (`family::huginn`, `family::llama`, `family::mor`): how checkpoints are read
///
/// Every slot is checked against its concept by detection, so a policy written in user code
/// fits without a library edit; a type that does not fit fails to compile with a
/// `static_assert` naming the slot and the missing member. Change slots by name with
/// `with<P...>`: `huginn_arch::with<halting::kl_divergence>` replaces the Halting slot
/// (each policy names its slot with `using slot = slot::halting;`).
///
/// The slots have no defaults here: the defaults are Huginn's choices, so Huginn's family gives
/// them (`families/huginn/arch.hpp`, which `muninn/muninn.hpp` includes): `arch<block::pre_norm>`
/// is Huginn with pre-norm blocks. Nothing on this floor knows a family.
template <class Block, class Injection, class StateInit, class Sharing, class Router, class KvCache, class Halting,
          class Head, class Input, class Rope, class Recurrence, class Family>
struct arch {
  static_assert(check_block_policy<Block>());
  static_assert(check_injection_policy<Injection>());
  static_assert(check_state_init_policy<StateInit>());
  static_assert(check_sharing_policy<Sharing>());
  static_assert(check_router_policy<Router>());
  static_assert(check_kv_cache_policy<KvCache>());
  static_assert(check_halting_policy<Halting>());
  static_assert(check_head_policy<Head>());
  static_assert(check_input_policy<Input>());
  static_assert(check_rope_policy<Rope>());
  static_assert(check_recurrence_policy<Recurrence>());
  static_assert(check_family_policy<Family>());
  static_assert(Sharing::recurrent || !Injection::has_weight,
                "muninn::arch: injection::concat_linear feeds a recurrent state, so it needs a recurrent Sharing "
                "policy (sharing::recurrent_core); use injection::add or injection::none with sharing::none");
  static_assert(Sharing::recurrent || !Router::routes,
                "muninn::arch: a Router chooses recursion depths, so it needs a recurrent Sharing policy");

  using block_policy = Block;            ///< the BlockPolicy
  using injection_policy = Injection;    ///< the InjectionPolicy
  using state_init_policy = StateInit;   ///< the StateInitPolicy (default for calls that do not choose)
  using sharing_policy = Sharing;        ///< the SharingPolicy
  using router_policy = Router;          ///< the RouterPolicy
  using kv_cache_policy = KvCache;       ///< the KvCachePolicy
  using halting_policy = Halting;        ///< the HaltingPolicy
  using head_policy = Head;              ///< the HeadPolicy
  using input_policy = Input;            ///< the InputPolicy
  using rope_policy = Rope;              ///< the RopePolicy
  using recurrence_policy = Recurrence;  ///< the RecurrencePolicy
  using family_policy = Family;          ///< the FamilyPolicy

  /// \brief This arch with the slots that `Policies` name (by their `slot` tag) replaced.
  template <class... Policies>
  using with = typename arch_with<arch, Policies...>::type;
};

/// \brief Replaces one slot of an arch by the slot tag of P.
template <class Arch, class P, class Slot = typename P::slot>
struct arch_replace;

/// \cond INTERNAL
// One specialisation per slot: which template argument a tag addresses.
#define MUNINN_ARCH_REPLACE(TAG, ...)                                                                          \
  template <class Bl, class In, class St, class Sh, class Ro, class Kv, class Ha, class He, class Ip, class Rp, \
            class Re, class Fa, class P>                                                                        \
  struct arch_replace<arch<Bl, In, St, Sh, Ro, Kv, Ha, He, Ip, Rp, Re, Fa>, P, slot::TAG> {                    \
    using type = arch<__VA_ARGS__>;                                                                             \
  };
MUNINN_ARCH_REPLACE(block, P, In, St, Sh, Ro, Kv, Ha, He, Ip, Rp, Re, Fa)
MUNINN_ARCH_REPLACE(injection, Bl, P, St, Sh, Ro, Kv, Ha, He, Ip, Rp, Re, Fa)
MUNINN_ARCH_REPLACE(state_init, Bl, In, P, Sh, Ro, Kv, Ha, He, Ip, Rp, Re, Fa)
MUNINN_ARCH_REPLACE(sharing, Bl, In, St, P, Ro, Kv, Ha, He, Ip, Rp, Re, Fa)
MUNINN_ARCH_REPLACE(router, Bl, In, St, Sh, P, Kv, Ha, He, Ip, Rp, Re, Fa)
MUNINN_ARCH_REPLACE(kv_cache, Bl, In, St, Sh, Ro, P, Ha, He, Ip, Rp, Re, Fa)
MUNINN_ARCH_REPLACE(halting, Bl, In, St, Sh, Ro, Kv, P, He, Ip, Rp, Re, Fa)
MUNINN_ARCH_REPLACE(head, Bl, In, St, Sh, Ro, Kv, Ha, P, Ip, Rp, Re, Fa)
MUNINN_ARCH_REPLACE(input, Bl, In, St, Sh, Ro, Kv, Ha, He, P, Rp, Re, Fa)
MUNINN_ARCH_REPLACE(rope, Bl, In, St, Sh, Ro, Kv, Ha, He, Ip, P, Re, Fa)
MUNINN_ARCH_REPLACE(recurrence, Bl, In, St, Sh, Ro, Kv, Ha, He, Ip, Rp, P, Fa)
MUNINN_ARCH_REPLACE(family, Bl, In, St, Sh, Ro, Kv, Ha, He, Ip, Rp, Re, P)
#undef MUNINN_ARCH_REPLACE
/// \endcond

/// \brief Applies `arch_replace` for each policy in turn.
template <class Arch>
struct arch_with<Arch> {
  using type = Arch;  ///< the result
};
/// \brief Applies `arch_replace` for each policy in turn.
template <class Arch, class P, class... Rest>
struct arch_with<Arch, P, Rest...> {
  static_assert(detail::detected_v<P, detail::slot_member>,
                "muninn::arch::with: a policy needs `using slot = muninn::slot::<name>;` to be placed by name");
  using type = typename arch_with<typename arch_replace<Arch, P>::type, Rest...>::type;  ///< the result
};

}  // namespace muninn
