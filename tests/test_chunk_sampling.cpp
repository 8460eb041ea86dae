// Tests of CALM's chunk temperature samplers (runtime/chunk_sampling.hpp): exact cases of the batch
// approximation (Algorithm 2) and of the exact sampler (Algorithm 1), their error messages, and
// statistical checks with fixed seeds (deterministic, so never flaky, yet able to fail).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "muninn/runtime/chunk_sampling.hpp"

namespace {

using muninn::chunk_candidate;
using muninn::chunk_choice;
using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const muninn::error& e) {
    return e.what();
  }
  return "(no error)";
}

// ---- helpers of the statistical tests

// The small discrete distribution P over 5 distinct chunks of K = 4 ids.
const std::vector<double> kP = {0.35, 0.25, 0.2, 0.12, 0.08};
constexpr std::int64_t kK = 4;
constexpr std::uint64_t kSeed = 20251031;

// Chunk of category c; the key order (by the first id, negative for c = 4) differs from c's order.
void write_chunk(int c, std::int32_t* ids) {
  static const std::int32_t first[5] = {7, 3, 11, 5, -2};
  ids[0] = first[c];
  ids[1] = 100 + c;
  ids[2] = -c;
  ids[3] = 42;
}
int category_of(const std::int32_t* ids) { return ids[1] - 100; }

// Draw j of position p: the kind-1 uniform of sample j mapped to a category by inverse CDF. A pure
// function of (p, j), as a head sample is.
struct discrete_source {
  std::uint64_t stream;
  std::vector<double> cdf;
  discrete_source(std::uint64_t seed, std::int64_t position, const std::vector<double>& p)
      : stream(muninn::stream_seed(seed, 1, std::uint64_t(position))) {
    double c = 0;
    for (double x : p) cdf.push_back(c += x);
  }
  int category(std::int64_t j) const {
    const double u = muninn::uniform01_at(stream, std::uint64_t(j));
    int c = 0;
    while (c + 1 < int(cdf.size()) && u >= cdf[std::size_t(c)]) ++c;
    return c;
  }
  void operator()(std::int64_t first, std::int64_t count, std::int32_t* ids) const {
    for (std::int64_t i = 0; i < count; ++i) write_chunk(category(first + i), ids + i * kK);
  }
};

std::vector<double> tempered(const std::vector<double>& p, double inv_t) {
  std::vector<double> q;
  double z = 0;
  for (double x : p) z += std::pow(x, inv_t);
  for (double x : p) q.push_back(std::pow(x, inv_t) / z);
  return q;
}

// Pearson's statistic of observed counts against probabilities.
double chi_square(const std::vector<double>& counts, const std::vector<double>& probs) {
  double total = 0, s = 0;
  for (double c : counts) total += c;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double e = total * probs[i];
    s += (counts[i] - e) * (counts[i] - e) / e;
  }
  return s;
}

// Critical value of chi-square with 4 degrees of freedom (5 categories) at p = 1e-4: the survival
// function is exp(-x/2) (1 + x/2) for 4 degrees of freedom, which is 1e-4 at x = 23.5127.
constexpr double kChi2Df4P1e4 = 23.5127;
// Two-sided normal quantile at p = 1e-4.
constexpr double kZ1e4 = 3.8906;

double total_variation(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::fabs(a[i] - b[i]);
  return 0.5 * s;
}

// ---- stream layout and temperatures

TEST(ChunkSampling, StreamUniformsFollowTheContract) {
  // Values from tools/reference/huginn_ref.py: (counter_bits(derive_seed(5, kind, 3), i, 0) >> 11) * 2**-53.
  EXPECT_EQ(muninn::chunk_choice_uniform(5, 3), 0.10980469414452199);
  EXPECT_EQ(muninn::chunk_bernoulli_uniform(5, 3, 0), 0.3940821391907928);
  EXPECT_EQ(muninn::chunk_bernoulli_uniform(5, 3, 7), 0.6243125201381519);
  EXPECT_EQ(muninn::chunk_choice_uniform(9, 4), muninn::uniform01_at(muninn::stream_seed(9, 2, 4), 0));
}

TEST(ChunkSampling, BinomialWeights) {
  EXPECT_EQ(muninn::chunk_binomial(5, 2), 10.0);
  EXPECT_EQ(muninn::chunk_binomial(4, 0), 1.0);
  EXPECT_EQ(muninn::chunk_binomial(4, 4), 1.0);
  EXPECT_EQ(muninn::chunk_binomial(3, 5), 0.0);
  EXPECT_EQ(muninn::chunk_binomial(3, -1), 0.0);
  EXPECT_EQ(muninn::chunk_binomial(52, 26), 495918532948104.0);  // below 2^53: exact
  EXPECT_EQ(muninn::chunk_binomial(200, 3), 1313400.0);
  // math.comb(200, 100) = 90548514656103281165404177077484163874504589675413336841320
  EXPECT_NEAR(muninn::chunk_binomial(200, 100) / 9.0548514656103281e58, 1.0, 1e-14);
  EXPECT_TRUE(std::isfinite(muninn::chunk_binomial(1029, 514)));  // 1.43e308
  EXPECT_TRUE(std::isinf(muninn::chunk_binomial(1030, 515)));
}

