#pragma once
/// \file
/// \brief When a TRM / HRM sample stops: after a fixed number of supervision steps (the
/// reference's evaluation), or at the first step whose Q head says halt.
///
/// A policy is a value with `max_steps(const trm_config&)` (the supervision steps a sample may
/// take; any number ≥ 1, more than the 16 of training included) and either `rule(const
/// trm_config&)` → `q_halt_rule` (what the backend decides: only a byte per sample reaches the
/// host) or `stop(const trm_config&, q_halt, q_continue)` (a host-side rule of the caller's, for
/// which the q values of every step are downloaded). trm_model's solve() runs every sample until
/// its policy stops it; stopped samples leave the batch.

#include <cstdint>

#include "muninn/core/error.hpp"
#include "muninn/families/trm/config.hpp"
#include "muninn/ops/halt_math.hpp"

namespace muninn {

/// \brief A Q-halt rule the backend evaluates (`q_halt_decide`).
struct q_halt_rule {
  q_halt_kind kind = q_halt_kind::never;  ///< how the two Q logits decide
  float threshold = 0.0f;                 ///< the bound of q_halt_kind::above
};

namespace trm_halting {

/// \brief Every sample runs `steps` supervision steps (0: the config's halt_max_steps).
struct fixed {
  std::int64_t steps = 0;  ///< supervision steps; 0 takes halt_max_steps
  /// \brief The steps every sample runs.
  std::int64_t max_steps(const trm_config& c) const { return steps > 0 ? steps : c.halt_max_steps; }
  /// \brief Never stops early.
  q_halt_rule rule(const trm_config&) const { return {q_halt_kind::never, 0.0f}; }
  /// \brief Never stops early.
  bool stop(const trm_config&, float, float) const { return false; }
};

/// \brief Learned halting: a sample stops after the first step at which the reference's Q rule
/// holds — TRM with no_ACT_continue: q_halt > 0; otherwise q_halt > q_continue (strict, on the
/// fp32 q values) — or after `steps` steps (0: halt_max_steps).
struct q_halt {
  std::int64_t steps = 0;  ///< the most supervision steps; 0 takes halt_max_steps
  /// \brief The most steps a sample runs.
  std::int64_t max_steps(const trm_config& c) const { return steps > 0 ? steps : c.halt_max_steps; }
  /// \brief The Q rule of the config, for the backend.
  q_halt_rule rule(const trm_config& c) const {
    return {c.halt_rule() == trm_halt_rule::q_halt_positive ? q_halt_kind::above : q_halt_kind::over_continue, 0.0f};
  }
  /// \brief The Q rule of the config.
  bool stop(const trm_config& c, float q_halt_logit, float q_continue_logit) const {
    return c.halt_rule() == trm_halt_rule::q_halt_positive ? q_halt_logit > 0.0f : q_halt_logit > q_continue_logit;
  }
};

}  // namespace trm_halting
}  // namespace muninn
