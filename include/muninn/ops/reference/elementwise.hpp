#pragma once
/// \file
/// \brief Reference element-wise ops: add, scale, SiLU-and-multiply, embedding lookup.

#include <cmath>
#include <cstdint>

namespace muninn {
namespace ref {

/// \brief y = a + b (one fp32 addition: exact as a reference).
/// \param a first input [n]
/// \param b second input [n]
/// \param y output [n]
/// \param n number of elements
inline void add(const float* a, const float* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

/// \brief x *= s (one fp32 product).
/// \param x data [n], scaled in place
/// \param s factor
/// \param n number of elements
inline void scale(float* x, float s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] *= s;
}

/// \brief x = silu(x) = x / (1 + e^-x), in double.
/// \param x data [n], in place
/// \param n number of elements
inline void silu(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = float(double(x[i]) / (1.0 + std::exp(-double(x[i]))));
}

/// \brief x = gelu(x) = x/2 · (1 + erf(x/√2)), in double.
/// \param x data [n], in place
/// \param n number of elements
inline void gelu(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = float(0.5 * double(x[i]) * (1.0 + std::erf(double(x[i]) / std::sqrt(2.0))));
}

/// \brief out[r, i] = silu(in[r, i]) · in[r, inter + i] in double, silu(g) = g / (1 + e^-g).
/// \param in     [rows, ld_in], gate half then up half
/// \param ld_in  row stride of in
/// \param out    [rows, ld_out]; columns past inter are not written
/// \param ld_out row stride of out
/// \param rows   number of rows
/// \param inter  width of each half
inline void silu_mul(const float* in, std::int64_t ld_in, float* out, std::int64_t ld_out, std::int64_t rows,
                     std::int64_t inter) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < inter; ++i) {
      const double g = in[r * ld_in + i], u = in[r * ld_in + inter + i];
      out[r * ld_out + i] = float(g / (1.0 + std::exp(-g)) * u);
    }
}

/// \brief out[i, :] = table[ids[i], :] · scale (one fp32 product per element).
/// \param table [vocab, dim]
/// \param vocab rows of table (ids must be in range)
/// \param dim   columns
/// \param ids   token ids [n]
/// \param n     number of tokens
/// \param scale factor
/// \param out   output [n, dim]
inline void embedding(const float* table, std::int64_t vocab, std::int64_t dim, const std::int32_t* ids,
                      std::int64_t n, float scale, float* out) {
  (void)vocab;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t t = 0; t < dim; ++t) out[i * dim + t] = table[std::int64_t(ids[i]) * dim + t] * scale;
}

}  // namespace ref
}  // namespace muninn
