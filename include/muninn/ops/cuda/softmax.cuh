#pragma once
/// \file
/// \brief Row-wise softmax, log-softmax and KL divergence on the CUDA backend (fp32 outputs).

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief Threads per row of the softmax-family kernels (a vocabulary row is long).
inline constexpr int softmax_threads = 512;

/// \brief e^d for d <= 0 through the hardware exp2 (2 ulp); the product d·log2(e) adds a
/// relative error of about |d|·2^-24 (< 2e-6 for the |d| < 30 that matter in fp32).
__device__ MUNINN_INLINE float exp_nonpositive(float d) { return exp2f(d * 1.4426950408889634f); }

/// \brief Folds one value into a thread's online-softmax state.
__device__ MUNINN_INLINE void softmax_push(float& m, float& s, float x) {
  if (x > m) {
    s = s * exp_nonpositive(m - x) + 1.0f;  // m = -inf: s is 0 and exp(-inf) = 0
    m = x;
  } else if (x != -INFINITY) {  // x = m = -inf adds nothing (and avoids exp(nan))
    s += exp_nonpositive(x - m);
  }
}

/// \brief One block per row. Pass 1: online (max, sum e^(x-max)) per thread, merged over the
/// block. Pass 2: y = e^(x-max)/sum, or (x-max) - log(sum) for LogSoftmax. Every element is
/// read and written by the same thread after the block-wide merge, so y may alias x.
template <class T, bool LogSoftmax>
__global__ void __launch_bounds__(softmax_threads) softmax_kernel(const T* x, float* y, std::int64_t cols, bool vec) {
  constexpr int P = pack_v<T>;
  const std::int64_t off = std::int64_t(blockIdx.x) * cols;
  const T* xr = x + off;
  float* yr = y + off;
  float m = -INFINITY, s = 0.0f;
  if (vec) {
    for (std::int64_t p = threadIdx.x; p < cols / P; p += softmax_threads) {
      float f[P];
      load_pack(xr + p * P, f);
#pragma unroll
      for (int i = 0; i < P; ++i) softmax_push(m, s, f[i]);
    }
  } else {
    for (std::int64_t i = threadIdx.x; i < cols; i += softmax_threads) softmax_push(m, s, load(xr + i));
  }
  block_softmax_state(m, s);
  const float inv = 1.0f / s, lse = logf(s);
  const auto out = [&](float v) { return LogSoftmax ? (v - m) - lse : exp_nonpositive(v - m) * inv; };
  if (vec) {
    for (std::int64_t p = threadIdx.x; p < cols / P; p += softmax_threads) {
      float f[P];
      load_pack(xr + p * P, f);
#pragma unroll
      for (int i = 0; i < P; i += 4)
        *reinterpret_cast<float4*>(yr + p * P + i) = make_float4(out(f[i]), out(f[i + 1]), out(f[i + 2]), out(f[i + 3]));
    }
  } else {
    for (std::int64_t i = threadIdx.x; i < cols; i += softmax_threads) yr[i] = out(load(xr + i));
  }
}

/// \brief One block per row: out[r] = Σ_c e^(lp_prev) · (lp_prev − lp); terms with
/// lp_prev = −inf contribute 0 (0·log 0 = 0). A template only so that the header can be
/// included by several translation units of one program.
template <int Unused = 0>
__global__ void __launch_bounds__(softmax_threads) kl_div_kernel(const float* lp_prev, const float* lp, float* out,
                                                                 std::int64_t cols) {
  const std::int64_t off = std::int64_t(blockIdx.x) * cols;
  float acc = 0.0f;
  for (std::int64_t i = threadIdx.x; i < cols; i += softmax_threads) {
    const float a = lp_prev[off + i];
    if (a != -INFINITY) acc = fmaf(expf(a), a - lp[off + i], acc);
  }
  const float total = block_sum(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

template <class T, bool LogSoftmax>
void softmax_launch(const cuda_backend& be, const char* op, const T* x, float* y, std::int64_t rows,
                    std::int64_t cols) {
  static_assert(is_storage_v<T>, "softmax (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && cols > 0, op, ": bad shape rows=", rows, " cols=", cols);
  check_rows_grid(op, rows);
  if (rows == 0) return;
  const bool vec = cols % pack_v<T> == 0 && aligned16(x) && aligned16(y);
  softmax_kernel<T, LogSoftmax><<<unsigned(rows), softmax_threads, 0, be.stream()>>>(x, y, cols, vec);
  MUNINN_CUDA_CHECK_LAUNCH("softmax_kernel");
}

}  // namespace gpu
}  // namespace detail

/// \brief y[r, :] = softmax(x[r, :]) in fp32 with the row maximum subtracted; one block per row.
/// \tparam T   float or bf16 (the input's storage type; the output is fp32)
/// \param be   the CUDA backend
/// \param x    device input [rows, cols], contiguous
/// \param y    device output [rows, cols] in fp32; may alias x when T is float
/// \param rows number of rows
/// \param cols elements per row, >= 1
template <class T>
void softmax_rows(const cuda_backend& be, const T* x, float* y, std::int64_t rows, std::int64_t cols) {
  detail::gpu::softmax_launch<T, false>(be, "softmax_rows", x, y, rows, cols);
}

/// \brief y[r, :] = log_softmax(x[r, :]) = (x − max) − log(sum(e^(x − max))), in fp32.
/// \tparam T   float or bf16 (the input's storage type; the output is fp32)
/// \param be   the CUDA backend
/// \param x    device input [rows, cols], contiguous
/// \param y    device output [rows, cols] in fp32; may alias x when T is float
/// \param rows number of rows
/// \param cols elements per row, >= 1
template <class T>
void log_softmax_rows(const cuda_backend& be, const T* x, float* y, std::int64_t rows, std::int64_t cols) {
  detail::gpu::softmax_launch<T, true>(be, "log_softmax_rows", x, y, rows, cols);
}

/// \brief out[r] = KL(p_prev ‖ p) = Σ_c p_prev · (log p_prev − log p) per row, from log-probabilities.
///
/// The halting criterion of recurrent-depth models compares consecutive steps' next-token
/// distributions with it. Terms with log p_prev = −inf count as 0.
/// \param be        the CUDA backend
/// \param logp_prev device log-probabilities of the previous step [rows, cols]
/// \param logp      device log-probabilities of this step [rows, cols]
/// \param out       device output [rows]
/// \param rows      number of rows
/// \param cols      elements per row, >= 1
inline void kl_div_rows(const cuda_backend& be, const float* logp_prev, const float* logp, float* out,
                        std::int64_t rows, std::int64_t cols) {
  MUNINN_CHECK(rows >= 0 && cols > 0, "kl_div_rows: bad shape rows=", rows, " cols=", cols);
  detail::gpu::check_rows_grid("kl_div_rows", rows);
  if (rows == 0) return;
  detail::gpu::kl_div_kernel<0><<<unsigned(rows), detail::gpu::softmax_threads, 0, be.stream()>>>(logp_prev, logp, out,
                                                                                              cols);
  MUNINN_CUDA_CHECK_LAUNCH("kl_div_kernel");
}

}  // namespace muninn
