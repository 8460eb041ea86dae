#pragma once
/// \file
/// \brief Counter-based random numbers that host and CUDA code compute identically.
///
/// Every value is a pure function of (seed, index, attempt): no generator state, so a device
/// kernel and a host loop produce the same array, and any slice can be regenerated alone.
///
/// Bit-for-bit agreement between g++ and nvcc holds because the maths uses only IEEE
/// correctly-rounded double operations (+, -, *, /, sqrt, fma) and our own log / cos
/// polynomials instead of libm:
/// - every multiply-add is an explicit fma, so no compiler can contract differently
///   (on the device the remaining products and sums use the `__d*_rn` intrinsics, which nvcc
///   never contracts; on the host no product feeds a sum, so `-ffp-contract` has nothing to fuse);
/// - range reduction happens on the integer bits, so it is exact.
/// It breaks under `-ffast-math` / `--use_fast_math`-style flags that relax IEEE semantics for
/// double, and on x87 (32-bit x86) excess precision; x86-64 SSE2 and CUDA are fine.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "muninn/core/macros.hpp"

namespace muninn {

/// \brief The splitmix64 finaliser: a bijective 64-bit mixer with full avalanche.
MUNINN_HOST_DEVICE MUNINN_INLINE std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// \brief 64 random bits for element `index` of stream `seed`, draw number `attempt`.
///
/// For a fixed seed and attempt the map index → bits is a bijection, so distinct elements never
/// share a draw.
MUNINN_HOST_DEVICE MUNINN_INLINE std::uint64_t counter_bits(std::uint64_t seed, std::uint64_t index,
                                                            std::uint32_t attempt) {
  const std::uint64_t key = mix64(seed ^ 0x9e3779b97f4a7c15ull);
  const std::uint64_t b = mix64(key + index);
  return mix64(b ^ (std::uint64_t(attempt) * 0xd1b54a32d192ed03ull));
}

/// \brief Seed of sub-stream `n` of kind `kind` of a run seed: `mix64(seed ^ mix64((kind << 32) + n))`.
///
/// Samplers name their streams this way (kind = what is drawn, n = a position or step), so each
/// stream can be regenerated alone and a PyTorch reference can draw the same numbers.
MUNINN_HOST_DEVICE MUNINN_INLINE std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t kind, std::uint64_t n) {
  return mix64(seed ^ mix64((kind << 32) + n));
}

/// \brief A uniform draw in [0, 1) for element `index` of stream `seed`: the top 53 bits of
/// `counter_bits(seed, index, attempt)` times 2^-53 (exact in double).
MUNINN_HOST_DEVICE MUNINN_INLINE double uniform01_at(std::uint64_t seed, std::uint64_t index,
                                                     std::uint32_t attempt = 0) {
  return double(counter_bits(seed, index, attempt) >> 11) * (1.0 / 9007199254740992.0);
}

namespace detail {

// Correctly rounded double primitives; on the device they are the non-contractible intrinsics.
MUNINN_HOST_DEVICE MUNINN_INLINE double rn_fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
MUNINN_HOST_DEVICE MUNINN_INLINE double rn_mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
MUNINN_HOST_DEVICE MUNINN_INLINE double rn_add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
MUNINN_HOST_DEVICE MUNINN_INLINE double rn_sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
MUNINN_HOST_DEVICE MUNINN_INLINE double rn_div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
MUNINN_HOST_DEVICE MUNINN_INLINE double rn_sqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
MUNINN_HOST_DEVICE MUNINN_INLINE double u64_bits_double(std::uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
#endif
}
MUNINN_HOST_DEVICE MUNINN_INLINE int clz64(std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(v));
#else
  return __builtin_clzll(v);
#endif
}

/// \brief ln(v / 2^32) for integer v in [1, 2^32], accurate to a few ulp of double.
MUNINN_HOST_DEVICE inline double log_u32_fraction(std::uint64_t v) {
  const int e = 63 - clz64(v);  // floor(log2 v), 0..32
  // Mantissa of v / 2^e, built from the bits so that no float operation is involved.
  const std::uint64_t mant = (v << (52 - e)) & ((std::uint64_t(1) << 52) - 1);
  constexpr std::uint64_t sqrt2_mant = 0x6a09e667f3bcdull;  // sqrt(2) = 0x1.6a09e667f3bcdp+0
  std::uint64_t biased = 1023;
  int exponent = e - 32;
  if (mant > sqrt2_mant) {  // keep m in [sqrt(1/2), sqrt(2)] so the series converges fast
    biased = 1022;
    exponent += 1;
  }
  const double m = u64_bits_double((biased << 52) | mant);
  // ln m = 2 atanh(f), f = (m-1)/(m+1), |f| <= 0.1716; atanh(f)/f = sum f^2k / (2k+1).
  const double f = rn_div(rn_sub(m, 1.0), rn_add(m, 1.0));
  const double s = rn_mul(f, f);
  constexpr double c[11] = {1.0,
                            0.3333333333333333,
                            0.2,
                            0.14285714285714285,
                            0.1111111111111111,
                            0.09090909090909091,
                            0.07692307692307693,
                            0.06666666666666667,
                            0.058823529411764705,
                            0.05263157894736842,
                            0.047619047619047616};
  double p = c[10];
  for (int k = 9; k >= 0; --k) p = rn_fma(p, s, c[k]);
  const double ln_m = rn_mul(2.0, rn_mul(f, p));
  return rn_fma(double(exponent), 0.6931471805599453, ln_m);
}

