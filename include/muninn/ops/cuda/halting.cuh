#pragma once
/// \file
/// \brief Exit-decision ops of the built-in halting criteria on the CUDA backend (the host
/// versions are in ops/halting.hpp; the per-row maths is shared through ops/halt_math.hpp).

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"
#include "muninn/ops/cuda/softmax.cuh"
#include "muninn/ops/halt_math.hpp"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief Threads per row of latent_change_kernel.
inline constexpr int latent_threads = 256;

/// \brief One block per row: the four sums of latent_change_rows in double.
template <class T>
__global__ void __launch_bounds__(latent_threads) latent_change_kernel(const T* x, const T* p, std::int64_t h,
                                                                      float* rel, float* cos_dist) {
  const T* xr = x + std::int64_t(blockIdx.x) * h;
  const T* pr = p + std::int64_t(blockIdx.x) * h;
  double d2 = 0, x2 = 0, p2 = 0, xp = 0;
  for (std::int64_t i = threadIdx.x; i < h; i += latent_threads) {
    const double xi = load(xr + i), pi = load(pr + i);
    d2 += (xi - pi) * (xi - pi);
    x2 += xi * xi;
    p2 += pi * pi;
    xp += xi * pi;
  }
  d2 = block_sum_double(d2);
  x2 = block_sum_double(x2);
  p2 = block_sum_double(p2);
  xp = block_sum_double(xp);
  if (threadIdx.x == 0) {
    rel[blockIdx.x] = relative_change(d2, x2);
    cos_dist[blockIdx.x] = cosine_distance(xp, x2, p2);
  }
}

/// \brief One thread per row: halt_decide_row.
__global__ void __launch_bounds__(256) halt_decide_kernel(halt_rule_kind kind, const float* stat,
                                                          const std::int32_t* argmax, float* prev_stat,
                                                          std::int32_t* prev_argmax, std::int32_t* count,
                                                          std::int64_t rows, double threshold, std::uint8_t* mask) {
  const std::int64_t r = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float ps = prev_stat ? prev_stat[r] : 0.0f;
  std::int32_t pa = prev_argmax ? prev_argmax[r] : 0, c = count ? count[r] : 0;
  mask[r] = halt_decide_row(kind, stat ? stat[r] : 0.0f, argmax ? argmax[r] : 0, ps, pa, c, threshold);
  if (prev_stat) prev_stat[r] = ps;
  if (prev_argmax) prev_argmax[r] = pa;
  if (count) count[r] = c;
}

/// \brief One thread per sample: q_halt_row on its [q_halt, q_continue] pair.
template <class T>
__global__ void __launch_bounds__(256) q_halt_decide_kernel(const T* q, std::int64_t rows, q_halt_kind kind,
                                                            float threshold, std::uint8_t* mask) {
  const std::int64_t r = std::int64_t(blockIdx.x) * 256 + threadIdx.x;
  if (r >= rows) return;
  mask[r] = q_halt_row(kind, load(q + 2 * r), load(q + 2 * r + 1), threshold);
}

}  // namespace gpu
}  // namespace detail

/// \brief rel[r] = ‖x_r − p_r‖ / ‖x_r‖, cos_dist[r] = 1 − cos(x_r, p_r), sums in double (one block per row).
/// \tparam T float or bf16
/// \param be       the CUDA backend
/// \param x        device new states [rows, h]
/// \param p        device previous states [rows, h]
/// \param rows     rows
/// \param h        width
/// \param rel      device output [rows]
/// \param cos_dist device output [rows]
template <class T>
void latent_change_rows(const cuda_backend& be, const T* x, const T* p, std::int64_t rows, std::int64_t h, float* rel,
                        float* cos_dist) {
  static_assert(detail::gpu::is_storage_v<T>, "latent_change_rows (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && h > 0, "latent_change_rows: bad shape rows=", rows, " h=", h);
  if (rows == 0) return;
  detail::gpu::check_rows_grid("latent_change_rows", rows);
  detail::gpu::latent_change_kernel<T>
      <<<unsigned(rows), detail::gpu::latent_threads, 0, be.stream()>>>(x, p, h, rel, cos_dist);
  MUNINN_CUDA_CHECK_LAUNCH("latent_change_kernel");
}

/// \brief Decides each row's exit on the device: mask[r] = 1 when row r exits (see the host
/// halt_decide for the arguments; every pointer is device memory).
/// \param be          the CUDA backend
/// \param kind        how the statistic decides
/// \param stat        the rows' new statistic [rows] (nullptr for argmax_run)
/// \param argmax      the rows' new arg-max [rows] (argmax_run only)
/// \param prev_stat   running previous statistic [rows] (entropy_change), updated
/// \param prev_argmax running previous arg-max [rows] (argmax_run), updated
/// \param count       running count of equal arg-maxes [rows] (argmax_run), updated
/// \param rows        rows
/// \param threshold   the criterion's threshold
/// \param mask        device output [rows], 1 = exit
inline void halt_decide(const cuda_backend& be, halt_rule_kind kind, const float* stat, const std::int32_t* argmax,
                        float* prev_stat, std::int32_t* prev_argmax, std::int32_t* count, std::int64_t rows,
                        double threshold, std::uint8_t* mask) {
  MUNINN_CHECK(rows >= 0, "halt_decide: negative rows ", rows);
  if (rows == 0) return;
  detail::gpu::halt_decide_kernel<<<unsigned((rows + 255) / 256), 256, 0, be.stream()>>>(
      kind, stat, argmax, prev_stat, prev_argmax, count, rows, threshold, mask);
  MUNINN_CUDA_CHECK_LAUNCH("halt_decide_kernel");
}

/// \brief q_halt_decide on the CUDA backend (ops/halting.hpp for the arguments; q is device
/// memory in the compute type, mask device bytes).
template <class T>
void q_halt_decide(const cuda_backend& be, const T* q, std::int64_t rows, q_halt_kind kind, float threshold,
                   std::uint8_t* mask) {
  static_assert(detail::gpu::is_storage_v<T>, "q_halt_decide (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0, "q_halt_decide: negative rows ", rows);
  if (rows == 0) return;
  detail::gpu::q_halt_decide_kernel<T><<<unsigned((rows + 255) / 256), 256, 0, be.stream()>>>(q, rows, kind, threshold,
                                                                                              mask);
  MUNINN_CUDA_CHECK_LAUNCH("q_halt_decide_kernel");
}

}  // namespace muninn
