#pragma once
/// \file
/// \brief Portable SIMD helpers for the host ops, built on GCC/Clang vector extensions.
///
/// The vector width follows the target the translation unit is compiled for: 16 floats with
/// AVX-512F, 8 with AVX, 4 otherwise (SSE2 on x86-64, NEON or scalar code elsewhere). No
/// intrinsics are used, so the library compiles for any target; `-march=native` only makes it
/// faster. The width is part of an inline namespace so that translation units built with
/// different flags do not silently share (ODR-merge) helpers of different widths. The public
/// ops are ordinary inline functions: a program that mixes `-march` flags across translation
/// units gets one of their definitions, as with any header-only library.

#include <cstdint>
#include <cstring>

#include "muninn/core/macros.hpp"

// Why: GCC's -O2 does not unroll the constant-trip loops of a register tile, and an array of
// accumulators that is not fully unrolled lives in memory.
#if defined(__clang__) || defined(__GNUC__)
/// \brief Fully unrolls the next loop (constant trip count) so register-tile arrays stay in registers.
#define MUNINN_UNROLL _Pragma("GCC unroll 32")
#else
/// \brief Fully unrolls the next loop (no-op on compilers without the GCC pragma).
#define MUNINN_UNROLL
#endif

// Why: GCC's Zen tuning folds one load into each FMA that uses a value, re-reading memory once
// per use and doubling or quadrupling the loads of a tile. An empty asm that "modifies" the
// value leaves nothing to re-read.
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
/// \brief Pins a vector value in a register (see above).
#define MUNINN_KEEP_IN_REGISTER(x) __asm__("" : "+v"(x))
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
/// \brief Pins a vector value in a register (see above).
#define MUNINN_KEEP_IN_REGISTER(x) __asm__("" : "+w"(x))
#else
/// \brief Pins a vector value in a register (no-op on this compiler/target).
#define MUNINN_KEEP_IN_REGISTER(x) ((void)0)
#endif

