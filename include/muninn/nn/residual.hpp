#pragma once
/// \file
/// \brief Whether a block's output replaces its destination or is added to it.

namespace muninn::nn {

/// \brief Whether a layer's output replaces what its destination holds or is added to it.
enum class residual {
  none,  ///< out = f(in)
  add,   ///< out += f(in): the residual connection, fused into the last GEMM (β = 1)
};

}  // namespace muninn::nn
