#pragma once
// One list of op test cases, run on every backend and storage type against muninn::ref.
//
// Each case is written once, as a type-parameterised GoogleTest (TYPED_TEST_P) over a "config"
// that names a backend, a storage type T, how to make the backend and the tolerances. The host
// TU (test_op_cases.cpp) instantiates it for the host backend (one thread and all threads); the
// CUDA TU (test_op_cases_cuda.cu) for cuda_backend with float and bf16, where every case skips
// without a GPU. A case draws random inputs, rounds them to T (the values the op really sees),
// runs the reference in double on those, uploads, runs the op through the backend, downloads
// and compares.
//
// Tolerances: |got − want| <= rel·|want| + abs·max|want| over the compared array, with
//
//   config     | rel  | abs  | stat_rel | stat_abs | why
//   -----------+------+------+----------+----------+------------------------------------------
//   host f32   | 1e-5 | 1e-5 | 1e-5     | 1e-9     | fp32 maths; a few ulp and fp32 sums
//   cuda f32   | 1e-4 | 1e-4 | 1e-4     | 1e-7     | fp32 maths in another order, fast exp2
//   cuda bf16  | 2e-2 | 2e-2 | 1e-4     | 1e-7     | outputs (and PyTorch-style intermediates)
//              |      |      |          |          | rounded to bf16: 2^-9 per rounding
//
// GEMM compares against rel · Σ|alpha·a·b| + |beta·c| per element (its error grows with K).
// The row statistics (KL, entropy) are fp32 outputs of double (host) or fp32-exp/double-sum
// (CUDA) arithmetic on the same rounded inputs whatever T is, so they use stat_rel·|want| +
// stat_abs. Arg-max and top-k are compared exactly; so are gathers, scatters and padding
// columns that an op must not touch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "muninn/core/dtype.hpp"
#include "muninn/ops/attention_mask.hpp"
#include "muninn/ops/reference/reference.hpp"
#include "muninn/ops/rope_table.hpp"
#include "test_util.hpp"

namespace op_cases {

using i64 = std::int64_t;
using muninn_test::random_vec;

/// The tolerances of one config (see the table above).
struct tolerance {
  double rel, abs, stat_rel, stat_abs;
};

/// Moves test data between the host and a backend, converting float to the storage type T.
template <class Config>
struct harness {
  using backend = typename Config::backend;
  using T = typename Config::storage;
  template <class U>
  using buffer = typename backend::template buffer<U>;

  backend be;
  tolerance tol;

  /// The values as T stores them, back in float (what the op sees; the reference gets these).
  std::vector<float> round(std::vector<float> v) const {
    for (auto& x : v) x = muninn::to_float(muninn::from_float<T>(x));
    return v;
  }
  /// Random values in [lo, hi) rounded to T.
  std::vector<float> random(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) const {
    return round(random_vec(n, seed, lo, hi));
  }
  /// A backend buffer of T holding v.
  buffer<T> put(const std::vector<float>& v) const {
    std::vector<T> s(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) s[i] = muninn::from_float<T>(v[i]);
    auto b = be.template alloc<T>(std::max<std::size_t>(v.size(), 1));
    be.upload(b.data(), s.data(), s.size());
    return b;
  }
  /// A backend buffer holding v as is (fp32 tables and gates, int32 indices and positions).
  template <class U>
  buffer<U> put_raw(const std::vector<U>& v) const {
    auto b = be.template alloc<U>(std::max<std::size_t>(v.size(), 1));
    be.upload(b.data(), v.data(), v.size());
    return b;
  }
  /// n values of T at p, as float.
  std::vector<float> get(const T* p, std::size_t n) const {
    std::vector<T> s(n);
    be.download(s.data(), p, n);
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = muninn::to_float(s[i]);
    return v;
  }
  /// n values of U at p.
  template <class U>
  std::vector<U> get_raw(const U* p, std::size_t n) const {
    std::vector<U> v(n);
    be.download(v.data(), p, n);
    return v;
  }
};

/// |got − want| <= rel·|want| + abs·max|want| element-wise (NaN never passes).
inline ::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                                        double abs, const std::string& what) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " != " << want.size();
  double scale = 0.0;
  for (float w : want) scale = std::max(scale, std::fabs(double(w)));
  std::size_t bad = 0, first = 0;
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    const double lim = rel * std::fabs(double(want[i])) + abs * scale;
    const bool same = got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]));
    if (!same && !(d <= lim) && bad++ == 0) first = i;
    if (!same && lim > 0) worst = std::max(worst, d / lim);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size()
                                       << " elements outside tolerance; first at " << first << ": got " << got[first]
                                       << ", want " << want[first] << " (worst error/limit " << worst << ")";
}

/// close() with a config's element tolerance.
inline ::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& want,
                                        const tolerance& t, const std::string& what) {
  return close(got, want, t.rel, t.abs, what);
}

