// Host ops against the reference ops (muninn::ref: plain double-precision loops).
//
// Tolerances (stated per test below) are relative to the magnitude of the exact result:
// - GEMM: |C − ref| <= 1e-5 · (|alpha|·Σ_k |a_ik·b_jk| + |beta·c_ij|), K up to 1029. The
//   worst-case fp32 bound is K·2^-24 times that magnitude; random data stays far below it.
// - norms, element-wise, RoPE, embedding: relative 1e-5 (a few fp32 ulp plus the fp32 mean).
// - attention: |out − ref| <= 2e-5 · max|v| (outputs are convex combinations of v rows).
// - softmax: relative 1e-5; log_softmax: 1e-5 · (1 + |ref|).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "muninn/ops/ops.hpp"
#include "muninn/ops/reference/reference.hpp"
#include "test_util.hpp"

namespace {

using muninn::host_backend;
using i64 = std::int64_t;

using muninn_test::random_vec;

// Single-threaded and default (all host threads) backends: results must not depend on it.
std::vector<host_backend> backends() { return {host_backend{1}, host_backend{}}; }

// ----------------------------------------------------------------------------------- GEMM

struct gemm_case {
  i64 M, N, K;
  float alpha, beta;
  i64 pad;  // extra elements per row in A, B and C
};

void check_gemm(const host_backend& be, const gemm_case& c, std::uint32_t seed, bool nan_c = false) {
  const i64 lda = c.K + c.pad, ldb = c.K + 2 * c.pad, ldc = c.N + 3 * c.pad;
  const auto A = random_vec(std::size_t(c.M * lda), seed);
  const auto B = random_vec(std::size_t(c.N * ldb), seed + 1);
  auto C = random_vec(std::size_t(c.M * ldc), seed + 2);
  if (nan_c)
    for (i64 i = 0; i < c.M; ++i)
      for (i64 j = 0; j < c.N; ++j) C[std::size_t(i * ldc + j)] = std::numeric_limits<float>::quiet_NaN();
  const auto C0 = C;
  muninn::gemm_nt(be, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, C.data(), ldc);
  auto want = C0;
  muninn::ref::gemm_nt(c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, want.data(), ldc);
  std::vector<double> mag(std::size_t(c.M * c.N));
  muninn::ref::gemm_nt_magnitude(c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, C0.data(), ldc,
                                 mag.data());
  for (i64 i = 0; i < c.M; ++i)
    for (i64 j = 0; j < c.N; ++j) {
      const double got = C[std::size_t(i * ldc + j)], ref = want[std::size_t(i * ldc + j)];
      ASSERT_LE(std::fabs(got - ref), 1e-5 * mag[std::size_t(i * c.N + j)] + 1e-30)
          << "M=" << c.M << " N=" << c.N << " K=" << c.K << " alpha=" << c.alpha << " beta=" << c.beta << " at ("
          << i << "," << j << ") got " << got << " want " << ref;
    }
  // Padding columns of C must be untouched.
  for (i64 i = 0; i < c.M; ++i)
    for (i64 j = c.N; j < ldc; ++j)
      ASSERT_EQ(std::memcmp(&C[std::size_t(i * ldc + j)], &C0[std::size_t(i * ldc + j)], sizeof(float)), 0)
          << "padding of C written at (" << i << "," << j << ")";
}

TEST(GemmNt, AwkwardSizesBothPaths) {
  const i64 Ms[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 48, 49, 64, 100, 129};
  const i64 Ns[] = {1, 3, 8, 17, 64, 129};
  const i64 Ks[] = {1, 3, 17, 64, 129, 300};
  std::uint32_t seed = 1;
  for (const auto& be : backends())
    for (i64 M : Ms)
      for (i64 N : Ns)
        for (i64 K : Ks) check_gemm(be, {M, N, K, 1.0f, 0.0f, (M + N + K) % 3 == 0 ? 0 : 5}, seed++);
}

// M = 1 takes one of two GEMV kernels by row length: rows read one after another up to
// gemv_rows_max_k, the interleaved 8-row tile above it. Both sides of the switch, with beta
// (the AVX2 build's switch is at 0: the tile for every K, so rows of 1 and 5 there).
TEST(GemmNt, GemvBothKernels) {
  constexpr i64 L = muninn::detail::gemv_rows_max_k;
  const i64 Ks[] = {std::max<i64>(1, L - 1), std::max<i64>(1, L), L + 5};
  std::uint32_t seed = 50;
  for (const auto& be : backends())
    for (i64 K : Ks) {
      check_gemm(be, {1, 19, K, 1.0f, 0.0f, 3}, seed++);
      check_gemm(be, {1, 19, K, -0.5f, 0.75f, 0}, seed++);
    }
}

TEST(GemmNt, AlphaBetaVariants) {
  const gemm_case cases[] = {
      {5, 37, 70, 0.5f, 0.0f, 2},  {5, 37, 70, 1.0f, 1.0f, 2},   {5, 37, 70, -2.0f, 0.75f, 0},
      {70, 37, 300, 0.5f, 0.0f, 1}, {70, 37, 300, 1.0f, 1.0f, 3}, {70, 37, 300, -2.0f, 0.75f, 0},
      {3, 9, 5, 0.0f, 0.5f, 1},    {20, 9, 5, 0.0f, 0.0f, 1},    {20, 9, 0, 1.0f, 2.0f, 1},
  };
  std::uint32_t seed = 100;
  for (const auto& be : backends())
    for (const auto& c : cases) check_gemm(be, c, seed++);
}

TEST(GemmNt, BetaZeroIgnoresNanInC) {
  for (const auto& be : backends()) {
    check_gemm(be, {1, 33, 40, 1.0f, 0.0f, 1}, 7, true);
    check_gemm(be, {8, 33, 40, 2.0f, 0.0f, 0}, 8, true);
    check_gemm(be, {65, 33, 300, 1.0f, 0.0f, 2}, 9, true);
    check_gemm(be, {65, 33, 0, 1.0f, 0.0f, 2}, 10, true);
    check_gemm(be, {65, 33, 40, 0.0f, 0.0f, 2}, 11, true);
  }
}

TEST(GemmNt, LargeKAndBlockEdges) {
  std::uint32_t seed = 200;
  for (const auto& be : backends()) {
    check_gemm(be, {1, 70, 1024, 1.0f, 0.0f, 0}, seed++);
    check_gemm(be, {6, 70, 1029, 1.0f, 1.0f, 3}, seed++);
    check_gemm(be, {129, 67, 1024, 1.0f, 0.0f, 1}, seed++);
    check_gemm(be, {200, 40, 513, 0.25f, -1.0f, 0}, seed++);
    // Tall and narrow: threads split M instead of N.
    check_gemm(be, {400, 5, 260, 1.0f, 0.0f, 2}, seed++);
    // Many rows, short K: one block.
    check_gemm(be, {420, 20, 40, 1.0f, 0.5f, 1}, seed++);
    // Rows x K beyond the packed-A budget: several K blocks and (single thread) two M blocks.
    check_gemm(be, {300, 37, 600, 1.0f, 0.5f, 1}, seed++);
    check_gemm(be, {1000, 70, 700, -1.0f, 0.0f, 0}, seed++);
  }
}

TEST(GemmNt, RejectsBadLeadingDimension) {
  std::vector<float> a(64), b(64), c(64);
  EXPECT_THROW(muninn::gemm_nt(host_backend{}, 2, 2, 8, 1.0f, a.data(), 7, b.data(), 8, 0.0f, c.data(), 2),
               muninn::error);
}

// ----------------------------------------------------------------------------------- norms

void expect_close_rel(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs_floor,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]), rel * std::fabs(want[i]) + abs_floor)
        << what << " at " << i << ": got " << got[i] << " want " << want[i];
}

