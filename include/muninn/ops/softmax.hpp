#pragma once
/// \file
/// \brief Row-wise softmax and log-softmax (fp32, max-subtracted) and argmax.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/simd.hpp"

namespace muninn {
namespace detail {
inline namespace MUNINN_SIMD_ABI {

/// \brief Largest element of x[0, n), ignoring NaNs (−inf when there is nothing else).
MUNINN_INLINE float row_max(const float* x, std::int64_t n) {
  constexpr int W = simd_width;
  // Written as "take the new value if it is larger" so that a NaN never replaces the running max.
  const auto take = [](vfloat run, vfloat v) { return v > run ? v : run; };
  const float ninf = -std::numeric_limits<float>::infinity();
  vfloat a = vset1(ninf), b = a;
  std::int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    a = take(a, vload(x + i));
    b = take(b, vload(x + i + W));
  }
  for (; i + W <= n; i += W) a = take(a, vload(x + i));
  float m = hmax(take(a, b));
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

/// \brief y[i] = e^(x[i] − m) for i < n, returning the sum of the y (y may alias x).
MUNINN_INLINE float exp_shifted(const float* x, float m, float* y, std::int64_t n) {
  constexpr int W = simd_width;
  vfloat acc{};
  std::int64_t i = 0;
  for (; i + W <= n; i += W) {
    const vfloat e = vexp(vload(x + i) - m);
    vstore(y + i, e);
    acc += e;
  }
  float s = hsum(acc);
  for (; i < n; ++i) {
    y[i] = sexp(x[i] - m);
    s += y[i];
  }
  return s;
}

/// \brief Sum of e^(x[i] − m) for i < n without storing the terms.
MUNINN_INLINE float sum_exp_shifted(const float* x, float m, std::int64_t n) {
  constexpr int W = simd_width;
  vfloat acc{};
  std::int64_t i = 0;
  for (; i + W <= n; i += W) acc += vexp(vload(x + i) - m);
  float s = hsum(acc);
  for (; i < n; ++i) s += sexp(x[i] - m);
  return s;
}

}  // namespace MUNINN_SIMD_ABI
}  // namespace detail

/// \brief y[r, :] = softmax(x[r, :]) in fp32 with the row maximum subtracted.
/// \param be   the host backend
/// \param x    input [rows, cols], contiguous
/// \param y    output [rows, cols]; may alias x
/// \param rows number of rows
/// \param cols elements per row, >= 1
inline void softmax_rows(const host_backend& be, const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  MUNINN_CHECK(rows >= 0 && cols > 0, "softmax_rows: bad shape rows=", rows, " cols=", cols);
  be.parallel_for(rows, std::max<std::int64_t>(1, 8192 / cols), [&](std::int64_t b, std::int64_t e) {
    constexpr int W = detail::simd_width;
    for (std::int64_t r = b; r < e; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      const float m = detail::row_max(xr, cols);
      const float inv = 1.0f / detail::exp_shifted(xr, m, yr, cols);
      std::int64_t i = 0;
      for (; i + W <= cols; i += W) detail::vstore(yr + i, detail::vload(yr + i) * inv);
      for (; i < cols; ++i) yr[i] *= inv;
    }
  });
}

/// \brief y[r, :] = log_softmax(x[r, :]) = x − max − log(sum(e^(x − max))), in fp32.
/// \param be   the host backend
/// \param x    input [rows, cols], contiguous
/// \param y    output [rows, cols]; may alias x
/// \param rows number of rows
/// \param cols elements per row, >= 1
inline void log_softmax_rows(const host_backend& be, const float* x, float* y, std::int64_t rows,
                             std::int64_t cols) {
  MUNINN_CHECK(rows >= 0 && cols > 0, "log_softmax_rows: bad shape rows=", rows, " cols=", cols);
  be.parallel_for(rows, std::max<std::int64_t>(1, 8192 / cols), [&](std::int64_t b, std::int64_t e) {
    constexpr int W = detail::simd_width;
    for (std::int64_t r = b; r < e; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      const float m = detail::row_max(xr, cols);
      // (x − m) first: it is exact near the maximum, where folding m into log(sum) would round
      // a large shift to the ulp of |m|.
      const float lse = std::log(detail::sum_exp_shifted(xr, m, cols));
      std::int64_t i = 0;
      for (; i + W <= cols; i += W) detail::vstore(yr + i, (detail::vload(xr + i) - m) - lse);
      for (; i < cols; ++i) yr[i] = (xr[i] - m) - lse;
    }
  });
}

/// \brief Index of the largest element of x[0, n); the first one when several are equal.
///
/// NaNs are ignored; an all-NaN input gives 0.
/// \param be the host backend (unused: one pass over a vocab row is too short to share)
/// \param x  data [n]
/// \param n  number of elements, >= 1
inline std::int64_t argmax(const host_backend& be, const float* x, std::int64_t n) {
  (void)be;
  MUNINN_CHECK(n > 0, "argmax: empty input");
  // The vectorised max finds the value; a scan then finds its first index.
  const float m = detail::row_max(x, n);
  for (std::int64_t i = 0; i < n; ++i)
    if (x[i] == m) return i;
  return 0;
}

}  // namespace muninn
