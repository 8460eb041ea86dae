#pragma once
/// \file
/// \brief Row gather and scatter on the host: pick the rows of a token subset, write them back,
/// or add them back scaled by a gate (mixture-of-recursions routing).

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/math.hpp"

namespace muninn {
namespace detail {

/// \brief Checks the shape shared by the gather and scatter ops.
inline void gather_check(const char* op, const std::int32_t* idx, std::int64_t n, std::int64_t width,
                         std::int64_t ld_src, std::int64_t ld_dst) {
  MUNINN_CHECK(n >= 0 && width >= 0 && ld_src >= width && ld_dst >= width, op, ": bad shape n=", n, " width=", width,
               " ld_src=", ld_src, " ld_dst=", ld_dst);
  for (std::int64_t i = 0; i < n; ++i) MUNINN_CHECK(idx[i] >= 0, op, ": negative row index ", idx[i], " at ", i);
}

/// \brief Rows per thread chunk of the row-copy ops (about 16k elements).
inline std::int64_t gather_grain(std::int64_t width) {
  return std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(width, 1));
}

}  // namespace detail

/// \brief dst[i, :width] = src[idx[i], :width] for i < n.
///
/// Row indices must be valid rows of src (only their sign is checked: src's row count is not an
/// argument). Repeated indices are fine.
/// \param be     the host backend
/// \param src    source [*, ld_src]
/// \param ld_src row stride of src
/// \param idx    row of src for each output row [n]
/// \param n      rows to gather
/// \param width  elements copied per row
/// \param dst    destination [n, ld_dst]; must not overlap src
/// \param ld_dst row stride of dst
inline void gather_rows(const host_backend& be, const float* src, std::int64_t ld_src, const std::int32_t* idx,
                        std::int64_t n, std::int64_t width, float* dst, std::int64_t ld_dst) {
  detail::gather_check("gather_rows", idx, n, width, ld_src, ld_dst);
  if (width == 0) return;
  be.parallel_for(n, detail::gather_grain(width), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i)
      std::memcpy(dst + i * ld_dst, src + std::int64_t(idx[i]) * ld_src, std::size_t(width) * sizeof(float));
  });
}

/// \brief dst[idx[i], :width] = src[i, :width] for i < n: the inverse of gather_rows.
///
/// The indices must be distinct (two rows written to one place would race); not checked.
/// \param be     the host backend
/// \param dst    destination [*, ld_dst]; must not overlap src
/// \param ld_dst row stride of dst
/// \param idx    row of dst for each source row [n], distinct
/// \param src    source [n, ld_src]
/// \param ld_src row stride of src
/// \param n      rows to scatter
/// \param width  elements copied per row
inline void scatter_rows(const host_backend& be, float* dst, std::int64_t ld_dst, const std::int32_t* idx,
                         const float* src, std::int64_t ld_src, std::int64_t n, std::int64_t width) {
  detail::gather_check("scatter_rows", idx, n, width, ld_src, ld_dst);
  if (width == 0) return;
  be.parallel_for(n, detail::gather_grain(width), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i)
      std::memcpy(dst + std::int64_t(idx[i]) * ld_dst, src + i * ld_src, std::size_t(width) * sizeof(float));
  });
}

/// \brief dst[idx[i], :width] += gate[i] · src[i, :width] for i < n (gate = 1 when null).
///
/// Mixture-of-recursions adds a routed token's block output back to its residual row, scaled by
/// the router weight. Each element is detail::gated_add, the CUDA kernel's arithmetic. The
/// indices must be distinct: every destination row is updated by one source row, which lets the
/// rows run in parallel without atomics (not checked).
/// \param be     the host backend
/// \param dst    destination [*, ld_dst], updated in place; must not overlap src
/// \param ld_dst row stride of dst
/// \param idx    row of dst for each source row [n], distinct
/// \param src    source [n, ld_src]
/// \param ld_src row stride of src
/// \param gate   fp32 factor per source row [n], or nullptr for 1
/// \param n      rows to add
/// \param width  elements per row
inline void scatter_add_gated(const host_backend& be, float* dst, std::int64_t ld_dst, const std::int32_t* idx,
                              const float* src, std::int64_t ld_src, const float* gate, std::int64_t n,
                              std::int64_t width) {
  detail::gather_check("scatter_add_gated", idx, n, width, ld_src, ld_dst);
  be.parallel_for(n, detail::gather_grain(width), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      float* d = dst + std::int64_t(idx[i]) * ld_dst;
      const float* s = src + i * ld_src;
      const float g = gate ? gate[i] : 1.0f;
      for (std::int64_t c = 0; c < width; ++c) d[c] = detail::gated_add(d[c], g, s[c]);
    }
  });
}

}  // namespace muninn
