#pragma once
/// \file
/// \brief What the host and CUDA RoPE ops share: the two pair layouts, the two sources of a row's
/// position, and the argument checks.

#include <cstdint>
#include <type_traits>

#include "muninn/core/error.hpp"
#include "muninn/core/macros.hpp"

namespace muninn {
namespace detail {

/// \brief Which elements of a head form RoPE pair i.
enum class rope_layout {
  interleaved,  ///< (2i, 2i + 1)
  half          ///< (i, i + D/2)
};

/// \brief Row r sits at position pos0 + r.
struct rope_pos_offset {
  std::int64_t pos0;  ///< position of row 0
  /// \brief Position of row r.
  MUNINN_HOST_DEVICE std::int64_t operator()(std::int64_t r) const { return pos0 + r; }
};
/// \brief Row r sits at position pos[r].
struct rope_pos_array {
  const std::int32_t* pos;  ///< position of each row
  /// \brief Position of row r.
  MUNINN_HOST_DEVICE std::int64_t operator()(std::int64_t r) const { return pos[r]; }
};

/// \brief Column offsets of the two elements of pair i in a head of dim D.
template <rope_layout L>
MUNINN_HOST_DEVICE MUNINN_INLINE void rope_pair_columns(std::int64_t i, std::int64_t half, std::int64_t& c0,
                                                         std::int64_t& c1) {
  if constexpr (L == rope_layout::interleaved) {
    c0 = 2 * i;
    c1 = 2 * i + 1;
  } else {
    c0 = i;
    c1 = i + half;
  }
}

/// \brief Checks the shape arguments shared by every RoPE entry point.
inline void rope_check_shape(const char* op, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
                             std::int64_t head_dim) {
  MUNINN_CHECK(head_dim > 0 && head_dim % 2 == 0, op, ": head_dim must be positive and even, got ", head_dim);
  MUNINN_CHECK(rows >= 0 && n_heads >= 0 && ld >= n_heads * head_dim, op, ": bad shape rows=", rows, " ld=", ld,
               " n_heads=", n_heads, " head_dim=", head_dim);
}

/// \brief Checks that every per-row position is non-negative (the table length is not known).
inline void rope_check_positions(const char* op, const std::int32_t* pos, std::int64_t rows) {
  MUNINN_CHECK(rows == 0 || pos != nullptr, op, ": null positions");
  for (std::int64_t r = 0; r < rows; ++r)
    MUNINN_CHECK(pos[r] >= 0, op, ": negative position ", pos[r], " at row ", r);
}

/// \brief Enables the per-row-position overloads for std::int32_t only. They are templates so
/// that a literal 0 as the last argument still selects the pos0 overload instead of being
/// ambiguous between an integer and a null pointer.
template <class I>
using if_int32 = std::enable_if_t<std::is_same_v<I, std::int32_t>, int>;

}  // namespace detail
}  // namespace muninn
