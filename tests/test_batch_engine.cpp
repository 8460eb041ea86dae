// The front end's batch engines (continuous batching for serving): every request of a batch
// produces the tokens — and the recurrence steps, recursions or head samples per token — that the
// same request produces alone through loaded_model::generate, however the requests arrive, leave
// and share steps. Greedy and seeded sampling, every autoregressive family on its fixtures.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/frontend/registry.hpp"

namespace fe = muninn::frontend;

namespace {

const std::string data = MUNINN_TEST_DATA;

struct request {
  std::vector<std::int32_t> prompt;
  std::map<std::string, std::string> options;  // generate options by table name
  std::int64_t arrives = 0;                    // the engine step before which it joins
};

fe::option_values options_of(const std::map<std::string, std::string>& given) {
  fe::option_values o(fe::operation::generate, "", '_');
  for (const auto& [k, v] : given) o.set(k, v);
  return o;
}

struct result {
  std::vector<std::int32_t> tokens, steps;
  std::string stop_reason;
};

// Runs `reqs` through one batch engine, each joining at its step; returns them in order.
std::vector<result> run_batched(const fe::loaded_model& m, const std::vector<request>& reqs, fe::batch_limits lim,
                                const std::vector<std::int32_t>& stops, std::int64_t remove_at = -1,
                                std::size_t removed = 0) {
  auto engine = m.batch(lim);
  std::vector<result> out(reqs.size());
  std::map<std::int64_t, std::size_t> of;  // engine id -> request
  std::size_t joined = 0, finished = 0;
  std::int64_t widest = 0;  // most requests one step advanced
  for (std::int64_t step = 0; finished + (remove_at >= 0 ? 1 : 0) < reqs.size() || joined < reqs.size(); ++step) {
    EXPECT_LT(step, 10000) << "the engine makes no progress";
    if (step >= 10000) break;
    for (std::size_t i = 0; i < reqs.size(); ++i)
      if (reqs[i].arrives == step) {
        of[engine->add(reqs[i].prompt, options_of(reqs[i].options), stops)] = i;
        ++joined;
      }
    if (step == remove_at)
      for (const auto& [id, i] : of)
        if (i == removed) engine->remove(id);
    if (engine->size() == 0) continue;
    const auto outs = engine->step();
    widest = std::max(widest, engine->last_step().requests);
    for (const auto& o : outs) {
      result& r = out[of.at(o.id)];
      r.tokens.insert(r.tokens.end(), o.tokens.begin(), o.tokens.end());
      r.steps.insert(r.steps.end(), o.steps.begin(), o.steps.end());
      if (o.finished) {
        r.stop_reason = o.stop_reason;
        ++finished;
      }
    }
  }
  EXPECT_EQ(engine->size(), 0);
  if (reqs.size() > 1) {
    EXPECT_GT(widest, 1) << "no step advanced two requests: nothing was batched";
  }
  return out;
}

// A fixture opened as `muninn serve` opens it (CALM's tiny model takes its autoencoder folder beside it).
std::unique_ptr<fe::loaded_model> open(const std::string& model) {
  fe::option_values o(fe::operation::serve);
  if (model.rfind("calm/", 0) == 0) o.set("ae", data + "/calm/ae");
  return fe::open_model(data + "/" + model, o);
}

result run_alone(const fe::loaded_model& m, const request& r, const std::vector<std::int32_t>& stops) {
  const fe::generation g = m.generate(r.prompt, options_of(r.options), stops, {});
  return {g.tokens, g.steps, g.stop_reason};
}

// `same_steps`: CALM's generate reports head samples per chunk, its engine per token; only the
// tokens are compared there.
void expect_batch_equals_alone(const std::string& model, const std::vector<request>& reqs, fe::batch_limits lim = {},
                               const std::vector<std::int32_t>& stops = {}, bool same_steps = true) {
  const auto m = open(model);
  const std::vector<result> got = run_batched(*m, reqs, lim, stops);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const result want = run_alone(*m, reqs[i], stops);
    SCOPED_TRACE(model + ", request " + std::to_string(i));
    EXPECT_FALSE(want.tokens.empty());
    EXPECT_EQ(got[i].tokens, want.tokens);
    if (same_steps) {
      EXPECT_EQ(got[i].steps, want.steps);
    }
    EXPECT_EQ(got[i].steps.size(), got[i].tokens.size());
  }
}

std::vector<std::int32_t> iota_ids(std::int32_t first, std::int32_t n, std::int32_t vocab) {
  std::vector<std::int32_t> v;
  for (std::int32_t i = 0; i < n; ++i) v.push_back((first + 7 * i) % vocab);
  return v;
}

}  // namespace

TEST(BatchEngine, LlamaGreedyAndSeededRequestsJoiningAtDifferentSteps) {
  std::vector<request> reqs;
  for (int i = 0; i < 6; ++i) {
    request r;
    r.prompt = iota_ids(3 + 11 * i, 3 + 9 * i, 736);  // 3 .. 48 tokens: several prefill chunks for the long ones
    r.options = {{"max-new-tokens", std::to_string(5 + 3 * i)}};
    if (i % 2) r.options.insert({{"temperature", "0.9"}, {"top-p", "0.8"}, {"seed", std::to_string(100 + i)}});
    r.arrives = 2 * i;
    reqs.push_back(r);
  }
  fe::batch_limits lim;
  lim.max_requests = 4;
  lim.prefill_tokens = 16;
  expect_batch_equals_alone("llama/tiny_text", reqs, lim, {701, 704});
}

