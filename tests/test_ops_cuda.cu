// CUDA backend and CUDA ops, checked against the host ops (the oracle) for float and bf16.
//
// Every test needs a GPU: the fixture skips when cuda_backend::available() is false, so on a
// machine without one (or without a driver) the whole binary reports SKIPPED and exits 0.
//
// Tolerances (|got - want| <= abs + rel·|want|, want = host op on the same T-rounded inputs):
//
//   dtype | rel  | abs  | why
//   ------+------+------+----------------------------------------------------------------
//   f32   | 1e-4 | 1e-5 | same maths in fp32; only summation order and exp/sqrt ulps differ
//   bf16  | 2e-2 | 1e-2 | outputs (and PyTorch-style intermediates) are rounded to bf16
//                         (2^-9 relative per rounding); the host oracle computes in fp32
//
// GEMM scales the tolerance by Σ|alpha·a·b| + |beta·c| per element (error grows with K).
// Attention keeps the dtype's rel but an abs of 1e-5 (only the final rounding differs).
// Softmax-family outputs are fp32 for either input type and use the f32 row. Random fills
// and arg-max / top-k are compared exactly.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "muninn/cuda.cuh"
#include "muninn/ops/ops.hpp"
#include "muninn/ops/random.hpp"
#include "muninn/ops/reference/softmax.hpp"
#include "muninn/ops/rope.hpp"
#include "test_util.hpp"
#include "test_util_cuda.cuh"

namespace {

using namespace muninn;

template <class T>
struct tolerance;
template <>
struct tolerance<float> {
  static constexpr double rel = 1e-4, abs = 1e-5;
};
template <>
struct tolerance<bf16> {
  static constexpr double rel = 2e-2, abs = 1e-2;
};

using muninn_test::random_vec;
using muninn_test::rounded;
using muninn_test::to_device;
using muninn_test::to_host;

/// Element-wise |got - want| <= abs + rel·|want| (NaN always fails).
::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                                     double abs, const std::string& what) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " != " << want.size();
  std::size_t bad = 0, first = 0;
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    const double lim = abs + rel * std::fabs(double(want[i]));
    if (!(d <= lim)) {
      if (bad++ == 0) first = i;
    }
    if (d / lim > worst) worst = d / lim;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size() << " elements outside tolerance"
                                       << "; first at " << first << ": got " << got[first] << ", want "
                                       << want[first] << " (worst error/limit " << worst << ")";
}

template <class T>
::testing::AssertionResult close_as(const std::vector<float>& got, const std::vector<float>& want,
                                    const std::string& what) {
  return all_close(got, want, tolerance<T>::rel, tolerance<T>::abs, what);
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_backend::available()) GTEST_SKIP() << "no CUDA device (" << muninn_test::no_cuda_device_reason() << ")";
    be = cuda_backend::create();
  }
  cuda_backend be;
  host_backend host;
};

template <class T>
class CudaOps : public CudaTest {};

struct storage_names {
  template <class T>
  static std::string GetName(int) {
    return std::is_same_v<T, float> ? "f32" : "bf16";
  }
};
using storage_types = ::testing::Types<float, bf16>;
TYPED_TEST_SUITE(CudaOps, storage_types, storage_names);

// ------------------------------------------------------------------------------- backend

TEST_F(CudaTest, BufferRoundTripCopyAndZero) {
  const std::size_t n = 1000;
  std::vector<float> src = random_vec(n, 1), back(n, -1.0f);
  auto a = be.alloc<float>(n);
  auto b = be.alloc_zeroed<float>(n);
  EXPECT_EQ(a.size(), n);
  be.download(back.data(), b.data(), n);
  for (float x : back) ASSERT_EQ(x, 0.0f);
  be.upload(a.data(), src.data(), n);
  be.copy(b.data() + 10, a.data(), n - 10);
  be.download(back.data(), b.data(), n);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(back[i], 0.0f);
  for (std::size_t i = 10; i < n; ++i) ASSERT_EQ(back[i], src[i - 10]);
  be.fill_zero(b.data(), 5);
  be.download(back.data(), b.data(), 10);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(back[i], 0.0f);
  auto moved = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(moved.size(), n);
}

TEST_F(CudaTest, CopiesShareOneContext) {
  cuda_backend copy = be;
  EXPECT_EQ(copy.stream(), be.stream());
  EXPECT_EQ(copy.cublas(), be.cublas());
  void* w = copy.workspace(12345);
  EXPECT_GE(be.workspace_size(), std::size_t(12345));
  EXPECT_EQ(be.workspace(100), w);  // a smaller request reuses the block
  EXPECT_FALSE(be.device_name().empty());
  EXPECT_GT(be.sm_count(), 0);
}

