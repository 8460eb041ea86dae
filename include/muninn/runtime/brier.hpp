#pragma once
/// \file
/// \brief BrierLM, the likelihood-free language-model metric of CALM (Shao et al. 2025): Brier-n
/// accumulators, the combination of Brier-1..4, the low-variance estimator for softmax models
/// (the CALM authors' autoregressive baseline), the two-sample counting of the CALM chunk
/// estimator, and the evaluation protocol (teacher-forced blocks, per-block means averaged).
///
/// docs/brierlm.md states the rules; in short:
/// - Brier(P, y) = 2 P(y) − Σ_x P(x)², estimated without likelihoods by
///   1{x1 = y} + 1{x2 = y} − 1{x1 = x2} from two samples x1, x2 ~ P; Brier-n takes an n-gram as
///   one outcome.
/// - BrierLM = 100 · max(b1 · b2 · b3 · b4, 0)^(1/4).
/// - Softmax models: at every start position t of a teacher-forced block,
///   Brier-n(t) = 2 Π_{k<n} P(y_{t+1+k} | gold prefix) − s_{n−1}(t) · Σ_x q_{n−1}(x)², where
///   q_0 = P(· | y_0..y_t), two tokens a_j, b_j are drawn from q_j, q_{j+1} = P(· | y_0..y_t, a_0..a_j)
///   (the rollout follows the first draw), s_0 = 1 and s_{j+1} = s_j · 1{a_j = b_j}.
/// - Draws: draw s ∈ {0, 1} of rollout step j at start position t is the inverse CDF, over the
///   fp32 probabilities summed in double in vocabulary order, of
///   `uniform01_at(stream_seed(seed, 5, t), 2 j + s)`.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/core/random.hpp"
#include "muninn/model/model.hpp"
#include "muninn/policies/head.hpp"

namespace muninn {

/// \brief The largest n-gram BrierLM combines (Brier-1 … Brier-4).
inline constexpr int brier_max_n = 4;
/// \brief The random-stream kind (`stream_seed(seed, kind, t)`) of the softmax estimator's draws.
inline constexpr std::uint64_t brier_stream_kind = 5;

/// \brief Brier-1 … Brier-4 (index n − 1).
using brier_values = std::array<double, brier_max_n>;

/// \brief Sums and counts of Brier-n estimates, n = 1 … 4.
class brier_accumulator {
 public:
  /// \brief Adds one Brier-n estimate (n in 1 … 4).
  void add(int n, double value) {
    MUNINN_CHECK(n >= 1 && n <= brier_max_n, "brier: n must be in [1, ", brier_max_n, "], got ", n);
    sum_[std::size_t(n - 1)] += value;
    ++count_[std::size_t(n - 1)];
  }
  /// \brief Adds Brier-1 … Brier-`max_n` of one estimate.
  void add(const brier_values& v, int max_n = brier_max_n) {
    for (int n = 1; n <= max_n; ++n) add(n, v[std::size_t(n - 1)]);
  }
  /// \brief Adds the sums and counts of another accumulator.
  void merge(const brier_accumulator& o) {
    for (std::size_t i = 0; i < sum_.size(); ++i) {
      sum_[i] += o.sum_[i];
      count_[i] += o.count_[i];
    }
  }
  /// \brief Sum of the Brier-n estimates.
  double sum(int n) const { return sum_[index(n)]; }
  /// \brief Number of Brier-n estimates.
  std::int64_t count(int n) const { return count_[index(n)]; }
  /// \brief Mean of the Brier-n estimates; NaN when there is none.
  double mean(int n) const {
    const std::size_t i = index(n);
    return count_[i] ? sum_[i] / double(count_[i]) : std::numeric_limits<double>::quiet_NaN();
  }
  /// \brief mean(1) … mean(4).
  brier_values means() const {
    brier_values m{};
    for (int n = 1; n <= brier_max_n; ++n) m[std::size_t(n - 1)] = mean(n);
    return m;
  }

