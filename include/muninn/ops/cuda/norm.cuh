#pragma once
/// \file
/// \brief RMSNorm and the fused residual-add + RMSNorm on the CUDA backend.

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief Threads per row of the norm kernels.
inline constexpr int norm_threads = 256;

/// \brief One block per row: y = T(T(s · rsqrt(mean(s²) + eps)) · w), s = Add ? T(a + b) : a.
///
/// The row is read twice (sum of squares, then output); the second read mostly hits L1/L2.
/// Each element is read and written by the same thread, and all reads of the first pass finish
/// before the block-wide reduction, so y may alias a or b.
template <class T, bool Add>
__global__ void __launch_bounds__(norm_threads) rmsnorm_kernel(const T* a, const T* b, const T* w, T* y,
                                                               std::int64_t cols, float eps, bool vec) {
  constexpr int P = pack_v<T>;
  const std::int64_t off = std::int64_t(blockIdx.x) * cols;
  const T* ar = a + off;
  const T* br = Add ? b + off : nullptr;
  T* yr = y + off;

  float ss = 0.0f;
  if (vec) {
    for (std::int64_t p = threadIdx.x; p < cols / P; p += norm_threads) {
      float va[P];
      load_pack(ar + p * P, va);
      if constexpr (Add) {
        float vb[P];
        load_pack(br + p * P, vb);
#pragma unroll
        for (int i = 0; i < P; ++i) va[i] = round_to<T>(va[i] + vb[i]);
      }
#pragma unroll
      for (int i = 0; i < P; ++i) ss = fmaf(va[i], va[i], ss);
    }
  } else {
    for (std::int64_t i = threadIdx.x; i < cols; i += norm_threads) {
      float v = load(ar + i);
      if constexpr (Add) v = round_to<T>(v + load(br + i));
      ss = fmaf(v, v, ss);
    }
  }
  const float total = block_sum(ss);
  // IEEE sqrt and division (not rsqrtf) so fp32 matches the host to an ulp or two.
  const float inv = 1.0f / sqrtf(total / float(cols) + eps);

  if (vec) {
    for (std::int64_t p = threadIdx.x; p < cols / P; p += norm_threads) {
      float va[P], vw[P];
      load_pack(ar + p * P, va);
      if constexpr (Add) {
        float vb[P];
        load_pack(br + p * P, vb);
#pragma unroll
        for (int i = 0; i < P; ++i) va[i] = round_to<T>(va[i] + vb[i]);
      }
      load_pack(w + p * P, vw);
#pragma unroll
      for (int i = 0; i < P; ++i) va[i] = round_to<T>(va[i] * inv) * vw[i];
      store_pack(yr + p * P, va);
    }
  } else {
    for (std::int64_t i = threadIdx.x; i < cols; i += norm_threads) {
      float v = load(ar + i);
      if constexpr (Add) v = round_to<T>(v + load(br + i));
      store(yr + i, round_to<T>(v * inv) * load(w + i));
    }
  }
}

template <class T, bool Add>
void launch_rmsnorm(const cuda_backend& be, const char* op, const T* a, const T* b, const T* w, T* y,
                    std::int64_t rows, std::int64_t cols, float eps) {
  static_assert(is_storage_v<T>, "rmsnorm (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && cols > 0, op, ": bad shape rows=", rows, " cols=", cols);
  check_rows_grid(op, rows);
  if (rows == 0) return;
  const bool vec = cols % pack_v<T> == 0 && aligned16(a) && (!Add || aligned16(b)) && aligned16(w) && aligned16(y);
  rmsnorm_kernel<T, Add><<<unsigned(rows), norm_threads, 0, be.stream()>>>(a, b, w, y, cols, eps, vec);
  MUNINN_CUDA_CHECK_LAUNCH("rmsnorm_kernel");
}

}  // namespace gpu
}  // namespace detail

/// \brief y[r,:] = x[r,:] · rsqrt(mean(x[r,:]²) + eps) · w, statistics in fp32.
///
/// For bf16 the normalised value is rounded to bf16 before the weight multiply, as Huginn's
/// RMSNorm_llama does (`(x.float() * rsqrt(...)).to(x.dtype) * weight`). One block per row.
/// \tparam T   float or bf16
/// \param be   the CUDA backend
/// \param x    device input [rows, cols], contiguous
/// \param w    device weight [cols]
/// \param y    device output [rows, cols]; may alias x
/// \param rows number of rows
/// \param cols elements per row
/// \param eps  added to the mean square (Huginn: 1e-6)
template <class T>
void rmsnorm(const cuda_backend& be, const T* x, const T* w, T* y, std::int64_t rows, std::int64_t cols, float eps) {
  detail::gpu::launch_rmsnorm<T, false>(be, "rmsnorm", x, static_cast<const T*>(nullptr), w, y, rows, cols, eps);
}

/// \brief y = rmsnorm(a + b) · w: the sandwich block's residual add fused with its post-norm.
///
/// For bf16 the sum a + b is rounded to bf16 first (PyTorch adds in the model dtype).
/// \tparam T   float or bf16
/// \param be   the CUDA backend
/// \param a    device first summand [rows, cols]
/// \param b    device second summand [rows, cols]
/// \param w    device weight [cols]
/// \param y    device output [rows, cols]; may alias a or b
/// \param rows number of rows
/// \param cols elements per row
/// \param eps  added to the mean square
template <class T>
void add_rmsnorm(const cuda_backend& be, const T* a, const T* b, const T* w, T* y, std::int64_t rows,
                 std::int64_t cols, float eps) {
  detail::gpu::launch_rmsnorm<T, true>(be, "add_rmsnorm", a, b, w, y, rows, cols, eps);
}

}  // namespace muninn
