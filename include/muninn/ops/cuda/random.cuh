#pragma once
/// \file
/// \brief Random fills on the CUDA backend, bit-identical to the host versions in muninn/ops/random.hpp.

#include <cstdint>

#include "muninn/core/random.hpp"
#include "muninn/ops/cuda/common.cuh"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief x[i] = T(truncated_normal_at(seed, offset + i, stddev)); the sampler is the shared
/// host/device function, so the bits equal the host fill's.
template <class T>
__global__ void __launch_bounds__(256) truncated_normal_kernel(T* x, std::int64_t n, std::uint64_t seed,
                                                               std::uint64_t offset, float stddev) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    store(x + i, truncated_normal_at(seed, offset + std::uint64_t(i), stddev));
}

}  // namespace gpu
}  // namespace detail

/// \brief x[i] = stddev · z(seed, offset + i), z a standard normal truncated to [-3, 3], on the GPU.
///
/// Produces exactly the bits of the host fill_truncated_normal for the same arguments (see
/// muninn/core/random.hpp for why that holds). The sampler works in double precision, which is
/// fast enough on data-centre GPUs for the sizes it is used for (states, weights at load time).
/// Asynchronous on the stream.
/// \tparam T     float or bf16
/// \param be     the CUDA backend
/// \param x      device output [n]
/// \param n      number of elements
/// \param seed   stream seed
/// \param offset counter of element 0
/// \param stddev standard deviation before truncation
template <class T>
void fill_truncated_normal(const cuda_backend& be, T* x, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                           float stddev) {
  static_assert(detail::gpu::is_storage_v<T>, "fill_truncated_normal (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(n >= 0, "fill_truncated_normal: negative size ", n);
  if (n == 0) return;
  detail::gpu::truncated_normal_kernel<T>
      <<<detail::gpu::grid_for(be, n, 256), 256, 0, be.stream()>>>(x, n, seed, offset, stddev);
  MUNINN_CUDA_CHECK_LAUNCH("truncated_normal_kernel");
}

}  // namespace muninn
