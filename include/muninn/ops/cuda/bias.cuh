#pragma once
/// \file
/// \brief Adds a bias vector to every row on the CUDA backend.

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief x[r, c] = T(x[r, c] + bias[c]), one thread per element, grid-stride.
template <class T>
__global__ void __launch_bounds__(256) add_bias_rows_kernel(T* x, std::int64_t ld, const T* bias, std::int64_t rows,
                                                            std::int64_t cols) {
  const std::int64_t n = rows * cols, stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::int64_t r = i / cols, c = i - r * cols;
    store(x + r * ld + c, load(x + r * ld + c) + load(bias + c));
  }
}

}  // namespace gpu
}  // namespace detail

/// \brief x[r, c] += bias[c] (fp32 sum, rounded once to T).
/// \tparam T float or bf16
/// \param be   the CUDA backend
/// \param x    device [rows, ld], updated in place
/// \param ld   row stride of x in elements (≥ cols)
/// \param bias device [cols]
/// \param rows number of rows
/// \param cols number of columns that get a bias
template <class T>
void add_bias_rows(const cuda_backend& be, T* x, std::int64_t ld, const T* bias, std::int64_t rows, std::int64_t cols) {
  static_assert(detail::gpu::is_storage_v<T>, "add_bias_rows (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && cols >= 0 && ld >= cols, "add_bias_rows: bad shape rows ", rows, ", cols ", cols, ", ld ",
               ld);
  if (rows == 0 || cols == 0) return;
  using namespace detail::gpu;
  add_bias_rows_kernel<T><<<grid_for(be, rows * cols, 256), 256, 0, be.stream()>>>(x, ld, bias, rows, cols);
  MUNINN_CUDA_CHECK_LAUNCH("add_bias_rows_kernel");
}

}  // namespace muninn
