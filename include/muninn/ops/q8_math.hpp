#pragma once
/// \file
/// \brief The 8-bit weight format `q8`, per block: 32 signed 8-bit values and one bf16 scale.
///
/// A block of 32 consecutive weights of a row (along K) stores q[i] in [-127, 127] and a scale d,
/// and stands for q[i]·d. d is amax/127 rounded *up* to the next bf16, so that every |x|/d <= 127
/// and the rounding of q is the only error: |x - q·d| <= d/2. That is llama.cpp's Q8_0 (same
/// 8.5 bits per weight) except that the scale is a bf16 rather than an fp16: no F16C instruction is
/// needed to read it, and it cannot underflow for blocks of tiny weights. The q values and the
/// scales are stored in two arrays, so that the values stay aligned for vector loads.

#include <cmath>
#include <cstdint>

#include "muninn/core/dtype.hpp"
#include "muninn/core/macros.hpp"

namespace muninn {

/// \brief Weights per q8 block (and the granularity of K for q8 weights).
inline constexpr int q8_block = 32;

/// \brief The smallest bf16 that is >= `x` (x finite and >= 0).
MUNINN_HOST_DEVICE MUNINN_INLINE bf16 bf16_round_up(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint16_t hi = std::uint16_t(u >> 16);
  return bf16{std::uint16_t((u & 0xffffu) ? hi + 1 : hi)};
}

/// \brief Quantizes `n` <= 32 weights (the rest of the block reads as 0) into q[0..32) and returns the scale.
MUNINN_HOST_DEVICE inline bf16 q8_quantize_block(const float* x, int n, std::int8_t* q) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const bf16 d = bf16_round_up(amax / 127.0f);
  const float df = to_float(d);
  for (int i = 0; i < q8_block; ++i) {
    const float v = i < n && df > 0.0f ? std::round(x[i] / df) : 0.0f;
    q[i] = std::int8_t(std::fmax(-127.0f, std::fmin(127.0f, v)));
  }
  return d;
}

}  // namespace muninn
