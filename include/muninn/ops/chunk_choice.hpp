#pragma once
/// \file
/// \brief The batch approximation of likelihood-free chunk temperature sampling (CALM's
/// Algorithm 2, what the reference code runs) as a backend op: `choose_chunks` counts identical
/// decoded chunks per row and picks one with weights C(count, m), on the host here and on the
/// device in ops/cuda/chunk_choice.cuh, with the same arithmetic (ops/chunk_choice_math.hpp).
///
/// A CALM step cannot evaluate P(x) of a chunk x; it can only draw chunks (one head sample,
/// decoded and argmax-ed to K token ids). The batch approximation reaches P(x)^{1/T} / Z for
/// T = 1/n from draws alone. Its choice uniform comes from the counter stream
/// `stream_seed(seed, 2, position)` (core/random.hpp), `position` being the chunk position whose
/// hidden state feeds the head; the exact sampler (runtime/chunk_sampling.hpp) uses kind 3 and
/// the head noise kind 1. docs/calm_sampling.md states every rule precisely enough for a
/// reference to reproduce the choices.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/core/random.hpp"
#include "muninn/ops/chunk_choice_math.hpp"

namespace muninn {

/// \brief Stream kind of the batch approximation's choice uniform.
inline constexpr std::uint64_t chunk_choice_stream_kind = 2;

/// \brief The batch approximation's choice uniform v at chunk position `position`:
/// `uniform01_at(stream_seed(seed, 2, position), 0)`.
inline double chunk_choice_uniform(std::uint64_t seed, std::int64_t position) {
  return uniform01_at(stream_seed(seed, chunk_choice_stream_kind, std::uint64_t(position)), 0);
}

namespace detail {

/// \brief Python's math.isclose(a, b, rel_tol = 1e-9, abs_tol = 0).
inline bool close_rel_1e9(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

inline void check_temperature_range(const char* who, double temperature) {
  MUNINN_CHECK(temperature > 0.0 && temperature <= 1.0, who, ": temperature must be in (0, 1], got T = ",
               temperature);
}

}  // namespace detail

/// \brief n = round(1/T) for the batch approximation, which needs T = 1/n for an integer n.
/// \throws muninn::error unless 0 < T <= 1 and 1/T lies within relative 1e-9 of an integer
///         (the reference's check, math.isclose with rel_tol = 1e-9)
inline std::int64_t batch_temperature_n(double temperature) {
  detail::check_temperature_range("chunk batch sampling", temperature);
  const double inv = 1.0 / temperature;
  const double r = std::round(inv);
  MUNINN_CHECK(detail::close_rel_1e9(inv, r), "chunk batch sampling: temperature must be 1/n for an integer n, got T = ",
               temperature, " (1/T = ", inv,
               ", not an integer within relative 1e-9); the exact sampler accepts any T in (0, 1]");
  return std::int64_t(r);
}

/// \brief What the batch approximation picked for one row.
struct chunk_choice {
  std::int32_t sample = 0;  ///< smallest sample index holding the picked chunk
  std::int32_t m = 1;       ///< the level m whose weights C(count, m) were used (1 at T = 1)
  std::int32_t count = 1;   ///< copies of the picked chunk among the row's samples
};

/// \brief One distinct chunk of a row, as the batch approximation weighs it.
struct chunk_candidate {
  std::int32_t sample = 0;  ///< smallest sample index holding the chunk
  std::int32_t count = 0;   ///< copies among the row's samples
  double weight = 0.0;      ///< C(count, m); 0 when count < m (not a candidate)
};

namespace detail {

/// \brief Scratch of one row: a hash table of its distinct chunks and their runs.
struct chunk_row_scratch {
  std::vector<std::int32_t> table;               // open addressing: distinct-chunk id per slot, −1 empty
  std::vector<std::int32_t> seen_count, seen_first;  // per distinct chunk, in order of first appearance
  std::vector<std::int32_t> order;               // distinct-chunk ids sorted by key
  std::vector<std::int32_t> counts, firsts;      // per distinct chunk, in ascending key order
};

/// \brief Hash of a chunk's ids (for the table only; no result depends on it).
inline std::uint64_t chunk_hash(const std::int32_t* ids, std::int64_t k) {
  std::uint64_t h = 0;
  for (std::int64_t t = 0; t < k; ++t) h = (h ^ std::uint32_t(ids[t])) * 0x9e3779b97f4a7c15ull;
  return mix64(h);
}

/// \brief Counts a row's distinct chunks with an open-addressing hash table into s.seen_count /
/// s.seen_first (in order of first appearance, so a first is the smallest sample index); returns
/// the largest count.
inline std::int32_t count_distinct_chunks(const std::int32_t* chunks, std::int64_t samples, std::int64_t k,
                                          chunk_row_scratch& s) {
  std::size_t size = 16;
  while (size < 2 * std::size_t(samples)) size *= 2;
  s.table.assign(size, -1);
  s.seen_count.clear();
  s.seen_first.clear();
  std::int32_t max_count = 1;
  for (std::int64_t i = 0; i < samples; ++i) {
    const std::int32_t* key = chunks + i * k;
    for (std::size_t slot = std::size_t(chunk_hash(key, k)) & (size - 1);; slot = (slot + 1) & (size - 1)) {
      const std::int32_t d = s.table[slot];
      if (d < 0) {
        s.table[slot] = std::int32_t(s.seen_count.size());
        s.seen_count.push_back(1);
        s.seen_first.push_back(std::int32_t(i));
        break;
      }
      if (chunk_key_compare(chunks + std::int64_t(s.seen_first[std::size_t(d)]) * k, key, k) == 0) {
        max_count = std::max(max_count, ++s.seen_count[std::size_t(d)]);
        break;
      }
    }
  }
  return max_count;
}

/// \brief Counts a row's distinct chunks and lists them in ascending key order in s.counts /
/// s.firsts; returns the largest count.
inline std::int32_t chunk_runs(const std::int32_t* chunks, std::int64_t samples, std::int64_t k, chunk_row_scratch& s) {
  const std::int32_t max_count = count_distinct_chunks(chunks, samples, k, s);
  const auto key_of = [&](std::int32_t d) { return chunks + std::int64_t(s.seen_first[std::size_t(d)]) * k; };
  s.order.resize(s.seen_count.size());
  for (std::size_t d = 0; d < s.order.size(); ++d) s.order[d] = std::int32_t(d);
  std::sort(s.order.begin(), s.order.end(),
            [&](std::int32_t a, std::int32_t b) { return chunk_key_compare(key_of(a), key_of(b), k) < 0; });
  s.counts.resize(s.order.size());
  s.firsts.resize(s.order.size());
  for (std::size_t r = 0; r < s.order.size(); ++r) {
    s.counts[r] = s.seen_count[std::size_t(s.order[r])];
    s.firsts[r] = s.seen_first[std::size_t(s.order[r])];
  }
  return max_count;
}

/// \brief Copies of sample 0's chunk in the row (the count reported at T = 1).
inline std::int32_t chunk_copies_of_first(const std::int32_t* chunks, std::int64_t samples, std::int64_t k) {
  std::int32_t c = 0;
  for (std::int64_t i = 0; i < samples; ++i) c += chunk_key_compare(chunks, chunks + i * k, k) == 0;
  return c;
}

/// \brief One row of the batch approximation, arguments already checked; writes the K ids to
/// `out` when it is not null. Throws nothing.
inline chunk_choice choose_chunk_row(const std::int32_t* chunks, std::int64_t samples, std::int64_t k,
                                     bool temperature_one, std::int64_t n, double v, std::int32_t* out,
                                     chunk_row_scratch& s) {
  chunk_choice c;
  if (temperature_one) {
    c.count = chunk_copies_of_first(chunks, samples, k);
  } else {
    const std::int32_t max_count = chunk_runs(chunks, samples, k, s);
    const std::int64_t m = chunk_level(n, max_count);
    const std::int64_t slot = chunk_pick(s.counts.data(), std::int64_t(s.counts.size()), m, v);
    c.sample = s.firsts[std::size_t(slot)];
    c.m = std::int32_t(m);
    c.count = s.counts[std::size_t(slot)];
  }
  if (out) std::memcpy(out, chunks + std::int64_t(c.sample) * k, std::size_t(k) * sizeof(std::int32_t));
  return c;
}

/// \brief Shape checks shared by the batch entry points (host and CUDA); returns n.
inline std::int64_t check_chunk_batch(const char* who, std::int64_t rows, std::int64_t samples, std::int64_t k,
                                      double temperature) {
  const std::int64_t n = batch_temperature_n(temperature);
  MUNINN_CHECK(rows >= 0 && samples >= 1 && samples <= std::numeric_limits<std::int32_t>::max() && k >= 1, who,
               ": bad shape rows = ", rows, ", samples = ", samples, ", k = ", k,
               " (need samples in [1, 2^31) and k >= 1)");
  // Σ C(count_c, m) <= C(samples, m) <= C(samples, min(n, samples / 2)) for every m <= n: one check covers all rows.
  const double bound = chunk_binomial(samples, std::min<std::int64_t>(n, samples / 2));
  MUNINN_CHECK(std::isfinite(2.0 * bound), who, ": the weights C(count, m) overflow double for samples = ", samples,
               " at n = ", n, " (T = ", temperature, "); use fewer samples or a higher temperature");
  return n;
}

}  // namespace detail

/// \brief The distinct chunks of one row in ascending key order, weighed at the level the batch
/// approximation would use; returns that level m = min(n, largest count).
///
/// For inspection and tests: choose_chunk picks candidate c with probability weight_c / Σ weight.
/// \param chunks  the row's decoded samples [samples, k], row-major
/// \param samples N, the number of samples
/// \param k       tokens per chunk
/// \param n       round(1/T), see batch_temperature_n
/// \param out     receives the candidates (cleared first)
inline std::int64_t chunk_candidates(const std::int32_t* chunks, std::int64_t samples, std::int64_t k, std::int64_t n,
                                     std::vector<chunk_candidate>& out) {
  MUNINN_CHECK(samples >= 1 && k >= 1 && n >= 1, "chunk_candidates: bad arguments samples = ", samples, ", k = ", k,
               ", n = ", n);
  detail::chunk_row_scratch s;
  const std::int64_t m = chunk_level(n, detail::chunk_runs(chunks, samples, k, s));
  out.clear();
  for (std::size_t r = 0; r < s.counts.size(); ++r)
    out.push_back({s.firsts[r], s.counts[r], s.counts[r] >= m ? chunk_binomial(s.counts[r], m) : 0.0});
  return m;
}

/// \brief The batch approximation (Algorithm 2) for one row, with the choice uniform given.
///
/// At T == 1 exactly the result is sample 0 and v is not used (the reference draws one head
/// sample). Otherwise n = round(1/T): identical chunks are counted, m = min(n, largest count)
/// (the first m = n, n−1, …, 1 with a chunk occurring at least m times), the distinct chunks with
/// count >= m are the candidates in ascending lexicographic order of their int32 ids, weighed
/// C(count, m) in double, and the pick is the first candidate whose running weight sum exceeds
/// v · W (chunk_pick).
/// \param chunks      decoded samples [samples, k], row-major
/// \param samples     N >= 1
/// \param k           tokens per chunk, >= 1
/// \param temperature T = 1/n for an integer n >= 1
/// \param v           the choice uniform in [0, 1), normally chunk_choice_uniform(seed, position)
/// \param out         receives the chosen k ids when not null
/// \throws muninn::error for a temperature that is not 1/n, a bad shape, v outside [0, 1) or
///         weights that overflow double
inline chunk_choice choose_chunk(const std::int32_t* chunks, std::int64_t samples, std::int64_t k, double temperature,
                                 double v, std::int32_t* out = nullptr) {
  const std::int64_t n = detail::check_chunk_batch("choose_chunk", 1, samples, k, temperature);
  MUNINN_CHECK(v >= 0.0 && v < 1.0, "choose_chunk: the choice uniform must lie in [0, 1), got ", v);
  detail::chunk_row_scratch s;
  return detail::choose_chunk_row(chunks, samples, k, temperature == 1.0, n, v, out, s);
}

/// \brief The batch approximation for `rows` rows at once on the host; row r uses the choice
/// uniform chunk_choice_uniform(seed, positions[r]).
/// \param be          the host backend (rows are spread over its threads)
/// \param chunks      decoded samples [rows, samples, k], row-major
/// \param rows        B
/// \param samples     N >= 1 per row
/// \param k           tokens per chunk
/// \param temperature T = 1/n for an integer n >= 1
/// \param seed        the run seed
/// \param positions   chunk position p of each row [rows] (names its kind-2 stream)
/// \param out         the chosen ids [rows, k]
/// \param choices     what was picked per row [rows], or null
/// \throws muninn::error as choose_chunk
inline void choose_chunks(const host_backend& be, const std::int32_t* chunks, std::int64_t rows, std::int64_t samples,
                          std::int64_t k, double temperature, std::uint64_t seed, const std::int64_t* positions,
                          std::int32_t* out, chunk_choice* choices = nullptr) {
  const std::int64_t n = detail::check_chunk_batch("choose_chunks", rows, samples, k, temperature);
  const bool one = temperature == 1.0;
  be.parallel_for(rows, 8, [&](std::int64_t begin, std::int64_t end) {
    detail::chunk_row_scratch s;
    for (std::int64_t r = begin; r < end; ++r) {
      const double v = one ? 0.0 : chunk_choice_uniform(seed, positions[r]);
      const chunk_choice c = detail::choose_chunk_row(chunks + r * samples * k, samples, k, one, n, v, out + r * k, s);
      if (choices) choices[r] = c;
    }
  });
}

}  // namespace muninn
