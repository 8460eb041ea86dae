#pragma once
/// \file
/// \brief The batch approximation of chunk temperature sampling (CALM's Algorithm 2) on the CUDA
/// backend: counting, weighing and the choice all run on the device, so only the chosen [B, K] ids
/// need to cross to the host. The host version and the rules are in ops/chunk_choice.hpp;
/// both use the arithmetic of ops/chunk_choice_math.hpp and pick the same samples.

#include <cstdint>

#include "muninn/ops/cuda/common.cuh"
#include "muninn/ops/chunk_choice.hpp"

namespace muninn {
namespace detail {
namespace gpu {

/// \brief Threads per row of choose_chunks_kernel.
inline constexpr int chunk_choice_threads = 256;
/// \brief Dynamic shared memory a block of choose_chunks_kernel may use: the 48 KiB a launch
/// gets without opting in, less room for the kernel's static shared variable.
inline constexpr std::int64_t chunk_choice_smem_limit = 48 * 1024 - 256;

/// \brief One block per row. Thread i finds, by comparing chunk i with all N chunks of the row,
/// its copies and how many chunks sort below it: that is the start of its run in the row sorted
/// by key, so the run's first sample writes its count and index into that slot (a rank sort; the
/// other slots stay 0). Thread 0 then applies chunk_level and chunk_pick to the slots, which hold
/// the distinct chunks in ascending key order exactly like the host's runs.
///
/// Shared memory: counts [N], firsts [N], and the row's ids [N, K] when `staged`.
template <int Unused = 0>
__global__ void __launch_bounds__(chunk_choice_threads)
    choose_chunks_kernel(const std::int32_t* chunks, std::int64_t samples, std::int64_t k, bool temperature_one,
                         std::int64_t n, std::uint64_t seed, const std::int64_t* positions, bool staged,
                         std::int32_t* out, chunk_choice* choices) {
  extern __shared__ std::int32_t smem[];
  __shared__ std::int32_t max_count;
  std::int32_t* counts = smem;
  std::int32_t* firsts = smem + samples;
  const std::int64_t r = blockIdx.x;
  const std::int32_t* row = chunks + r * samples * k;
  const std::int32_t* keys = row;
  if (staged) {
    std::int32_t* s = smem + 2 * samples;
    for (std::int64_t e = threadIdx.x; e < samples * k; e += chunk_choice_threads) s[e] = row[e];
    keys = s;
  }
  for (std::int64_t i = threadIdx.x; i < samples; i += chunk_choice_threads) counts[i] = 0;
  if (threadIdx.x == 0) max_count = 0;
  __syncthreads();

  if (temperature_one) {
    if (threadIdx.x == 0) {
      std::int32_t c = 0;
      for (std::int64_t j = 0; j < samples; ++j) c += chunk_key_compare(keys, keys + j * k, k) == 0;
      for (std::int64_t t = 0; t < k; ++t) out[r * k + t] = keys[t];
      if (choices) choices[r] = chunk_choice{0, 1, c};
    }
    return;
  }

  for (std::int64_t i = threadIdx.x; i < samples; i += chunk_choice_threads) {
    const std::int32_t* ki = keys + i * k;
    std::int32_t copies = 0, below = 0;
    bool first = true;
    for (std::int64_t j = 0; j < samples; ++j) {
      const int c = chunk_key_compare(keys + j * k, ki, k);
      if (c == 0) {
        ++copies;
        first = first && j >= i;
      } else if (c < 0) {
        ++below;
      }
    }
    if (first) {
      counts[below] = copies;
      firsts[below] = std::int32_t(i);
      atomicMax(&max_count, copies);
    }
  }
  __syncthreads();

  if (threadIdx.x == 0) {
    const std::int64_t m = chunk_level(n, max_count);
    const double v = uniform01_at(stream_seed(seed, chunk_choice_stream_kind, std::uint64_t(positions[r])), 0);
    const std::int64_t slot = chunk_pick(counts, samples, m, v);
    const std::int32_t s = firsts[slot];
    for (std::int64_t t = 0; t < k; ++t) out[r * k + t] = keys[std::int64_t(s) * k + t];
    if (choices) choices[r] = chunk_choice{s, std::int32_t(m), counts[slot]};
  }
}

}  // namespace gpu
}  // namespace detail

/// \brief Most samples per row choose_chunks (CUDA) takes: the counts and first indices of a row
/// live in the block's shared memory.
inline constexpr std::int64_t cuda_chunk_choice_max_samples = detail::gpu::chunk_choice_smem_limit / 8;

/// \brief The batch approximation for `rows` rows on the device, choice by choice the same as
/// the host's choose_chunks (same rules, same stream, same double arithmetic).
///
/// One block per row compares every pair of the row's N chunks (N·N·K integer comparisons;
/// N = 200 in the reference), then one thread weighs and picks. Asynchronous on the backend's
/// stream; uses no workspace, so it may be captured in a CUDA graph.
/// \param be          the CUDA backend
/// \param chunks      device decoded samples [rows, samples, k], row-major
/// \param rows        B
/// \param samples     N, 1 <= N <= cuda_chunk_choice_max_samples
/// \param k           tokens per chunk
/// \param temperature T = 1/n for an integer n >= 1
/// \param seed        the run seed
/// \param positions   device chunk position p of each row [rows] (names its kind-2 stream)
/// \param out         device chosen ids [rows, k]
/// \param choices     device chunk_choice per row [rows], or null
/// \throws muninn::error as the host version, or for N above cuda_chunk_choice_max_samples
inline void choose_chunks(const cuda_backend& be, const std::int32_t* chunks, std::int64_t rows, std::int64_t samples,
                          std::int64_t k, double temperature, std::uint64_t seed, const std::int64_t* positions,
                          std::int32_t* out, chunk_choice* choices = nullptr) {
  using namespace detail::gpu;
  const std::int64_t n = detail::check_chunk_batch("choose_chunks (CUDA)", rows, samples, k, temperature);
  MUNINN_CHECK(samples <= cuda_chunk_choice_max_samples, "choose_chunks (CUDA): samples = ", samples,
               " exceeds the per-row limit ", cuda_chunk_choice_max_samples, " of the device kernel");
  check_rows_grid("choose_chunks (CUDA)", rows);
  if (rows == 0) return;
  const std::int64_t base = 2 * samples * std::int64_t(sizeof(std::int32_t));
  const std::int64_t keys = samples * k * std::int64_t(sizeof(std::int32_t));
  const bool staged = base + keys <= chunk_choice_smem_limit;
  const std::size_t smem = std::size_t(staged ? base + keys : base);
  choose_chunks_kernel<0><<<unsigned(rows), chunk_choice_threads, smem, be.stream()>>>(
      chunks, samples, k, temperature == 1.0, n, seed, positions, staged, out, choices);
  MUNINN_CUDA_CHECK_LAUNCH("choose_chunks_kernel");
}

}  // namespace muninn
