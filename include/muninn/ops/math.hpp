#pragma once
/// \file
/// \brief Per-element maths shared by the host ops, the CUDA kernels and the tests.
///
/// Each function here is the one definition of a small piece of arithmetic (a RoPE rotation, a
/// SiLU, a norm's element scaling, a gated add, a KL or entropy term). The CUDA kernels call
/// them, and so do the scalar parts of the host ops, so a host test of these functions checks
/// the arithmetic the kernels run. Everything is fp32 unless a template says otherwise; nothing
/// here rounds to a storage type (the kernels do that where PyTorch does).

#include <cmath>
#include <cstdint>

#include "muninn/core/macros.hpp"

namespace muninn {
namespace detail {

/// \brief e^x in float: CUDA's expf on the device, std::exp on the host.
MUNINN_HOST_DEVICE MUNINN_INLINE float exp_of(float x) {
#if defined(__CUDA_ARCH__)
  return ::expf(x);
#else
  return std::exp(x);
#endif
}
/// \brief e^x in double (host statistics accumulate in double).
MUNINN_HOST_DEVICE MUNINN_INLINE double exp_of(double x) {
#if defined(__CUDA_ARCH__)
  return ::exp(x);
#else
  return std::exp(x);
#endif
}
/// \brief Square root in float; IEEE-exact on both sides (no rsqrt approximation).
MUNINN_HOST_DEVICE MUNINN_INLINE float sqrt_of(float x) {
#if defined(__CUDA_ARCH__)
  return ::sqrtf(x);
#else
  return std::sqrt(x);
#endif
}

/// \brief Rotates the pair (a, b) by the angle whose cosine and sine are (c, s), in place:
/// a' = a·c − b·s, b' = b·c + a·s.
///
/// Both RoPE layouts use it: the interleaved one pairs elements (2i, 2i+1), Hugging Face's
/// rotate-half pairs (i, i + D/2); the rotation itself is the same.
MUNINN_HOST_DEVICE MUNINN_INLINE void rope_rotate(float& a, float& b, float c, float s) {
  const float a0 = a, b0 = b;
  a = a0 * c - b0 * s;
  b = b0 * c + a0 * s;
}

/// \brief silu(g) = g · sigmoid(g) = g / (1 + e^-g).
///
/// Large negative g gives e^-g = inf and a result of −0, not NaN.
MUNINN_HOST_DEVICE MUNINN_INLINE float silu(float g) { return g / (1.0f + exp_of(-g)); }
/// \brief GELU with the exact erf form, 0.5·x·(1 + erf(x/√2)) (PyTorch's default `nn.GELU`).
MUNINN_HOST_DEVICE MUNINN_INLINE float gelu_erf(float x) {
#if defined(__CUDA_ARCH__)
  return 0.5f * x * (1.0f + ::erff(x * 0.70710678118654752f));
#else
  return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
#endif
}

/// \brief 1 / sqrt(sum_sq / cols + eps): the RMSNorm scale of a row whose squares sum to `sum_sq`.
MUNINN_HOST_DEVICE MUNINN_INLINE float rms_inverse(float sum_sq, std::int64_t cols, float eps) {
  return 1.0f / sqrt_of(sum_sq / float(cols) + eps);
}

/// \brief One LayerNorm output element: (x − mean) · rstd · w + b.
///
/// A missing weight is w = 1 and a missing bias b = 0; both are exact, so the weightless form
/// needs no separate formula.
MUNINN_HOST_DEVICE MUNINN_INLINE float layernorm_element(float x, float mean, float rstd, float w, float b) {
  return (x - mean) * rstd * w + b;
}

/// \brief d + g·s: one element of a gated scatter-add (MoR writes a routed token's block output
/// back, scaled by its router weight).
MUNINN_HOST_DEVICE MUNINN_INLINE float gated_add(float d, float g, float s) { return d + g * s; }

/// \brief e^x − 1 in double, accurate for small x (CUDA's expm1 on the device, std::expm1 on the host).
MUNINN_HOST_DEVICE MUNINN_INLINE double expm1_of(double x) {
#if defined(__CUDA_ARCH__)
  return ::expm1(x);
#else
  return std::expm1(x);
#endif
}

/// \brief Folds element c of a row into the sums of KL(softmax(a) ‖ softmax(b)).
///
/// With ea = e^(a_c − ma), eb = e^(b_c − mb) and u = (b_c − a_c) + (ma − mb) = log(eb / ea)
/// (computed from the logits, not from ea and eb): tu += ea · u and tw += eb − ea, the latter as
/// ea · expm1(u) when |u| < 0.5. Then KL = −tu / s_a + log1p(tw / s_a) (kl_finish), s_a = Σ ea.
/// Both parts are about Σ p·u and cancel to the KL (about half the variance of u under p), so
/// they are formed from u and expm1(u), whose errors are relative to u itself: a KL of 1e-9
/// between two close distributions comes out with a few digits, where log-probabilities
/// subtracted in fp32 would leave only noise. A term with ea = 0 (a = −inf) adds no ea · u.
/// \tparam F the accumulation type (double on both backends)
template <class F>
MUNINN_HOST_DEVICE MUNINN_INLINE void kl_accumulate(F ea, F eb, F u, F& tu, F& tw) {
  if (ea != F(0)) tu += ea * u;
  tw += (u > F(-0.5) && u < F(0.5)) ? ea * expm1_of(u) : eb - ea;
}
/// \brief KL from kl_accumulate's sums: −tu / sa + log1p(tw / sa).
MUNINN_HOST_DEVICE MUNINN_INLINE double kl_finish(double sa, double tu, double tw) {
#if defined(__CUDA_ARCH__)
  return -tu / sa + ::log1p(tw / sa);
#else
  return -tu / sa + std::log1p(tw / sa);
#endif
}

/// \brief One term of t = Σ_c e_c · (x_c − m), with e_c = e^(x_c − m); 0 when e = 0.
///
/// The entropy −Σ p log p of p = softmax(x) is log s − t / s with s = Σ e_c (entropy_finish).
/// \tparam F the accumulation type (double on both backends)
template <class F>
MUNINN_HOST_DEVICE MUNINN_INLINE F entropy_term(F e, F z) {
  return e == F(0) ? F(0) : e * z;
}
/// \brief Entropy from the two sums of entropy_term's formula: log s − t / s.
MUNINN_HOST_DEVICE MUNINN_INLINE double entropy_finish(double t, double s) {
#if defined(__CUDA_ARCH__)
  return ::log(s) - t / s;
#else
  return std::log(s) - t / s;
#endif
}

/// \brief Maps a float to an unsigned key whose ascending order is the float's descending
/// order, then ascending `index` (top-k sorts these keys; NaN ranks as −inf and −0 as +0).
MUNINN_HOST_DEVICE MUNINN_INLINE std::uint64_t topk_key(std::uint32_t value_bits, std::uint32_t index) {
  if ((value_bits & 0x7fffffffu) > 0x7f800000u) value_bits = 0xff800000u;  // NaN → −inf
  if ((value_bits & 0x7fffffffu) == 0u) value_bits = 0u;                   // −0 → +0
  // Order-preserving map of IEEE bits to unsigned (negatives flipped), then inverted for descending.
  const std::uint32_t ordered = (value_bits & 0x80000000u) ? ~value_bits : (value_bits | 0x80000000u);
  return (std::uint64_t(~ordered) << 32) | index;
}

/// \brief The IEEE bits of the value encoded in a topk_key (after its NaN and −0 mapping).
MUNINN_HOST_DEVICE MUNINN_INLINE std::uint32_t topk_key_value_bits(std::uint64_t key) {
  const std::uint32_t ordered = ~std::uint32_t(key >> 32);
  return (ordered & 0x80000000u) ? (ordered & 0x7fffffffu) : ~ordered;
}

}  // namespace detail
}  // namespace muninn
