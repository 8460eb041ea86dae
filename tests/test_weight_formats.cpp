// Weights stored as bf16 and q8: the q8 block format's guarantees, host_weight's conversions and
// errors, and gemm_nt on such weights against the double-precision reference GEMM run on the very
// weights the kernel reads (widened exactly), on every instruction-set path this CPU has
// (generic, AVX2, AVX-512: set_host_isa_limit), at several thread counts.
// Tolerance: as for fp32 GEMM, |C - ref| <= 1e-5 · Σ|alpha·a·b| + |beta·c| (fp32 summation error).
// q8 decode (M <= 8, not batch-invariant) quantizes each activation row to int8 per block of 32
// first (q8_quantize_activations): there the reference is the double-precision loop over those
// quantized rows, within the fp32 sum over blocks' error, and within the activations' rounding
// (half a step per element) of the fp32-activation reference. For 2 <= M <= 8 each row must
// also be bitwise the row decoded alone (M = 1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "muninn/ops/gemm_weight.hpp"
#include "muninn/ops/reference/gemm.hpp"
#include "test_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_weight_formats {

namespace {

using muninn::host_backend;
using muninn::weight_format;
using i64 = std::int64_t;
using muninn_test::random_vec;

// ------------------------------------------------------------------------------ the q8 block

TEST(Q8Block, ScaleIsTheSmallestBf16AtLeastAmaxOver127AndErrorsAreHalfAStep) {
  std::vector<std::vector<float>> blocks;
  for (std::uint32_t seed = 1; seed <= 200; ++seed) blocks.push_back(random_vec(32, seed, -0.2f, 0.2f));
  blocks.push_back(std::vector<float>(32, 0.0f));
  blocks.push_back(random_vec(32, 999, -1e-30f, 1e-30f));  // would underflow an fp16 scale
  blocks.push_back(random_vec(32, 998, -3e30f, 3e30f));
  std::vector<float> one_big(32, 1e-3f);
  one_big[5] = -7.0f;
  blocks.push_back(one_big);
  for (const auto& x : blocks) {
    std::int8_t q[32];
    const float d = muninn::to_float(muninn::q8_quantize_block(x.data(), 32, q));
    double amax = 0;
    for (float v : x) amax = std::max(amax, std::fabs(double(v)));
    ASSERT_GE(double(d), amax / 127.0);
    ASSERT_LE(double(d), amax / 127.0 * (1.0 + 1.0 / 128.0) + 1e-45);
    for (int i = 0; i < 32; ++i) {
      ASSERT_GE(q[i], -127);
      ASSERT_LE(q[i], 127);
      ASSERT_LE(std::fabs(double(x[std::size_t(i)]) - double(q[i]) * d), 0.5 * double(d) * (1 + 1e-6))
          << "element " << i << " of a block with amax " << amax;
    }
  }
}

TEST(Q8Block, APartialBlockIsPaddedWithZeros) {
  const auto x = random_vec(32, 5);
  std::int8_t q[32];
  std::memset(q, 99, sizeof(q));
  muninn::q8_quantize_block(x.data(), 13, q);
  for (int i = 13; i < 32; ++i) EXPECT_EQ(q[i], 0) << i;
}

TEST(Q8Block, Bf16RoundUp) {
  for (float x : {1.0f, 1.0000001f, 3.14159f, 1e-30f, 7.5e20f, 0.0f}) {
    const float up = muninn::to_float(muninn::bf16_round_up(x));
    EXPECT_GE(up, x);
    // The bf16 just below is below x: up is the smallest.
    const muninn::bf16 below{std::uint16_t(muninn::bf16_round_up(x).bits - 1)};
    if (x > 0) {
      EXPECT_LT(muninn::to_float(below), x) << x;
    }
  }
}

// ------------------------------------------------------------------------------ host_weight

TEST(HostWeight, FormatsNamesAndErrors) {
  EXPECT_EQ(muninn::parse_weight_format("bf16"), weight_format::bf16);
  EXPECT_EQ(muninn::parse_weight_format("fp32"), weight_format::f32);
  EXPECT_EQ(muninn::parse_weight_format("q8"), weight_format::q8);
  try {
    muninn::parse_weight_format("q4", "--quantize");
    ADD_FAILURE();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("--quantize 'q4'"), std::string::npos) << e.what();
  }
  auto w = random_vec(4 * 40, 1);
  w[77] = std::numeric_limits<float>::quiet_NaN();
  try {
    muninn::host_weight(host_backend{}, w.data(), 4, 40, 40, weight_format::q8, "model.layers.3.mlp.down_proj.weight");
    ADD_FAILURE();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.3.mlp.down_proj.weight: weight [1, 37]"), std::string::npos)
        << e.what();
  }
}

