#pragma once
/// \file
/// \brief Host GEMM with the weight transposed (torch Linear layout): C = alpha·A·Bᵀ + beta·C.
///
/// Two kernels, chosen by M (unless the backend asks for row-invariant sums, below):
/// - M <= 8 (decode, speculative drafts): dot-product tiles that stream every row of B exactly
///   once, threads split N. Memory-bound on the weight; no allocation.
/// - M > 8 (prefill): A is packed into K-major panels of `MR` rows (a thread-local buffer reused
///   across calls), and an outer-product micro-kernel keeps an MR x NR tile of C in registers,
///   with vectors running along M and scalars of B broadcast straight from B's rows. Packing A
///   instead of B costs M·K rather than N·K, which matters because Huginn's N and K (5280 ..
///   35840) are much larger than a prefill chunk's M. The packed A block is sized for L2; K is
///   blocked only when all rows of A would not fit (see gemm_choose_blocks).
/// The two sum each element in different orders, so a row's last bits depend on how many rows
/// share the call. With `host_backend::batch_invariant` every M runs the dot-product order
/// (gemm_rows_invariant): slower prefill, the same result for a row alone or in any batch.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/simd.hpp"

namespace muninn {
namespace detail {
inline namespace MUNINN_SIMD_ABI {

/// \brief Register tiling of the prefill micro-kernel for this vector width.
struct gemm_tiling {
  /// \brief Vectors along M in a full tile (MR = max_nv · simd_width rows).
  static constexpr int max_nv = simd_width >= 16 ? 3 : 2;
  /// \brief Columns of C (rows of B) in a tile.
  static constexpr int nr = simd_width >= 16 ? 8 : 6;
  /// \brief Rows of A per packed panel.
  static constexpr int mr = max_nv * simd_width;
  /// \brief Floats of packed A kept per thread (384 KiB): sized for a 512 KiB - 1 MiB L2 with
  /// room left for the B rows and C.
  static constexpr std::int64_t pack_budget = 96 * 1024;
  /// \brief Smallest K block: the element-wise write-back of a tile costs ~15% at 256 and
  /// ~5% at 512 (measured at M = 512, 1024).
  static constexpr std::int64_t min_kc = 512;
  /// \brief Software prefetch distance along a B row, in floats (8 cache lines; measured best of
  /// 64 .. 1024 on Zen 4 for M = 9 .. 48, and for the M <= 8 dot tiles).
  static constexpr int prefetch = 128;
};

/// \brief K and M block sizes of the blocked GEMM.
struct gemm_blocks {
  /// \brief Columns of A (and B) per packed block.
  std::int64_t kc;
  /// \brief Rows of A per packed block, a multiple of gemm_tiling::mr.
  std::int64_t mc;
};

/// \brief Picks the K block for all `mrows` rows of A and depth K.
///
/// A whole K per block when the rows fit the budget (small M streams B in long runs that the
/// hardware prefetcher follows; short runs of 1 KiB per row leave DRAM latency exposed), else
/// K blocks of at least min_kc with as many rows as fit. Blocks are balanced in size. It is chosen
/// once per call, for every row: the K blocks set the order of the fp32 sums, so a thread that
/// takes a share of the rows must use the same ones for results not to depend on the split.
inline std::int64_t gemm_choose_kc(std::int64_t mrows, std::int64_t K) {
  constexpr std::int64_t MR = gemm_tiling::mr, budget = gemm_tiling::pack_budget;
  const std::int64_t mtot = (mrows + MR - 1) / MR * MR;
  std::int64_t kc = K;
  if (mtot * K > budget) kc = std::min(K, std::max(gemm_tiling::min_kc, budget / mtot));
  const std::int64_t kblocks = (K + kc - 1) / kc;
  return (K + kblocks - 1) / kblocks;
}

/// \brief Picks the blocks for `mrows` rows of A (a thread's share) with K blocks of `kc`.
inline gemm_blocks gemm_choose_blocks(std::int64_t mrows, std::int64_t kc) {
  constexpr std::int64_t MR = gemm_tiling::mr, budget = gemm_tiling::pack_budget;
  const std::int64_t mtot = (mrows + MR - 1) / MR * MR;
  std::int64_t mc = std::max<std::int64_t>(MR, budget / kc / MR * MR);
  mc = std::min(mc, mtot);
  const std::int64_t mblocks = (mtot + mc - 1) / mc;
  mc = ((mtot + mblocks - 1) / mblocks + MR - 1) / MR * MR;
  return {kc, mc};
}

/// \brief *c = alpha·acc + beta·*c, never reading *c when beta == 0 (it may be NaN).
MUNINN_INLINE void gemm_store(float* c, float acc, float alpha, float beta) {
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

/// \brief Dot-product tile for small M: MB rows of A against NB rows of B over all of K.
template <int MB, int NB>
MUNINN_INLINE void gemm_dot_tile(std::int64_t K, const float* A, std::int64_t lda, const float* const* brow, int nb,
                                 float* C, std::int64_t ldc, float alpha, float beta, std::int64_t next_group) {
  constexpr int W = simd_width;
  vfloat acc[MB][NB];
  MUNINN_UNROLL
  for (int i = 0; i < MB; ++i)
    MUNINN_UNROLL
    for (int j = 0; j < NB; ++j) acc[i][j] = vfloat{};
  std::int64_t k = 0;
  for (; k + W <= K; k += W) {
    vfloat a[MB];
    MUNINN_UNROLL
    for (int i = 0; i < MB; ++i) {
      a[i] = vload(A + i * lda + k);
      MUNINN_KEEP_IN_REGISTER(a[i]);
    }
    // Prefetch along each row; near its end, run on into the same row of the next group (NB rows
    // further), so that short rows (K of a few hundred) do not start every group cold.
    const std::int64_t ahead = k + gemm_tiling::prefetch;
    const std::int64_t jump = ahead < K ? ahead : next_group + ahead - K;
    MUNINN_UNROLL
    for (int j = 0; j < NB; ++j) {
      __builtin_prefetch(brow[j] + jump);
      vfloat b = vload(brow[j] + k);
      MUNINN_KEEP_IN_REGISTER(b);
      MUNINN_UNROLL
      for (int i = 0; i < MB; ++i) acc[i][j] += a[i] * b;
    }
  }
  // Reduce every accumulator with constant indices (a runtime index would force the tile
  // out of registers), then store the nb valid columns.
  float sums[MB][NB];
  MUNINN_UNROLL
  for (int i = 0; i < MB; ++i)
    MUNINN_UNROLL
    for (int j = 0; j < NB; ++j) sums[i][j] = hsum(acc[i][j]);
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < nb; ++j) {
      float s = sums[i][j];
      for (std::int64_t t = k; t < K; ++t) s += A[i * lda + t] * brow[j][t];
      gemm_store(C + i * ldc + j, s, alpha, beta);
    }
}

/// \brief Longest row gemv_rows takes; above it the interleaved tile streams faster. Measured on
/// weights cold in DRAM by BM_gemv_cold, one core. AVX-512 build, Zen 4: rows 25 vs 14 GB/s at
/// K = 576, tile 23 vs 17 at K = 5280. AVX2 build, Zen 1 (EPYC family 23 model 1): the tile was
/// ahead at every K, 11.4 vs 9.2 GB/s at K = 576, 11.9 vs 9.5 at 1024, 13.5 vs 9.6 at 2048, so
/// that build never takes gemv_rows (0). Zen 1 is the only AVX2 machine measured; the 256-bit
/// choice follows it.
inline constexpr std::int64_t gemv_rows_max_k = simd_width == 8 ? 0 : 3072;

/// \brief Matrix-vector product over rows [n0, n1) of B: C[n] = alpha·(a · B[n]) + beta·C[n].
///
/// Decode's GEMV streams every weight once from DRAM. Reading the rows one after another keeps a
/// single sequential stream, which the hardware prefetcher follows at full bandwidth; interleaving
/// a group of short rows (K of a few hundred) measured about half of it. Four accumulators hide
/// the FMA latency. No software prefetch: on one stream it measured 20-30 % slower than leaving
/// the hardware prefetcher alone.
inline void gemv_rows(std::int64_t n0, std::int64_t n1, std::int64_t K, float alpha, const float* a, const float* B,
                      std::int64_t ldb, float beta, float* C) {
  constexpr int W = simd_width;
  for (std::int64_t n = n0; n < n1; ++n) {
    const float* b = B + n * ldb;
    vfloat s0{}, s1{}, s2{}, s3{};
    std::int64_t k = 0;
    for (; k + 4 * W <= K; k += 4 * W) {
      s0 += vload(a + k) * vload(b + k);
      s1 += vload(a + k + W) * vload(b + k + W);
      s2 += vload(a + k + 2 * W) * vload(b + k + 2 * W);
      s3 += vload(a + k + 3 * W) * vload(b + k + 3 * W);
    }
    for (; k + W <= K; k += W) s0 += vload(a + k) * vload(b + k);
    float acc = hsum((s0 + s1) + (s2 + s3));
    for (; k < K; ++k) acc += a[k] * b[k];
    gemm_store(C + n, acc, alpha, beta);
  }
}

/// \brief Small-M GEMM (M <= 8) over columns [n0, n1).
///
/// A group of NB rows of B is read from memory once; when M > 4 the rows of A are taken four at a
/// time and the group's second pass hits L2. Tiles of at most 4 x 4 vectors keep every operand
/// in registers (an 8 x 2 tile would re-read all of A from L2 for every two rows of B).
template <int M>
void gemm_small_m(std::int64_t n0, std::int64_t n1, std::int64_t K, float alpha, const float* A, std::int64_t lda,
                  const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  constexpr int NB = M == 1 ? 8 : 4;
  constexpr int M1 = M < 4 ? M : 4, M2 = M - M1;
  for (std::int64_t n = n0; n < n1; n += NB) {
    const int nb = int(std::min<std::int64_t>(NB, n1 - n));
    const float* rows[NB];
    // Surplus tile rows re-read the last valid row; their results are discarded.
    for (int j = 0; j < NB; ++j) rows[j] = B + (n + std::min(j, nb - 1)) * ldb;
    gemm_dot_tile<M1, NB>(K, A, lda, rows, nb, C + n, ldc, alpha, beta, NB * ldb);
    if constexpr (M2 > 0)
      gemm_dot_tile<M2, NB>(K, A + M1 * lda, lda, rows, nb, C + M1 * ldc + n, ldc, alpha, beta, NB * ldb);
  }
}

/// \brief Packs rows [m0, m0+mc) x cols [k0, k0+kc) of A into K-major panels of mr rows,
/// zero-padding the last panel.
inline void gemm_pack_a(const float* A, std::int64_t lda, std::int64_t mc, std::int64_t k0, std::int64_t kc,
                        float* ap) {
  constexpr int MR = gemm_tiling::mr;
  constexpr std::int64_t KB = 64;  // the MR x KB destination tile (12 KiB) stays in L1 while filled
  for (std::int64_t p = 0; p < mc; p += MR) {
    const std::int64_t rows = std::min<std::int64_t>(MR, mc - p);
    float* dst = ap + p * kc;
    for (std::int64_t kb = 0; kb < kc; kb += KB) {
      const std::int64_t ke = std::min(kc, kb + KB);
      for (std::int64_t i = 0; i < rows; ++i) {
        const float* src = A + (p + i) * lda + k0;
        for (std::int64_t k = kb; k < ke; ++k) dst[k * MR + i] = src[k];
      }
      for (std::int64_t i = rows; i < MR; ++i)
        for (std::int64_t k = kb; k < ke; ++k) dst[k * MR + i] = 0.0f;
    }
  }
}

/// \brief Outer-product micro-kernel: an (NV·W) x NR tile of C held transposed in registers.
template <int NV>
MUNINN_INLINE void gemm_micro(std::int64_t kc, const float* ap, const float* const* brow, int mrem,
                              int nrem, float* C, std::int64_t ldc, float alpha, float beta, bool first) {
  constexpr int W = simd_width, NR = gemm_tiling::nr, MR = gemm_tiling::mr;
  vfloat c[NR][NV];
  MUNINN_UNROLL
  for (int j = 0; j < NR; ++j)
    MUNINN_UNROLL
    for (int v = 0; v < NV; ++v) c[j][v] = vfloat{};
  const float* b[NR];
  MUNINN_UNROLL
  for (int j = 0; j < NR; ++j) b[j] = brow[j];
  const auto step = [&](std::int64_t k) {
    vfloat a[NV];
    MUNINN_UNROLL
    for (int v = 0; v < NV; ++v) a[v] = vload(ap + k * MR + v * W);
    MUNINN_UNROLL
    for (int j = 0; j < NR; ++j) {
      const float s = b[j][k];
      MUNINN_UNROLL
      for (int v = 0; v < NV; ++v) c[j][v] += a[v] * s;
    }
  };
  std::int64_t k = 0;
  // One prefetch per B row and cache line: NR short strided streams, each crossing a page every
  // 1024 steps, are more than the hardware prefetcher follows when M is small.
  for (; k + 16 <= kc; k += 16) {
    MUNINN_UNROLL
    for (int j = 0; j < NR; ++j) __builtin_prefetch(b[j] + k + gemm_tiling::prefetch);
    for (std::int64_t kk = k; kk < k + 16; ++kk) step(kk);
  }
  for (; k < kc; ++k) step(k);
  float t[NR][NV * W];
  MUNINN_UNROLL
  for (int j = 0; j < NR; ++j)
    MUNINN_UNROLL
    for (int v = 0; v < NV; ++v) vstore(&t[j][v * W], c[j][v]);
  // The tile is transposed in registers (vectors run along M), so C is written element-wise;
  // three branch-free loops keep that cheap next to the kc·NV·NR FMAs of the tile.
  if (!first) {
    for (int i = 0; i < mrem; ++i)
      for (int j = 0; j < nrem; ++j) C[i * ldc + j] += alpha * t[j][i];
  } else if (beta == 0.0f) {
    for (int i = 0; i < mrem; ++i)
      for (int j = 0; j < nrem; ++j) C[i * ldc + j] = alpha * t[j][i];  // never reads C (may be NaN)
  } else {
    for (int i = 0; i < mrem; ++i)
      for (int j = 0; j < nrem; ++j) C[i * ldc + j] = alpha * t[j][i] + beta * C[i * ldc + j];
  }
}

/// \brief The packed-A buffer of the calling thread, grown on demand and kept for later calls.
inline float* gemm_pack_buffer(std::size_t floats) {
  static thread_local std::vector<vfloat> buf;
  const std::size_t vecs = (floats + simd_width - 1) / simd_width;
  if (buf.size() < vecs) buf.resize(vecs);
  return reinterpret_cast<float*>(buf.data());
}

/// \brief B's rows for the blocked GEMM when B is an fp32 matrix: pointers straight into it.
struct gemm_f32_rows {
  const float* B;   ///< [N, K]
  std::int64_t ldb;  ///< row stride of B
  /// \brief Points rows[j] at row n + j of B from column k0 on (rows past the end repeat the last).
  MUNINN_INLINE void operator()(std::int64_t n, int nrem, std::int64_t k0, std::int64_t, const float** rows) const {
    for (int j = 0; j < gemm_tiling::nr; ++j) rows[j] = B + (n + std::min(j, nrem - 1)) * ldb + k0;
  }
};

/// \brief Blocked GEMM on the sub-problem rows [m0, m1) x columns [n0, n1), single thread, with
/// K blocks of `kc` (gemm_choose_kc of the whole call). `b_rows(n, nrem, k0, kc, rows)` points
/// rows[0..NR) at fp32 rows n.. of B over columns [k0, k0 + kc) (gemm_f32_rows; a weight in
/// another format converts a strip into a buffer).
template <class BRows>
void gemm_blocked_rows(std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1, std::int64_t K,
                       std::int64_t kc_all, float alpha, const float* A, std::int64_t lda, const BRows& b_rows,
                       float beta, float* C, std::int64_t ldc) {
  constexpr int W = simd_width, NR = gemm_tiling::nr, MR = gemm_tiling::mr;
  const gemm_blocks blk = gemm_choose_blocks(m1 - m0, kc_all);
  const std::int64_t KC = blk.kc, MC = blk.mc;
  float* ap = gemm_pack_buffer(std::size_t(MC * KC));
  for (std::int64_t k0 = 0; k0 < K; k0 += KC) {
    const std::int64_t kc = std::min(KC, K - k0);
    const bool first = k0 == 0;
    for (std::int64_t mb = m0; mb < m1; mb += MC) {
      const std::int64_t mc = std::min(MC, m1 - mb);
      gemm_pack_a(A + mb * lda, lda, mc, k0, kc, ap);
      for (std::int64_t n = n0; n < n1; n += NR) {
        const int nrem = int(std::min<std::int64_t>(NR, n1 - n));
        const float* rows[NR];
        b_rows(n, nrem, k0, kc, rows);
        for (std::int64_t p = 0; p < mc; p += MR) {
          const int mrem = int(std::min<std::int64_t>(MR, mc - p));
          float* c = C + (mb + p) * ldc + n;
          const float* a = ap + p * kc;
          // Narrower kernels for the last panel avoid computing padding rows: up to 2/3 of the
          // panel with three vectors, 1/2 with two (M = 97 = 6·16 + 1 on AVX2 ran 112 rows, 13 %
          // of the GEMM, before the one-vector kernel took such a panel). Each element is summed in
          // the same order by every width, so the choice does not change results.
          if (mrem > (gemm_tiling::max_nv - 1) * W)
            gemm_micro<gemm_tiling::max_nv>(kc, a, rows, mrem, nrem, c, ldc, alpha, beta, first);
          else if (mrem > W)
            gemm_micro<2>(kc, a, rows, mrem, nrem, c, ldc, alpha, beta, first);
          else
            gemm_micro<1>(kc, a, rows, mrem, nrem, c, ldc, alpha, beta, first);
        }
      }
    }
  }
}

/// \brief The threaded blocked GEMM (M > 8) with B's rows from `b_rows` (see gemm_blocked_rows).
///
/// Threads split N into tiles of NR columns, or M into panels when N is too narrow to share.
/// K blocks are rounded up to a multiple of `kc_align` (a q8 weight's block).
template <class BRows>
void gemm_large_m(const host_backend& be, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                  std::int64_t lda, const BRows& b_rows, float beta, float* C, std::int64_t ldc,
                  std::int64_t kc_align = 1) {
  constexpr std::int64_t NR = gemm_tiling::nr, MR = gemm_tiling::mr;
  const std::int64_t ntiles = (N + NR - 1) / NR, mpanels = (M + MR - 1) / MR;
  const std::int64_t threads = be.threads();
  const std::int64_t kc = std::min(K, (gemm_choose_kc(M, K) + kc_align - 1) / kc_align * kc_align);
  // Work per task should dwarf packing A (M·K per task) and the fork/join.
  if (ntiles >= 8 * threads || ntiles >= mpanels) {
    const std::int64_t grain = std::max<std::int64_t>(1, 262144 / (M * K * NR));
    be.parallel_for(ntiles, grain, [&](std::int64_t b, std::int64_t e) {
      gemm_blocked_rows(0, M, b * NR, std::min(N, e * NR), K, kc, alpha, A, lda, b_rows, beta, C, ldc);
    });
  } else {
    be.parallel_for(mpanels, 1, [&](std::int64_t b, std::int64_t e) {
      gemm_blocked_rows(b * MR, std::min(M, e * MR), 0, N, K, kc, alpha, A, lda, b_rows, beta, C, ldc);
    });
  }
}

/// \brief gemm_small_m for a run-time M in [2, 8] over columns [n0, n1).
inline void gemm_small_m_of(std::int64_t M, std::int64_t n0, std::int64_t n1, std::int64_t K, float alpha,
                            const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                            std::int64_t ldc) {
  switch (M) {
    case 2: gemm_small_m<2>(n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
    case 3: gemm_small_m<3>(n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
    case 4: gemm_small_m<4>(n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
    case 5: gemm_small_m<5>(n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
    case 6: gemm_small_m<6>(n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
    case 7: gemm_small_m<7>(n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
    default: gemm_small_m<8>(n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc); break;
  }
}

/// \brief gemv_rows in the order of the dot-product tiles: one vector accumulator per row (lanes
/// along K), then hsum, then the K tail. A single FMA chain per row still outruns DRAM (72
/// dependent FMAs per 2.3 KB row at K = 576), and it keeps the one sequential stream.
inline void gemv_rows_invariant(std::int64_t n0, std::int64_t n1, std::int64_t K, float alpha, const float* a,
                                const float* B, std::int64_t ldb, float beta, float* C) {
  constexpr int W = simd_width;
  for (std::int64_t n = n0; n < n1; ++n) {
    const float* b = B + n * ldb;
    vfloat s{};
    std::int64_t k = 0;
    for (; k + W <= K; k += W) s += vload(a + k) * vload(b + k);
    float acc = hsum(s);
    for (; k < K; ++k) acc += a[k] * b[k];
    gemm_store(C + n, acc, alpha, beta);
  }
}

/// \brief The row-invariant GEMM over columns [n0, n1), for any M.
///
/// Every element is summed as a dot-product tile sums it (vector lanes along K, hsum, K tail),
/// whatever M is, so a row's result does not depend on the rows sharing the call. B is taken in
/// slices that stay in L2 while each group of up to 8 rows of A passes over them.
inline void gemm_rows_invariant(std::int64_t M, std::int64_t n0, std::int64_t n1, std::int64_t K, float alpha,
                                const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta,
                                float* C, std::int64_t ldc) {
  if (M == 1) {
    gemv_rows_invariant(n0, n1, K, alpha, A, B, ldb, beta, C);
    return;
  }
  const std::int64_t slice = std::max<std::int64_t>(8, gemm_tiling::pack_budget / std::max<std::int64_t>(K, 1) / 8 * 8);
  for (std::int64_t n = n0; n < n1; n += slice) {
    const std::int64_t ne = std::min(n1, n + slice);
    for (std::int64_t m = 0; m < M; m += 8) {
      const std::int64_t rows = std::min<std::int64_t>(8, M - m);
      if (rows == 1)
        gemv_rows_invariant(n, ne, K, alpha, A + m * lda, B, ldb, beta, C + m * ldc);
      else
        gemm_small_m_of(rows, n, ne, K, alpha, A + m * lda, lda, B, ldb, beta, C + m * ldc, ldc);
    }
  }
}

}  // namespace MUNINN_SIMD_ABI
}  // namespace detail

/// \brief C[M,N] = alpha · A[M,K] · B[N,K]ᵀ + beta · C on the host, in fp32.
///
/// B is a weight stored [out, in] like torch's Linear. With beta == 0 the old contents of C are
/// never read (they may be NaN). Threads split N (or M when N is too narrow to share).
/// \param be   the host backend (thread count)
/// \param M    rows of A and C
/// \param N    rows of B, columns of C
/// \param K    columns of A and B
/// \param alpha scale of the product
/// \param A    [M, K] with row stride lda >= K
/// \param lda  row stride of A in elements
/// \param B    [N, K] with row stride ldb >= K
/// \param ldb  row stride of B in elements
/// \param beta scale of C's old contents (0: ignore them)
/// \param C    [M, N] output with row stride ldc >= N; must not overlap A or B
/// \param ldc  row stride of C in elements
inline void gemm_nt(const host_backend& be, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                    const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                    std::int64_t ldc) {
  MUNINN_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm_nt: negative size M=", M, " N=", N, " K=", K);
  MUNINN_CHECK(lda >= K && ldb >= K && ldc >= N, "gemm_nt: leading dimension too small (lda=", lda, ", ldb=", ldb,
               ", ldc=", ldc, " for M=", M, " N=", N, " K=", K, ")");
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) {
    be.parallel_for(M, 16, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i)
        for (std::int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    });
    return;
  }
  if (be.batch_invariant) {
    const std::int64_t grain = std::max<std::int64_t>(8, 65536 / (K * M));
    be.parallel_for(N, grain, [&](std::int64_t b, std::int64_t e) {
      detail::gemm_rows_invariant(M, b, e, K, alpha, A, lda, B, ldb, beta, C, ldc);
    });
    return;
  }
  if (M <= 8) {
    // Each thread takes a slice of N; ~64k multiply-adds per slice make the fork worth it.
    const std::int64_t grain = std::max<std::int64_t>(8, 65536 / (K * M));
    be.parallel_for(N, grain, [&](std::int64_t b, std::int64_t e) {
      if (M > 1)
        detail::gemm_small_m_of(M, b, e, K, alpha, A, lda, B, ldb, beta, C, ldc);
      else if (K <= detail::gemv_rows_max_k)
        // Short rows: one sequential stream. Long rows (K > gemv_rows_max_k): the 8-row tile,
        // whose interleaved streams keep more pages in flight (BM_gemv_cold: 23 vs 17 GB/s at
        // K = 5280 on Zen 4).
        detail::gemv_rows(b, e, K, alpha, A, B, ldb, beta, C);
      else
        detail::gemm_small_m<1>(b, e, K, alpha, A, lda, B, ldb, beta, C, ldc);
    });
    return;
  }
  detail::gemm_large_m(be, M, N, K, alpha, A, lda, detail::gemm_f32_rows{B, ldb}, beta, C, ldc);
}

}  // namespace muninn
