#pragma once
/// \file
/// \brief Host GEMM with a weight in any storage format: C = alpha·A·Bᵀ + beta·C, A and C fp32.
///
/// fp32 weights go to gemm_nt's own kernels. bf16 and q8 weights:
/// - M = 1 (decode): a GEMV that reads each weight once and widens it in registers
///   (ops/lowp_kernels.hpp, the widest instruction set this CPU runs). For q8 the activation row
///   is first quantized to int8 per block of 32 (q8_quantize_activations, once per call) and the
///   GEMV runs integer dot products (`host_backend::q8_int8_activations`, on by default).
/// - 2 <= M <= 8, q8 with int8 activations: every row quantized the same way, then one kernel
///   that reads each weight block once for all rows (lowp gemm_q8a); each row's result is bitwise
///   the M = 1 one.
/// - 2 <= M <= 8 otherwise: a few rows of B at a time widened into an L1-sized fp32 buffer, then
///   the fp32 dot-product tiles: the conversion is paid once for all M rows.
/// - M > 8 (prefill): the fp32 blocked GEMM, each strip of NR rows of B widened into a buffer
///   once per K block and reused by every row panel of A.
/// Every sum is fp32 (the q8 decode's per-block sums int32, exact) in an order fixed by the
/// shapes, so results do not depend on the thread count.
/// With `host_backend::batch_invariant` every M widens groups of rows and runs the dot-product
/// order, as gemm_nt does for fp32: a row's result does not depend on the rows sharing the call
/// (so no int8 activations there: they would make M = 1 differ from the same row in a batch).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/gemm.hpp"
#include "muninn/ops/lowp_kernels.hpp"
#include "muninn/ops/weight.hpp"

