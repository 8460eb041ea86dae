#pragma once
/// \file
/// \brief Arg-max and top-k on the CUDA backend: single arrays through CUB, and per row (a block
/// reduction for arg-max, a segmented radix sort for top-k).

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cmath>
#include <cstdint>

#include "muninn/core/dtype.hpp"
#include "muninn/ops/cuda/common.cuh"
#include "muninn/ops/math.hpp"

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

/// \brief Threads per row of argmax_rows_kernel.
inline constexpr int argmax_threads = 256;

/// \brief True when (v, i) beats (best, bi): larger value, or equal value at a smaller index.
/// NaN never wins (every comparison with it is false), so NaNs are ignored.
__device__ MUNINN_INLINE bool argmax_better(float v, std::int32_t i, float best, std::int32_t bi) {
  return v > best || (v == best && i < bi);
}

/// \brief Merges the (value, index) candidates of the 32 lanes of a warp; all lanes get the winner.
__device__ MUNINN_INLINE void warp_argmax(float& best, std::int32_t& bi) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, best, o);
    const std::int32_t i = __shfl_xor_sync(0xffffffffu, bi, o);
    if (argmax_better(v, i, best, bi)) {
      best = v;
      bi = i;
    }
  }
}

/// \brief One block per row: each thread scans a strided slice, then warp and block merges.
/// Candidates start at (−inf, INT32_MAX), so a −inf element still wins over "nothing" and a row
/// of NaN keeps index INT32_MAX, written as 0 (the host op's answer).
template <class T>
__global__ void __launch_bounds__(argmax_threads) argmax_rows_kernel(const T* x, std::int64_t cols, std::int32_t* out) {
  __shared__ float wv[argmax_threads / 32];
  __shared__ std::int32_t wi[argmax_threads / 32];
  const T* xr = x + std::int64_t(blockIdx.x) * cols;
  float best = -INFINITY;
  std::int32_t bi = INT32_MAX;
  for (std::int64_t c = threadIdx.x; c < cols; c += argmax_threads) {
    const float v = load(xr + c);
    if (argmax_better(v, std::int32_t(c), best, bi)) {
      best = v;
      bi = std::int32_t(c);
    }
  }
  warp_argmax(best, bi);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    wv[warp] = best;
    wi[warp] = bi;
  }
  __syncthreads();
  if (warp == 0) {
    best = lane < argmax_threads / 32 ? wv[lane] : -INFINITY;
    bi = lane < argmax_threads / 32 ? wi[lane] : INT32_MAX;
    warp_argmax(best, bi);
    if (lane == 0) out[blockIdx.x] = bi == INT32_MAX ? 0 : bi;
  }
}

/// \brief keys[e] = detail::topk_key of element e of a row-major [rows, cols] array (the host op
/// builds the same keys, so both backends sort identically).
template <class T>
__global__ void __launch_bounds__(256) topk_keys_kernel(const T* x, std::int64_t total, std::int64_t cols,
                                                        std::uint64_t* keys) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride)
    keys[e] = topk_key(float_bits(load(x + e)), std::uint32_t(e % cols));
}

/// \brief vals/idx [rows, k] from the first k sorted keys of each row.
template <int Unused = 0>
__global__ void __launch_bounds__(256) topk_decode_kernel(const std::uint64_t* keys, std::int64_t rows,
                                                          std::int64_t cols, std::int64_t k, float* vals,
                                                          std::int32_t* idx) {
  const std::int64_t total = rows * k, stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const std::int64_t r = e / k, i = e - r * k;
    const std::uint64_t key = keys[r * cols + i];
    vals[e] = bits_float(topk_key_value_bits(key));
    idx[e] = std::int32_t(key & 0xffffffffu);
  }
}

/// \brief Offset of row r in a row-major array with `cols` columns (segment starts of the sort).
struct row_start {
  int cols;  ///< elements per row
  /// \brief r · cols.
  __host__ __device__ int operator()(int r) const { return r * cols; }
};

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