// The weights as the kernels see them, in fp32 ([N, K], row stride K).
std::vector<float> widened(const muninn::host_weight& w) {
  const muninn::weight_view v = w.view();
  std::vector<float> out(std::size_t(w.rows() * w.cols()));
  for (i64 n = 0; n < w.rows(); ++n)
    for (i64 k = 0; k < w.cols(); ++k) {
      float x = 0;
      switch (w.format()) {
        case weight_format::f32: x = v.f32_row(n)[k]; break;
        case weight_format::bf16: x = muninn::to_float(v.bf16_row(n)[k]); break;
        case weight_format::q8: x = float(v.q8_row(n)[k]) * muninn::to_float(v.q8_scales(n)[k / 32]); break;
      }
      out[std::size_t(n * w.cols() + k)] = x;
    }
  return out;
}

TEST(HostWeight, ConversionsKeepEveryWeightWithinItsFormatsRounding) {
  const i64 N = 9, K = 70, ld = 75;
  const auto w = random_vec(std::size_t(N * ld), 3);
  const muninn::host_weight b(host_backend{}, w.data(), N, K, ld, weight_format::bf16);
  const muninn::host_weight q(host_backend{}, w.data(), N, K, ld, weight_format::q8);
  EXPECT_EQ(b.bytes(), std::size_t(N * K * 2));
  EXPECT_EQ(q.bytes(), std::size_t(N * 96 + N * 3 * 2));  // K padded to 96: 3 blocks
  const auto wb = widened(b), wq = widened(q);
  for (i64 n = 0; n < N; ++n)
    for (i64 k = 0; k < K; ++k) {
      const float x = w[std::size_t(n * ld + k)];
      EXPECT_EQ(wb[std::size_t(n * K + k)], muninn::to_float(muninn::to_bf16(x)));
      const float d = muninn::to_float(q.view().q8_scales(n)[k / 32]);
      EXPECT_LE(std::fabs(wq[std::size_t(n * K + k)] - x), 0.5f * d * 1.000001f);
    }
}

// ------------------------------------------------------------------------------ GEMM

struct gemm_case {
  i64 M, N, K;
  float alpha, beta;
};

std::vector<muninn::host_isa> isa_levels() {
  std::vector<muninn::host_isa> v;
  for (auto i : {muninn::host_isa::generic, muninn::host_isa::avx2, muninn::host_isa::avx512})
    if (int(i) <= int(muninn::host_isa_supported())) v.push_back(i);
  return v;
}

// Whether gemm_nt runs this call with int8 activations (the q8 decode GEMV, one row or up to 8).
bool int8_activations(const host_backend& be, weight_format fmt, i64 M) {
  return fmt == weight_format::q8 && M <= 8 && !be.batch_invariant && be.q8_int8_activations;
}