TEST(RmsNorm, MatchesDoubleAndAliases) {
  const i64 shapes[][2] = {{1, 1}, {3, 5}, {2, 64}, {7, 129}, {1, 5280}, {33, 96}};
  std::uint32_t seed = 300;
  for (const auto& be : backends())
    for (const auto& s : shapes) {
      const i64 rows = s[0], cols = s[1];
      const auto x = random_vec(std::size_t(rows * cols), seed++, -3.0f, 3.0f);
      const auto w = random_vec(std::size_t(cols), seed++, 0.5f, 1.5f);
      std::vector<float> ref(x.size());
      muninn::ref::rmsnorm(x.data(), w.data(), ref.data(), rows, cols, 1e-6f);
      std::vector<float> y(x.size());
      muninn::rmsnorm(be, x.data(), w.data(), y.data(), rows, cols, 1e-6f);
      expect_close_rel(y, ref, 1e-5, 1e-7, "rmsnorm");
      auto inplace = x;
      muninn::rmsnorm(be, inplace.data(), w.data(), inplace.data(), rows, cols, 1e-6f);
      expect_close_rel(inplace, ref, 1e-5, 1e-7, "rmsnorm in place");
    }
}

TEST(RmsNorm, EpsDominatesTinyRows) {
  // With x tiny, rsqrt(mean + eps) is ~1/sqrt(eps): checks eps is added inside the root.
  std::vector<float> x = {1e-6f, -2e-6f, 3e-6f}, w = {1.0f, 1.0f, 2.0f}, y(3);
  muninn::rmsnorm(host_backend{}, x.data(), w.data(), y.data(), 1, 3, 1e-2f);
  const double ms = (1e-12 + 4e-12 + 9e-12) / 3.0;
  const double inv = 1.0 / std::sqrt(ms + 1e-2);
  EXPECT_NEAR(y[2], 3e-6 * inv * 2.0, 1e-10);
}

