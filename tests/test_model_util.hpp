#pragma once
// Model-level pieces shared by test_model.cpp, test_runtime.cpp and test_model_cuda.cu (g++ and nvcc):
// the golden fixtures' cases (inputs.json) run on any model, and the inference invariants checked on
// both backends. The assertions stay in the tests where a bound differs per backend.
#include <cstdint>
#include <string>
#include <vector>

#include "muninn/muninn.hpp"
#include "test_util.hpp"

namespace muninn_test {

/// The "chunked" case of a fixture: its first n1 tokens, then the next n2 in one call that attends to
/// the cache (bottom-right causal mask); the logits of the second call.
template <class M>
std::vector<float> chunked_logits(const M& m, const std::vector<std::int32_t>& tokens, const muninn::io::json& ch,
                                  muninn::run_options o) {
  const std::int64_t n1 = ch.at("n1").as_int(), n2 = ch.at("n2").as_int();
  o.steps = ch.at("steps").as_int();
  auto ctx = m.make_context(n1 + n2, o.steps);
  m.forward(ctx, std::vector<std::int32_t>(tokens.begin(), tokens.begin() + n1), o);
  return m.forward(ctx, std::vector<std::int32_t>(tokens.begin() + n1, tokens.begin() + n1 + n2), o);
}

/// The "latents" case of a fixture: the raw recurrent state after the last step.
template <class M>
std::vector<float> final_latents(const M& m, const std::vector<std::int32_t>& tokens, const muninn::io::json& lat,
                                 muninn::run_options o) {
  o.steps = lat.at("steps").as_int();
  std::vector<float> latents;
  o.latents = &latents;
  m.forward(tokens, o);
  return latents;
}

/// The "given_state" case of fixture `name`: logits from the caller-supplied initial state in its state file.
template <class M>
std::vector<float> given_state_logits(const M& m, const std::string& name, const std::vector<std::int32_t>& tokens,
                                      const muninn::io::json& gs) {
  const auto state = muninn::io::read_npy_f32(data_dir + name + "/" + gs.at("state_file").as_string());
  muninn::run_options o;
  o.init = muninn::state_init::given{};
  o.given_state = state.data.data();
  o.steps = gs.at("steps").as_int();
  return m.forward(tokens, o);
}

/// The options of a fixture's "generate" case: zero state, its depth and its number of new tokens.
inline muninn::generate_options generate_case_options(const muninn::io::json& g) {
  muninn::generate_options go;
  go.run.init = muninn::state_init::zero{};
  go.run.steps = g.at("steps").as_int();
  go.max_new_tokens = g.at("max_new_tokens").as_int();
  return go;
}

/// Decoding with the cache equals recomputing the whole sequence, zero and random initial state:
/// 8 greedy tokens after a 4-token prompt at 3 steps, each cached decode within `tol` of the last row
/// of a from-scratch pass. Stops at the first token outside the bound.
template <class M>
void check_cache_decode_equals_recompute(const M& m, double tol) {
  using namespace muninn;
  const std::int64_t V = m.config().vocab_size;
  for (const muninn::state_init_choice init :
       {muninn::state_init_choice{muninn::state_init::zero{}}, muninn::state_init_choice{muninn::state_init::truncated_normal{}}}) {
    run_options o;
    o.init = init;
    o.seed = 7;
    o.steps = 3;
    std::vector<std::int32_t> seq = {5, 17, 99, 3};
    auto ctx = m.make_context(16, o.steps);
    auto logits = m.forward(ctx, seq, o, logits_for::last);
    for (int t = 0; t < 8; ++t) {
      // Recompute the whole sequence from scratch: the last row must equal the cached decode.
      const auto full = m.forward(seq, o);
      const std::vector<float> last(full.end() - V, full.end());
      ASSERT_LE(max_abs_diff(logits, last), tol) << "token " << t;
      const std::int32_t next = argmax_host(logits.data(), V);
      seq.push_back(next);
      logits = m.forward(ctx, {next}, o, logits_for::last);
    }
  }
}

/// generate_batch on `prompts` (rows of different lengths) gives each row the tokens of its own
/// generate call, greedy and sampled, random initial state. Wrap in ASSERT_NO_FATAL_FAILURE to stop
/// the test when the batch has the wrong number of rows.
template <class M>
void check_batch_rows_equal_single_runs(const M& m, const std::vector<std::vector<std::int32_t>>& prompts) {
  using namespace muninn;
  for (bool sampled : {false, true}) {
    generate_options g;
    g.run.init = state_init::truncated_normal{};
    g.run.seed = 3;
    g.run.steps = 4;
    g.max_new_tokens = 7;
    g.sampling.greedy = !sampled;
    g.sampling.temperature = 0.8f;
    g.sampling.seed = 99;
    const auto batch = generate_batch(m, prompts, g);
    ASSERT_EQ(batch.size(), prompts.size());
    for (std::size_t r = 0; r < prompts.size(); ++r)
      EXPECT_EQ(batch[r].tokens, generate(m, prompts[r], g).tokens) << "row " << r << " sampled " << sampled;
  }
}

}  // namespace muninn_test
