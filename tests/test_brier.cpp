// BrierLM (runtime/brier.hpp): the combination, the two-sample counting, the softmax estimator
// against hand computation, a double-precision reference written here, statistics of the draws
// and the PyTorch oracle of tools/reference/brier_ref.py (tests/data/brier/).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/io/json.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/brier.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_brier {

namespace {

using namespace muninn;

const std::string data_dir = std::string(MUNINN_TEST_DATA) + "/";

std::vector<double> doubles_of(const io::json& a) {
  std::vector<double> v;
  for (const auto& x : a.as_array()) v.push_back(x.as_double());
  return v;
}
std::vector<float> floats_of(const io::json& a) {
  std::vector<float> v;
  for (const auto& x : a.as_array()) v.push_back(float(x.as_double()));
  return v;
}
std::vector<std::int32_t> ids_of(const io::json& a) {
  std::vector<std::int32_t> v;
  for (const auto& x : a.as_array()) v.push_back(std::int32_t(x.as_int()));
  return v;
}

// ---------------------------------------------------------------------------------------------
// Combination and counting
// ---------------------------------------------------------------------------------------------

TEST(BrierCombination, BrierLmIsHundredTimesTheFourthRootOfTheProduct) {
  EXPECT_NEAR(brierlm_of({0.5, 0.4, 0.3, 0.2}), 100.0 * std::pow(0.012, 0.25), 1e-12);
  EXPECT_NEAR(brierlm_of({1, 1, 1, 1}), 100.0, 1e-12);
}

TEST(BrierCombination, NegativeProductCountsAsZero) {
  EXPECT_EQ(brierlm_of({0.5, -0.1, 0.3, 0.2}), 0.0);
  EXPECT_EQ(brierlm_of({-0.5, -0.1, -0.3, 0.2}), 0.0);
  // An even number of negative factors gives a positive product: the reference's max(·, 0) keeps it.
  EXPECT_NEAR(brierlm_of({-0.5, -0.1, 0.3, 0.2}), 100.0 * std::pow(0.003, 0.25), 1e-12);
}

TEST(BrierCombination, BlocksAreAveragedAsMeansNotPooled) {
  brier_accumulator a, b;
  a.add({1.0, 1.0, 1.0, 1.0});
  for (int k = 0; k < 3; ++k) b.add({0.0, 0.2, 0.4, 0.6});
  EXPECT_EQ(a.count(1), 1);
  EXPECT_EQ(b.count(4), 3);
  EXPECT_NEAR(b.mean(3), 0.4, 1e-15);
  brier_block_average avg;
  avg.add_block(a);
  avg.add_block(b);
  const brier_values m = avg.brier();
  EXPECT_NEAR(m[0], 0.5, 1e-15);  // (1 + 0) / 2, not (1 + 0 + 0 + 0) / 4
  EXPECT_NEAR(m[1], 0.6, 1e-15);
  EXPECT_NEAR(m[3], 0.8, 1e-15);
  EXPECT_NEAR(avg.brierlm(), brierlm_of(m), 1e-12);
  ASSERT_EQ(avg.block_means().size(), 2u);
  brier_accumulator merged = a;
  merged.merge(b);
  EXPECT_EQ(merged.count(2), 4);
  EXPECT_NEAR(merged.sum(2), 1.6, 1e-15);
  EXPECT_TRUE(std::isnan(brier_accumulator{}.mean(1)));
  brier_accumulator partial;
  partial.add(1, 0.5);
  EXPECT_THROW(avg.add_block(partial), muninn::error);
  EXPECT_THROW(partial.add(5, 0.0), muninn::error);
}

TEST(BrierCounting, ChunkEstimatorUsesCumulativeProductsAlongTheChunk) {
  // Two positions, K = 5 (only n = 1..4 count).
  const std::vector<std::int32_t> y = {1, 2, 3, 4, 5, 7, 7, 7, 7, 7};
  const std::vector<std::int32_t> p1 = {1, 2, 9, 4, 5, 7, 7, 7, 7, 7};
  const std::vector<std::int32_t> p2 = {1, 2, 3, 4, 0, 7, 6, 7, 7, 7};
  brier_accumulator acc;
  chunk_brier(acc, y.data(), p1.data(), p2.data(), 2, 5);
  // position 0: acc1 = 1,1,0,0; acc2 = 1,1,1,1; var = 1,1,0,0 -> 1, 1, 1, 1
  // position 1: acc1 = 1,1,1,1; acc2 = 1,0,0,0; var = 1,0,0,0 -> 1, 1, 1, 1
  for (int n = 1; n <= 4; ++n) {
    EXPECT_EQ(acc.count(n), 2);
    EXPECT_DOUBLE_EQ(acc.mean(n), 1.0) << n;
  }
  brier_accumulator wrong;
  const std::vector<std::int32_t> q = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  chunk_brier(wrong, y.data(), q.data(), q.data(), 2, 5);  // two equal wrong samples: 0 + 0 − 1
  EXPECT_DOUBLE_EQ(wrong.mean(4), -1.0);
  // K = 2: Brier-1 and Brier-2 only.
  brier_accumulator short_chunk;
  chunk_brier(short_chunk, y.data(), p1.data(), p2.data(), 5, 2);
  EXPECT_EQ(short_chunk.count(2), 5);
  EXPECT_EQ(short_chunk.count(3), 0);
}

TEST(BrierCounting, WindowTakesCollisionsFromItsOwnPair) {
  const std::int32_t y[4] = {1, 2, 3, 4}, a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 3, 4};
  const std::int32_t c[4] = {5, 6, 7, 8}, d[4] = {5, 6, 0, 8};
  brier_accumulator acc;
  sampled_brier_window(acc, y, a, b, c, d, 4);
  const double want[4] = {1 + 1 - 1, 1 + 0 - 1, 1 + 0 - 0, 1 + 0 - 0};
  for (int n = 1; n <= 4; ++n) EXPECT_DOUBLE_EQ(acc.mean(n), want[n - 1]) << n;
}

