// Tests of muninn::sampler against hand-computed distributions (the released model's sampling rules).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "muninn/runtime/sampling.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_sampling {

namespace {

using muninn::sampler;
using muninn::sampling_params;

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(float(std::log(x)));
  return l;
}

void expect_distribution(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "token " << i;
}

// Draws n tokens and checks that only tokens with probability > 0 appear and that every frequency lies within
// 5 binomial standard deviations of its probability (a false alarm about once in 1.7 million per token).
void expect_draws_follow(sampling_params params, const std::vector<float>& logits, const std::vector<double>& want,
                         const std::vector<std::int32_t>& previous = {}) {
  const int n = 20000;
  sampler s(params);
  std::vector<int> count(want.size(), 0);
  for (int k = 0; k < n; ++k) {
    const std::int32_t t = s.sample(logits.data(), std::int64_t(logits.size()), previous);
    ASSERT_GE(t, 0);
    ASSERT_LT(std::size_t(t), want.size());
    ASSERT_GT(want[std::size_t(t)], 0.0) << "drew token " << t << ", which has probability 0";
    ++count[std::size_t(t)];
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double p = want[i];
    const double sigma = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(double(count[i]) / n, p, 5 * sigma + 1e-12) << "token " << i;
  }
}

const std::vector<double> base = {0.5, 0.25, 0.125, 0.125};

// Sampling with `p` from logits `l` (4 tokens): the probabilities are `want` and the draws follow them.
void expect_sampling(const sampling_params& p, const std::vector<float>& l, const std::vector<double>& want) {
  expect_distribution(sampler(p).probabilities(l.data(), 4), want);
  expect_draws_follow(p, l, want);
}

TEST(Sampling, PlainSoftmax) {
  sampling_params p;
  expect_sampling(p, log_probs(base), base);
}

TEST(Sampling, Temperature) {
  sampling_params p;
  p.temperature = 2.0f;
  // softmax(log(q) / 2) is proportional to sqrt(q).
  std::vector<double> want;
  double z = 0;
  for (double q : base) z += std::sqrt(q);
  for (double q : base) want.push_back(std::sqrt(q) / z);
  expect_sampling(p, log_probs(base), want);
}

TEST(Sampling, TopK) {
  sampling_params p;
  p.top_k = 2;
  const auto l = log_probs(base);
  expect_sampling(p, l, {2.0 / 3, 1.0 / 3, 0, 0});
  // Tokens tied with the k-th probability stay (torch.where(probs < kth, 0, probs)).
  p.top_k = 3;
  expect_distribution(sampler(p).probabilities(l.data(), 4), base);
  // k beyond the vocabulary keeps everything.
  p.top_k = 100;
  expect_distribution(sampler(p).probabilities(l.data(), 4), base);
}

TEST(Sampling, TopPRemovesTheTokenThatCrossesTheThreshold) {
  const auto l = log_probs(base);  // cumulative 0.5, 0.75, 0.875, 1
  sampling_params p;
  p.top_p = 0.7f;  // 0.75 > 0.7: only the first token survives
  expect_sampling(p, l, {1, 0, 0, 0});
  p.top_p = 0.8f;  // 0.75 <= 0.8 < 0.875
  expect_sampling(p, l, {2.0 / 3, 1.0 / 3, 0, 0});
  p.top_p = 0.1f;  // below the first token's mass: the top token is always kept
  expect_distribution(sampler(p).probabilities(l.data(), 4), {1, 0, 0, 0});
}

TEST(Sampling, TopPAccumulatesTopKProbabilitiesWithoutRenormalising) {
  // probs 0.4 0.3 0.2 0.1; top_k = 2 leaves 0.4 0.3 (cumulative 0.7 <= 0.75, both stay). Renormalising first
  // would give 0.571 0.429, cumulative 1 > 0.75, and drop the second token.
  const auto l = log_probs({0.4, 0.3, 0.2, 0.1});
  sampling_params p;
  p.top_k = 2;
  p.top_p = 0.75f;
  const std::vector<double> want = {4.0 / 7, 3.0 / 7, 0, 0};
  expect_sampling(p, l, want);
}

TEST(Sampling, MinP) {
  const auto l = log_probs(base);
  sampling_params p;
  p.min_p = 0.3f;  // threshold 0.15
  const std::vector<double> want = {2.0 / 3, 1.0 / 3, 0, 0};
  expect_sampling(p, l, want);
  p.min_p = 0.2f;  // threshold 0.1: all stay
  expect_distribution(sampler(p).probabilities(l.data(), 4), base);
  p.min_p = 1.0f;  // only the maximum
  expect_distribution(sampler(p).probabilities(l.data(), 4), {1, 0, 0, 0});
}

TEST(Sampling, FiltersInOrder) {
  // temperature 0.5 squares the probabilities: 0.4 0.3 0.2 0.1 -> 16 9 4 1 (/30).
  const auto l = log_probs({0.4, 0.3, 0.2, 0.1});
  sampling_params p;
  p.temperature = 0.5f;
  p.top_k = 3;    // drops 1/30
  p.top_p = 0.9f; // cumulative 16/30, 25/30 <= 0.9, 29/30 > 0.9: drops 4/30
  p.min_p = 0.5f; // threshold 8/30: 9/30 stays
  expect_distribution(sampler(p).probabilities(l.data(), 4), {16.0 / 25, 9.0 / 25, 0, 0});
  p.min_p = 0.6f; // threshold 9.6/30: 9/30 goes
  expect_distribution(sampler(p).probabilities(l.data(), 4), {1, 0, 0, 0});
}

