#pragma once
/// \file
/// \brief Rotary position embedding on the host: Huginn's interleaved-pair variant and Hugging
/// Face's rotate-half variant, each with a start position or a position per row.
///
/// Interleaved: pair i of a head is the adjacent elements (2i, 2i+1), as in Huginn's complex
/// formulation; its table layout matches the checkpoint's `freqs_cis` buffer, so a model can use
/// the stored table (bit-exact with the reference) or build one with make_rope_table.
/// Rotate-half: pair i is (i, i + D/2), as in Llama's `rotate_half`. Both read the same table
/// [max_pos][D/2][2] = {cos, sin}.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/math.hpp"
#include "muninn/ops/rope_math.hpp"
#include "muninn/ops/rope_table.hpp"

namespace muninn {
namespace detail {

/// \brief Rotates one head: optional bias first, then each pair by the row's table entry.
template <rope_layout L>
inline void rope_head(float* xh, const float* bh, const float* t, std::int64_t half) {
  for (std::int64_t i = 0; i < half; ++i) {
    std::int64_t c0, c1;
    rope_pair_columns<L>(i, half, c0, c1);
    float a = xh[c0], b = xh[c1];
    if (bh) {
      a += bh[c0];
      b += bh[c1];
    }
    rope_rotate(a, b, t[2 * i], t[2 * i + 1]);
    xh[c0] = a;
    xh[c1] = b;
  }
}

/// \brief The host RoPE loop for both layouts and both position sources.
template <rope_layout L, class Pos>
void rope_rows(const host_backend& be, float* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
               std::int64_t head_dim, const float* bias, const float* table, Pos pos) {
  const std::int64_t half = head_dim / 2, width = n_heads * head_dim;
  be.parallel_for(rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(width, 1)),
                  [&](std::int64_t b, std::int64_t e) {
                    for (std::int64_t r = b; r < e; ++r) {
                      const float* t = table + pos(r) * half * 2;
                      for (std::int64_t h = 0; h < n_heads; ++h)
                        rope_head<L>(x + r * ld + h * head_dim, bias ? bias + h * head_dim : nullptr, t, half);
                    }
                  });
}

}  // namespace detail

/// \brief Rotates the heads of x in place, adding an optional per-head bias first.
///
/// Row r has position pos0 + r. For pair i of a head: out[2i] = x[2i]·cos − x[2i+1]·sin,
/// out[2i+1] = x[2i+1]·cos + x[2i]·sin, with {cos, sin} = table[(pos0+r)·D/2 + i].
/// \param be       the host backend
/// \param x        [rows, ld]; the first n_heads·head_dim columns are rotated
/// \param rows     number of rows (tokens)
/// \param ld       row stride of x in elements
/// \param n_heads  heads per row
/// \param head_dim D, even
/// \param bias     nullptr, or [n_heads·head_dim] added before the rotation (Huginn's qk_bias)
/// \param table    RoPE table [max_pos][D/2][2]; must cover positions up to pos0 + rows − 1
/// \param pos0     position of row 0
inline void rope_interleaved(const host_backend& be, float* x, std::int64_t rows, std::int64_t ld,
                             std::int64_t n_heads, std::int64_t head_dim, const float* bias, const float* table,
                             std::int64_t pos0) {
  detail::rope_check_shape("rope_interleaved", rows, ld, n_heads, head_dim);
  MUNINN_CHECK(pos0 >= 0, "rope_interleaved: negative pos0 ", pos0);
  detail::rope_rows<detail::rope_layout::interleaved>(be, x, rows, ld, n_heads, head_dim, bias, table,
                                                      detail::rope_pos_offset{pos0});
}

/// \brief rope_interleaved() with an explicit position per row: row r has position pos[r].
///
/// Positions may be in any order and need not be contiguous (mixture-of-recursions rotates a
/// subset of a sequence's tokens at their original positions).
/// \tparam I       std::int32_t (deduced; see the pos0 overload for why this is a template)
/// \param be       the host backend
/// \param x        [rows, ld]; the first n_heads·head_dim columns are rotated
/// \param rows     number of rows (tokens)
/// \param ld       row stride of x in elements
/// \param n_heads  heads per row
/// \param head_dim D, even
/// \param bias     nullptr, or [n_heads·head_dim] added before the rotation
/// \param table    RoPE table [max_pos][D/2][2]; must cover every pos[r]
/// \param pos      position of each row [rows], each >= 0 (checked)
template <class I, detail::if_int32<I> = 0>
void rope_interleaved(const host_backend& be, float* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
                      std::int64_t head_dim, const float* bias, const float* table, const I* pos) {
  detail::rope_check_shape("rope_interleaved", rows, ld, n_heads, head_dim);
  detail::rope_check_positions("rope_interleaved", pos, rows);
  detail::rope_rows<detail::rope_layout::interleaved>(be, x, rows, ld, n_heads, head_dim, bias, table,
                                                      detail::rope_pos_array{pos});
}

/// \brief Hugging Face's rotate-half RoPE in place, adding an optional per-head bias first.
///
/// Row r has position pos0 + r. For i < D/2: out[i] = x[i]·cos_i − x[i+D/2]·sin_i and
/// out[i+D/2] = x[i+D/2]·cos_i + x[i]·sin_i, with {cos_i, sin_i} = table[(pos0+r)·D/2 + i] (the
/// same table layout as rope_interleaved; Llama's cos/sin tensors repeat it over both halves).
/// \param be       the host backend
/// \param x        [rows, ld]; the first n_heads·head_dim columns are rotated
/// \param rows     number of rows (tokens)
/// \param ld       row stride of x in elements
/// \param n_heads  heads per row
/// \param head_dim D, even
/// \param bias     nullptr, or [n_heads·head_dim] added before the rotation
/// \param table    RoPE table [max_pos][D/2][2]; must cover positions up to pos0 + rows − 1
/// \param pos0     position of row 0
inline void rope_half(const host_backend& be, float* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
                      std::int64_t head_dim, const float* bias, const float* table, std::int64_t pos0) {
  detail::rope_check_shape("rope_half", rows, ld, n_heads, head_dim);
  MUNINN_CHECK(pos0 >= 0, "rope_half: negative pos0 ", pos0);
  detail::rope_rows<detail::rope_layout::half>(be, x, rows, ld, n_heads, head_dim, bias, table,
                                               detail::rope_pos_offset{pos0});
}

/// \brief rope_half() with an explicit position per row: row r has position pos[r].
/// \tparam I       std::int32_t (deduced; a template so that a literal 0 picks the pos0 overload)
/// \param be       the host backend
/// \param x        [rows, ld]; the first n_heads·head_dim columns are rotated
/// \param rows     number of rows (tokens)
/// \param ld       row stride of x in elements
/// \param n_heads  heads per row
/// \param head_dim D, even
/// \param bias     nullptr, or [n_heads·head_dim] added before the rotation
/// \param table    RoPE table [max_pos][D/2][2]; must cover every pos[r]
/// \param pos      position of each row [rows], each >= 0 (checked)
template <class I, detail::if_int32<I> = 0>
void rope_half(const host_backend& be, float* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
               std::int64_t head_dim, const float* bias, const float* table, const I* pos) {
  detail::rope_check_shape("rope_half", rows, ld, n_heads, head_dim);
  detail::rope_check_positions("rope_half", pos, rows);
  detail::rope_rows<detail::rope_layout::half>(be, x, rows, ld, n_heads, head_dim, bias, table,
                                               detail::rope_pos_array{pos});
}

}  // namespace muninn