/// \brief out[r] = index of the largest element of row r of device x; the first one when several
/// are equal; NaNs are ignored (an all-NaN row gives 0), as the host op.
///
/// One block per row; asynchronous on the stream (no host copy, usable in graph capture).
/// \tparam T   float or bf16
/// \param be   the CUDA backend
/// \param x    device data [rows, cols], contiguous
/// \param rows number of rows
/// \param cols elements per row, 1 <= cols < 2^31
/// \param out  device index per row [rows]
template <class T>
void argmax_rows(const cuda_backend& be, const T* x, std::int64_t rows, std::int64_t cols, std::int32_t* out) {
  static_assert(detail::gpu::is_storage_v<T>, "argmax_rows (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && cols > 0 && cols <= std::int64_t(INT32_MAX), "argmax_rows: bad shape rows=", rows,
               " cols=", cols);
  detail::gpu::check_rows_grid("argmax_rows", rows);
  if (rows == 0) return;
  detail::gpu::argmax_rows_kernel<T><<<unsigned(rows), detail::gpu::argmax_threads, 0, be.stream()>>>(x, cols, out);
  MUNINN_CUDA_CHECK_LAUNCH("argmax_rows_kernel");
}

/// \brief The k largest elements of each row of device x in descending order, with their indices.
///
/// Each element becomes a 64-bit key (detail::topk_key: the value's order, then the column),
/// the rows are sorted as segments by cub::DeviceSegmentedRadixSort (keys and scratch in the
/// backend workspace), and the first k keys of each row are decoded. The key carries the index,
/// so the order is total: equal values keep ascending index order, −0.0 and +0.0 count as equal
/// (reported as +0.0), and a NaN ranks as −inf (reported as −inf), exactly as the host op.
/// Asynchronous on the stream.
/// \tparam T   float or bf16 (values are reported in fp32)
/// \param be   the CUDA backend
/// \param x    device data [rows, cols], contiguous
/// \param rows number of rows
/// \param cols elements per row; rows · cols < 2^31
/// \param k    how many per row, 1 <= k <= cols
/// \param vals device output [rows, k]: the values, largest first
/// \param idx  device output [rows, k]: their column indices
template <class T>
void topk_rows(const cuda_backend& be, const T* x, std::int64_t rows, std::int64_t cols, std::int64_t k, float* vals,
               std::int32_t* idx) {
  using namespace detail::gpu;
  static_assert(is_storage_v<T>, "topk_rows (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && cols > 0 && rows * cols <= std::int64_t(INT_MAX), "topk_rows: bad shape rows=", rows,
               " cols=", cols, " (rows · cols must be below 2^31)");
  MUNINN_CHECK(k > 0 && k <= cols, "topk_rows: k=", k, " outside [1, cols=", cols, "]");
  if (rows == 0) return;
  const std::int64_t total = rows * cols;
  const auto starts = thrust::make_transform_iterator(thrust::make_counting_iterator<int>(0), row_start{int(cols)});
  std::size_t temp_bytes = 0;
  MUNINN_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeys(
      nullptr, temp_bytes, static_cast<const std::uint64_t*>(nullptr), static_cast<std::uint64_t*>(nullptr),
      int(total), int(rows), starts, starts + 1, 0, 64, be.stream()));
  const std::size_t keys_bytes = align256(std::size_t(total) * sizeof(std::uint64_t));
  char* ws = static_cast<char*>(be.workspace(2 * keys_bytes + temp_bytes));
  auto* keys_in = reinterpret_cast<std::uint64_t*>(ws);
  auto* keys_out = reinterpret_cast<std::uint64_t*>(ws + keys_bytes);
  topk_keys_kernel<T><<<grid_for(be, total, 256), 256, 0, be.stream()>>>(x, total, cols, keys_in);
  MUNINN_CUDA_CHECK_LAUNCH("topk_keys_kernel");
  MUNINN_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeys(ws + 2 * keys_bytes, temp_bytes,
                                                            static_cast<const std::uint64_t*>(keys_in), keys_out,
                                                            int(total), int(rows), starts, starts + 1, 0, 64,
                                                            be.stream()));
  topk_decode_kernel<0><<<grid_for(be, rows * k, 256), 256, 0, be.stream()>>>(keys_out, rows, cols, k, vals, idx);
  MUNINN_CUDA_CHECK_LAUNCH("topk_decode_kernel");
}

}  // namespace muninn