 private:
  static std::size_t index(int n) {
    MUNINN_CHECK(n >= 1 && n <= brier_max_n, "brier: n must be in [1, ", brier_max_n, "], got ", n);
    return std::size_t(n - 1);
  }
  std::array<double, brier_max_n> sum_{};
  std::array<std::int64_t, brier_max_n> count_{};
};

/// \brief BrierLM = 100 · max(b1 · b2 · b3 · b4, 0)^(1/4): single Brier-n estimates can be
/// negative, and a negative product counts as 0.
inline double brierlm_of(const brier_values& b) {
  const double prod = b[0] * b[1] * b[2] * b[3];
  return 100.0 * std::pow(std::max(prod, 0.0), 0.25);
}

/// \brief The protocol's combination over blocks: each block's Brier-n means are averaged over
/// blocks (every block counts the same), and BrierLM combines those averages.
class brier_block_average {
 public:
  /// \brief Adds one block: its Brier-n means (every n must have an estimate).
  void add_block(const brier_accumulator& block) {
    for (int n = 1; n <= brier_max_n; ++n)
      MUNINN_CHECK(block.count(n) > 0, "brier: a block without Brier-", n, " estimates");
    means_.push_back(block.means());
  }
  /// \brief Blocks added.
  std::int64_t blocks() const { return std::int64_t(means_.size()); }
  /// \brief Brier-1 … Brier-4 means of every block, in order.
  const std::vector<brier_values>& block_means() const { return means_; }
  /// \brief The average over blocks of the per-block Brier-n means (NaN without blocks).
  brier_values brier() const {
    brier_values b{};
    for (std::size_t i = 0; i < b.size(); ++i) {
      double s = 0;
      for (const auto& m : means_) s += m[i];
      b[i] = means_.empty() ? std::numeric_limits<double>::quiet_NaN() : s / double(means_.size());
    }
    return b;
  }
  /// \brief brierlm_of(brier()).
  double brierlm() const { return brierlm_of(brier()); }

 private:
  std::vector<brier_values> means_;
};

// ---------------------------------------------------------------------------------------------
// Two-sample counting (the CALM estimator's rule)
// ---------------------------------------------------------------------------------------------

/// \brief One n-gram window estimated from samples: for n = 1 … min(len, 4) adds
/// Π_{k<n} 1{acc1_k = y_k} + Π_{k<n} 1{acc2_k = y_k} − Π_{k<n} 1{coll1_k = coll2_k}.
///
/// `acc1`, `acc2`: two sampled continuations for the accuracy terms; `coll1`, `coll2`: the two
/// continuations whose agreement is the collision term (the same arrays when one pair of samples
/// serves both, as in the CALM chunk estimator with K ≥ 4; a rollout along the first sample's
/// path when the chunk is shorter than the window). The products stop at the first mismatch, so
/// entries after it are never read (a rollout may stop there).
inline void sampled_brier_window(brier_accumulator& acc, const std::int32_t* target, const std::int32_t* acc1,
                                 const std::int32_t* acc2, const std::int32_t* coll1, const std::int32_t* coll2,
                                 std::int64_t len) {
  const std::int64_t n_max = std::min<std::int64_t>(len, brier_max_n);
  bool hit1 = true, hit2 = true, same = true;
  for (std::int64_t k = 0; k < n_max; ++k) {
    hit1 = hit1 && acc1[k] == target[k];
    hit2 = hit2 && acc2[k] == target[k];
    same = same && coll1[k] == coll2[k];
    acc.add(int(k + 1), double(hit1) + double(hit2) - double(same));
  }
}

/// \brief The CALM chunk estimator's counting (patch size K ≥ 4): `targets`, `pred1`, `pred2`
/// are [P, K] row-major token ids (the gold chunk at each of P positions and the two decoded
/// samples for it); each position adds Brier-n for n = 1 … min(4, K), the n-grams starting at the
/// chunk's first token: acc_1 + acc_2 − var with cumulative products along the chunk.
///
/// With K < 4 a chunk holds fewer tokens than Brier-4 needs: windows of ⌈4 / K⌉ chunks go to
/// sampled_brier_window (accuracy from the teacher-forced samples of consecutive chunks,
/// collisions from a rollout of the model along the first sample's path).
inline void chunk_brier(brier_accumulator& acc, const std::int32_t* targets, const std::int32_t* pred1,
                        const std::int32_t* pred2, std::int64_t P, std::int64_t K) {
  MUNINN_CHECK(P >= 0 && K >= 1, "chunk_brier: need P >= 0 and K >= 1, got P ", P, ", K ", K);
  for (std::int64_t p = 0; p < P; ++p)
    sampled_brier_window(acc, targets + p * K, pred1 + p * K, pred2 + p * K, pred1 + p * K, pred2 + p * K, K);
}

// ---------------------------------------------------------------------------------------------
// The softmax estimator (the CALM authors' autoregressive baseline)
// ---------------------------------------------------------------------------------------------

/// \brief The random-draw settings of the softmax estimator.
struct brier_draws {
  std::uint64_t seed = 0;            ///< run seed
  std::int64_t first_position = 0;   ///< stream position of the block's token 0 (blocks: b · block size)
};

/// \brief Uniform of draw `sample` (0 or 1) at rollout step `step` of start position `position`:
/// `uniform01_at(stream_seed(seed, 5, position), 2 · step + sample)`.
inline double brier_uniform(std::uint64_t seed, std::int64_t position, int step, int sample) {
  return uniform01_at(stream_seed(seed, brier_stream_kind, std::uint64_t(position)),
                      std::uint64_t(2 * step + sample));
}

/// \brief The probabilities the estimator uses: p_v = float32(exp(l_v − m) / Z) with
/// m = max_v l_v and Z = Σ_v exp(l_v − m), all in double before the one rounding to fp32.
inline void brier_softmax(const float* logits, std::int64_t V, float* probs) {
  MUNINN_CHECK(V > 0, "brier: empty logits");
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t v = 0; v < V; ++v) {
    MUNINN_CHECK(!std::isnan(logits[v]), "brier: logit ", v, " is NaN");
    m = std::max(m, double(logits[v]));
  }
  MUNINN_CHECK(std::isfinite(m), "brier: the largest logit is ", m, " (need a finite one)");
  double z = 0;
  for (std::int64_t v = 0; v < V; ++v) z += std::exp(double(logits[v]) - m);
  for (std::int64_t v = 0; v < V; ++v) probs[v] = float(std::exp(double(logits[v]) - m) / z);
}

