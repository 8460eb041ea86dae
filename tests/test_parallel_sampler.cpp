// The parallel (diffusion-style) sampler. Oracle: tools/reference's own PyTorch implementation
// of the reference's `generate_diffusion_style` (tests/data/huginn/tiny_f32/parallel.json), run
// with the same counter-based random streams; plus the option checks and the stream layout.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "muninn/muninn.hpp"
#include "test_model_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_parallel_sampler {

using namespace muninn;

namespace {

using muninn_test::data_dir;
using muninn_test::ids_of;
using tiny_model = model<host_backend, float>;

const tiny_model& tiny() {
  static const tiny_model m = tiny_model::load(data_dir + "tiny_f32");
  return m;
}

const std::vector<std::int32_t> kPrompt = {1, 5, 9, 20, 33};

generate_options base(std::int64_t new_tokens = 10) {
  generate_options g;
  g.max_new_tokens = new_tokens;
  g.run.steps = 8;
  return g;
}

parallel_options small_wave() {
  parallel_options p;
  p.max_wavefront = 6;
  return p;
}

std::string error_of(const parallel_options& p, generate_options g = base()) {
  try {
    generate_parallel(tiny(), kPrompt, g, p);
  } catch (const muninn::error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ParallelSampler, MatchesTheReferenceCases) {
  const io::json doc = io::read_json_file(data_dir + "tiny_f32/parallel.json");
  int n = 0;
  for (const auto& c : doc.at("cases").as_array()) {
    SCOPED_TRACE(c.at("name").as_string());
    generate_options g;
    g.max_new_tokens = c.at("max_new_tokens").as_int();
    g.run.steps = c.at("num_steps").as_int();
    g.run.seed = std::uint64_t(c.at("seed").as_int());
    g.stop_ids = ids_of(c.at("stop_ids"));
    parallel_options p;
    p.inner_recurrence = c.at("inner_recurrence").as_int();
    p.headway = c.at("headway").as_int();
    p.max_wavefront = c.at("max_wavefront").as_int();
    p.ema_embeds = float(c.at("ema_embeds").as_double());
    p.state_noise_mixing = float(c.at("state_noise_mixing").as_double());
    p.dampened_state_mixer = c.at("dampened_state_mixer").as_bool();
    p.sqrt_mixer = c.at("sqrt_mixer").as_bool();
    p.freeze = parse_freeze_rule(c.at("freeze").as_string());
    p.freeze_threshold = c.at("exit_threshold").as_double();
    p.continuous_compute = c.at("continuous_compute").as_bool();
    p.max_diffusion_steps = c.at("max_diffusion_steps").as_int();
    p.kv_budget = c.at("kv_budget").as_int();
    if (p.max_wavefront > 0 && p.max_wavefront <= p.headway) {
      // The reference spins until max_diffusion_steps without a new token; Muninn refuses.
      EXPECT_THROW(generate_parallel(tiny(), ids_of(c.at("prompt")), g, p), muninn::error);
      EXPECT_EQ(ids_of(c.at("expected_tokens")).size(), 1u) << "only the prefill's token";
      continue;
    }
    const auto r = generate_parallel(tiny(), ids_of(c.at("prompt")), g, p);
    EXPECT_EQ(r.tokens, ids_of(c.at("expected_tokens")));
    EXPECT_EQ(r.diffusion_steps, c.at("expected_diffusion_steps").as_int());
    EXPECT_EQ(r.core_passes, c.at("expected_num_core_forward_passes").as_int());
    EXPECT_EQ(r.tokens_forward, c.at("expected_num_tokens_forward").as_int());
    EXPECT_EQ(r.cache_clears, c.at("expected_num_cache_clears").as_int());
    EXPECT_EQ(r.standing_waves, c.at("expected_num_standing_waves").as_int());
    EXPECT_EQ(r.recurrences, ids_of(c.at("expected_recurrence_per_position")));
    ++n;
  }
  EXPECT_GE(n, 9);
}

TEST(ParallelSampler, SameSeedSameTokensOtherSeedOtherRun) {
  const auto a = generate_parallel(tiny(), kPrompt, base(), small_wave());
  const auto b = generate_parallel(tiny(), kPrompt, base(), small_wave());
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.diffusion_steps, b.diffusion_steps);
  EXPECT_EQ(a.cache_clears, b.cache_clears);
  bool differs = false;
  for (std::uint64_t seed = 1; seed < 6 && !differs; ++seed) {
    auto g = base();
    g.run.seed = seed;
    const auto c = generate_parallel(tiny(), kPrompt, g, small_wave());
    differs = c.tokens != a.tokens || c.diffusion_steps != a.diffusion_steps || c.cache_clears != a.cache_clears;
  }
  EXPECT_TRUE(differs) << "the seed reaches the noise streams";
}

TEST(ParallelSampler, ReturnsAtLeastTheTokensAskedForAndCountsRecurrences) {
  for (const freeze_rule f : {freeze_rule::latent_diff, freeze_rule::fixed, freeze_rule::token_stability}) {
    SCOPED_TRACE(freeze_name(f));
    auto p = small_wave();
    p.freeze = f;
    const auto r = generate_parallel(tiny(), kPrompt, base(7), p);
    EXPECT_GE(r.tokens.size(), 7u);
    ASSERT_EQ(r.recurrences.size(), kPrompt.size() + r.tokens.size());
    for (std::size_t i = 0; i <= kPrompt.size(); ++i) EXPECT_GE(r.recurrences[i], 8) << "prefill depth, position " << i;
    ASSERT_EQ(r.steps.size(), r.tokens.size());
    for (std::size_t i = 0; i < r.tokens.size(); ++i) EXPECT_EQ(r.steps[i], r.recurrences[kPrompt.size() + i - 1]);
    // No stop token: every sampler step completes, and the prefill counts once.
    EXPECT_EQ(r.core_passes, 1 + r.diffusion_steps * p.inner_recurrence);
  }
}

TEST(ParallelSampler, RejectsBadOptions) {
  auto p = small_wave();
  p.inner_recurrence = 0;
  EXPECT_NE(error_of(p).find("inner_recurrence must be >= 1"), std::string::npos);
  p = small_wave();
  p.headway = 0;
  EXPECT_NE(error_of(p).find("headway must be >= 1"), std::string::npos);
  p = small_wave();
  p.max_wavefront = 1;
  EXPECT_NE(error_of(p).find("must exceed headway"), std::string::npos);
  p = small_wave();
  p.ema_embeds = 1.5f;
  EXPECT_NE(error_of(p).find("ema_embeds must be in [0, 1]"), std::string::npos);
  p = small_wave();
  p.state_noise_mixing = -0.1f;
  EXPECT_NE(error_of(p).find("state_noise_mixing must be in [0, 1]"), std::string::npos);
  p = small_wave();
  p.freeze_threshold = -1;
  EXPECT_NE(error_of(p).find("freeze_threshold must be >= 0"), std::string::npos);
  auto g = base();
  g.run.warm = warm_start::raw;
  EXPECT_NE(error_of(small_wave(), g).find("continuous_compute"), std::string::npos);
  g = base();
  g.draft_steps = 2;
  g.lookahead = 2;
  EXPECT_NE(error_of(small_wave(), g).find("speculative"), std::string::npos);
  EXPECT_THROW(parse_freeze_rule("latent-acceleration-1"), muninn::error);
  auto ctx = tiny().make_context(32, 8);
  tiny().forward(ctx, {1, 2});
  EXPECT_THROW(generate_parallel(tiny(), ctx, kPrompt, base(), small_wave()), muninn::error);
}

// The stream seeds of different kinds and steps differ, and the noise they draw reaches the run.
TEST(ParallelSampler, StreamSeedsAreDistinct) {
  EXPECT_NE(parallel_stream_seed(0, 1, 0), parallel_stream_seed(0, 2, 0));
  EXPECT_NE(parallel_stream_seed(0, 1, 1), parallel_stream_seed(0, 1, 0));
  EXPECT_NE(parallel_stream_seed(1, 1, 0), parallel_stream_seed(0, 1, 0));
  auto loud = small_wave(), quiet = small_wave();
  loud.dampened_state_mixer = false;  // half of every state is fresh noise at every step
  loud.max_diffusion_steps = 40;      // such states never settle: bound the run
  quiet.state_noise_mixing = 0;
  const auto a = generate_parallel(tiny(), kPrompt, base(), loud);
  const auto b = generate_parallel(tiny(), kPrompt, base(), quiet);
  EXPECT_TRUE(a.tokens != b.tokens || a.diffusion_steps != b.diffusion_steps || a.cache_clears != b.cache_clears);
}

}  // namespace test_parallel_sampler
