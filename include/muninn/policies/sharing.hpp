#pragma once
/// \file
/// \brief SharingPolicy (the "sharing" slot).
///
/// Concept SharingPolicy: `slot` = slot::sharing, `name`, `recurrent` (whether a group of layers
/// runs more than once).

#include "muninn/policies/detect.hpp"

namespace muninn {

/// \brief Which layers are reused and how.
namespace sharing {
/// \brief Huginn: prelude and coda unshared, one core block of layers applied r times.
struct recurrent_core {
  using slot = muninn::slot::sharing;                    ///< fills the Sharing slot
  static constexpr bool recurrent = true;                ///< whether a core runs r times
  static constexpr const char* name = "recurrent_core";  ///< spelling used in messages
};
/// \brief No reuse at all: every layer runs once (a plain transformer; r must be 0).
struct none {
  using slot = muninn::slot::sharing;          ///< fills the Sharing slot
  static constexpr bool recurrent = false;     ///< whether a core runs r times
  static constexpr const char* name = "none";  ///< spelling used in messages
};
}  // namespace sharing

}  // namespace muninn
