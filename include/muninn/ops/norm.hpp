#pragma once
/// \file
/// \brief RMSNorm (Llama style, as Huginn's RMSNorm_llama), the fused residual-add + RMSNorm, and
/// LayerNorm.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/math.hpp"
#include "muninn/ops/simd.hpp"

namespace muninn {
namespace detail {
inline namespace MUNINN_SIMD_ABI {

/// \brief Sum of squares of x[0, n) in fp32, with four vector accumulators for throughput.
MUNINN_INLINE float sum_squares(const float* x, std::int64_t n) {
  constexpr int W = simd_width;
  vfloat s0{}, s1{}, s2{}, s3{};
  std::int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    const vfloat a = vload(x + i), b = vload(x + i + W), c = vload(x + i + 2 * W), d = vload(x + i + 3 * W);
    s0 += a * a;
    s1 += b * b;
    s2 += c * c;
    s3 += d * d;
  }
  for (; i + W <= n; i += W) {
    const vfloat a = vload(x + i);
    s0 += a * a;
  }
  float s = hsum((s0 + s1) + (s2 + s3));
  for (; i < n; ++i) s += x[i] * x[i];
  return s;
}

/// \brief y = (x · r) · w for one row; the order of the two products follows Huginn's fp32 path.
/// A null w is the weightless norm, y = x · r.
MUNINN_INLINE void scale_by_weight(const float* x, float r, const float* w, float* y, std::int64_t n) {
  constexpr int W = simd_width;
  std::int64_t i = 0;
  if (!w) {
    for (; i + W <= n; i += W) vstore(y + i, vload(x + i) * r);
    for (; i < n; ++i) y[i] = x[i] * r;
    return;
  }
  for (; i + W <= n; i += W) vstore(y + i, (vload(x + i) * r) * vload(w + i));
  for (; i < n; ++i) y[i] = (x[i] * r) * w[i];
}

/// \brief Σ x[i] and Σ (x[i] − shift)² of x[0, n) in fp32 with vector accumulators.
///
/// LayerNorm calls it twice: shift = 0 for the mean, then shift = mean for the variance (two
/// passes, so a large mean does not cancel the variance away).
MUNINN_INLINE void sum_and_squares(const float* x, float shift, std::int64_t n, float& sum, float& sq) {
  constexpr int W = simd_width;
  vfloat s0{}, s1{}, q0{}, q1{};
  const vfloat sh = vset1(shift);
  std::int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const vfloat a = vload(x + i) - sh, b = vload(x + i + W) - sh;
    s0 += a;
    s1 += b;
    q0 += a * a;
    q1 += b * b;
  }
  for (; i + W <= n; i += W) {
    const vfloat a = vload(x + i) - sh;
    s0 += a;
    q0 += a * a;
  }
  sum = hsum(s0 + s1);
  sq = hsum(q0 + q1);
  for (; i < n; ++i) {
    const float a = x[i] - shift;
    sum += a;
    sq += a * a;
  }
}

/// \brief Rows per thread chunk such that a chunk holds about 32k elements.
inline std::int64_t row_grain(std::int64_t cols) { return std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(cols, 1)); }

}  // namespace MUNINN_SIMD_ABI
}  // namespace detail

/// \brief y[r,:] = x[r,:] · rsqrt(mean(x[r,:]²) + eps) · w, statistics in fp32.
/// \param be   the host backend
/// \param x    input [rows, cols], contiguous
/// \param w    weight [cols], or nullptr for a weightless norm (y = x · rsqrt(...))
/// \param y    output [rows, cols]; may alias x
/// \param rows number of rows
/// \param cols elements per row
/// \param eps  added to the mean square (Huginn: 1e-6)
inline void rmsnorm(const host_backend& be, const float* x, const float* w, float* y, std::int64_t rows,
                    std::int64_t cols, float eps) {
  MUNINN_CHECK(rows >= 0 && cols > 0, "rmsnorm: bad shape rows=", rows, " cols=", cols);
  be.parallel_for(rows, detail::row_grain(cols), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const float* xr = x + r * cols;
      const float inv = detail::rms_inverse(detail::sum_squares(xr, cols), cols, eps);
      detail::scale_by_weight(xr, inv, w, y + r * cols, cols);
    }
  });
}

/// \brief y = rmsnorm(a + b) · w: the sandwich block's residual add fused with its post-norm.
/// \param be   the host backend
/// \param a    first summand [rows, cols]
/// \param b    second summand [rows, cols]
/// \param w    weight [cols], or nullptr for a weightless norm
/// \param y    output [rows, cols]; may alias a or b
/// \param rows number of rows
/// \param cols elements per row
/// \param eps  added to the mean square
inline void add_rmsnorm(const host_backend& be, const float* a, const float* b, const float* w, float* y,
                        std::int64_t rows, std::int64_t cols, float eps) {
  MUNINN_CHECK(rows >= 0 && cols > 0, "add_rmsnorm: bad shape rows=", rows, " cols=", cols);
  be.parallel_for(rows, detail::row_grain(cols), [&](std::int64_t rb, std::int64_t re) {
    constexpr int W = detail::simd_width;
    for (std::int64_t r = rb; r < re; ++r) {
      const float* ar = a + r * cols;
      const float* br = b + r * cols;
      float* yr = y + r * cols;
      // The sum goes to y first (element-wise, so aliasing is safe); the row is then hot in L1.
      std::int64_t i = 0;
      for (; i + W <= cols; i += W) detail::vstore(yr + i, detail::vload(ar + i) + detail::vload(br + i));
      for (; i < cols; ++i) yr[i] = ar[i] + br[i];
      const float inv = detail::rms_inverse(detail::sum_squares(yr, cols), cols, eps);
      detail::scale_by_weight(yr, inv, w, yr, cols);
    }
  });
}

/// \brief y[r,:] = (x[r,:] − mean) / sqrt(var + eps) · weight + bias, as torch.nn.LayerNorm.
///
/// Mean and the biased variance (divided by cols) over each row in fp32, in two passes; the
/// element formula is detail::layernorm_element, shared with the CUDA kernel.
/// \param be     the host backend
/// \param x      input [rows, cols], contiguous
/// \param weight [cols], or nullptr for no affine scale
/// \param bias   [cols], or nullptr for no affine shift
/// \param y      output [rows, cols]; may alias x
/// \param rows   number of rows
/// \param cols   elements per row, >= 1
/// \param eps    added to the variance (torch's default: 1e-5)
inline void layernorm(const host_backend& be, const float* x, const float* weight, const float* bias, float* y,
                      std::int64_t rows, std::int64_t cols, float eps) {
  MUNINN_CHECK(rows >= 0 && cols > 0, "layernorm: bad shape rows=", rows, " cols=", cols);
  be.parallel_for(rows, detail::row_grain(cols), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      float sum = 0.0f, sq = 0.0f;
      detail::sum_and_squares(xr, 0.0f, cols, sum, sq);
      const float mean = sum / float(cols);
      detail::sum_and_squares(xr, mean, cols, sum, sq);
      const float rstd = detail::rms_inverse(sq, cols, eps);  // 1 / sqrt(var + eps)
      for (std::int64_t i = 0; i < cols; ++i)
        yr[i] = detail::layernorm_element(xr[i], mean, rstd, weight ? weight[i] : 1.0f, bias ? bias[i] : 0.0f);
    }
  });
}

}  // namespace muninn