// ---------------------------------------------------------------------------------------------
// Draws
// ---------------------------------------------------------------------------------------------

TEST(BrierDraws, UniformIsTheKindFiveStream) {
  for (std::int64_t t : {0, 1, 77}) {
    EXPECT_EQ(brier_uniform(9, t, 0, 0), uniform01_at(stream_seed(9, 5, std::uint64_t(t)), 0));
    EXPECT_EQ(brier_uniform(9, t, 0, 1), uniform01_at(stream_seed(9, 5, std::uint64_t(t)), 1));
    EXPECT_EQ(brier_uniform(9, t, 2, 1), uniform01_at(stream_seed(9, 5, std::uint64_t(t)), 5));
  }
}

TEST(BrierDraws, InverseCdfInVocabularyOrder) {
  const float p[5] = {0.25f, 0.0f, 0.5f, 0.0f, 0.25f};
  EXPECT_EQ(brier_inverse_cdf(p, 5, 0.0), 0);
  EXPECT_EQ(brier_inverse_cdf(p, 5, 0.2499), 0);
  EXPECT_EQ(brier_inverse_cdf(p, 5, 0.25), 2);  // strict <: the boundary goes to the next token
  EXPECT_EQ(brier_inverse_cdf(p, 5, 0.7499), 2);
  EXPECT_EQ(brier_inverse_cdf(p, 5, 0.75), 4);
  EXPECT_EQ(brier_inverse_cdf(p, 5, std::nextafter(1.0, 0.0)), 4);
  const float last_zero[3] = {0.5f, 0.5f, 0.0f};
  EXPECT_EQ(brier_inverse_cdf(last_zero, 3, std::nextafter(1.0, 0.0)), 1);  // never a zero-probability token
  const float none[2] = {0.0f, 0.0f};
  EXPECT_THROW(brier_inverse_cdf(none, 2, 0.5), muninn::error);
}

