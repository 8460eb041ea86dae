#pragma once
/// \file
/// \brief Element-wise ops on the CUDA backend: add, scale and the gated MLP's SiLU-and-multiply.

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"
#include "muninn/ops/math.hpp"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief y = T(a + b); grid-stride over 16-byte packs when `vec`, then the scalar tail.
template <class T>
__global__ void __launch_bounds__(256) add_kernel(const T* a, const T* b, T* y, std::int64_t n, bool vec) {
  constexpr int P = pack_v<T>;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  std::int64_t done = 0;
  if (vec) {
    const std::int64_t np = n / P;
    for (std::int64_t p = t; p < np; p += stride) {
      float va[P], vb[P];
      load_pack(a + p * P, va);
      load_pack(b + p * P, vb);
#pragma unroll
      for (int i = 0; i < P; ++i) va[i] += vb[i];
      store_pack(y + p * P, va);
    }
    done = np * P;
  }
  for (std::int64_t i = done + t; i < n; i += stride) store(y + i, load(a + i) + load(b + i));
}

/// \brief x = T(x · s) in place, same traversal as add_kernel.
template <class T>
__global__ void __launch_bounds__(256) scale_kernel(T* x, float s, std::int64_t n, bool vec) {
  constexpr int P = pack_v<T>;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  std::int64_t done = 0;
  if (vec) {
    const std::int64_t np = n / P;
    for (std::int64_t p = t; p < np; p += stride) {
      float v[P];
      load_pack(x + p * P, v);
#pragma unroll
      for (int i = 0; i < P; ++i) v[i] *= s;
      store_pack(x + p * P, v);
    }
    done = np * P;
  }
  for (std::int64_t i = done + t; i < n; i += stride) store(x + i, load(x + i) * s);
}

/// \brief silu(g) · u with silu rounded to T first, as PyTorch's `F.silu(a) * b` in bf16 does;
/// silu itself is detail::silu, the function the host tests check.
template <class T>
__device__ MUNINN_INLINE float silu_mul_one(float g, float u) {
  return round_to<T>(silu(g)) * u;
}

/// \brief out[r, i] = silu(in[r, i]) · in[r, inter + i]; grid-stride over packs (`vec`) or elements.
template <class T>
__global__ void __launch_bounds__(256) silu_mul_kernel(const T* in, std::int64_t ld_in, T* out, std::int64_t ld_out,
                                                       std::int64_t rows, std::int64_t inter, bool vec) {
  constexpr int P = pack_v<T>;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (vec) {
    const std::int64_t per_row = inter / P, total = rows * per_row;
    for (std::int64_t p = t; p < total; p += stride) {
      const std::int64_t r = p / per_row, c = (p - r * per_row) * P;
      const T* g = in + r * ld_in + c;
      float vg[P], vu[P];
      load_pack(g, vg);
      load_pack(g + inter, vu);
#pragma unroll
      for (int i = 0; i < P; ++i) vg[i] = silu_mul_one<T>(vg[i], vu[i]);
      store_pack(out + r * ld_out + c, vg);
    }
  } else {
    const std::int64_t total = rows * inter;
    for (std::int64_t e = t; e < total; e += stride) {
      const std::int64_t r = e / inter, c = e - r * inter;
      const T* g = in + r * ld_in + c;
      store(out + r * ld_out + c, silu_mul_one<T>(load(g), load(g + inter)));
    }
  }
}

/// \brief x[i] = gelu(x[i]) (fp32 maths, rounded once to T); grid-stride.
template <class T>
__global__ void __launch_bounds__(256) gelu_kernel(T* x, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    store(x + i, gelu_erf(load(x + i)));
}

/// \brief x[i] = silu(x[i]) (fp32 maths, rounded once to T); grid-stride.
template <class T>
__global__ void __launch_bounds__(256) silu_kernel(T* x, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    store(x + i, silu(load(x + i)));
}

}  // namespace gpu
}  // namespace detail

