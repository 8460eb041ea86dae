// Inference features on the host: early exit, KV budget and fallback, warm start, speculative
// decoding, batching, trajectories. Oracles: fixed-depth passes of the same model, plain greedy
// decoding, single-row generation, and tools/reference (runtime.json) for whole generations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "muninn/muninn.hpp"
#include "test_model_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_runtime {

using namespace muninn;

namespace {

using muninn_test::data_dir;
using muninn_test::ids_of;
using muninn_test::max_abs_diff;
using adaptive_model = model<host_backend, float, huginn_adaptive_arch>;

const adaptive_model& tiny() {
  static const adaptive_model m = adaptive_model::load(data_dir + "tiny_f32");
  return m;
}

// Next-token log-probabilities of a single token at depth r, in double.
std::vector<double> log_probs(const std::vector<float>& logits) {
  double mx = -INFINITY, s = 0;
  for (float v : logits) mx = std::max(mx, double(v));
  for (float v : logits) s += std::exp(double(v) - mx);
  std::vector<double> lp;
  for (float v : logits) lp.push_back(double(v) - mx - std::log(s));
  return lp;
}

}  // namespace

TEST(Halting, KlExitMatchesFixedDepthOracle) {
  // One token on a fresh context: the depth-s distribution is what a fixed-depth pass at s gives,
  // so the exit step must be the first checked s with KL(p_{s-1} ‖ p_s) < threshold.
  const auto& m = tiny();
  const std::int64_t V = m.config().vocab_size, max_steps = 12;
  for (std::int32_t tok : {3, 40, 77, 120}) {
    std::vector<std::vector<double>> lp(max_steps + 1);
    lp[0].assign(std::size_t(V), -std::log(double(V)));  // uniform before the first step
    for (std::int64_t s = 1; s <= max_steps; ++s) {
      run_options o;
      o.init = state_init::zero{};
      o.steps = s;
      lp[std::size_t(s)] = log_probs(m.forward({tok}, o));
    }
    for (double thr : {1e-1, 1e-2, 1e-3}) {
      std::int64_t want = max_steps;
      for (std::int64_t s = 1; s < max_steps; ++s) {
        double kl = 0;
        for (std::int64_t v = 0; v < V; ++v)
          kl += std::exp(lp[s - 1][v]) * (lp[s - 1][v] - lp[s][v]);
        if (kl < thr) {
          want = s;
          break;
        }
      }
      run_options o;
      o.init = state_init::zero{};
      o.steps = max_steps;
      o.halt.criterion = halt_criterion::kl;
      o.halt.threshold = thr;
      std::vector<std::int32_t> used;
      o.steps_used = &used;
      const auto logits = m.forward({tok}, o);
      EXPECT_EQ(used[0], want) << "token " << tok << " thr " << thr;
      // The exit logits are the depth-`want` logits.
      run_options f;
      f.init = state_init::zero{};
      f.steps = want;
      EXPECT_LE(max_abs_diff(logits, m.forward({tok}, f)), 1e-5);
    }
  }
}

// halting::kl_divergence exits at its own default, KL < 5e-4, when a call names no criterion:
// the same steps as the adaptive model asked for kl at 5e-4, and fewer than the fixed depth on
// some token (the tiny model converges well before 32 steps). A threshold of 0 would never exit.
TEST(Halting, KlDivergencePolicyExitsAtItsDefaultThreshold) {
  using kl_model = model<host_backend, float, huginn_arch::with<halting::kl_divergence>>;
  const kl_model m = kl_model::load(data_dir + "tiny_f32");
  run_options def;
  def.init = state_init::zero{};
  def.steps = 32;
  std::vector<std::int32_t> got, want;
  def.steps_used = &got;
  m.forward({3, 40, 77, 120, 5, 9}, def);
  run_options kl = def;
  kl.halt.criterion = halt_criterion::kl;
  kl.halt.threshold = 5e-4;
  kl.steps_used = &want;
  tiny().forward({3, 40, 77, 120, 5, 9}, kl);
  EXPECT_EQ(got, want);
  EXPECT_LT(*std::min_element(got.begin(), got.end()), 32);
}

