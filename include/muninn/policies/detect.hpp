#pragma once
/// \file
/// \brief The detection idiom behind every policy concept, and the slot tags a policy names.
///
/// A concept here is a set of members a policy type must have. Each is checked by detection
/// (does `P::member` form a valid expression?), never by a list of known types, so a policy
/// written in user code plugs in without a library edit.

#include <type_traits>

namespace muninn {

/// \brief Slot tags: a policy says which slot of `muninn::arch` it fills with `using slot = slot::X;`,
/// which lets `arch<>::with<P>` put it in place by name.
namespace slot {
struct block {};       ///< layer structure (BlockPolicy)
struct injection {};   ///< how the prelude output enters each recurrence step (InjectionPolicy)
struct state_init {};  ///< the recurrent state before the first step (StateInitPolicy)
struct sharing {};     ///< which layers are reused (SharingPolicy)
struct router {};      ///< which tokens take which recursion (RouterPolicy)
struct kv_cache {};    ///< where keys and values live (KvCachePolicy)
struct halting {};     ///< when the recurrence stops (HaltingPolicy)
struct head {};        ///< final state → output (HeadPolicy)
struct input {};       ///< token ids → first hidden state (InputPolicy)
struct rope {};        ///< rotary position embedding pairing (RopePolicy)
struct recurrence {};  ///< the schedule that runs the layer groups (RecurrencePolicy)
struct family {};      ///< checkpoint layout: config.json, names, weights (FamilyPolicy)
}  // namespace slot

namespace detail {

template <class, template <class> class, class = void>
struct detect : std::false_type {};
template <class P, template <class> class Op>
struct detect<P, Op, std::void_t<Op<P>>> : std::true_type {};

/// True when `Op<P>` is a valid type: the member or expression exists.
template <class P, template <class> class Op>
inline constexpr bool detected_v = detect<P, Op>::value;

template <class P>
using name_member = decltype(static_cast<const char*>(P::name));
template <class P>
using slot_member = typename P::slot;

/// True when P has no `slot` tag or names `Slot`: a policy declared for another slot is misplaced.
template <class P, class Slot>
constexpr bool slot_fits() {
  if constexpr (detected_v<P, slot_member>)
    return std::is_same_v<typename P::slot, Slot>;
  else
    return true;
}

}  // namespace detail
}  // namespace muninn
