#pragma once
/// \file
/// \brief The run-time-dispatched kernels that read bf16 and q8 weights: the decode GEMV and the
/// conversion of a block of weights to fp32, each compiled for every host_isa level.
///
/// One body (ops/lowp_kernels_body.inc) is included once per level, in a namespace of its own and
/// under that level's `#pragma GCC target`, so the same source becomes SSE2/NEON, AVX2 and
/// AVX-512 code in one binary (the int8 widening uses the level's instructions: vector extensions
/// alone make GCC convert lane by lane). `gemv` and `to_f32` widen weights in registers (bf16: a
/// 16-bit shift; q8: sign-extend and convert, then the block's scale) and every product and sum is
/// fp32: the activations are not rounded. (AVX-512 BF16's dot-product instruction would need the
/// activations in bf16, a precision loss that buys nothing in a GEMV bound by weight bytes.)
///
/// The exceptions are `gemv_q8a`, the q8 decode GEMV, and `gemm_q8a`, its form for 2 to 8 rows
/// (batched decode): there each activation row is rounded to int8 per block of 32
/// (q8_quantize_activations, by the caller, once per call) and each block is an exact integer dot
/// product, scaled once; the multi-row kernel reads each weight block once for all its rows.
/// Widening every int8 weight to fp32 costs a sign-extension, a conversion and an FMA per weight,
/// which on an AVX2 core with 128-bit units (Zen 1) ran at 4.4 GB/s of weights, half what the core
/// streams; byte-by-byte multiply-adds (maddubs, then madd to int32) do 32 products in a few
/// instructions and reach the memory's pace.
/// The price is one more rounding, of the activations (each within half a step of its block's
/// amax/127), measured on whole models in docs/performance.md ("Weight formats");
/// `host_backend::q8_int8_activations` turns it off.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "muninn/backend/host_isa.hpp"
#include "muninn/core/dtype.hpp"
#include "muninn/core/macros.hpp"
#include "muninn/ops/q8_math.hpp"
#include "muninn/ops/weight.hpp"

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__)) && !defined(__CUDACC__)
/// \brief Defined when the AVX2 and AVX-512 levels are compiled (x86 with GCC or Clang, not under nvcc).
#define MUNINN_LOWP_X86 1
#include <immintrin.h>
#endif

/// \brief How the level bodies inline their helpers.
#define MUNINN_LOWP_INLINE MUNINN_INLINE

namespace muninn {
namespace detail {
namespace lowp {

/// \brief A row of activations quantized to int8 by q8_quantize_activations, for gemv_q8a.
struct q8_act {
  const std::int8_t* q;  ///< values, a multiple of 32 (zero past K)
  const float* d;        ///< one scale per block of 32
};

/// \brief The generic level: the translation unit's own target, 4 lanes.
namespace generic {
inline constexpr int W = 4;
/// \brief Which level the body below is compiled as (0 generic, 1 AVX2, 2 AVX-512).
#define MUNINN_LOWP_LEVEL 0
#include "muninn/ops/lowp_kernels_body.inc"
#undef MUNINN_LOWP_LEVEL
}  // namespace generic

#if defined(MUNINN_LOWP_X86)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
/// \brief The AVX2 level: AVX2 + FMA, 8 lanes.
namespace avx2 {
inline constexpr int W = 8;
#define MUNINN_LOWP_LEVEL 1
#include "muninn/ops/lowp_kernels_body.inc"
#undef MUNINN_LOWP_LEVEL
}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))), apply_to = function)
#else
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma")
#endif
/// \brief The AVX-512 level: AVX-512 F/BW/VL, 16 lanes.
namespace avx512 {
inline constexpr int W = 16;
#define MUNINN_LOWP_LEVEL 2
#include "muninn/ops/lowp_kernels_body.inc"
#undef MUNINN_LOWP_LEVEL
}  // namespace avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

/// \brief The kernels of one level (function pointers: the level is chosen at run time).
struct kernels {
  void (*gemv)(const weight_view&, std::int64_t, std::int64_t, std::int64_t, float, const float*, float, float*);
  void (*to_f32)(const weight_view&, std::int64_t, std::int64_t, std::int64_t, std::int64_t, float*, std::int64_t);
  void (*gemv_q8a)(const weight_view&, std::int64_t, std::int64_t, std::int64_t, float, const q8_act&, float, float*);
  void (*gemm_q8a)(const weight_view&, std::int64_t, std::int64_t, std::int64_t, int, float, const q8_act*, float, float*,
                   std::int64_t);
};

/// \brief The kernels of the active level (host_isa_active()).
inline kernels active() {
#if defined(MUNINN_LOWP_X86)
  switch (host_isa_active()) {
    case host_isa::avx512: return {avx512::gemv, avx512::to_f32, avx512::gemv_q8a, avx512::gemm_q8a};
    case host_isa::avx2: return {avx2::gemv, avx2::to_f32, avx2::gemv_q8a, avx2::gemm_q8a};
    default: break;
  }
#endif
  return {generic::gemv, generic::to_f32, generic::gemv_q8a, generic::gemm_q8a};
}

}  // namespace lowp
}  // namespace detail
}  // namespace muninn