TEST(AddRmsNorm, EpsDominatesTinyRows) {
  std::vector<float> a = {1e-6f, -1e-6f, 1e-6f}, b = {0.0f, -1e-6f, 2e-6f}, w = {1.0f, 1.0f, 2.0f}, y(3);
  muninn::add_rmsnorm(host_backend{}, a.data(), b.data(), w.data(), y.data(), 1, 3, 1e-2f);
  const double ms = (1e-12 + 4e-12 + 9e-12) / 3.0;
  EXPECT_NEAR(y[2], 3e-6 / std::sqrt(ms + 1e-2) * 2.0, 1e-10);
}

TEST(AddRmsNorm, MatchesDoubleAndAliases) {
  const i64 shapes[][2] = {{1, 7}, {4, 129}, {3, 5280}};
  std::uint32_t seed = 400;
  for (const auto& be : backends())
    for (const auto& s : shapes) {
      const i64 rows = s[0], cols = s[1];
      const auto a = random_vec(std::size_t(rows * cols), seed++, -2.0f, 2.0f);
      const auto b = random_vec(std::size_t(rows * cols), seed++, -2.0f, 2.0f);
      const auto w = random_vec(std::size_t(cols), seed++, 0.5f, 1.5f);
      std::vector<float> ref(a.size());
      muninn::ref::add_rmsnorm(a.data(), b.data(), w.data(), ref.data(), rows, cols, 1e-6f);
      std::vector<float> y(a.size());
      muninn::add_rmsnorm(be, a.data(), b.data(), w.data(), y.data(), rows, cols, 1e-6f);
      expect_close_rel(y, ref, 1e-5, 1e-7, "add_rmsnorm");
      auto ya = a;
      muninn::add_rmsnorm(be, ya.data(), b.data(), w.data(), ya.data(), rows, cols, 1e-6f);
      expect_close_rel(ya, ref, 1e-5, 1e-7, "add_rmsnorm y=a");
      auto yb = b;
      muninn::add_rmsnorm(be, a.data(), yb.data(), w.data(), yb.data(), rows, cols, 1e-6f);
      expect_close_rel(yb, ref, 1e-5, 1e-7, "add_rmsnorm y=b");
    }
}

// ----------------------------------------------------------------------------------- element-wise