/// \brief x = gelu(x) in place (the erf form, detail::gelu_erf).
template <class T>
void gelu(const cuda_backend& be, T* x, std::int64_t n) {
  static_assert(detail::gpu::is_storage_v<T>, "gelu (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(n >= 0, "gelu: negative size ", n);
  if (n == 0) return;
  using namespace detail::gpu;
  gelu_kernel<T><<<grid_for(be, n, 256), 256, 0, be.stream()>>>(x, n);
  MUNINN_CUDA_CHECK_LAUNCH("gelu_kernel");
}

/// \brief x = silu(x) in place (detail::silu, as the host op).
template <class T>
void silu(const cuda_backend& be, T* x, std::int64_t n) {
  static_assert(detail::gpu::is_storage_v<T>, "silu (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(n >= 0, "silu: negative size ", n);
  if (n == 0) return;
  using namespace detail::gpu;
  silu_kernel<T><<<grid_for(be, n, 256), 256, 0, be.stream()>>>(x, n);
  MUNINN_CUDA_CHECK_LAUNCH("silu_kernel");
}

/// \brief y = a + b element-wise (computed in fp32, rounded once to T).
/// \tparam T float or bf16
/// \param be the CUDA backend
/// \param a  device first input [n]
/// \param b  device second input [n]
/// \param y  device output [n]; may alias a or b
/// \param n  number of elements
template <class T>
void add(const cuda_backend& be, const T* a, const T* b, T* y, std::int64_t n) {
  static_assert(detail::gpu::is_storage_v<T>, "add (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(n >= 0, "add: negative size ", n);
  if (n == 0) return;
  using namespace detail::gpu;
  const bool vec = aligned16(a) && aligned16(b) && aligned16(y);
  add_kernel<T><<<grid_for(be, vec ? n / pack_v<T> + 1 : n, 256), 256, 0, be.stream()>>>(a, b, y, n, vec);
  MUNINN_CUDA_CHECK_LAUNCH("add_kernel");
}

/// \brief x = x · s in place (fp32 product, rounded once to T).
/// \tparam T float or bf16
/// \param be the CUDA backend
/// \param x  device data [n], scaled in place
/// \param s  factor
/// \param n  number of elements
template <class T>
void scale(const cuda_backend& be, T* x, float s, std::int64_t n) {
  static_assert(detail::gpu::is_storage_v<T>, "scale (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(n >= 0, "scale: negative size ", n);
  if (n == 0) return;
  using namespace detail::gpu;
  const bool vec = aligned16(x);
  scale_kernel<T><<<grid_for(be, vec ? n / pack_v<T> + 1 : n, 256), 256, 0, be.stream()>>>(x, s, n, vec);
  MUNINN_CUDA_CHECK_LAUNCH("scale_kernel");
}

/// \brief out[r, i] = silu(in[r, i]) · in[r, inter + i] for i < inter (gate = first half).
///
/// Huginn's GatedMLP: `a, b = fc(x).chunk(2, -1); y = silu(a) * b`. In bf16 silu(a) is rounded
/// to bf16 before the product, as PyTorch does; fp32 is one fp32 expression.
/// \tparam T     float or bf16
/// \param be     the CUDA backend
/// \param in     device fused fc output [rows, ld_in] with ld_in >= 2·inter
/// \param ld_in  row stride of in
/// \param out    device output [rows, ld_out] with ld_out >= inter; may alias in (the gate half)
///               when ld_out == ld_in
/// \param ld_out row stride of out
/// \param rows   number of rows
/// \param inter  intermediate size (width of each half)
template <class T>
void silu_mul(const cuda_backend& be, const T* in, std::int64_t ld_in, T* out, std::int64_t ld_out, std::int64_t rows,
              std::int64_t inter) {
  static_assert(detail::gpu::is_storage_v<T>, "silu_mul (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(rows >= 0 && inter >= 0 && ld_in >= 2 * inter && ld_out >= inter, "silu_mul: bad shape rows=", rows,
               " inter=", inter, " ld_in=", ld_in, " ld_out=", ld_out);
  if (rows == 0 || inter == 0) return;
  using namespace detail::gpu;
  constexpr int P = pack_v<T>;
  const bool vec = inter % P == 0 && ld_in % P == 0 && ld_out % P == 0 && aligned16(in) && aligned16(out);
  const std::int64_t work = vec ? rows * (inter / P) : rows * inter;
  silu_mul_kernel<T><<<grid_for(be, work, 256), 256, 0, be.stream()>>>(in, ld_in, out, ld_out, rows, inter, vec);
  MUNINN_CUDA_CHECK_LAUNCH("silu_mul_kernel");
}

}  // namespace muninn
