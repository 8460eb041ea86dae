// Whole-model golden tests against tools/reference (PyTorch, fp32) on tiny checkpoints, and the
// inference-path invariants: cache decode == recompute, chunked prefill == full pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "muninn/muninn.hpp"
#include "test_model_util.hpp"

using namespace muninn;

namespace {

using muninn_test::data_dir;
using muninn_test::expected;
using muninn_test::ids_of;
using muninn_test::max_abs_diff;

// fp32 tolerance of the issue: max |Δlogit| ≤ 1e-4 against the fp32 PyTorch reference.
constexpr double kLogitTol = 1e-4;

template <class Arch>
void check_fixture(const std::string& name) {
  SCOPED_TRACE(name);
  const io::json in = io::read_json_file(data_dir + name + "/inputs.json");
  using M = model<host_backend, float, Arch>;
  const M m = M::load(data_dir + name);
  const auto& cfg = m.config();
  const std::int64_t V = cfg.vocab_size, h = cfg.n_embd;
  const auto tokens = ids_of(in.at("tokens"));
  const std::int64_t n = std::int64_t(tokens.size());
  run_options zero;
  zero.init = state_init::zero{};

  // Full-sequence logits at several depths.
  for (const auto& r : in.at("steps").as_array()) {
    run_options o = zero;
    o.steps = r.as_int();
    const auto got = m.forward(tokens, o);
    const auto want = expected(name, "logits_r" + std::to_string(o.steps) + ".npy", {n, V});
    EXPECT_LE(max_abs_diff(got, want), kLogitTol) << "r=" << o.steps;
  }

  // Chunked prefill: n1 tokens, then n2 tokens in one call attending to the cache (bottom-right mask).
  if (const io::json* ch = in.find("chunked")) {
    const std::int64_t n2 = ch->at("n2").as_int();
    const auto got = muninn_test::chunked_logits(m, tokens, *ch, zero);
    EXPECT_LE(max_abs_diff(got, expected(name, ch->at("file").as_string(), {n2, V})), kLogitTol);
  }

  // The raw recurrent state after the last step.
  if (const io::json* lat = in.find("latents")) {
    const auto latents = muninn_test::final_latents(m, tokens, *lat, zero);
    EXPECT_LE(max_abs_diff(latents, expected(name, lat->at("file").as_string(), {n, h})), kLogitTol);
  }

  // A caller-supplied initial state.
  if (const io::json* gs = in.find("given_state")) {
    const auto got = muninn_test::given_state_logits(m, name, tokens, *gs);
    EXPECT_LE(max_abs_diff(got, expected(name, gs->at("file").as_string(), {n, V})), kLogitTol);
  }

  // Greedy generation with the cache gives the reference's tokens.
  if (const io::json* g = in.find("generate")) {
    const generate_options go = muninn_test::generate_case_options(*g);
    EXPECT_EQ(generate_greedy(m, ids_of(g->at("prompt")), go), ids_of(g->at("expected")));
  }
}

}  // namespace

TEST(HuginnGolden, F32SingleFile) { check_fixture<huginn_arch>("tiny_f32"); }
TEST(HuginnGolden, Bf16ShardedWithoutFreqsCis) { check_fixture<huginn_arch>("tiny_bf16_sharded"); }
TEST(HuginnGolden, F16SingleFile) { check_fixture<huginn_arch>("tiny_f16"); }
TEST(HuginnGolden, AddInjection) { check_fixture<arch<block::sandwich, injection::add>>("tiny_add"); }
// The second policy combination: pre-norm blocks, add injection, zero state, GQA, untied head.
TEST(HuginnGolden, PreNormAddGqaUntied) {
  check_fixture<arch<block::pre_norm, injection::add, state_init::zero>>("tiny_prenorm_gqa");
}

TEST(HuginnModel, CacheDecodeEqualsRecompute) {
  using M = model<host_backend, float>;
  const M m = M::load(data_dir + "tiny_f32");
  muninn_test::check_cache_decode_equals_recompute(m, 1e-5);
}

TEST(HuginnModel, RandomStateIsSeededAndPerPosition) {
  using M = model<host_backend, float>;
  const M m = M::load(data_dir + "tiny_f32");
  run_options a;
  a.init = state_init::truncated_normal{};
  a.seed = 11;
  a.steps = 2;
  const std::vector<std::int32_t> seq = {1, 2, 3, 4, 5, 6};
  const auto l1 = m.forward(seq, a);
  EXPECT_EQ(max_abs_diff(l1, m.forward(seq, a)), 0.0);  // same seed, same logits
  run_options b = a;
  b.seed = 12;
  EXPECT_GT(max_abs_diff(l1, m.forward(seq, b)), 1e-3);  // another seed, another state
  // Chunking does not change the random state: each position draws from its own counter range.
  context_limits lim;
  lim.max_tokens = 6;
  lim.max_steps = 2;
  lim.max_chunk = 4;
  auto ctx = m.make_context(lim);
  EXPECT_LE(max_abs_diff(m.forward(ctx, seq, a), l1), 1e-5);
}

TEST(HuginnModel, RandomStateHasHuginnStatistics) {
  // std √(2/(5h))·√h = √0.4 ≈ 0.6325 before truncation at ±3σ; truncation shrinks it by ≈1.3%.
  const std::int64_t n = 200000;
  std::vector<float> x(n);
  const float sigma = float(std::sqrt(0.4));
  fill_truncated_normal(host_backend{}, x.data(), n, 3, 0, sigma);
  double s = 0, s2 = 0, mx = 0;
  for (float v : x) {
    s += v;
    s2 += double(v) * v;
    mx = std::max(mx, std::fabs(double(v)));
  }
  const double mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 5 * sigma / std::sqrt(double(n)));
  EXPECT_NEAR(sd, 0.98658 * sigma, 0.005);  // std of N(0,1) truncated at ±3 is 0.98658
  EXPECT_LE(mx, 3.0 * sigma * (1 + 1e-6));
  EXPECT_GT(mx, 2.5 * sigma);
}

TEST(HuginnModel, ClearErrors) {
  using M = model<host_backend, float>;
  const M m = M::load(data_dir + "tiny_f32");
  auto msg = [](auto&& f) {
    try {
      f();
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(msg([&] { m.forward({1, 128}); }).find("token id 128 at index 1 is out of range for vocab_size 128"),
            std::string::npos);
  EXPECT_NE(msg([&] { m.forward({-1}); }).find("token id -1"), std::string::npos);
  EXPECT_NE(msg([&] { m.forward(std::vector<std::int32_t>(65, 1)); }).find("exceeds block_size 64"), std::string::npos);
  auto ctx = m.make_context(4, 2);
  run_options two;
  two.steps = 2;
  EXPECT_NE(msg([&] { m.forward(ctx, {1, 2, 3, 4, 5}, two); }).find("exceeds the context capacity of 4 tokens"),
            std::string::npos);
  run_options deep;
  deep.steps = 3;
  EXPECT_NE(msg([&] { m.forward(ctx, {1}, deep); }).find("at most 2"), std::string::npos);
  // A model compiled for add-injection refuses a concat-adapter checkpoint.
  using A = model<host_backend, float, arch<block::sandwich, injection::add>>;
  EXPECT_NE(msg([&] { A::load(data_dir + "tiny_f32"); }).find("does not match the compiled injection policy add"),
            std::string::npos);
}
