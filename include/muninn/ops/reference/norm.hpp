#pragma once
/// \file
/// \brief Reference norms: RMSNorm, residual-add + RMSNorm, LayerNorm, in double.

#include <cmath>
#include <cstdint>

namespace muninn {
namespace ref {

/// \brief y[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) · w, statistics in double.
/// \param x    [rows, cols]
/// \param w    [cols], or nullptr for no weight
/// \param y    output [rows, cols] (may alias x)
/// \param rows number of rows
/// \param cols elements per row
/// \param eps  added to the mean square
inline void rmsnorm(const float* x, const float* w, float* y, std::int64_t rows, std::int64_t cols, float eps) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double ss = 0.0;
    for (std::int64_t i = 0; i < cols; ++i) ss += double(xr[i]) * double(xr[i]);
    const double inv = 1.0 / std::sqrt(ss / double(cols) + double(eps));
    for (std::int64_t i = 0; i < cols; ++i) y[r * cols + i] = float(double(xr[i]) * inv * (w ? double(w[i]) : 1.0));
  }
}

/// \brief y = rmsnorm(a + b) · w, where the sum a + b is taken in fp32 first (as the model does).
/// \param a    [rows, cols]
/// \param b    [rows, cols]
/// \param w    [cols], or nullptr for no weight
/// \param y    output [rows, cols] (may alias a or b)
/// \param rows number of rows
/// \param cols elements per row
/// \param eps  added to the mean square
inline void add_rmsnorm(const float* a, const float* b, const float* w, float* y, std::int64_t rows,
                        std::int64_t cols, float eps) {
  for (std::int64_t i = 0; i < rows * cols; ++i) y[i] = a[i] + b[i];
  rmsnorm(y, w, y, rows, cols, eps);
}

/// \brief y[r, :] = (x[r, :] − mean) / sqrt(var + eps) · w + b with the biased variance, in double
/// (torch.nn.LayerNorm).
/// \param x      [rows, cols]
/// \param weight [cols], or nullptr for 1
/// \param bias   [cols], or nullptr for 0
/// \param y      output [rows, cols] (may alias x)
/// \param rows   number of rows
/// \param cols   elements per row
/// \param eps    added to the variance
inline void layernorm(const float* x, const float* weight, const float* bias, float* y, std::int64_t rows,
                      std::int64_t cols, float eps) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double mean = 0.0;
    for (std::int64_t i = 0; i < cols; ++i) mean += xr[i];
    mean /= double(cols);
    double var = 0.0;
    for (std::int64_t i = 0; i < cols; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= double(cols);
    const double rstd = 1.0 / std::sqrt(var + double(eps));
    for (std::int64_t i = 0; i < cols; ++i)
      y[r * cols + i] = float((xr[i] - mean) * rstd * (weight ? double(weight[i]) : 1.0) + (bias ? double(bias[i]) : 0.0));
  }
}

}  // namespace ref
}  // namespace muninn
