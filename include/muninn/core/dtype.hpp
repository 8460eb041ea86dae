#pragma once
/// \file
/// \brief Storage types (fp32, bf16, f16) and exact host conversions between them.

#include <cstdint>
#include <cstring>
#include <string>

#include "muninn/core/macros.hpp"

namespace muninn {

/// \brief bfloat16 storage: the upper 16 bits of an IEEE float32.
///
/// A plain 2-byte struct (layout-compatible with `__nv_bfloat16`) so that host code never needs
/// CUDA headers; arithmetic happens after conversion to float.
struct bf16 {
  std::uint16_t bits;  ///< raw bf16 bit pattern
};

/// \brief IEEE binary16 storage (layout-compatible with `__half`).
struct f16 {
  std::uint16_t bits;  ///< raw IEEE binary16 bit pattern
};

/// \brief Bit-cast helpers (memcpy keeps them well defined in C++17): float → its IEEE bits.
MUNINN_HOST_DEVICE MUNINN_INLINE std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}
/// \brief IEEE bits → float; the inverse of float_bits.
MUNINN_HOST_DEVICE MUNINN_INLINE float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// \brief bf16 → float is exact.
MUNINN_HOST_DEVICE MUNINN_INLINE float to_float(bf16 v) { return bits_float(std::uint32_t(v.bits) << 16); }

/// \brief float → bf16 with round-to-nearest-even (what PyTorch's `.to(torch.bfloat16)` does); NaN stays NaN.
MUNINN_HOST_DEVICE MUNINN_INLINE bf16 to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{std::uint16_t((u >> 16) | 0x40u)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{std::uint16_t(u >> 16)};
}

/// \brief f16 → float, exact for normals, subnormals, infinities and NaN.
MUNINN_HOST_DEVICE MUNINN_INLINE float to_float(f16 v) {
  const std::uint32_t h = v.bits;
  const std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t man = h & 0x3ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (man << 13));  // inf / NaN
  if (exp == 0) {
    if (man == 0) return bits_float(sign);
    // Subnormal: value = man * 2^-24, exactly representable in float.
    float f = float(man) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

/// \brief float → f16 with round-to-nearest-even, overflow to infinity, gradual underflow.
MUNINN_HOST_DEVICE MUNINN_INLINE f16 to_f16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return f16{std::uint16_t(sign | 0x7e00u)};
  if (absu >= 0x477ff000u) return f16{std::uint16_t(sign | 0x7c00u)};  // rounds to >= 65520 → inf
  if (absu < 0x38800000u) {                                               // below the smallest normal
    // Scale into the subnormal grid and let float rounding (nearest-even) do the work.
    float a = bits_float(absu) * 16777216.0f;  // * 2^24: units of the smallest subnormal
    std::uint32_t m = std::uint32_t(a);
    float rem = a - float(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
    return f16{std::uint16_t(sign | m)};
  }
  std::uint32_t r = absu - 0x38000000u;  // rebias exponent 127 → 15
  r += 0xfffu + ((r >> 13) & 1u);
  return f16{std::uint16_t(sign | (r >> 13))};
}

/// \brief Identity, so generic code can call to_float on any storage type.
MUNINN_HOST_DEVICE MUNINN_INLINE float to_float(float v) { return v; }

/// \brief Converts a float to storage type T (float, bf16 or f16).
template <class T>
MUNINN_HOST_DEVICE MUNINN_INLINE T from_float(float v);
/// \brief Identity for float storage.
template <>
MUNINN_HOST_DEVICE MUNINN_INLINE float from_float<float>(float v) { return v; }
/// \brief Rounds to bf16 (nearest-even), see to_bf16.
template <>
MUNINN_HOST_DEVICE MUNINN_INLINE bf16 from_float<bf16>(float v) { return to_bf16(v); }
/// \brief Rounds to f16 (nearest-even), see to_f16.
template <>
MUNINN_HOST_DEVICE MUNINN_INLINE f16 from_float<f16>(float v) { return to_f16(v); }

/// \brief Run-time tag of a storage type, as found in checkpoints.
enum class dtype { f32, bf16, f16 };

/// \brief Bytes per element of a dtype.
inline std::size_t dtype_size(dtype t) { return t == dtype::f32 ? 4 : 2; }

/// \brief The safetensors spelling of a dtype ("F32", "BF16", "F16").
inline const char* dtype_name(dtype t) {
  switch (t) {
    case dtype::f32: return "F32";
    case dtype::bf16: return "BF16";
    case dtype::f16: return "F16";
  }
  return "?";
}

/// \brief Compile-time dtype of a storage type.
template <class T>
struct dtype_of;
/// \brief float is stored as F32.
template <>
struct dtype_of<float> {
  static constexpr dtype value = dtype::f32;  ///< the run-time tag of float
};
/// \brief bf16 is stored as BF16.
template <>
struct dtype_of<bf16> {
  static constexpr dtype value = dtype::bf16;  ///< the run-time tag of bf16
};
/// \brief f16 is stored as F16.
template <>
struct dtype_of<f16> {
  static constexpr dtype value = dtype::f16;  ///< the run-time tag of f16
};

/// \brief Converts `n` elements stored as `src_type` at `src` into T at `dst`.
template <class T>
void convert_to(T* dst, const void* src, dtype src_type, std::size_t n) {
  switch (src_type) {
    case dtype::f32: {
      const float* s = static_cast<const float*>(src);
      for (std::size_t i = 0; i < n; ++i) dst[i] = from_float<T>(s[i]);
      break;
    }
    case dtype::bf16: {
      const bf16* s = static_cast<const bf16*>(src);
      for (std::size_t i = 0; i < n; ++i) dst[i] = from_float<T>(to_float(s[i]));
      break;
    }
    case dtype::f16: {
      const f16* s = static_cast<const f16*>(src);
      for (std::size_t i = 0; i < n; ++i) dst[i] = from_float<T>(to_float(s[i]));
      break;
    }
  }
}

}  // namespace muninn