/// \brief sin(a) for a in [0, pi/4] (Taylor to a^15; truncation error < 5e-17).
MUNINN_HOST_DEVICE inline double sin_octant(double a) {
  constexpr double c[8] = {1.0,
                           -0.16666666666666666,
                           0.008333333333333333,
                           -0.0001984126984126984,
                           2.7557319223985893e-06,
                           -2.505210838544172e-08,
                           1.6059043836821613e-10,
                           -7.647163731819816e-13};
  const double s = rn_mul(a, a);
  double p = c[7];
  for (int k = 6; k >= 0; --k) p = rn_fma(p, s, c[k]);
  return rn_mul(a, p);
}

/// \brief cos(a) for a in [0, pi/4] (Taylor to a^16; truncation error < 3e-18).
MUNINN_HOST_DEVICE inline double cos_octant(double a) {
  constexpr double c[9] = {1.0,
                           -0.5,
                           0.041666666666666664,
                           -0.001388888888888889,
                           2.48015873015873e-05,
                           -2.755731922398589e-07,
                           2.08767569878681e-09,
                           -1.1470745597729725e-11,
                           4.779477332387385e-14};
  const double s = rn_mul(a, a);
  double p = c[8];
  for (int k = 7; k >= 0; --k) p = rn_fma(p, s, c[k]);
  return p;
}

/// \brief cos(2 pi t / 2^32), with the reduction to one octant done exactly on the integer t.
MUNINN_HOST_DEVICE inline double cos_turn_u32(std::uint32_t t) {
  constexpr double step = 1.4629180792671596e-09;  // (pi/4) / 2^29
  const std::uint32_t octant = t >> 29;
  const std::uint32_t frac = t & ((1u << 29) - 1);
  const std::uint32_t q = octant >> 1;
  if ((octant & 1u) == 0) {
    // theta = q pi/2 + a, a in [0, pi/4)
    const double a = rn_mul(double(frac), step);
    switch (q) {
      case 0: return cos_octant(a);
      case 1: return -sin_octant(a);
      case 2: return -cos_octant(a);
      default: return sin_octant(a);
    }
  }
  // theta = (q+1) pi/2 - a, a in (0, pi/4]
  const double a = rn_mul(double((1u << 29) - frac), step);
  switch ((q + 1) & 3u) {
    case 0: return cos_octant(a);
    case 1: return sin_octant(a);
    case 2: return -cos_octant(a);
    default: return -sin_octant(a);
  }
}

}  // namespace detail

/// \brief A standard normal draw (Box–Muller, cosine branch) for (seed, index, attempt).
MUNINN_HOST_DEVICE inline double standard_normal_at(std::uint64_t seed, std::uint64_t index,
                                                    std::uint32_t attempt) {
  const std::uint64_t bits = counter_bits(seed, index, attempt);
  // u1 = (hi + 1) / 2^32 lies in (0, 1], so the log is finite.
  const double ln_u1 = detail::log_u32_fraction((bits >> 32) + 1);
  const double r = detail::rn_sqrt(detail::rn_mul(-2.0, ln_u1));
  return detail::rn_mul(r, detail::cos_turn_u32(std::uint32_t(bits)));
}

/// \brief Draws after which truncated_normal_at gives up and returns 0 (probability ~1e-82).
inline constexpr std::uint32_t truncated_normal_max_attempts = 32;

/// \brief Element `index` of a normal(0, stddev) stream truncated to [-3 stddev, 3 stddev].
///
/// Draws are rejected while |z| > 3 and redrawn with attempt + 1, so each element is an
/// independent exact truncated normal. Identical on host and device (see the file comment).
MUNINN_HOST_DEVICE inline float truncated_normal_at(std::uint64_t seed, std::uint64_t index, float stddev) {
  for (std::uint32_t attempt = 0; attempt < truncated_normal_max_attempts; ++attempt) {
    const double z = standard_normal_at(seed, index, attempt);
    if (z >= -3.0 && z <= 3.0) {
#if defined(__CUDA_ARCH__)
      return __double2float_rn(__dmul_rn(z, double(stddev)));
#else
      return float(z * double(stddev));
#endif
    }
  }
  return 0.0f;
}

/// \brief Element `index` of a standard normal stream truncated to [-3, 3] (stddev 1).
MUNINN_HOST_DEVICE inline float truncated_normal_at(std::uint64_t seed, std::uint64_t index) {
  return truncated_normal_at(seed, index, 1.0f);
}

}  // namespace muninn