TEST_F(CudaTest, ErrorsNameTheCallAndPlace) {
  try {
    MUNINN_CUDA_CHECK(cudaSetDevice(-1));
    FAIL() << "cudaSetDevice(-1) did not fail";
  } catch (const muninn::error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cudaSetDevice(-1)"), std::string::npos) << m;
    EXPECT_NE(m.find("test_ops_cuda.cu"), std::string::npos) << m;
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // the failure does not leak into later checks
  EXPECT_THROW(cuda_backend::create(1 << 20), muninn::error);
  EXPECT_THROW(cuda_backend{}.synchronize(), muninn::error);
  be.synchronize();  // still healthy
}

// ---------------------------------------------------------------------------------- GEMM

struct gemm_case {
  std::int64_t M, N, K, lda, ldb, ldc;
  float alpha, beta;
};

TYPED_TEST(CudaOps, GemmNtMatchesHost) {
  using T = TypeParam;
  const cuda_backend& be = this->be;
  const gemm_case cases[] = {
      {1, 300, 257, 257, 260, 300, 1.0f, 0.0f},    // decode GEMV
      {37, 53, 129, 131, 129, 60, 0.5f, 1.5f},     // odd sizes, padded strides, beta
      {128, 96, 64, 64, 64, 96, 1.0f, 1.0f},       // residual-style accumulate
      {5, 7, 0, 1, 1, 9, 1.0f, 2.0f},              // empty product: C = beta·C
  };
  std::uint32_t seed = 10;
  for (const auto& c : cases) {
    const auto A = rounded<T>(random_vec(std::size_t(c.M * c.lda), seed++));
    const auto B = rounded<T>(random_vec(std::size_t(c.N * c.ldb), seed++));
    const auto C0 = rounded<T>(random_vec(std::size_t(c.M * c.ldc), seed++));
    auto dA = to_device<T>(be, A), dB = to_device<T>(be, B), dC = to_device<T>(be, C0);
    gemm_nt(be, c.M, c.N, c.K, c.alpha, dA.data(), c.lda, dB.data(), c.ldb, c.beta, dC.data(), c.ldc);
    const auto got = to_host(be, dC.data(), C0.size());
    auto want = C0;
    gemm_nt(this->host, c.M, c.N, c.K, c.alpha, A.data(), c.lda, B.data(), c.ldb, c.beta, want.data(), c.ldc);
    std::vector<float> g, w;
    double worst = 0.0;
    std::size_t bad = 0;
    for (std::int64_t i = 0; i < c.M; ++i)
      for (std::int64_t j = 0; j < c.N; ++j) {
        double bound = std::fabs(c.beta * C0[std::size_t(i * c.ldc + j)]);
        for (std::int64_t k = 0; k < c.K; ++k)
          bound += std::fabs(c.alpha * A[std::size_t(i * c.lda + k)] * B[std::size_t(j * c.ldb + k)]);
        const double d = std::fabs(got[std::size_t(i * c.ldc + j)] - want[std::size_t(i * c.ldc + j)]);
        const double lim = tolerance<T>::rel * bound + 1e-6;
        if (!(d <= lim)) ++bad;
        worst = std::max(worst, d / lim);
      }
    EXPECT_EQ(bad, 0u) << "M=" << c.M << " N=" << c.N << " K=" << c.K << " worst error/limit " << worst;
    // Padding columns of C beyond N are untouched.
    for (std::int64_t i = 0; i < c.M; ++i)
      for (std::int64_t j = c.N; j < c.ldc; ++j)
        ASSERT_EQ(got[std::size_t(i * c.ldc + j)], C0[std::size_t(i * c.ldc + j)]);
  }
}

// ------------------------------------------------------------------------------- norms

TYPED_TEST(CudaOps, RmsNormMatchesHost) {
  using T = TypeParam;
  const cuda_backend& be = this->be;
  const std::int64_t shapes[][2] = {{3, 5280}, {4, 37}, {1, 64}, {2, 4104}};
  std::uint32_t seed = 100;
  for (const auto& s : shapes) {
    const std::int64_t rows = s[0], cols = s[1];
    const auto x = rounded<T>(random_vec(std::size_t(rows * cols), seed++, -3.0f, 3.0f));
    const auto w = rounded<T>(random_vec(std::size_t(cols), seed++, 0.5f, 1.5f));
    std::vector<float> want(x.size());
    rmsnorm(this->host, x.data(), w.data(), want.data(), rows, cols, 1e-6f);
    auto dx = to_device<T>(be, x), dw = to_device<T>(be, w);
    auto dy = be.alloc<T>(x.size());
    rmsnorm(be, dx.data(), dw.data(), dy.data(), rows, cols, 1e-6f);
    EXPECT_TRUE(close_as<T>(to_host(be, dy.data(), x.size()), want, "rmsnorm cols=" + std::to_string(cols)));
    rmsnorm(be, dx.data(), dw.data(), dx.data(), rows, cols, 1e-6f);  // in place
    EXPECT_TRUE(close_as<T>(to_host(be, dx.data(), x.size()), want, "rmsnorm in place cols=" + std::to_string(cols)));
  }
}

TYPED_TEST(CudaOps, AddRmsNormMatchesHostWithAliasing) {
  using T = TypeParam;
  const cuda_backend& be = this->be;
  const std::int64_t shapes[][2] = {{3, 5280}, {5, 45}};
  std::uint32_t seed = 200;
  for (const auto& s : shapes) {
    const std::int64_t rows = s[0], cols = s[1];
    const std::size_t n = std::size_t(rows * cols);
    const auto a = rounded<T>(random_vec(n, seed++, -2.0f, 2.0f));
    const auto b = rounded<T>(random_vec(n, seed++, -2.0f, 2.0f));
    const auto w = rounded<T>(random_vec(std::size_t(cols), seed++, 0.5f, 1.5f));
    std::vector<float> want(n);
    add_rmsnorm(this->host, a.data(), b.data(), w.data(), want.data(), rows, cols, 1e-6f);
    auto dw = to_device<T>(be, w);
    for (int alias = 0; alias < 3; ++alias) {  // separate y, y == a, y == b
      auto da = to_device<T>(be, a), db = to_device<T>(be, b);
      auto dy = be.alloc<T>(n);
      T* y = alias == 0 ? dy.data() : alias == 1 ? da.data() : db.data();
      add_rmsnorm(be, da.data(), db.data(), dw.data(), y, rows, cols, 1e-6f);
      EXPECT_TRUE(close_as<T>(to_host(be, y, n), want,
                              "add_rmsnorm cols=" + std::to_string(cols) + " alias=" + std::to_string(alias)));
    }
  }
}

// ------------------------------------------------------------------------ element-wise

TYPED_TEST(CudaOps, AddAndScaleMatchHost) {
  using T = TypeParam;
  const cuda_backend& be = this->be;
  std::uint32_t seed = 300;
  for (std::int64_t n : {1, 7, 4099, 100003}) {
    for (int misalign = 0; misalign < 2; ++misalign) {  // +1 element: no 16-byte packs
      const std::size_t total = std::size_t(n + misalign);
      const auto a = rounded<T>(random_vec(total, seed++));
      const auto b = rounded<T>(random_vec(total, seed++));
      auto da = to_device<T>(be, a), db = to_device<T>(be, b), dy = be.alloc<T>(total);
      add(be, da.data() + misalign, db.data() + misalign, dy.data() + misalign, n);
      std::vector<float> want(total);
      add(this->host, a.data() + misalign, b.data() + misalign, want.data() + misalign, n);
      auto got = to_host(be, dy.data(), total);
      EXPECT_TRUE(close_as<T>(std::vector<float>(got.begin() + misalign, got.end()),
                              std::vector<float>(want.begin() + misalign, want.end()), "add n=" + std::to_string(n)));
      add(be, da.data() + misalign, db.data() + misalign, da.data() + misalign, n);  // y == a
      got = to_host(be, da.data(), total);
      EXPECT_TRUE(close_as<T>(std::vector<float>(got.begin() + misalign, got.end()),
                              std::vector<float>(want.begin() + misalign, want.end()), "add in place"));

      scale(be, db.data() + misalign, -1.75f, n);
      auto ws = b;
      scale(this->host, ws.data() + misalign, -1.75f, n);
      got = to_host(be, db.data(), total);
      EXPECT_TRUE(close_as<T>(got, ws, "scale n=" + std::to_string(n)));
    }
  }
}

TYPED_TEST(CudaOps, SiluMulMatchesHost) {
  using T = TypeParam;
  const cuda_backend& be = this->be;
  struct c_t {
    std::int64_t rows, inter, ld_in, ld_out;
  };
  const c_t cases[] = {{3, 200, 408, 208}, {4, 37, 80, 40}, {1, 17920, 35840, 17920}};
  std::uint32_t seed = 400;
  for (const auto& c : cases) {
    const auto in = rounded<T>(random_vec(std::size_t(c.rows * c.ld_in), seed++, -6.0f, 6.0f));
    const auto out0 = rounded<T>(random_vec(std::size_t(c.rows * c.ld_out), seed++));
    auto want = out0;
    silu_mul(this->host, in.data(), c.ld_in, want.data(), c.ld_out, c.rows, c.inter);
    auto din = to_device<T>(be, in), dout = to_device<T>(be, out0);
    silu_mul(be, din.data(), c.ld_in, dout.data(), c.ld_out, c.rows, c.inter);
    EXPECT_TRUE(close_as<T>(to_host(be, dout.data(), out0.size()), want, "silu_mul inter=" + std::to_string(c.inter)));
  }
}

// ---------------------------------------------------------------------------------- RoPE

TYPED_TEST(CudaOps, RopeMatchesHost) {
  using T = TypeParam;
  const cuda_backend& be = this->be;
  const std::int64_t rows = 5, H = 3, D = 96, ld = H * D + 32, pos0 = 7;
  const auto table = make_rope_table(D, 64, 50000.0f);
  auto dtable = be.alloc<float>(table.size());
  be.upload(dtable.data(), table.data(), table.size());
  const auto x = rounded<T>(random_vec(std::size_t(rows * ld), 500, -2.0f, 2.0f));
  const auto bias = rounded<T>(random_vec(std::size_t(H * D), 501, -0.5f, 0.5f));
  auto dbias = to_device<T>(be, bias);
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    auto want = x;
    rope_interleaved(this->host, want.data(), rows, ld, H, D, with_bias ? bias.data() : nullptr, table.data(), pos0);
    auto dx = to_device<T>(be, x);
    rope_interleaved(be, dx.data(), rows, ld, H, D, with_bias ? dbias.data() : nullptr, dtable.data(), pos0);
    const auto got = to_host(be, dx.data(), x.size());
    EXPECT_TRUE(close_as<T>(got, want, with_bias ? "rope with bias" : "rope"));
    rope_interleaved(be, dx.data(), 0, ld, H, D, nullptr, dtable.data(), 0);  // a literal nullptr bias compiles
    for (std::int64_t r = 0; r < rows; ++r)  // columns past the heads are untouched
      for (std::int64_t j = H * D; j < ld; ++j) ASSERT_EQ(got[std::size_t(r * ld + j)], x[std::size_t(r * ld + j)]);
  }
}

