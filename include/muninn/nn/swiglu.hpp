#pragma once
/// \file
/// \brief The one SwiGLU MLP of the library: y = down(silu(gate(x)) ⊙ up(x)), used by every
/// family's feed-forward layer (Huginn, Llama, MoR), TRM / HRM's feature and token MLPs, and
/// CALM's autoencoder layers and energy-head blocks.

#include <cstdint>

#include "muninn/nn/linear.hpp"
#include "muninn/nn/residual.hpp"
#include "muninn/ops/ops.hpp"

namespace muninn::nn {

/// \brief A SwiGLU MLP's parameters on the backend: gate and up fused as the rows of one matrix
/// (gate first, as Huginn's `fc` and the loaders' fused Llama `gate_proj; up_proj`), and down.
/// \tparam W the matrices' handle: a pointer to T, or on the host a weight_view (bf16 / q8 weights)
template <class T, class W = const T*>
struct swiglu {
  W gate_up{};                      ///< [2·inter, width]: the gate rows, then the up rows
  W down{};                         ///< [width, inter]
  std::int64_t width = 0;           ///< input and output width
  std::int64_t inter = 0;           ///< inner width I
  const T* gate_up_bias = nullptr;  ///< [2·inter], or null (Llama `mlp_bias`, CALM's energy head)
  const T* down_bias = nullptr;     ///< [width], or null

  /// \brief out[rows, width] = (or +=, with residual::add) down(silu(gate(in)) ⊙ up(in)).
  /// \param be   the backend the parameters and rows live on
  /// \param in   [rows, width]; may be `out` (it is read only by the first GEMM)
  /// \param rows rows of `in` and `out`
  /// \param out  [rows, width]
  /// \param r    residual::add accumulates into `out`, residual::none overwrites it
  /// \param gu   scratch [rows, 2·inter]
  /// \param act  scratch [rows, inter]
  template <class Backend>
  void operator()(const Backend& be, const T* in, std::int64_t rows, T* out, residual r, T* gu, T* act) const {
    linear_gemm(be, rows, 2 * inter, width, 1.0f, in, width, gate_up, width, 0.0f, gu, 2 * inter);
    if (gate_up_bias) add_bias_rows(be, gu, 2 * inter, gate_up_bias, rows, 2 * inter);
    silu_mul(be, gu, 2 * inter, act, inter, rows, inter);
    linear_gemm(be, rows, width, inter, 1.0f, act, inter, down, inter, r == residual::add ? 1.0f : 0.0f, out, width);
    if (down_bias) add_bias_rows(be, out, width, down_bias, rows, width);
  }
};

}  // namespace muninn::nn
