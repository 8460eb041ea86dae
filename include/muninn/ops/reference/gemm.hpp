#pragma once
/// \file
/// \brief Reference GEMM: plain loops in double (the oracle of the GEMM tests).

#include <cmath>
#include <cstdint>

namespace muninn {
namespace ref {

/// \brief C[i, j] = alpha · Σ_k A[i, k] · B[j, k] + beta · C[i, j], summed in double.
///
/// As the ops: C is not read when beta == 0 (NaN in C does not propagate).
/// \param M     rows of A and C
/// \param N     rows of B, columns of C
/// \param K     columns of A and B
/// \param alpha product scale
/// \param A     [M, lda]
/// \param lda   row stride of A
/// \param B     [N, ldb]
/// \param ldb   row stride of B
/// \param beta  scale of the old C
/// \param C     [M, ldc], updated
/// \param ldc   row stride of C
inline void gemm_nt(std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A, std::int64_t lda,
                    const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double dot = 0.0;
      for (std::int64_t k = 0; k < K; ++k) dot += double(A[i * lda + k]) * double(B[j * ldb + k]);
      double c = double(alpha) * dot;
      if (beta != 0.0f) c += double(beta) * double(C[i * ldc + j]);
      C[i * ldc + j] = float(c);
    }
}

/// \brief mag[i·N + j] = |alpha| · Σ_k |A[i, k] · B[j, k]| + |beta · C[i, j]|: the scale an fp32
/// GEMM's rounding error grows with (its worst case is about K · 2^-24 times this).
/// \param M     rows of A and C
/// \param N     rows of B, columns of C
/// \param K     columns of A and B
/// \param alpha product scale
/// \param A     [M, lda]
/// \param lda   row stride of A
/// \param B     [N, ldb]
/// \param ldb   row stride of B
/// \param beta  scale of the old C (0: C is not read)
/// \param C     [M, ldc], the C before the GEMM
/// \param ldc   row stride of C
/// \param mag   output [M, N], dense
inline void gemm_nt_magnitude(std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                              std::int64_t lda, const float* B, std::int64_t ldb, float beta, const float* C,
                              std::int64_t ldc, double* mag) {
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double m = 0.0;
      for (std::int64_t k = 0; k < K; ++k) m += std::fabs(double(A[i * lda + k]) * double(B[j * ldb + k]));
      m *= std::fabs(double(alpha));
      if (beta != 0.0f) m += std::fabs(double(beta) * double(C[i * ldc + j]));
      mag[i * N + j] = m;
    }
}

}  // namespace ref
}  // namespace muninn
