#pragma once
/// \file
/// \brief BrierLM for CALM: the likelihood-free estimate `1{x1 = y} + 1{x2 = y} − 1{x1 = x2}` of
/// Brier-n from two head samples per position, teacher-forced over one block, as the reference's
/// evaluation computes it (chunk-aligned n-grams; a rollout of the collision term when K < 4).

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/calm/model.hpp"

namespace muninn {

/// \brief The n-gram lengths BrierLM combines (Brier-1 … Brier-4).
inline constexpr int brier_orders = 4;

namespace detail {

// acc / collision products along one window of `len` tokens: out[n] += Π_{t≤n} a[t] etc.
inline void add_window_terms(const std::int32_t* x1, const std::int32_t* x2, const std::int32_t* y,
                             const std::array<bool, brier_orders>* same, std::array<double, brier_orders>& sum) {
  double a1 = 1, a2 = 1, v = 1;
  for (int n = 0; n < brier_orders; ++n) {
    a1 *= x1[n] == y[n];
    a2 *= x2[n] == y[n];
    v *= same ? double((*same)[std::size_t(n)]) : double(x1[n] == x2[n]);
    sum[std::size_t(n)] += a1 + a2 - v;
  }
}

// K >= 4: every prediction position is one window of its own chunk's first four tokens.
inline std::array<double, brier_orders> calm_brier_whole_chunks(const std::vector<std::int32_t>& pred,
                                                                const std::vector<std::int32_t>& block, std::int64_t K,
                                                                std::int64_t positions) {
  std::array<double, brier_orders> sum{};
  for (std::int64_t p = 0; p < positions; ++p) {
    const std::int32_t* x1 = pred.data() + (p * 2) * K;
    add_window_terms(x1, x1 + K, block.data() + (p + 1) * K, nullptr, sum);
  }
  for (double& s : sum) s /= double(positions);
  return sum;
}

// The collision indicators of the K < 4 estimator at start position p: step 0 compares position
// p's own two samples; each later step feeds sample 1's chunk and draws two fresh samples; the
// rollout stops at the first step whose chunks differ (later tokens count as different).
template <class Backend, class T>
std::array<bool, brier_orders> calm_rollout_collisions(calm_model<Backend, T>& m,
                                                       typename calm_model<Backend, T>::context_type& ctx,
                                                       const std::vector<std::int32_t>& pred, std::int64_t p,
                                                       std::int64_t s, std::uint64_t seed) {
  const std::int64_t K = m.patch_size();
  std::array<bool, brier_orders> same{};
  std::vector<std::int32_t> a(pred.begin() + (p * 2) * K, pred.begin() + (p * 2 + 1) * K);
  std::vector<std::int32_t> b(pred.begin() + (p * 2 + 1) * K, pred.begin() + (p * 2 + 2) * K);
  for (std::int64_t j = 0; j < s; ++j) {
    if (j > 0) {
      const std::vector<float> hj = m.hidden(ctx, a, logits_for::last);
      const auto two = m.sample_chunks_rows(hj, p + j, stream_seed(seed, 4, std::uint64_t(1 + p)), 2);
      a.assign(two.begin(), two.begin() + K);
      b.assign(two.begin() + K, two.end());
    }
    bool all_same = true;
    for (std::int64_t k = 0; k < K && j * K + k < brier_orders; ++k) {
      same[std::size_t(j * K + k)] = a[std::size_t(k)] == b[std::size_t(k)];
      all_same = all_same && same[std::size_t(j * K + k)];
    }
    if (!all_same) break;
  }
  return same;
}

}  // namespace detail

/// \brief Brier-1 … Brier-4 of one teacher-forced block (`block`: a whole number of chunks, at
/// least two; batch of one, as the reference's evaluation).
///
/// Position p's hidden state predicts chunk p + 1; its two samples are samples 0 and 1 of
/// calm_noise with seed `stream_seed(seed, 4, 0)` at position p. K ≥ 4: Brier-n is the mean over
/// positions of acc₁ + acc₂ − collision over the first n tokens of the predicted chunk (n-grams
/// start only at chunk boundaries). K < 4: s = ⌈4/K⌉ consecutive predictions form a window
/// (positions 0 … P−s−1 of the P predictions) for the accuracy terms, and the collision term is
/// rolled out from the cache of position p along sample 1's path, drawing two fresh samples per
/// step (seed `stream_seed(seed, 4, 1 + p)` at the position fed), stopping once they differ.
template <class Backend, class T>
std::array<double, brier_orders> calm_brier_block(calm_model<Backend, T>& m, const std::vector<std::int32_t>& block,
                                                  std::uint64_t seed) {
  const std::int64_t K = m.patch_size(), L = std::int64_t(block.size()) / K, d = m.config().backbone.n_embd;
  MUNINN_CHECK(L >= 2 && L * K == std::int64_t(block.size()), "brierlm: a block of ", block.size(),
               " tokens is not a whole number (>= 2) of ", K, "-token chunks");
  auto ctx = m.make_context(L + 4, L);
  const std::vector<float> h = m.hidden(ctx, block, logits_for::all);
  const std::int64_t P = L - 1;  // predictions: positions 0 … L−2
  const std::vector<float> h_pred(h.begin(), h.begin() + P * d);
  const std::vector<std::int32_t> pred = m.sample_chunks_rows(h_pred, 0, stream_seed(seed, 4, 0), 2);
  if (K >= brier_orders) return detail::calm_brier_whole_chunks(pred, block, K, P);
  const std::int64_t s = (brier_orders + K - 1) / K;
  MUNINN_CHECK(P > s, "brierlm: a block of ", L, " chunks is too short for ", s, "-chunk windows at patch_size ", K);
  std::array<double, brier_orders> sum{};
  ctx.truncate(1);  // from here on the cache holds the true chunks 0 … p
  for (std::int64_t p = 0; p + s < P; ++p) {
    std::array<std::int32_t, brier_orders> x1{}, x2{}, y{};
    for (int t = 0; t < brier_orders; ++t) {
      const std::int64_t c = p + t / K, k = t % K;
      x1[std::size_t(t)] = pred[std::size_t((c * 2) * K + k)];
      x2[std::size_t(t)] = pred[std::size_t((c * 2 + 1) * K + k)];
      y[std::size_t(t)] = block[std::size_t((c + 1) * K + k)];
    }
    const std::array<bool, brier_orders> same = detail::calm_rollout_collisions(m, ctx, pred, p, s, seed);
    detail::add_window_terms(x1.data(), x2.data(), y.data(), &same, sum);
    ctx.truncate(p + 1);
    m.hidden(ctx, std::vector<std::int32_t>(block.begin() + (p + 1) * K, block.begin() + (p + 2) * K),
             logits_for::last);
  }
  for (double& v : sum) v /= double(P - s);
  return sum;
}

}  // namespace muninn
