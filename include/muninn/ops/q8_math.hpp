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
#include <limits>

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

/// \brief Quantizes a row of `n` fp32 activations for the q8 decode GEMV's integer dot products.
///
/// Per block of 32 activations (the last one partial when n is not a multiple of 32): the scale
/// d[j] = amax/127 in fp32, and q = round(x/d) (half away from zero) in [-127, 127], so every
/// |x - q·d[j]| <= d[j]/2. q gets a multiple of 32 values, the ones past n set to 0, so that a
/// partial last block runs as a whole one (its products past n are 0 whatever the weights hold).
/// The scale is fp32 and not bf16 as for the weights: this copy is made once per GEMV and never
/// stored, so the 2 extra bytes per block cost nothing, and an fp32 amax/127 is exact to 2⁻²⁴
/// instead of bf16's 2⁻⁸ (a bf16 scale would have to be rounded up, widening every step by up
/// to 0.4 %). A block holding a NaN or an infinity gets a NaN scale and q = 0, so the GEMV's
/// outputs become NaN, as the fp32 kernel's would (not necessarily the same non-finite value).
/// Every host_isa level's kernel reads this one function's output, and the tests reproduce it.
/// \param x  the activations [n]
/// \param n  how many
/// \param q  out: the values [ceil(n / 32) · 32]
/// \param d  out: the scales [ceil(n / 32)]
MUNINN_HOST_DEVICE inline void q8_quantize_activations(const float* x, std::int64_t n, std::int8_t* q, float* d) {
  for (std::int64_t k0 = 0, j = 0; k0 < n; k0 += q8_block, ++j) {
    const int m = n - k0 < q8_block ? int(n - k0) : q8_block;
    float amax = 0.0f;
    bool finite = true;
    for (int i = 0; i < m; ++i) {
      const float a = std::fabs(x[k0 + i]);
      finite = finite && a <= std::numeric_limits<float>::max();
      amax = a > amax ? a : amax;
    }
    const float dj = finite ? amax / 127.0f : std::numeric_limits<float>::quiet_NaN();
    d[j] = dj;
    for (int i = 0; i < q8_block; ++i) {
      // x/d, not x·(1/d): the division is rounded once, so |x/d| <= 127 up to one rounding.
      // Rounded half away from zero by hand (truncate, then step on a remainder of a half or
      // more: r - t is exact): std::round is a library call per value here, which cost 10 % of
      // the GEMV at K = 576.
      const float r = i < m && dj > 0.0f ? x[k0 + i] / dj : 0.0f;
      int t = int(r);
      const float f = r - float(t);
      t += f >= 0.5f ? 1 : f <= -0.5f ? -1 : 0;
      q[k0 + i] = std::int8_t(t > 127 ? 127 : t < -127 ? -127 : t);
    }
  }
}

}  // namespace muninn