TEST(Sampling, RepetitionPenalty) {
  // HF rule: positive logits are divided, negative ones multiplied, once per distinct previous token.
  const std::vector<float> l = {1.0f, 2.0f, -1.0f, 0.5f};
  sampling_params p;
  p.repetition_penalty = 2.0f;
  const std::vector<std::int32_t> prev = {0, 2, 2, 2, 99, -5};  // out-of-range ids are ignored
  const std::vector<double> z = {0.5, 2.0, -2.0, 0.5};
  std::vector<double> want;
  double sum = 0;
  for (double x : z) sum += std::exp(x);
  for (double x : z) want.push_back(std::exp(x) / sum);
  sampler s(p);
  expect_distribution(s.probabilities(l.data(), 4, prev.data(), prev.size()), want, 1e-12);
  expect_draws_follow(p, l, want, prev);
  // Without previous tokens nothing changes.
  sum = 0;
  for (float x : l) sum += std::exp(double(x));
  std::vector<double> plain;
  for (float x : l) plain.push_back(std::exp(double(x)) / sum);
  expect_distribution(s.probabilities(l.data(), 4), plain, 1e-12);
}

TEST(Sampling, Greedy) {
  const std::vector<float> l = {1.0f, 3.0f, 3.0f, 2.0f};
  sampling_params p;
  p.greedy = true;
  sampler s(p);
  EXPECT_EQ(s.sample(l.data(), 4), 1);  // the first maximum
  // The penalty applies before the argmax: 3 / 1.5 = 2 < 3.
  sampling_params q = p;
  q.repetition_penalty = 1.5f;
  const std::vector<std::int32_t> prev = {1};
  EXPECT_EQ(sampler(q).sample(l.data(), 4, prev), 2);
  // Temperature 0 is greedy too, whatever the other settings.
  sampling_params t;
  t.temperature = 0.0f;
  t.top_k = 3;
  sampler st(t);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(st.sample(l.data(), 4), 1);
  expect_distribution(st.probabilities(l.data(), 4), {0, 1, 0, 0});
}

TEST(Sampling, NegativeInfinityLogitsAreNeverDrawn) {
  const float inf = INFINITY;
  const std::vector<float> l = {-inf, 0.0f, -inf, 0.0f};
  expect_draws_follow(sampling_params{}, l, {0, 0.5, 0, 0.5});
}

TEST(Sampling, ReproducibleForEqualSeedsDifferentForOthers) {
  std::vector<float> l(1000);
  for (std::size_t i = 0; i < l.size(); ++i) l[i] = float(std::sin(double(i)));
  sampling_params p;
  p.seed = 42;
  sampler a(p), b(p);
  p.seed = 43;
  sampler c(p);
  std::vector<std::int32_t> ta, tb, tc;
  for (int k = 0; k < 200; ++k) {
    ta.push_back(a.sample(l.data(), 1000));
    tb.push_back(b.sample(l.data(), 1000));
    tc.push_back(c.sample(l.data(), 1000));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  a.reseed(42);
  std::vector<std::int32_t> again;
  for (int k = 0; k < 200; ++k) again.push_back(a.sample(l.data(), 1000));
  EXPECT_EQ(ta, again);
}

TEST(Sampling, PinnedDrawsMatchAnIndependentMt19937_64) {
  // Expected values from a Python implementation of mt19937_64 with the same double arithmetic:
  // u = (next() >> 11) * 2^-53, first token whose cumulative probability exceeds u * total.
  const std::vector<float> uniform(10, 0.0f);
  sampling_params p;
  p.seed = 1234;
  sampler s(p);
  std::vector<std::int32_t> got;
  for (int k = 0; k < 20; ++k) got.push_back(s.sample(uniform.data(), 10));
  EXPECT_EQ(got, (std::vector<std::int32_t>{9, 0, 9, 9, 1, 9, 8, 9, 0, 7, 9, 1, 4, 9, 1, 7, 0, 0, 2, 6}));

  const std::vector<float> ramp = {0.0f, 1.0f, 2.0f};
  p.seed = 7;
  sampler r(p);
  got.clear();
  for (int k = 0; k < 20; ++k) got.push_back(r.sample(ramp.data(), 3));
  EXPECT_EQ(got, (std::vector<std::int32_t>{2, 2, 1, 2, 1, 0, 2, 2, 1, 2, 2, 2, 2, 1, 2, 1, 2, 2, 2, 1}));
}

TEST(Sampling, RejectsBadSettingsAndLogits) {
  const auto bad = [](auto edit) {
    sampling_params p;
    edit(p);
    EXPECT_THROW(sampler{p}, muninn::error);
  };
  bad([](sampling_params& p) { p.temperature = -1.0f; });
  bad([](sampling_params& p) { p.top_k = -1; });
  bad([](sampling_params& p) { p.top_p = 0.0f; });
  bad([](sampling_params& p) { p.top_p = 1.5f; });
  bad([](sampling_params& p) { p.min_p = -0.1f; });
  bad([](sampling_params& p) { p.repetition_penalty = 0.0f; });

  sampler s{sampling_params{}};
  const std::vector<float> with_nan = {0.0f, NAN, 1.0f};
  EXPECT_THROW(s.sample(with_nan.data(), 3), muninn::error);
  const std::vector<float> with_inf = {0.0f, INFINITY};
  EXPECT_THROW(s.sample(with_inf.data(), 2), muninn::error);
  const std::vector<float> all_neg_inf = {-INFINITY, -INFINITY};
  EXPECT_THROW(s.sample(all_neg_inf.data(), 2), muninn::error);
  EXPECT_THROW(s.sample(with_nan.data(), 0), muninn::error);
}

}  // namespace

}  // namespace test_sampling