/// |got − want| <= stat_rel·|want| + stat_abs for per-row statistics.
inline ::testing::AssertionResult close_stat(const std::vector<float>& got, const std::vector<float>& want,
                                             const tolerance& t, const std::string& what) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << what << ": size mismatch";
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    if (!(d <= t.stat_rel * std::fabs(double(want[i])) + t.stat_abs) && got[i] != want[i])
      return ::testing::AssertionFailure() << what << " row " << i << ": got " << got[i] << ", want " << want[i]
                                           << " (difference " << d << ")";
  }
  return ::testing::AssertionSuccess();
}

/// A shape label for failure messages.
inline std::string dims(std::initializer_list<i64> v) {
  std::string s;
  for (i64 x : v) s += (s.empty() ? "" : "x") + std::to_string(x);
  return s;
}

}  // namespace op_cases

/// The fixture: makes the config's backend, or skips (CUDA without a GPU).
template <class Config>
class OpCases : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Config::available()) GTEST_SKIP() << Config::skip_reason();
    h_.emplace(op_cases::harness<Config>{Config::make(), Config::tol});
  }
  /// The harness of this config.
  const op_cases::harness<Config>& h() const { return *h_; }

 private:
  std::optional<op_cases::harness<Config>> h_;
};

TYPED_TEST_SUITE_P(OpCases);

// ------------------------------------------------------------------------------------ GEMM

TYPED_TEST_P(OpCases, GemmNt) {
  using namespace op_cases;
  const auto& h = this->h();
  struct gcase {
    i64 M, N, K;
    float alpha, beta;
    i64 pad;
  };
  const gcase cases[] = {
      {1, 300, 257, 1.0f, 0.0f, 3},   // decode GEMV, padded strides
      {37, 53, 129, 0.5f, 1.5f, 1},   // odd sizes, beta
      {64, 96, 64, 1.0f, 1.0f, 0},    // residual-style accumulate
      {17, 33, 70, -2.0f, 0.75f, 2},  // negative alpha
      {5, 7, 0, 1.0f, 2.0f, 1},       // empty product: C = beta·C
  };
  std::uint32_t seed = 10;
  for (const auto& c : cases) {
    const i64 lda = c.K + c.pad, ldb = c.K + 2 * c.pad, ldc = c.N + 3 * c.pad;
    const auto A = h.random(std::size_t(c.M * lda), seed++), B = h.random(std::size_t(c.N * ldb), seed++);
    const auto C0 = h.random(std::size_t(c.M * ldc), seed++);
    auto want = C0;
    muninn::ref::gemm_nt(c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, want.data(), ldc);
    std::vector<double> mag(std::size_t(c.M * c.N));
    muninn::ref::gemm_nt_magnitude(c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, C0.data(), ldc,
                                   mag.data());
    auto dA = h.put(A), dB = h.put(B), dC = h.put(C0);
    gemm_nt(h.be, c.M, c.N, c.K, c.alpha, dA.data(), lda, dB.data(), ldb, c.beta, dC.data(), ldc);
    const auto got = h.get(dC.data(), C0.size());
    for (i64 i = 0; i < c.M; ++i) {
      for (i64 j = 0; j < c.N; ++j) {
        const double d = std::fabs(double(got[std::size_t(i * ldc + j)]) - double(want[std::size_t(i * ldc + j)]));
        ASSERT_LE(d, h.tol.rel * mag[std::size_t(i * c.N + j)] + 1e-30)
            << dims({c.M, c.N, c.K}) << " at (" << i << "," << j << ")";
      }
      for (i64 j = c.N; j < ldc; ++j) ASSERT_EQ(got[std::size_t(i * ldc + j)], C0[std::size_t(i * ldc + j)]);
    }
  }
}

// ----------------------------------------------------------------------------------- norms

TYPED_TEST_P(OpCases, RmsNormWithAndWithoutWeight) {
  using namespace op_cases;
  const auto& h = this->h();
  const i64 shapes[][2] = {{1, 1}, {3, 5}, {7, 129}, {2, 4104}, {1, 5280}};
  std::uint32_t seed = 100;
  for (const auto& s : shapes)
    for (bool weighted : {true, false}) {
      const i64 rows = s[0], cols = s[1];
      const auto x = h.random(std::size_t(rows * cols), seed++, -3.0f, 3.0f);
      const auto w = h.random(std::size_t(cols), seed++, 0.5f, 1.5f);
      std::vector<float> want(x.size());
      muninn::ref::rmsnorm(x.data(), weighted ? w.data() : nullptr, want.data(), rows, cols, 1e-6f);
      auto dx = h.put(x), dw = h.put(w), dy = h.put(std::vector<float>(x.size()));
      rmsnorm(h.be, dx.data(), weighted ? dw.data() : nullptr, dy.data(), rows, cols, 1e-6f);
      const std::string what = "rmsnorm " + dims({rows, cols}) + (weighted ? "" : " no weight");
      EXPECT_TRUE(close(h.get(dy.data(), x.size()), want, h.tol, what));
      rmsnorm(h.be, dx.data(), weighted ? dw.data() : nullptr, dx.data(), rows, cols, 1e-6f);  // in place
      EXPECT_TRUE(close(h.get(dx.data(), x.size()), want, h.tol, what + " in place"));
    }
}