// ----------------------------------------------------------------------------- attention

struct attn_case {
  std::int64_t nq, nkv, H, Hkv, D, pad_q, pad_kv;
};

TYPED_TEST(CudaOps, AttentionMatchesHostOnBothPaths) {
  using T = TypeParam;
  using detail::gpu::attention_path;
  const cuda_backend& be = this->be;
  const attn_case cases[] = {
      {33, 33, 4, 4, 64, 0, 0},     // square causal
      {20, 50, 4, 2, 96, 16, 8},    // chunked prefill against a cache, GQA, padded strides
      {1, 77, 6, 3, 128, 0, 0},     // decode, GQA
      {5, 300, 2, 1, 96, 0, 1},     // odd K/V stride: no 16-byte K loads
      {9, 1000, 2, 2, 128, 8, 0},   // many splits
      {3, 3, 2, 2, 64, 0, 0},       // tiny
      {70, 200, 55, 55, 96, 0, 0},  // Huginn's heads, several query blocks
  };
  std::uint32_t seed = 600;
  for (const auto& c : cases) {
    const std::int64_t ldq = c.H * c.D + c.pad_q, ldkv = c.Hkv * c.D + c.pad_kv, ldo = c.H * c.D + c.pad_q;
    const auto q = rounded<T>(random_vec(std::size_t(c.nq * ldq), seed++, -2.0f, 2.0f));
    const auto k = rounded<T>(random_vec(std::size_t(c.nkv * ldkv), seed++, -2.0f, 2.0f));
    const auto v = rounded<T>(random_vec(std::size_t(c.nkv * ldkv), seed++));
    const float sc = 1.0f / std::sqrt(float(c.D));
    std::vector<float> want(std::size_t(c.nq * ldo), 0.0f);
    attention(this->host, q.data(), ldq, k.data(), v.data(), ldkv, want.data(), ldo, c.nq, c.nkv, c.H, c.Hkv, c.D, sc);
    auto dq = to_device<T>(be, q), dk = to_device<T>(be, k), dv = to_device<T>(be, v);
    for (auto path : {attention_path::prefill, attention_path::decode, attention_path::automatic}) {
      auto dout = to_device<T>(be, std::vector<float>(want.size(), 0.0f));
      detail::gpu::attention_dispatch(be, dq.data(), ldq, dk.data(), dv.data(), ldkv, dout.data(), ldo, c.nq, c.nkv,
                                      c.H, c.Hkv, c.D, sc, path);
      // Inputs are identical and the maths is fp32 on both sides, so only the final rounding
      // to T differs: the relative bound alone is enough, with a tiny absolute floor.
      EXPECT_TRUE(all_close(to_host(be, dout.data(), want.size()), want, tolerance<T>::rel, 1e-5,
                              "attention nq=" + std::to_string(c.nq) + " nkv=" + std::to_string(c.nkv) +
                                  " D=" + std::to_string(c.D) + " path=" + std::to_string(int(path))));
    }
  }
}