// The oracle of the int8-activation GEMV and its multi-row form: each activation row (M rows,
// stride lda) quantized by the shared function, and C = alpha·Σ_k (qa_k·da_k)·w_k + beta·c in
// double, w the widened weights [N, K] (row stride K); results row-major [M, N].
// The kernel sums each block's 32 products exactly (int32), rounds the block's scale product
// da·dw once, and adds blocks in fp32: generic in 2 chains of ceil(blocks / 2), AVX2 in 8 lanes
// of 2 chains; then the lanes, alpha and beta. The relative error of such a sum is at most
// γ_n = n·u / (1 - n·u), u = 2⁻²⁴, n = ceil(blocks / 2) + 8 (the chain, the scale product, up
// to 4 adds across lanes and chains, alpha, beta), times Σ|terms| (`mag`).
struct int8_ref {
  std::vector<double> want, mag, act_err;  // act_err: |alpha|·Σ_k |w_k|·da_k/2, the activations' rounding
  double gamma = 0;
};
int8_ref int8_oracle(i64 M, i64 N, i64 K, float alpha, const float* A, i64 lda, const std::vector<float>& W, float beta,
                     const float* C0) {
  const i64 blocks = (K + 31) / 32;
  std::vector<std::int8_t> q(std::size_t(blocks * 32));
  std::vector<float> d(static_cast<std::size_t>(blocks));
  int8_ref r;
  const double n = double((blocks + 1) / 2 + 8), u = std::ldexp(1.0, -24);
  r.gamma = n * u / (1 - n * u);
  for (i64 row = 0; row < M; ++row) {
    muninn::q8_quantize_activations(A + row * lda, K, q.data(), d.data());
    for (i64 j = 0; j < N; ++j) {
      double s = 0, m = 0, e = 0;
      for (i64 k = 0; k < K; ++k) {
        const double w = double(W[std::size_t(j * K + k)]);
        const double x = double(q[std::size_t(k)]) * double(d[std::size_t(k / 32)]);
        s += x * w;
        m += std::fabs(x * w);
        e += std::fabs(w) * double(d[std::size_t(k / 32)]) / 2;
      }
      const double c = beta == 0.0f ? 0.0 : double(beta) * double(C0[row * N + j]);
      r.want.push_back(double(alpha) * s + c);
      r.mag.push_back(std::fabs(double(alpha)) * m + std::fabs(c));
      r.act_err.push_back(std::fabs(double(alpha)) * e);
    }
  }
  return r;
}

// The weight as a column slice when `slice` (what the concat adapter does: ld = 2K, columns K..2K).
void check_gemm(const host_backend& be, weight_format fmt, const gemm_case& c, std::uint32_t seed, bool slice) {
  const i64 wcols = slice ? 2 * c.K : c.K;
  const auto Bsrc = random_vec(std::size_t(c.N * wcols), seed, -0.5f, 0.5f);
  const muninn::host_weight w(be, Bsrc.data(), c.N, wcols, wcols, fmt);
  muninn::weight_view v = w.view();
  auto all = widened(w);
  std::vector<float> Bf(std::size_t(c.N * c.K));
  const i64 c0 = slice ? c.K : 0;
  if (slice) v = v.columns(c0);
  for (i64 n = 0; n < c.N; ++n)
    for (i64 k = 0; k < c.K; ++k) Bf[std::size_t(n * c.K + k)] = all[std::size_t(n * wcols + c0 + k)];
  const auto A = random_vec(std::size_t(c.M * c.K), seed + 1);
  auto C = random_vec(std::size_t(c.M * c.N), seed + 2);
  if (c.beta == 0.0f) std::fill(C.begin(), C.end(), std::numeric_limits<float>::quiet_NaN());
  const auto C0 = C;
  muninn::gemm_nt(be, c.M, c.N, c.K, c.alpha, A.data(), c.K, v, c.beta, C.data(), c.N);
  auto want = C0;
  muninn::ref::gemm_nt(c.M, c.N, c.K, c.alpha, A.data(), c.K, Bf.data(), c.K, c.beta, want.data(), c.N);
  std::vector<double> mag(std::size_t(c.M * c.N));
  muninn::ref::gemm_nt_magnitude(c.M, c.N, c.K, c.alpha, A.data(), c.K, Bf.data(), c.K, c.beta, C0.data(), c.N,
                                 mag.data());
  const int8_ref q = int8_activations(be, fmt, c.M)
                         ? int8_oracle(c.M, c.N, c.K, c.alpha, A.data(), c.K, Bf, c.beta, C0.data())
                         : int8_ref{};
  for (std::size_t i = 0; i < C.size(); ++i) {
    if (!q.want.empty()) {
      // (a) the quantized-activation oracle, within the fp32 sum's error only; (b) the fp32
      // activations' reference, within the activations' rounding and both sums' errors.
      ASSERT_LE(std::fabs(double(C[i]) - q.want[i]), q.gamma * q.mag[i] + 1e-30)
          << "int8 activations " << c.M << "x" << c.N << "x" << c.K << (slice ? " slice" : "") << " isa "
          << muninn::host_isa_name(muninn::host_isa_active()) << " threads " << be.threads() << " at " << i;
      ASSERT_LE(std::fabs(double(C[i]) - double(want[i])), q.act_err[i] + q.gamma * q.mag[i] + 1e-5 * mag[i] + 1e-30)
          << "int8 activations against fp32 ones " << c.M << "x" << c.N << "x" << c.K << " at " << i;
      continue;
    }
    ASSERT_LE(std::fabs(double(C[i]) - double(want[i])), 1e-5 * mag[i] + 1e-30)
        << muninn::weight_format_name(fmt) << " " << c.M << "x" << c.N << "x" << c.K << (slice ? " slice" : "")
        << " isa " << muninn::host_isa_name(muninn::host_isa_active()) << " threads " << be.threads() << " at " << i;
  }
}

