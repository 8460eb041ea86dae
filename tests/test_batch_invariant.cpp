// Batch-invariant GEMM (host_backend::batch_invariant): a row of A gives bit for bit the same row of C
// whichever rows share the call — alone, in a batch of 2..8 (the dot-tile sizes), or in a prefill
// of dozens (where the default kernel switches to the packed outer-product micro-kernel) — for fp32,
// bf16 and q8 weights, at 1 and 2 threads. The sums still match the double-precision reference
// within the fp32 GEMM tolerance |C - ref| <= 1e-5 · Σ|alpha·a·b| + |beta·c|.
// At the model level (the tiny transformers-written Llamas): with row-invariant kernels a prompt's
// logits are bit for bit the same in one pass, in chunks, token by token with the cache, and as a
// row of a batch with another request — what continuous batching needs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/muninn.hpp"
#include "muninn/ops/gemm_weight.hpp"
#include "muninn/ops/reference/gemm.hpp"
#include "test_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_batch_invariant {

namespace {

using muninn::host_backend;
using muninn::weight_format;
using i64 = std::int64_t;
using muninn_test::ids_of;
using muninn_test::random_vec;

host_backend invariant(int threads) {
  host_backend be{threads};
  be.batch_invariant = true;
  return be;
}

// C = A · Bᵀ for rows [m0, m0 + rows) of A only, into a fresh [rows, N] buffer.
std::vector<float> rows_of(const host_backend& be, const std::vector<float>& A, i64 m0, i64 rows, i64 N, i64 K,
                           const muninn::weight_view& B) {
  std::vector<float> C(std::size_t(rows * N), 0.0f);
  muninn::gemm_nt(be, rows, N, K, 1.0f, A.data() + m0 * K, K, B, 0.0f, C.data(), N);
  return C;
}

struct shape {
  i64 M, N, K;
};

// K below a vector, not a multiple of one, the SmolLM width, and past gemv_rows' longest row.
const shape kShapes[] = {{40, 33, 5}, {40, 70, 100}, {67, 64, 576}, {20, 24, 3104}};

void check_rows_do_not_depend_on_the_call(weight_format fmt) {
  for (const shape& s : kShapes) {
    const auto Bsrc = random_vec(std::size_t(s.N * s.K), 3);
    const auto A = random_vec(std::size_t(s.M * s.K), 4);
    const muninn::host_weight w(host_backend{1}, Bsrc.data(), s.N, s.K, s.K, fmt);
    for (int threads : {1, 2}) {
      const host_backend be = invariant(threads);
      const auto whole = rows_of(be, A, 0, s.M, s.N, s.K, w.view());
      // Every row alone, and windows of every batch size up to 9 starting at a few offsets.
      for (i64 m = 0; m < s.M; ++m) {
        const auto alone = rows_of(be, A, m, 1, s.N, s.K, w.view());
        ASSERT_EQ(std::memcmp(alone.data(), whole.data() + m * s.N, std::size_t(s.N) * 4), 0)
            << muninn::weight_format_name(fmt) << " row " << m << " of " << s.M << "x" << s.N << "x" << s.K << ", "
            << threads << " threads";
      }
      for (i64 rows = 2; rows <= 9; ++rows)
        for (i64 m0 : {i64(0), i64(3), s.M - rows}) {
          const auto part = rows_of(be, A, m0, rows, s.N, s.K, w.view());
          ASSERT_EQ(std::memcmp(part.data(), whole.data() + m0 * s.N, part.size() * 4), 0)
              << muninn::weight_format_name(fmt) << " rows " << m0 << ".." << m0 + rows << " of " << s.M << "x" << s.N
              << "x" << s.K << ", " << threads << " threads";
        }
    }
  }
}

TEST(BatchInvariantGemm, F32RowsAreTheSameAloneOrInAnyBatch) { check_rows_do_not_depend_on_the_call(weight_format::f32); }
TEST(BatchInvariantGemm, Bf16RowsAreTheSameAloneOrInAnyBatch) {
  check_rows_do_not_depend_on_the_call(weight_format::bf16);
}
TEST(BatchInvariantGemm, Q8RowsAreTheSameAloneOrInAnyBatch) { check_rows_do_not_depend_on_the_call(weight_format::q8); }

TEST(BatchInvariantGemm, SumsMatchTheDoublePrecisionReference) {
  for (const shape& s : kShapes) {
    const auto A = random_vec(std::size_t(s.M * s.K), 5), B = random_vec(std::size_t(s.N * s.K), 6);
    auto C0 = random_vec(std::size_t(s.M * s.N), 7);
    for (float beta : {0.0f, 0.5f}) {
      auto got = C0, want = C0;
      muninn::gemm_nt(invariant(2), s.M, s.N, s.K, 1.5f, A.data(), s.K, B.data(), s.K, beta, got.data(), s.N);
      muninn::ref::gemm_nt(s.M, s.N, s.K, 1.5f, A.data(), s.K, B.data(), s.K, beta, want.data(), s.N);
      std::vector<double> mag(got.size());
      muninn::ref::gemm_nt_magnitude(s.M, s.N, s.K, 1.5f, A.data(), s.K, B.data(), s.K, beta, C0.data(), s.N,
                                     mag.data());
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_LE(std::fabs(double(got[i]) - double(want[i])), 1e-5 * mag[i] + 1e-30)
            << s.M << "x" << s.N << "x" << s.K << " beta " << beta << " at " << i;
    }
  }
}

TEST(BatchInvariantGemm, StridedOperandsKeepTheirRows) {
  // lda, ldb and ldc wider than K and N: a batch built from rows of a larger activation buffer.
  const i64 M = 12, N = 10, K = 40, lda = 50, ldb = 45, ldc = 16;
  const auto A = random_vec(std::size_t(M * lda), 8), B = random_vec(std::size_t(N * ldb), 9);
  std::vector<float> whole(std::size_t(M * ldc), -1.0f), alone(std::size_t(ldc), -1.0f);
  muninn::gemm_nt(invariant(1), M, N, K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, whole.data(), ldc);
  for (i64 m = 0; m < M; ++m) {
    muninn::gemm_nt(invariant(1), 1, N, K, 1.0f, A.data() + m * lda, lda, B.data(), ldb, 0.0f, alone.data(), ldc);
    ASSERT_EQ(std::memcmp(alone.data(), whole.data() + m * ldc, std::size_t(N) * 4), 0) << "row " << m;
    for (i64 j = N; j < ldc; ++j) ASSERT_EQ(whole[std::size_t(m * ldc + j)], -1.0f) << "padding written";
  }
}

// ------------------------------------------------------------------------------ at the model level

using llama_model = muninn::model<host_backend, float, muninn::llama_arch>;
const std::string llama_dir = std::string(MUNINN_TEST_DATA) + "/llama/";

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// A fixture with its projection and output matrices in fp32, bf16 or q8 (what `muninn serve
// --dtype bf16 / --quantize q8` loads): batch invariance must hold in every format.
class BatchInvariantLlama : public ::testing::TestWithParam<std::tuple<const char*, weight_format>> {
 protected:
  llama_model load() const {
    llama_model l = llama_model::load(llama_dir + std::get<0>(GetParam()), invariant(2));
    l.store_weights_as(std::get<1>(GetParam()));
    return l;
  }
  llama_model m = load();
  std::vector<std::int32_t> prompt = ids_of(
      muninn::io::read_json_file(llama_dir + std::get<0>(GetParam()) + "/expected.json").at("long").at("prompt_ids"));
};

TEST_P(BatchInvariantLlama, ChunkedPrefillIsBitForBitOnePass) {
  const auto whole = m.forward(prompt);
  for (std::int64_t chunk : {1, 3, 9}) {
    muninn::context_limits lim;
    lim.max_tokens = std::int64_t(prompt.size());
    lim.max_chunk = chunk;
    auto ctx = m.make_context(lim);
    EXPECT_TRUE(same_bits(m.forward(ctx, prompt), whole)) << "chunks of " << chunk;
  }
}

TEST_P(BatchInvariantLlama, TokenByTokenDecodeIsBitForBitOnePass) {
  const auto whole = m.forward(prompt);
  const std::int64_t V = m.config().vocab_size;
  auto ctx = m.make_context(std::int64_t(prompt.size()));
  for (std::size_t t = 0; t < prompt.size(); ++t) {
    const auto row = m.forward(ctx, std::vector<std::int32_t>{prompt[t]});
    ASSERT_TRUE(same_bits(row, std::vector<float>(whole.begin() + std::int64_t(t) * V,
                                                  whole.begin() + std::int64_t(t + 1) * V)))
        << "position " << t;
  }
}

TEST_P(BatchInvariantLlama, BatchRowsAreBitForBitSingleRuns) {
  const std::vector<std::int32_t> other(prompt.begin(), prompt.begin() + 5);
  auto ca = m.make_context(128), cb = m.make_context(128);
  auto ws = m.make_workspace(std::int64_t(prompt.size() + other.size()));
  const auto rows = m.forward_batch(ws, {&ca, &cb}, {prompt, other}, {}, muninn::logits_for::all);
  EXPECT_TRUE(same_bits(rows[0], m.forward(prompt)));
  EXPECT_TRUE(same_bits(rows[1], m.forward(other)));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BatchInvariantLlama,
                         ::testing::Combine(::testing::Values("tiny_untied_gqa", "tiny_linear_bias"),
                                            ::testing::Values(weight_format::f32, weight_format::bf16,
                                                              weight_format::q8)));

}  // namespace

}  // namespace test_batch_invariant