TYPED_TEST(CudaOps, AttentionRejectsUnsupportedHeadDim) {
  using T = TypeParam;
  const cuda_backend& be = this->be;
  // 64/96/128 have tuned kernels, 1..256 the generic one; wider heads are refused.
  auto buf = be.alloc<T>(4 * 264);
  EXPECT_THROW(attention(be, buf.data(), 264, buf.data(), buf.data(), 264, buf.data(), 264, 1, 1, 1, 1, 264, 1.0f),
               muninn::error);
  EXPECT_THROW(attention(be, buf.data(), 64, buf.data(), buf.data(), 64, buf.data(), 64, 2, 1, 1, 1, 64, 1.0f),
               muninn::error);  // nkv < nq
}

// ----------------------------------------------------------------------------- embedding

TYPED_TEST(CudaOps, EmbeddingMatchesHostAndFlagsBadIds) {
  using T = TypeParam;
  const cuda_backend& be = this->be;
  const std::int64_t vocab = 50, n = 6;
  const std::vector<std::int32_t> ids = {3, 0, 49, 3, 17, 8};
  for (std::int64_t dim : {96, 13}) {
    const auto table = rounded<T>(random_vec(std::size_t(vocab * dim), 700 + std::uint32_t(dim)));
    std::vector<float> want(static_cast<std::size_t>(n * dim));
    embedding(this->host, table.data(), vocab, dim, ids.data(), n, 72.66f, want.data());
    auto dtable = to_device<T>(be, table);
    auto dids = be.alloc<std::int32_t>(ids.size());
    be.upload(dids.data(), ids.data(), ids.size());
    auto dout = be.alloc<T>(want.size());
    embedding(be, dtable.data(), vocab, dim, dids.data(), n, 72.66f, dout.data());
    EXPECT_TRUE(close_as<T>(to_host(be, dout.data(), want.size()), want, "embedding dim=" + std::to_string(dim)));
    be.fill_zero(dout.data(), want.size());
    embedding_from_host_ids(be, dtable.data(), vocab, dim, ids.data(), n, 72.66f, dout.data());
    EXPECT_TRUE(close_as<T>(to_host(be, dout.data(), want.size()), want, "embedding from host ids"));

    auto bad = ids;
    bad[2] = std::int32_t(vocab);
    EXPECT_THROW(embedding_from_host_ids(be, dtable.data(), vocab, dim, bad.data(), n, 1.0f, dout.data()),
                 muninn::error);
    be.upload(dids.data(), bad.data(), bad.size());
    embedding(be, dtable.data(), vocab, dim, dids.data(), n, 72.66f, dout.data());
    const auto got = to_host(be, dout.data(), want.size());
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t c = 0; c < dim; ++c) {
        const float g = got[std::size_t(i * dim + c)];
        if (i == 2)
          ASSERT_TRUE(std::isnan(g)) << "an out-of-range id must give a NaN row";
        else
          ASSERT_FALSE(std::isnan(g));
      }
  }
}

