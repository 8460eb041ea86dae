#pragma once
/// \file
/// \brief Arg-max and top-k on the CUDA backend, through CUB.

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <cmath>
#include <cstdint>

#include "muninn/ops/cuda/common.cuh"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief Maps NaN to −inf so that arg-max ignores NaNs, as the host op does.
struct nan_to_neg_inf {
  __host__ __device__ float operator()(float v) const { return v != v ? -INFINITY : v; }
};

/// \brief idx[i] = i.
template <int Unused = 0>
__global__ void __launch_bounds__(256) iota_kernel(std::int32_t* idx, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    idx[i] = std::int32_t(i);
}

/// \brief Rounds a byte offset up to 256 (cudaMalloc's alignment, which CUB expects too).
inline std::size_t align256(std::size_t b) { return (b + 255) / 256 * 256; }

}  // namespace gpu
}  // namespace detail

/// \brief Index of the largest element of device array x[0, n); the first one when several are
/// equal. NaNs are ignored (treated as −inf).
///
/// Uses cub::DeviceReduce::ArgMax with its scratch in the backend workspace, then copies the
/// index to the host, so it synchronises the stream (do not call it inside graph capture).
/// \param be the CUDA backend
/// \param x  device data [n]
/// \param n  number of elements, >= 1
inline std::int64_t argmax(const cuda_backend& be, const float* x, std::int64_t n) {
  using namespace detail::gpu;
  MUNINN_CHECK(n > 0, "argmax: empty input");
  auto in = thrust::make_transform_iterator(x, nan_to_neg_inf{});
  std::size_t temp_bytes = 0;
  MUNINN_CUDA_CHECK(cub::DeviceReduce::ArgMax(nullptr, temp_bytes, in, static_cast<float*>(nullptr),
                                              static_cast<std::int64_t*>(nullptr), n, be.stream()));
  const std::size_t head = align256(sizeof(float) + sizeof(std::int64_t));
  char* ws = static_cast<char*>(be.workspace(head + temp_bytes));
  auto* index = reinterpret_cast<std::int64_t*>(ws);  // 256-byte aligned
  auto* value = reinterpret_cast<float*>(ws + sizeof(std::int64_t));
  MUNINN_CUDA_CHECK(cub::DeviceReduce::ArgMax(ws + head, temp_bytes, in, value, index, n, be.stream()));
  std::int64_t result = 0;
  MUNINN_CUDA_CHECK(cudaMemcpyAsync(&result, index, sizeof result, cudaMemcpyDeviceToHost, be.stream()));
  MUNINN_CUDA_CHECK(cudaStreamSynchronize(be.stream()));
  return result;
}

/// \brief The k largest elements of device array x[0, n) in descending order, with their indices.
///
/// A stable descending radix sort of (value, index) pairs (cub::DeviceRadixSort, scratch in the
/// backend workspace) followed by two copies: equal values keep ascending index order, −0.0 and
/// +0.0 count as equal. NaNs are not supported. Asynchronous on the stream.
/// \param be   the CUDA backend
/// \param x    device data [n]
/// \param n    number of elements, 1 <= n < 2^31
/// \param k    how many to return, 1 <= k <= n
/// \param vals device output [k]: the values, largest first
/// \param idx  device output [k]: their indices in x
inline void top_k(const cuda_backend& be, const float* x, std::int64_t n, std::int64_t k, float* vals,
                  std::int32_t* idx) {
  using namespace detail::gpu;
  MUNINN_CHECK(n > 0 && n <= std::int64_t(INT_MAX), "top_k: n=", n, " outside [1, 2^31)");
  MUNINN_CHECK(k > 0 && k <= n, "top_k: k=", k, " outside [1, n=", n, "]");
  const int items = int(n);
  std::size_t temp_bytes = 0;
  MUNINN_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(
      nullptr, temp_bytes, x, static_cast<float*>(nullptr), static_cast<const std::int32_t*>(nullptr),
      static_cast<std::int32_t*>(nullptr), items, 0, int(sizeof(float) * 8), be.stream()));
  const std::size_t keys_bytes = align256(std::size_t(n) * sizeof(float));
  const std::size_t idx_bytes = align256(std::size_t(n) * sizeof(std::int32_t));
  char* ws = static_cast<char*>(be.workspace(keys_bytes + 2 * idx_bytes + temp_bytes));
  auto* keys_out = reinterpret_cast<float*>(ws);
  auto* idx_in = reinterpret_cast<std::int32_t*>(ws + keys_bytes);
  auto* idx_out = reinterpret_cast<std::int32_t*>(ws + keys_bytes + idx_bytes);
  iota_kernel<0><<<grid_for(be, n, 256), 256, 0, be.stream()>>>(idx_in, n);
  MUNINN_CUDA_CHECK_LAUNCH("iota_kernel");
  MUNINN_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(ws + keys_bytes + 2 * idx_bytes, temp_bytes, x, keys_out,
                                                              static_cast<const std::int32_t*>(idx_in), idx_out, items,
                                                              0, int(sizeof(float) * 8), be.stream()));
  MUNINN_CUDA_CHECK(
      cudaMemcpyAsync(vals, keys_out, std::size_t(k) * sizeof(float), cudaMemcpyDeviceToDevice, be.stream()));
  MUNINN_CUDA_CHECK(
      cudaMemcpyAsync(idx, idx_out, std::size_t(k) * sizeof(std::int32_t), cudaMemcpyDeviceToDevice, be.stream()));
}

}  // namespace muninn
