#pragma once
/// \file
/// \brief StateInitPolicy (the "state_init" slot): the recurrent state before the first step.
///
/// Concept StateInitPolicy: `slot` = slot::state_init, `name`, and
/// `template <class Backend, class T> static void fill(const state_init_args<Backend, T>&)`.
/// The Arch's policy is the default; a call may pick another built-in one with
/// `run_options::init` (a `state_init_choice`).

#include <cmath>
#include <cstdint>
#include <variant>

#include "muninn/core/config.hpp"
#include "muninn/core/error.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/ops/random.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {

/// \brief Rows [rows, h] of the state to fill, and what a policy may draw on.
template <class Backend, class T>
struct state_init_args {
  const Backend& be;              ///< the backend
  T* x;                           ///< the rows to fill [rows, h]
  std::int64_t rows;              ///< rows
  std::int64_t h;                 ///< hidden size
  std::int64_t first_position;    ///< absolute position of row 0 (rows are consecutive positions)
  std::uint64_t seed;             ///< `run_options::seed`
  const float* given;             ///< `run_options::given_state` rows for these positions (may be nullptr)
  const model_config& cfg;        ///< the model's sizes and init settings
};

/// \brief Standard deviation of Huginn's random state ("like-init"): init_values.std (or
/// √(2/(5h)) when the config has none) · init_scale · √h, the embedding scale.
inline double random_state_stddev(const model_config& cfg, std::int64_t h) {
  const double base = cfg.init_std > 0 ? double(cfg.init_std) : std::sqrt(2.0 / (5.0 * double(h)));
  return base * double(cfg.init_scale) * std::sqrt(double(h));
}

namespace state_init {

/// \brief i.i.d. truncated normal, std √(2/(5h))·init_scale·√h, cut at ±3σ, seeded per position
/// (Huginn's "like-init": chunking a prompt does not change it).
struct truncated_normal {
  using slot = muninn::slot::state_init;                   ///< fills the StateInit slot
  static constexpr const char* name = "truncated_normal";  ///< spelling used in messages
  /// \brief Draws the rows; counter = position·h + i.
  template <class Backend, class T>
  static void fill(const state_init_args<Backend, T>& a) {
    const double sd = random_state_stddev(a.cfg, a.h);
    if (sd > 0)
      fill_truncated_normal(a.be, a.x, a.rows * a.h, a.seed, std::uint64_t(a.first_position * a.h), float(sd));
    else
      a.be.template fill_zero<T>(a.x, std::size_t(a.rows * a.h));
  }
};

/// \brief All zeros: deterministic, what reference comparisons use.
struct zero {
  using slot = muninn::slot::state_init;       ///< fills the StateInit slot
  static constexpr const char* name = "zero";  ///< spelling used in messages
  /// \brief Zeroes the rows.
  template <class Backend, class T>
  static void fill(const state_init_args<Backend, T>& a) {
    a.be.template fill_zero<T>(a.x, std::size_t(a.rows * a.h));
  }
};

/// \brief A state supplied by the caller (`run_options::given_state`).
struct given {
  using slot = muninn::slot::state_init;        ///< fills the StateInit slot
  static constexpr const char* name = "given";  ///< spelling used in messages
  /// \brief Uploads the caller's rows.
  template <class Backend, class T>
  static void fill(const state_init_args<Backend, T>& a) {
    MUNINN_CHECK(a.given != nullptr, "state_init::given needs run_options::given_state");
    engine::upload_floats(a.be, a.x, a.given, a.rows * a.h);
  }
};

/// \brief "Whatever the model's StateInit slot holds" (the default of `run_options::init`).
struct arch_default {
  static constexpr const char* name = "arch_default";  ///< spelling used in messages
};

}  // namespace state_init

/// \brief A call's choice of initial state: the Arch's own policy or one of the built-in ones.
using state_init_choice =
    std::variant<state_init::arch_default, state_init::zero, state_init::truncated_normal, state_init::given>;

}  // namespace muninn
