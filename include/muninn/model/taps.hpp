#pragma once
/// \file
/// \brief Taps: named observation points of a forward pass (embeddings, each layer's output,
/// each recurrence step's state, router logits and gates, the head's input, the logits) that
/// reach a caller's callback as float values on the host.
///
/// A tap costs one test of `tap_options::on_tap` when no callback is set: no name is built,
/// nothing is copied from the device and nothing is allocated. With a callback, only the taps
/// that `tap_options::names` selects are copied to the host.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace muninn {

/// \brief One observation: a named [rows, cols] block of float values on the host, valid only
/// during the callback.
struct tap_event {
  std::string_view name;        ///< "embeddings", "core.layer.1", "state", "router.logits", "logits", ...
  std::int64_t step = -1;       ///< recurrence step or recursion (0-based); -1 for taps outside the recurrence
  std::int64_t rows = 0;        ///< rows: the tokens the values belong to
  std::int64_t cols = 0;        ///< values per row
  const float* data = nullptr;  ///< [rows, cols], row-major
  /// \brief Position in its sequence of each row ([rows]); a routed model's recursion taps hold
  /// only the tokens that ran it, so positions say which.
  const std::int64_t* positions = nullptr;
  /// \brief Sequence of each row ([rows]) when one call runs several: the row's index in
  /// `model::forward_batch`'s list, the prompt's index in `generate_batch`, the puzzle's index in
  /// the batch of a TRM / HRM solve. Null for a single-sequence call, whose rows all belong to
  /// the one sequence.
  const std::int64_t* sequences = nullptr;
};

/// \brief Receives the taps of a call, in the order the pass reaches them.
using tap_callback = std::function<void(const tap_event&)>;

/// \brief Which taps a call hands to whom.
struct tap_options {
  tap_callback on_tap;  ///< called for each selected tap; empty: no tap is taken
  /// \brief The taps to take: a name ("core.layer.1") or a prefix ending at a dot of the names
  /// it stands for ("core" takes every core layer, "router" every router tap). Empty: all.
  std::vector<std::string> names;

  /// \brief Whether a callback is set and `name` is selected.
  bool wants(std::string_view name) const {
    if (!on_tap) return false;
    if (names.empty()) return true;
    for (const std::string& n : names)
      if (name == n || (name.size() > n.size() && name.compare(0, n.size(), n) == 0 && name[n.size()] == '.'))
        return true;
    return false;
  }
};

}  // namespace muninn