TEST(ChunkSampling, BatchTemperatureNeedsAReciprocalInteger) {
  EXPECT_EQ(muninn::batch_temperature_n(1.0), 1);
  EXPECT_EQ(muninn::batch_temperature_n(0.5), 2);
  EXPECT_EQ(muninn::batch_temperature_n(1.0 / 3), 3);
  EXPECT_EQ(muninn::batch_temperature_n(1.0 / 49), 49);  // 1/T is 49.00000000000001 in double
  EXPECT_EQ(muninn::batch_temperature_n(0.25 * (1 + 5e-10)), 4);
  EXPECT_THAT(error_of([] { muninn::batch_temperature_n(0.7); }),
              HasSubstr("temperature must be 1/n for an integer n, got T = 0.7 (1/T = 1.42857"));
  EXPECT_THAT(error_of([] { muninn::batch_temperature_n(0.25 * (1 + 1e-8)); }), HasSubstr("not an integer"));
  EXPECT_THAT(error_of([] { muninn::batch_temperature_n(0.0); }),
              HasSubstr("chunk batch sampling: temperature must be in (0, 1], got T = 0"));
  EXPECT_THAT(error_of([] { muninn::batch_temperature_n(1.5); }), HasSubstr("in (0, 1], got T = 1.5"));
  EXPECT_THAT(error_of([] { muninn::batch_temperature_n(-0.5); }), HasSubstr("got T = -0.5"));
  EXPECT_THAT(error_of([] { muninn::batch_temperature_n(std::nan("")); }), HasSubstr("got T = nan"));
}

TEST(ChunkSampling, ExactTemperatureSplit) {
  auto s = muninn::split_temperature(0.7);
  EXPECT_EQ(s.n, 1);
  EXPECT_EQ(s.alpha, 1.0 / 0.7 - 1.0);
  s = muninn::split_temperature(0.4);
  EXPECT_EQ(s.n, 2);
  EXPECT_EQ(s.alpha, 0.5);
  s = muninn::split_temperature(1.0 / 49);  // snapped: no fractional phase for 7e-15
  EXPECT_EQ(s.n, 49);
  EXPECT_EQ(s.alpha, 0.0);
  s = muninn::split_temperature(1.0);
  EXPECT_EQ(s.n, 1);
  EXPECT_EQ(s.alpha, 0.0);
  s = muninn::split_temperature(0.3);
  EXPECT_EQ(s.n, 3);
  EXPECT_NEAR(s.alpha, 1.0 / 3, 1e-15);
  EXPECT_THAT(error_of([] { muninn::split_temperature(0.0); }),
              HasSubstr("chunk exact sampling: temperature must be in (0, 1], got T = 0"));
  EXPECT_THAT(error_of([] { muninn::split_temperature(1.25); }), HasSubstr("got T = 1.25"));
}

// ---- the batch approximation, exact cases

// Rows of K = 2 ids built from a list of chunks.
std::vector<std::int32_t> row_of(const std::vector<std::vector<std::int32_t>>& chunks) {
  std::vector<std::int32_t> r;
  for (const auto& c : chunks) r.insert(r.end(), c.begin(), c.end());
  return r;
}

TEST(ChunkBatch, CandidatesAreWeighedByBinomialsInKeyOrder) {
  // B = [2, 0] x3 (samples 1, 3, 5), A = [1, 9] x2 (samples 2, 4), C = [2, -1] x1 (sample 0).
  const auto row = row_of({{2, -1}, {2, 0}, {1, 9}, {2, 0}, {1, 9}, {2, 0}});
  std::vector<chunk_candidate> c;
  EXPECT_EQ(muninn::chunk_candidates(row.data(), 6, 2, 2, c), 2);
  ASSERT_EQ(c.size(), 3u);
  // key order: [1, 9] < [2, -1] < [2, 0]
  EXPECT_EQ(c[0].sample, 2);
  EXPECT_EQ(c[0].count, 2);
  EXPECT_EQ(c[0].weight, 1.0);  // C(2, 2)
  EXPECT_EQ(c[1].sample, 0);
  EXPECT_EQ(c[1].count, 1);
  EXPECT_EQ(c[1].weight, 0.0);  // count < m: no candidate
  EXPECT_EQ(c[2].sample, 1);
  EXPECT_EQ(c[2].count, 3);
  EXPECT_EQ(c[2].weight, 3.0);  // C(3, 2)
  // n = 3: C(3, 3) = 1 for B alone.
  EXPECT_EQ(muninn::chunk_candidates(row.data(), 6, 2, 3, c), 3);
  EXPECT_EQ(c[2].weight, 1.0);
  EXPECT_EQ(c[0].weight, 0.0);
}

TEST(ChunkBatch, LevelFallsBackFromNToTheLargestCount) {
  std::vector<chunk_candidate> c;
  const auto distinct = row_of({{4, 4}, {3, 3}, {2, 2}, {1, 1}});
  EXPECT_EQ(muninn::chunk_candidates(distinct.data(), 4, 2, 3, c), 1);  // n = 3 → 2 → 1
  for (const auto& x : c) EXPECT_EQ(x.weight, 1.0);
  const auto pairs = row_of({{4, 4}, {3, 3}, {4, 4}, {1, 1}, {3, 3}});
  EXPECT_EQ(muninn::chunk_candidates(pairs.data(), 5, 2, 4, c), 2);  // n = 4 → 3 → 2
  chunk_choice ch = muninn::choose_chunk(pairs.data(), 5, 2, 0.25, 0.0);
  EXPECT_EQ(ch.m, 2);
  EXPECT_EQ(ch.count, 2);
  EXPECT_EQ(ch.sample, 1);  // [3, 3] sorts before [4, 4]
}