TEST(BrierDraws, SoftmaxRoundsDoubleProbabilitiesOnce) {
  const float l[3] = {std::log(3.0f), 0.0f, -std::numeric_limits<float>::infinity()};
  float p[3];
  brier_softmax(l, 3, p);
  const double e0 = std::exp(double(l[0]));
  EXPECT_EQ(p[0], float(1.0 / (1.0 + 1.0 / e0)));  // m = l0: exp(0) / (1 + exp(−l0))
  EXPECT_EQ(p[1], float(std::exp(-double(l[0])) / (1.0 + std::exp(-double(l[0])))));
  EXPECT_EQ(p[2], 0.0f);
  const float nan[2] = {0.0f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_THROW(brier_softmax(nan, 2, p), muninn::error);
  const float inf[2] = {0.0f, std::numeric_limits<float>::infinity()};
  EXPECT_THROW(brier_softmax(inf, 2, p), muninn::error);
}

// The draws follow the probabilities: every token's frequency within 5 binomial standard deviations.
TEST(BrierDraws, FrequenciesFollowTheDistribution) {
  const float p[4] = {0.1f, 0.2f, 0.3f, 0.4f};
  const int N = 100000;
  std::vector<int> count(4, 0);
  for (int i = 0; i < N; ++i) ++count[std::size_t(brier_inverse_cdf(p, 4, brier_uniform(1, i, 0, i % 2)))];
  for (int v = 0; v < 4; ++v) {
    const double sd = std::sqrt(N * double(p[v]) * (1 - double(p[v])));
    EXPECT_NEAR(count[std::size_t(v)], N * double(p[v]), 5 * sd) << v;
  }
}

// E[1{x1 = y} + 1{x2 = y} − 1{x1 = x2}] = 2 P(y) − Σ P², x1, x2 the two kind-5 draws of a position.
// The exact variance of one estimate is enumerated over the V² pairs; tolerance 5 standard errors.
TEST(BrierStatistics, TwoSampleEstimateIsUnbiased) {
  const std::vector<float> p = {0.05f, 0.5f, 0.15f, 0.3f};
  const std::int32_t y = 3;
  double sum_sq = 0;
  for (float x : p) sum_sq += double(x) * x;
  const double want = 2 * double(p[std::size_t(y)]) - sum_sq;
  double second = 0;  // E[X²]
  for (std::size_t a = 0; a < p.size(); ++a)
    for (std::size_t b = 0; b < p.size(); ++b) {
      const double x = double(a == std::size_t(y)) + double(b == std::size_t(y)) - double(a == b);
      second += double(p[a]) * double(p[b]) * x * x;
    }
  const double var = second - want * want;
  const int N = 200000;
  brier_accumulator acc;
  for (int t = 0; t < N; ++t) {
    const std::int32_t s[2] = {brier_inverse_cdf(p.data(), 4, brier_uniform(11, t, 0, 0)),
                               brier_inverse_cdf(p.data(), 4, brier_uniform(11, t, 0, 1))};
    sampled_brier_window(acc, &y, &s[0], &s[1], &s[0], &s[1], 1);
  }
  EXPECT_NEAR(acc.mean(1), want, 5 * std::sqrt(var / N)) << "want " << want << ", sd " << std::sqrt(var / N);
}

// ---------------------------------------------------------------------------------------------
// The softmax estimator
// ---------------------------------------------------------------------------------------------

// A toy model: the logits of the token after position p are table[token at p] + bias[p].
struct toy_model {
  std::int64_t V = 0;
  std::vector<float> table, bias;  // [V, V], [T, V]
  std::vector<float> logits_after(std::int32_t token, std::int64_t position) const {
    std::vector<float> l(static_cast<std::size_t>(V));
    for (std::int64_t v = 0; v < V; ++v)
      l[std::size_t(v)] = table[std::size_t(token * V + v)] + bias[std::size_t(position * V + v)];
    return l;
  }
  std::vector<float> teacher_forced(const std::vector<std::int32_t>& y) const {
    std::vector<float> out;
    for (std::size_t t = 0; t + 1 < y.size(); ++t) {
      const auto l = logits_after(y[t], std::int64_t(t));
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  }
};

// The estimator written a second time, in the reference's shape (all starts' accuracy terms from
// one cumulative product, then per start the rollout loop with its early stop), on a model given as
// "logits after this prefix"; the draws use the same rule.
std::vector<brier_values> reference_brier(const std::vector<std::int32_t>& y,
                                          const std::function<std::vector<float>(const std::vector<std::int32_t>&)>& model,
                                          std::uint64_t seed, std::int64_t first_position) {
  const std::size_t S = y.size();
  std::vector<std::vector<float>> probs(S - 1);
  for (std::size_t t = 0; t + 1 < S; ++t) {
    const auto l = model(std::vector<std::int32_t>(y.begin(), y.begin() + std::ptrdiff_t(t) + 1));
    probs[t].resize(l.size());
    brier_softmax(l.data(), std::int64_t(l.size()), probs[t].data());
  }
  std::vector<brier_values> out;
  for (std::size_t i = 0; i + 4 < S; ++i) {
    brier_values acc{}, coll{};
    double prod = 1;
    for (std::size_t k = 0; k < 4; ++k) {
      prod *= double(probs[i + k][std::size_t(y[i + k + 1])]);
      acc[k] = prod;
    }
    bool same[4] = {true, false, false, false};
    std::vector<std::int32_t> prefix(y.begin(), y.begin() + std::ptrdiff_t(i) + 1);
    std::vector<float> q = probs[i];
    for (int j = 0; j < 4; ++j) {
      if (j > 0) {
        const auto l = model(prefix);
        q.resize(l.size());
        brier_softmax(l.data(), std::int64_t(l.size()), q.data());
      }
      double s = 0;
      for (float x : q) s += double(x) * double(x);
      coll[std::size_t(j)] = s;
      if (j == 3) break;
      const std::int64_t pos = first_position + std::int64_t(i);
      const std::int32_t a = brier_inverse_cdf(q.data(), std::int64_t(q.size()), brier_uniform(seed, pos, j, 0));
      const std::int32_t b = brier_inverse_cdf(q.data(), std::int64_t(q.size()), brier_uniform(seed, pos, j, 1));
      prefix.push_back(a);
      same[j + 1] = same[j] && a == b;
      if (!same[j + 1]) break;
    }
    brier_values v{};
    for (std::size_t n = 0; n < 4; ++n) v[n] = 2 * acc[n] - (same[n] ? coll[n] : 0.0);
    out.push_back(v);
  }
  return out;
}

// Hand computation. V = 2, block 0 1 0 1 0 (one start, t = 0). Teacher-forced rows:
//   row 0: P = (3/4, 1/4), y1 = 1 -> 1/4     row 1: (1/2, 1/2), y2 = 0 -> 1/2
//   row 2: (1/2, 1/2), y3 = 1 -> 1/2          row 3: (3/4, 1/4), y4 = 0 -> 3/4
// accuracy 2·(1/4, 1/8, 1/16, 3/64) = (1/2, 1/4, 1/8, 3/32).
// Rollout (seed 0, asserted below): step 0 draws u = 0.065, 0.263 < 3/4 -> both token 0, Σq0² = 5/8;
// q1 = (1, 0) after [0] -> both 0, Σq1² = 1; q2 = (1/2, 1/2) after [0, 0]: u = 0.359 -> 0 and
// u = 0.765 -> 1 differ, Σq2² = 1/2, and no Σq3² is taken.
// Brier = (1/2 − 5/8, 1/4 − 1, 1/8 − 1/2, 3/32 − 0) = (−1/8, −3/4, −3/8, 3/32).
TEST(SoftmaxBrier, HandComputedCase) {
  ASSERT_LT(brier_uniform(0, 0, 0, 0), 0.75);
  ASSERT_LT(brier_uniform(0, 0, 0, 1), 0.75);
  ASSERT_LT(brier_uniform(0, 0, 2, 0), 0.5);
  ASSERT_GE(brier_uniform(0, 0, 2, 1), 0.5);
  const float l3 = std::log(3.0f), ninf = -std::numeric_limits<float>::infinity();
  const std::vector<std::int32_t> y = {0, 1, 0, 1, 0};
  const std::vector<float> tf = {l3, 0, 0, 0, 0, 0, l3, 0};
  std::vector<std::vector<std::int32_t>> calls;
  const auto next = [&](std::int64_t t, const std::vector<std::int32_t>& path) {
    EXPECT_EQ(t, 0);
    calls.push_back(path);
    return path.size() == 1 ? std::vector<float>{0, ninf} : std::vector<float>{0, 0};
  };
  std::vector<brier_values> per;
  const brier_accumulator acc = softmax_brier_block(y, tf.data(), 2, next, brier_draws{0, 0}, &per);
  ASSERT_EQ(per.size(), 1u);
  const double want[4] = {-0.125, -0.75, -0.375, 3.0 / 32};
  for (int n = 1; n <= 4; ++n) {
    EXPECT_NEAR(per[0][std::size_t(n - 1)], want[n - 1], 1e-6) << n;
    EXPECT_NEAR(acc.mean(n), want[n - 1], 1e-6) << n;
    EXPECT_EQ(acc.count(n), 1);
  }
  ASSERT_EQ(calls.size(), 2u);  // after [0] and after [0, 0]; never after the draws differ
  EXPECT_EQ(calls[0], (std::vector<std::int32_t>{0}));
  EXPECT_EQ(calls[1], (std::vector<std::int32_t>{0, 0}));
}

TEST(SoftmaxBrier, BlockNeedsFiveTokens) {
  const std::vector<float> tf(4 * 2, 0.0f);
  const auto next = [](std::int64_t, const std::vector<std::int32_t>&) { return std::vector<float>{0, 0}; };
  EXPECT_THROW(softmax_brier_block({0, 1, 0, 1}, tf.data(), 2, next, brier_draws{}), muninn::error);
  EXPECT_THROW(brier_block_count(100, 4), muninn::error);
  EXPECT_EQ(brier_block_count(100, 30), 3);
  EXPECT_EQ(brier_block_count(100, 30, 2), 2);
  EXPECT_EQ(brier_block_count(29, 30), 0);
}

// The PyTorch oracle (tools/reference/brier_ref.py, softmax_case.json): same per-start values.
TEST(SoftmaxBrier, MatchesThePyTorchOracle) {
  const io::json c = io::read_json_file(data_dir + "brier/softmax_case.json");
  toy_model m;
  m.V = c.at("vocab").as_int();
  m.table = floats_of(c.at("table"));
  m.bias = floats_of(c.at("bias"));
  const auto y = ids_of(c.at("targets"));
  const auto logits = floats_of(c.at("logits"));
  ASSERT_EQ(logits, m.teacher_forced(y));  // the fixture's logits are the toy model's
  std::vector<std::int64_t> depth(y.size() - 4, 0);
  const auto next = [&](std::int64_t t, const std::vector<std::int32_t>& path) {
    depth[std::size_t(t)] = std::int64_t(path.size());
    return m.logits_after(path.back(), t + std::int64_t(path.size()));
  };
  std::vector<brier_values> per;
  const brier_draws d{std::uint64_t(c.at("seed").as_int()), c.at("first_position").as_int()};
  const brier_accumulator acc = softmax_brier_block(y, logits.data(), m.V, next, d, &per);
  const auto& want = c.at("per_start");
  ASSERT_EQ(per.size(), want.size());
  for (std::size_t t = 0; t < per.size(); ++t)
    for (std::size_t n = 0; n < 4; ++n) EXPECT_NEAR(per[t][n], want[t][n].as_double(), 1e-6) << "start " << t << " n " << n + 1;
  const auto want_depth = ids_of(c.at("rollout_depth"));
  EXPECT_EQ(depth, std::vector<std::int64_t>(want_depth.begin(), want_depth.end()));
  const auto brier = doubles_of(c.at("brier"));
  for (int n = 1; n <= 4; ++n) EXPECT_NEAR(acc.mean(n), brier[std::size_t(n - 1)], 1e-6) << n;
  brier_block_average one;
  one.add_block(acc);
  EXPECT_NEAR(one.brierlm(), c.at("brierlm").as_double(), 1e-6);
}

// The estimator equals the reference-shaped rewrite on random toy models, seeds and offsets.
TEST(SoftmaxBrier, EqualsTheReferenceShapedRewrite) {
  std::uint64_t state = 12345;
  const auto rnd = [&] { return float(standard_normal_at(77, state++, 0)); };
  for (int trial = 0; trial < 40; ++trial) {
    toy_model m;
    m.V = 3 + trial % 5;
    const std::size_t S = 5 + std::size_t(trial % 9);
    const float scale = trial % 2 ? 4.0f : 1.0f;  // peaked models roll out further
    for (std::int64_t i = 0; i < m.V * m.V; ++i) m.table.push_back(scale * rnd());
    for (std::size_t i = 0; i < S * std::size_t(m.V); ++i) m.bias.push_back(0.5f * rnd());
    std::vector<std::int32_t> y;
    for (std::size_t i = 0; i < S; ++i) y.push_back(std::int32_t(counter_bits(5, state++, 0) % std::uint64_t(m.V)));
    const brier_draws d{std::uint64_t(trial), 1000 * trial};
    const auto model = [&](const std::vector<std::int32_t>& prefix) {
      return m.logits_after(prefix.back(), std::int64_t(prefix.size()) - 1);
    };
    const auto next = [&](std::int64_t t, const std::vector<std::int32_t>& path) {
      return m.logits_after(path.back(), t + std::int64_t(path.size()));
    };
    std::vector<brier_values> per;
    const auto tf = m.teacher_forced(y);
    softmax_brier_block(y, tf.data(), m.V, next, d, &per);
    const auto want = reference_brier(y, model, d.seed, d.first_position);
    ASSERT_EQ(per.size(), want.size());
    for (std::size_t t = 0; t < per.size(); ++t)
      for (std::size_t n = 0; n < 4; ++n) EXPECT_NEAR(per[t][n], want[t][n], 1e-12) << trial << " " << t << " " << n;
  }
}

// E[Brier-n estimate] = 2 P(y_1..y_n) − Σ over n-grams x of P(x)², estimated over many seeds on a
// toy model whose n-gram probabilities are enumerated exactly; tolerance 5 standard errors (from
// the sample variance).
TEST(BrierStatistics, SoftmaxEstimatorIsUnbiasedForNGrams) {
  toy_model m;
  m.V = 3;
  m.table = {2.0f, 0.5f, -1.0f, 0.0f, 1.5f, 0.2f, -0.5f, 0.3f, 1.0f};
  m.bias.assign(5 * 3, 0.0f);
  m.bias[4] = 0.7f;  // position 1 differs: a rollout at the wrong position shows
  const std::vector<std::int32_t> y = {0, 0, 1, 2, 2};
  const auto prob = [&](std::int32_t last, std::int64_t pos) {
    const auto l = m.logits_after(last, pos);
    std::vector<float> p(3);
    brier_softmax(l.data(), 3, p.data());
    return p;
  };
  // Exact expectations by enumerating n-grams from position 0.
  brier_values want{};
  {
    double acc = 1;
    for (int n = 1; n <= 4; ++n) {
      acc *= double(prob(y[std::size_t(n - 1)], n - 1)[std::size_t(y[std::size_t(n)])]);
      double coll = 0;
      std::function<void(int, std::int32_t, double)> walk = [&](int k, std::int32_t last, double pr) {
        if (k == n) {
          coll += pr * pr;
          return;
        }
        const auto p = prob(last, k);
        for (std::int32_t v = 0; v < 3; ++v) walk(k + 1, v, pr * double(p[std::size_t(v)]));
      };
      walk(0, y[0], 1.0);
      want[std::size_t(n - 1)] = 2 * acc - coll;
    }
  }
  const int N = 40000;
  brier_values sum{}, sum2{};
  const auto tf = m.teacher_forced(y);
  for (int s = 0; s < N; ++s) {
    const auto next = [&](std::int64_t t, const std::vector<std::int32_t>& path) {
      return m.logits_after(path.back(), t + std::int64_t(path.size()));
    };
    std::vector<brier_values> per;
    softmax_brier_block(y, tf.data(), 3, next, brier_draws{std::uint64_t(s), 0}, &per);
    for (std::size_t n = 0; n < 4; ++n) {
      sum[n] += per[0][n];
      sum2[n] += per[0][n] * per[0][n];
    }
  }
  for (std::size_t n = 0; n < 4; ++n) {
    const double mean = sum[n] / N, var = std::max(sum2[n] / N - mean * mean, 0.0);  // Brier-1 has none
    EXPECT_NEAR(mean, want[n], 5 * std::sqrt(var / N) + 1e-12) << "Brier-" << n + 1;
  }
}

// ---------------------------------------------------------------------------------------------
// Models: the KV-cache rollouts equal recomputing every prefix, and the oracle's Llama figure
// ---------------------------------------------------------------------------------------------

// model_brier_block (chunked prefill, rollouts on a truncated cache) against softmax_brier_block
// with logits of whole prefixes computed afresh.
template <class Model>
void expect_cache_rollouts_equal_recomputation(const Model& m, const run_options& opt, std::int64_t S, double tol) {
  std::vector<std::int32_t> block;
  for (std::int64_t i = 0; i < S; ++i)
    block.push_back(std::int32_t(counter_bits(3, std::uint64_t(i), 0) % std::uint64_t(m.config().vocab_size)));
  const brier_draws d{4, 96};
  const std::vector<std::int32_t> head(block.begin(), block.end() - 1);
  const std::vector<float> tf = m.forward(head, opt);
  std::int64_t rollouts = 0;
  const auto next = [&](std::int64_t t, const std::vector<std::int32_t>& path) {
    ++rollouts;
    std::vector<std::int32_t> prefix(block.begin(), block.begin() + t + 1);
    prefix.insert(prefix.end(), path.begin(), path.end());
    const std::vector<float> all = m.forward(prefix, opt);
    const std::int64_t V = m.config().vocab_size;
    return std::vector<float>(all.end() - V, all.end());
  };
  std::vector<brier_values> want, got, got_chunked;
  softmax_brier_block(block, tf.data(), m.config().vocab_size, next, d, &want);
  model_brier_block(m, block, opt, d, &got);
  model_brier_block(m, block, opt, d, &got_chunked, 7);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t t = 0; t < got.size(); ++t)
    for (std::size_t n = 0; n < 4; ++n) {
      EXPECT_NEAR(got[t][n], want[t][n], tol) << "start " << t << " n " << n + 1;
      EXPECT_NEAR(got_chunked[t][n], want[t][n], tol) << "start " << t << " n " << n + 1;
    }
  EXPECT_GT(rollouts, 0) << "no start collided: the case does not exercise the rollout";
}

TEST(ModelBrier, LlamaCacheRolloutsEqualRecomputation) {
  const auto m = model<host_backend, float, llama_arch>::load(data_dir + "llama/tiny_text");
  expect_cache_rollouts_equal_recomputation(m, run_options{}, 40, 1e-5);
}

TEST(ModelBrier, HuginnCacheRolloutsEqualRecomputation) {
  const auto m = model<host_backend, float, huginn_arch>::load(data_dir + "huginn/tiny_f32");
  run_options opt;
  opt.steps = 3;
  opt.init = state_init::truncated_normal{};  // random states drawn per position
  opt.seed = 5;
  expect_cache_rollouts_equal_recomputation(m, opt, 24, 1e-5);
}

TEST(ModelBrier, MixtureOfRecursionsCausalRoutingCacheRolloutsEqualRecomputation) {
  const std::string dir = data_dir + "mor/expert_mcyc_r3_linear_sigmoid";
  const mor_config cfg = io::read_mor_config(dir, "");
  const model<host_backend, float, mor_expert_arch> m(host_backend{}, cfg, io::open_mor_checkpoint(dir, cfg));
  run_options opt;
  opt.routing = routing_mode::causal;
  expect_cache_rollouts_equal_recomputation(m, opt, 24, 1e-5);
}

std::vector<std::int32_t> read_id_lines(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<std::int32_t> ids;
  for (std::int64_t v; in >> v;) ids.push_back(std::int32_t(v));
  return ids;
}

// The oracle's BrierLM of a tiny Llama (transformers, fp32) through the C++ API: the number that
// `muninn eval` prints for the same inputs (tests/CMakeLists.txt checks the CLI against it too).
TEST(ModelBrier, LlamaMatchesThePyTorchOracle) {
  const io::json c = io::read_json_file(data_dir + "brier/llama_case.json");
  const auto m = model<host_backend, float, llama_arch>::load(data_dir + c.at("model").as_string());
  const auto stream = read_id_lines(data_dir + "brier/" + c.at("data").as_string());
  brierlm_options o;
  o.block_size = c.at("block_size").as_int();
  o.seed = std::uint64_t(c.at("seed").as_int());
  const brierlm_result r = evaluate_brierlm(m, stream, o);
  EXPECT_EQ(r.tokens, c.at("tokens").as_int());
  EXPECT_EQ(r.blocks.blocks(), c.at("blocks").as_int());
  EXPECT_EQ(r.tokens_dropped, c.at("dropped").as_int());
  const auto& bm = c.at("block_means");
  for (std::size_t b = 0; b < bm.size(); ++b)
    for (std::size_t n = 0; n < 4; ++n)
      EXPECT_NEAR(r.blocks.block_means()[b][n], bm[b][n].as_double(), 1e-6) << "block " << b << " n " << n + 1;
  const auto brier = doubles_of(c.at("brier"));
  for (std::size_t n = 0; n < 4; ++n) EXPECT_NEAR(r.brier[n], brier[n], 1e-6) << n + 1;
  EXPECT_NEAR(r.brierlm, c.at("brierlm").as_double(), 1e-5);
}

TEST(ModelBrier, BlocksAreCutFromTheStreamWithTheirOffsets) {
  std::vector<std::int32_t> stream(23);
  for (std::size_t i = 0; i < stream.size(); ++i) stream[i] = std::int32_t(i);
  std::vector<std::int64_t> offsets, firsts;
  brierlm_options o;
  o.block_size = 7;
  std::int64_t seen = 0;
  o.on_block = [&](std::int64_t b, const brier_values&) { EXPECT_EQ(b, seen++); };
  const brierlm_result r = evaluate_brierlm(stream, o, [&](const std::vector<std::int32_t>& block, const brier_draws& d) {
    offsets.push_back(d.first_position);
    firsts.push_back(block.front());
    EXPECT_EQ(block.size(), 7u);
    brier_accumulator a;
    a.add({double(d.first_position), 0.5, 0.5, 0.5});
    return a;
  });
  EXPECT_EQ(offsets, (std::vector<std::int64_t>{0, 7, 14}));
  EXPECT_EQ(firsts, (std::vector<std::int64_t>{0, 7, 14}));
  EXPECT_EQ(r.tokens_used, 21);
  EXPECT_EQ(r.tokens_dropped, 2);
  EXPECT_NEAR(r.brier[0], 7.0, 1e-12);
  o.max_blocks = 2;
  o.on_block = nullptr;
  const brierlm_result two = evaluate_brierlm(stream, o, [&](const std::vector<std::int32_t>&, const brier_draws&) {
    brier_accumulator a;
    a.add({1, 1, 1, 1});
    return a;
  });
  EXPECT_EQ(two.blocks.blocks(), 2);
  EXPECT_EQ(two.tokens_dropped, 9);
  o.block_size = 24;
  EXPECT_THROW(evaluate_brierlm(stream, o, [](const std::vector<std::int32_t>&, const brier_draws&) {
    return brier_accumulator{};
  }), muninn::error);
}

}  // namespace

}  // namespace test_brier