TEST(BatchEngine, HuginnFixedDepthExitsAndRandomStatesShareSteps) {
  std::vector<request> reqs;
  const std::vector<std::map<std::string, std::string>> variants = {
      {{"steps", "4"}, {"init-state", "zero"}},
      {{"steps", "3"}, {"seed", "7"}},  // random initial state drawn from the seed
      {{"steps", "8"}, {"exit", "kl"}, {"exit-threshold", "0.01"}, {"init-state", "zero"}},
      {{"steps", "6"}, {"exit", "latent-diff"}, {"exit-threshold", "0.5"}, {"seed", "3"}, {"temperature", "0.8"}},
      {{"steps", "4"}, {"seed", "11"}, {"temperature", "1.2"}, {"top-k", "20"}}};
  for (std::size_t i = 0; i < 10; ++i) {
    request r;
    r.prompt = iota_ids(std::int32_t(5 + i), std::int32_t(2 + 3 * i), 128);
    r.options = variants[i % variants.size()];
    r.options["max-new-tokens"] = std::to_string(4 + i % 5);
    r.arrives = std::int64_t(i);
    reqs.push_back(r);
  }
  fe::batch_limits lim;
  lim.max_requests = 8;
  lim.prefill_tokens = 8;
  expect_batch_equals_alone("huginn/tiny_f32", reqs, lim);
}

TEST(BatchEngine, MixtureOfRecursionsEveryRouter) {
  // mor_untied: every recursion holds its own attention, so the depth-wise engine runs rows at
  // different recursions on different stored layers.
  for (const char* fixture : {"mor/expert_mcyc_r3_linear_sigmoid", "mor/token_cycle_r3_sigmoid", "mor/expert_mcyc_r3_kvshare",
                              "mor_untied/expert_mcyc_attn", "mor_untied/expert_mseq_attn", "mor_untied/token_cycle_attn"}) {
    std::vector<request> reqs;
    for (int i = 0; i < 5; ++i) {
      request r;
      r.prompt = iota_ids(1 + 5 * i, 4 + 3 * i, std::string(fixture).rfind("mor_untied/", 0) == 0 ? 32 : 64);  // vocab
      r.options = {{"max-new-tokens", std::to_string(6 + i)}};
      if (i == 3) r.options.insert({{"temperature", "0.7"}, {"seed", "5"}});
      r.arrives = i;
      reqs.push_back(r);
    }
    fe::batch_limits lim;
    lim.max_requests = 3;
    expect_batch_equals_alone(fixture, reqs, lim);
  }
}

TEST(BatchEngine, CalmChunksAsAlone) {
  std::vector<request> reqs;
  for (int i = 0; i < 4; ++i) {
    request r;
    r.prompt = iota_ids(3 * i, 3 + 2 * i, 60);
    for (auto& t : r.prompt) t += 2;  // neither the eos (1) nor the pad (63) id
    r.options = {{"max-new-tokens", std::to_string(8 + 4 * i)}, {"seed", std::to_string(i)}};
    if (i == 2) r.options.insert({{"temperature", "0.5"}, {"num-samples", "20"}});
    r.arrives = i;
    reqs.push_back(r);
  }
  expect_batch_equals_alone("calm/calm", reqs, {}, {}, false);
}

TEST(BatchEngine, RemovedRequestLeavesAndOthersAreUnchanged) {
  const auto m = open("llama/tiny_text");
  std::vector<request> reqs;
  for (int i = 0; i < 3; ++i) reqs.push_back({iota_ids(9 + i, 6, 736), {{"max-new-tokens", "20"}}, 0});
  fe::batch_limits lim;
  const auto got = run_batched(*m, reqs, lim, {}, 4, 1);
  EXPECT_EQ(got[0].tokens, run_alone(*m, reqs[0], {}).tokens);
  EXPECT_EQ(got[2].tokens, run_alone(*m, reqs[2], {}).tokens);
  EXPECT_LT(got[1].tokens.size(), 20u);  // it left after a few steps
}

TEST(BatchEngine, ChecksRequestsBeforeTheyRun) {
  const auto m = open("llama/tiny_text");
  fe::batch_limits lim;
  lim.context = 64;
  const auto engine = m->batch(lim);
  const auto usage = [&](const std::vector<std::int32_t>& prompt, const std::map<std::string, std::string>& o,
                         const std::string& says) {
    try {
      engine->check(prompt, options_of(o));
      ADD_FAILURE() << "no error; expected one saying " << says;
    } catch (const muninn::error& e) {
      EXPECT_EQ(e.kind(), muninn::error_kind::usage) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  usage(iota_ids(0, 64, 736), {{"max-new-tokens", "1"}}, "does not fit the context of 64");
  usage(iota_ids(0, 10, 736), {{"max-new-tokens", "60"}}, "exceeds the context of 64");
  usage({1, 736}, {{"max-new-tokens", "2"}}, "token id 736 at index 1 is out of range");
  usage({}, {{"max-new-tokens", "2"}}, "is empty");
  usage({1, 2}, {{"max-new-tokens", "2"}, {"draft-steps", "2"}}, "not available when serving");
  EXPECT_EQ(engine->size(), 0);
}

TEST(BatchEngine, TrmDoesNotServe) {
  try {
    const auto m = fe::open_model(data + "/trm/trm_att_f32", fe::option_values(fe::operation::serve));
    ADD_FAILURE() << "a TRM run folder opened for serve";
  } catch (const muninn::error& e) {
    EXPECT_EQ(e.kind(), muninn::error_kind::usage);
    EXPECT_NE(std::string(e.what()).find("muninn solve"), std::string::npos) << e.what();
  }
}