// ------------------------------------------------------------------------------- softmax

TYPED_TEST(CudaOps, SoftmaxAndLogSoftmaxMatchHost) {
  using T = TypeParam;
  const cuda_backend& be = this->be;
  const std::int64_t shapes[][2] = {{3, 65536}, {2, 1003}, {1, 1}};
  std::uint32_t seed = 800;
  for (const auto& s : shapes) {
    const std::int64_t rows = s[0], cols = s[1];
    const std::size_t n = std::size_t(rows * cols);
    const auto x = rounded<T>(random_vec(n, seed++, -10.0f, 10.0f));
    std::vector<float> want_p(n), want_lp(n);
    softmax_rows(this->host, x.data(), want_p.data(), rows, cols);
    log_softmax_rows(this->host, x.data(), want_lp.data(), rows, cols);
    auto dx = to_device<T>(be, x);
    auto dy = be.alloc<float>(n);
    std::vector<float> got(n);
    softmax_rows(be, dx.data(), dy.data(), rows, cols);
    be.download(got.data(), dy.data(), n);
    EXPECT_TRUE(all_close(got, want_p, 1e-4, 1e-9, "softmax cols=" + std::to_string(cols)));
    log_softmax_rows(be, dx.data(), dy.data(), rows, cols);
    be.download(got.data(), dy.data(), n);
    EXPECT_TRUE(all_close(got, want_lp, 1e-4, 1e-5, "log_softmax cols=" + std::to_string(cols)));
    if constexpr (std::is_same_v<T, float>) {
      log_softmax_rows(be, dx.data(), dx.data(), rows, cols);  // in place
      be.download(got.data(), dx.data(), n);
      EXPECT_TRUE(all_close(got, want_lp, 1e-4, 1e-5, "log_softmax in place"));
    }
  }
}

