#pragma once
/// \file
/// \brief The weight handle a layer's GEMM takes: a plain pointer to the backend's matrix, or on
/// the host a weight_view (fp32, bf16 or q8), so one layer template serves every storage format.

#include <cstdint>

#include "muninn/ops/gemm_weight.hpp"
#include "muninn/ops/weight.hpp"

namespace muninn::nn {

/// \brief The rows from `n` on of a matrix with row stride `ld` given as a pointer.
template <class T>
const T* weight_rows(const T* w, std::int64_t n, std::int64_t ld) {
  return w + n * ld;
}
/// \brief The rows from `n` on of a host weight (its own row stride applies; `ld` is unused).
inline weight_view weight_rows(const weight_view& w, std::int64_t n, std::int64_t /*ld*/) { return w.rows_from(n); }

/// \brief C = alpha·A·Bᵀ + beta·C with B a pointer to a [N, K] matrix of row stride ldb.
template <class Backend, class T>
void linear_gemm(const Backend& be, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const T* A,
                 std::int64_t lda, const T* B, std::int64_t ldb, float beta, T* C, std::int64_t ldc) {
  gemm_nt(be, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
/// \brief C = alpha·A·Bᵀ + beta·C with B a host weight in any format (its own row stride applies).
inline void linear_gemm(const host_backend& be, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                        const float* A, std::int64_t lda, const weight_view& B, std::int64_t /*ldb*/, float beta,
                        float* C, std::int64_t ldc) {
  gemm_nt(be, M, N, K, alpha, A, lda, B, beta, C, ldc);
}

}  // namespace muninn::nn
