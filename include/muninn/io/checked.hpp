#pragma once
/// \file
/// \brief Overflow-checked size arithmetic and the documented maxima for sizes read from files.
///
/// Checkpoints and configs come from strangers: every count, extent and offset read from a file
/// goes through these helpers before it sizes an allocation or a loop, so a hostile file gets an
/// error message instead of undefined behaviour or a huge allocation.

#include <cstdint>
#include <limits>
#include <vector>

namespace muninn::io {

/// \brief The largest sizes a config.json may declare (docs/architecture.md, "Hostile files").
///
/// Generous next to released models (Llama 3.1 405B: 126 layers, 128 heads, hidden 16384,
/// vocabulary 128256, 131072 positions), yet small enough that everything sized from them —
/// tensor-name lists, shape products, the RoPE table — stays far from overflow and from memory
/// a tiny file could make us allocate before any tensor is checked against the checkpoint.
struct load_limits {
  static constexpr std::int64_t max_layers = 4096;             ///< prelude + core + coda (or num_hidden_layers)
  static constexpr std::int64_t max_heads = 16384;             ///< attention heads (and key/value heads)
  static constexpr std::int64_t max_head_dim = 4096;           ///< per-head width
  static constexpr std::int64_t max_width = std::int64_t(1) << 20;  ///< hidden and intermediate sizes
  static constexpr std::int64_t max_vocab = std::int64_t(1) << 24;  ///< vocabulary rows
  static constexpr std::int64_t max_positions = std::int64_t(1) << 22;  ///< block_size / max_position_embeddings
  static constexpr std::int64_t max_recurrence = 1 << 16;      ///< mean_recurrence
  static constexpr std::int64_t max_rope_table = std::int64_t(1) << 28;  ///< positions x head_dim floats (1 GiB)
  static constexpr std::uint64_t max_safetensors_header = 100000000;  ///< the format's own cap (100 MB)
  /// Rows of a puzzle-embedding table (`num_puzzle_identifiers`; ARC-AGI with 1000 augmentations
  /// has about 1.2 million): identifiers are int32 in the datasets.
  static constexpr std::int64_t max_puzzle_identifiers = (std::int64_t(1) << 31) - 1;
};

namespace checked {

/// \brief a * b for non-negative int64 values; false (and `out` untouched) when it overflows int64.
inline bool mul(std::int64_t a, std::int64_t b, std::int64_t& out) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  out = r;
  return true;
}

/// \brief a + b for int64 values; false (and `out` untouched) when it overflows int64.
inline bool add(std::int64_t a, std::int64_t b, std::int64_t& out) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return false;
  out = r;
  return true;
}

/// \brief The element count of `shape` (1 for a scalar), or -1 when an extent is negative or the
/// product does not fit int64.
///
/// A zero extent makes the count 0 whatever the other extents are, so [2^62, 4, 0] is an empty
/// tensor rather than an overflow: multiplying left to right would overflow before reaching 0.
inline std::int64_t numel(const std::vector<std::int64_t>& shape) {
  for (std::int64_t d : shape) {
    if (d < 0) return -1;
    if (d == 0) return 0;
  }
  std::int64_t n = 1;
  for (std::int64_t d : shape)
    if (!mul(n, d, n)) return -1;
  return n;
}

/// \brief numel(shape) * elem_size bytes, or -1 when that does not fit int64 (or numel fails).
inline std::int64_t nbytes(const std::vector<std::int64_t>& shape, std::int64_t elem_size) {
  std::int64_t n = numel(shape);
  if (n < 0 || !mul(n, elem_size, n)) return -1;
  return n;
}

}  // namespace checked

}  // namespace muninn::io
