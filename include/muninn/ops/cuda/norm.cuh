#pragma once
/// \file
/// \brief RMSNorm, the fused residual-add + RMSNorm, and LayerNorm on the CUDA backend.

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"
#include "muninn/ops/math.hpp"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief Threads per row of the norm kernels.
inline constexpr int norm_threads = 256;

/// \brief One block per row: y = T(T(s · rsqrt(mean(s²) + eps)) · w), s = Add ? T(a + b) : a;
/// a null w is the weightless norm, y = T(s · rsqrt(...)).
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
  const float inv = rms_inverse(total, cols, eps);

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
      if (w) {
        load_pack(w + p * P, vw);
      } else {
#pragma unroll
        for (int i = 0; i < P; ++i) vw[i] = 1.0f;
      }
#pragma unroll
      for (int i = 0; i < P; ++i) va[i] = round_to<T>(va[i] * inv) * vw[i];
      store_pack(yr + p * P, va);
    }
  } else {
    for (std::int64_t i = threadIdx.x; i < cols; i += norm_threads) {
      float v = load(ar + i);
      if constexpr (Add) v = round_to<T>(v + load(br + i));
      store(yr + i, round_to<T>(v * inv) * (w ? load(w + i) : 1.0f));
    }
  }
}

/// \brief One block per row of LayerNorm: mean, then the biased variance around it (two passes
/// of block sums, fp32), then y = T(detail::layernorm_element(x, mean, rstd, w, b)).
///
/// Every element is read by the same thread in all three passes and written only in the last,
/// after both block-wide reductions, so y may alias x.
template <class T>
__global__ void __launch_bounds__(norm_threads) layernorm_kernel(const T* x, const T* w, const T* b, T* y,
                                                                 std::int64_t cols, float eps) {
  const std::int64_t off = std::int64_t(blockIdx.x) * cols;
  const T* xr = x + off;
  T* yr = y + off;
  float s = 0.0f;
  for (std::int64_t i = threadIdx.x; i < cols; i += norm_threads) s += load(xr + i);
  const float mean = block_sum(s) / float(cols);
  float sq = 0.0f;
  for (std::int64_t i = threadIdx.x; i < cols; i += norm_threads) {
    const float d = load(xr + i) - mean;
    sq = fmaf(d, d, sq);
  }
  const float rstd = rms_inverse(block_sum(sq), cols, eps);  // 1 / sqrt(var + eps)
  for (std::int64_t i = threadIdx.x; i < cols; i += norm_threads)
    store(yr + i, layernorm_element(load(xr + i), mean, rstd, w ? load(w + i) : 1.0f, b ? load(b + i) : 0.0f));
}

template <class T, bool Add>
void launch_rmsnorm(const cuda_backend& be, const char* op, const T* a, const T* b, const T* w, T* y,
                    std::int64_t rows, std::int64_t cols, float eps) {
  static_assert(is_storage_v<T>, "rmsnorm (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && cols > 0, op, ": bad shape rows=", rows, " cols=", cols);
  check_rows_grid(op, rows);
  if (rows == 0) return;
  const bool vec = cols % pack_v<T> == 0 && aligned16(a) && (!Add || aligned16(b)) && aligned16(w) && aligned16(y);
  // (a null w counts as aligned: the kernel then reads no weight)
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
/// \param w    device weight [cols], or nullptr for a weightless norm
/// \param y    device output [rows, cols]; may alias x
/// \param rows number of rows
/// \param cols elements per row
/// \param eps  added to the mean square (Huginn: 1e-6)
template <class T>
void rmsnorm(const cuda_backend& be, const T* x, const detail::gpu::identity_t<T>* w, T* y, std::int64_t rows,
             std::int64_t cols, float eps) {
  detail::gpu::launch_rmsnorm<T, false>(be, "rmsnorm", x, static_cast<const T*>(nullptr), w, y, rows, cols, eps);
}

/// \brief y = rmsnorm(a + b) · w: the sandwich block's residual add fused with its post-norm.
///
/// For bf16 the sum a + b is rounded to bf16 first (PyTorch adds in the model dtype).
/// \tparam T   float or bf16
/// \param be   the CUDA backend
/// \param a    device first summand [rows, cols]
/// \param b    device second summand [rows, cols]
/// \param w    device weight [cols], or nullptr for a weightless norm
/// \param y    device output [rows, cols]; may alias a or b
/// \param rows number of rows
/// \param cols elements per row
/// \param eps  added to the mean square
template <class T>
void add_rmsnorm(const cuda_backend& be, const T* a, const T* b, const detail::gpu::identity_t<T>* w, T* y,
                 std::int64_t rows, std::int64_t cols, float eps) {
  detail::gpu::launch_rmsnorm<T, true>(be, "add_rmsnorm", a, b, w, y, rows, cols, eps);
}

/// \brief y[r,:] = (x[r,:] − mean) / sqrt(var + eps) · weight + bias, as torch.nn.LayerNorm.
///
/// Mean and biased variance per row in fp32 (two block reductions), one rounding to T at the
/// end (PyTorch's LayerNorm computes in fp32 for bf16 inputs). One block per row.
/// \tparam T     float or bf16
/// \param be     the CUDA backend
/// \param x      device input [rows, cols], contiguous
/// \param weight device [cols], or nullptr for no affine scale
/// \param bias   device [cols], or nullptr for no affine shift
/// \param y      device output [rows, cols]; may alias x
/// \param rows   number of rows
/// \param cols   elements per row, >= 1
/// \param eps    added to the variance (torch's default: 1e-5)
template <class T>
void layernorm(const cuda_backend& be, const T* x, const detail::gpu::identity_t<T>* weight,
               const detail::gpu::identity_t<T>* bias, T* y, std::int64_t rows, std::int64_t cols, float eps) {
  static_assert(detail::gpu::is_storage_v<T>, "layernorm (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && cols > 0, "layernorm: bad shape rows=", rows, " cols=", cols);
  detail::gpu::check_rows_grid("layernorm", rows);
  if (rows == 0) return;
  detail::gpu::layernorm_kernel<T><<<unsigned(rows), detail::gpu::norm_threads, 0, be.stream()>>>(x, weight, bias, y,
                                                                                               cols, eps);
  MUNINN_CUDA_CHECK_LAUNCH("layernorm_kernel");
}

}  // namespace muninn
