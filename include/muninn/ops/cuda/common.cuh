#pragma once
/// \file
/// \brief Device helpers shared by the CUDA ops: storage conversions, 16-byte packs, reductions,
/// grid sizing.

#if !defined(__CUDACC__)
#error "muninn/ops/cuda/common.cuh is CUDA-only: compile this file with nvcc"
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "muninn/backend/cuda.cuh"
#include "muninn/core/dtype.hpp"
#include "muninn/core/error.hpp"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief True for the storage types the CUDA ops are compiled for (float and bf16).
template <class T>
inline constexpr bool is_storage_v = std::is_same_v<T, float> || std::is_same_v<T, bf16>;

/// \brief T in a non-deduced context (std::type_identity_t is C++20): lets a nullable pointer
/// parameter accept a plain nullptr while T is deduced from the other arguments.
template <class T>
struct identity {
  using type = T;
};
template <class T>
using identity_t = typename identity<T>::type;

/// \brief Elements of T in one 16-byte pack (4 floats, 8 bf16).
template <class T>
inline constexpr int pack_v = int(16 / sizeof(T));

/// \brief Loads one storage element as float.
__device__ MUNINN_INLINE float load(const float* p) { return *p; }
/// \brief Loads one storage element as float.
__device__ MUNINN_INLINE float load(const bf16* p) { return __uint_as_float(std::uint32_t(p->bits) << 16); }

/// \brief Rounds a float to storage type T (round-to-nearest-even) and stores it.
__device__ MUNINN_INLINE void store(float* p, float v) { *p = v; }
/// \brief Rounds a float to storage type T (round-to-nearest-even) and stores it.
__device__ MUNINN_INLINE void store(bf16* p, float v) { p->bits = __bfloat16_as_ushort(__float2bfloat16_rn(v)); }

/// \brief v rounded to T and back: emulates PyTorch's intermediate casts in the model dtype.
template <class T>
__device__ MUNINN_INLINE float round_to(float v) {
  if constexpr (std::is_same_v<T, bf16>) {
    return __bfloat162float(__float2bfloat16_rn(v));
  } else {
    return v;
  }
}

/// \brief Loads 16 bytes (a pack of T) at a 16-byte aligned address as floats.
__device__ MUNINN_INLINE void load_pack(const float* p, float (&f)[4]) {
  const float4 u = *reinterpret_cast<const float4*>(p);
  f[0] = u.x;
  f[1] = u.y;
  f[2] = u.z;
  f[3] = u.w;
}
/// \brief Loads 16 bytes (a pack of T) at a 16-byte aligned address as floats.
__device__ MUNINN_INLINE void load_pack(const bf16* p, float (&f)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const std::uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    // Little-endian: the element with the lower address sits in the low half.
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}
/// \brief Rounds 4 floats to float (no-op) and stores them as one 16-byte pack.
__device__ MUNINN_INLINE void store_pack(float* p, const float (&f)[4]) {
  *reinterpret_cast<float4*>(p) = make_float4(f[0], f[1], f[2], f[3]);
}
/// \brief Rounds 8 floats to bf16 and stores them as one 16-byte pack.
__device__ MUNINN_INLINE void store_pack(bf16* p, const float (&f)[8]) {
  std::uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t lo = __bfloat16_as_ushort(__float2bfloat16_rn(f[2 * i]));
    const std::uint32_t hi = __bfloat16_as_ushort(__float2bfloat16_rn(f[2 * i + 1]));
    w[i] = lo | (hi << 16);
  }
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

/// \brief Minimum of two 64-bit integers in device code (std::min is host-only without
/// --expt-relaxed-constexpr, and the headers must not depend on that flag).
__device__ MUNINN_INLINE std::int64_t min64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

/// \brief Sum over the 32 lanes of a warp (all lanes get the result).
__device__ MUNINN_INLINE float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
/// \brief Maximum over the 32 lanes of a warp (all lanes get the result).
__device__ MUNINN_INLINE float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// \brief Sum over all threads of the block; every thread gets the result.
///
/// blockDim.x must be a multiple of 32 (at most 1024). Contains __syncthreads, so every thread
/// of the block must call it; it may be called repeatedly in one kernel.
__device__ inline float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float t = lane < nwarps ? partial[lane] : 0.0f;
  t = warp_sum(t);  // every warp reduces the partials itself: no second broadcast needed
  __syncthreads();  // partial[] may be rewritten by the next call
  return t;
}

/// \brief Merges two online-softmax states (max m, sum of e^(x-m) s) into (m, s).
__device__ MUNINN_INLINE void softmax_merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;  // both empty (or all -inf): keep (-inf, 0)
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

/// \brief Online-softmax state (max, sum of exponentials) over all threads of the block.
///
/// Same rules as block_sum: multiple of 32 threads, called by every thread.
__device__ inline void block_softmax_state(float& m, float& s) {
  __shared__ float pm[32], ps[32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    softmax_merge(m, s, m2, s2);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  if (lane == 0) {
    pm[warp] = m;
    ps[warp] = s;
  }
  __syncthreads();
  m = lane < nwarps ? pm[lane] : -INFINITY;
  s = lane < nwarps ? ps[lane] : 0.0f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    softmax_merge(m, s, m2, s2);
  }
  __syncthreads();
}

/// \brief True when a device pointer is 16-byte aligned.
inline bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

/// \brief True when a row stride of `ld` elements of T keeps 16-byte alignment from row to row.
template <class T>
inline bool ld_aligned16(std::int64_t ld) {
  return (ld * std::int64_t(sizeof(T))) % 16 == 0;
}

/// \brief Blocks for a grid-stride loop over `work` items of `threads` each: enough to fill
/// every SM (8 resident blocks of 256 threads), no more than the work needs.
inline unsigned grid_for(const cuda_backend& be, std::int64_t work, int threads) {
  const std::int64_t need = (work + threads - 1) / threads;
  const std::int64_t cap = std::int64_t(be.sm_count()) * (2048 / threads) * 2;
  return unsigned(std::max<std::int64_t>(1, std::min(need, cap)));
}

/// \brief Checks that a row count fits in gridDim.x (one block per row).
inline void check_rows_grid(const char* op, std::int64_t rows) {
  MUNINN_CHECK(rows <= std::int64_t(INT_MAX), op, ": ", rows, " rows exceed the grid limit ", INT_MAX);
}

}  // namespace gpu
}  // namespace detail
}  // namespace muninn