/// \brief Inverse CDF: the first token v with u · S < Σ_{w ≤ v} p_w, sums in double in vocabulary
/// order, S the sum of all p (so fp32 rounding of the probabilities cannot push u past the end).
/// Tokens with p = 0 are never drawn.
inline std::int32_t brier_inverse_cdf(const float* probs, std::int64_t V, double u) {
  double total = 0;
  for (std::int64_t v = 0; v < V; ++v) total += double(probs[v]);
  const double target = u * total;
  double c = 0;
  std::int64_t last = -1;
  for (std::int64_t v = 0; v < V; ++v) {
    if (probs[v] <= 0.0f) continue;
    c += double(probs[v]);
    last = v;
    if (target < c) return std::int32_t(v);
  }
  MUNINN_CHECK(last >= 0, "brier: every probability is 0");
  return std::int32_t(last);  // u · S rounded up to S
}

/// \brief What the estimator keeps of one next-token distribution q: P(gold), Σ_x q(x)² and the
/// two draws (all in double over the fp32 probabilities of brier_softmax).
struct brier_step {
  double gold_prob = 0;                     ///< q(gold); 0 when no gold token was given
  double sum_sq = 0;                        ///< Σ_x q(x)²
  std::array<std::int32_t, 2> draws{{0, 0}};  ///< draws 0 and 1 (when asked for)
};

/// \brief Summarises the distribution of `logits` [V] for rollout step `step` (0: the
/// teacher-forced row of `position`) of start position `position`: P(`gold`) (gold < 0: none),
/// Σ q², and the two draws when `with_draws`.
inline brier_step brier_step_of(const float* logits, std::int64_t V, std::int32_t gold, std::uint64_t seed,
                                std::int64_t position, int step, bool with_draws = true) {
  MUNINN_CHECK(gold < V, "brier: gold token ", gold, " is out of range for vocab ", V);
  std::vector<float> p(static_cast<std::size_t>(V));
  brier_softmax(logits, V, p.data());
  brier_step s;
  for (std::int64_t v = 0; v < V; ++v) s.sum_sq += double(p[std::size_t(v)]) * double(p[std::size_t(v)]);
  if (gold >= 0) s.gold_prob = double(p[std::size_t(gold)]);
  if (with_draws)
    for (int k = 0; k < 2; ++k) s.draws[std::size_t(k)] = brier_inverse_cdf(p.data(), V, brier_uniform(seed, position, step, k));
  return s;
}