namespace muninn {
namespace detail {

#if defined(__AVX512F__)
/// \brief Floats per host vector for the target of this translation unit.
#define MUNINN_SIMD_WIDTH 16
/// \brief Inline namespace that keeps helpers of different widths apart at link time.
#define MUNINN_SIMD_ABI simd_w16
#elif defined(__AVX__)
/// \brief Floats per host vector for the target of this translation unit.
#define MUNINN_SIMD_WIDTH 8
/// \brief Inline namespace that keeps helpers of different widths apart at link time.
#define MUNINN_SIMD_ABI simd_w8
#else
/// \brief Floats per host vector for the target of this translation unit.
#define MUNINN_SIMD_WIDTH 4
/// \brief Inline namespace that keeps helpers of different widths apart at link time.
#define MUNINN_SIMD_ABI simd_w4
#endif

inline namespace MUNINN_SIMD_ABI {

/// \brief Lanes of a float vector on this target.
inline constexpr int simd_width = MUNINN_SIMD_WIDTH;

/// \brief A vector of `simd_width` floats.
typedef float vfloat __attribute__((vector_size(MUNINN_SIMD_WIDTH * 4)));
/// \brief A vector of `simd_width` unsigned 32-bit ints (for exponent bit tricks).
typedef std::uint32_t vuint __attribute__((vector_size(MUNINN_SIMD_WIDTH * 4)));

/// \brief The same vector with only float alignment, and allowed to alias float arrays.
typedef float vfloat_unaligned __attribute__((vector_size(MUNINN_SIMD_WIDTH * 4), aligned(4), may_alias));

/// \brief Unaligned load (through the alias-safe, float-aligned vector type).
MUNINN_INLINE vfloat vload(const float* p) { return *reinterpret_cast<const vfloat_unaligned*>(p); }
/// \brief Unaligned store.
MUNINN_INLINE void vstore(float* p, vfloat v) { *reinterpret_cast<vfloat_unaligned*>(p) = v; }
/// \brief All lanes set to `s`.
MUNINN_INLINE vfloat vset1(float s) { return vfloat{} + s; }

#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
/// \brief Defined when the compiler has __builtin_shufflevector (GCC 12+, Clang).
#define MUNINN_HAS_SHUFFLEVECTOR 1
#endif
#endif

#if defined(MUNINN_HAS_SHUFFLEVECTOR)
/// \brief Four-lane float vector, the last step of the horizontal reductions.
typedef float vfloat4 __attribute__((vector_size(16)));

/// \brief Folds a vector in halves with `op` down to 4 lanes (shuffles, no memory round trip).
template <class Op>
MUNINN_INLINE vfloat4 fold_to_4(vfloat v, Op op) {
#if MUNINN_SIMD_WIDTH == 16
  typedef float vfloat8 __attribute__((vector_size(32)));
  const vfloat8 a = op(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7),
                       __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
  return op(__builtin_shufflevector(a, a, 0, 1, 2, 3), __builtin_shufflevector(a, a, 4, 5, 6, 7));
#elif MUNINN_SIMD_WIDTH == 8
  return op(__builtin_shufflevector(v, v, 0, 1, 2, 3), __builtin_shufflevector(v, v, 4, 5, 6, 7));
#else
  (void)op;
  return v;
#endif
}

/// \brief Reduces a vector to one float with `op`, as a tree of shuffles.
template <class Op>
MUNINN_INLINE float reduce(vfloat v, Op op) {
  vfloat4 b = fold_to_4(v, op);
  b = op(b, __builtin_shufflevector(b, b, 2, 3, 0, 1));
  b = op(b, __builtin_shufflevector(b, b, 1, 0, 3, 2));
  return b[0];
}
#else
/// \brief Reduces a vector to one float with `op` (portable fallback through memory).
template <class Op>
MUNINN_INLINE float reduce(vfloat v, Op op) {
  float t[simd_width];
  std::memcpy(t, &v, sizeof(v));
  for (int w = simd_width / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) t[i] = op(t[i], t[i + w]);
  return t[0];
}
#endif

/// \brief Sum of all lanes.
MUNINN_INLINE float hsum(vfloat v) {
  return reduce(v, [](auto a, auto b) { return a + b; });
}
/// \brief Largest lane (NaN-free inputs).
MUNINN_INLINE float hmax(vfloat v) {
  return reduce(v, [](auto a, auto b) { return a > b ? a : b; });
}
/// \brief Lane-wise maximum.
MUNINN_INLINE vfloat vmax(vfloat a, vfloat b) { return a > b ? a : b; }

/// \brief Lane-wise e^x, relative error about 1 ulp over the float range.
///
/// Cody–Waite reduction x = n·ln2 + r with |r| <= ln2/2, then a degree-7 polynomial for e^r and
/// 2^n built in the exponent bits. Inputs are clamped to [-87.3, 88.3] so the result is a
/// finite normal float (e^x below e^-87.3 returns ~1.2e-38 instead of a denormal; callers
/// only use it for softmax weights and SiLU, where that is far below fp32 resolution).
MUNINN_INLINE vfloat vexp(vfloat x) {
  // Written so that NaN fails both tests and propagates.
  x = x > vset1(88.3f) ? vset1(88.3f) : x;
  x = x < vset1(-87.3f) ? vset1(-87.3f) : x;
  // Round-to-nearest by adding 1.5·2^23: the fraction bits fall off the mantissa.
  const vfloat magic = vset1(12582912.0f);
  vfloat t = x * 1.44269504088896341f + magic;
  MUNINN_KEEP_IN_REGISTER(t);  // stops -ffast-math from folding (t - magic) back into x·log2(e)
  const vfloat n = t - magic;
  vfloat r = x - n * 0.693145751953125f;  // ln2 split hi/lo: hi has few mantissa bits, exact n·hi
  r = r - n * 1.428606765330187045e-06f;
  vfloat p = vset1(1.0f / 5040.0f);
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n from the bits of t, whose low mantissa bits hold n + bits(magic). Unsigned integer
  // arithmetic keeps this defined for NaN input (a float-to-int conversion would be UB there).
  vuint e;
  std::memcpy(&e, &t, sizeof(e));
  e = (e - 0x4B400000u + 127u) << 23;
  vfloat scale;
  std::memcpy(&scale, &e, sizeof(scale));
  return p * scale;
}

/// \brief Scalar e^x with the same algorithm as vexp, for loop tails (keeps results identical
/// whichever lane an element lands in).
MUNINN_INLINE float sexp(float x) {
  float t[simd_width] = {};
  t[0] = x;
  vfloat v;
  std::memcpy(&v, t, sizeof(v));
  v = vexp(v);
  std::memcpy(t, &v, sizeof(v));
  return t[0];
}

}  // namespace MUNINN_SIMD_ABI
}  // namespace detail
}  // namespace muninn