TEST(ChunkBatch, KeysSortLexicographicallyOnSignedIds) {
  // [1, 0] [0, 5] [-1, 7] [0, -2] → order [-1, 7], [0, -2], [0, 5], [1, 0].
  const auto row = row_of({{1, 0}, {0, 5}, {-1, 7}, {0, -2}});
  std::vector<chunk_candidate> c;
  EXPECT_EQ(muninn::chunk_candidates(row.data(), 4, 2, 2, c), 1);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].sample, 2);
  EXPECT_EQ(c[1].sample, 3);
  EXPECT_EQ(c[2].sample, 1);
  EXPECT_EQ(c[3].sample, 0);
  // v · W = v · 4 against running sums 1, 2, 3, 4.
  const std::int32_t want[4] = {2, 3, 1, 0};
  for (int q = 0; q < 4; ++q) {
    std::int32_t ids[2];
    const double v = 0.25 * q + 0.1;
    EXPECT_EQ(muninn::choose_chunk(row.data(), 4, 2, 0.5, v, ids).sample, want[q]) << "v " << v;
    EXPECT_EQ(ids[0], row[std::size_t(2 * want[q])]);
    EXPECT_EQ(ids[1], row[std::size_t(2 * want[q] + 1)]);
  }
}

TEST(ChunkBatch, ChoiceRuleAgainstHandComputedCumulativeWeights) {
  // n = 2; key order A=[0,0] x4 (C(4,2) = 6), B=[0,1] x1 (no candidate), C=[5,5] x3 (3), D=[6,0] x2 (1).
  // W = 10, cumulative 6, 9, 10: pick A when v·10 < 6, C when < 9, else D.
  const auto row = row_of({{6, 0}, {5, 5}, {0, 0}, {0, 1}, {0, 0}, {5, 5}, {0, 0}, {6, 0}, {5, 5}, {0, 0}});
  struct { double v; std::int32_t sample, count; } cases[] = {
      {0.0, 2, 4},  {0.5999, 2, 4}, {0.6, 1, 3}, {0.75, 1, 3},
      {0.8999, 1, 3}, {0.9, 0, 2},  {0.99999, 0, 2}, {std::nextafter(1.0, 0.0), 0, 2},
  };
  for (const auto& c : cases) {
    const chunk_choice ch = muninn::choose_chunk(row.data(), 10, 2, 0.5, c.v);
    EXPECT_EQ(ch.sample, c.sample) << "v " << c.v;
    EXPECT_EQ(ch.count, c.count) << "v " << c.v;
    EXPECT_EQ(ch.m, 2);
  }
  // n = 3: A weighs C(4,3) = 4, C weighs 1: A when v·5 < 4.
  EXPECT_EQ(muninn::choose_chunk(row.data(), 10, 2, 1.0 / 3, 0.79).sample, 2);
  EXPECT_EQ(muninn::choose_chunk(row.data(), 10, 2, 1.0 / 3, 0.8).sample, 1);
}

// An independent oracle: std::map orders vector keys lexicographically, Pascal's triangle gives
// the binomials, and the pick walks the cumulative weights as the contract states.
chunk_choice oracle_choice(const std::vector<std::int32_t>& row, std::int64_t k, std::int64_t n, double v) {
  std::map<std::vector<std::int32_t>, std::pair<std::int32_t, std::int32_t>> runs;  // key → (count, first)
  for (std::size_t i = 0; i * std::size_t(k) < row.size(); ++i) {
    const std::vector<std::int32_t> key(row.begin() + std::ptrdiff_t(i * std::size_t(k)),
                                        row.begin() + std::ptrdiff_t((i + 1) * std::size_t(k)));
    auto it = runs.find(key);
    if (it == runs.end()) runs[key] = {1, std::int32_t(i)};
    else ++it->second.first;
  }
  std::vector<std::vector<double>> pascal(65, std::vector<double>(65, 0.0));
  for (int a = 0; a <= 64; ++a) {
    pascal[std::size_t(a)][0] = 1;
    for (int b = 1; b <= a; ++b)
      pascal[std::size_t(a)][std::size_t(b)] = pascal[std::size_t(a - 1)][std::size_t(b - 1)] +
                                               (b < a ? pascal[std::size_t(a - 1)][std::size_t(b)] : 0.0);
  }
  std::int32_t max_count = 0;
  for (const auto& r : runs) max_count = std::max(max_count, r.second.first);
  const std::int32_t m = std::int32_t(std::min<std::int64_t>(n, max_count));
  double w = 0;
  for (const auto& r : runs)
    if (r.second.first >= m) w += pascal[std::size_t(r.second.first)][std::size_t(m)];
  double cum = 0;
  for (const auto& r : runs) {
    if (r.second.first < m) continue;
    cum += pascal[std::size_t(r.second.first)][std::size_t(m)];
    if (v * w < cum) return {r.second.second, m, r.second.first};
  }
  return {-1, -1, -1};
}