/// \brief Start positions of a teacher-forced block of S tokens: t = 0 … S − 5, where all four
/// next tokens y_{t+1} … y_{t+4} lie in the block (the same set for every n).
inline std::int64_t brier_starts(std::int64_t block_tokens) { return std::max<std::int64_t>(block_tokens - 4, 0); }

/// \brief The softmax estimator on one block from its teacher-forced rows.
///
/// \param rows `rows[t]`, t = 0 … S − 2, is `brier_step_of(logits of position t, V, y_{t+1}, seed,
///        first_position + t, 0)`: the teacher-forced distribution after y_0 … y_t.
/// \param next_logits called as `next_logits(t, path)` with the block-relative start t and the
///        path a_0 … a_{j−1} (j = 1, 2, 3) of first draws; returns the logits [V] of the next token
///        after y_0 … y_t, a_0 … a_{j−1}. Called only while the two draws agreed so far (the
///        collision term is 0 after they differ); starts are visited from the last to the first,
///        so an adapter can keep one KV cache and truncate it (model_brier_block does).
/// \param d seed and stream position of y_0.
/// \param per_start when set, receives Brier-1 … Brier-4 of each start t.
/// \return one estimate per start for every n (S − 4 each).
template <class NextLogits>
brier_accumulator softmax_brier_from_rows(const std::vector<brier_step>& rows, NextLogits&& next_logits,
                                          const brier_draws& d, std::vector<brier_values>* per_start = nullptr) {
  const std::int64_t starts = brier_starts(std::int64_t(rows.size()) + 1);
  MUNINN_CHECK(starts > 0, "brier: a block needs at least 5 tokens (4 teacher-forced rows), got ", rows.size(),
               " rows");
  if (per_start) per_start->assign(std::size_t(starts), brier_values{});
  std::vector<brier_values> values(static_cast<std::size_t>(starts));
  for (std::int64_t t = starts - 1; t >= 0; --t) {
    // Accuracy terms: 2 Π_{k<n} P(y_{t+1+k} | gold prefix).
    brier_values acc{};
    double prod = 1;
    for (int k = 0; k < brier_max_n; ++k) {
      prod *= rows[std::size_t(t + k)].gold_prob;
      acc[std::size_t(k)] = 2.0 * prod;
    }
    // Collision terms: s_j · Σ q_j² along the first draw's path.
    brier_values coll{};
    brier_step q = rows[std::size_t(t)];
    std::vector<std::int32_t> path;
    for (int j = 0; j < brier_max_n; ++j) {
      coll[std::size_t(j)] = q.sum_sq;
      if (j + 1 == brier_max_n || q.draws[0] != q.draws[1]) break;  // s_{j+1} = 0: the rest stays 0
      path.push_back(q.draws[0]);
      const std::vector<float> logits = next_logits(t, path);
      const bool draws = j + 2 < brier_max_n;  // the last step needs Σ q² only
      q = brier_step_of(logits.data(), std::int64_t(logits.size()), -1, d.seed, d.first_position + t, j + 1, draws);
    }
    for (std::size_t n = 0; n < acc.size(); ++n) values[std::size_t(t)][n] = acc[n] - coll[n];
  }
  brier_accumulator out;
  for (const auto& v : values) out.add(v);
  if (per_start) *per_start = std::move(values);
  return out;
}