// The exit test's state is kept by the workspace across calls: switching criteria from call to
// call on one context gives what fresh contexts give.
TEST(Halting, CriteriaCanChangeBetweenCallsOnOneContext) {
  const auto& m = tiny();
  const std::vector<std::int32_t> seq = {3, 40, 77, 120, 5};
  const halt_criterion order[] = {halt_criterion::kl, halt_criterion::latent_diff, halt_criterion::argmax_stable,
                                  halt_criterion::kl};
  auto shared = m.make_context(8, 16);
  for (std::size_t i = 0; i < 4; ++i) {
    run_options o;
    o.init = state_init::zero{};
    o.steps = 16;
    o.halt.criterion = order[i];
    std::vector<std::int32_t> got, want;
    o.steps_used = &got;
    shared.reset();
    const auto a = m.forward(shared, seq, o);
    o.steps_used = &want;
    auto fresh = m.make_context(8, 16);
    const auto b = m.forward(fresh, seq, o);
    EXPECT_EQ(got, want) << i;
    EXPECT_EQ(a, b) << i;
  }
}

TEST(Halting, ScheduleAndBounds) {
  const auto& m = tiny();
  run_options o;
  o.init = state_init::zero{};
  o.steps = 10;
  o.halt.criterion = halt_criterion::latent_diff;
  std::vector<std::int32_t> used;
  o.steps_used = &used;
  o.halt.threshold = 1e9;  // exits at the first check
  o.halt.min_steps = 3;
  m.forward({1, 2, 3}, o);
  for (auto u : used) EXPECT_EQ(u, 4);  // first check after step index 3
  o.halt.threshold = 0;  // never satisfied: max steps, same as fixed depth
  const auto never = m.forward({1, 2, 3}, o);
  for (auto u : used) EXPECT_EQ(u, 10);
  run_options f;
  f.init = state_init::zero{};
  f.steps = 10;
  EXPECT_LE(max_abs_diff(never, m.forward({1, 2, 3}, f)), 1e-5);
  o.halt.criterion = halt_criterion::argmax_stable;
  o.halt.threshold = 2;
  o.halt.min_steps = 0;
  o.halt.check_every = 3;  // checks at steps 0, 3, 6: exits are at 1, 4 or 7 steps, or 10
  m.forward({5, 6, 7, 8}, o);
  for (auto u : used) EXPECT_TRUE(u == 1 || u == 4 || u == 7 || u == 10) << u;
  // A fixed-depth model refuses an exit criterion.
  const auto fixed = model<host_backend, float>::load(data_dir + "tiny_f32");
  run_options bad;
  bad.halt.criterion = halt_criterion::kl;
  EXPECT_THROW(fixed.forward({1}, bad), error);
}

TEST(KvCache, BudgetShrinksMemoryAndEqualsFullWhenLargeEnough) {
  const auto& m = tiny();
  context_limits full;
  full.max_tokens = 32;
  full.max_steps = 8;
  context_limits budget = full;
  budget.kv_budget = 2;
  auto a = m.make_context(full);
  auto b = m.make_context(budget);
  const std::int64_t P = 1, C = 2, D = 1, kvd = 64;
  EXPECT_EQ(a.kv_bytes_per_token(), std::size_t(2 * (P + C * 8 + D) * kvd * 4));
  EXPECT_EQ(b.kv_bytes_per_token(), std::size_t(2 * (P + C * 2 + D) * kvd * 4));
  // A budget of at least r recurrences changes nothing.
  generate_options g;
  g.run.init = state_init::zero{};
  g.run.steps = 4;
  g.max_new_tokens = 6;
  context_limits big = full;
  big.kv_budget = 4;
  auto c = m.make_context(big);
  auto d = m.make_context(full);
  EXPECT_EQ(generate(m, c, {9, 8, 7}, g).tokens, generate(m, d, {9, 8, 7}, g).tokens);
  // A budget of 1 recurrence (what the vLLM plugin does) changes the decode but not the first token.
  context_limits one = full;
  one.kv_budget = 1;
  auto e = m.make_context(one);
  auto f = m.make_context(full);
  EXPECT_EQ(generate(m, e, {9, 8, 7}, g).tokens[0], generate(m, f, {9, 8, 7}, g).tokens[0]);
}

TEST(WarmStart, RawStartsFromThePreviousFinalState) {
  // With warm start, token t's first state is token t-1's final raw state: compare against an
  // explicit given-state pass built from the latents of the previous pass.
  const auto& m = tiny();
  const std::int64_t h = m.config().n_embd;
  auto ctx = m.make_context(8, 4);
  run_options o;
  o.init = state_init::zero{};
  o.steps = 4;
  std::vector<float> lat;
  o.latents = &lat;
  m.forward(ctx, {10, 11}, o);
  const std::vector<float> prev(lat.end() - h, lat.end());
  run_options w = o;
  w.warm = warm_start::raw;
  const auto warm = m.forward(ctx, {12}, w);
  auto ctx2 = m.make_context(8, 4);
  m.forward(ctx2, {10, 11}, o);
  run_options gsv = o;
  gsv.init = state_init::given{};
  gsv.given_state = prev.data();
  EXPECT_LE(max_abs_diff(warm, m.forward(ctx2, {12}, gsv)), 1e-6);
  // Normalized warm start differs from raw.
  auto ctx3 = m.make_context(8, 4);
  m.forward(ctx3, {10, 11}, o);
  run_options n = o;
  n.warm = warm_start::normalized;
  EXPECT_GT(max_abs_diff(warm, m.forward(ctx3, {12}, n)), 1e-4);
}

