#pragma once
/// \file
/// \brief GEMM on the CUDA backend through cuBLAS (cublasGemmEx, fp32 accumulation).

#include <climits>
#include <cstdint>
#include <type_traits>

#include "muninn/ops/cuda/common.cuh"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief C[i, j] = beta · C[i, j] over an M x N block with row stride ldc (beta 0 writes zeros,
/// never reading C, as BLAS does).
template <class T>
__global__ void __launch_bounds__(256) scale_matrix_kernel(T* c, std::int64_t M, std::int64_t N, std::int64_t ldc,
                                                           float beta) {
  const std::int64_t total = M * N, stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += stride) {
    T* p = c + (t / N) * ldc + t % N;
    store(p, beta == 0.0f ? 0.0f : beta * load(p));
  }
}

}  // namespace gpu
}  // namespace detail

/// \brief C[M,N] = alpha · A[M,K] · B[N,K]ᵀ + beta · C on the GPU, accumulating in fp32.
///
/// Row-major operands, B in torch Linear layout [out, in]. cuBLAS is column-major, so this calls
/// cublasGemmEx for Cᵀ = B · Aᵀ: a row-major [N, K] B with stride ldb is a column-major K x N
/// matrix, used transposed. fp32 uses CUBLAS_COMPUTE_32F without TF32 (exact fp32 products);
/// bf16 uses tensor cores with fp32 accumulation and rounds C once. As in BLAS, beta == 0 never
/// reads C. Asynchronous on the backend's stream.
/// \tparam T   float or bf16
/// \param be   the CUDA backend
/// \param M    rows of A and C
/// \param N    rows of B, columns of C
/// \param K    columns of A and B
/// \param alpha scale of the product
/// \param A    device [M, K] with row stride lda >= K
/// \param lda  row stride of A in elements
/// \param B    device [N, K] with row stride ldb >= K
/// \param ldb  row stride of B in elements
/// \param beta scale of the old C
/// \param C    device [M, N] with row stride ldc >= N
/// \param ldc  row stride of C in elements
template <class T>
void gemm_nt(const cuda_backend& be, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const T* A,
             std::int64_t lda, const T* B, std::int64_t ldb, float beta, T* C, std::int64_t ldc) {
  static_assert(detail::gpu::is_storage_v<T>, "gemm_nt (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm_nt: negative size M=", M, " N=", N, " K=", K);
  MUNINN_CHECK(lda >= K && ldb >= K && ldc >= N, "gemm_nt: row strides too small: lda=", lda, " ldb=", ldb,
               " (need >= K=", K, "), ldc=", ldc, " (need >= N=", N, ")");
  MUNINN_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX,
               "gemm_nt: sizes exceed cuBLAS's 32-bit limit (M=", M, " N=", N, " K=", K, ")");
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) {
    // No product to add (and cuBLAS wants leading dimensions >= 1 even when K is 0): only C's
    // scaling remains. A and B are not read, as in BLAS.
    if (beta == 1.0f) return;
    detail::gpu::scale_matrix_kernel<T>
        <<<detail::gpu::grid_for(be, M * N, 256), 256, 0, be.stream()>>>(C, M, N, ldc, beta);
    MUNINN_CUDA_CHECK_LAUNCH("scale_matrix_kernel");
    return;
  }
  constexpr cudaDataType_t type = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
  MUNINN_CUBLAS_CHECK(cublasGemmEx(be.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(M), int(K), &alpha, B, type,
                                   int(ldb), A, type, int(lda), &beta, C, type, int(ldc), CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
}

}  // namespace muninn