TEST(ChunkBatch, MatchesABruteForceOracleOnRandomRows) {
  int rows = 0;
  for (std::int64_t k : {1, 2, 4, 5}) {
    for (std::int64_t samples : {1, 2, 9, 40, 64}) {
      for (std::int32_t alphabet : {2, 3, 50}) {
        for (std::int64_t n : {2, 3, 5}) {
          const std::uint64_t stream = muninn::stream_seed(kSeed, 100 + std::uint64_t(k), std::uint64_t(rows));
          std::vector<std::int32_t> row(std::size_t(samples * k));
          for (std::size_t i = 0; i < row.size(); ++i)
            row[i] = std::int32_t(muninn::uniform01_at(stream, i) * alphabet) - alphabet / 2;
          const double v = muninn::uniform01_at(stream, 1u << 20);
          const chunk_choice want = oracle_choice(row, k, n, v);
          const chunk_choice got = muninn::choose_chunk(row.data(), samples, k, 1.0 / double(n), v);
          EXPECT_EQ(got.sample, want.sample) << "row " << rows;
          EXPECT_EQ(got.m, want.m) << "row " << rows;
          EXPECT_EQ(got.count, want.count) << "row " << rows;
          ++rows;
        }
      }
    }
  }
}

TEST(ChunkBatch, TemperatureOneTakesSampleZero) {
  const auto row = row_of({{3, 3}, {1, 1}, {1, 1}, {3, 3}, {1, 1}});
  for (double v : {0.0, 0.5, 0.99}) {
    std::int32_t ids[2] = {-9, -9};
    const chunk_choice ch = muninn::choose_chunk(row.data(), 5, 2, 1.0, v, ids);
    EXPECT_EQ(ch.sample, 0);
    EXPECT_EQ(ch.m, 1);
    EXPECT_EQ(ch.count, 2);
    EXPECT_EQ(ids[0], 3);
  }
  // 1/T within relative 1e-9 of 1 but T != 1: the reference weighs the N samples by count (m = 1).
  const chunk_choice ch = muninn::choose_chunk(row.data(), 5, 2, 1.0 - 1e-12, 0.0);
  EXPECT_EQ(ch.sample, 1);  // [1, 1] sorts first, count 3
  EXPECT_EQ(ch.count, 3);
}

TEST(ChunkBatch, BatchedRowsUseTheirPositionsStream) {
  constexpr std::int64_t rows = 37, n_samples = 50;
  std::vector<std::int32_t> chunks(std::size_t(rows * n_samples * kK));
  std::vector<std::int64_t> positions;
  for (std::int64_t r = 0; r < rows; ++r) {
    positions.push_back(1000 + 3 * r);
    discrete_source(kSeed, r, kP)(0, n_samples, chunks.data() + r * n_samples * kK);
  }
  for (double t : {1.0, 0.5, 0.25}) {
    std::vector<std::int32_t> out(std::size_t(rows * kK));
    std::vector<chunk_choice> choices(static_cast<std::size_t>(rows));
    muninn::choose_chunks(muninn::host_backend{}, chunks.data(), rows, n_samples, kK, t, 77, positions.data(),
                          out.data(), choices.data());
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int32_t ids[kK];
      const chunk_choice want = muninn::choose_chunk(chunks.data() + r * n_samples * kK, n_samples, kK, t,
                                                     muninn::chunk_choice_uniform(77, positions[std::size_t(r)]), ids);
      EXPECT_EQ(choices[std::size_t(r)].sample, want.sample) << "row " << r << " T " << t;
      EXPECT_EQ(choices[std::size_t(r)].m, want.m);
      EXPECT_EQ(choices[std::size_t(r)].count, want.count);
      for (int q = 0; q < kK; ++q) EXPECT_EQ(out[std::size_t(r * kK + q)], ids[q]);
    }
  }
}

// Python's `random.choices(candidates, weights, k=1)` given its uniform u, written from its documented
// semantics: the candidates in first-appearance order (a Counter's), integer weights C(count, m),
// exact integer running sums, x = u * float(total), and bisect_right over the running sums with the
// last index as the upper bound. Integers stay below 2^53 here, so comparing them as doubles is exact.
chunk_choice python_choices_oracle(const std::vector<std::int32_t>& row, std::int64_t k, std::int64_t n, double u) {
  std::vector<std::vector<std::int32_t>> keys;
  std::vector<std::int32_t> counts, firsts;
  for (std::size_t i = 0; i * std::size_t(k) < row.size(); ++i) {
    const std::vector<std::int32_t> key(row.begin() + std::ptrdiff_t(i * std::size_t(k)),
                                        row.begin() + std::ptrdiff_t((i + 1) * std::size_t(k)));
    const auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      counts.push_back(1);
      firsts.push_back(std::int32_t(i));
    } else {
      ++counts[std::size_t(it - keys.begin())];
    }
  }
  const auto comb = [](std::uint64_t a, std::uint64_t b) {  // exact: a <= 64 here
    std::uint64_t r = 1;
    for (std::uint64_t i = 1; i <= b; ++i) r = r * (a - b + i) / i;
    return r;
  };
  for (std::int64_t m = n; m >= 1; --m) {
    std::vector<std::size_t> cand;
    std::vector<std::uint64_t> cum;
    for (std::size_t c = 0; c < counts.size(); ++c)
      if (counts[c] >= m) {
        cand.push_back(c);
        cum.push_back((cum.empty() ? 0 : cum.back()) + comb(std::uint64_t(counts[c]), std::uint64_t(m)));
      }
    if (cand.empty()) continue;
    const double x = u * double(cum.back());
    std::size_t lo = 0, hi = cand.size() - 1;  // bisect_right(cum, x, 0, len - 1)
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (x < double(cum[mid])) hi = mid;
      else lo = mid + 1;
    }
    const std::size_t c = cand[lo];
    return {firsts[c], std::int32_t(m), counts[c]};
  }
  return {-1, -1, -1};
}