namespace muninn {
namespace detail {

/// \brief The calling thread's fp32 buffer for widened weights, grown on demand.
inline float* lowp_buffer(std::size_t floats) {
  static thread_local std::vector<float> buf;
  if (buf.size() < floats) buf.resize(floats);
  return buf.data();
}

/// \brief The calling thread's buffers for `M` rows of int8 activations of `K` values each (q8
/// decode), grown on demand: gemm_nt quantizes into them once per call, before its threads start,
/// and every thread reads them. Row m's values start at q + m·ceil(K/32)·32, its scales at
/// d + m·ceil(K/32).
inline void q8_act_buffer(std::int64_t M, std::int64_t K, std::int8_t*& q, float*& d) {
  static thread_local std::vector<std::int8_t> qs;
  static thread_local std::vector<float> ds;
  const std::size_t blocks = std::size_t((K + q8_block - 1) / q8_block) * std::size_t(M);
  if (qs.size() < blocks * q8_block) qs.resize(blocks * q8_block);
  if (ds.size() < blocks) ds.resize(blocks);
  q = qs.data();
  d = ds.data();
}

/// \brief B's rows for gemm_blocked_rows from a bf16 or q8 weight: each strip widened into a buffer.
struct gemm_lowp_rows {
  weight_view B;             ///< the weight
  lowp::kernels k;           ///< the active level's kernels
  /// \brief Widens rows [n, n + nrem) over columns [k0, k0 + kc) and points rows[] at them.
  void operator()(std::int64_t n, int nrem, std::int64_t k0, std::int64_t kc, const float** rows) const {
    float* buf = lowp_buffer(std::size_t(gemm_tiling::nr * kc));
    k.to_f32(B, n, n + nrem, k0, k0 + kc, buf, kc);
    for (int j = 0; j < gemm_tiling::nr; ++j) rows[j] = buf + std::min(j, nrem - 1) * kc;
  }
};

}  // namespace detail

/// \brief C[M,N] = alpha · A[M,K] · B[N,K]ᵀ + beta · C on the host; B in any weight_format.
///
/// With beta == 0 the old contents of C are never read. For a q8 weight, B.ld is a multiple of 32
/// (host_weight sees to it).
/// \param be    the host backend (thread count)
/// \param M     rows of A and C
/// \param N     rows of B, columns of C
/// \param K     columns of A and B
/// \param alpha scale of the product
/// \param A     [M, K] fp32 with row stride lda >= K
/// \param lda   row stride of A in elements
/// \param B     the weight [N, K] (ld >= K)
/// \param beta  scale of C's old contents (0: ignore them)
/// \param C     [M, N] output with row stride ldc >= N; must not overlap A or B
/// \param ldc   row stride of C in elements
inline void gemm_nt(const host_backend& be, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                    const float* A, std::int64_t lda, const weight_view& B, float beta, float* C, std::int64_t ldc) {
  if (B.format == weight_format::f32) {
    gemm_nt(be, M, N, K, alpha, A, lda, static_cast<const float*>(B.data), B.ld, beta, C, ldc);
    return;
  }
  MUNINN_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm_nt: negative size M=", M, " N=", N, " K=", K);
  MUNINN_CHECK(lda >= K && B.ld >= K && ldc >= N, "gemm_nt: leading dimension too small (lda=", lda, ", ldb=", B.ld,
               ", ldc=", ldc, " for M=", M, " N=", N, " K=", K, ")");
  MUNINN_CHECK(B.format != weight_format::q8 || B.ld % q8_block == 0, "gemm_nt: a q8 weight's row stride ", B.ld,
               " is not a multiple of ", q8_block);
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) {  // the same result as fp32: no weight is read
    gemm_nt(be, M, N, K, alpha, A, lda, static_cast<const float*>(nullptr), K, beta, C, ldc);
    return;
  }
  const detail::lowp::kernels k = detail::lowp::active();
  if (M <= 8 && !be.batch_invariant && B.format == weight_format::q8 && be.q8_int8_activations) {
    // Decode, one row or a few (batched decode, parallel sampling, short chunks): each row
    // quantized to int8 once, before the threads (every chunk reads the same), then integer dot
    // products; for M >= 2 each weight block is read once for all rows. A row gets the same
    // result whatever M is (the kernels share their order), so batching does not change decoding.
    const std::int64_t grain = std::max<std::int64_t>(8, 65536 / (K * M));
    const std::int64_t blocks = (K + q8_block - 1) / q8_block;
    std::int8_t* q = nullptr;
    float* d = nullptr;
    detail::q8_act_buffer(M, K, q, d);
    detail::lowp::q8_act a[8];
    for (std::int64_t m = 0; m < M; ++m) {
      std::int8_t* qm = q + m * blocks * q8_block;  // q8_act_buffer's layout: row m after m rows of blocks
      float* dm = d + m * blocks;
      q8_quantize_activations(A + m * lda, K, qm, dm);
      a[m] = {qm, dm};
    }
    if (M == 1)
      be.parallel_for(N, grain, [&](std::int64_t b, std::int64_t e) { k.gemv_q8a(B, b, e, K, alpha, a[0], beta, C); });
    else
      be.parallel_for(N, grain,
                      [&](std::int64_t b, std::int64_t e) { k.gemm_q8a(B, b, e, K, int(M), alpha, a, beta, C, ldc); });
    return;
  }
  if (M == 1 && !be.batch_invariant) {
    const std::int64_t grain = std::max<std::int64_t>(8, 65536 / K);
    be.parallel_for(N, grain, [&](std::int64_t b, std::int64_t e) { k.gemv(B, b, e, K, alpha, A, beta, C); });
    return;
  }
  if (M <= 8 || be.batch_invariant) {
    // Rows of B per widened group: about 32 KiB of fp32 (L1), at least the 4 of a dot tile.
    const std::int64_t group = std::max<std::int64_t>(4, 8192 / K / 4 * 4);
    const std::int64_t grain = std::max<std::int64_t>(8, 65536 / (K * M));
    be.parallel_for(N, grain, [&](std::int64_t b, std::int64_t e) {
      float* buf = detail::lowp_buffer(std::size_t(group * K));
      for (std::int64_t n = b; n < e; n += group) {
        const std::int64_t g = std::min(group, e - n);
        k.to_f32(B, n, n + g, 0, K, buf, K);
        detail::gemm_rows_invariant(M, 0, g, K, alpha, A, lda, buf, K, beta, C + n, ldc);
      }
    });
    return;
  }
  detail::gemm_large_m(be, M, N, K, alpha, A, lda, detail::gemm_lowp_rows{B, k}, beta, C, ldc, q8_block);
}

}  // namespace muninn