const gemm_case kCases[] = {
    {1, 100, 576, 1.0f, 0.0f},   {1, 33, 37, 0.5f, 1.0f},    {1, 64, 1000, 1.0f, 0.0f},  {1, 40, 5280, 1.0f, 0.0f},
    {2, 50, 64, 1.0f, 0.0f},     {3, 17, 100, 2.0f, 0.5f},   {5, 70, 576, 1.0f, 0.0f},   {8, 96, 1536, 1.0f, 1.0f},
    {9, 40, 96, 1.0f, 0.0f},     {64, 576, 576, 1.0f, 0.0f}, {37, 50, 1000, 1.0f, 1.0f}, {200, 16, 4096, 1.0f, 0.0f},
    {130, 70, 70, 0.25f, 0.0f},  {1, 20, 13, 2.0f, 0.5f},    {1, 70, 100, -1.5f, 0.0f},  {1, 300, 1000, 1.0f, 0.0f},
    {4, 20, 13, 2.0f, 0.5f},     {6, 70, 100, -1.5f, 0.0f},  {7, 33, 224, 0.5f, 1.0f},
};

// Backends: 1 and 2 threads, and q8 decode with its activations kept fp32
// (q8_int8_activations off: the fp32 reference's bound applies).
std::vector<host_backend> gemm_backends() {
  host_backend fp32_act{1};
  fp32_act.q8_int8_activations = false;
  return {host_backend{1}, host_backend{2}, fp32_act};
}

TEST(WeightGemm, Bf16AndQ8MatchTheReferenceOnEveryPath) {
  for (auto isa : isa_levels()) {
    muninn::set_host_isa_limit(isa);
    for (weight_format fmt : {weight_format::bf16, weight_format::q8})
      for (const host_backend& be : gemm_backends())
        for (std::size_t i = 0; i < std::size(kCases); ++i) {
          check_gemm(be, fmt, kCases[i], std::uint32_t(10 + i), false);
          if (kCases[i].K % 32 == 0) check_gemm(be, fmt, kCases[i], std::uint32_t(50 + i), true);
        }
  }
  muninn::clear_host_isa_limit();
}

// ------------------------------------------------------------------------------ q8 decode, int8 activations

TEST(Q8Activations, EveryValueWithinHalfAStepOfItsBlocksAmaxOver127) {
  for (i64 K : {1, 13, 32, 37, 100, 576}) {
    auto x = random_vec(std::size_t(K), std::uint32_t(K), -3.0f, 3.0f);
    if (K > 40) x[33] = 0.0f, x[7] = -50.0f;  // a block with one large value
    const i64 blocks = (K + 31) / 32;
    std::vector<std::int8_t> q(std::size_t(blocks * 32), 99);
    std::vector<float> d(static_cast<std::size_t>(blocks));
    muninn::q8_quantize_activations(x.data(), K, q.data(), d.data());
    for (i64 j = 0; j < blocks; ++j) {
      double amax = 0;
      for (i64 k = j * 32; k < std::min(K, j * 32 + 32); ++k) amax = std::max(amax, std::fabs(double(x[std::size_t(k)])));
      const double dj = d[std::size_t(j)];
      ASSERT_LE(std::fabs(dj - amax / 127), amax / 127 * 1e-7) << "K " << K << " block " << j;
      for (i64 k = j * 32; k < j * 32 + 32; ++k) {
        const int v = q[std::size_t(k)];
        ASSERT_LE(std::abs(v), 127);
        if (k >= K) {
          ASSERT_EQ(v, 0) << "padding past K at " << k;
          continue;
        }
        // Round to nearest: x/d within half a step of q (up to the division's rounding).
        ASSERT_LE(std::fabs(double(x[std::size_t(k)]) / dj - v), 0.5 * (1 + 1e-6)) << "K " << K << " at " << k;
      }
    }
  }
  // An all-zero block: scale 0, values 0. A NaN or infinity: a NaN scale (outputs become NaN).
  std::vector<float> x(64, 0.0f);
  x[40] = std::numeric_limits<float>::infinity();
  std::int8_t q[64];
  float d[2];
  muninn::q8_quantize_activations(x.data(), 64, q, d);
  EXPECT_EQ(d[0], 0.0f);
  EXPECT_TRUE(std::isnan(d[1]));
  for (int k = 0; k < 64; ++k) EXPECT_EQ(q[k], 0) << k;
}

