#pragma once
/// \file
/// \brief Row-wise softmax and log-softmax (fp32, max-subtracted), argmax, and the per-row
/// statistics of recurrent-depth exit tests: KL divergence and entropy (double accumulation).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/math.hpp"
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

namespace detail {

/// \brief Largest element of x[0, n) in double; NaNs are skipped (−inf when nothing else).
inline double max_of(const float* x, std::int64_t n) {
  double m = -INFINITY;
  for (std::int64_t i = 0; i < n; ++i) m = double(x[i]) > m ? double(x[i]) : m;
  return m;
}

/// \brief Rows per thread chunk of the statistics ops (a vocabulary row is long).
inline std::int64_t stats_grain(std::int64_t cols) { return std::max<std::int64_t>(1, 16384 / cols); }

/// \brief KL(softmax(a) ‖ softmax(b)) of one row in double (see detail::kl_accumulate).
inline double kl_row(const float* a, const float* b, std::int64_t n) {
  const double ma = max_of(a, n), mb = max_of(b, n), dm = ma - mb;
  double sa = 0.0, tu = 0.0, tw = 0.0;
  for (std::int64_t c = 0; c < n; ++c) {
    const double ea = std::exp(double(a[c]) - ma), eb = std::exp(double(b[c]) - mb);
    sa += ea;
    kl_accumulate<double>(ea, eb, (double(b[c]) - double(a[c])) + dm, tu, tw);
  }
  return kl_finish(sa, tu, tw);
}

/// \brief Entropy of softmax(x) for one row in double (see detail::entropy_term).
inline double entropy_row(const float* x, std::int64_t n) {
  const double m = max_of(x, n);
  double s = 0.0, t = 0.0;
  for (std::int64_t c = 0; c < n; ++c) {
    const double z = double(x[c]) - m, e = std::exp(z);
    s += e;
    t += entropy_term<double>(e, z);
  }
  return entropy_finish(t, s);
}

}  // namespace detail

/// \brief out[r] = KL(softmax(logits_prev[r]) ‖ softmax(logits[r])), from logits, in double.
///
/// Formed from the logit differences u = log q − log p + const and expm1(u) (see
/// detail::kl_accumulate, the CUDA kernel's formula too), so two close distributions keep their
/// small KL instead of the rounding noise of two subtracted log-probabilities. Terms with
/// p = 0 count as 0, q = 0 where p > 0 gives +inf; each row needs a finite logit. The exit test
/// of recurrent-depth models compares consecutive steps' next-token distributions with it.
/// \param be          the host backend
/// \param logits_prev previous step's logits [rows, cols], contiguous
/// \param logits      this step's logits [rows, cols]
/// \param rows        number of rows
/// \param cols        elements per row, >= 1
/// \param out         KL per row [rows]
inline void kl_rows(const host_backend& be, const float* logits_prev, const float* logits, std::int64_t rows,
                    std::int64_t cols, float* out) {
  MUNINN_CHECK(rows >= 0 && cols > 0, "kl_rows: bad shape rows=", rows, " cols=", cols);
  be.parallel_for(rows, detail::stats_grain(cols), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) out[r] = float(detail::kl_row(logits_prev + r * cols, logits + r * cols, cols));
  });
}

/// \brief out[r] = −Σ_c p_c log p_c with p = softmax(logits[r]), in double (natural log).
///
/// log s − t / s with s = Σ e^(x − max), t = Σ e^(x − max) · (x − max) (detail::entropy_term).
/// The exact entropy: no epsilon inside the log (Huginn's reference adds 1e-10 to p, which
/// shifts the value by at most about cols · 1e-10). Terms with logit −inf count as 0; each row
/// needs a finite logit.
/// \param be     the host backend
/// \param logits logits [rows, cols], contiguous
/// \param rows   number of rows
/// \param cols   elements per row, >= 1
/// \param out    entropy per row [rows]
inline void entropy_rows(const host_backend& be, const float* logits, std::int64_t rows, std::int64_t cols,
                         float* out) {
  MUNINN_CHECK(rows >= 0 && cols > 0, "entropy_rows: bad shape rows=", rows, " cols=", cols);
  be.parallel_for(rows, detail::stats_grain(cols), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) out[r] = float(detail::entropy_row(logits + r * cols, cols));
  });
}

/// \brief out[r] = KL(p_prev ‖ p) = Σ_c p_prev · (log p_prev − log p) per row, from
/// log-probabilities, in double (the host twin of the CUDA kl_div_rows).
///
/// Terms with log p_prev = −inf count as 0.
/// \param be        the host backend
/// \param logp_prev log-probabilities of the previous step [rows, cols]
/// \param logp      log-probabilities of this step [rows, cols]
/// \param out       output [rows]
/// \param rows      number of rows
/// \param cols      elements per row, >= 1
inline void kl_div_rows(const host_backend& be, const float* logp_prev, const float* logp, float* out,
                        std::int64_t rows, std::int64_t cols) {
  MUNINN_CHECK(rows >= 0 && cols > 0, "kl_div_rows: bad shape rows=", rows, " cols=", cols);
  be.parallel_for(rows, detail::stats_grain(cols), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      double s = 0.0;
      for (std::int64_t c = 0; c < cols; ++c) {
        const double a = logp_prev[r * cols + c];
        if (a != -INFINITY) s += std::exp(a) * (a - double(logp[r * cols + c]));
      }
      out[r] = float(s);
    }
  });
}

}  // namespace muninn