TEST(Elementwise, AddAndScale) {
  for (const auto& be : backends())
    for (i64 n : {i64(1), i64(15), i64(17), i64(1000), i64(200001)}) {
      const auto a = random_vec(std::size_t(n), 500 + std::uint32_t(n));
      const auto b = random_vec(std::size_t(n), 600 + std::uint32_t(n));
      std::vector<float> y(a.size());
      muninn::add(be, a.data(), b.data(), y.data(), n);
      for (i64 i = 0; i < n; ++i) ASSERT_EQ(y[std::size_t(i)], a[std::size_t(i)] + b[std::size_t(i)]);
      auto ya = a;
      muninn::add(be, ya.data(), b.data(), ya.data(), n);
      EXPECT_EQ(ya, y);
      auto yb = b;
      muninn::add(be, a.data(), yb.data(), yb.data(), n);
      EXPECT_EQ(yb, y);
      auto s = a;
      muninn::scale(be, s.data(), -1.5f, n);
      for (i64 i = 0; i < n; ++i) ASSERT_EQ(s[std::size_t(i)], a[std::size_t(i)] * -1.5f);
    }
}

TEST(Elementwise, SiluMulGateFirst) {
  const i64 shapes[][2] = {{1, 1}, {1, 17}, {3, 100}, {1, 70000}, {5, 33}};
  std::uint32_t seed = 700;
  for (const auto& be : backends())
    for (const auto& s : shapes) {
      const i64 rows = s[0], inter = s[1];
      const i64 ld_in = 2 * inter + 3, ld_out = inter + 2;
      const auto in = random_vec(std::size_t(rows * ld_in), seed++, -12.0f, 12.0f);
      std::vector<float> out(std::size_t(rows * ld_out), 7.0f), want = out;
      muninn::silu_mul(be, in.data(), ld_in, out.data(), ld_out, rows, inter);
      muninn::ref::silu_mul(in.data(), ld_in, want.data(), ld_out, rows, inter);
      for (i64 r = 0; r < rows; ++r) {
        for (i64 i = 0; i < inter; ++i) {
          const double got = out[std::size_t(r * ld_out + i)], w = want[std::size_t(r * ld_out + i)];
          ASSERT_LE(std::fabs(got - w), 1e-5 * std::fabs(w) + 1e-30) << "row " << r << " i " << i;
        }
        for (i64 i = inter; i < ld_out; ++i) ASSERT_EQ(out[std::size_t(r * ld_out + i)], 7.0f);
      }
      // In place over the gate half.
      auto io = in;
      muninn::silu_mul(be, io.data(), ld_in, io.data(), ld_in, rows, inter);
      for (i64 r = 0; r < rows; ++r)
        for (i64 i = 0; i < inter; ++i)
          ASSERT_EQ(io[std::size_t(r * ld_in + i)], out[std::size_t(r * ld_out + i)]);
    }
}