TEST(Speculative, GreedyOutputEqualsPlainGreedyAtVerifyDepth) {
  const auto& m = tiny();
  for (const muninn::state_init_choice init :
       {muninn::state_init_choice{muninn::state_init::zero{}}, muninn::state_init_choice{muninn::state_init::truncated_normal{}}}) {
    generate_options plain;
    plain.run.init = init;
    plain.run.seed = 5;
    plain.run.steps = 8;
    plain.max_new_tokens = 20;
    const auto want = generate(m, {117, 4, 44, 64, 100}, plain);
    for (std::int64_t draft : {1, 2, 8}) {
      for (std::int64_t look : {1, 3, 8}) {
        generate_options spec = plain;
        spec.draft_steps = draft;
        spec.lookahead = look;
        const auto got = generate(m, {117, 4, 44, 64, 100}, spec);
        EXPECT_EQ(got.tokens, want.tokens) << "draft " << draft << " lookahead " << look;
        if (draft == 8) {
          EXPECT_EQ(got.accepted, got.drafted);  // drafts at verify depth always agree
        }
      }
    }
  }
}

TEST(Batch, RowsOfDifferentLengthsEqualTheirSingleRuns) {
  const auto& m = tiny();
  const std::vector<std::vector<std::int32_t>> prompts = {{5}, {117, 4, 44, 64, 100}, {9, 8, 7}, {1, 2, 3, 4, 5, 6, 7}};
  ASSERT_NO_FATAL_FAILURE(muninn_test::check_batch_rows_equal_single_runs(m, prompts));
  // The same through a padded matrix with a mask (left padding on row 0, right on row 1).
  generate_options g;
  g.run.init = state_init::zero{};
  g.run.steps = 4;
  g.max_new_tokens = 5;
  const std::vector<std::int32_t> tokens = {0, 0, 9, 8, 7, /**/ 1, 2, 3, 0, 0};
  const std::vector<std::uint8_t> mask = {0, 0, 1, 1, 1, /**/ 1, 1, 1, 0, 0};
  const auto padded = generate_batch_padded(m, tokens, mask, 2, 5, g);
  EXPECT_EQ(padded[0].tokens, generate(m, {9, 8, 7}, g).tokens);
  EXPECT_EQ(padded[1].tokens, generate(m, {1, 2, 3}, g).tokens);
  // Batched adaptive exit: every row exits where it would alone.
  g.run.halt.criterion = halt_criterion::kl;
  g.run.halt.threshold = 1e-2;
  g.run.steps = 10;
  const auto ad = generate_batch(m, {{9, 8, 7}, {1, 2}}, g);
  const auto solo0 = generate(m, {9, 8, 7}, g), solo1 = generate(m, {1, 2}, g);
  EXPECT_EQ(ad[0].tokens, solo0.tokens);
  EXPECT_EQ(ad[0].steps, solo0.steps);
  EXPECT_EQ(ad[1].tokens, solo1.tokens);
  EXPECT_EQ(ad[1].steps, solo1.steps);
}

TEST(Trajectory, HookSeesEveryStepAndTheLastOneIsTheLatent) {
  const auto& m = tiny();
  const std::int64_t h = m.config().n_embd;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<float>> seen;
  run_options o;
  o.init = state_init::zero{};
  o.steps = 5;
  o.on_step = [&](std::int64_t pos, std::int64_t step, const float* x) { seen[{pos, step}].assign(x, x + h); };
  std::vector<float> lat;
  o.latents = &lat;
  m.forward({4, 5, 6}, o);
  EXPECT_EQ(seen.size(), 15u);
  for (std::int64_t p = 0; p < 3; ++p) {
    const std::vector<float> want(lat.begin() + p * h, lat.begin() + (p + 1) * h);
    EXPECT_EQ((seen[{p, 4}]), want);
    // Step s's state is the final state of a depth-(s+1) pass.
    run_options f;
    f.init = state_init::zero{};
    f.steps = 3;
    std::vector<float> lat3;
    f.latents = &lat3;
    m.forward({4, 5, 6}, f);
    const std::vector<float> want3(lat3.begin() + p * h, lat3.begin() + (p + 1) * h);
    EXPECT_LE(max_abs_diff(seen.at({p, 2}), want3), 1e-6);
  }
}