TEST(Q8Activations, ANonFiniteActivationMakesTheOutputsNaN) {
  const i64 N = 5, K = 100;
  const auto w = random_vec(std::size_t(N * K), 1);
  const muninn::host_weight b(host_backend{1}, w.data(), N, K, K, weight_format::q8);
  for (auto isa : isa_levels()) {
    muninn::set_host_isa_limit(isa);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      auto a = random_vec(std::size_t(K), 2);
      a[70] = bad;
      std::vector<float> c(std::size_t(N), 0.0f);
      muninn::gemm_nt(host_backend{1}, 1, N, K, 1.0f, a.data(), K, b.view(), 0.0f, c.data(), N);
      for (float v : c) EXPECT_TRUE(std::isnan(v)) << v << " isa " << muninn::host_isa_name(isa);
    }
  }
  muninn::clear_host_isa_limit();
}

// (c) Every level this CPU runs gives the generic level's result within both bounds added.
TEST(Q8Activations, EveryLevelAgreesWithGenericWithinTheSumsBound) {
  for (const gemm_case& c : kCases) {
    if (c.M > 8) continue;
    const auto src = random_vec(std::size_t(c.N * c.K), 21);
    const muninn::host_weight w(host_backend{1}, src.data(), c.N, c.K, c.K, weight_format::q8);
    const auto A = random_vec(std::size_t(c.M * c.K), 22);
    const auto C0 = random_vec(std::size_t(c.M * c.N), 23);
    const int8_ref r = int8_oracle(c.M, c.N, c.K, c.alpha, A.data(), c.K, widened(w), c.beta, C0.data());
    std::vector<float> generic;
    for (auto isa : isa_levels()) {
      muninn::set_host_isa_limit(isa);
      auto C = C0;
      muninn::gemm_nt(host_backend{1}, c.M, c.N, c.K, c.alpha, A.data(), c.K, w.view(), c.beta, C.data(), c.N);
      if (isa == muninn::host_isa::generic) {
        generic = C;
        continue;
      }
      for (std::size_t i = 0; i < C.size(); ++i)
        ASSERT_LE(std::fabs(double(C[i]) - double(generic[i])), 2 * r.gamma * r.mag[i] + 1e-30)
            << muninn::host_isa_name(isa) << " against generic, " << c.M << "x" << c.N << "x" << c.K << " at " << i;
    }
  }
  muninn::clear_host_isa_limit();
}

