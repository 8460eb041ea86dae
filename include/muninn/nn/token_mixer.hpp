#pragma once
/// \file
/// \brief The token-mixing MLP mixer (TRM's `mlp_t`): a SwiGLU across the positions of each
/// sample instead of attention, for inputs of a fixed length.

#include <cstdint>

#include "muninn/nn/norm.hpp"
#include "muninn/nn/residual.hpp"
#include "muninn/nn/swiglu.hpp"
#include "muninn/ops/ops.hpp"

namespace muninn::nn {

/// \brief Mixes the S positions of each of n samples h [n·S, D], in place: per sample t = hᵀ
/// [D, S], t ← norm(t + mlp(t)) with the MLP and the post-norm over the position axis (width S),
/// h = tᵀ. `W` is the MLP matrices' handle (see swiglu).
template <class T, class W = const T*>
struct token_mixer {
  swiglu<T, W> mlp;   ///< width S: positions in, positions out
  rms_norm<T> norm;  ///< width S (TRM: weightless)

  /// \brief Mixes h; scratch: t [n·D·S], gu [n·D, 2·mlp.inter], act [n·D, mlp.inter].
  template <class Backend>
  void operator()(const Backend& be, T* h, std::int64_t n, std::int64_t S, std::int64_t D, T* t, T* gu, T* act) const {
    transpose_batched(be, static_cast<const T*>(h), n, S, D, t);
    mlp(be, t, n * D, t, residual::add, gu, act);
    norm(be, t, t, n * D);
    transpose_batched(be, static_cast<const T*>(t), n, D, S, h);
  }
};

}  // namespace muninn::nn
