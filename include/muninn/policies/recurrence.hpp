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

}  // namespace recurrence
}  // namespace muninn
