#pragma once
/// \file
/// \brief Rotary position embedding on the CUDA backend: Huginn's interleaved pairs and Hugging
/// Face's rotate-half, each with a start position or a device array of positions.

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"
#include "muninn/ops/math.hpp"
#include "muninn/ops/rope_math.hpp"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief One thread per (row, head, pair): bias add (rounded to T), rotation in fp32
/// (detail::rope_rotate, as on the host), round to T. `L` picks the pair's two columns, `Pos`
/// the row's position.
template <class T, rope_layout L, class Pos>
__global__ void __launch_bounds__(256) rope_kernel(T* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
                                                   std::int64_t head_dim, const T* bias, const float* table, Pos pos) {
  const std::int64_t half = head_dim / 2, total = rows * n_heads * half;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const std::int64_t i = e % half, rh = e / half;
    const std::int64_t h = rh % n_heads, r = rh / n_heads;
    std::int64_t c0, c1;
    rope_pair_columns<L>(i, half, c0, c1);
    T* p = x + r * ld + h * head_dim;
    float x0 = load(p + c0), x1 = load(p + c1);
    if (bias) {
      const T* bp = bias + h * head_dim;
      x0 = round_to<T>(x0 + load(bp + c0));
      x1 = round_to<T>(x1 + load(bp + c1));
    }
    const float2 cs = *reinterpret_cast<const float2*>(table + (pos(r) * half + i) * 2);
    rope_rotate(x0, x1, cs.x, cs.y);
    store(p + c0, x0);
    store(p + c1, x1);
  }
}

/// \brief Checks and launches rope_kernel for one layout and position source.
template <class T, rope_layout L, class Pos>
void rope_launch(const cuda_backend& be, const char* op, T* x, std::int64_t rows, std::int64_t ld,
                 std::int64_t n_heads, std::int64_t head_dim, const T* bias, const float* table, Pos pos) {
  static_assert(is_storage_v<T>, "rope (CUDA): T must be float or muninn::bf16");
  rope_check_shape(op, rows, ld, n_heads, head_dim);
  MUNINN_CHECK((reinterpret_cast<std::uintptr_t>(table) & 7u) == 0, op, ": table must be 8-byte aligned");
  const std::int64_t total = rows * n_heads * (head_dim / 2);
  if (total == 0) return;
  rope_kernel<T, L, Pos><<<grid_for(be, total, 256), 256, 0, be.stream()>>>(x, rows, ld, n_heads, head_dim, bias,
                                                                            table, pos);
  MUNINN_CUDA_CHECK_LAUNCH("rope_kernel");
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
  MUNINN_CHECK(pos0 >= 0, "rope_interleaved: negative pos0 ", pos0);
  detail::gpu::rope_launch<T, detail::rope_layout::interleaved>(be, "rope_interleaved", x, rows, ld, n_heads,
                                                                head_dim, bias, table, detail::rope_pos_offset{pos0});
}

/// \brief rope_interleaved() with a device array of positions: row r has position pos[r].
///
/// Positions may be in any order and need not be contiguous (mixture-of-recursions); each must
/// be covered by the table (device positions are not checked).
/// \tparam T       float or bf16
/// \tparam I       std::int32_t (deduced; a template so that a literal 0 picks the pos0 overload)
/// \param be       the CUDA backend
/// \param x        device [rows, ld]; the first n_heads·head_dim columns are rotated
/// \param rows     number of rows (tokens)
/// \param ld       row stride of x in elements
/// \param n_heads  heads per row
/// \param head_dim D, even
/// \param bias     device nullptr, or [n_heads·head_dim] added before the rotation
/// \param table    device fp32 RoPE table [max_pos][D/2][2], 8-byte aligned
/// \param pos      device position of each row [rows], each in [0, max_pos)
template <class T, class I, detail::if_int32<I> = 0>
void rope_interleaved(const cuda_backend& be, T* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
                      std::int64_t head_dim, const detail::gpu::identity_t<T>* bias, const float* table,
                      const I* pos) {
  detail::gpu::rope_launch<T, detail::rope_layout::interleaved>(be, "rope_interleaved", x, rows, ld, n_heads,
                                                                head_dim, bias, table, detail::rope_pos_array{pos});
}

/// \brief Hugging Face's rotate-half RoPE in place, adding an optional per-head bias first.
///
/// Row r has position pos0 + r. For i < D/2: out[i] = x[i]·cos_i − x[i+D/2]·sin_i and
/// out[i+D/2] = x[i+D/2]·cos_i + x[i]·sin_i, with {cos_i, sin_i} = table[(pos0+r)·D/2 + i] (the
/// layout rope_interleaved reads). fp32 maths rounded once to T; in bf16 a bias sum is rounded
/// first, as in rope_interleaved.
/// \tparam T       float or bf16
/// \param be       the CUDA backend
/// \param x        device [rows, ld]; the first n_heads·head_dim columns are rotated
/// \param rows     number of rows (tokens)
/// \param ld       row stride of x in elements
/// \param n_heads  heads per row
/// \param head_dim D, even
/// \param bias     device nullptr, or [n_heads·head_dim] added before the rotation
/// \param table    device fp32 RoPE table [max_pos][D/2][2], 8-byte aligned
/// \param pos0     position of row 0
template <class T>
void rope_half(const cuda_backend& be, T* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
               std::int64_t head_dim, const detail::gpu::identity_t<T>* bias, const float* table, std::int64_t pos0) {
  MUNINN_CHECK(pos0 >= 0, "rope_half: negative pos0 ", pos0);
  detail::gpu::rope_launch<T, detail::rope_layout::half>(be, "rope_half", x, rows, ld, n_heads, head_dim, bias, table,
                                                         detail::rope_pos_offset{pos0});
}

/// \brief rope_half() with a device array of positions: row r has position pos[r].
/// \tparam T       float or bf16
/// \tparam I       std::int32_t (deduced; a template so that a literal 0 picks the pos0 overload)
/// \param be       the CUDA backend
/// \param x        device [rows, ld]; the first n_heads·head_dim columns are rotated
/// \param rows     number of rows (tokens)
/// \param ld       row stride of x in elements
/// \param n_heads  heads per row
/// \param head_dim D, even
/// \param bias     device nullptr, or [n_heads·head_dim] added before the rotation
/// \param table    device fp32 RoPE table [max_pos][D/2][2], 8-byte aligned
/// \param pos      device position of each row [rows], each in [0, max_pos)
template <class T, class I, detail::if_int32<I> = 0>
void rope_half(const cuda_backend& be, T* x, std::int64_t rows, std::int64_t ld, std::int64_t n_heads,
               std::int64_t head_dim, const detail::gpu::identity_t<T>* bias, const float* table, const I* pos) {
  detail::gpu::rope_launch<T, detail::rope_layout::half>(be, "rope_half", x, rows, ld, n_heads, head_dim, bias, table,
                                                         detail::rope_pos_array{pos});
}

}  // namespace muninn
