#pragma once
/// \file
/// \brief Token embedding lookup with a scale on the CUDA backend.

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief One block per token: out[i, :] = T(table[ids[i], :] · scale); a row of NaN for an
/// id outside [0, vocab) (device ids cannot be checked before the launch, and a NaN row is
/// loud where clamping would be silent).
template <class T>
__global__ void __launch_bounds__(128) embedding_kernel(const T* table, std::int64_t vocab, std::int64_t dim,
                                                        const std::int32_t* ids, float scale, T* out, bool vec) {
  constexpr int P = pack_v<T>;
  const std::int64_t i = blockIdx.x;
  const std::int32_t id = ids[i];
  const bool ok = id >= 0 && std::int64_t(id) < vocab;
  const T* src = table + (ok ? std::int64_t(id) : 0) * dim;
  T* dst = out + i * dim;
  if (vec) {
    for (std::int64_t p = threadIdx.x; p < dim / P; p += blockDim.x) {
      float f[P];
      if (ok) {
        load_pack(src + p * P, f);
#pragma unroll
        for (int e = 0; e < P; ++e) f[e] *= scale;
      } else {
#pragma unroll
        for (int e = 0; e < P; ++e) f[e] = __int_as_float(0x7fc00000);
      }
      store_pack(dst + p * P, f);
    }
  } else {
    for (std::int64_t c = threadIdx.x; c < dim; c += blockDim.x)
      store(dst + c, ok ? load(src + c) * scale : __int_as_float(0x7fc00000));
  }
}

template <class T>
void embedding_launch(const cuda_backend& be, const T* table, std::int64_t vocab, std::int64_t dim,
                      const std::int32_t* ids, std::int64_t n, float scale, T* out) {
  static_assert(is_storage_v<T>, "embedding (CUDA): T must be float or muninn::bf16");
  MUNINN_CHECK(vocab > 0 && dim > 0 && n >= 0, "embedding: bad shape vocab=", vocab, " dim=", dim, " n=", n);
  check_rows_grid("embedding", n);
  if (n == 0) return;
  const bool vec = dim % pack_v<T> == 0 && aligned16(table) && aligned16(out);
  embedding_kernel<T><<<unsigned(n), 128, 0, be.stream()>>>(table, vocab, dim, ids, scale, out, vec);
  MUNINN_CUDA_CHECK_LAUNCH("embedding_kernel");
}

}  // namespace gpu
}  // namespace detail

/// \brief out[i, :] = table[ids[i], :] · scale, with `ids` already on the device.
///
/// Device ids cannot be validated before the launch without a synchronisation, so an id outside
/// [0, vocab) yields a row of NaN in `out` (never a clamped or wrapped row). Validate on the
/// host, or use embedding_from_host_ids, to get an exception instead. In bf16 the product is
/// rounded once (PyTorch scales in the model dtype).
/// \tparam T    float or bf16
/// \param be    the CUDA backend
/// \param table device embedding matrix [vocab, dim]
/// \param vocab rows of table
/// \param dim   columns of table and out
/// \param ids   device token ids [n]
/// \param n     number of tokens
/// \param scale factor applied to every row (1 for a plain lookup)
/// \param out   device output [n, dim]
template <class T>
void embedding(const cuda_backend& be, const T* table, std::int64_t vocab, std::int64_t dim, const std::int32_t* ids,
               std::int64_t n, float scale, T* out) {
  detail::gpu::embedding_launch(be, table, vocab, dim, ids, n, scale, out);
}

/// \brief embedding() with the ids in host memory: checks every id, then copies them into the
/// backend workspace and launches.
///
/// An id outside [0, vocab) throws muninn::error naming the id, its index and the vocab size,
/// before anything is written. The host ids may be reused as soon as this returns. Not usable
/// during CUDA graph capture (the copy is from pageable memory): upload ids to a device buffer
/// and call embedding() there.
/// \tparam T        float or bf16
/// \param be        the CUDA backend
/// \param table     device embedding matrix [vocab, dim]
/// \param vocab     rows of table
/// \param dim       columns of table and out
/// \param host_ids  host token ids [n]
/// \param n         number of tokens
/// \param scale     factor applied to every row
/// \param out       device output [n, dim]
template <class T>
void embedding_from_host_ids(const cuda_backend& be, const T* table, std::int64_t vocab, std::int64_t dim,
                             const std::int32_t* host_ids, std::int64_t n, float scale, T* out) {
  MUNINN_CHECK(vocab > 0 && dim > 0 && n >= 0, "embedding: bad shape vocab=", vocab, " dim=", dim, " n=", n);
  for (std::int64_t i = 0; i < n; ++i)
    MUNINN_CHECK(host_ids[i] >= 0 && host_ids[i] < vocab, "embedding: token id ", host_ids[i], " at index ", i,
                 " is out of range for vocab size ", vocab);
  if (n == 0) return;
  auto* ids = static_cast<std::int32_t*>(be.workspace(std::size_t(n) * sizeof(std::int32_t)));
  // Pageable source: the call returns once the ids are staged, and the copy is ordered on the
  // stream before the kernel (and after earlier users of the workspace).
  MUNINN_CUDA_CHECK(cudaMemcpyAsync(ids, host_ids, std::size_t(n) * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                                    be.stream()));
  detail::gpu::embedding_launch(be, table, vocab, dim, ids, n, scale, out);
}

}  // namespace muninn