TEST(ChunkBatch, SlotsFollowTheOrder) {
  EXPECT_EQ(muninn::chunk_slot(muninn::chunk_order::key, 5, 9), 5);
  EXPECT_EQ(muninn::chunk_slot(muninn::chunk_order::reference, 5, 9), 9);
}

// Counts 5:2, 3:3, 7:2 at T = 1/2 (m = 2): reference order [5, 3, 7] weighs [1, 3, 1], key order
// [3, 5, 7] weighs [3, 1, 1]; W = 5. The same uniform picks another chunk in each order.
TEST(ChunkBatch, ReferenceOrderListsCandidatesByFirstAppearance) {
  const std::vector<std::int32_t> row = {5, 3, 5, 3, 3, 7, 7};
  std::vector<chunk_candidate> c;
  EXPECT_EQ(muninn::chunk_candidates(row.data(), 7, 1, 2, c, muninn::chunk_order::reference), 2);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].sample, 0);
  EXPECT_EQ(c[1].sample, 1);
  EXPECT_EQ(c[2].sample, 5);
  EXPECT_EQ(c[1].weight, 3.0);
  const auto pick = [&](double v, muninn::chunk_order o) {
    std::int32_t id = -1;
    muninn::choose_chunk(row.data(), 7, 1, 0.5, v, &id, o);
    return id;
  };
  EXPECT_EQ(pick(0.1, muninn::chunk_order::reference), 5);  // v·W = 0.5 < 1
  EXPECT_EQ(pick(0.1, muninn::chunk_order::key), 3);        // 0.5 < 3
  EXPECT_EQ(pick(0.7, muninn::chunk_order::reference), 3);  // 3.5 < 4
  EXPECT_EQ(pick(0.7, muninn::chunk_order::key), 5);        // 3.5 < 4
  EXPECT_EQ(pick(0.8, muninn::chunk_order::reference), 7);  // 4.0 < 5 (bisect_right: 4 is not < 4)
  EXPECT_EQ(pick(0.8, muninn::chunk_order::key), 7);
}

TEST(ChunkBatch, ReferenceOrderMatchesPythonChoicesOnRandomRows) {
  int rows = 0, differ = 0;
  for (std::int64_t k : {1, 2, 4}) {
    for (std::int64_t samples : {1, 2, 9, 40, 64}) {
      for (std::int32_t alphabet : {2, 3, 50}) {
        for (std::int64_t n : {2, 3, 5}) {
          const std::uint64_t stream = muninn::stream_seed(kSeed, 200 + std::uint64_t(k), std::uint64_t(rows));
          std::vector<std::int32_t> row(std::size_t(samples * k));
          for (std::size_t i = 0; i < row.size(); ++i)
            row[i] = std::int32_t(muninn::uniform01_at(stream, i) * alphabet) - alphabet / 2;
          const double u = muninn::uniform01_at(stream, 1u << 20);
          const chunk_choice want = python_choices_oracle(row, k, n, u);
          const chunk_choice got =
              muninn::choose_chunk(row.data(), samples, k, 1.0 / double(n), u, nullptr, muninn::chunk_order::reference);
          EXPECT_EQ(got.sample, want.sample) << "row " << rows;
          EXPECT_EQ(got.m, want.m) << "row " << rows;
          EXPECT_EQ(got.count, want.count) << "row " << rows;
          const chunk_choice key = muninn::choose_chunk(row.data(), samples, k, 1.0 / double(n), u);
          differ += key.sample != got.sample;
          ++rows;
        }
      }
    }
  }
  EXPECT_GT(differ, 10) << "the two orders should pick differently on many of " << rows << " rows";
}

TEST(ChunkBatch, BatchedRowsTakeGivenUniformsAndOrder) {
  const std::vector<std::int32_t> rows = {5, 3, 5, 3, 3, 7, 7, /* row 1 */ 5, 3, 5, 3, 3, 7, 7};
  const std::vector<std::int64_t> positions = {0, 1};
  const std::vector<double> uniforms = {0.1, 0.7};
  std::vector<std::int32_t> out(2);
  muninn::chunk_choice_options opt;
  opt.order = muninn::chunk_order::reference;
  opt.uniforms = uniforms.data();
  muninn::choose_chunks(muninn::host_backend{}, rows.data(), 2, 7, 1, 0.5, 1, positions.data(), out.data(), nullptr,
                        opt);
  EXPECT_EQ(out, (std::vector<std::int32_t>{5, 3}));
  const std::vector<double> bad = {0.5, 1.0};
  opt.uniforms = bad.data();
  EXPECT_THAT(error_of([&] {
                muninn::choose_chunks(muninn::host_backend{}, rows.data(), 2, 7, 1, 0.5, 1, positions.data(),
                                      out.data(), nullptr, opt);
              }),
              HasSubstr("choose_chunks: choice uniform 1 must lie in [0, 1), got 1"));
}

