#pragma once
/// \file
/// \brief Row-wise softmax, log-softmax, KL divergence and entropy on the CUDA backend (fp32
/// outputs).

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"
#include "muninn/ops/math.hpp"

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

/// \brief Maximum over all threads of the block (NaN ignored: fmaxf); every thread gets it.
/// Same rules as block_sum: a multiple of 32 threads, called by every thread.
__device__ inline float block_max(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_max(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float t = lane < nwarps ? partial[lane] : -INFINITY;
  t = warp_max(t);
  __syncthreads();
  return t;
}

/// \brief Sum in double over all threads of the block; every thread gets it (block_sum's rules).
__device__ inline double block_sum_double(double v) {
  __shared__ double partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  double t = lane < nwarps ? partial[lane] : 0.0;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
  __syncthreads();
  return t;
}

/// \brief Row maximum of a [*, cols] row over the block.
template <class T>
__device__ MUNINN_INLINE float row_block_max(const T* xr, std::int64_t cols) {
  float m = -INFINITY;
  for (std::int64_t i = threadIdx.x; i < cols; i += softmax_threads) m = fmaxf(m, load(xr + i));
  return block_max(m);
}

/// \brief One block per row: KL(softmax(a) ‖ softmax(b)) as detail::kl_accumulate / kl_finish
/// say. The exponentials are fp32 (expf); the differences u, expm1(u) and all sums are double,
/// which keeps tiny KLs of close distributions (fp32 sums of a 64k-entry row would put an error
/// of about 1e-6 into the result, the size of a typical exit threshold).
template <class T>
__global__ void __launch_bounds__(softmax_threads) kl_rows_kernel(const T* a, const T* b, std::int64_t cols,
                                                                  float* out) {
  const std::int64_t off = std::int64_t(blockIdx.x) * cols;
  const T* ar = a + off;
  const T* br = b + off;
  const float ma = row_block_max(ar, cols), mb = row_block_max(br, cols);
  const double dm = double(ma) - double(mb);
  double sa = 0.0, tu = 0.0, tw = 0.0;
  for (std::int64_t i = threadIdx.x; i < cols; i += softmax_threads) {
    const float x = load(ar + i), y = load(br + i);
    const double ea = expf(x - ma), eb = expf(y - mb);
    sa += ea;
    kl_accumulate<double>(ea, eb, (double(y) - double(x)) + dm, tu, tw);
  }
  sa = block_sum_double(sa);
  tu = block_sum_double(tu);
  tw = block_sum_double(tw);
  if (threadIdx.x == 0) out[blockIdx.x] = float(kl_finish(sa, tu, tw));
}

/// \brief One block per row: entropy of softmax(x) as detail::entropy_term / entropy_finish say
/// (fp32 exponentials, double sums).
template <class T>
__global__ void __launch_bounds__(softmax_threads) entropy_rows_kernel(const T* x, std::int64_t cols, float* out) {
  const T* xr = x + std::int64_t(blockIdx.x) * cols;
  const float m = row_block_max(xr, cols);
  double s = 0.0, t = 0.0;
  for (std::int64_t i = threadIdx.x; i < cols; i += softmax_threads) {
    const float z = load(xr + i) - m;
    const double e = expf(z);
    s += e;
    t += entropy_term<double>(e, z);
  }
  s = block_sum_double(s);
  t = block_sum_double(t);
  if (threadIdx.x == 0) out[blockIdx.x] = float(entropy_finish(t, s));
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

/// \brief out[r] = KL(softmax(logits_prev[r]) ‖ softmax(logits[r])) per row, from logits.
///
/// Formed from the logit differences and expm1 of them in double (detail::kl_accumulate, the
/// host op's formula) with fp32 exponentials, so close distributions keep their small KL. Terms
/// with p = 0 count as 0; each row needs a finite logit. One block per row, asynchronous.
/// \tparam T          float or bf16
/// \param be          the CUDA backend
/// \param logits_prev device previous step's logits [rows, cols], contiguous
/// \param logits      device this step's logits [rows, cols]
/// \param rows        number of rows
/// \param cols        elements per row, >= 1
/// \param out         device KL per row [rows], fp32
template <class T>
void kl_rows(const cuda_backend& be, const T* logits_prev, const detail::gpu::identity_t<T>* logits, std::int64_t rows,
             std::int64_t cols, float* out) {
  static_assert(detail::gpu::is_storage_v<T>, "kl_rows (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && cols > 0, "kl_rows: bad shape rows=", rows, " cols=", cols);
  detail::gpu::check_rows_grid("kl_rows", rows);
  if (rows == 0) return;
  detail::gpu::kl_rows_kernel<T><<<unsigned(rows), detail::gpu::softmax_threads, 0, be.stream()>>>(logits_prev, logits,
                                                                                               cols, out);
  MUNINN_CUDA_CHECK_LAUNCH("kl_rows_kernel");
}

/// \brief out[r] = −Σ_c p_c log p_c with p = softmax(logits[r]) (natural log), per row.
///
/// log s − t / s with s = Σ e^(x − max) and t = Σ e^(x − max) · (x − max)
/// (detail::entropy_term, the host op's formula): fp32 exponentials, double sums. The exact
/// entropy, with no epsilon in the log. One block per row, asynchronous.
/// \tparam T     float or bf16
/// \param be     the CUDA backend
/// \param logits device logits [rows, cols], contiguous
/// \param rows   number of rows
/// \param cols   elements per row, >= 1
/// \param out    device entropy per row [rows], fp32
template <class T>
void entropy_rows(const cuda_backend& be, const T* logits, std::int64_t rows, std::int64_t cols, float* out) {
  static_assert(detail::gpu::is_storage_v<T>, "entropy_rows (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && cols > 0, "entropy_rows: bad shape rows=", rows, " cols=", cols);
  detail::gpu::check_rows_grid("entropy_rows", rows);
  if (rows == 0) return;
  detail::gpu::entropy_rows_kernel<T><<<unsigned(rows), detail::gpu::softmax_threads, 0, be.stream()>>>(logits, cols,
                                                                                                    out);
  MUNINN_CUDA_CHECK_LAUNCH("entropy_rows_kernel");
}

}  // namespace muninn
