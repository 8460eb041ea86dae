#pragma once
/// \file
/// \brief The norms every family uses, as layers over stacked rows: RMSNorm with a weight
/// (Huginn, Llama, MoR, CALM's autoencoder) or without one (TRM / HRM's post-norm), and
/// LayerNorm with a weight and a bias (CALM's compressor and energy head).
///
/// A norm names its parameters and sizes once; the arithmetic is the backend's op (`rmsnorm`,
/// `add_rmsnorm`, `layernorm`, ops/norm.hpp), so host and CUDA normalise alike.

#include <cstdint>

#include "muninn/ops/ops.hpp"

namespace muninn::nn {

/// \brief RMSNorm over rows of `width` values: y = x / √(mean(x²) + eps) · weight.
template <class T>
struct rms_norm {
  const T* weight = nullptr;  ///< [width] on the backend; null: weightless (no scale)
  std::int64_t width = 0;     ///< values per row
  float eps = 1e-6f;          ///< epsilon inside the root

  /// \brief y[rows, width] = RMSNorm(x); y may be x.
  template <class Backend>
  void operator()(const Backend& be, const T* x, T* y, std::int64_t rows) const {
    rmsnorm(be, x, weight, y, rows, width, eps);
  }
  /// \brief x = RMSNorm(r + x): a residual sum normalised (a post-norm, Huginn's sandwich).
  template <class Backend>
  void add(const Backend& be, const T* r, T* x, std::int64_t rows) const {
    add_rmsnorm(be, r, x, weight, x, rows, width, eps);
  }
};

/// \brief LayerNorm over rows of `width` values: y = (x − mean) / √(var + eps) · weight + bias.
template <class T>
struct layer_norm {
  const T* weight = nullptr;  ///< [width] on the backend
  const T* bias = nullptr;    ///< [width] on the backend
  std::int64_t width = 0;     ///< values per row
  float eps = 1e-6f;          ///< epsilon inside the root

  /// \brief y[rows, width] = LayerNorm(x); y may be x.
  template <class Backend>
  void operator()(const Backend& be, const T* x, T* y, std::int64_t rows) const {
    layernorm(be, x, weight, bias, y, rows, width, eps);
  }
};

}  // namespace muninn::nn
