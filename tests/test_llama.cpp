// Llama golden tests: tiny random LlamaForCausalLM checkpoints saved by the real transformers
// library (tests/data/llama, made by tools/reference/make_llama_fixtures.py), run through
// model<host_backend, float, llama_arch>. Tolerance: fp32 max |Δlogit| ≤ 1e-4; greedy ids exact.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/io/chat_template.hpp"
#include "muninn/io/tokenizer.hpp"
#include "muninn/muninn.hpp"
#include "test_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_llama {

using namespace muninn;

namespace {

using muninn_test::ids_of;
using muninn_test::max_abs_diff;
using llama_model = model<host_backend, float, llama_arch>;

constexpr double kLogitTol = 1e-4;
const std::string llama_dir = std::string(MUNINN_TEST_DATA) + "/llama/";

struct fixture {
  std::string name;
  llama_model m;
  io::json want;
};

fixture open(const std::string& name) {
  return fixture{name, llama_model::load(llama_dir + name), io::read_json_file(llama_dir + name + "/expected.json")};
}

class LlamaGolden : public ::testing::TestWithParam<std::string> {};

// Prompt logits and greedy tokens against transformers run on every backend: ModelCases in
// tests/model_cases.hpp (LlamaMatchesTransformers).

TEST_P(LlamaGolden, LongPromptLastLogitsMatchTransformers) {
  const fixture f = open(GetParam());
  const auto ids = ids_of(f.want.at("long").at("prompt_ids"));
  std::vector<float> want;
  for (const auto& v : f.want.at("long").at("last_logits").as_array()) want.push_back(float(v.as_double()));
  auto ctx = f.m.make_context(std::int64_t(ids.size()));
  EXPECT_LE(max_abs_diff(f.m.forward(ctx, ids, {}, logits_for::last), want), kLogitTol);
}

TEST_P(LlamaGolden, ChunkedPrefillEqualsOnePass) {
  const fixture f = open(GetParam());
  const auto ids = ids_of(f.want.at("long").at("prompt_ids"));
  const auto full = f.m.forward(ids);
  context_limits lim;
  lim.max_tokens = std::int64_t(ids.size());
  lim.max_chunk = 7;  // forces several chunks, each attending to the cache
  auto ctx = f.m.make_context(lim);
  EXPECT_LE(max_abs_diff(f.m.forward(ctx, ids), full), kLogitTol);  // GEMM shapes differ: fp32 summation order
}

TEST_P(LlamaGolden, BatchRowsEqualSingleRuns) {
  const fixture f = open(GetParam());
  const auto a = ids_of(f.want.at("prompt_ids"));
  const auto b = ids_of(f.want.at("long").at("prompt_ids"));
  auto ca = f.m.make_context(128), cb = f.m.make_context(128);
  auto ws = f.m.make_workspace(std::int64_t(a.size() + b.size()));
  const auto rows = f.m.forward_batch(ws, {&ca, &cb}, {a, b}, {}, logits_for::all);
  EXPECT_LE(max_abs_diff(rows[0], f.m.forward(a)), kLogitTol);
  EXPECT_LE(max_abs_diff(rows[1], f.m.forward(b)), kLogitTol);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LlamaGolden,
                         ::testing::Values("tiny_tied_mha", "tiny_untied_gqa", "tiny_linear_bias", "tiny_bf16_sharded",
                                           "tiny_bf16_sharded_v4", "tiny_text"));

TEST(Llama, ParameterCountMatchesTransformers) {
  for (const char* name : {"tiny_tied_mha", "tiny_untied_gqa", "tiny_linear_bias"}) {
    const fixture f = open(name);
    EXPECT_EQ(f.m.parameter_count(), f.want.at("n_params").as_int()) << name;
  }
}

TEST(Llama, KvCacheIsOneSlotPerLayer) {
  const fixture f = open("tiny_untied_gqa");
  auto ctx = f.m.make_context(16);
  EXPECT_EQ(ctx.num_slots(), 2);
  // 2 layers × (K + V) × 2 KV heads × head_dim 16 × 4 bytes
  EXPECT_EQ(ctx.kv_bytes_per_token(), std::size_t(2 * 2 * 2 * 16 * 4));
}

}  // namespace

namespace {

// Text in through the checkpoint's own files: tokenizer.json (BOS from the post-processor) and the
// chat template of tokenizer_config.json give the ids transformers gives.
TEST(Llama, TokenizerAndChatTemplateMatchTransformers) {
  const std::string dir = llama_dir + "tiny_text";
  const io::json want = io::read_json_file(dir + "/expected.json");
  const auto tok = io::tokenizer::from_file(dir + "/tokenizer.json");
  EXPECT_EQ(tok.encode(want.at("prompt_text").as_string(), true), ids_of(want.at("prompt_ids")));
  EXPECT_EQ(tok.encode(want.at("prompt_text").as_string(), false), ids_of(want.at("prompt_ids_no_bos")));
  std::vector<io::chat_message> messages;
  for (const auto& m : want.at("chat").at("messages").as_array())
    messages.push_back({m.at("role").as_string(), m.at("content").as_string()});
  const io::json cfg = io::read_json_file(dir + "/tokenizer_config.json");
  const std::string text = io::chat_template::from_config(cfg, dir + "/tokenizer_config.json")
                               .render(messages, want.at("chat").at("add_generation_prompt").as_bool(),
                                       io::chat_template::special_tokens(cfg));
  EXPECT_EQ(text, want.at("chat").at("text").as_string());
  EXPECT_EQ(tok.encode(text, false), ids_of(want.at("chat").at("ids")));
}

}  // namespace

}  // namespace test_llama
