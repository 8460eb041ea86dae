#pragma once
/// \file
/// \brief RouterPolicy (the "router" slot): which tokens take which recursion.
///
/// Concept RouterPolicy: `slot` = slot::router, `name`, `routes` (whether tokens may take
/// different depths by routing). A routing policy also provides `template <class Pass> static
/// void recurse(Pass&)`, the recursions that `recurrence::mixture` runs
/// (families/mor/router.hpp has the Mixture-of-Recursions routers).

#include "muninn/policies/detect.hpp"

namespace muninn {

/// \brief How a router (Mixture-of-Recursions) picks the tokens of each recursion.
enum class routing_mode {
  causal,   ///< per token, from its own router output: what decoding needs (Muninn's rule, see docs/mor.md)
  scoring,  ///< the reference's: top-k over each whole sequence fed in one call (not causal)
};

/// \brief Which tokens take which recursion.
namespace router {
/// \brief Every token runs every step.
struct none {
  using slot = muninn::slot::router;           ///< fills the Router slot
  static constexpr bool routes = false;        ///< whether tokens may take different depths by routing
  static constexpr const char* name = "none";  ///< spelling used in messages
};
}  // namespace router

}  // namespace muninn
