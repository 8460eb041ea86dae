#pragma once
/// \file
/// \brief Which keys a query sees: the attention mask kinds and the visibility rules that the
/// host and CUDA attention kernels share.

#include <cstdint>

#include "muninn/core/macros.hpp"

namespace muninn {

/// \brief The attention mask of attention()'s mask overload.
///
/// - `causal` without positions: bottom-right aligned, query i sees key j iff j <= nkv − nq + i
///   (the classic causal mask when nq == nkv, chunked prefill against a cache when nq < nkv).
/// - `causal` with positions: query i sees key j iff k_pos[j] <= q_pos[i]. Positions may be
///   ragged and non-contiguous (mixture-of-recursions runs a subset of a sequence's tokens at
///   their original positions).
/// - `full`: every query sees every key (encoders, bidirectional blocks).
///
/// A query that sees no key outputs zeros.
enum class attn_mask {
  causal,  ///< causal: by row index (bottom-right) or by explicit positions
  full     ///< no mask
};

namespace detail {

/// \brief Bottom-right causal visibility (query i of nq against nkv keys): keys [0, off + i] with
/// off = nkv − nq. Never hides a key inside that prefix, so kernels need no masked-tile handling.
struct attn_keys_prefix {
  std::int64_t off;  ///< nkv − nq
  /// \brief Keys [0, end) may be visible to query i.
  MUNINN_HOST_DEVICE std::int64_t end(std::int64_t i) const { return off + i + 1; }
  /// \brief True when key j < end(i) is visible to query i (always, for a prefix).
  MUNINN_HOST_DEVICE bool operator()(std::int64_t, std::int64_t) const { return true; }
  static constexpr bool ragged = false;  ///< whether keys below end() can be hidden
};

/// \brief No mask: every one of the nkv keys is visible.
struct attn_keys_all {
  std::int64_t nkv;  ///< number of keys
  /// \brief Keys [0, nkv) are visible to every query.
  MUNINN_HOST_DEVICE std::int64_t end(std::int64_t) const { return nkv; }
  /// \brief Always true.
  MUNINN_HOST_DEVICE bool operator()(std::int64_t, std::int64_t) const { return true; }
  static constexpr bool ragged = false;  ///< whether keys below end() can be hidden
};

/// \brief Causal by explicit positions: key j is visible to query i iff k_pos[j] <= q_pos[i].
struct attn_keys_by_position {
  const std::int32_t* q_pos;  ///< position of each query row
  const std::int32_t* k_pos;  ///< position of each key row
  std::int64_t nkv;           ///< number of keys
  /// \brief Every key may be visible (positions need not be sorted).
  MUNINN_HOST_DEVICE std::int64_t end(std::int64_t) const { return nkv; }
  /// \brief k_pos[j] <= q_pos[i].
  MUNINN_HOST_DEVICE bool operator()(std::int64_t i, std::int64_t j) const { return k_pos[j] <= q_pos[i]; }
  static constexpr bool ragged = true;  ///< whether keys below end() can be hidden
};

}  // namespace detail
}  // namespace muninn
