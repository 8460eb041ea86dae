#pragma once
/// \file
/// \brief Element-wise host ops: add, scale, GELU, SiLU, and the gated MLP's SiLU-and-multiply.

#include <algorithm>
#include <cstdint>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/math.hpp"
#include "muninn/ops/simd.hpp"

namespace muninn {
namespace detail {
inline namespace MUNINN_SIMD_ABI {

/// \brief silu(g) · u = g · u / (1 + e^-g), lane-wise.
MUNINN_INLINE vfloat vsilu_mul(vfloat g, vfloat u) { return g * u / (1.0f + vexp(-g)); }

/// \brief Elements per thread chunk of the streaming element-wise ops.
inline constexpr std::int64_t elementwise_grain = 1 << 16;

}  // namespace MUNINN_SIMD_ABI
}  // namespace detail

/// \brief x = gelu(x) in place (the erf form, detail::gelu_erf).
/// \param be the host backend
/// \param x  values [n]
/// \param n  number of elements
inline void gelu(const host_backend& be, float* x, std::int64_t n) {
  MUNINN_CHECK(n >= 0, "gelu: negative size ", n);
  be.parallel_for(n, detail::elementwise_grain, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t i = s; i < e; ++i) x[i] = detail::gelu_erf(x[i]);
  });
}

/// \brief x = silu(x) in place (detail::silu: x / (1 + e^-x)); CALM's compressor and energy head.
/// \param be the host backend
/// \param x  values [n]
/// \param n  number of elements
inline void silu(const host_backend& be, float* x, std::int64_t n) {
  MUNINN_CHECK(n >= 0, "silu: negative size ", n);
  be.parallel_for(n, detail::elementwise_grain, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t i = s; i < e; ++i) x[i] = detail::silu(x[i]);
  });
}

/// \brief y = a + b element-wise.
/// \param be the host backend
/// \param a  first input [n]
/// \param b  second input [n]
/// \param y  output [n]; may alias a or b
/// \param n  number of elements
inline void add(const host_backend& be, const float* a, const float* b, float* y, std::int64_t n) {
  MUNINN_CHECK(n >= 0, "add: negative size ", n);
  be.parallel_for(n, detail::elementwise_grain, [&](std::int64_t s, std::int64_t e) {
    constexpr int W = detail::simd_width;
    std::int64_t i = s;
    for (; i + W <= e; i += W) detail::vstore(y + i, detail::vload(a + i) + detail::vload(b + i));
    for (; i < e; ++i) y[i] = a[i] + b[i];
  });
}

/// \brief x *= s in place.
/// \param be the host backend
/// \param x  data [n], scaled in place
/// \param s  factor
/// \param n  number of elements
inline void scale(const host_backend& be, float* x, float s, std::int64_t n) {
  MUNINN_CHECK(n >= 0, "scale: negative size ", n);
  be.parallel_for(n, detail::elementwise_grain, [&](std::int64_t b, std::int64_t e) {
    constexpr int W = detail::simd_width;
    std::int64_t i = b;
    for (; i + W <= e; i += W) detail::vstore(x + i, detail::vload(x + i) * s);
    for (; i < e; ++i) x[i] *= s;
  });
}

/// \brief out[r, i] = silu(in[r, i]) · in[r, inter + i] for i < inter (gate = first half).
///
/// This is Huginn's GatedMLP: `a, b = fc(x).chunk(2, -1); y = silu(a) * b`. e^x uses a
/// polynomial accurate to about 1 ulp, so results agree with std::exp to a few ulp.
/// \param be     the host backend
/// \param in     fused fc output [rows, ld_in] with ld_in >= 2·inter
/// \param ld_in  row stride of in
/// \param out    output [rows, ld_out] with ld_out >= inter; may alias in (the gate half) when
///               ld_out == ld_in
/// \param ld_out row stride of out
/// \param rows   number of rows
/// \param inter  intermediate size (width of each half)
inline void silu_mul(const host_backend& be, const float* in, std::int64_t ld_in, float* out, std::int64_t ld_out,
                     std::int64_t rows, std::int64_t inter) {
  MUNINN_CHECK(rows >= 0 && inter >= 0 && ld_in >= 2 * inter && ld_out >= inter, "silu_mul: bad shape rows=", rows,
               " inter=", inter, " ld_in=", ld_in, " ld_out=", ld_out);
  if (rows == 0 || inter == 0) return;
  const auto row = [&](std::int64_t r, std::int64_t b, std::int64_t e) {
    constexpr int W = detail::simd_width;
    const float* g = in + r * ld_in;
    const float* u = g + inter;
    float* o = out + r * ld_out;
    std::int64_t i = b;
    for (; i + W <= e; i += W) detail::vstore(o + i, detail::vsilu_mul(detail::vload(g + i), detail::vload(u + i)));
    for (; i < e; ++i) o[i] = g[i] * u[i] / (1.0f + detail::sexp(-g[i]));
  };
  if (rows == 1) {
    // Decode: one long row, split it.
    be.parallel_for(inter, detail::elementwise_grain / 4, [&](std::int64_t b, std::int64_t e) { row(0, b, e); });
  } else {
    be.parallel_for(rows, std::max<std::int64_t>(1, detail::elementwise_grain / 4 / inter),
                    [&](std::int64_t b, std::int64_t e) {
                      for (std::int64_t r = b; r < e; ++r) row(r, 0, inter);
                    });
  }
}

}  // namespace muninn
