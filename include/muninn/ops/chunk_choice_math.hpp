#pragma once
/// \file
/// \brief The arithmetic of the batch approximation of chunk temperature sampling (CALM's
/// Algorithm 2), shared by the host sampler (ops/chunk_choice.hpp) and the CUDA kernel
/// (ops/cuda/chunk_choice.cuh) so that both pick the same chunk bit for bit.
///
/// Every double operation is a correctly rounded `detail::rn_*` primitive of core/random.hpp and
/// no product feeds a sum, so nvcc and g++ cannot contract or reorder differently.

#include <cfloat>
#include <cstdint>

#include "muninn/core/macros.hpp"
#include "muninn/core/random.hpp"

namespace muninn {

/// \brief The binomial coefficient C(count, m) in double; 0 when m < 0 or m > count.
///
/// Multiplicative form over the smaller of m and count − m: r ← r · (count − m' + i) / i for
/// i = 1..m'. Every intermediate r is the integer C(count − m' + i, i), so the result is exact
/// while the products stay below 2^53 and within a few ulp beyond (C(200, 100) ≈ 9.05e58 fits
/// easily; C(count, count/2) first overflows at count = 1030). An overflow gives +inf.
MUNINN_HOST_DEVICE inline double chunk_binomial(std::int64_t count, std::int64_t m) {
  if (m < 0 || m > count) return 0.0;
  if (m > count - m) m = count - m;
  double r = 1.0;
  for (std::int64_t i = 1; i <= m; ++i) {
    const double num = double(count - m + i);
    // Near the top of the double range divide first, so that only a result beyond it overflows.
    r = r > detail::rn_div(DBL_MAX, num) ? detail::rn_mul(detail::rn_div(r, double(i)), num)
                                         : detail::rn_div(detail::rn_mul(r, num), double(i));
  }
  return r;
}

/// \brief Lexicographic order of two K-token chunks on their int32 ids: −1, 0 or 1.
MUNINN_HOST_DEVICE MUNINN_INLINE int chunk_key_compare(const std::int32_t* a, const std::int32_t* b, std::int64_t k) {
  for (std::int64_t t = 0; t < k; ++t)
    if (a[t] != b[t]) return a[t] < b[t] ? -1 : 1;
  return 0;
}

/// \brief The level m of a row: min(n, largest count). It is the first m = n, n−1, …, 1 for
/// which some chunk occurs at least m times.
MUNINN_HOST_DEVICE MUNINN_INLINE std::int64_t chunk_level(std::int64_t n, std::int64_t max_count) {
  return max_count < n ? max_count : n;
}

/// \brief The choice rule of the batch approximation: the slot of the picked chunk.
///
/// `counts[0..slots)` lists the distinct chunks of a row in ascending key order; a slot may hold 0
/// (the device kernel leaves the slots of repeated copies empty), and slots with a count below m
/// are no candidates. With weights w = C(count, m) of the candidates, W = Σ w summed in slot
/// order, the pick is the first candidate c with `v · W < w_0 + … + w_c` (running sum in the same
/// order). Returns the last candidate if rounding ever let the running sum end at or below v · W
/// (it cannot for 0 ≤ v < 1 and a finite W > 0), and −1 when no slot is a candidate.
/// \param counts copies of each distinct chunk, in key order
/// \param slots  entries of `counts`
/// \param m      the level, >= 1
/// \param v      the choice uniform in [0, 1)
MUNINN_HOST_DEVICE inline std::int64_t chunk_pick(const std::int32_t* counts, std::int64_t slots, std::int64_t m,
                                                  double v) {
  double total = 0.0;
  for (std::int64_t s = 0; s < slots; ++s)
    if (counts[s] >= m) total = detail::rn_add(total, chunk_binomial(counts[s], m));
  const double target = detail::rn_mul(v, total);
  double cum = 0.0;
  std::int64_t last = -1;
  for (std::int64_t s = 0; s < slots; ++s) {
    if (counts[s] < m) continue;
    cum = detail::rn_add(cum, chunk_binomial(counts[s], m));
    last = s;
    if (target < cum) return s;
  }
  return last;
}

}  // namespace muninn