TYPED_TEST_P(OpCases, AddRmsNormAliasing) {
  using namespace op_cases;
  const auto& h = this->h();
  const i64 shapes[][2] = {{1, 7}, {4, 129}, {3, 5280}};
  std::uint32_t seed = 200;
  for (const auto& s : shapes)
    for (bool weighted : {true, false}) {
      const i64 rows = s[0], cols = s[1];
      const std::size_t n = std::size_t(rows * cols);
      const auto a = h.random(n, seed++, -2.0f, 2.0f), b = h.random(n, seed++, -2.0f, 2.0f);
      const auto w = h.random(std::size_t(cols), seed++, 0.5f, 1.5f);
      std::vector<float> want(n);
      muninn::ref::add_rmsnorm(a.data(), b.data(), weighted ? w.data() : nullptr, want.data(), rows, cols, 1e-6f);
      auto dw = h.put(w);
      for (int alias = 0; alias < 3; ++alias) {  // separate y, y == a, y == b
        auto da = h.put(a), db = h.put(b), dy = h.put(std::vector<float>(n));
        auto* y = alias == 0 ? dy.data() : alias == 1 ? da.data() : db.data();
        add_rmsnorm(h.be, da.data(), db.data(), weighted ? dw.data() : nullptr, y, rows, cols, 1e-6f);
        EXPECT_TRUE(close(h.get(y, n), want, h.tol,
                          "add_rmsnorm " + dims({rows, cols}) + " alias " + std::to_string(alias)));
      }
    }
}

TYPED_TEST_P(OpCases, LayerNormAffineVariants) {
  using namespace op_cases;
  const auto& h = this->h();
  const i64 shapes[][2] = {{1, 1}, {3, 7}, {4, 1000}, {2, 4096}};
  std::uint32_t seed = 300;
  for (const auto& s : shapes)
    for (int affine = 0; affine < 4; ++affine) {  // bit 0: weight, bit 1: bias
      const i64 rows = s[0], cols = s[1];
      // An offset mean: a one-pass variance would cancel it away.
      const auto x = h.random(std::size_t(rows * cols), seed++, 4.0f, 6.0f);
      const auto w = h.random(std::size_t(cols), seed++, 0.5f, 1.5f), b = h.random(std::size_t(cols), seed++);
      const float* wp = (affine & 1) ? w.data() : nullptr;
      const float* bp = (affine & 2) ? b.data() : nullptr;
      std::vector<float> want(x.size());
      muninn::ref::layernorm(x.data(), wp, bp, want.data(), rows, cols, 1e-5f);
      auto dx = h.put(x), dw = h.put(w), db = h.put(b), dy = h.put(std::vector<float>(x.size()));
      layernorm(h.be, dx.data(), wp ? dw.data() : nullptr, bp ? db.data() : nullptr, dy.data(), rows, cols, 1e-5f);
      const std::string what = "layernorm " + dims({rows, cols}) + " affine " + std::to_string(affine);
      EXPECT_TRUE(close(h.get(dy.data(), x.size()), want, h.tol, what));
      layernorm(h.be, dx.data(), wp ? dw.data() : nullptr, bp ? db.data() : nullptr, dx.data(), rows, cols, 1e-5f);
      EXPECT_TRUE(close(h.get(dx.data(), x.size()), want, h.tol, what + " in place"));
    }
}

// ---------------------------------------------------------------------------- element-wise

TYPED_TEST_P(OpCases, SiluMulPaddedAndInPlace) {
  using namespace op_cases;
  const auto& h = this->h();
  const i64 shapes[][2] = {{1, 1}, {1, 17}, {3, 100}, {5, 33}, {2, 4096}};
  std::uint32_t seed = 400;
  for (const auto& s : shapes) {
    const i64 rows = s[0], inter = s[1], ld_in = 2 * inter + 3, ld_out = inter + 2;
    const auto in = h.random(std::size_t(rows * ld_in), seed++, -8.0f, 8.0f);
    const auto out0 = h.random(std::size_t(rows * ld_out), seed++);
    auto want = out0;
    muninn::ref::silu_mul(in.data(), ld_in, want.data(), ld_out, rows, inter);
    auto din = h.put(in), dout = h.put(out0);
    silu_mul(h.be, din.data(), ld_in, dout.data(), ld_out, rows, inter);
    EXPECT_TRUE(close(h.get(dout.data(), out0.size()), want, h.tol, "silu_mul " + dims({rows, inter})));
  }
}

/// SiLU and GELU in place, against the double-precision loop (inputs span both tails).
TYPED_TEST_P(OpCases, SiluAndGeluInPlace) {
  using namespace op_cases;
  const auto& h = this->h();
  std::uint32_t seed = 450;
  for (i64 n : {i64(1), i64(13), i64(70001)}) {
    const auto x = h.random(std::size_t(n), seed++, -30.0f, 30.0f);
    auto want_silu = x, want_gelu = x;
    muninn::ref::silu(want_silu.data(), n);
    muninn::ref::gelu(want_gelu.data(), n);
    auto ds = h.put(x), dg = h.put(x);
    silu(h.be, ds.data(), n);
    gelu(h.be, dg.data(), n);
    EXPECT_TRUE(close(h.get(ds.data(), x.size()), h.round(want_silu), h.tol, "silu n=" + std::to_string(n)));
    EXPECT_TRUE(close(h.get(dg.data(), x.size()), h.round(want_gelu), h.tol, "gelu n=" + std::to_string(n)));
  }
}

