#pragma once
/// \file
/// \brief Reference RoPE: frequencies and tables in double from the published formulas, and
/// both pair layouts applied with double arithmetic.

#include <cmath>
#include <cstdint>
#include <vector>

#include "muninn/ops/rope_table.hpp"

namespace muninn {
namespace ref {

/// \brief RoPE inverse frequencies [D/2] in double: 1 / base^(2i/D), then the scaling's rule
/// (linear: / factor; llama3: wavelen = 2π / f, wavelen > old/low → f / factor, wavelen <
/// old/high → f, else (1 − s) · f / factor + s · f with s = (old / wavelen − low) / (high − low)).
/// \param head_dim D, even
/// \param base     rope_theta
/// \param s        the scaling
inline std::vector<double> rope_inv_freq(std::int64_t head_dim, double base, const rope_scaling& s) {
  const double pi = 3.14159265358979323846;
  std::vector<double> inv;
  for (std::int64_t i = 0; i < head_dim / 2; ++i) {
    double f = 1.0 / std::pow(base, double(2 * i) / double(head_dim));
    if (s.type == rope_scaling::kind::linear) f /= s.factor;
    if (s.type == rope_scaling::kind::llama3) {
      const double old = double(s.original_max_position_embeddings), wavelen = 2.0 * pi / f;
      if (wavelen > old / s.low_freq_factor) {
        f /= s.factor;
      } else if (wavelen >= old / s.high_freq_factor) {
        const double smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0 - smooth) * f / s.factor + smooth * f;
      }
    }
    inv.push_back(f);
  }
  return inv;
}

/// \brief RoPE table [max_pos][D/2][2] = {cos, sin} of p · inv_freq[i], all in double, rounded
/// to float at the end.
/// \param head_dim D, even
/// \param max_pos  number of positions
/// \param base     rope_theta
/// \param s        the scaling
inline std::vector<float> make_rope_table(std::int64_t head_dim, std::int64_t max_pos, double base,
                                          const rope_scaling& s) {
  const std::vector<double> inv = rope_inv_freq(head_dim, base, s);
  std::vector<float> t;
  for (std::int64_t p = 0; p < max_pos; ++p)
    for (double f : inv) {
      t.push_back(float(std::cos(double(p) * f)));
      t.push_back(float(std::sin(double(p) * f)));
    }
  return t;
}

/// \brief Rotates every head of x in place: pair i is (2i, 2i+1) when `interleaved`, else
/// (i, i + D/2); row r is at position pos ? pos[r] : pos0 + r; the bias (if any) is added first.
/// The rotation uses the table's fp32 cos/sin in double arithmetic.
/// \param interleaved pair layout: Huginn's (true) or Hugging Face's rotate-half (false)
/// \param x           [rows, ld], rotated in place
/// \param rows        number of rows
/// \param ld          row stride
/// \param n_heads     heads per row
/// \param head_dim    D, even
/// \param bias        [n_heads · D] or nullptr
/// \param table       [max_pos][D/2][2]
/// \param pos0        position of row 0 (when pos is null)
/// \param pos         position of each row, or nullptr
inline void rope(bool interleaved, float* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
                 std::int64_t head_dim, const float* bias, const float* table, std::int64_t pos0,
                 const std::int32_t* pos) {
  const std::int64_t half = head_dim / 2;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t p = pos ? std::int64_t(pos[r]) : pos0 + r;
    for (std::int64_t h = 0; h < n_heads; ++h)
      for (std::int64_t i = 0; i < half; ++i) {
        const std::int64_t c0 = h * head_dim + (interleaved ? 2 * i : i);
        const std::int64_t c1 = h * head_dim + (interleaved ? 2 * i + 1 : i + half);
        double a = x[r * ld + c0], b = x[r * ld + c1];
        if (bias) {
          a += bias[c0];
          b += bias[c1];
        }
        const double c = table[(p * half + i) * 2], s = table[(p * half + i) * 2 + 1];
        x[r * ld + c0] = float(a * c - b * s);
        x[r * ld + c1] = float(b * c + a * s);
      }
  }
}

/// \brief Huginn's interleaved RoPE (pairs (2i, 2i+1)); see rope().
/// \param x        [rows, ld], rotated in place
/// \param rows     number of rows
/// \param ld       row stride
/// \param n_heads  heads per row
/// \param head_dim D, even
/// \param bias     [n_heads · D] or nullptr
/// \param table    [max_pos][D/2][2]
/// \param pos0     position of row 0 (when pos is null)
/// \param pos      position of each row, or nullptr
inline void rope_interleaved(float* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
                             std::int64_t head_dim, const float* bias, const float* table, std::int64_t pos0,
                             const std::int32_t* pos = nullptr) {
  rope(true, x, rows, ld, n_heads, head_dim, bias, table, pos0, pos);
}

/// \brief Hugging Face's rotate-half RoPE (pairs (i, i + D/2)); see rope().
/// \param x        [rows, ld], rotated in place
/// \param rows     number of rows
/// \param ld       row stride
/// \param n_heads  heads per row
/// \param head_dim D, even
/// \param bias     [n_heads · D] or nullptr
/// \param table    [max_pos][D/2][2]
/// \param pos0     position of row 0 (when pos is null)
/// \param pos      position of each row, or nullptr
inline void rope_half(float* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads, std::int64_t head_dim,
                      const float* bias, const float* table, std::int64_t pos0, const std::int32_t* pos = nullptr) {
  rope(false, x, rows, ld, n_heads, head_dim, bias, table, pos0, pos);
}

}  // namespace ref
}  // namespace muninn