TEST(ChunkBatch, ErrorsNameTheBadValue) {
  const auto row = row_of({{1, 1}, {2, 2}});
  EXPECT_THAT(error_of([&] { muninn::choose_chunk(row.data(), 2, 2, 0.7, 0.5); }),
              HasSubstr("temperature must be 1/n for an integer n, got T = 0.7"));
  EXPECT_THAT(error_of([&] { muninn::choose_chunk(row.data(), 2, 2, 0.5, 1.0); }),
              HasSubstr("choose_chunk: the choice uniform must lie in [0, 1), got 1"));
  EXPECT_THAT(error_of([&] { muninn::choose_chunk(row.data(), 0, 2, 0.5, 0.5); }),
              HasSubstr("choose_chunk: bad shape rows = 1, samples = 0, k = 2"));
  std::vector<std::int32_t> big(2000, 0);
  EXPECT_THAT(error_of([&] { muninn::choose_chunk(big.data(), 2000, 1, 1.0 / 1000, 0.5); }),
              HasSubstr("the weights C(count, m) overflow double for samples = 2000 at n = 1000"));
  // The same shape at n = 10 is fine: every row holds one chunk 2000 times.
  EXPECT_EQ(muninn::choose_chunk(big.data(), 2000, 1, 0.1, 0.5).count, 2000);
}

// ---- the exact sampler, exact cases

// A source that replays a script of category ids (chunks [c, c]) and records the ranges asked for.
struct scripted_source {
  std::vector<std::int32_t> script;
  std::vector<std::pair<std::int64_t, std::int64_t>>* calls = nullptr;
  void operator()(std::int64_t first, std::int64_t count, std::int32_t* ids) const {
    if (calls) calls->push_back({first, count});
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t j = first + i;
      const std::int32_t c = j < std::int64_t(script.size()) ? script[std::size_t(j)] : std::int32_t(1000 + j);
      ids[2 * i] = c;
      ids[2 * i + 1] = c;
    }
  }
};

TEST(ChunkExact, TemperatureOneReturnsDrawZero) {
  scripted_source src{{5, 6, 7}};
  std::int32_t out[2];
  const auto st = muninn::sample_chunk_exact(src, 2, 1.0, 1, 0, out);
  EXPECT_EQ(out[0], 5);
  EXPECT_EQ(st.sample, 0);
  EXPECT_EQ(st.draws, 1);
  EXPECT_EQ(st.bernoulli, 0);
  EXPECT_EQ(st.rounds, 1);
}

TEST(ChunkExact, IntegerInverseTemperatureWaitsForNEqualDraws) {
  // T = 1/3: rounds (1,1,2) (3,3,3): round 1 fails at its third draw.
  scripted_source src{{1, 1, 2, 3, 3, 3, 9}};
  std::int32_t out[2];
  const auto st = muninn::sample_chunk_exact(src, 2, 1.0 / 3, 1, 0, out);
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(st.sample, 3);
  EXPECT_EQ(st.draws, 6);
  EXPECT_EQ(st.rounds, 2);
  EXPECT_EQ(st.bernoulli, 0);
  // A round ends at its first mismatch, so the next round starts right after it: (1,2) (1,1,1).
  scripted_source src2{{1, 2, 1, 1, 1, 4}};
  const auto st2 = muninn::sample_chunk_exact(src2, 2, 1.0 / 3, 1, 0, out);
  EXPECT_EQ(st2.sample, 2);
  EXPECT_EQ(st2.draws, 5);
  EXPECT_EQ(out[0], 1);
}

TEST(ChunkExact, FractionalPhaseFollowsTheBernoulliStream) {
  // T = 0.7: n = 1, alpha = 3/7. Seed 4, position 0: u0 = 0.7238 >= alpha / 1, u1 = 0.0788 < alpha / 2.
  const double alpha = 1.0 / 0.7 - 1.0;
  ASSERT_GE(muninn::chunk_bernoulli_uniform(4, 0, 0), alpha);
  ASSERT_LT(muninn::chunk_bernoulli_uniform(4, 0, 1), alpha / 2);
  // Round 1: x* = 10 (draw 0); draw 1 = 11 ≠ x*, u0 keeps going; draw 2 = 12 ≠ x*, u1 restarts.
  // Round 2: x* = 13 (draw 3); draw 4 = 13 accepts.
  scripted_source src{{10, 11, 12, 13, 13}};
  std::int32_t out[2];
  const auto st = muninn::sample_chunk_exact(src, 2, 0.7, 4, 0, out);
  EXPECT_EQ(out[0], 13);
  EXPECT_EQ(st.sample, 3);
  EXPECT_EQ(st.draws, 5);
  EXPECT_EQ(st.bernoulli, 2);
  EXPECT_EQ(st.rounds, 2);
}