/// \brief The softmax estimator on one block whose teacher-forced logits are in memory:
/// `logits` [at least S − 1, V], row t after y_0 … y_t. Other arguments as softmax_brier_from_rows.
template <class NextLogits>
brier_accumulator softmax_brier_block(const std::vector<std::int32_t>& block, const float* logits, std::int64_t V,
                                      NextLogits&& next_logits, const brier_draws& d,
                                      std::vector<brier_values>* per_start = nullptr) {
  MUNINN_CHECK(block.size() >= 5, "brier: a block needs at least 5 tokens, got ", block.size());
  std::vector<brier_step> rows(block.size() - 1);
  for (std::size_t t = 0; t + 1 < block.size(); ++t)
    rows[t] = brier_step_of(logits + std::int64_t(t) * V, V, block[t + 1], d.seed, d.first_position + std::int64_t(t), 0);
  return softmax_brier_from_rows(rows, std::forward<NextLogits>(next_logits), d, per_start);
}

/// \brief The softmax estimator on one block of a model: a teacher-forced forward of y_0 … y_{S−2}
/// (fed in calls of `chunk` tokens, each row reduced to a brier_step at once, so that at most
/// chunk × V logits are held), then the rollouts on the same KV cache, truncated back to each
/// start's gold prefix. Positions, random initial states (Huginn) and routing (Mixture-of-
/// Recursions: use routing_mode::causal, the rule under which a teacher-forced pass equals
/// decoding) are those of `opt`.
template <class Model>
brier_accumulator model_brier_block(const Model& m, const std::vector<std::int32_t>& block, const run_options& opt,
                                    const brier_draws& d, std::vector<brier_values>* per_start = nullptr,
                                    std::int64_t chunk = 256) {
  MUNINN_CHECK(block.size() >= 5, "brier: a block needs at least 5 tokens, got ", block.size());
  MUNINN_CHECK(chunk > 0, "brier: chunk must be positive, got ", chunk);
  const std::int64_t fed = std::int64_t(block.size()) - 1, V = m.config().vocab_size;
  context_limits lim;
  lim.max_tokens = fed;
  lim.max_steps = std::max(m.resolve_steps(opt), opt.halt.max_steps);
  lim.max_chunk = std::min(chunk, fed);
  auto ctx = m.make_context(lim);
  std::vector<brier_step> rows(static_cast<std::size_t>(fed));
  for (std::int64_t c0 = 0; c0 < fed; c0 += lim.max_chunk) {
    const std::int64_t n = std::min(lim.max_chunk, fed - c0);
    const std::vector<std::int32_t> ids(block.begin() + c0, block.begin() + c0 + n);
    const std::vector<float> logits = m.forward(ctx, ids, opt, logits_for::all);
    host_backend{}.parallel_for(n, 1, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t t = c0 + r;
        rows[std::size_t(t)] =
            brier_step_of(logits.data() + r * V, V, block[std::size_t(t + 1)], d.seed, d.first_position + t, 0);
      }
    });
  }
  // Rollouts: the cache holds y_0 … y_{S−2}; keep the longest prefix shared with the wanted
  // sequence y_0 … y_t, a_0 … a_{j−1} and feed the rest.
  std::vector<std::int32_t> want;
  const auto next_logits = [&](std::int64_t t, const std::vector<std::int32_t>& path) {
    want.assign(block.begin(), block.begin() + t + 1);
    want.insert(want.end(), path.begin(), path.end());
    const std::vector<std::int32_t>& have = ctx.tokens();
    std::size_t keep = 0;
    while (keep + 1 < want.size() && keep < have.size() && have[keep] == want[keep]) ++keep;
    ctx.truncate(std::int64_t(keep));
    const std::vector<std::int32_t> feed(want.begin() + std::ptrdiff_t(keep), want.end());
    return m.forward(ctx, feed, opt, logits_for::last);
  };
  return softmax_brier_from_rows(rows, next_logits, d, per_start);
}

// ---------------------------------------------------------------------------------------------
// The protocol
// ---------------------------------------------------------------------------------------------

/// \brief Settings of a BrierLM evaluation.
struct brierlm_options {
  std::int64_t block_size = 8192;  ///< tokens per teacher-forced block (the figure depends on it)
  std::int64_t max_blocks = 0;     ///< evaluate the first max_blocks blocks only (0: all)
  std::uint64_t seed = 0;          ///< seed of the estimator's draws
  /// \brief Called after each block with its index and Brier-1 … Brier-4 means (progress, --verbose).
  std::function<void(std::int64_t block, const brier_values& means)> on_block;
};

