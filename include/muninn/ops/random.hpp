#pragma once
/// \file
/// \brief Random fills on the host backend; the CUDA backend draws bit-identical numbers.

#include <cstdint>

#include "muninn/backend/host.hpp"
#include "muninn/core/dtype.hpp"
#include "muninn/core/error.hpp"
#include "muninn/core/random.hpp"

namespace muninn {

/// \brief x[i] = stddev · z(seed, offset + i), z a standard normal truncated to [-3, 3].
///
/// Each element is a pure function of (seed, offset + i) (see muninn/core/random.hpp), so the
/// result does not depend on threading, and `offset` lets callers give each position its own
/// counter range: Huginn's state for position p uses offset p·h, so a chunked prefill draws
/// exactly what a single pass draws. The CUDA overload produces the same bits.
/// \tparam T     storage type (float, bf16 or f16); the draw is rounded once to T
/// \param be     the host backend
/// \param x      output [n]
/// \param n      number of elements
/// \param seed   stream seed
/// \param offset counter of element 0
/// \param stddev standard deviation before truncation (values lie in ±3·stddev)
template <class T>
void fill_truncated_normal(const host_backend& be, T* x, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                           float stddev) {
  MUNINN_CHECK(n >= 0, "fill_truncated_normal: negative size ", n);
  be.parallel_for(n, 4096, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i)
      x[i] = from_float<T>(truncated_normal_at(seed, offset + std::uint64_t(i), stddev));
  });
}

}  // namespace muninn