TEST(ChunkExact, ResultDoesNotDependOnTheBatchSize) {
  for (double t : {0.5, 1.0 / 3, 0.7, 0.45, 1.0}) {
    for (std::int64_t position = 0; position < 40; ++position) {
      discrete_source src(kSeed, position, kP);
      std::int32_t want[kK];
      muninn::exact_chunk_options o;
      o.batch = 1;
      const auto ref = muninn::sample_chunk_exact(src, kK, t, kSeed, position, want, o);
      EXPECT_EQ(ref.produced, ref.draws);
      for (std::int64_t batch : {2, 3, 7, 16, 1000}) {
        std::vector<std::pair<std::int64_t, std::int64_t>> calls;
        auto recording = [&](std::int64_t first, std::int64_t count, std::int32_t* ids) {
          calls.push_back({first, count});
          src(first, count, ids);
        };
        o.batch = batch;
        std::int32_t got[kK];
        const auto st = muninn::sample_chunk_exact(recording, kK, t, kSeed, position, got, o);
        EXPECT_EQ(st.sample, ref.sample) << "T " << t << " position " << position << " batch " << batch;
        EXPECT_EQ(st.draws, ref.draws);
        EXPECT_EQ(st.bernoulli, ref.bernoulli);
        EXPECT_EQ(st.rounds, ref.rounds);
        for (int q = 0; q < kK; ++q) EXPECT_EQ(got[q], want[q]);
        // Consecutive ranges from 0, batch draws each, the last ending past the accepted draw.
        std::int64_t next = 0;
        for (const auto& c : calls) {
          EXPECT_EQ(c.first, next);
          EXPECT_EQ(c.second, batch);
          next += c.second;
        }
        EXPECT_EQ(next, st.produced);
        EXPECT_GE(st.produced, st.draws);
        EXPECT_LT(st.produced - st.draws, batch);
      }
    }
  }
}

TEST(ChunkExact, DrawBoundIsOneClearError) {
  // Every draw distinct: no round ever has two equal draws at T = 1/2.
  std::int64_t requested = 0;
  auto never_equal = [&](std::int64_t first, std::int64_t count, std::int32_t* ids) {
    requested = std::max(requested, first + count);
    for (std::int64_t i = 0; i < count; ++i) ids[i] = std::int32_t(first + i);
  };
  muninn::exact_chunk_options o;
  o.max_draws = 1000;
  o.batch = 64;  // does not divide 1000: the last request is cut to the bound
  std::int32_t out[1];
  EXPECT_EQ(error_of([&] { muninn::sample_chunk_exact(never_equal, 1, 0.5, 1, 0, out, o); }),
            "sample_chunk_exact: no chunk accepted at temperature T = 0.5 within the bound max_draws = 1000 "
            "(1000 chunk draws used, none accepted); raise exact_chunk_options::max_draws or the temperature");
  EXPECT_EQ(requested, 1000);
  // Fractional T: the Bernoulli phase stops at the bound as well.
  EXPECT_THAT(error_of([&] { muninn::sample_chunk_exact(never_equal, 1, 0.7, 1, 0, out, o); }),
              HasSubstr("T = 0.7 within the bound max_draws = 1000 (1000 chunk draws used"));
  // The default bound is 2^20.
  EXPECT_EQ(muninn::exact_chunk_options{}.max_draws, 1 << 20);
}

TEST(ChunkExact, BadArgumentsAreErrors) {
  scripted_source src{{1}};
  std::int32_t out[2];
  EXPECT_THAT(error_of([&] { muninn::sample_chunk_exact(src, 2, 0.0, 1, 0, out); }),
              HasSubstr("temperature must be in (0, 1], got T = 0"));
  EXPECT_THAT(error_of([&] { muninn::sample_chunk_exact(src, 2, 1.1, 1, 0, out); }), HasSubstr("got T = 1.1"));
  muninn::exact_chunk_options o;
  o.batch = 0;
  EXPECT_THAT(error_of([&] { muninn::sample_chunk_exact(src, 2, 0.5, 1, 0, out, o); }),
              HasSubstr("sample_chunk_exact: bad arguments k = 2, batch = 0"));
}

// ---- statistics (fixed seeds: deterministic)

// Expected chunk draws per exact sample: (1 + Σ_x Σ_{t=1..n-1} P^t + [alpha > 0] Σ P^{1/T-1}) / Σ P^{1/T}
// (a round stops at its first mismatching draw: given x*, draw t + 1 is taken with probability
// P(x*)^{t-1}); the expected Bernoulli uniforms per sample:
// [alpha > 0] (Σ P^{1/T-1} / Σ P^{1/T} − 1).
double expected_draws(const std::vector<double>& p, double t) {
  const auto s = muninn::split_temperature(t);
  double z = 0, extra = 0, first_stage = 1;
  for (double x : p) {
    z += std::pow(x, 1 / t);
    extra += std::pow(x, 1 / t - 1);
    for (std::int64_t k = 1; k < s.n; ++k) first_stage += std::pow(x, double(k));
  }
  return (first_stage + (s.alpha > 0 ? extra : 0.0)) / z;
}
double expected_bernoulli(const std::vector<double>& p, double t) {
  if (muninn::split_temperature(t).alpha == 0) return 0;
  double z = 0, extra = 0;
  for (double x : p) {
    z += std::pow(x, 1 / t);
    extra += std::pow(x, 1 / t - 1);
  }
  return extra / z - 1;
}

struct mean_sd {
  double mean, sd;
};
mean_sd moments(const std::vector<double>& x) {
  double s = 0, s2 = 0;
  for (double v : x) s += v;
  const double m = s / double(x.size());
  for (double v : x) s2 += (v - m) * (v - m);
  return {m, std::sqrt(s2 / double(x.size() - 1))};
}

