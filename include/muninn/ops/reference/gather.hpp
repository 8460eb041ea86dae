#pragma once
/// \file
/// \brief Reference row gather, scatter and gated scatter-add.

#include <cstdint>

namespace muninn {
namespace ref {

/// \brief dst[i, :width] = src[idx[i], :width].
/// \param src    [*, ld_src]
/// \param ld_src row stride of src
/// \param idx    [n]
/// \param n      rows
/// \param width  elements per row
/// \param dst    [n, ld_dst]
/// \param ld_dst row stride of dst
inline void gather_rows(const float* src, std::int64_t ld_src, const std::int32_t* idx, std::int64_t n,
                        std::int64_t width, float* dst, std::int64_t ld_dst) {
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < width; ++c) dst[i * ld_dst + c] = src[std::int64_t(idx[i]) * ld_src + c];
}

/// \brief dst[idx[i], :width] = src[i, :width].
/// \param dst    [*, ld_dst]
/// \param ld_dst row stride of dst
/// \param idx    [n], distinct
/// \param src    [n, ld_src]
/// \param ld_src row stride of src
/// \param n      rows
/// \param width  elements per row
inline void scatter_rows(float* dst, std::int64_t ld_dst, const std::int32_t* idx, const float* src,
                         std::int64_t ld_src, std::int64_t n, std::int64_t width) {
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < width; ++c) dst[std::int64_t(idx[i]) * ld_dst + c] = src[i * ld_src + c];
}

/// \brief dst[idx[i], :width] += gate[i] · src[i, :width] in double, rounded to float once
/// (gate = 1 when null).
/// \param dst    [*, ld_dst], updated
/// \param ld_dst row stride of dst
/// \param idx    [n], distinct
/// \param src    [n, ld_src]
/// \param ld_src row stride of src
/// \param gate   [n] or nullptr
/// \param n      rows
/// \param width  elements per row
inline void scatter_add_gated(float* dst, std::int64_t ld_dst, const std::int32_t* idx, const float* src,
                              std::int64_t ld_src, const float* gate, std::int64_t n, std::int64_t width) {
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < width; ++c) {
      float& d = dst[std::int64_t(idx[i]) * ld_dst + c];
      d = float(double(d) + (gate ? double(gate[i]) : 1.0) * double(src[i * ld_src + c]));
    }
}

}  // namespace ref
}  // namespace muninn