TEST(Elementwise, SiluExtremes) {
  // Large |g| must neither overflow to NaN nor lose the sign.
  std::vector<float> in = {-200.0f, -90.0f, 0.0f, 90.0f, 200.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f};
  std::vector<float> out(5);
  muninn::silu_mul(host_backend{}, in.data(), 10, out.data(), 5, 1, 5);
  EXPECT_LE(std::fabs(out[0]), 1e-30f);
  EXPECT_LE(std::fabs(out[1]), 1e-30f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_FLOAT_EQ(out[3], 180.0f);
  EXPECT_FLOAT_EQ(out[4], 400.0f);
}

TEST(Elementwise, VectorExpAccuracy) {
  // The polynomial e^x behind SiLU and softmax, over the range they use.
  double worst = 0.0;
  for (int i = -870000; i <= 880000; i += 7) {
    const float x = float(i) * 1e-4f;
    const double want = std::exp(double(x));
    const double got = muninn::detail::sexp(x);
    worst = std::max(worst, std::fabs(got - want) / want);
  }
  EXPECT_LE(worst, 3e-7) << "relative error of the vector exp";
  EXPECT_TRUE(std::isnan(muninn::detail::sexp(std::numeric_limits<float>::quiet_NaN())));
}

// ----------------------------------------------------------------------------------- RoPE

TEST(Rope, TableSpotValuesAndLayout) {
  const i64 D = 96, P = 4096;
  const auto t = muninn::make_rope_table(D, P, 50000.0f);
  ASSERT_EQ(t.size(), std::size_t(P * D));
  // Position 1 holds {cos, sin} of inv_freq itself.
  const auto inv = [&](i64 i) { return std::atan2(double(t[std::size_t((1 * D / 2 + i) * 2 + 1)]),
                                                  double(t[std::size_t((1 * D / 2 + i) * 2)])); };
  EXPECT_NEAR(inv(0), 1.0, 1e-7);
  EXPECT_NEAR(inv(1), 0.79818726, 1e-7);
  EXPECT_NEAR(inv(47), 2.5056777e-5, 1e-11);
  // Position 0 is the identity rotation.
  for (i64 i = 0; i < D / 2; ++i) {
    EXPECT_EQ(t[std::size_t(2 * i)], 1.0f);
    EXPECT_EQ(t[std::size_t(2 * i + 1)], 0.0f);
  }
  // Every entry: fp32 inv_freq and fp32 angle as the reference builds them, cos/sin in double.
  for (i64 p = 0; p < P; p += 37)
    for (i64 i = 0; i < D / 2; ++i) {
      const float f = 1.0f / std::pow(50000.0f, float(2 * i) / float(D));
      const float angle = float(p) * f;
      ASSERT_NEAR(t[std::size_t((p * D / 2 + i) * 2)], std::cos(double(angle)), 1e-6) << p << "," << i;
      ASSERT_NEAR(t[std::size_t((p * D / 2 + i) * 2 + 1)], std::sin(double(angle)), 1e-6) << p << "," << i;
    }
}

TEST(Rope, InterleavedWithBiasAndOffset) {
  std::uint32_t seed = 800;
  for (const auto& be : backends())
    for (i64 D : {i64(64), i64(96), i64(128), i64(6)})
      for (bool with_bias : {false, true})
        for (i64 pos0 : {i64(0), i64(13)}) {
          const i64 H = 3, rows = 5, ld = H * D + 5;
          const auto table = muninn::make_rope_table(D, 64, 50000.0f);
          const auto x0 = random_vec(std::size_t(rows * ld), seed++);
          const auto bias = random_vec(std::size_t(H * D), seed++);
          auto x = x0, want = x0;
          muninn::rope_interleaved(be, x.data(), rows, ld, H, D, with_bias ? bias.data() : nullptr, table.data(),
                                   pos0);
          muninn::ref::rope_interleaved(want.data(), rows, ld, H, D, with_bias ? bias.data() : nullptr, table.data(),
                                        pos0);
          for (std::size_t e = 0; e < x.size(); ++e)
            ASSERT_NEAR(x[e], want[e], 1e-6) << "D=" << D << " element " << e;
          for (i64 r = 0; r < rows; ++r)
            for (i64 j = H * D; j < ld; ++j) ASSERT_EQ(x[std::size_t(r * ld + j)], x0[std::size_t(r * ld + j)]);
        }
}

TEST(Rope, RotationByPositionComposes) {
  // Rotating at position p equals the complex product with e^{i·p·θ}: |pair| is preserved
  // and position 0 leaves x unchanged.
  const i64 D = 96;
  const auto table = muninn::make_rope_table(D, 16, 50000.0f);
  auto x = random_vec(std::size_t(D), 900);
  const auto x0 = x;
  muninn::rope_interleaved(host_backend{}, x.data(), 1, D, 1, D, nullptr, table.data(), 0);
  EXPECT_EQ(x, x0);
  muninn::rope_interleaved(host_backend{}, x.data(), 1, D, 1, D, nullptr, table.data(), 9);
  for (i64 i = 0; i < D / 2; ++i)
    EXPECT_NEAR(std::hypot(x[std::size_t(2 * i)], x[std::size_t(2 * i + 1)]),
                std::hypot(x0[std::size_t(2 * i)], x0[std::size_t(2 * i + 1)]), 1e-6);
}

// ----------------------------------------------------------------------------------- attention

struct attn_case {
  i64 nq, nkv, H, Hkv, D;
};

void check_attention(const host_backend& be, const attn_case& c, std::uint32_t seed) {
  const i64 ldq = c.H * c.D + 3, ldkv = c.Hkv * c.D + 5, ldo = c.H * c.D + 1;
  const auto q = random_vec(std::size_t(c.nq * ldq), seed, -2.0f, 2.0f);
  const auto k = random_vec(std::size_t(c.nkv * ldkv), seed + 1, -2.0f, 2.0f);
  const auto v = random_vec(std::size_t(c.nkv * ldkv), seed + 2, -1.0f, 1.0f);
  std::vector<float> out(std::size_t(c.nq * ldo), 5.0f);
  const float scale = 1.0f / std::sqrt(float(c.D));
  muninn::attention(be, q.data(), ldq, k.data(), v.data(), ldkv, out.data(), ldo, c.nq, c.nkv, c.H, c.Hkv, c.D,
                    scale);
  std::vector<float> want(out.size(), 5.0f);
  muninn::ref::attention(q.data(), ldq, k.data(), v.data(), ldkv, want.data(), ldo, c.nq, c.nkv, c.H, c.Hkv, c.D,
                         scale);  // bottom-right causal
  for (std::size_t e = 0; e < out.size(); ++e)
    ASSERT_NEAR(out[e], want[e], 2e-5) << "nq=" << c.nq << " nkv=" << c.nkv << " H=" << c.H << " Hkv=" << c.Hkv
                                       << " D=" << c.D << " at element " << e;
  for (i64 i = 0; i < c.nq; ++i) ASSERT_EQ(out[std::size_t(i * ldo + c.H * c.D)], 5.0f) << "padding written";
}

TEST(Attention, CausalChunkedDecodeAndGqa) {
  const attn_case cases[] = {
      {5, 5, 2, 2, 64},      // full causal
      {70, 70, 2, 2, 96},    // full causal across online-softmax blocks
      {3, 70, 3, 3, 128},    // chunked prefill against a cache
      {17, 150, 4, 2, 96},   // chunked + GQA
      {1, 1, 2, 2, 64},      // first decode step
      {1, 130, 4, 4, 96},    // decode: no mask
      {1, 200, 6, 1, 128},   // decode, multi-query
      {9, 9, 4, 1, 64},      // causal, multi-query
      {4, 33, 2, 2, 40},     // generic head dim
      {2, 67, 2, 1, 6},      // tiny head dim below the vector width
      {1, 90, 5, 5, 96},     // decode, head chunks of unequal size
      {3, 33, 12, 4, 64},    // chunked prefill, GQA groups of 3
      {8, 700, 3, 3, 128},   // long cache: one head per chunk
  };
  std::uint32_t seed = 1000;
  for (const auto& be : backends())
    for (const auto& c : cases) check_attention(be, c, seed += 3);
}

TEST(Attention, LargeScoresStayFinite) {
  // Scores of order 1e3 overflow e^x without max subtraction.
  const i64 D = 64;
  std::vector<float> q(D, 10.0f), k(3 * D, 10.0f), v(3 * D), out(D);
  for (i64 j = 0; j < 3; ++j)
    for (i64 t = 0; t < D; ++t) v[std::size_t(j * D + t)] = float(j);
  k[0] = 11.0f;  // key 0 scores 1.25 above the others; all scores are ~800
  muninn::attention(host_backend{}, q.data(), D, k.data(), v.data(), D, out.data(), D, 1, 3, 1, 1, D, 1.0f / 8.0f);
  const double s0 = 10.0 * (11.0 + 63 * 10.0) / 8.0, s1 = 10.0 * 640.0 / 8.0;
  const double w0 = 1.0 / (1.0 + 2.0 * std::exp(s1 - s0)), w1 = (1.0 - w0) / 2.0;
  EXPECT_NEAR(out[0], 0.0 * w0 + 1.0 * w1 + 2.0 * w1, 1e-5);
}

TEST(Attention, RejectsBadShapes) {
  std::vector<float> buf(1024);
  EXPECT_THROW(muninn::attention(host_backend{}, buf.data(), 64, buf.data(), buf.data(), 64, buf.data(), 64, 4, 3, 1,
                                 1, 64, 1.0f),
               muninn::error);
  EXPECT_THROW(muninn::attention(host_backend{}, buf.data(), 192, buf.data(), buf.data(), 128, buf.data(), 192, 1, 1,
                                 3, 2, 64, 1.0f),
               muninn::error);
}

// ----------------------------------------------------------------------------------- embedding

TEST(Embedding, GathersAndScales) {
  const i64 vocab = 11, dim = 37;
  const auto table = random_vec(std::size_t(vocab * dim), 1100);
  const std::vector<std::int32_t> ids = {3, 0, 10, 3, 7};
  std::vector<float> out(ids.size() * std::size_t(dim));
  const float s = 72.6636084983398f;
  std::vector<float> want(out.size());
  muninn::ref::embedding(table.data(), vocab, dim, ids.data(), i64(ids.size()), s, want.data());
  for (const auto& be : backends()) {
    muninn::embedding(be, table.data(), vocab, dim, ids.data(), i64(ids.size()), s, out.data());
    EXPECT_EQ(out, want);
  }
}

TEST(Embedding, OutOfRangeIdThrowsNamingIt) {
  const i64 vocab = 11, dim = 4;
  std::vector<float> table(std::size_t(vocab * dim), 1.0f), out(3 * std::size_t(dim), -1.0f);
  for (std::int32_t bad : {11, -1, 123456}) {
    const std::vector<std::int32_t> ids = {1, 2, bad};
    try {
      muninn::embedding(host_backend{}, table.data(), vocab, dim, ids.data(), 3, 1.0f, out.data());
      FAIL() << "no error for id " << bad;
    } catch (const muninn::error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(std::to_string(bad)), std::string::npos) << msg;
      EXPECT_NE(msg.find("index 2"), std::string::npos) << msg;
      EXPECT_NE(msg.find("11"), std::string::npos) << msg;
    }
    for (float o : out) EXPECT_EQ(o, -1.0f) << "output written before the check";
  }
}

