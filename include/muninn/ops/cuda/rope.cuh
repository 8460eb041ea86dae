#pragma once
/// \file
/// \brief Rotary position embedding (interleaved-pair variant, as Huginn) on the CUDA backend.

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief One thread per (row, head, pair): bias add (rounded to T), rotation in fp32, round to T.
template <class T>
__global__ void __launch_bounds__(256) rope_kernel(T* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
                                                   std::int64_t head_dim, const T* bias, const float* table,
                                                   std::int64_t pos0) {
  const std::int64_t half = head_dim / 2, total = rows * n_heads * half;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const std::int64_t i = e % half, rh = e / half;
    const std::int64_t h = rh % n_heads, r = rh / n_heads;
    T* p = x + r * ld + h * head_dim + 2 * i;
    float x0 = load(p), x1 = load(p + 1);
    if (bias) {
      const T* bp = bias + h * head_dim + 2 * i;
      x0 = round_to<T>(x0 + load(bp));
      x1 = round_to<T>(x1 + load(bp + 1));
    }
    const float2 cs = *reinterpret_cast<const float2*>(table + ((pos0 + r) * half + i) * 2);
    store(p, x0 * cs.x - x1 * cs.y);
    store(p + 1, x1 * cs.x + x0 * cs.y);
  }
}

}  // namespace gpu
}  // namespace detail

/// \brief Rotates the heads of x in place, adding an optional per-head bias first.
///
/// Row r has position pos0 + r. For pair i of a head: out[2i] = x[2i]·cos − x[2i+1]·sin,
/// out[2i+1] = x[2i+1]·cos + x[2i]·sin, with {cos, sin} = table[(pos0+r)·D/2 + i], computed in
/// fp32 and rounded once to T. In bf16 the biased value x + bias is rounded to bf16 before the
/// rotation (PyTorch adds qk_bias in the model dtype). The table has no length argument: the
/// caller guarantees it covers positions up to pos0 + rows − 1 (nothing on the device checks).
/// \tparam T       float or bf16
/// \param be       the CUDA backend
/// \param x        device [rows, ld]; the first n_heads·head_dim columns are rotated
/// \param rows     number of rows (tokens)
/// \param ld       row stride of x in elements
/// \param n_heads  heads per row
/// \param head_dim D, even
/// \param bias     device nullptr, or [n_heads·head_dim] added before the rotation (qk_bias)
/// \param table    device fp32 RoPE table [max_pos][D/2][2] = {cos, sin}, 8-byte aligned
/// \param pos0     position of row 0
template <class T>
void rope_interleaved(const cuda_backend& be, T* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
                      std::int64_t head_dim, const detail::gpu::identity_t<T>* bias, const float* table,
                      std::int64_t pos0) {
  static_assert(detail::gpu::is_storage_v<T>, "rope_interleaved (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(head_dim > 0 && head_dim % 2 == 0, "rope_interleaved: head_dim must be positive and even, got ",
               head_dim);
  MUNINN_CHECK(rows >= 0 && n_heads >= 0 && ld >= n_heads * head_dim && pos0 >= 0,
               "rope_interleaved: bad shape rows=", rows, " ld=", ld, " n_heads=", n_heads, " head_dim=", head_dim,
               " pos0=", pos0);
  MUNINN_CHECK((reinterpret_cast<std::uintptr_t>(table) & 7u) == 0, "rope_interleaved: table must be 8-byte aligned");
  const std::int64_t total = rows * n_heads * (head_dim / 2);
  if (total == 0) return;
  detail::gpu::rope_kernel<T><<<detail::gpu::grid_for(be, total, 256), 256, 0, be.stream()>>>(
      x, rows, ld, n_heads, head_dim, bias, table, pos0);
  MUNINN_CUDA_CHECK_LAUNCH("rope_kernel");
}

}  // namespace muninn
