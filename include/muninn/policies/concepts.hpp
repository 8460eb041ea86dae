#pragma once
/// \file
/// \brief The concept of every slot, checked by detection: `check_<slot>_policy<P>()` fails with
/// a `static_assert` that names the slot and the missing member; `is_<slot>_policy<P>` answers
/// without failing.

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "muninn/backend/host.hpp"
#include "muninn/core/config.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/policies/block.hpp"
#include "muninn/policies/detect.hpp"
#include "muninn/policies/halting.hpp"
#include "muninn/policies/head.hpp"
#include "muninn/policies/injection.hpp"
#include "muninn/policies/kv_cache.hpp"
#include "muninn/policies/sharing.hpp"
#include "muninn/policies/state_init.hpp"

namespace muninn {
namespace detail {

// Stand-ins used only inside decltype: a policy's functions are checked against them, never run.
struct layer_archetype {
  const float* norm(int);
  void attention(const float*);
  void mlp(const float*);
  void add_norm(int);
  void add_residual();
  const float* input() const;
  void token_mlp();
  bool holds_norm(int) const;
};
struct pass_archetype {
  float* e();
  float* x();
  std::int64_t max_steps() const;
  bool any_active() const;
  void embed();
  void run_layers(layer_group, float*, std::int64_t = 0);
  void start_state();
  void prepare_injection();
  void inject();
  void end_step(std::int64_t);
  void emit_rest(const float*);
  void final_norm(float*);
};
template <class A>
A& arg();

template <class P> using num_norms_member = decltype(int(P::num_norms));
template <class P> using block_forward = decltype(P::forward(arg<layer_archetype>()));
template <class P> using config_name_member = decltype(static_cast<const char*>(P::config_name));
template <class P> using has_weight_member = decltype(bool(P::has_weight));
template <class P> using injection_prepare = decltype(P::prepare(arg<const injection_args<host_backend, float>>()));
template <class P>
using injection_apply = decltype(P::apply(arg<const injection_args<host_backend, float>>(), arg<float*>(), arg<float*>()));
template <class P> using state_fill = decltype(P::fill(arg<const state_init_args<host_backend, float>>()));
template <class P> using recurrent_member = decltype(bool(P::recurrent));
template <class P>
using sharing_layer = decltype(std::int64_t(P::layer(sharing_layout{}, layer_group::core, std::int64_t(), std::int64_t())));
template <class P> using sharing_check = decltype(P::check(sharing_layout{}, arg<const std::string>()));
template <class P> using routes_member = decltype(bool(P::routes));
template <class P> using kv_storage = typename P::template storage<host_backend, float>;
template <class P> using kv_num_slots = decltype(std::int64_t(P::num_slots(kv_layout{}, context_limits{})));
template <class P> using early_exit_member = decltype(bool(P::early_exit));
template <class P> using halting_resolve = decltype(halting_options(P::resolve(halting_options{})));
template <class P> using halting_exits = decltype(bool(P::exits(halting_options{})));
template <class P> using halting_needs_logits = decltype(bool(P::needs_logits(halting_options{})));
template <class P> using halting_monitor = typename P::template monitor<host_backend, float>;
template <class P> using head_logits = decltype(P::logits(arg<const head_args<host_backend, float>>()));
template <class P> using input_scale = decltype(float(P::scale(std::int64_t())));
template <class P>
using rope_apply = decltype(P::apply(arg<const host_backend>(), arg<float*>(), std::int64_t(), std::int64_t(),
                                     std::int64_t(), std::int64_t(), arg<const float*>(), arg<const float*>(),
                                     std::int64_t()));
template <class P> using recurrence_run = decltype(P::run(arg<pass_archetype>()));
template <class P> using recurrence_readout = decltype(P::readout(arg<pass_archetype>(), arg<float*>()));
template <class P> using family_config_type = typename P::config_type;
template <class P> using family_weights_type = typename P::template weights_type<host_backend, float>;
template <class P>
using family_read_config = decltype(typename P::config_type(P::read_config(arg<const std::string>())));
template <class P>
using family_open =
    decltype(io::checkpoint(P::open_checkpoint(arg<const std::string>(), arg<const typename P::config_type>())));
template <class P> using family_recognizes = decltype(bool(P::recognizes(arg<const io::json>())));
template <class P>
using family_load = decltype(typename P::template weights_type<host_backend, float>(
    P::template load_weights<host_backend, float, block::pre_norm>(arg<const host_backend>(), arg<const io::checkpoint>(),
                                                                   arg<const typename P::config_type>())));

}  // namespace detail

/// \cond INTERNAL
// One macro per member check keeps every message in the same words: slot, concept, member.
#define MUNINN_REQUIRE_MEMBER(P, SLOT, CONCEPT, OP, MEMBER) \
  static_assert(::muninn::detail::detected_v<P, ::muninn::detail::OP>, \
                "muninn::arch: the " SLOT " slot needs " CONCEPT ": missing " MEMBER)
#define MUNINN_REQUIRE_SLOT(P, SLOT, CONCEPT, TAG) \
  static_assert(::muninn::detail::slot_fits<P, ::muninn::slot::TAG>(), \
                "muninn::arch: the " SLOT " slot needs " CONCEPT ": this type declares another slot"); \
  MUNINN_REQUIRE_MEMBER(P, SLOT, CONCEPT, name_member, "static constexpr const char* name")
/// \endcond

/// \brief Checks BlockPolicy: name, num_norms, forward(layer).
template <class P>
constexpr bool check_block_policy() {
  MUNINN_REQUIRE_SLOT(P, "Block", "a BlockPolicy", block);
  MUNINN_REQUIRE_MEMBER(P, "Block", "a BlockPolicy", num_norms_member, "static constexpr int num_norms");
  MUNINN_REQUIRE_MEMBER(P, "Block", "a BlockPolicy", block_forward, "template <class Layer> static void forward(Layer&)");
  return true;
}
/// \brief Checks InjectionPolicy: name, config_name, has_weight, prepare, apply.
template <class P>
constexpr bool check_injection_policy() {
  MUNINN_REQUIRE_SLOT(P, "Injection", "an InjectionPolicy", injection);
  MUNINN_REQUIRE_MEMBER(P, "Injection", "an InjectionPolicy", config_name_member, "static constexpr const char* config_name");
  MUNINN_REQUIRE_MEMBER(P, "Injection", "an InjectionPolicy", has_weight_member, "static constexpr bool has_weight");
  MUNINN_REQUIRE_MEMBER(P, "Injection", "an InjectionPolicy", injection_prepare,
                        "template <class B, class T> static void prepare(const injection_args<B, T>&)");
  MUNINN_REQUIRE_MEMBER(P, "Injection", "an InjectionPolicy", injection_apply,
                        "template <class B, class T> static void apply(const injection_args<B, T>&, T*&, T*&)");
  return true;
}
/// \brief Checks StateInitPolicy: name, fill.
template <class P>
constexpr bool check_state_init_policy() {
  MUNINN_REQUIRE_SLOT(P, "StateInit", "a StateInitPolicy", state_init);
  MUNINN_REQUIRE_MEMBER(P, "StateInit", "a StateInitPolicy", state_fill,
                        "template <class B, class T> static void fill(const state_init_args<B, T>&)");
  return true;
}
/// \brief Checks SharingPolicy: name, recurrent, layer, check.
template <class P>
constexpr bool check_sharing_policy() {
  MUNINN_REQUIRE_SLOT(P, "Sharing", "a SharingPolicy", sharing);
  MUNINN_REQUIRE_MEMBER(P, "Sharing", "a SharingPolicy", recurrent_member, "static constexpr bool recurrent");
  MUNINN_REQUIRE_MEMBER(P, "Sharing", "a SharingPolicy", sharing_layer,
                        "static std::int64_t layer(const sharing_layout&, layer_group, std::int64_t step, std::int64_t j)");
  MUNINN_REQUIRE_MEMBER(P, "Sharing", "a SharingPolicy", sharing_check,
                        "static void check(const sharing_layout&, const std::string& source)");
  return true;
}
/// \brief Checks RouterPolicy: name, routes.
template <class P>
constexpr bool check_router_policy() {
  MUNINN_REQUIRE_SLOT(P, "Router", "a RouterPolicy", router);
  MUNINN_REQUIRE_MEMBER(P, "Router", "a RouterPolicy", routes_member, "static constexpr bool routes");
  return true;
}
/// \brief Checks KvCachePolicy: name, storage<Backend, T>.
template <class P>
constexpr bool check_kv_cache_policy() {
  MUNINN_REQUIRE_SLOT(P, "KvCache", "a KvCachePolicy", kv_cache);
  MUNINN_REQUIRE_MEMBER(P, "KvCache", "a KvCachePolicy", kv_storage, "template <class B, class T> using storage");
  MUNINN_REQUIRE_MEMBER(P, "KvCache", "a KvCachePolicy", kv_num_slots,
                        "static std::int64_t num_slots(const kv_layout&, const context_limits&)");
  return true;
}
/// \brief Checks HaltingPolicy: name, early_exit, resolve, exits, needs_logits, monitor<Backend, T>.
template <class P>
constexpr bool check_halting_policy() {
  MUNINN_REQUIRE_SLOT(P, "Halting", "a HaltingPolicy", halting);
  MUNINN_REQUIRE_MEMBER(P, "Halting", "a HaltingPolicy", early_exit_member, "static constexpr bool early_exit");
  MUNINN_REQUIRE_MEMBER(P, "Halting", "a HaltingPolicy", halting_resolve, "static halting_options resolve(halting_options)");
  MUNINN_REQUIRE_MEMBER(P, "Halting", "a HaltingPolicy", halting_exits, "static bool exits(const halting_options&)");
  MUNINN_REQUIRE_MEMBER(P, "Halting", "a HaltingPolicy", halting_needs_logits,
                        "static bool needs_logits(const halting_options&)");
  MUNINN_REQUIRE_MEMBER(P, "Halting", "a HaltingPolicy", halting_monitor,
                        "template <class B, class T> using monitor (the per-call exit test)");
  return true;
}
/// \brief Checks HeadPolicy: name, logits.
template <class P>
constexpr bool check_head_policy() {
  MUNINN_REQUIRE_SLOT(P, "Head", "a HeadPolicy", head);
  MUNINN_REQUIRE_MEMBER(P, "Head", "a HeadPolicy", head_logits,
                        "template <class B, class T> static void logits(const head_args<B, T>&)");
  return true;
}
/// \brief Checks InputPolicy: name, scale.
template <class P>
constexpr bool check_input_policy() {
  MUNINN_REQUIRE_SLOT(P, "Input", "an InputPolicy", input);
  MUNINN_REQUIRE_MEMBER(P, "Input", "an InputPolicy", input_scale, "static float scale(int64 h)");
  return true;
}
/// \brief Checks RopePolicy: name, apply.
template <class P>
constexpr bool check_rope_policy() {
  MUNINN_REQUIRE_SLOT(P, "Rope", "a RopePolicy", rope);
  MUNINN_REQUIRE_MEMBER(P, "Rope", "a RopePolicy", rope_apply,
                        "template <class B, class T> static void apply(const B&, T* x, rows, ld, heads, dim, const T* "
                        "bias, const float* table, int64 pos0)");
  return true;
}
/// \brief Checks RecurrencePolicy: name, run, readout.
template <class P>
constexpr bool check_recurrence_policy() {
  MUNINN_REQUIRE_SLOT(P, "Recurrence", "a RecurrencePolicy", recurrence);
  MUNINN_REQUIRE_MEMBER(P, "Recurrence", "a RecurrencePolicy", recurrence_run, "template <class Pass> static void run(Pass&)");
  MUNINN_REQUIRE_MEMBER(P, "Recurrence", "a RecurrencePolicy", recurrence_readout,
                        "template <class Pass, class T> static void readout(Pass&, T*)");
  return true;
}
/// \brief Checks FamilyPolicy: name, config_type, weights_type, read_config, open_checkpoint,
/// load_weights, recognizes (policies/family.hpp).
template <class P>
constexpr bool check_family_policy() {
  MUNINN_REQUIRE_SLOT(P, "Family", "a FamilyPolicy", family);
  MUNINN_REQUIRE_MEMBER(P, "Family", "a FamilyPolicy", family_config_type,
                        "using config_type (derived from model_config)");
  MUNINN_REQUIRE_MEMBER(P, "Family", "a FamilyPolicy", family_weights_type,
                        "template <class B, class T> using weights_type (derived from model_weights<B, T>)");
  if constexpr (detail::detected_v<P, detail::family_config_type>)
    static_assert(std::is_base_of_v<model_config, typename P::config_type>,
                  "muninn::arch: the Family slot needs a FamilyPolicy: config_type must derive from model_config");
  MUNINN_REQUIRE_MEMBER(P, "Family", "a FamilyPolicy", family_read_config,
                        "static config_type read_config(const std::string&)");
  MUNINN_REQUIRE_MEMBER(P, "Family", "a FamilyPolicy", family_open,
                        "static io::checkpoint open_checkpoint(const std::string&, const config_type&)");
  MUNINN_REQUIRE_MEMBER(P, "Family", "a FamilyPolicy", family_load,
                        "template <class B, class T, class Block> static weights_type<B, T> load_weights(...)");
  MUNINN_REQUIRE_MEMBER(P, "Family", "a FamilyPolicy", family_recognizes, "static bool recognizes(const io::json&)");
  return true;
}

#undef MUNINN_REQUIRE_SLOT
#undef MUNINN_REQUIRE_MEMBER

}  // namespace muninn
