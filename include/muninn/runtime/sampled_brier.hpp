#pragma once
/// \file
/// \brief BrierLM for a model whose head draws its emissions with a sampler of its own (an
/// energy head: CALM, or any arch that puts `head::energy` in its head slot): the likelihood-free
/// estimate `1{x1 = y} + 1{x2 = y} − 1{x1 = x2}` of Brier-n from two head samples per position,
/// teacher-forced over one block, as the CALM authors' evaluation computes it (n-grams that start
/// at chunk boundaries; a rollout of the collision term when an emission holds fewer than 4
/// tokens).
///
/// What the estimator needs from the model: `forward` returning the head's input rows,
/// `tokens_per_emission()` (K), and a head sampler (`Head::make_sampler(model)`) with
/// `sample_chunks_rows(hidden, p0, seed, S)` → [n, S, K] ids, sample s of row i drawn from the
/// noise of `seed` at position p0 + i. Softmax models use runtime/brier.hpp's estimator; the
/// `evaluate_brierlm(model, …)` overloads of the two files together take any arch.

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/policies/head.hpp"
#include "muninn/runtime/brier.hpp"

namespace muninn {

/// \brief Stream kind whose sub-streams seed the head samples of sampled_brier_block.
inline constexpr std::uint64_t sampled_brier_stream_kind = 4;

namespace detail {

// The collision indicators of the K < 4 estimator at start position p: step 0 compares position
// p's own two samples; each later step feeds sample 1's emission and draws two fresh samples; the
// rollout stops at the first step whose emissions differ (the rest stays "different", as the
// reference fills it). Returns the two rolled-out token rows [window] in coll1 / coll2.
template <class Model, class Sampler>
void sampled_rollout(const Model& m, Sampler& smp, typename Model::context_type& ctx, const run_options& run,
                     const std::vector<std::int32_t>& pred, std::int64_t p, std::int64_t s, std::uint64_t seed,
                     std::vector<std::int32_t>& coll1, std::vector<std::int32_t>& coll2) {
  const std::int64_t K = m.tokens_per_emission();
  coll1.assign(std::size_t(s * K), 0);
  coll2.assign(std::size_t(s * K), 1);  // unreached steps never agree
  std::vector<std::int32_t> a(pred.begin() + (p * 2) * K, pred.begin() + (p * 2 + 1) * K);
  std::vector<std::int32_t> b(pred.begin() + (p * 2 + 1) * K, pred.begin() + (p * 2 + 2) * K);
  for (std::int64_t j = 0; j < s; ++j) {
    if (j > 0) {
      const std::vector<float> hj = m.forward(ctx, a, run, logits_for::last);
      const auto two = smp.sample_chunks_rows(hj, p + j, seed, 2);
      a.assign(two.begin(), two.begin() + K);
      b.assign(two.begin() + K, two.end());
    }
    std::copy(a.begin(), a.end(), coll1.begin() + j * K);
    std::copy(b.begin(), b.end(), coll2.begin() + j * K);
    if (a != b) break;
  }
}

}  // namespace detail

/// \brief Brier-n estimates of one teacher-forced block for a model with a head sampler
/// (`block`: a whole number of K-token emissions, at least two; batch of one, as the reference's
/// evaluation; `run`: the run's options, e.g. recurrence steps of a recurrent-depth core).
///
/// Position p's head input predicts emission p + 1; its two samples are samples 0 and 1 of the
/// head noise with seed `stream_seed(d.seed, sampled_brier_stream_kind, d.first_position)` at
/// position p. K ≥ 4: chunk_brier over the predicted emissions (n-grams start at emission
/// boundaries). K < 4: windows of s = ⌈4/K⌉ consecutive predictions (starts 0 … P−s−1 of the P
/// predictions) for the accuracy terms; the collision term is rolled out from the cache of the
/// gold prefix along sample 1's path, two fresh samples per step (seed
/// `stream_seed(d.seed, sampled_brier_stream_kind, d.first_position + 1 + p)` at the position
/// fed), stopping once they differ.
template <class Model, class Sampler>
brier_accumulator sampled_brier_block(const Model& m, Sampler& smp, const std::vector<std::int32_t>& block,
                                      const brier_draws& d, const run_options& run = {}) {
  const std::int64_t K = m.tokens_per_emission(), L = std::int64_t(block.size()) / K;
  MUNINN_CHECK(L >= 2 && L * K == std::int64_t(block.size()), "brierlm: a block of ", block.size(),
               " tokens is not a whole number (>= 2) of ", K, "-token chunks");
  context_limits lim;
  lim.max_tokens = L + 4;
  lim.max_chunk = L;
  lim.max_steps = std::max(m.resolve_steps(run), run.halt.max_steps);
  auto ctx = m.make_context(lim);
  const std::vector<float> h = m.forward(ctx, block, run, logits_for::all);
  const std::int64_t P = L - 1, dim = std::int64_t(h.size()) / L;  // predictions: positions 0 … L−2
  const std::vector<float> h_pred(h.begin(), h.begin() + P * dim);
  const std::uint64_t base = stream_seed(d.seed, sampled_brier_stream_kind, std::uint64_t(d.first_position));
  const std::vector<std::int32_t> pred = smp.sample_chunks_rows(h_pred, 0, base, 2);  // [P, 2, K]
  brier_accumulator acc;
  if (K >= brier_max_n) {
    for (std::int64_t p = 0; p < P; ++p) {
      const std::int32_t* x1 = pred.data() + (p * 2) * K;
      sampled_brier_window(acc, block.data() + (p + 1) * K, x1, x1 + K, x1, x1 + K, K);
    }
    return acc;
  }
  const std::int64_t s = (brier_max_n + K - 1) / K;
  MUNINN_CHECK(P > s, "brierlm: a block of ", L, " chunks is too short for ", s, "-chunk windows at patch_size ", K);
  ctx.truncate(1);  // from here on the cache holds the gold chunks 0 … p
  std::vector<std::int32_t> x1(std::size_t(s * K)), x2(std::size_t(s * K)), coll1, coll2;
  for (std::int64_t p = 0; p + s < P; ++p) {
    for (std::int64_t c = 0; c < s; ++c)
      for (std::int64_t k = 0; k < K; ++k) {
        x1[std::size_t(c * K + k)] = pred[std::size_t(((p + c) * 2) * K + k)];
        x2[std::size_t(c * K + k)] = pred[std::size_t(((p + c) * 2 + 1) * K + k)];
      }
    const std::uint64_t roll = stream_seed(d.seed, sampled_brier_stream_kind, std::uint64_t(d.first_position + 1 + p));
    detail::sampled_rollout(m, smp, ctx, run, pred, p, s, roll, coll1, coll2);
    sampled_brier_window(acc, block.data() + (p + 1) * K, x1.data(), x2.data(), coll1.data(), coll2.data(), s * K);
    ctx.truncate(p + 1);
    m.forward(ctx, std::vector<std::int32_t>(block.begin() + (p + 1) * K, block.begin() + (p + 2) * K), run,
              logits_for::last);
  }
  return acc;
}

/// \brief BrierLM of a token stream for a model whose head has a sampler of its own: blocks of
/// `o.block_size` tokens (a multiple of K), each by sampled_brier_block, per-block means averaged
/// (runtime/brier.hpp's protocol). A softmax model takes brier.hpp's overload instead.
template <class Model, std::enable_if_t<detail::brier_by_head_sampler<Model>, int> = 0>
brierlm_result evaluate_brierlm(const Model& m, const std::vector<std::int32_t>& stream, const brierlm_options& o,
                                const run_options& run = {}) {
  const std::int64_t K = m.tokens_per_emission();
  MUNINN_CHECK(o.block_size % K == 0, "brierlm: block_size ", o.block_size, " is not a multiple of the ", K,
               " tokens the head emits at a time");
  MUNINN_CHECK(o.block_size / K <= m.config().block_size, "brierlm: block_size ", o.block_size,
               " exceeds the model's context of ", m.config().block_size, " positions of ", K, " tokens");
  auto smp = Model::head_policy::make_sampler(m);
  return evaluate_brierlm(stream, o, [&](const std::vector<std::int32_t>& block, const brier_draws& d) {
    return sampled_brier_block(m, smp, block, d, run);
  });
}

}  // namespace muninn
