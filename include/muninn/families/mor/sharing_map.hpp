#pragma once
/// \file
/// \brief Layer → weight-set maps of the parameter-sharing strategies of recursive transformers
/// (Cycle, Sequence, Middle-Cycle, Middle-Sequence; Bae et al. 2025), as their reference code
/// builds them, including what it does when the depth is not divisible by the recursions.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"

namespace muninn {

/// \brief How the layers of a recursive transformer share weights.
enum class sharing_strategy {
  cycle,            ///< the block of B layers repeats: layer l + r·B uses the weights of layer l
  sequence,         ///< each layer repeats Nr times in a row: layers [l·Nr, (l+1)·Nr) share
  middle_cycle,     ///< cycle between an unshared first and last layer (the MoR paper's choice)
  middle_sequence,  ///< sequence between an unshared first and last layer
};

/// \brief The spelling used in configs: cycle, sequence, middle_cycle, middle_sequence.
inline const char* sharing_name(sharing_strategy s) {
  switch (s) {
    case sharing_strategy::cycle: return "cycle";
    case sharing_strategy::sequence: return "sequence";
    case sharing_strategy::middle_cycle: return "middle_cycle";
    case sharing_strategy::middle_sequence: return "middle_sequence";
  }
  return "?";
}

/// \brief Parses the config spelling (also the hyphenated middle-cycle, middle-sequence).
inline sharing_strategy parse_sharing(const std::string& s) {
  if (s == "cycle") return sharing_strategy::cycle;
  if (s == "sequence") return sharing_strategy::sequence;
  if (s == "middle_cycle" || s == "middle-cycle") return sharing_strategy::middle_cycle;
  if (s == "middle_sequence" || s == "middle-sequence") return sharing_strategy::middle_sequence;
  fail("unknown sharing strategy '", s, "' (cycle, sequence, middle_cycle, middle_sequence)");
}

/// \brief The layers a shared model runs, in order, and the weight set each one uses.
struct sharing_map {
  sharing_strategy strategy = sharing_strategy::cycle;  ///< the strategy
  std::int64_t recursions = 1;  ///< Nr
  std::int64_t block = 0;       ///< B: distinct layers per recursion
  /// \brief Original layer index of each layer that runs (all of them unless the depth was not
  /// divisible, in which case the reference keeps an evenly spaced subset).
  std::vector<std::int64_t> kept;
  /// \brief For each layer that runs, the index (into `kept`) of the layer whose weights it uses.
  std::vector<std::int64_t> owner;

  /// \brief Layers that run.
  std::int64_t size() const { return std::int64_t(kept.size()); }
  /// \brief Whether the first and the last layer are outside the recursion.
  bool middle() const {
    return strategy == sharing_strategy::middle_cycle || strategy == sharing_strategy::middle_sequence;
  }
  /// \brief Index (into `kept`) of layer l of the block at recursion r: cycle strategies only,
  /// where a recursion is one pass over the block.
  std::int64_t layer_of(std::int64_t r, std::int64_t l) const {
    MUNINN_CHECK(strategy == sharing_strategy::cycle || strategy == sharing_strategy::middle_cycle,
                 "sharing_map: recursion ", r, " is not a contiguous block under ", sharing_name(strategy));
    MUNINN_CHECK(r >= 0 && r < recursions && l >= 0 && l < block, "sharing_map: (recursion ", r, ", layer ", l,
                 ") outside ", recursions, " x ", block);
    return (middle() ? 1 : 0) + l + r * block;
  }
};

namespace detail {
// numpy.linspace(a, b, n), each value rounded half to even (numpy's round, as the reference does).
inline std::vector<std::int64_t> rounded_linspace(double a, double b, std::int64_t n) {
  std::vector<std::int64_t> out;
  const double step = n > 1 ? (b - a) / double(n - 1) : 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = i == n - 1 && n > 1 ? b : a + double(i) * step;
    out.push_back(std::int64_t(std::nearbyint(x)));  // the default rounding mode: half to even
  }
  return out;
}
}  // namespace detail

/// \brief The map for `layers` layers (config num_hidden_layers) and `recursions` recursions.
///
/// B = L / Nr (middle strategies: (L − 2) / Nr). When that division leaves a remainder the
/// reference drops layers: it keeps layer round(x) for x in linspace(0, L − 1, B·Nr) (middle
/// strategies: linspace(1, L − 2, B·Nr) between the first and the last layer), rounding half to
/// even. `kept` records the original indices: a checkpoint still holds every layer.
inline sharing_map make_sharing_map(sharing_strategy s, std::int64_t layers, std::int64_t recursions) {
  MUNINN_CHECK(recursions >= 1, "sharing: num_recursion must be >= 1, got ", recursions);
  sharing_map m;
  m.strategy = s;
  m.recursions = recursions;
  const bool middle = m.middle();
  const std::int64_t inner = layers - (middle ? 2 : 0);
  MUNINN_CHECK(inner >= recursions, "sharing: ", layers, " layers cannot hold ", recursions, " recursions under ",
               sharing_name(s), middle ? " (which keeps the first and last layer apart)" : "");
  m.block = inner / recursions;
  const std::int64_t shared = m.block * recursions;
  std::vector<std::int64_t> inner_kept;
  if (shared == inner) {
    for (std::int64_t i = 0; i < inner; ++i) inner_kept.push_back(i + (middle ? 1 : 0));
  } else {
    inner_kept = middle ? detail::rounded_linspace(1.0, double(layers - 2), shared)
                        : detail::rounded_linspace(0.0, double(layers - 1), shared);
  }
  if (middle) m.kept.push_back(0);
  m.kept.insert(m.kept.end(), inner_kept.begin(), inner_kept.end());
  if (middle) m.kept.push_back(layers - 1);
  const std::int64_t off = middle ? 1 : 0;
  for (std::int64_t p = 0; p < m.size(); ++p) {
    if (middle && (p == 0 || p == m.size() - 1)) {
      m.owner.push_back(p);
      continue;
    }
    const std::int64_t q = p - off;  // index inside the shared part
    const bool cyc = s == sharing_strategy::cycle || s == sharing_strategy::middle_cycle;
    m.owner.push_back(off + (cyc ? q % m.block : q / recursions * recursions));
  }
  return m;
}

}  // namespace muninn