TEST_F(CudaTest, KlDivRowsMatchesReference) {
  const std::int64_t rows = 4, cols = 5000;
  const auto x1 = random_vec(std::size_t(rows * cols), 900, -5.0f, 5.0f);
  const auto x2 = random_vec(std::size_t(rows * cols), 901, -5.0f, 5.0f);
  std::vector<float> lp1(x1.size()), lp2(x2.size());
  log_softmax_rows(host, x1.data(), lp1.data(), rows, cols);
  log_softmax_rows(host, x2.data(), lp2.data(), rows, cols);
  lp1[7] = -std::numeric_limits<float>::infinity();  // p_prev = 0: contributes nothing
  std::vector<float> want(rows);
  muninn::ref::kl_div_rows(lp1.data(), lp2.data(), want.data(), rows, cols);
  auto d1 = be.alloc<float>(lp1.size()), d2 = be.alloc<float>(lp2.size()), dout = be.alloc<float>(rows);
  be.upload(d1.data(), lp1.data(), lp1.size());
  be.upload(d2.data(), lp2.data(), lp2.size());
  kl_div_rows(be, d1.data(), d2.data(), dout.data(), rows, cols);
  std::vector<float> got(rows);
  be.download(got.data(), dout.data(), got.size());
  EXPECT_TRUE(all_close(got, want, 1e-4, 1e-6, "kl_div_rows"));
}

// ------------------------------------------------------------------------- argmax, top-k

TEST_F(CudaTest, ArgmaxMatchesHostIncludingTiesAndNaN) {
  for (std::int64_t n : {1, 1000, 65536, 300001}) {
    auto x = random_vec(std::size_t(n), 1000 + std::uint32_t(n), -4.0f, 4.0f);
    if (n > 10) {
      x[std::size_t(n / 3)] = 9.0f;  // two equal maxima: the first wins
      x[std::size_t(n / 2)] = 9.0f;
      x[std::size_t(n / 5)] = std::numeric_limits<float>::quiet_NaN();  // ignored
    }
    auto dx = be.alloc<float>(x.size());
    be.upload(dx.data(), x.data(), x.size());
    EXPECT_EQ(argmax(be, dx.data(), n), argmax(host, x.data(), n)) << "n=" << n;
  }
}

