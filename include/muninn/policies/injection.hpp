#pragma once
/// \file
/// \brief InjectionPolicy (the "injection" slot): how the prelude output `e` enters each
/// recurrence step.
///
/// Concept InjectionPolicy: `slot` = slot::injection, `name`, `config_name` (config.json
/// `injection_type`), `has_weight` — and when it is true `template <class Weights> static const T*
/// weight(const Weights&)`, which finds the weight in the family's weights — and for
/// `injection_args<Backend, T>` a:
/// `static void prepare(const injection_args<Backend, T>&)` (once per call) and
/// `static void apply(const injection_args<Backend, T>&, T*& x, T*& spare)` (every step; may
/// write the result into `spare` and swap the two).

#include <cstdint>
#include <utility>

#include "muninn/core/error.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {

/// \brief What an injection works on: `rows` stacked rows of width h.
template <class Backend, class T>
struct injection_args {
  const Backend& be;     ///< the backend
  std::int64_t rows;     ///< active rows
  std::int64_t h;        ///< hidden size
  const T* e;            ///< prelude output [rows, h]
  const T* weight;       ///< the injection's weight (nullptr when it has none)
  T* e_part;             ///< per-call scratch [rows, h], kept across steps (compacted with the rows)
};

namespace detail {
template <class W>
struct injection_weight_of {
  template <class P>
  using op = decltype(P::weight(std::declval<const W&>()));
};
}  // namespace detail

/// \brief The weight policy P reads from a family's weights `w`, or null when it has none.
template <class P, class T, class Weights>
const T* injection_weight(const Weights& w) {
  if constexpr (P::has_weight) {
    static_assert(detail::detected_v<P, detail::injection_weight_of<Weights>::template op>,
                  "muninn::arch: the Injection slot's policy has a weight (has_weight) and needs static weight(const "
                  "Weights&) to find it in the Family's weights_type (injection::concat_linear reads `adapter`, which "
                  "huginn_weights has)");
    return P::weight(w);
  } else {
    return nullptr;
  }
}

namespace injection {

/// \brief `x = adapter([x, e])`, adapter Linear(2h→h) without bias; the state comes first (Huginn).
///
/// e·W_eᵀ does not change across steps, so it is computed once per call into `e_part`.
struct concat_linear {
  using slot = muninn::slot::injection;                  ///< fills the Injection slot
  static constexpr const char* name = "concat_linear";   ///< spelling used in messages
  static constexpr const char* config_name = "linear";   ///< config.json injection_type
  static constexpr bool has_weight = true;               ///< whether the injection has a weight to load
  /// \brief The adapter [h, 2h] of the family's weights (huginn_weights::adapter).
  template <class Weights>
  static auto weight(const Weights& w) -> decltype(w.adapter.data()) {
    MUNINN_CHECK(w.adapter.size() > 0, "injection::concat_linear: the model's weights hold no adapter");
    return w.adapter.data();
  }
  /// \brief e_part = e · W_eᵀ (the right half of the adapter).
  template <class Backend, class T>
  static void prepare(const injection_args<Backend, T>& a) {
    gemm_nt(a.be, a.rows, a.h, a.h, 1.0f, a.e, a.h, a.weight + a.h, 2 * a.h, 0.0f, a.e_part, a.h);
  }
  /// \brief x = x · W_xᵀ + e_part, through `spare`.
  template <class Backend, class T>
  static void apply(const injection_args<Backend, T>& a, T*& x, T*& spare) {
    a.be.copy(spare, a.e_part, std::size_t(a.rows * a.h));
    gemm_nt(a.be, a.rows, a.h, a.h, 1.0f, x, a.h, a.weight, 2 * a.h, 1.0f, spare, a.h);
    std::swap(x, spare);
  }
};

/// \brief `x = x + e`: no weight.
struct add {
  using slot = muninn::slot::injection;              ///< fills the Injection slot
  static constexpr const char* name = "add";         ///< spelling used in messages
  static constexpr const char* config_name = "add";  ///< config.json injection_type
  static constexpr bool has_weight = false;          ///< whether the injection has a weight to load
  /// \brief Nothing to precompute.
  template <class Backend, class T>
  static void prepare(const injection_args<Backend, T>&) {}
  /// \brief x += e.
  template <class Backend, class T>
  static void apply(const injection_args<Backend, T>& a, T*& x, T*&) {
    muninn::add(a.be, x, a.e, x, a.rows * a.h);
  }
};

/// \brief `concat_linear` or `add`, chosen at run time by the weights: the concat adapter when the
/// family's weights hold one, else `x = x + e`.
///
/// The loader reads the adapter only when the config asks for it (Huginn's `injection_type`
/// "linear"), so one model type runs checkpoints of both kinds (block::from_config says why).
struct from_config {
  using slot = muninn::slot::injection;                        ///< fills the Injection slot
  static constexpr const char* name = "from_config";           ///< spelling used in messages
  static constexpr const char* config_name = "linear or add";  ///< config.json injection_type: either
  static constexpr bool has_weight = true;                     ///< may have one: weight() is null without
  /// \brief The adapter of the family's weights, or null when they hold none.
  template <class Weights>
  static auto weight(const Weights& w) -> decltype(w.adapter.data()) {
    return w.adapter.size() > 0 ? w.adapter.data() : nullptr;
  }
  /// \brief As concat_linear with an adapter; nothing without.
  template <class Backend, class T>
  static void prepare(const injection_args<Backend, T>& a) {
    if (a.weight) concat_linear::prepare(a);
  }
  /// \brief As concat_linear with an adapter, else as add.
  template <class Backend, class T>
  static void apply(const injection_args<Backend, T>& a, T*& x, T*& spare) {
    if (a.weight)
      concat_linear::apply(a, x, spare);
    else
      add::apply(a, x, spare);
  }
};

/// \brief No injection: a model without a recurrent state (plain stacks).
struct none {
  using slot = muninn::slot::injection;               ///< fills the Injection slot
  static constexpr const char* name = "none";         ///< spelling used in messages
  static constexpr const char* config_name = "none";  ///< config.json injection_type
  static constexpr bool has_weight = false;           ///< whether the injection has a weight to load
  /// \brief Nothing to precompute.
  template <class Backend, class T>
  static void prepare(const injection_args<Backend, T>&) {}
  /// \brief Leaves x alone.
  template <class Backend, class T>
  static void apply(const injection_args<Backend, T>&, T*&, T*&) {}
};

}  // namespace injection
}  // namespace muninn