TEST(Reference, RuntimeCasesMatchTheReferenceGenerations) {
  // tools/reference generate_adaptive: exit criteria, KV budget, fallback, warm start, whole-prompt
  // exits and last-checked outputs.
  const auto& m = tiny();
  const io::json doc = io::read_json_file(data_dir + "tiny_f32/runtime.json");
  const double atol = doc.at("atol_logits").as_double();
  int n = 0, prompt_exits = 0, last_checked = 0;
  for (const auto& c : doc.at("cases").as_array()) {
    SCOPED_TRACE(c.at("name").as_string());
    generate_options g;
    g.max_new_tokens = c.at("max_new_tokens").as_int();
    g.run.init = state_init::zero{};
    g.run.steps = c.at("num_steps").as_int();
    g.run.halt.criterion = parse_halt_criterion(c.at("criterion").as_string());
    g.run.halt.threshold = c.at("threshold").as_double();
    g.run.halt.min_steps = c.at("min_steps").as_int();
    g.run.halt.check_every = c.at("check_every").as_int();
    const std::string warm = c.at("warm").as_string();
    g.run.warm = warm == "raw" ? warm_start::raw : warm == "normalized" ? warm_start::normalized : warm_start::none;
    if (c.contains("prefill")) g.run.halt.prefill = parse_prefill_exit(c.at("prefill").as_string());
    if (c.contains("output") && c.at("output").as_string() == "last-checked") {
      g.run.halt.end = unchecked_end::last_checked;
      ++last_checked;
    }
    prompt_exits += g.run.halt.prefill == prefill_exit::prompt;
    context_limits lim;
    const auto prompt = ids_of(c.at("prompt"));
    lim.max_tokens = std::int64_t(prompt.size()) + g.max_new_tokens;
    lim.max_steps = g.run.steps;
    lim.kv_budget = c.at("kv_budget").as_int();
    lim.fallback = c.at("fallback").as_string() == "none" ? kv_fallback::none : kv_fallback::latest;
    auto ctx = m.make_context(lim);
    const auto r = generate(m, ctx, prompt, g);
    EXPECT_EQ(r.tokens, ids_of(c.at("expected_tokens")));
    EXPECT_EQ(r.steps, ids_of(c.at("expected_steps")));
    EXPECT_EQ(ctx.steps_used(), ids_of(c.at("expected_fed_steps")));
    std::vector<float> want;
    for (const auto& x : c.at("expected_last_logits").as_array()) want.push_back(float(x.as_double()));
    EXPECT_LE(max_abs_diff(r.last_logits, want), atol);
    ++n;
  }
  EXPECT_GE(n, 20);
  EXPECT_GE(prompt_exits, 4);  // prefill_exit::prompt under kl, latent-diff, cosine, argmax-stable
  EXPECT_GE(last_checked, 2);  // unchecked_end::last_checked under logit criteria
}

// Warm start never reaches into a prompt: however one call is split (chunks of max_chunk tokens
// at fixed depth, single tokens under an exit criterion), the prompt's logits and steps are those
// of the same call without warm start, at lengths around the chunk boundary and for every
// criterion. The next call (a generated token fed back) does continue the last thought.
TEST(WarmStart, NeverAppliesInsideOnePrefill) {
  const auto& m = tiny();
  const halt_criterion crits[] = {halt_criterion::none,          halt_criterion::kl,
                                  halt_criterion::entropy_diff,  halt_criterion::latent_diff,
                                  halt_criterion::argmax_stable, halt_criterion::cosine};
  for (const halt_criterion c : crits)
    for (const std::int64_t n : {3, 4, 5, 8, 9}) {
      for (const warm_start w : {warm_start::raw, warm_start::normalized}) {
        SCOPED_TRACE(std::to_string(int(c)) + " n=" + std::to_string(n) + " warm=" + std::to_string(int(w)));
        std::vector<std::int32_t> prompt;
        for (std::int64_t i = 0; i < n; ++i) prompt.push_back(std::int32_t((i * 37 + 5) % 128));
        context_limits lim;
        lim.max_tokens = 16;
        lim.max_steps = 8;
        lim.max_chunk = 4;  // prompts of 5, 8 and 9 tokens are fed in several chunks
        run_options cold;
        cold.init = state_init::zero{};
        cold.steps = 8;
        cold.halt.criterion = c;
        run_options hot = cold;
        hot.warm = w;
        std::vector<std::int32_t> s_cold, s_hot;
        cold.steps_used = &s_cold;
        hot.steps_used = &s_hot;
        auto a = m.make_context(lim), b = m.make_context(lim);
        EXPECT_EQ(m.forward(a, prompt, cold), m.forward(b, prompt, hot));
        EXPECT_EQ(s_cold, s_hot);
        cold.steps_used = hot.steps_used = nullptr;
        EXPECT_NE(m.forward(a, {7}, cold), m.forward(b, {7}, hot)) << "the next call continues the thought";
      }
    }
}