// ----------------------------------------------------------------------------------- softmax

TEST(Softmax, RowsMatchDoubleAndAlias) {
  const i64 shapes[][2] = {{1, 1}, {3, 7}, {2, 33}, {4, 1000}, {1, 65536}};
  std::uint32_t seed = 1200;
  for (const auto& be : backends())
    for (const auto& sh : shapes) {
      const i64 rows = sh[0], cols = sh[1];
      auto x = random_vec(std::size_t(rows * cols), seed++, -30.0f, 30.0f);
      if (rows > 1)
        for (i64 i = 0; i < cols; ++i) x[std::size_t(cols + i)] += 1000.0f;  // e^x would overflow unshifted
      std::vector<float> sm(x.size()), lsm(x.size());
      muninn::ref::softmax_rows(x.data(), sm.data(), rows, cols);
      muninn::ref::log_softmax_rows(x.data(), lsm.data(), rows, cols);
      std::vector<float> y(x.size());
      muninn::softmax_rows(be, x.data(), y.data(), rows, cols);
      expect_close_rel(y, sm, 1e-5, 1e-37, "softmax");
      auto ya = x;
      muninn::softmax_rows(be, ya.data(), ya.data(), rows, cols);
      EXPECT_EQ(ya, y);
      std::vector<float> ly(x.size());
      muninn::log_softmax_rows(be, x.data(), ly.data(), rows, cols);
      for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_LE(std::fabs(ly[i] - lsm[i]), 1e-5 * (1.0 + std::fabs(lsm[i]))) << "log_softmax at " << i;
      auto la = x;
      muninn::log_softmax_rows(be, la.data(), la.data(), rows, cols);
      EXPECT_EQ(la, ly);
    }
}

