#pragma once
/// \file
/// \brief The exact likelihood-free temperature sampler of K-token chunks (CALM, Shao et al. 2025), on
/// the host: the exact rejection sampler (the paper's Algorithm 1, which the reference code does
/// not implement), beside the batch approximation (Algorithm 2, ops/chunk_choice.hpp, included
/// here).
///
/// A CALM step cannot evaluate P(x) of a chunk x; it can only draw chunks (one head sample,
/// decoded and argmax-ed to K token ids). Both samplers reach P(x)^{1/T} / Z from draws alone.
/// Their random numbers come from counter streams named by `stream_seed(seed, kind, position)`
/// (core/random.hpp), `position` being the chunk position whose hidden state feeds the head:
/// - kind 1, the head noise, belongs to the caller; draw j of a step is head sample j;
/// - kind 2 (chunk_choice_stream_kind): the batch approximation's choice uniform, index 0;
/// - kind 3 (chunk_bernoulli_stream_kind): the exact sampler's Bernoulli uniforms, index i for
///   the i-th (0-based) Bernoulli event of the step; an event of probability q happens when the
///   uniform is < q.
/// docs/calm_sampling.md states every rule precisely enough for a reference to reproduce the
/// choices.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/core/random.hpp"
#include "muninn/ops/chunk_choice.hpp"

namespace muninn {

/// \brief Stream kind of the exact sampler's Bernoulli uniforms.
inline constexpr std::uint64_t chunk_bernoulli_stream_kind = 3;

/// \brief The exact sampler's i-th (0-based) Bernoulli uniform at chunk position `position`:
/// `uniform01_at(stream_seed(seed, 3, position), i)`.
inline double chunk_bernoulli_uniform(std::uint64_t seed, std::int64_t position, std::int64_t i) {
  return uniform01_at(stream_seed(seed, chunk_bernoulli_stream_kind, std::uint64_t(position)), std::uint64_t(i));
}

/// \brief 1/T split into its integer part n and fractional part alpha (exact sampler).
struct inverse_temperature {
  std::int64_t n = 1;  ///< floor(1/T), or round(1/T) when 1/T is an integer within relative 1e-9
  double alpha = 0.0;  ///< 1/T − n computed in double; exactly 0 when 1/T is such an integer
};

/// \brief Splits 1/T for the exact sampler: any T in (0, 1].
///
/// When 1/T lies within relative 1e-9 of an integer r (as 1/T of T = 1/49 does: it is
/// 49.00000000000001 in double), n = r and alpha = 0, the batch approximation's tolerance;
/// otherwise n = floor(1/T) and alpha = 1/T − n. Snapping changes the exponent 1/T by at most
/// 1e-9 relative and saves the fractional phase, whose cost grows as alpha → 0.
/// \throws muninn::error unless 0 < T <= 1
inline inverse_temperature split_temperature(double temperature) {
  detail::check_temperature_range("chunk exact sampling", temperature);
  const double inv = 1.0 / temperature;
  const double r = std::round(inv);
  inverse_temperature s;
  if (detail::close_rel_1e9(inv, r)) {
    s.n = std::int64_t(r);
  } else {
    s.n = std::int64_t(std::floor(inv));
    s.alpha = inv - double(s.n);
  }
  return s;
}

/// \brief Limits of the exact sampler.
struct exact_chunk_options {
  std::int64_t max_draws = std::int64_t(1) << 20;  ///< chunk draws after which sample_chunk_exact gives up
  std::int64_t batch = 16;  ///< draws asked of the source per call; changes no result, only the calls
};

/// \brief What one run of the exact sampler used.
struct exact_chunk_stats {
  std::int64_t sample = 0;     ///< draw index of the returned chunk (the first draw of the accepted round)
  std::int64_t draws = 0;      ///< chunk draws consumed: indices 0 .. draws − 1
  std::int64_t produced = 0;   ///< chunk draws the source made (>= draws; the rest of the last batch is unused)
  std::int64_t bernoulli = 0;  ///< Bernoulli uniforms consumed: kind-3 indices 0 .. bernoulli − 1
  std::int64_t rounds = 0;     ///< rounds of n draws, the accepted one included
};

namespace detail {

/// \brief Hands out the source's draws one by one, in index order, fetching `batch` at a time.
template <class Draw>
class chunk_draw_stream {
 public:
  chunk_draw_stream(Draw& draw, std::int64_t k, const exact_chunk_options& o, double temperature)
      : draw_(draw), k_(k), opt_(o), temperature_(temperature), buf_(std::size_t(o.batch * k)) {}

