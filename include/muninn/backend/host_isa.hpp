#pragma once
/// \file
/// \brief Which instruction set the host's run-time-dispatched kernels use (bf16 and 8-bit weights).
///
/// The fp32 kernels are compiled for the translation unit's target (`-march`). The kernels that
/// read bf16 or 8-bit weights are compiled three times, as `generic` (the translation unit's own
/// target, 4 lanes), `avx2` (AVX2 + FMA) and `avx512` (AVX-512 F/BW/VL), and the first call picks
/// the widest that this CPU runs: one binary serves an AVX2 machine and an AVX-512 one.
/// `MUNINN_HOST_ISA=generic|avx2|avx512` or set_host_isa_limit() caps the choice (a test runs
/// every path its machine has; a user can rule out a path).

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "muninn/core/error.hpp"

namespace muninn {

/// \brief Instruction-set levels of the dispatched host kernels, narrowest first.
enum class host_isa : int {
  generic = 0,  ///< the translation unit's own target (SSE2 on plain x86-64, NEON on AArch64), 4 lanes
  avx2 = 1,     ///< AVX2 + FMA, 8 lanes
  avx512 = 2,   ///< AVX-512 F, BW and VL, 16 lanes
};

/// \brief The level's name as `MUNINN_HOST_ISA` spells it.
inline const char* host_isa_name(host_isa i) {
  switch (i) {
    case host_isa::avx2: return "avx2";
    case host_isa::avx512: return "avx512";
    default: return "generic";
  }
}

/// \brief The widest level this CPU (and compiler) supports.
inline host_isa host_isa_supported() {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
  static const host_isa best = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
      return host_isa::avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return host_isa::avx2;
    return host_isa::generic;
  }();
  return best;
#else
  return host_isa::generic;
#endif
}

namespace detail {
/// \brief The cap set by set_host_isa_limit(); -1 when none was set (the environment decides).
inline std::atomic<int> host_isa_cap{-1};

/// \brief `MUNINN_HOST_ISA`, read once: a level name, or unset (no cap).
inline int host_isa_env_cap() {
  static const int cap = [] {
    const char* s = std::getenv("MUNINN_HOST_ISA");
    if (!s || !*s) return int(host_isa::avx512);
    for (host_isa i : {host_isa::generic, host_isa::avx2, host_isa::avx512})
      if (std::strcmp(s, host_isa_name(i)) == 0) return int(i);
    fail("MUNINN_HOST_ISA='", s, "' is not one of generic, avx2, avx512");
  }();
  return cap;
}
}  // namespace detail

/// \brief Caps the level the dispatched kernels use from now on (process-wide; for tests and for
/// ruling out a path). A cap above what the CPU supports has no effect.
inline void set_host_isa_limit(host_isa cap) { detail::host_isa_cap.store(int(cap)); }

/// \brief Removes the cap of set_host_isa_limit() (`MUNINN_HOST_ISA` applies again).
inline void clear_host_isa_limit() { detail::host_isa_cap.store(-1); }

/// \brief The level the dispatched kernels use now: the supported one, capped.
inline host_isa host_isa_active() {
  const int set = detail::host_isa_cap.load(std::memory_order_relaxed);
  const int cap = set >= 0 ? set : detail::host_isa_env_cap();
  const int have = int(host_isa_supported());
  return host_isa(cap < have ? cap : have);
}

}  // namespace muninn