// 20000 exact samples at each T, sample s at position s: frequencies against P^{1/T}/Z (chi-square,
// 4 degrees of freedom, critical value at p = 1e-4), mean draws and Bernoulli uniforms against the
// theory (|mean − E| < 3.89 standard errors, p = 1e-4 two-sided). Power: the frequencies reject
// the target of the wrong exponent by far.
TEST(ChunkStatistics, ExactSamplerMatchesTemperedDistributionAndCost) {
  constexpr int samples = 20000;
  for (double t : {0.5, 1.0 / 3, 0.7}) {
    std::vector<double> counts(kP.size(), 0.0), draws, bern;
    for (int s = 0; s < samples; ++s) {
      discrete_source src(kSeed, s, kP);
      std::int32_t out[kK];
      muninn::exact_chunk_options o;
      o.batch = 8;
      const auto st = muninn::sample_chunk_exact(src, kK, t, kSeed, s, out, o);
      counts[std::size_t(category_of(out))] += 1;
      draws.push_back(double(st.draws));
      bern.push_back(double(st.bernoulli));
    }
    const double chi2 = chi_square(counts, tempered(kP, 1 / t));
    const auto s = muninn::split_temperature(t);
    const double chi2_wrong = chi_square(counts, tempered(kP, t == 0.7 ? double(s.n) : 1 / t - 1));
    const mean_sd d = moments(draws), b = moments(bern);
    const double e_draws = expected_draws(kP, t), e_bern = expected_bernoulli(kP, t);
    std::printf("exact T=%.4f: chi2 %.2f (bound %.2f; wrong exponent %.0f), draws/sample %.3f (theory %.3f, "
                "se %.3f), bernoulli/sample %.4f (theory %.4f)\n",
                t, chi2, kChi2Df4P1e4, chi2_wrong, d.mean, e_draws, d.sd / std::sqrt(double(samples)), b.mean, e_bern);
    EXPECT_LT(chi2, kChi2Df4P1e4) << "T " << t;
    EXPECT_GT(chi2_wrong, 10 * kChi2Df4P1e4) << "T " << t;
    EXPECT_LT(std::fabs(d.mean - e_draws), kZ1e4 * d.sd / std::sqrt(double(samples))) << "T " << t;
    if (s.alpha > 0) {
      EXPECT_LT(std::fabs(b.mean - e_bern), kZ1e4 * b.sd / std::sqrt(double(samples))) << "T " << t;
    } else {
      EXPECT_EQ(b.mean, 0.0);
    }
  }
}

// The batch approximation over 20000 rows per N: its distribution given a row's counts is
// weight / Σ weight (chunk_candidates), averaged over the rows (a low-noise estimate of what
// Algorithm 2 outputs); its total-variation distance to P^{1/T}/Z must fall with N, by at least
// 0.6× per 4× more samples. The chunks actually chosen with the kind-2 uniforms must follow those
// averaged weights (chi-square, 4 degrees of freedom, p = 1e-4).
TEST(ChunkStatistics, BatchApproximationBiasShrinksWithSamples) {
  constexpr std::int64_t rows = 20000;
  const std::int64_t sizes[] = {4, 16, 64, 256};
  for (double t : {0.5, 1.0 / 3}) {
    const auto target = tempered(kP, 1 / t);
    const std::int64_t n = muninn::batch_temperature_n(t);
    double previous = 1.0;
    for (std::int64_t big_n : sizes) {
      constexpr std::int64_t block = 500;  // rows per choose_chunks call (bounds the memory)
      std::vector<std::int32_t> chunks(std::size_t(block * big_n * kK)), out(std::size_t(block * kK));
      std::vector<std::int64_t> positions(static_cast<std::size_t>(block));
      std::vector<double> mean_probs(kP.size(), 0.0), chosen(kP.size(), 0.0);
      std::vector<chunk_candidate> cand;
      for (std::int64_t r0 = 0; r0 < rows; r0 += block) {
        for (std::int64_t i = 0; i < block; ++i) {
          const std::int64_t r = r0 + i;
          positions[std::size_t(i)] = r;
          std::int32_t* row = chunks.data() + i * big_n * kK;
          discrete_source(kSeed + std::uint64_t(big_n), r, kP)(0, big_n, row);
          muninn::chunk_candidates(row, big_n, kK, n, cand);
          double w = 0;
          for (const auto& c : cand) w += c.weight;
          for (const auto& c : cand) mean_probs[std::size_t(category_of(row + c.sample * kK))] += c.weight / w / rows;
        }
        muninn::choose_chunks(muninn::host_backend{}, chunks.data(), block, big_n, kK, t, kSeed, positions.data(),
                              out.data());
        for (std::int64_t i = 0; i < block; ++i) chosen[std::size_t(category_of(out.data() + i * kK))] += 1;
      }
      const double tv = total_variation(mean_probs, target);
      const double chi2 = chi_square(chosen, mean_probs);
      std::printf("batch T=%.4f N=%3lld: TV to P^(1/T)/Z %.4f, chi2 of the choices %.2f (bound %.2f)\n", t,
                  static_cast<long long>(big_n), tv, chi2, kChi2Df4P1e4);
      EXPECT_LT(tv, 0.6 * previous) << "T " << t << " N " << big_n;
      EXPECT_LT(chi2, kChi2Df4P1e4) << "T " << t << " N " << big_n;
      previous = tv;
    }
    EXPECT_LT(previous, 0.02) << "T " << t << ": TV at N = 256";
  }
}

}  // namespace