/// \brief What a BrierLM evaluation measured.
struct brierlm_result {
  brier_block_average blocks;       ///< per-block means and their average
  std::int64_t tokens = 0;          ///< tokens in the stream
  std::int64_t tokens_used = 0;     ///< tokens in the evaluated blocks
  std::int64_t tokens_dropped = 0;  ///< the remainder after the last whole block (and blocks past max_blocks)
  brier_values brier{};             ///< blocks.brier()
  double brierlm = 0;               ///< blocks.brierlm(): 100 · max(Π brier, 0)^(1/4)
};

/// \brief Number of whole blocks of `block_size` in `tokens` tokens, at most `max_blocks` (0: no cap).
inline std::int64_t brier_block_count(std::int64_t tokens, std::int64_t block_size, std::int64_t max_blocks = 0) {
  MUNINN_CHECK(block_size >= 5, "brierlm: block_size must be >= 5 (Brier-4 needs 4 tokens after a start), got ",
               block_size);
  const std::int64_t whole = tokens / block_size;
  return max_blocks > 0 ? std::min(whole, max_blocks) : whole;
}

/// \brief Evaluates BrierLM on a token stream: the stream (documents concatenated, nothing
/// inserted) is cut into blocks of `o.block_size` tokens, the remainder dropped;
/// `estimate(block, draws)` returns a block's Brier-n accumulator (`draws.first_position` =
/// b · block_size for block b); per-block means are averaged over blocks, then combined.
/// A family plugs in here with its own block estimator (model_brier_block for softmax models).
template <class BlockEstimator>
brierlm_result evaluate_brierlm(const std::vector<std::int32_t>& stream, const brierlm_options& o,
                                BlockEstimator&& estimate) {
  const std::int64_t S = o.block_size;
  const std::int64_t nb = brier_block_count(std::int64_t(stream.size()), S, o.max_blocks);
  MUNINN_CHECK(nb > 0, "brierlm: the data holds ", stream.size(), " tokens, fewer than one block of ", S,
               " (the remainder after the last whole block is dropped)");
  brierlm_result r;
  r.tokens = std::int64_t(stream.size());
  r.tokens_used = nb * S;
  r.tokens_dropped = r.tokens - r.tokens_used;
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::vector<std::int32_t> block(stream.begin() + b * S, stream.begin() + (b + 1) * S);
    const brier_accumulator acc = estimate(block, brier_draws{o.seed, b * S});
    r.blocks.add_block(acc);
    if (o.on_block) o.on_block(b, r.blocks.block_means().back());
  }
  r.brier = r.blocks.brier();
  r.brierlm = r.blocks.brierlm();
  return r;
}

namespace detail {
/// \brief Whether Model's head draws with a sampler of its own (an energy head): such a model
/// takes the sampled estimator of runtime/sampled_brier.hpp, every other the softmax one here.
/// (False for a type that is no model, so that overload resolution on other arguments stays quiet.)
template <class Model, class = void>
struct brier_by_head_sampler_of : std::false_type {};
template <class Model>
struct brier_by_head_sampler_of<Model, std::void_t<typename Model::head_policy>>
    : std::bool_constant<has_head_sampler<typename Model::head_policy, Model>> {};
template <class Model>
inline constexpr bool brier_by_head_sampler = brier_by_head_sampler_of<Model>::value;
}  // namespace detail

/// \brief evaluate_brierlm of a softmax model: each block by model_brier_block with `run`.
/// (A model whose head has a sampler of its own takes the overload of runtime/sampled_brier.hpp.)
template <class Model, std::enable_if_t<!detail::brier_by_head_sampler<Model>, int> = 0>
brierlm_result evaluate_brierlm(const Model& m, const std::vector<std::int32_t>& stream, const brierlm_options& o,
                                const run_options& run = {}) {
  MUNINN_CHECK(o.block_size <= m.config().block_size, "brierlm: block_size ", o.block_size,
               " exceeds the model's context of ", m.config().block_size, " positions");
  return evaluate_brierlm(stream, o, [&](const std::vector<std::int32_t>& block, const brier_draws& d) {
    return model_brier_block(m, block, run, d);
  });
}

}  // namespace muninn
