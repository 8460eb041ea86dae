#pragma once
/// \file
/// \brief RecurrencePolicy (the "recurrence" slot): the schedule that runs a model's layer groups.
///
/// Concept RecurrencePolicy: `slot` = slot::recurrence, `name`, `template <class Pass> static void
/// run(Pass&)` (the whole forward of a stacked call, written with the verbs of `forward_pass`) and
/// `template <class Pass, class T> static void readout(Pass&, T* y)` (what turns final states into
/// head input, applied to a copy; the head's own final norm comes after).

#include <cstdint>

#include "muninn/engine/kv_cache.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {
namespace recurrence {

/// \brief A plain stack: embed → every layer once → head (Llama).
struct none {
  using slot = muninn::slot::recurrence;       ///< fills the Recurrence slot
  static constexpr const char* name = "none";  ///< spelling used in messages
  /// \brief The whole pass.
  template <class Pass>
  static void run(Pass& p) {
    p.embed();
    p.run_layers(layer_group::prelude, p.e());
    p.emit_rest(p.e());
  }
  /// \brief Nothing between the last layer and the head.
  template <class Pass, class T>
  static void readout(Pass&, T*) {}
};

/// \brief Huginn's recurrence: prelude once, then r × (inject e → core), exits checked after
/// each step, then ln_f → coda → head.
struct core_loop {
  using slot = muninn::slot::recurrence;            ///< fills the Recurrence slot
  static constexpr const char* name = "core_loop";  ///< spelling used in messages
  /// \brief The whole pass; reads as the paper's pseudocode.
  template <class Pass>
  static void run(Pass& p) {
    p.embed();                                   // e = embed(ids)·√h
    p.run_layers(layer_group::prelude, p.e());   // e = prelude(e)
    p.blend_input();                             // e = (1−w)·e + w·e_earlier (parallel sampler only)
    p.start_state();                             // s_0: random, zero, given or a warm start
    p.prepare_injection();                       // the part of the adapter that only sees e
    for (std::int64_t s = 0; s < p.max_steps() && p.any_active(); ++s) {
      p.inject();                                // s = adapter([s, e])  or  s + e
      p.run_layers(layer_group::core, p.x(), s); // s = core(s)
      p.end_step(s);                             // hooks; tokens that converged leave with their logits
    }
    p.emit_rest(p.x());                          // the rest leave after the last step
  }
  /// \brief ln_f, then the coda (the head applies ln_f again, as the reference does).
  template <class Pass, class T>
  static void readout(Pass& p, T* y) {
    p.final_norm(y);
    p.run_layers(layer_group::coda, y);
  }
};

/// \brief Mixture-of-Recursions: first layers once, then the RouterPolicy's recursions of the
/// shared block over the tokens it picks, then the last layers and the head.
struct mixture {
  using slot = muninn::slot::recurrence;          ///< fills the Recurrence slot
  static constexpr const char* name = "mixture";  ///< spelling used in messages
  /// \brief The whole pass.
  template <class Pass>
  static void run(Pass& p) {
    p.embed();                                        // e = embed(ids)
    p.run_layers(layer_group::prelude, p.e());        // the unshared first layer(s)
    Pass::arch_type::router_policy::recurse(p);       // e += g·f_r(e) on the routed tokens, r = 0 … Nr−1
    p.run_layers(layer_group::coda, p.e());           // the unshared last layer(s)
    p.emit_rest(p.e());                               // RMSNorm → head
  }
  /// \brief Nothing between the last layer and the head.
  template <class Pass, class T>
  static void readout(Pass&, T*) {}
};

/// \brief TRM / HRM: two state streams, z_H (the answer y) and z_L (the latent z), carried from one
/// supervision step to the next; one call is one supervision step. The core is the net that
/// updates z_L (TRM: both streams); a model with coda layers (HRM) updates z_H with them.
///
/// The pass provides `input()` (x), `high()`, `low()` (the streams), `high_cycles()` (T),
/// `low_cycles()` (n), `inject(state, a[, b])` (the InjectionPolicy adds a (+ b) to the state),
/// `run_layers(group, state)`, `emit(state)` (the heads on z_H), and `tap_low(t, j)` /
/// `tap_high(t)` (the taps of the streams after each update; no-ops without a tap callback).
struct two_stream {
  using slot = muninn::slot::recurrence;             ///< fills the Recurrence slot
  static constexpr const char* name = "two_stream";  ///< spelling used in messages
  /// \brief One supervision step; reads as the paper's pseudocode.
  template <class Pass>
  static void run(Pass& p) {
    const layer_group high_net = p.model().layers(layer_group::coda).empty() ? layer_group::core : layer_group::coda;
    for (std::int64_t t = 0; t < p.high_cycles(); ++t) {
      for (std::int64_t i = 0; i < p.low_cycles(); ++i) {
        p.inject(p.low(), p.high(), p.input());     // z_L = z_L + z_H + x
        p.run_layers(layer_group::core, p.low());   // z_L = L_net(z_L)
        p.tap_low(t, i);                            // the z_L.cycle.t.i tap
      }
      p.inject(p.high(), p.low());                  // z_H = z_H + z_L   (no x)
      p.run_layers(high_net, p.high());             // z_H = H_net(z_H)  (TRM: the same net)
      p.tap_high(t);                                // the z_H.cycle.t tap
    }
    p.emit(p.high());                               // logits from z_H, q from z_H at position 0
  }
  /// \brief Nothing between the streams and the heads.
  template <class Pass, class T>
  static void readout(Pass&, T*) {}
};

}  // namespace recurrence
}  // namespace muninn