  /// \brief Draw number `next()`; throws when it would be number max_draws.
  const std::int32_t* take() {
    if (next_ == produced_) {
      MUNINN_CHECK(next_ < opt_.max_draws, "sample_chunk_exact: no chunk accepted at temperature T = ", temperature_,
                   " within the bound max_draws = ", opt_.max_draws, " (", next_,
                   " chunk draws used, none accepted); raise exact_chunk_options::max_draws or the temperature");
      const std::int64_t count = std::min(opt_.batch, opt_.max_draws - produced_);
      draw_(produced_, count, buf_.data());
      base_ = produced_;
      produced_ += count;
    }
    return buf_.data() + (next_++ - base_) * k_;
  }
  std::int64_t next() const { return next_; }
  std::int64_t produced() const { return produced_; }

 private:
  Draw& draw_;
  std::int64_t k_;
  exact_chunk_options opt_;
  double temperature_;
  std::vector<std::int32_t> buf_;
  std::int64_t base_ = 0, next_ = 0, produced_ = 0;
};

}  // namespace detail

/// \brief The exact sampler (Algorithm 1): one chunk drawn from P(x)^{1/T} / Z using only draws
/// from P, for any T in (0, 1].
///
/// With n and alpha from split_temperature(T), each round
/// 1. takes the next draw as x* and up to n − 1 more, starting a new round at the first draw that
///    differs from x* (the rest of the n are not drawn);
/// 2. if alpha = 0, x* is accepted; otherwise for i = 1, 2, …: take the next draw x; if x == x*
///    accept x*; else take the next Bernoulli uniform u and start a new round when u < alpha / i
///    (alpha / i computed in double), or go on with i + 1.
/// Step 2 accepts with probability P(x*)^alpha, by the series
/// p^alpha = 1 − Σ_{i>=1} (alpha / i) Π_{j<i} (1 − alpha / j) (1 − p)^i, so a round ends with x*
/// with probability P(x*)^{n+alpha}. Given x*, step 1 costs 1 + Σ_{t=0..n−2} P(x*)^t draws on
/// average, and step 2, reached with probability P(x*)^{n−1}, P(x*)^{alpha−1} more, so the
/// expected draws per sample are (1 + Σ_x Σ_{t=1..n−1} P(x)^t + [alpha > 0] Σ_x P(x)^{1/T−1}) /
/// Σ_x P(x)^{1/T}. At T = 1 the result is draw 0.
///
/// Draw j is the j-th chunk of the step, from head sample j (the caller's kind-1 stream); the
/// source is asked for consecutive ranges and the sampler consumes indices strictly in order, so
/// the result depends only on the chunks at each index and the Bernoulli uniforms, never on
/// `options.batch`. Draws of the last batch past the accepted one are simply unused.
/// \tparam Draw  callable `void(std::int64_t first, std::int64_t count, std::int32_t* ids)` that
///               writes the k ids of draws first, …, first + count − 1 to ids [count, k]
/// \param draw        the chunk source
/// \param k           tokens per chunk
/// \param temperature T in (0, 1]
/// \param seed        the run seed (names the kind-3 stream with `position`)
/// \param position    the chunk position p
/// \param out         receives the k ids of the accepted chunk
/// \param options     draw bound and batch size
/// \throws muninn::error for T outside (0, 1], bad options, or when max_draws draws are consumed
///         without acceptance (the message names T, the bound and the draws used)
template <class Draw>
exact_chunk_stats sample_chunk_exact(Draw&& draw, std::int64_t k, double temperature, std::uint64_t seed,
                                     std::int64_t position, std::int32_t* out, const exact_chunk_options& options = {}) {
  const inverse_temperature it = split_temperature(temperature);
  MUNINN_CHECK(k >= 1 && options.batch >= 1 && options.max_draws >= 1, "sample_chunk_exact: bad arguments k = ", k,
               ", batch = ", options.batch, ", max_draws = ", options.max_draws);
  detail::chunk_draw_stream<std::remove_reference_t<Draw>> stream(draw, k, options, temperature);
  const std::uint64_t bernoulli_seed = stream_seed(seed, chunk_bernoulli_stream_kind, std::uint64_t(position));
  std::vector<std::int32_t> star(static_cast<std::size_t>(k));
  exact_chunk_stats st;
  for (;;) {
    ++st.rounds;
    st.sample = stream.next();
    std::memcpy(star.data(), stream.take(), std::size_t(k) * sizeof(std::int32_t));
    bool equal = true;  // the round ends at the first draw that differs from x*: later ones are not drawn
    for (std::int64_t t = 1; t < it.n && equal; ++t) equal = chunk_key_compare(stream.take(), star.data(), k) == 0;
    if (!equal) continue;
    bool accepted = it.alpha == 0.0;
    for (std::int64_t i = 1; !accepted; ++i) {
      if (chunk_key_compare(stream.take(), star.data(), k) == 0) {
        accepted = true;
      } else if (uniform01_at(bernoulli_seed, std::uint64_t(st.bernoulli++)) < it.alpha / double(i)) {
        break;
      }
    }
    if (!accepted) continue;
    std::memcpy(out, star.data(), std::size_t(k) * sizeof(std::int32_t));
    st.draws = stream.next();
    st.produced = stream.produced();
    return st;
  }
}

}  // namespace muninn
