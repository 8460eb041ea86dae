#pragma once
/// \file
/// \brief Row gather and scatter on the CUDA backend: pick the rows of a token subset, write them
/// back, or add them back scaled by a gate (mixture-of-recursions routing).

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"
#include "muninn/ops/math.hpp"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief What a row-copy kernel does with one element of a selected row pair.
enum class row_op {
  gather,       ///< dst[i] = src[idx[i]]
  scatter,      ///< dst[idx[i]] = src[i]
  scatter_add,  ///< dst[idx[i]] = T(dst[idx[i]] + gate[i] · src[i])
};

/// \brief Grid-stride over the n × width elements; row i of the compact side pairs with row
/// idx[i] of the indexed side. Scatters need distinct indices (no atomics).
template <class T, row_op Op>
__global__ void __launch_bounds__(256) row_copy_kernel(T* dst, std::int64_t ld_dst, const T* src, std::int64_t ld_src,
                                                       const std::int32_t* idx, const float* gate, std::int64_t n,
                                                       std::int64_t width) {
  const std::int64_t total = n * width, stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const std::int64_t i = e / width, c = e - i * width, j = idx[i];
    if constexpr (Op == row_op::gather) {
      dst[i * ld_dst + c] = src[j * ld_src + c];
    } else if constexpr (Op == row_op::scatter) {
      dst[j * ld_dst + c] = src[i * ld_src + c];
    } else {
      T* d = dst + j * ld_dst + c;
      store(d, gated_add(load(d), gate ? gate[i] : 1.0f, load(src + i * ld_src + c)));
    }
  }
}

/// \brief Checks the shape and launches row_copy_kernel.
template <class T, row_op Op>
void row_copy_launch(const cuda_backend& be, const char* op, T* dst, std::int64_t ld_dst, const T* src,
                     std::int64_t ld_src, const std::int32_t* idx, const float* gate, std::int64_t n,
                     std::int64_t width) {
  static_assert(is_storage_v<T>, "gather/scatter (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(n >= 0 && width >= 0 && ld_src >= width && ld_dst >= width, op, ": bad shape n=", n, " width=", width,
               " ld_src=", ld_src, " ld_dst=", ld_dst);
  if (n == 0 || width == 0) return;
  row_copy_kernel<T, Op><<<grid_for(be, n * width, 256), 256, 0, be.stream()>>>(dst, ld_dst, src, ld_src, idx, gate, n,
                                                                                width);
  MUNINN_CUDA_CHECK_LAUNCH("row_copy_kernel");
}

}  // namespace gpu
}  // namespace detail

/// \brief dst[i, :width] = src[idx[i], :width] for i < n (an exact copy of the stored values).
///
/// Device indices are not checked: each must be a valid row of src. Repeated indices are fine.
/// \tparam T     float or bf16
/// \param be     the CUDA backend
/// \param src    device source [*, ld_src]
/// \param ld_src row stride of src
/// \param idx    device row of src for each output row [n]
/// \param n      rows to gather
/// \param width  elements copied per row
/// \param dst    device destination [n, ld_dst]; must not overlap src
/// \param ld_dst row stride of dst
template <class T>
void gather_rows(const cuda_backend& be, const T* src, std::int64_t ld_src, const std::int32_t* idx, std::int64_t n,
                 std::int64_t width, T* dst, std::int64_t ld_dst) {
  detail::gpu::row_copy_launch<T, detail::gpu::row_op::gather>(be, "gather_rows", dst, ld_dst, src, ld_src, idx,
                                                               nullptr, n, width);
}

/// \brief dst[idx[i], :width] = src[i, :width] for i < n: the inverse of gather_rows.
///
/// The indices must be distinct (two source rows aimed at one destination row would race); not
/// checked, like their range.
/// \tparam T     float or bf16
/// \param be     the CUDA backend
/// \param dst    device destination [*, ld_dst]; must not overlap src
/// \param ld_dst row stride of dst
/// \param idx    device row of dst for each source row [n], distinct
/// \param src    device source [n, ld_src]
/// \param ld_src row stride of src
/// \param n      rows to scatter
/// \param width  elements copied per row
template <class T>
void scatter_rows(const cuda_backend& be, T* dst, std::int64_t ld_dst, const std::int32_t* idx,
                  const detail::gpu::identity_t<T>* src, std::int64_t ld_src, std::int64_t n, std::int64_t width) {
  detail::gpu::row_copy_launch<T, detail::gpu::row_op::scatter>(be, "scatter_rows", dst, ld_dst, src, ld_src, idx,
                                                                nullptr, n, width);
}

/// \brief dst[idx[i], :width] += gate[i] · src[i, :width] for i < n (gate = 1 when null).
///
/// Each element is T(dst + gate · src) computed in fp32 (detail::gated_add, as on the host) and
/// rounded once, which is what PyTorch gives for a bf16 residual plus an fp32 gate times a bf16
/// block output. The indices must be distinct: each destination row has one writer, so no
/// atomics are needed (duplicates race; not checked).
/// \tparam T     float or bf16
/// \param be     the CUDA backend
/// \param dst    device destination [*, ld_dst], updated in place; must not overlap src
/// \param ld_dst row stride of dst
/// \param idx    device row of dst for each source row [n], distinct
/// \param src    device source [n, ld_src]
/// \param ld_src row stride of src
/// \param gate   device fp32 factor per source row [n], or nullptr for 1
/// \param n      rows to add
/// \param width  elements per row
template <class T>
void scatter_add_gated(const cuda_backend& be, T* dst, std::int64_t ld_dst, const std::int32_t* idx,
                       const detail::gpu::identity_t<T>* src, std::int64_t ld_src, const float* gate, std::int64_t n,
                       std::int64_t width) {
  detail::gpu::row_copy_launch<T, detail::gpu::row_op::scatter_add>(be, "scatter_add_gated", dst, ld_dst, src, ld_src,
                                                                    idx, gate, n, width);
}

}  // namespace muninn