// (d) Bitwise the same at 1, 2 and 3 threads, with N large enough for parallel_for to split the
// rows (grain max(8, 65536 / (K·M)) rows), on every level, one activation row and several.
TEST(Q8Activations, ResultsDoNotDependOnTheThreadCount) {
  const gemm_case cases[] = {{1, 300, 1000, 1.0f, 0.0f}, {1, 2000, 100, 0.5f, 1.0f}, {1, 64, 5280, 1.0f, 0.0f},
                             {3, 200, 1000, 1.0f, 0.0f}, {8, 300, 100, 0.5f, 1.0f},  {5, 40, 5280, -1.0f, 0.0f}};
  for (auto isa : isa_levels()) {
    muninn::set_host_isa_limit(isa);
    for (const gemm_case& c : cases) {
      ASSERT_GE(c.N, 2 * std::max<i64>(8, 65536 / (c.K * c.M))) << "this case would not be split";
      const auto src = random_vec(std::size_t(c.N * c.K), 31);
      const muninn::host_weight w(host_backend{1}, src.data(), c.N, c.K, c.K, weight_format::q8);
      const auto A = random_vec(std::size_t(c.M * c.K), 32);
      const auto C0 = random_vec(std::size_t(c.M * c.N), 33);
      auto one = C0;
      muninn::gemm_nt(host_backend{1}, c.M, c.N, c.K, c.alpha, A.data(), c.K, w.view(), c.beta, one.data(), c.N);
      for (int t : {2, 3}) {
        auto many = C0;
        muninn::gemm_nt(host_backend{t}, c.M, c.N, c.K, c.alpha, A.data(), c.K, w.view(), c.beta, many.data(), c.N);
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * 4), 0)
            << muninn::host_isa_name(isa) << " " << c.M << "x" << c.N << "x" << c.K << " at " << t << " threads";
      }
    }
  }
  muninn::clear_host_isa_limit();
}

// (e) Batched decode, 2 <= M <= 8: every M against the double-precision oracle over the same
// quantized rows (the fp32 sum's bound (a) above: each row's chains are the one-row kernel's),
// with A and C strided (lda > K, ldc > N, the gaps left untouched), K < 32, a partial last block,
// alpha and beta, on every level; and each row bitwise what the same row gives alone (M = 1).
TEST(Q8Activations, EveryRowOfABatchIsThatRowDecodedAlone) {
  for (auto isa : isa_levels()) {
    muninn::set_host_isa_limit(isa);
    for (i64 K : {13, 64, 100, 200, 576})  // 1, 2, 4, 7 and 18 blocks: an odd count ends one chain
      for (i64 M = 2; M <= 8; ++M) {
        const i64 N = 37 + M, lda = K + 5, ldc = N + 3;
        const float alpha = M % 2 ? -1.5f : 0.75f, beta = M % 3 ? 0.5f : 0.0f;
        const auto src = random_vec(std::size_t(N * K), std::uint32_t(41 + M + K), -0.5f, 0.5f);
        const muninn::host_weight w(host_backend{1}, src.data(), N, K, K, weight_format::q8);
        auto A = random_vec(std::size_t(M * lda), std::uint32_t(42 + M + K), -2.0f, 2.0f);
        A[std::size_t(lda - 1)] = 1e30f;  // in the gap of row 0: must not be read
        auto C0 = random_vec(std::size_t(M * ldc), std::uint32_t(43 + M + K));
        std::vector<float> Cdense(std::size_t(M * N));  // C0 packed for the oracle
        for (i64 m = 0; m < M; ++m)
          for (i64 n = 0; n < N; ++n) Cdense[std::size_t(m * N + n)] = C0[std::size_t(m * ldc + n)];
        const int8_ref r = int8_oracle(M, N, K, alpha, A.data(), lda, widened(w), beta, Cdense.data());
        auto C = C0;
        muninn::gemm_nt(host_backend{1}, M, N, K, alpha, A.data(), lda, w.view(), beta, C.data(), ldc);
        for (i64 m = 0; m < M; ++m) {
          auto alone = C0;
          muninn::gemm_nt(host_backend{1}, 1, N, K, alpha, A.data() + m * lda, lda, w.view(), beta,
                          alone.data() + m * ldc, ldc);
          for (i64 n = 0; n < ldc; ++n) {
            const std::size_t i = std::size_t(m * ldc + n);
            if (n >= N) {
              ASSERT_EQ(C[i], C0[i]) << "the gap past N of row " << m << " was written";
              continue;
            }
            const std::size_t o = std::size_t(m * N + n);
            ASSERT_LE(std::fabs(double(C[i]) - r.want[o]), r.gamma * r.mag[o] + 1e-30)
                << muninn::host_isa_name(isa) << " M " << M << " K " << K << " row " << m << " column " << n;
            ASSERT_EQ(std::memcmp(&C[i], &alone[i], 4), 0)
                << muninn::host_isa_name(isa) << " M " << M << " K " << K << " row " << m << " column " << n << ": "
                << C[i] << " in the batch, " << alone[i] << " alone";
          }
        }
      }
  }
  muninn::clear_host_isa_limit();
}