TEST_F(CudaTest, TopKIsSortedStableAndExact) {
  const std::int64_t n = 5000;
  auto x = random_vec(std::size_t(n), 1100, -3.0f, 3.0f);
  for (std::int64_t i = 0; i < 40; i += 4) x[std::size_t(i * 97)] = 5.0f;  // ten ties at the top
  x[123] = -0.0f;
  std::vector<std::int32_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return x[a] > x[b]; });
  auto dx = be.alloc<float>(x.size());
  be.upload(dx.data(), x.data(), x.size());
  for (std::int64_t k : {std::int64_t(1), std::int64_t(10), std::int64_t(37), n}) {
    auto dv = be.alloc<float>(std::size_t(k));
    auto di = be.alloc<std::int32_t>(std::size_t(k));
    top_k(be, dx.data(), n, k, dv.data(), di.data());
    std::vector<float> vals(static_cast<std::size_t>(k));
    std::vector<std::int32_t> idx(static_cast<std::size_t>(k));
    be.download(vals.data(), dv.data(), vals.size());
    be.download(idx.data(), di.data(), idx.size());
    for (std::int64_t i = 0; i < k; ++i) {
      const auto o = order[std::size_t(i)];
      ASSERT_EQ(vals[std::size_t(i)], x[std::size_t(o)]) << "k=" << k << " rank " << i;
      if (x[std::size_t(o)] != 0.0f)  // ±0 are equal keys for the sort; their order may differ
        ASSERT_EQ(idx[std::size_t(i)], o) << "k=" << k << " rank " << i;
    }
  }
  EXPECT_THROW(top_k(be, dx.data(), n, 0, nullptr, nullptr), muninn::error);
}

// -------------------------------------------------------------------------------- random

TYPED_TEST(CudaOps, TruncatedNormalIsBitIdenticalToHost) {
  using T = TypeParam;
  const cuda_backend& be = this->be;
  const std::int64_t n = 100003;
  const std::uint64_t seed = 1234, offset = 98765;
  const float stddev = 0.5f;
  std::vector<T> want(static_cast<std::size_t>(n)), got(static_cast<std::size_t>(n));
  fill_truncated_normal(this->host, want.data(), n, seed, offset, stddev);
  auto dx = be.alloc<T>(std::size_t(n));
  fill_truncated_normal(be, dx.data(), n, seed, offset, stddev);
  be.download(got.data(), dx.data(), got.size());
  std::size_t diff = 0;
  for (std::int64_t i = 0; i < n; ++i)
    if (std::memcmp(&got[std::size_t(i)], &want[std::size_t(i)], sizeof(T)) != 0) ++diff;
  EXPECT_EQ(diff, 0u) << "elements whose bits differ between host and device";
  for (const T& v : got) ASSERT_LE(std::fabs(to_float(v)), 3.0f * stddev + 1e-6f);
  // A slice drawn alone equals the same slice of a larger draw.
  fill_truncated_normal(be, dx.data(), 1000, seed, offset + 500, stddev);
  be.download(got.data(), dx.data(), 1000);
  EXPECT_EQ(std::memcmp(got.data(), want.data() + 500, 1000 * sizeof(T)), 0);
}

// ---------------------------------------------------------------------------- CUDA graphs

TEST_F(CudaTest, DecodeOpsReplayFromACudaGraph) {
  // A decode-shaped layer slice: GEMV, fused norm, attention over a cache. After the workspace
  // is reserved none of them may allocate or synchronise, so capture must succeed and the
  // replay must reproduce the eager results.
  const std::int64_t h = 256, H = 4, D = 64, nkv = 300;
  const auto x = random_vec(std::size_t(h), 1200), w = random_vec(std::size_t(h * h), 1201, -0.1f, 0.1f);
  const auto g = random_vec(std::size_t(h), 1202, 0.5f, 1.5f), kv = random_vec(std::size_t(nkv * h), 1203);
  auto dx = to_device<float>(be, x), dw = to_device<float>(be, w), dg = to_device<float>(be, g);
  auto dk = to_device<float>(be, kv), dv = to_device<float>(be, kv);
  auto dy = be.alloc<float>(std::size_t(h)), dn = be.alloc<float>(std::size_t(h)), da = be.alloc<float>(std::size_t(h));
  const auto run = [&] {
    gemm_nt(be, 1, h, h, 1.0f, dx.data(), h, dw.data(), h, 0.0f, dy.data(), h);
    add_rmsnorm(be, dy.data(), dx.data(), dg.data(), dn.data(), 1, h, 1e-6f);
    attention(be, dn.data(), h, dk.data(), dv.data(), h, da.data(), h, 1, nkv, H, H, D, 0.125f);
  };
  run();
  const auto eager = to_host(be, da.data(), std::size_t(h));
  be.fill_zero(da.data(), std::size_t(h));
  be.synchronize();

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  MUNINN_CUDA_CHECK(cudaStreamBeginCapture(be.stream(), cudaStreamCaptureModeThreadLocal));
  try {
    run();
  } catch (...) {
    (void)cudaStreamEndCapture(be.stream(), &graph);
    throw;
  }
  MUNINN_CUDA_CHECK(cudaStreamEndCapture(be.stream(), &graph));
  MUNINN_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  MUNINN_CUDA_CHECK(cudaGraphLaunch(exec, be.stream()));
  const auto replay = to_host(be, da.data(), std::size_t(h));
  MUNINN_CUDA_CHECK(cudaGraphExecDestroy(exec));
  MUNINN_CUDA_CHECK(cudaGraphDestroy(graph));
  EXPECT_EQ(replay, eager);
}

}  // namespace