TYPED_TEST_P(OpCases, AddAndScale) {
  using namespace op_cases;
  const auto& h = this->h();
  std::uint32_t seed = 500;
  for (i64 n : {i64(1), i64(7), i64(4099), i64(100003)}) {
    const auto a = h.random(std::size_t(n), seed++), b = h.random(std::size_t(n), seed++);
    std::vector<float> want(a.size());
    muninn::ref::add(a.data(), b.data(), want.data(), n);
    auto da = h.put(a), db = h.put(b), dy = h.put(std::vector<float>(a.size()));
    add(h.be, da.data(), db.data(), dy.data(), n);
    EXPECT_TRUE(close(h.get(dy.data(), a.size()), h.round(want), h.tol, "add n=" + std::to_string(n)));
    auto scaled = a;
    muninn::ref::scale(scaled.data(), -1.5f, n);
    scale(h.be, da.data(), -1.5f, n);
    EXPECT_TRUE(close(h.get(da.data(), a.size()), h.round(scaled), h.tol, "scale n=" + std::to_string(n)));
  }
}

TYPED_TEST_P(OpCases, Embedding) {
  using namespace op_cases;
  const auto& h = this->h();
  const i64 vocab = 50;
  const std::vector<std::int32_t> ids = {3, 0, 49, 3, 17, 8};
  for (i64 dim : {i64(13), i64(96)}) {
    const auto table = h.random(std::size_t(vocab * dim), 600 + std::uint32_t(dim));
    std::vector<float> want(ids.size() * std::size_t(dim));
    muninn::ref::embedding(table.data(), vocab, dim, ids.data(), i64(ids.size()), 72.66f, want.data());
    auto dt = h.put(table), dout = h.put(std::vector<float>(want.size()));
    auto dids = h.put_raw(ids);
    embedding(h.be, dt.data(), vocab, dim, dids.data(), i64(ids.size()), 72.66f, dout.data());
    EXPECT_TRUE(close(h.get(dout.data(), want.size()), want, h.tol, "embedding dim=" + std::to_string(dim)));
  }
}

// ------------------------------------------------------------------------------------ RoPE

/// Both RoPE layouts: every head dim, with and without bias, at an offset and at ragged
/// per-row positions; columns past the heads stay untouched.
template <class Harness>
void rope_cases(const Harness& h, bool interleaved) {
  using namespace op_cases;
  std::uint32_t seed = interleaved ? 700 : 750;
  // Huginn's table for the interleaved layout, a Llama-3.1-style scaled one for rotate-half.
  const muninn::rope_scaling llama3{muninn::rope_scaling::kind::llama3, 8.0f, 1.0f, 4.0f, 32};
  const std::vector<std::int32_t> pos = {5, 0, 17, 3, 3, 63};
  for (i64 D : {i64(6), i64(64), i64(96), i64(128)})
    for (bool with_bias : {false, true})
      for (int where = 0; where < 3; ++where) {  // pos0 = 0, pos0 = 13, ragged positions
        const i64 H = 3, rows = 6, ld = H * D + 5, pos0 = where == 1 ? 13 : 0;
        const auto table = interleaved ? muninn::make_rope_table(D, 64, 50000.0f)
                                       : muninn::make_rope_table(D, 64, 500000.0f, llama3);
        const auto x = h.random(std::size_t(rows * ld), seed++, -2.0f, 2.0f);
        const auto bias = h.random(std::size_t(H * D), seed++, -0.5f, 0.5f);
        const float* bp = with_bias ? bias.data() : nullptr;
        const std::int32_t* pp = where == 2 ? pos.data() : nullptr;
        auto want = x;
        if (interleaved)
          muninn::ref::rope_interleaved(want.data(), rows, ld, H, D, bp, table.data(), pos0, pp);
        else
          muninn::ref::rope_half(want.data(), rows, ld, H, D, bp, table.data(), pos0, pp);
        auto dx = h.put(x), db = h.put(bias);
        auto dt = h.put_raw(table);
        auto dp = h.put_raw(pos);
        auto* dbias = with_bias ? db.data() : nullptr;
        if (interleaved && where == 2)
          rope_interleaved(h.be, dx.data(), rows, ld, H, D, dbias, dt.data(), dp.data());
        else if (interleaved)
          rope_interleaved(h.be, dx.data(), rows, ld, H, D, dbias, dt.data(), pos0);
        else if (where == 2)
          rope_half(h.be, dx.data(), rows, ld, H, D, dbias, dt.data(), dp.data());
        else
          rope_half(h.be, dx.data(), rows, ld, H, D, dbias, dt.data(), pos0);
        const auto got = h.get(dx.data(), x.size());
        const std::string what = std::string(interleaved ? "rope_interleaved" : "rope_half") + " D=" +
                                 std::to_string(D) + (with_bias ? " bias" : "") + " where=" + std::to_string(where);
        EXPECT_TRUE(close(got, want, h.tol, what));
        for (i64 r = 0; r < rows; ++r)
          for (i64 j = H * D; j < ld; ++j) ASSERT_EQ(got[std::size_t(r * ld + j)], x[std::size_t(r * ld + j)]) << what;
      }
  // A literal 0 start position still picks the pos0 overloads (not the pointer ones).
  auto dx = h.put(std::vector<float>(64, 1.0f));
  auto dt = h.put_raw(muninn::make_rope_table(64, 2, 50000.0f));
  if (interleaved)
    rope_interleaved(h.be, dx.data(), 1, 64, 1, 64, nullptr, dt.data(), 0);
  else
    rope_half(h.be, dx.data(), 1, 64, 1, 64, nullptr, dt.data(), 0);
  EXPECT_EQ(h.get(dx.data(), 64), std::vector<float>(64, 1.0f)) << "position 0 is the identity";
}