// A NaN or infinity in one row of a batch makes that row's outputs NaN and leaves the others as
// they are alone.
TEST(Q8Activations, ANonFiniteActivationSpoilsOnlyItsOwnRow) {
  const i64 M = 5, N = 9, K = 100;
  const auto w = random_vec(std::size_t(N * K), 1);
  const muninn::host_weight b(host_backend{1}, w.data(), N, K, K, weight_format::q8);
  for (auto isa : isa_levels()) {
    muninn::set_host_isa_limit(isa);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
      auto a = random_vec(std::size_t(M * K), 2);
      a[std::size_t(3 * K + 70)] = bad;
      std::vector<float> c(std::size_t(M * N), 0.0f);
      muninn::gemm_nt(host_backend{1}, M, N, K, 1.0f, a.data(), K, b.view(), 0.0f, c.data(), N);
      for (i64 m = 0; m < M; ++m) {
        std::vector<float> alone(std::size_t(N), 0.0f);
        muninn::gemm_nt(host_backend{1}, 1, N, K, 1.0f, a.data() + m * K, K, b.view(), 0.0f, alone.data(), N);
        for (i64 n = 0; n < N; ++n) {
          const float v = c[std::size_t(m * N + n)];
          if (m == 3)
            EXPECT_TRUE(std::isnan(v)) << v << " isa " << muninn::host_isa_name(isa);
          else
            EXPECT_EQ(v, alone[std::size_t(n)]) << "row " << m << " isa " << muninn::host_isa_name(isa);
        }
      }
    }
  }
  muninn::clear_host_isa_limit();
}

TEST(WeightGemm, F32ViewIsThePlainGemm) {
  const i64 M = 3, N = 20, K = 50;
  const auto A = random_vec(std::size_t(M * K), 1), B = random_vec(std::size_t(N * K), 2);
  std::vector<float> c1(std::size_t(M * N)), c2(c1.size());
  muninn::gemm_nt(host_backend{}, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, c1.data(), N);
  muninn::gemm_nt(host_backend{}, M, N, K, 1.0f, A.data(), K, muninn::weight_view::f32(B.data(), K), 0.0f, c2.data(),
                  N);
  EXPECT_EQ(c1, c2);
}

TEST(WeightGemm, ResultsDoNotDependOnTheThreadCount) {
  for (weight_format fmt : {weight_format::bf16, weight_format::q8})
    for (const gemm_case& c : kCases) {
      const auto Bsrc = random_vec(std::size_t(c.N * c.K), 7);
      const muninn::host_weight w(host_backend{1}, Bsrc.data(), c.N, c.K, c.K, fmt);
      const auto A = random_vec(std::size_t(c.M * c.K), 8);
      std::vector<float> one(std::size_t(c.M * c.N), 0.0f);
      muninn::gemm_nt(host_backend{1}, c.M, c.N, c.K, c.alpha, A.data(), c.K, w.view(), 0.0f, one.data(), c.N);
      for (int t : {2, 3}) {
        std::vector<float> many(one.size(), 0.0f);
        muninn::gemm_nt(host_backend{t}, c.M, c.N, c.K, c.alpha, A.data(), c.K, w.view(), 0.0f, many.data(), c.N);
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * 4), 0)
            << muninn::weight_format_name(fmt) << " " << c.M << "x" << c.N << "x" << c.K << " at " << t << " threads";
      }
    }
}

TEST(HostIsa, TheLimitCapsTheActiveLevel) {
  for (auto isa : isa_levels()) {
    muninn::set_host_isa_limit(isa);
    EXPECT_EQ(muninn::host_isa_active(), isa);
  }
  muninn::set_host_isa_limit(muninn::host_isa::avx512);
  EXPECT_EQ(muninn::host_isa_active(), muninn::host_isa_supported());
  muninn::clear_host_isa_limit();
  std::printf("host_isa_supported: %s\n", muninn::host_isa_name(muninn::host_isa_supported()));
}

}  // namespace

}  // namespace test_weight_formats
