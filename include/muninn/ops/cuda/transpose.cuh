#pragma once
/// \file
/// \brief Transposing a batch of matrices on the CUDA backend (TRM's token-mixing MLP).

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief Side of the square tile one block moves through shared memory.
inline constexpr int transpose_tile = 32;

/// \brief One 32x32 tile of matrix blockIdx.z: read along rows, written along columns (the
/// padding column keeps the shared-memory reads free of bank conflicts).
template <class T>
__global__ void __launch_bounds__(transpose_tile * 8) transpose_kernel(const T* x, std::int64_t rows,
                                                                      std::int64_t cols, T* y) {
  __shared__ T tile[transpose_tile][transpose_tile + 1];
  const std::int64_t m = blockIdx.z;
  const T* xm = x + m * rows * cols;
  T* ym = y + m * rows * cols;
  const std::int64_t c0 = std::int64_t(blockIdx.x) * transpose_tile, r0 = std::int64_t(blockIdx.y) * transpose_tile;
  for (int i = threadIdx.y; i < transpose_tile; i += blockDim.y) {
    const std::int64_t r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = xm[r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < transpose_tile; i += blockDim.y) {
    const std::int64_t c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) ym[c * rows + r] = tile[threadIdx.x][i];
  }
}

}  // namespace gpu
}  // namespace detail

/// \brief y[b][c][r] = x[b][r][c] for `batch` row-major [rows, cols] device matrices (see the
/// host overload).
template <class T>
void transpose_batched(const cuda_backend& be, const T* x, std::int64_t batch, std::int64_t rows, std::int64_t cols,
                       T* y) {
  static_assert(detail::gpu::is_storage_v<T>, "transpose_batched (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(batch >= 0 && rows >= 0 && cols >= 0, "transpose_batched: negative size batch=", batch,
               " rows=", rows, " cols=", cols);
  MUNINN_CHECK(batch <= 65535, "transpose_batched: ", batch, " matrices exceed the grid limit 65535");
  if (batch == 0 || rows == 0 || cols == 0) return;
  constexpr int t = detail::gpu::transpose_tile;
  const dim3 grid(unsigned((cols + t - 1) / t), unsigned((rows + t - 1) / t), unsigned(batch));
  detail::gpu::transpose_kernel<T><<<grid, dim3(t, 8), 0, be.stream()>>>(x, rows, cols, y);
  MUNINN_CUDA_CHECK_LAUNCH("transpose_kernel");
}

}  // namespace muninn
