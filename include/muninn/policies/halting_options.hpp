#pragma once
/// \file
/// \brief Exit criteria for adaptive recurrence (the criteria of the reference's `generate_with_adaptive_compute`): per-token statistics that
/// decide when a token's state has converged.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"

namespace muninn {

/// \brief The statistic that decides a token's exit.
enum class halt_criterion {
  policy_default, ///< whatever the model's HaltingPolicy says (none for fixed and adaptive, kl for kl_divergence)
  none,           ///< never exit early: run max_steps
  kl,             ///< KL(p_{i-1} ‖ p_i) of the next-token distributions < threshold (paper default 5e-4)
  entropy_diff,   ///< |H_i − H_{i-1}| < threshold (1e-3)
  latent_diff,    ///< ‖x_i − x_{i-1}‖ / ‖x_i‖ < threshold (0.03)
  argmax_stable,  ///< the argmax has not changed for `threshold` consecutive checks (5)
  cosine,         ///< 1 − cos(x_i, x_{i-1}) < threshold (1e-3)
};

/// \brief Default threshold of each criterion. KL uses the paper's 5e-4 (the reference code's HEAD
/// default is 1e-3; the paper's adaptive-compute experiments use 5e-4).
inline double default_threshold(halt_criterion c) {
  switch (c) {
    case halt_criterion::kl: return 5e-4;
    case halt_criterion::entropy_diff: return 1e-3;
    case halt_criterion::latent_diff: return 0.03;
    case halt_criterion::argmax_stable: return 5;
    case halt_criterion::cosine: return 1e-3;
    case halt_criterion::none:
    case halt_criterion::policy_default: return 0;
  }
  return 0;
}

/// \brief Parses the CLI spelling: none, kl, entropy-diff, latent-diff, argmax-stable, cosine.
inline halt_criterion parse_halt_criterion(const std::string& s) {
  if (s == "none") return halt_criterion::none;
  if (s == "kl") return halt_criterion::kl;
  if (s == "entropy-diff") return halt_criterion::entropy_diff;
  if (s == "latent-diff") return halt_criterion::latent_diff;
  if (s == "argmax-stable") return halt_criterion::argmax_stable;
  if (s == "cosine") return halt_criterion::cosine;
  fail("unknown exit criterion '", s, "' (none, kl, entropy-diff, latent-diff, argmax-stable, cosine)");
}

/// \brief True when the criterion needs the next-token distribution (so each check runs the coda and head).
inline bool needs_logits(halt_criterion c) {
  return c == halt_criterion::kl || c == halt_criterion::entropy_diff || c == halt_criterion::argmax_stable;
}

/// \brief How a call of several tokens (a prompt) exits under a criterion.
enum class prefill_exit {
  per_token,  ///< one token at a time, each exiting at its own step (Muninn's default)
  prompt,     ///< all together, as the reference's first call: the whole call exits at one step
};

/// \brief What a token that never exits emits when the last step is not a check step.
enum class unchecked_end {
  final_step,    ///< the head on the final state (Muninn's default)
  last_checked,  ///< logit criteria: the outputs of the last checked step, as the reference keeps them
};

/// \brief When and how a recurrence may stop early.
struct halting_options {
  halt_criterion criterion = halt_criterion::policy_default;  ///< the statistic
  double threshold = -1;      ///< negative: `default_threshold(criterion)`
  std::int64_t min_steps = 0; ///< no check before this many steps have run
  std::int64_t max_steps = -1;  ///< negative: the call's `steps`
  std::int64_t check_every = 1; ///< check at steps min_steps, min_steps + n, ... (0-based step index)
  prefill_exit prefill = prefill_exit::per_token;  ///< how the tokens of one call exit
  unchecked_end end = unchecked_end::final_step;   ///< outputs when the last step is not checked

  /// \brief The reference's behaviour on both counts (whole-prompt exit, last checked outputs).
  halting_options& reference_parity() {
    prefill = prefill_exit::prompt;
    end = unchecked_end::last_checked;
    return *this;
  }
  /// \brief Whether 0-based step s is a check step of this schedule (the last step included,
  /// which the reference checks and Muninn skips: an exit there changes nothing).
  bool checks_at(std::int64_t s) const { return s >= min_steps && (s - min_steps) % check_every == 0; }

  /// \brief The threshold in force.
  double effective_threshold() const { return threshold < 0 ? default_threshold(criterion) : threshold; }
};

/// \brief Parses the CLI spelling: per-token, prompt.
inline prefill_exit parse_prefill_exit(const std::string& s) {
  if (s == "per-token") return prefill_exit::per_token;
  if (s == "prompt") return prefill_exit::prompt;
  fail("unknown prefill exit '", s, "' (per-token, prompt)");
}

}  // namespace muninn
