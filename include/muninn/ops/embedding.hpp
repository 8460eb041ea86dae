#pragma once
/// \file
/// \brief Token embedding lookup with a scale (Huginn multiplies by sqrt(hidden)).

#include <algorithm>
#include <cstdint>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/simd.hpp"

namespace muninn {

/// \brief out[i, :] = table[ids[i], :] · scale.
///
/// Every id is checked before anything is written; an id outside [0, vocab) throws
/// muninn::error naming the id, its index in `ids` and the vocab size.
/// \param be    the host backend
/// \param table embedding matrix [vocab, dim]
/// \param vocab rows of table
/// \param dim   columns of table and out
/// \param ids   token ids [n]
/// \param n     number of tokens
/// \param scale factor applied to every row (1 for a plain lookup)
/// \param out   output [n, dim]
inline void embedding(const host_backend& be, const float* table, std::int64_t vocab, std::int64_t dim,
                      const std::int32_t* ids, std::int64_t n, float scale, float* out) {
  MUNINN_CHECK(vocab > 0 && dim > 0 && n >= 0, "embedding: bad shape vocab=", vocab, " dim=", dim, " n=", n);
  for (std::int64_t i = 0; i < n; ++i)
    MUNINN_CHECK(ids[i] >= 0 && ids[i] < vocab, "embedding: token id ", ids[i], " at index ", i,
                 " is out of range for vocab size ", vocab);
  be.parallel_for(n, std::max<std::int64_t>(1, 16384 / dim), [&](std::int64_t b, std::int64_t e) {
    constexpr int W = detail::simd_width;
    for (std::int64_t i = b; i < e; ++i) {
      const float* src = table + std::int64_t(ids[i]) * dim;
      float* dst = out + i * dim;
      std::int64_t t = 0;
      for (; t + W <= dim; t += W) detail::vstore(dst + t, detail::vload(src + t) * scale);
      for (; t < dim; ++t) dst[t] = src[t] * scale;
    }
  });
}

}  // namespace muninn