TEST(Argmax, FirstOfTiesAndTails) {
  const host_backend be{};
  std::vector<float> x(100, -5.0f);
  x[37] = 2.0f;
  x[80] = 2.0f;
  EXPECT_EQ(muninn::argmax(be, x.data(), 100), 37);
  x[99] = 3.0f;  // in the scalar tail for every vector width
  EXPECT_EQ(muninn::argmax(be, x.data(), 100), 99);
  std::vector<float> ties(67, 1.0f);
  EXPECT_EQ(muninn::argmax(be, ties.data(), 67), 0);
  std::vector<float> one = {-3.0f};
  EXPECT_EQ(muninn::argmax(be, one.data(), 1), 0);
  std::vector<float> neg = {-7.0f, -2.0f, -9.0f, -2.0f};
  EXPECT_EQ(muninn::argmax(be, neg.data(), 4), 1);
  // NaNs are skipped, wherever they fall.
  std::vector<float> withnan(40, 0.0f);
  withnan[0] = std::numeric_limits<float>::quiet_NaN();
  withnan[17] = std::numeric_limits<float>::quiet_NaN();
  withnan[20] = 4.0f;
  EXPECT_EQ(muninn::argmax(be, withnan.data(), 40), 20);
  auto big = random_vec(65536, 1300);
  big[40000] = 2.0f;
  big[50000] = 2.0f;
  EXPECT_EQ(muninn::argmax(be, big.data(), 65536), 40000);
}

}  // namespace

