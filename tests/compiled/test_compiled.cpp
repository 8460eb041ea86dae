// The compiled component (muninn::compiled): this binary links it, so MUNINN_COMPILED is defined and
// muninn/muninn.hpp declares model<host_backend, float, huginn_arch> / <..., llama_arch> and their
// generation extern; every model function called below runs the library's code, not an
// instantiation of this file (compiled_unlinked, the same file built without the library, fails
// to link). Oracles: the PyTorch reference's logits and greedy tokens committed with the fixtures
// (tools/reference), at the tolerance of the header-only tests: fp32 max |Δlogit| ≤ 1e-4, greedy
// ids exact.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "muninn/families/llama/family.hpp"
#include "muninn/muninn.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/npy.hpp"

#if !defined(MUNINN_COMPILED)
#error "test_compiled must be built against muninn::compiled"
#endif

namespace {

using namespace muninn;
const std::string data = MUNINN_TEST_DATA;
constexpr double kLogitTol = 1e-4;

std::vector<std::int32_t> ids(const io::json& a) {
  std::vector<std::int32_t> v;
  for (const auto& x : a.as_array()) v.push_back(std::int32_t(x.as_int()));
  return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = a.size() == b.size() ? 0.0 : 1e30;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, double(std::abs(a[i] - b[i])));
  return d;
}

TEST(Compiled, HuginnLogitsAndGreedyTokensMatchTheReference) {
  const std::string dir = data + "/huginn/tiny_f32";
  const io::json in = io::read_json_file(dir + "/inputs.json");
  const auto m = model<host_backend, float>::load(dir);
  run_options o;
  o.init = state_init::zero{};
  o.steps = 4;
  EXPECT_LE(max_abs_diff(m.forward(ids(in.at("tokens")), o), io::read_npy_f32(dir + "/logits_r4.npy").data), kLogitTol);
  const io::json& g = in.at("generate");
  generate_options opt;
  opt.max_new_tokens = g.at("max_new_tokens").as_int();
  opt.run.steps = g.at("steps").as_int();
  opt.run.init = state_init::zero{};
  EXPECT_EQ(generate_greedy(m, ids(g.at("prompt")), opt), ids(g.at("expected")));
}

TEST(Compiled, LlamaLogitsAndGreedyTokensMatchTransformers) {
  const std::string dir = data + "/llama/tiny_untied_gqa";
  const io::json want = io::read_json_file(dir + "/expected.json");
  const auto m = model<host_backend, float, llama_arch>::load(dir);
  const auto prompt = ids(want.at("prompt_ids"));
  EXPECT_LE(max_abs_diff(m.forward(prompt), io::read_npy_f32(dir + "/logits.npy").data), kLogitTol);
  generate_options opt;
  opt.max_new_tokens = want.at("greedy").at("max_new_tokens").as_int();
  EXPECT_EQ(generate_greedy(m, prompt, opt), ids(want.at("greedy").at("ids")));
}

}  // namespace
