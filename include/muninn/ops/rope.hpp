#pragma once
/// \file
/// \brief Rotary position embedding, interleaved-pair (complex) variant as in Huginn.
///
/// Pairs are adjacent elements (2i, 2i+1) of a head, not the two halves as in Hugging Face's
/// rotate_half. The table layout matches the checkpoint's `freqs_cis` buffer, so a model can
/// use the stored table (bit-exact with the reference) or build one with make_rope_table.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"

namespace muninn {

/// \brief Builds the RoPE table [max_pos][head_dim/2][2] = {cos, sin} in fp32.
///
/// Follows Huginn's precompute_freqs_cis step by step in fp32: inv_freq[i] =
/// 1 / base^(float(2i)/D), angle = float(p) · inv_freq[i]. cos/sin come from the C library
/// (they may differ from torch's in the last ulp; load the checkpoint's table to be exact).
/// \param head_dim D, even
/// \param max_pos  number of positions (Huginn: block_size 4096)
/// \param base     rope base (Huginn: 50000)
inline std::vector<float> make_rope_table(std::int64_t head_dim, std::int64_t max_pos, float base) {
  MUNINN_CHECK(head_dim > 0 && head_dim % 2 == 0, "make_rope_table: head_dim must be positive and even, got ",
               head_dim);
  MUNINN_CHECK(max_pos >= 0, "make_rope_table: negative max_pos ", max_pos);
  MUNINN_CHECK(base > 0.0f, "make_rope_table: base must be positive, got ", base);
  const std::int64_t half = head_dim / 2;
  std::vector<float> inv_freq(static_cast<std::size_t>(half));
  for (std::int64_t i = 0; i < half; ++i)
    inv_freq[std::size_t(i)] = 1.0f / std::pow(base, float(2 * i) / float(head_dim));
  std::vector<float> table(static_cast<std::size_t>(max_pos * half * 2));
  for (std::int64_t p = 0; p < max_pos; ++p)
    for (std::int64_t i = 0; i < half; ++i) {
      const float angle = float(p) * inv_freq[std::size_t(i)];
      table[std::size_t((p * half + i) * 2)] = std::cos(angle);
      table[std::size_t((p * half + i) * 2 + 1)] = std::sin(angle);
    }
  return table;
}

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
  MUNINN_CHECK(head_dim > 0 && head_dim % 2 == 0, "rope_interleaved: head_dim must be positive and even, got ",
               head_dim);
  MUNINN_CHECK(rows >= 0 && n_heads >= 0 && ld >= n_heads * head_dim && pos0 >= 0,
               "rope_interleaved: bad shape rows=", rows, " ld=", ld, " n_heads=", n_heads, " head_dim=", head_dim,
               " pos0=", pos0);
  const std::int64_t half = head_dim / 2, width = n_heads * head_dim;
  be.parallel_for(rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(width, 1)),
                  [&](std::int64_t b, std::int64_t e) {
                    for (std::int64_t r = b; r < e; ++r) {
                      float* xr = x + r * ld;
                      const float* t = table + (pos0 + r) * half * 2;
                      for (std::int64_t h = 0; h < n_heads; ++h) {
                        float* xh = xr + h * head_dim;
                        const float* bh = bias ? bias + h * head_dim : nullptr;
                        for (std::int64_t i = 0; i < half; ++i) {
                          float x0 = xh[2 * i], x1 = xh[2 * i + 1];
                          if (bh) {
                            x0 += bh[2 * i];
                            x1 += bh[2 * i + 1];
                          }
                          const float c = t[2 * i], s = t[2 * i + 1];
                          xh[2 * i] = x0 * c - x1 * s;
                          xh[2 * i + 1] = x1 * c + x0 * s;
                        }
                      }
                    }
                  });
}

}  // namespace muninn
