#pragma once
/// \file
/// \brief Reference row statistics: softmax, log-softmax, arg-max, top-k, KL, entropy, in double.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace muninn {
namespace ref {

/// \brief log Σ e^x over one row in double (max-subtracted; NaNs skipped).
/// \param x row [n]
/// \param n elements
inline double log_sum_exp(const float* x, std::int64_t n) {
  double m = -INFINITY;
  for (std::int64_t i = 0; i < n; ++i)
    if (double(x[i]) > m) m = x[i];
  double s = 0.0;
  for (std::int64_t i = 0; i < n; ++i) s += std::exp(double(x[i]) - m);
  return m + std::log(s);
}

/// \brief y[r, :] = softmax(x[r, :]) in double.
/// \param x    [rows, cols]
/// \param y    output [rows, cols]
/// \param rows number of rows
/// \param cols elements per row
inline void softmax_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const double lse = log_sum_exp(x + r * cols, cols);
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = float(std::exp(double(x[r * cols + c]) - lse));
  }
}

/// \brief y[r, :] = log_softmax(x[r, :]) in double.
/// \param x    [rows, cols]
/// \param y    output [rows, cols]
/// \param rows number of rows
/// \param cols elements per row
inline void log_softmax_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const double lse = log_sum_exp(x + r * cols, cols);
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = float(double(x[r * cols + c]) - lse);
  }
}

/// \brief Index of the first largest element of x[0, n), NaNs ignored; 0 when all are NaN.
/// \param x data [n]
/// \param n elements, >= 1
inline std::int64_t argmax(const float* x, std::int64_t n) {
  std::int64_t best = -1;
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isnan(x[i]) && (best < 0 || x[i] > x[best])) best = i;
  return best < 0 ? 0 : best;
}

/// \brief out[r] = argmax of row r.
/// \param x    [rows, cols]
/// \param rows number of rows
/// \param cols elements per row
/// \param out  [rows]
inline void argmax_rows(const float* x, std::int64_t rows, std::int64_t cols, std::int32_t* out) {
  for (std::int64_t r = 0; r < rows; ++r) out[r] = std::int32_t(argmax(x + r * cols, cols));
}

/// \brief The k largest of each row, largest first; ties by ascending index; NaN ranks and is
/// reported as −inf, −0 as +0 (the ops' documented order).
/// \param x    [rows, cols]
/// \param rows number of rows
/// \param cols elements per row
/// \param k    how many per row
/// \param vals [rows, k]
/// \param idx  [rows, k]
inline void topk_rows(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t k, float* vals,
                      std::int32_t* idx) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<float> v(x + r * cols, x + (r + 1) * cols);
    for (float& e : v) e = std::isnan(e) ? -INFINITY : (e == 0.0f ? 0.0f : e);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return v[a] > v[b]; });
    for (std::int64_t i = 0; i < k; ++i) {
      idx[r * k + i] = order[std::size_t(i)];
      vals[r * k + i] = v[std::size_t(order[std::size_t(i)])];
    }
  }
}

/// \brief out[r] = KL(softmax(prev[r]) ‖ softmax(cur[r])) = Σ p (log p − log q), in double.
/// \param prev [rows, cols] logits of p
/// \param cur  [rows, cols] logits of q
/// \param rows number of rows
/// \param cols elements per row
/// \param out  [rows]
inline void kl_rows(const float* prev, const float* cur, std::int64_t rows, std::int64_t cols, float* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const double la = log_sum_exp(prev + r * cols, cols), lb = log_sum_exp(cur + r * cols, cols);
    double kl = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const double lp = double(prev[r * cols + c]) - la, lq = double(cur[r * cols + c]) - lb;
      if (lp != -INFINITY) kl += std::exp(lp) * (lp - lq);
    }
    out[r] = float(kl);
  }
}

/// \brief out[r] = −Σ p log p of p = softmax(x[r]), in double.
/// \param x    [rows, cols] logits
/// \param rows number of rows
/// \param cols elements per row
/// \param out  [rows]
inline void entropy_rows(const float* x, std::int64_t rows, std::int64_t cols, float* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const double lse = log_sum_exp(x + r * cols, cols);
    double h = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const double lp = double(x[r * cols + c]) - lse;
      if (lp != -INFINITY) h -= std::exp(lp) * lp;
    }
    out[r] = float(h);
  }
}

/// \brief out[r] = Σ_c e^(a) · (a − b) over log-probabilities a = logp_prev, b = logp (terms with
/// a = −inf are 0), in double.
/// \param logp_prev [rows, cols]
/// \param logp      [rows, cols]
/// \param out       [rows]
/// \param rows      number of rows
/// \param cols      elements per row
inline void kl_div_rows(const float* logp_prev, const float* logp, float* out, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const double a = logp_prev[r * cols + c];
      if (a != -INFINITY) s += std::exp(a) * (a - double(logp[r * cols + c]));
    }
    out[r] = float(s);
  }
}

}  // namespace ref
}  // namespace muninn