// ------------------------------------------------------------------------------- exit decisions

TEST(Halting, LatentChangeRowsMatchesDoubleLoops) {
  const i64 rows = 5, h = 37;
  const auto x = muninn_test::random_vec(std::size_t(rows * h), 3), p = muninn_test::random_vec(std::size_t(rows * h), 4);
  std::vector<float> rel(rows), cosd(rows);
  for (const auto& be : backends()) {
    muninn::latent_change_rows(be, x.data(), p.data(), rows, h, rel.data(), cosd.data());
    for (i64 r = 0; r < rows; ++r) {
      double d2 = 0, x2 = 0, p2 = 0, xp = 0;
      for (i64 i = 0; i < h; ++i) {
        const double a = x[std::size_t(r * h + i)], b = p[std::size_t(r * h + i)];
        d2 += (a - b) * (a - b), x2 += a * a, p2 += b * b, xp += a * b;
      }
      EXPECT_NEAR(rel[std::size_t(r)], std::sqrt(d2 / x2), 1e-6);
      EXPECT_NEAR(cosd[std::size_t(r)], 1.0 - xp / std::sqrt(x2 * p2), 1e-6);
    }
  }
}

TEST(Halting, DecideKeepsEachCriterionsRunningState) {
  host_backend be;
  std::vector<std::uint8_t> mask(3);
  // below: stat < threshold
  const std::vector<float> kl = {1e-4f, 5e-4f, 1e-3f};
  muninn::halt_decide(be, muninn::halt_rule_kind::below, kl.data(), nullptr, nullptr, nullptr, nullptr, 3, 5e-4, mask.data());
  EXPECT_EQ(mask, (std::vector<std::uint8_t>{1, 0, 0}));
  // entropy_change: |H − previous H| < threshold, previous ← H
  std::vector<float> prev = {100.0f, 2.0f, 2.0f};
  const std::vector<float> H = {1.0f, 2.0005f, 2.5f};
  muninn::halt_decide(be, muninn::halt_rule_kind::entropy_change, H.data(), nullptr, prev.data(), nullptr, nullptr, 3, 1e-3,
              mask.data());
  EXPECT_EQ(mask, (std::vector<std::uint8_t>{0, 1, 0}));
  EXPECT_EQ(prev, H);
  // argmax_run: a run of equal arg-maxes reaching the threshold
  std::vector<std::int32_t> prev_am = {-1, 7, 7}, count = {0, 1, 4};
  const std::vector<std::int32_t> am = {7, 7, 7};
  muninn::halt_decide(be, muninn::halt_rule_kind::argmax_run, nullptr, am.data(), nullptr, prev_am.data(), count.data(), 3, 5,
              mask.data());
  EXPECT_EQ(count, (std::vector<std::int32_t>{0, 2, 5}));
  EXPECT_EQ(mask, (std::vector<std::uint8_t>{0, 0, 1}));
}