TYPED_TEST_P(OpCases, RopeInterleaved) { rope_cases(this->h(), true); }
TYPED_TEST_P(OpCases, RopeHalf) { rope_cases(this->h(), false); }

// ------------------------------------------------------------------------------- attention

namespace op_cases {

/// One attention case: shapes, mask, and (optionally) positions.
struct attn_case {
  i64 nq, nkv, H, Hkv, D;
  muninn::attn_mask mask;
  std::vector<std::int32_t> q_pos, k_pos;  // empty: no positions
  bool legacy = false;                     // call the 14-argument causal overload
};

/// Runs one case through the backend's attention and compares with ref::attention; padding
/// columns of the output must keep their sentinel.
template <class Harness>
void check_attention(const Harness& h, const attn_case& c, std::uint32_t seed) {
  const i64 ldq = c.H * c.D + 3, ldkv = c.Hkv * c.D + 5, ldo = c.H * c.D + 1;
  const auto q = h.random(std::size_t(c.nq * ldq), seed, -2.0f, 2.0f);
  const auto k = h.random(std::size_t(c.nkv * ldkv), seed + 1, -2.0f, 2.0f);
  const auto v = h.random(std::size_t(c.nkv * ldkv), seed + 2);
  const std::vector<float> out0(std::size_t(c.nq * ldo), 5.0f);
  const float scale = 1.0f / std::sqrt(float(c.D));
  const bool pos = !c.q_pos.empty();
  auto want = out0;
  muninn::ref::attention(q.data(), ldq, k.data(), v.data(), ldkv, want.data(), ldo, c.nq, c.nkv, c.H, c.Hkv, c.D, scale,
                         c.mask, pos ? c.q_pos.data() : nullptr, pos ? c.k_pos.data() : nullptr);
  auto dq = h.put(q), dk = h.put(k), dv = h.put(v), dout = h.put(out0);
  auto dqp = h.put_raw(c.q_pos), dkp = h.put_raw(c.k_pos);
  if (c.legacy)
    attention(h.be, dq.data(), ldq, dk.data(), dv.data(), ldkv, dout.data(), ldo, c.nq, c.nkv, c.H, c.Hkv, c.D, scale);
  else
    attention(h.be, dq.data(), ldq, dk.data(), dv.data(), ldkv, dout.data(), ldo, c.nq, c.nkv, c.H, c.Hkv, c.D, scale,
              c.mask, pos ? dqp.data() : nullptr, pos ? dkp.data() : nullptr);
  const std::string what = std::string(c.legacy ? "attention" : "attention(mask)") + " nq=" + std::to_string(c.nq) +
                           " nkv=" + std::to_string(c.nkv) + " H=" + std::to_string(c.H) + "/" +
                           std::to_string(c.Hkv) + " D=" + std::to_string(c.D) +
                           (c.mask == muninn::attn_mask::full ? " full" : pos ? " positions" : " causal");
  EXPECT_TRUE(close(h.get(dout.data(), out0.size()), want, h.tol, what));
}

/// n distinct positions drawn from [0, range), in increasing order (a routed token subset).
inline std::vector<std::int32_t> subset_positions(i64 n, i64 range, std::uint32_t seed) {
  std::vector<std::int32_t> all(static_cast<std::size_t>(range));
  for (i64 i = 0; i < range; ++i) all[std::size_t(i)] = std::int32_t(i);
  std::mt19937 gen(seed);
  std::shuffle(all.begin(), all.end(), gen);
  all.resize(std::size_t(n));
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace op_cases

TYPED_TEST_P(OpCases, AttentionCausalLegacyOverload) {
  using namespace op_cases;
  using muninn::attn_mask;
  const attn_case cases[] = {
      {5, 5, 2, 2, 64, attn_mask::causal, {}, {}, true},       // square causal
      {70, 70, 2, 2, 96, attn_mask::causal, {}, {}, true},     // across key blocks and query tiles
      {20, 50, 4, 2, 96, attn_mask::causal, {}, {}, true},     // chunked prefill against a cache, GQA
      {1, 77, 6, 3, 128, attn_mask::causal, {}, {}, true},     // decode, GQA
      {9, 1000, 2, 2, 128, attn_mask::causal, {}, {}, true},   // decode path, many key splits
      {3, 33, 12, 4, 64, attn_mask::causal, {}, {}, true},     // GQA groups of 3
      {4, 33, 2, 2, 40, attn_mask::causal, {}, {}, true},      // generic head dim
      {2, 67, 2, 1, 6, attn_mask::causal, {}, {}, true},       // tiny head dim
      {1, 1, 2, 2, 64, attn_mask::causal, {}, {}, true},       // first decode step
  };
  std::uint32_t seed = 1000;
  for (const auto& c : cases) check_attention(this->h(), c, seed += 3);
}

TYPED_TEST_P(OpCases, AttentionMasks) {
  using namespace op_cases;
  using muninn::attn_mask;
  const auto& h = this->h();
  std::uint32_t seed = 1100;
  // Causal without positions through the mask overload: the legacy semantics.
  check_attention(h, {17, 40, 4, 2, 64, attn_mask::causal, {}, {}}, seed += 3);
  check_attention(h, {3, 40, 4, 2, 40, attn_mask::causal, {}, {}}, seed += 3);
  // Full: every key, including more queries than keys.
  check_attention(h, {7, 30, 4, 2, 64, attn_mask::full, {}, {}}, seed += 3);
  check_attention(h, {20, 5, 2, 1, 96, attn_mask::full, {}, {}}, seed += 3);
  check_attention(h, {3, 50, 2, 2, 40, attn_mask::full, {}, {}}, seed += 3);
  check_attention(h, {1, 300, 2, 2, 128, attn_mask::full, {}, {}}, seed += 3);
  // Full with positions given: they are ignored.
  check_attention(h, {4, 6, 2, 2, 64, attn_mask::full, {0, 1, 2, 3}, {9, 9, 9, 9, 9, 9}}, seed += 3);
  // No keys at all: zeros.
  check_attention(h, {3, 0, 2, 2, 64, attn_mask::full, {}, {}}, seed += 3);
}

TYPED_TEST_P(OpCases, AttentionRaggedPositions) {
  using namespace op_cases;
  using muninn::attn_mask;
  const auto& h = this->h();
  std::uint32_t seed = 1200;
  for (i64 D : {i64(64), i64(40), i64(128)}) {
    // MoR: a routed subset of 30 tokens of a 100-token sequence attends to itself.
    const auto sub = subset_positions(30, 100, seed);
    check_attention(h, {30, 30, 4, 2, D, attn_mask::causal, sub, sub}, seed += 3);
    // Decode-sized query block (split-KV path) against the subset's cache.
    const std::vector<std::int32_t> qs = {sub[29], sub[3], 99, sub[0]};
    check_attention(h, {4, 30, 4, 2, D, attn_mask::causal, qs, sub}, seed += 3);
    // Unsorted key positions, and a query before every key: zeros.
    std::vector<std::int32_t> keys = subset_positions(40, 200, seed);
    std::reverse(keys.begin(), keys.end());
    std::vector<std::int32_t> q2 = subset_positions(20, 200, seed + 1);
    q2[5] = keys.back() - 1 < 0 ? -1 : keys.back() - 1;  // sees nothing
    check_attention(h, {20, 40, 2, 1, D, attn_mask::causal, q2, keys}, seed += 3);
    // Long cache: several key splits with empty ones in between (positions far apart).
    std::vector<std::int32_t> far(300);
    for (i64 j = 0; j < 300; ++j) far[std::size_t(j)] = std::int32_t(j < 150 ? 1000 + j : j);
    check_attention(h, {2, 300, 2, 2, D, attn_mask::causal, {160, 1100}, far}, seed += 3);
  }
}

// --------------------------------------------------------------------------- gather/scatter

TYPED_TEST_P(OpCases, GatherScatterRows) {
  using namespace op_cases;
  const auto& h = this->h();
  const i64 rows = 10, width = 37, ld_big = 40, ld_small = 39;
  const auto big = h.random(std::size_t(rows * ld_big), 1300);
  // Gather (repeats allowed), then scatter back to distinct rows.
  const std::vector<std::int32_t> gi = {3, 0, 9, 3};
  const auto small0 = h.random(std::size_t(gi.size()) * ld_small, 1301);
  auto want = small0;
  muninn::ref::gather_rows(big.data(), ld_big, gi.data(), i64(gi.size()), width, want.data(), ld_small);
  auto dbig = h.put(big), dsmall = h.put(small0);
  auto dgi = h.put_raw(gi);
  gather_rows(h.be, dbig.data(), ld_big, dgi.data(), i64(gi.size()), width, dsmall.data(), ld_small);
  EXPECT_EQ(h.get(dsmall.data(), want.size()), want) << "gather_rows";

  const std::vector<std::int32_t> si = {7, 2, 5};
  const auto src = h.random(si.size() * std::size_t(ld_small), 1302);
  auto want2 = big;
  muninn::ref::scatter_rows(want2.data(), ld_big, si.data(), src.data(), ld_small, i64(si.size()), width);
  auto dsrc = h.put(src);
  auto dsi = h.put_raw(si);
  scatter_rows(h.be, dbig.data(), ld_big, dsi.data(), dsrc.data(), ld_small, i64(si.size()), width);
  EXPECT_EQ(h.get(dbig.data(), want2.size()), want2) << "scatter_rows";

  // Gated add, with a gate per row and with none (gate 1).
  const std::vector<float> gate = {0.25f, -1.5f, 0.8f};
  for (bool gated : {true, false}) {
    auto want3 = want2;
    muninn::ref::scatter_add_gated(want3.data(), ld_big, si.data(), src.data(), ld_small,
                                   gated ? gate.data() : nullptr, i64(si.size()), width);
    auto dst = h.put(want2);
    auto dgate = h.put_raw(gate);
    scatter_add_gated(h.be, dst.data(), ld_big, dsi.data(), dsrc.data(), ld_small, gated ? dgate.data() : nullptr,
                      i64(si.size()), width);
    EXPECT_TRUE(close(h.get(dst.data(), want3.size()), want3, h.tol, gated ? "scatter_add_gated" : "scatter_add"));
  }
}

// ---------------------------------------------------------------------- softmax and stats

TYPED_TEST_P(OpCases, SoftmaxAndLogSoftmaxRows) {
  using namespace op_cases;
  const auto& h = this->h();
  const i64 shapes[][2] = {{1, 1}, {3, 1003}, {2, 65536}};
  std::uint32_t seed = 1400;
  for (const auto& s : shapes) {
    const i64 rows = s[0], cols = s[1];
    auto x = random_vec(std::size_t(rows * cols), seed++, -20.0f, 20.0f);
    if (rows > 1)
      for (i64 c = 0; c < cols; ++c) x[std::size_t(cols + c)] += 1000.0f;  // e^x overflows unshifted
    x = h.round(x);
    std::vector<float> p(x.size()), lp(x.size());
    muninn::ref::softmax_rows(x.data(), p.data(), rows, cols);
    muninn::ref::log_softmax_rows(x.data(), lp.data(), rows, cols);
    auto dx = h.put(x);
    auto dy = h.put_raw(std::vector<float>(x.size()));
    softmax_rows(h.be, dx.data(), dy.data(), rows, cols);
    EXPECT_TRUE(close(h.get_raw(dy.data(), x.size()), p, h.tol.stat_rel, h.tol.stat_rel,
                      "softmax_rows " + dims({rows, cols})));
    log_softmax_rows(h.be, dx.data(), dy.data(), rows, cols);
    EXPECT_TRUE(close(h.get_raw(dy.data(), x.size()), lp, h.tol.stat_rel, h.tol.stat_rel,
                      "log_softmax_rows " + dims({rows, cols})));
  }
}

TYPED_TEST_P(OpCases, ArgmaxRows) {
  using namespace op_cases;
  const auto& h = this->h();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const i64 rows = 6, cols = 1000;
  auto x = random_vec(std::size_t(rows * cols), 1500, -4.0f, 4.0f);
  x[100] = 9.0f;  // row 0: a tie, the first wins
  x[700] = 9.0f;
  x[cols + 5] = nan;  // row 1: NaNs are ignored
  x[cols + 6] = 50.0f;
  x[cols + 7] = nan;
  for (i64 c = 0; c < cols; ++c) x[std::size_t(2 * cols + c)] = -inf;  // row 2: all −inf → 0
  for (i64 c = 0; c < cols; ++c) x[std::size_t(3 * cols + c)] = nan;   // row 3: all NaN → 0
  x[std::size_t(3 * cols + 999)] = -inf;                               //   ... except a −inf
  x[std::size_t(5 * cols + 999)] = 9.5f;                               // row 5: the last column
  x = h.round(x);
  std::vector<std::int32_t> want(rows);
  muninn::ref::argmax_rows(x.data(), rows, cols, want.data());
  auto dx = h.put(x);
  auto dout = h.put_raw(std::vector<std::int32_t>(rows, -7));
  argmax_rows(h.be, dx.data(), rows, cols, dout.data());
  EXPECT_EQ(h.get_raw(dout.data(), std::size_t(rows)), want);
  EXPECT_EQ(want[3], 999);
}

TYPED_TEST_P(OpCases, TopkRows) {
  using namespace op_cases;
  const auto& h = this->h();
  const i64 rows = 3, cols = 5000;
  auto x = random_vec(std::size_t(rows * cols), 1600, -3.0f, 3.0f);
  for (i64 i = 0; i < 40; i += 4) x[std::size_t(i * 97)] = 5.0f;  // row 0: ten ties at the top
  x[123] = -0.0f;
  x[124] = 0.0f;
  x[std::size_t(cols + 10)] = std::numeric_limits<float>::quiet_NaN();  // row 1: NaN ranks as −inf
  for (i64 c = 0; c < cols; c += 2) x[std::size_t(2 * cols + c)] = 1.0f;  // row 2: half of it tied
  x = h.round(x);
  for (i64 k : {i64(1), i64(10), i64(37), cols}) {
    std::vector<float> wv(std::size_t(rows * k));
    std::vector<std::int32_t> wi(std::size_t(rows * k));
    muninn::ref::topk_rows(x.data(), rows, cols, k, wv.data(), wi.data());
    auto dx = h.put(x);
    auto dv = h.put_raw(std::vector<float>(wv.size()));
    auto di = h.put_raw(std::vector<std::int32_t>(wi.size()));
    topk_rows(h.be, dx.data(), rows, cols, k, dv.data(), di.data());
    const auto gv = h.get_raw(dv.data(), wv.size());
    const auto gi = h.get_raw(di.data(), wi.size());
    for (std::size_t i = 0; i < wv.size(); ++i) {
      ASSERT_EQ(gi[i], wi[i]) << "k=" << k << " entry " << i;
      ASSERT_TRUE(gv[i] == wv[i] && std::signbit(gv[i]) == std::signbit(wv[i])) << "k=" << k << " entry " << i;
    }
  }
}

TYPED_TEST_P(OpCases, KlAndEntropyRows) {
  using namespace op_cases;
  const auto& h = this->h();
  const float inf = std::numeric_limits<float>::infinity();
  const i64 cols = 5000;
  // Rows: unrelated distributions; close ones (KL ~ 1e-6); identical (KL 0); peaked; p = 0 entries.
  std::vector<float> a, b;
  const auto r0a = random_vec(cols, 1700, -5.0f, 5.0f), r0b = random_vec(cols, 1701, -5.0f, 5.0f);
  const auto noise = random_vec(cols, 1702, -2e-3f, 2e-3f);
  auto r1b = r0a;
  for (i64 c = 0; c < cols; ++c) r1b[std::size_t(c)] += noise[std::size_t(c)];
  auto r3a = random_vec(cols, 1703, -3.0f, 3.0f), r3b = random_vec(cols, 1704, -3.0f, 3.0f);
  r3a[10] = 30.0f;  // peaked: one token holds almost all the mass
  r3b[10] = 29.0f;
  auto r4a = r0a, r4b = r0b;
  for (i64 c = 0; c < cols; c += 7) r4a[std::size_t(c)] = -inf;  // p = 0 there
  using row = const std::vector<float>*;
  for (row v : {row(&r0a), row(&r0a), row(&r0a), row(&r3a), row(&r4a)}) a.insert(a.end(), v->begin(), v->end());
  for (row v : {row(&r0b), row(&r1b), row(&r0a), row(&r3b), row(&r4b)}) b.insert(b.end(), v->begin(), v->end());
  a = h.round(a);
  b = h.round(b);
  const i64 rows = 5;
  std::vector<float> kl(rows), ent(rows);
  muninn::ref::kl_rows(a.data(), b.data(), rows, cols, kl.data());
  muninn::ref::entropy_rows(a.data(), rows, cols, ent.data());
  auto da = h.put(a), db = h.put(b);
  auto dout = h.put_raw(std::vector<float>(rows));
  kl_rows(h.be, da.data(), db.data(), rows, cols, dout.data());
  const auto got_kl = h.get_raw(dout.data(), std::size_t(rows));
  EXPECT_TRUE(close_stat(got_kl, kl, h.tol, "kl_rows"));
  EXPECT_EQ(got_kl[2], 0.0f) << "identical rows";
  entropy_rows(h.be, da.data(), rows, cols, dout.data());
  EXPECT_TRUE(close_stat(h.get_raw(dout.data(), std::size_t(rows)), ent, h.tol, "entropy_rows"));
  // A uniform row has entropy log(cols).
  auto du = h.put(std::vector<float>(std::size_t(cols), 0.25f));
  entropy_rows(h.be, du.data(), 1, cols, dout.data());
  EXPECT_TRUE(close_stat(h.get_raw(dout.data(), 1), {float(std::log(double(cols)))}, h.tol, "uniform entropy"));
  // kl_div_rows takes log-probabilities.
  std::vector<float> la(a.size()), lb(b.size()), kd(rows);
  muninn::ref::log_softmax_rows(a.data(), la.data(), rows, cols);
  muninn::ref::log_softmax_rows(b.data(), lb.data(), rows, cols);
  muninn::ref::kl_div_rows(la.data(), lb.data(), kd.data(), rows, cols);
  auto dla = h.put_raw(la), dlb = h.put_raw(lb);
  kl_div_rows(h.be, dla.data(), dlb.data(), dout.data(), rows, cols);
  EXPECT_TRUE(close_stat(h.get_raw(dout.data(), std::size_t(rows)), kd, h.tol, "kl_div_rows"));
}

REGISTER_TYPED_TEST_SUITE_P(OpCases, GemmNt, RmsNormWithAndWithoutWeight, AddRmsNormAliasing, LayerNormAffineVariants,
                            SiluMulPaddedAndInPlace, SiluAndGeluInPlace, AddAndScale, Embedding, RopeInterleaved, RopeHalf,
                            AttentionCausalLegacyOverload, AttentionMasks, AttentionRaggedPositions,
                            GatherScatterRows, SoftmaxAndLogSoftmaxRows, ArgmaxRows, TopkRows, KlAndEntropyRows);