// prefill_exit::prompt: a call's tokens run as one pass and exit at one step, recorded for all of
// them; without an exit criterion it is the plain lockstep pass.
TEST(PrefillExit, PromptExitsTogether) {
  const auto& m = tiny();
  const std::vector<std::int32_t> prompt = {3, 40, 77, 120, 5, 9};
  for (const halt_criterion c : {halt_criterion::kl, halt_criterion::latent_diff, halt_criterion::cosine,
                                 halt_criterion::entropy_diff, halt_criterion::argmax_stable}) {
    SCOPED_TRACE(int(c));
    run_options o;
    o.init = state_init::zero{};
    o.steps = 12;
    o.halt.criterion = c;
    o.halt.threshold = c == halt_criterion::argmax_stable ? 2 : c == halt_criterion::kl ? 1e-2 : 0.1;
    o.halt.prefill = prefill_exit::prompt;
    std::vector<std::int32_t> used;
    o.steps_used = &used;
    auto ctx = m.make_context(16, 12);
    const auto lg = m.forward(ctx, prompt, o, logits_for::all);
    ASSERT_EQ(used.size(), prompt.size());
    EXPECT_TRUE(std::all_of(used.begin(), used.end(), [&](std::int32_t s) { return s == used[0]; }));
    EXPECT_LT(used[0], 12) << "the thresholds are loose enough for an early exit";
    // The exit step's logits are those of a fixed-depth pass of that many steps.
    run_options fixed;
    fixed.init = state_init::zero{};
    fixed.steps = used[0];
    EXPECT_LE(max_abs_diff(lg, m.forward(prompt, fixed)), 1e-5);
  }
}

TEST(PrefillExit, PromptLongerThanTheChunkIsAClearError) {
  const auto& m = tiny();
  context_limits lim;
  lim.max_tokens = 16;
  lim.max_steps = 8;
  lim.max_chunk = 4;
  auto ctx = m.make_context(lim);
  run_options o;
  o.halt.criterion = halt_criterion::kl;
  o.halt.prefill = prefill_exit::prompt;
  try {
    m.forward(ctx, {1, 2, 3, 4, 5, 6}, o);
    FAIL() << "expected an error";
  } catch (const muninn::error& e) {
    EXPECT_NE(std::string(e.what()).find("max_chunk >= 6"), std::string::npos) << e.what();
  }
}

// unchecked_end::last_checked: with checks at steps 0, 4, 8 of 10 (step 9 unchecked) and a KL
// threshold no step can pass, the logits are those after step 8 (9 steps), the recorded state
// that after step 9 (10 steps). When the last step is a check step nothing changes.
TEST(UncheckedEnd, LastCheckedKeepsTheCheckedLogits) {
  const auto& m = tiny();
  const std::vector<std::int32_t> ids = {17};
  run_options o;
  o.init = state_init::zero{};
  o.steps = 10;
  o.halt.criterion = halt_criterion::kl;
  o.halt.threshold = 0;  // KL < 0 never holds
  o.halt.check_every = 4;
  o.halt.end = unchecked_end::last_checked;
  std::vector<float> lat;
  o.latents = &lat;
  const auto lg = m.forward(ids, o);
  run_options f;
  f.init = state_init::zero{};
  std::vector<float> lat10;
  f.steps = 9;
  const auto at9 = m.forward(ids, f);
  f.steps = 10;
  f.latents = &lat10;
  const auto at10 = m.forward(ids, f);
  EXPECT_LE(max_abs_diff(lg, at9), 1e-6);
  EXPECT_GT(max_abs_diff(at9, at10), 1e-3) << "the test has power";
  EXPECT_EQ(lat, lat10);
  o.halt.check_every = 3;  // checks at 0, 3, 6, 9: the last step is one
  EXPECT_LE(max_abs_diff(m.forward(ids, o), at10), 1e-6);
  o.halt.criterion = halt_criterion::latent_diff;  // state criteria: the head runs on the final state
  o.halt.check_every = 4;
  EXPECT_LE(max_abs_diff(m.forward(ids, o), at10), 1e-6);
}

}  // namespace test_runtime
