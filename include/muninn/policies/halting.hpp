#pragma once
/// \file
/// \brief HaltingPolicy (the "halting" slot): when a token's recurrence stops.
///
/// Concept HaltingPolicy: `slot` = slot::halting, `name`, `early_exit` (whether per-token exit is
/// compiled in), a per-token `tracker` type and these static functions:
/// - `halting_options resolve(halting_options)`: the call's options with the policy's defaults filled in;
/// - `bool exits(const halting_options&)`: whether this call may exit early at all;
/// - `bool needs_logits(const halting_options&)`, `bool needs_state(const halting_options&)`: what
///   `update` reads (logits cost a readout and head per check);
/// - `tracker start(const halting_options&, const float* initial_state, std::int64_t h, std::int64_t vocab)`;
/// - `bool update(tracker&, const float* state, const float* logits, std::int64_t h)`: true to exit.
/// The engine calls `update` on the checked steps and turns the answers into a keep mask.

#include <cstdint>

#include "muninn/core/error.hpp"
#include "muninn/model/halting.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {
namespace halting {
namespace detail {

/// \brief The criterion-driven rules below share everything but their default criterion.
template <halt_criterion Default, bool EarlyExit>
struct criterion_rule {
  using slot = muninn::slot::halting;            ///< fills the Halting slot
  static constexpr bool early_exit = EarlyExit;  ///< whether per-token exit is compiled in
  using tracker = halt_tracker;                  ///< per-token running statistic

  /// \brief Fills in the default criterion (and so its default threshold).
  static halting_options resolve(halting_options o) {
    if (o.criterion == halt_criterion::policy_default) o.criterion = Default;
    return o;
  }
  /// \brief Whether the resolved options ask for early exit.
  static bool exits(const halting_options& o) { return o.criterion != halt_criterion::none; }
  /// \brief Logit criteria (kl, entropy-diff, argmax-stable) need the next-token distribution.
  static bool needs_logits(const halting_options& o) { return muninn::needs_logits(o.criterion); }
  /// \brief State criteria (latent-diff, cosine) need the state.
  static bool needs_state(const halting_options& o) {
    return o.criterion == halt_criterion::latent_diff || o.criterion == halt_criterion::cosine;
  }
  /// \brief Starts a token's statistic from its initial state.
  static tracker start(const halting_options& o, const float* x0, std::int64_t h, std::int64_t vocab) {
    return halt_tracker(o.criterion, o.effective_threshold(), x0, h, vocab);
  }
  /// \brief Feeds a checked step; true when the token exits.
  static bool update(tracker& t, const float* x, const float* logits, std::int64_t h) { return t.update(x, h, logits); }
};

}  // namespace detail

/// \brief Exactly the requested number of steps for every token; asking for an exit criterion is an error.
struct fixed : detail::criterion_rule<halt_criterion::none, false> {
  static constexpr const char* name = "fixed";  ///< spelling used in messages
  /// \brief Rejects any exit criterion.
  static halting_options resolve(halting_options o) {
    MUNINN_CHECK(o.criterion == halt_criterion::policy_default || o.criterion == halt_criterion::none,
                 "this model was compiled with halting::fixed, which has no early exit; use halting::adaptive "
                 "(e.g. huginn_adaptive_arch)");
    o.criterion = halt_criterion::none;
    return o;
  }
};
/// \brief Per-token early exit with the criterion chosen per call (none by default).
struct adaptive : detail::criterion_rule<halt_criterion::none, true> {
  static constexpr const char* name = "adaptive";  ///< spelling used in messages
};
/// \brief Per-token early exit on KL(p_{i-1} ‖ p_i) < 5e-4 unless a call chooses otherwise.
struct kl_divergence : detail::criterion_rule<halt_criterion::kl, true> {
  static constexpr const char* name = "kl_divergence";  ///< spelling used in messages
};

}  // namespace halting
}  // namespace muninn