// ------------------------------------------------------------------------------- exit decisions

TYPED_TEST(CudaOps, LatentChangeRowsMatchesHost) {
  using T = TypeParam;
  const std::int64_t rows = 6, h = 300;
  const auto x = rounded<T>(random_vec(std::size_t(rows * h), 21)), p = rounded<T>(random_vec(std::size_t(rows * h), 22));
  std::vector<float> rel(rows), cosd(rows);
  latent_change_rows(this->host, x.data(), p.data(), rows, h, rel.data(), cosd.data());
  auto dx = to_device<T>(this->be, x), dp = to_device<T>(this->be, p);
  auto drel = this->be.template alloc<float>(rows), dcos = this->be.template alloc<float>(rows);
  latent_change_rows(this->be, dx.data(), dp.data(), rows, h, drel.data(), dcos.data());
  EXPECT_TRUE(all_close(to_host(this->be, drel.data(), rows), rel, 1e-6, 1e-7, "relative change"));
  EXPECT_TRUE(all_close(to_host(this->be, dcos.data(), rows), cosd, 1e-6, 1e-7, "cosine distance"));
}

TEST_F(CudaTest, HaltDecideMatchesHost) {
  const std::vector<float> H = {1.0f, 2.0005f, 2.5f};
  std::vector<float> prev = {100.0f, 2.0f, 2.0f};
  std::vector<std::uint8_t> want(3), got(3);
  auto dH = to_device<float>(be, H), dprev = to_device<float>(be, prev);
  auto dmask = be.alloc<std::uint8_t>(3);
  halt_decide(host, halt_rule_kind::entropy_change, H.data(), nullptr, prev.data(), nullptr, nullptr, 3, 1e-3,
              want.data());
  halt_decide(be, halt_rule_kind::entropy_change, dH.data(), nullptr, dprev.data(), nullptr, nullptr, 3, 1e-3,
              dmask.data());
  be.download(got.data(), dmask.data(), 3);
  EXPECT_EQ(got, want);
  EXPECT_EQ(to_host(be, dprev.data(), 3), prev);
}

// ---------------------------------------------------------------------------- TRM / HRM ops

TEST_F(CudaTest, TransposeBatchedMatchesHost) {
  const std::int64_t B = 3, R = 97, C = 45;
  const auto x = random_vec(std::size_t(B * R * C), 5);
  std::vector<float> want(x.size()), got(x.size());
  transpose_batched(host, x.data(), B, R, C, want.data());
  auto dx = be.alloc<float>(x.size());
  auto dy = be.alloc<float>(x.size());
  be.upload(dx.data(), x.data(), x.size());
  transpose_batched(be, static_cast<const float*>(dx.data()), B, R, C, dy.data());
  be.download(got.data(), dy.data(), got.size());
  be.synchronize();
  EXPECT_EQ(got, want);
}

TEST_F(CudaTest, QHaltDecideMatchesHost) {
  const std::int64_t n = 1000;  // several blocks of the kernel
  auto q = random_vec(std::size_t(2 * n), 9);
  q[0] = 0.0f;         // exactly at the threshold: does not halt
  q[2] = q[3] = 0.5f;  // q_halt == q_continue: does not halt
  auto dq = be.alloc<float>(q.size());
  auto dmask = be.alloc<std::uint8_t>(std::size_t(n));
  be.upload(dq.data(), q.data(), q.size());
  for (const q_halt_kind k : {q_halt_kind::above, q_halt_kind::over_continue}) {
    std::vector<std::uint8_t> want(static_cast<std::size_t>(n)), got(static_cast<std::size_t>(n));
    q_halt_decide(host, q.data(), n, k, 0.0f, want.data());
    q_halt_decide(be, static_cast<const float*>(dq.data()), n, k, 0.0f, dmask.data());
    be.download(got.data(), dmask.data(), got.size());
    be.synchronize();
    EXPECT_EQ(got, want) << int(k);
  }
}
