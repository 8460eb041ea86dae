#pragma once
/// \file
/// \brief Per-row exit decisions of the built-in halting criteria, shared by the host op and the
/// CUDA kernel: each takes a row's new statistic and its running state, updates the state and
/// says whether the row exits.

#include <cmath>
#include <cstdint>

#include "muninn/core/macros.hpp"

namespace muninn {

/// \brief How a row's statistic decides its exit (see `halt_decide`).
enum class halt_rule_kind : std::int32_t {
  below,           ///< exit when stat < threshold (KL, latent difference, cosine distance)
  entropy_change,  ///< exit when |stat − previous stat| < threshold; previous ← stat
  argmax_run,      ///< count consecutive equal arg-maxes; exit when the count reaches threshold
};

/// \brief How a Q head's two logits (q_halt, q_continue) decide a sample's halt (`q_halt_decide`).
enum class q_halt_kind : std::int32_t {
  never,         ///< never halts early (a fixed number of steps)
  above,         ///< halts when q_halt > threshold (TRM with no_ACT_continue: threshold 0)
  over_continue  ///< halts when q_halt > q_continue (HRM; TRM with no_ACT_continue false)
};

namespace detail {

/// \brief One sample's Q-halt decision from its q_halt and q_continue logits (strict comparisons,
/// in fp32, as the reference compares its fp32-cast q values).
MUNINN_HOST_DEVICE MUNINN_INLINE bool q_halt_row(q_halt_kind kind, float q_halt, float q_continue, float threshold) {
  switch (kind) {
    case q_halt_kind::above: return q_halt > threshold;
    case q_halt_kind::over_continue: return q_halt > q_continue;
    case q_halt_kind::never: break;
  }
  return false;
}

/// \brief One row's decision; `prev_stat`, `prev_argmax` and `count` are its running state.
MUNINN_HOST_DEVICE MUNINN_INLINE bool halt_decide_row(halt_rule_kind kind, float stat, std::int32_t argmax,
                                                      float& prev_stat, std::int32_t& prev_argmax, std::int32_t& count,
                                                      double threshold) {
  switch (kind) {
    case halt_rule_kind::entropy_change: {
      const double change = double(stat) - double(prev_stat);
      prev_stat = stat;
      return (change < 0 ? -change : change) < threshold;
    }
    case halt_rule_kind::argmax_run:
      count = argmax == prev_argmax ? count + 1 : 0;
      prev_argmax = argmax;
      return double(count) >= threshold;
    case halt_rule_kind::below: break;
  }
  return double(stat) < threshold;
}

/// \brief ‖x − p‖ / ‖x‖ from the sums Σ(x−p)² and Σx² (the denominator floored at 1e-30).
MUNINN_HOST_DEVICE MUNINN_INLINE float relative_change(double diff_sq, double x_sq) {
  const double den = x_sq > 1e-60 ? x_sq : 1e-60;
  return float(sqrt(diff_sq / den));
}

/// \brief 1 − cos(x, p) from Σxp, Σx², Σp² (the norm product floored at 1e-30).
MUNINN_HOST_DEVICE MUNINN_INLINE float cosine_distance(double dot, double x_sq, double p_sq) {
  const double den = sqrt(x_sq) * sqrt(p_sq);
  return float(1.0 - dot / (den > 1e-30 ? den : 1e-30));
}

}  // namespace detail
}  // namespace muninn
