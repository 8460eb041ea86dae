#pragma once
/// \file
/// \brief FamilyPolicy (the "family" slot): how a released checkpoint layout is read, and the
/// state — config and weights — that its models carry.
///
/// Concept FamilyPolicy: `slot` = slot::family, `name`, and
/// - `using config_type = …`, derived from `model_config` (the stack's sizes): what the family's
///   config.json holds, including what only its policies read;
/// - `template <class Backend, class T> using weights_type = …`, derived from
///   `model_weights<Backend, T>` (the layer stack): its parameters, including those only its
///   policies read;
/// - `static config_type read_config(const std::string& dir)`;
/// - `static io::checkpoint open_checkpoint(const std::string& dir, const config_type&)` (names and
///   shapes validated);
/// - `template <class Backend, class T, class Block> static weights_type<Backend, T>
///   load_weights(const Backend&, const io::checkpoint&, const config_type&)`;
/// - optionally the same `load_weights` with a fourth argument, a callable `on_layer(layer_group,
///   std::size_t index, layer_weights<Backend, T>&)` called with each layer of the stack as soon
///   as it is read (model/weights.hpp, `ignore_layers`): a model loaded straight into bf16 or q8
///   then converts layer by layer and never holds the whole stack in fp32;
/// - `static bool recognizes(const io::json& config)` for dispatch on config.json;
/// - optionally `template <class Arch> static void check(const config_type&)`: throws when the
///   config asks for a structure other than the one Arch compiled in;
/// - optionally `static void configure(const config_type&, context_limits&)`: cache settings the
///   config decides (Mixture-of-Recursions' recursive KV sharing).
///
/// `model<Backend, T, Arch>` holds the Arch's family's `config_type` and `weights_type`, so a
/// policy reads family state through the model it runs (`p.model().config()`,
/// `p.model().weights()`), and a family written in user code — with config fields and weights
/// of its own — plugs in without a library edit.

#include <type_traits>
#include <utility>

#include "muninn/engine/kv_cache.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {
namespace detail {
template <class F, class Arch>
using family_check_t = decltype(F::template check<Arch>(std::declval<const typename F::config_type&>()));
template <class Arch>
struct family_check_bound {
  template <class F>
  using op = family_check_t<F, Arch>;
};
template <class F>
using family_configure_t =
    decltype(F::configure(std::declval<const typename F::config_type&>(), std::declval<context_limits&>()));
}  // namespace detail

/// \brief Family::check<Arch>(cfg) when the family declares it: the config fits the compiled slots.
template <class Family, class Arch>
void family_check(const typename Family::config_type& cfg) {
  if constexpr (detail::detected_v<Family, detail::family_check_bound<Arch>::template op>)
    Family::template check<Arch>(cfg);
}

/// \brief Family::configure(cfg, lim) when the family declares it: cache settings from the config.
template <class Family>
void family_configure(const typename Family::config_type& cfg, context_limits& lim) {
  if constexpr (detail::detected_v<Family, detail::family_configure_t>) Family::configure(cfg, lim);
}

}  // namespace muninn
