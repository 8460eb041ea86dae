#pragma once
/// \file
/// \brief The small layers CALM is built from — Linear with bias, the autoencoder's residual
/// SwiGLU layer (nn::rms_norm, nn::swiglu) — and a scratch arena that grows to the largest call
/// and is then reused (nothing is allocated per decode step once warm).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "muninn/families/calm/weights.hpp"
#include "muninn/nn/norm.hpp"
#include "muninn/nn/swiglu.hpp"
#include "muninn/ops/ops.hpp"

namespace muninn {

/// \brief Scratch buffers on a backend, each kept at the largest size asked of it.
template <class Backend, class T>
class calm_scratch {
 public:
  /// \brief Buffer `slot` with room for at least `n` elements (reallocated only to grow).
  T* get(const Backend& be, std::size_t slot, std::size_t n) {
    if (slot >= bufs_.size()) bufs_.resize(slot + 1);
    if (bufs_[slot].size() < n) bufs_[slot] = be.template alloc<T>(n);
    return bufs_[slot].data();
  }
  /// \brief Int32 buffer `slot` (a separate set of slots) with room for `n` elements.
  std::int32_t* ids(const Backend& be, std::size_t slot, std::size_t n) {
    if (slot >= ids_.size()) ids_.resize(slot + 1);
    if (ids_[slot].size() < n) ids_[slot] = be.template alloc<std::int32_t>(n);
    return ids_[slot].data();
  }
 private:
  std::vector<typename Backend::template buffer<T>> bufs_;
  std::vector<typename Backend::template buffer<std::int32_t>> ids_;
};

/// \brief y[rows, out] = x[rows, in] · Wᵀ + b (x and y must not alias).
/// \param be the backend
/// \param l  the layer
/// \param x  input [rows, l.in]
/// \param rows number of rows
/// \param y  output [rows, l.out]
template <class Backend, class T>
void linear_forward(const Backend& be, const linear_weights<Backend, T>& l, const T* x, std::int64_t rows, T* y) {
  gemm_nt(be, rows, l.out, l.in, 1.0f, x, l.in, l.w.data(), l.in, 0.0f, y, l.out);
  add_bias_rows(be, y, l.out, l.b.data(), rows, l.out);
}

/// \brief x += down(silu(gate(n)) · up(n)), n = RMSNorm(x): one autoencoder layer on [rows, H].
/// \param be   the backend
/// \param w    the layer's weights
/// \param x    rows [rows, H], updated in place
/// \param rows number of rows
/// \param H    width
/// \param I    SwiGLU width
/// \param eps  RMSNorm epsilon
/// \param t    scratch [rows, H]
/// \param gu   scratch [rows, 2I]
/// \param a    scratch [rows, I]
template <class Backend, class T>
void ae_layer_forward(const Backend& be, const ae_layer_weights<Backend, T>& w, T* x, std::int64_t rows,
                      std::int64_t H, std::int64_t I, float eps, T* t, T* gu, T* a) {
  nn::rms_norm<T>{w.norm.data(), H, eps}(be, x, t, rows);
  nn::swiglu<T>{w.gate_up.data(), w.down.data(), H, I}(be, t, rows, x, nn::residual::add, gu, a);
}

}  // namespace muninn
