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

/// \brief When and how a recurrence may stop early.
struct halting_options {
  halt_criterion criterion = halt_criterion::policy_default;  ///< the statistic
  double threshold = -1;      ///< negative: `default_threshold(criterion)`
  std::int64_t min_steps = 0; ///< no check before this many steps have run
  std::int64_t max_steps = -1;  ///< negative: the call's `steps`
  std::int64_t check_every = 1; ///< check at steps min_steps, min_steps + n, ... (0-based step index)

  /// \brief The threshold in force.
  double effective_threshold() const { return threshold < 0 ? default_threshold(criterion) : threshold; }
};

/// \brief Running state of one token's exit test, updated after each checked step.
///
/// Initial "previous" values follow the reference: uniform distribution for KL, entropy 100 for
/// entropy-diff, argmax −1 for argmax-stable, the initial state for latent-diff and cosine.
class halt_tracker {
 public:
  /// \brief Starts tracking; `init_state` (h values) is the state before the first step.
  halt_tracker(halt_criterion c, double threshold, const float* init_state, std::int64_t h, std::int64_t vocab)
      : c_(c), thr_(threshold), vocab_(vocab) {
    if (c == halt_criterion::latent_diff || c == halt_criterion::cosine) prev_x_.assign(init_state, init_state + h);
    if (c == halt_criterion::kl) prev_logp_.assign(std::size_t(vocab), -std::log(double(vocab)));
  }

  /// \brief Feeds step i's raw state `x` [h] and, for logit criteria, its logits [V]; returns true to exit.
  bool update(const float* x, std::int64_t h, const float* logits) {
    switch (c_) {
      case halt_criterion::none:
      case halt_criterion::policy_default: return false;
      case halt_criterion::latent_diff: {
        double num = 0, den = 0;
        for (std::int64_t i = 0; i < h; ++i) {
          const double d = double(x[i]) - prev_x_[std::size_t(i)];
          num += d * d;
          den += double(x[i]) * double(x[i]);
        }
        prev_x_.assign(x, x + h);
        value_ = std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
        return value_ < thr_;
      }
      case halt_criterion::cosine: {
        double dot = 0, a = 0, b = 0;
        for (std::int64_t i = 0; i < h; ++i) {
          dot += double(x[i]) * prev_x_[std::size_t(i)];
          a += double(x[i]) * double(x[i]);
          b += prev_x_[std::size_t(i)] * prev_x_[std::size_t(i)];
        }
        prev_x_.assign(x, x + h);
        value_ = 1.0 - dot / std::max(std::sqrt(a) * std::sqrt(b), 1e-30);
        return value_ < thr_;
      }
      default: break;
    }
    // Logit criteria: log-softmax in double.
    double mx = -INFINITY;
    std::int64_t am = 0;
    for (std::int64_t v = 0; v < vocab_; ++v)
      if (double(logits[v]) > mx) {
        mx = logits[v];
        am = v;
      }
    double sum = 0;
    for (std::int64_t v = 0; v < vocab_; ++v) sum += std::exp(double(logits[v]) - mx);
    const double lse = mx + std::log(sum);
    if (c_ == halt_criterion::argmax_stable) {
      count_ = (am == prev_argmax_) ? count_ + 1 : 0;
      prev_argmax_ = am;
      value_ = double(count_);
      return value_ >= thr_;
    }
    if (c_ == halt_criterion::entropy_diff) {
      double H = 0;
      for (std::int64_t v = 0; v < vocab_; ++v) {
        const double p = std::exp(double(logits[v]) - lse);
        H -= p * std::log(p + 1e-10);
      }
      value_ = std::fabs(H - prev_entropy_);
      prev_entropy_ = H;
      return value_ < thr_;
    }
    // KL(p_prev ‖ p) = Σ p_prev (log p_prev − log p)
    double kl = 0;
    for (std::int64_t v = 0; v < vocab_; ++v) {
      const double lp = double(logits[v]) - lse;
      const double lq = prev_logp_[std::size_t(v)];
      kl += std::exp(lq) * (lq - lp);
      prev_logp_[std::size_t(v)] = lp;
    }
    value_ = kl;
    return value_ < thr_;
  }
  /// \brief The last computed statistic.
  double value() const { return value_; }

 private:
  halt_criterion c_;
  double thr_;
  std::int64_t vocab_;
  std::vector<double> prev_x_, prev_logp_;
  double prev_entropy_ = 100.0;
  std::int64_t prev_argmax_ = -1, count_ = 0;
  double value_ = 0;
};

}  // namespace muninn
