// The front end's load options reach the model's backend: --q8-activations (Python's q8_activations,
// a server's --q8-activations) chooses what q8 decode does with its activation row.
//
// Oracle: the library's own model, built here with host_backend::q8_int8_activations set each way,
// its weights stored in q8 by store_weights_as and fed one token at a time. The front end decodes
// from a one-token prompt, so each of its calls is one row and every projection a one-row GEMM
// (the path the option switches); its logits come from the `logits` tap it dumps per call (what
// `muninn generate --dump DIR --taps logits` writes). Each setting must give the oracle's logits
// for that setting bit for bit, and the two settings must differ on the fixture, so an option the
// front end ignored would fail one of the two. The other families that take the option are
// checked for the wiring: int8 and fp32 differ, and int8 is the default.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/frontend/registry.hpp"
#include "muninn/io/npy.hpp"
#include "muninn/muninn.hpp"

namespace fe = muninn::frontend;
using namespace muninn;

namespace {

const std::string data = std::string(MUNINN_TEST_DATA) + "/";
using llama_model = model<host_backend, float, llama_arch>;

// A fresh folder for one run's dump.
std::string fresh_dir(const std::string& name) {
  const std::filesystem::path p = std::filesystem::path(testing::TempDir()) / ("muninn_frontend_options_" + name);
  std::filesystem::remove_all(p);
  return p.string();
}

struct decoded {
  std::vector<std::int32_t> tokens;  // the new tokens
  std::vector<float> logits;         // [calls, V]: call 0 is the prompt's, then one per new token but the last
  std::int64_t calls = 0;
};

// Reads the `logits` tap of calls 0, 1, ... from a dump folder.
void read_logits(const std::string& dir, decoded& d) {
  for (std::int64_t c = 0;; ++c) {
    const std::string f = dir + "/logits." + std::to_string(c) + ".npy";
    if (!std::filesystem::exists(f)) break;
    const io::npy_array<float> a = io::read_npy_f32(f);
    EXPECT_EQ(a.shape.size(), 2u);
    EXPECT_EQ(a.shape[0], 1) << f << ": a one-token call returns one row";
    d.logits.insert(d.logits.end(), a.data.begin(), a.data.end());
    d.calls = c + 1;
  }
}

// `muninn generate --model DIR --tokens P --max-new-tokens N <load options> --dump D --taps logits`, as
// the CLI runs it: one option set opens the model and generates.
decoded cli_generate(const std::string& model, const std::vector<std::int32_t>& prompt, int n,
                     const std::map<std::string, std::string>& load, const std::string& name) {
  fe::option_values o(fe::operation::generate, "--", '-');
  for (const auto& [k, v] : load) o.set(k, v);
  o.set("max-new-tokens", std::to_string(n));
  const std::string dir = fresh_dir(name);
  o.set("dump", dir);
  o.set("taps", "logits");
  const auto m = fe::open_model(data + model, o);
  decoded d;
  d.tokens = m->generate(prompt, o, {}, {}).tokens;
  read_logits(dir, d);
  return d;
}

// muninn.load(DIR, **load).generate(P, max_new_tokens=N) as Python (and a server) runs it: the load
// options open the model, the call's own options generate.
decoded loaded_generate(const std::string& model, const std::vector<std::int32_t>& prompt, int n,
                        const std::map<std::string, std::string>& load, const std::string& name) {
  fe::option_values lo(fe::operation::load, "", '_');
  for (const auto& [k, v] : load) lo.set(k, v);
  const auto m = fe::open_model(data + model, lo);
  fe::option_values o(fe::operation::generate, "", '_');
  o.set("max-new-tokens", std::to_string(n));
  const std::string dir = fresh_dir(name);
  o.set("dump", dir);
  o.set("taps", "logits");
  decoded d;
  d.tokens = m->generate(prompt, o, {}, {}).tokens;
  read_logits(dir, d);
  return d;
}

// The oracle: the library's Llama in q8 with the given activations, fed `ids` one token at a time;
// the logits of each token [ids.size(), V].
std::vector<float> oracle_decode(const std::string& dir, bool int8, const std::vector<std::int32_t>& ids) {
  host_backend be;
  be.q8_int8_activations = int8;
  llama_model m = llama_model::load(data + dir, be);
  m.store_weights_as(weight_format::q8);
  context_limits lim;
  lim.max_tokens = std::int64_t(ids.size());
  auto ctx = m.make_context(lim);
  std::vector<float> out;
  for (std::int32_t id : ids) {
    const std::vector<float> l = m.forward(ctx, {id}, {}, logits_for::last);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
  return m;
}

}  // namespace

TEST(FrontendOptions, Q8ActivationsReachTheDecodeGemvOfLlama) {
  const std::string model = "llama/tiny_tied_mha";
  const std::vector<std::int32_t> prompt = {19};
  const int n = 8;
  std::vector<float> want[2];
  for (bool int8 : {false, true}) {
    const std::string value = int8 ? "int8" : "fp32";
    SCOPED_TRACE("--q8-activations " + value);
    const std::map<std::string, std::string> load = {{"quantize", "q8"}, {"q8-activations", value}};
    const decoded cli = cli_generate(model, prompt, n, load, "cli_" + value);
    ASSERT_EQ(cli.tokens.size(), std::size_t(n));
    ASSERT_EQ(cli.calls, n) << "one call for the prompt's token and one per new token but the last";
    // The oracle decodes the tokens the front end chose; equal logits mean it chose the same ones.
    std::vector<std::int32_t> ids = prompt;
    ids.insert(ids.end(), cli.tokens.begin(), cli.tokens.end() - 1);
    want[int8] = oracle_decode(model, int8, ids);
    EXPECT_EQ(cli.logits, want[int8]) << "the CLI's logits are not the library's with q8_int8_activations = "
                                      << int8 << " (max |diff| " << max_abs_diff(cli.logits, want[int8]) << ")";
    const decoded loaded = loaded_generate(model, prompt, n, load, "load_" + value);
    EXPECT_EQ(loaded.tokens, cli.tokens);
    EXPECT_EQ(loaded.logits, want[int8]) << "a model opened with the load options (Python, a server) differs";
  }
  // The fixture tells the two apart (the tied head multiplies the rounded final hidden state by the
  // whole vocabulary): an option that changed nothing would fail one of the checks above.
  EXPECT_GT(max_abs_diff(want[0], want[1]), 1e-3);
  // Left out, the option is int8.
  const decoded def = cli_generate(model, prompt, n, {{"quantize", "q8"}}, "cli_default");
  EXPECT_EQ(def.logits, want[1]);
}

// Huginn, Mixture-of-Recursions and CALM (whose `logits` tap is the backbone's normalised hidden
// state, one chunk per call) take the option through their own loaders: fp32 must change the
// decode's numbers and int8 must be the default.
TEST(FrontendOptions, Q8ActivationsReachEveryDecodingFamily) {
  struct fixture {
    std::string model;
    std::vector<std::int32_t> prompt;
    std::map<std::string, std::string> extra;
  };
  const std::vector<fixture> fixtures = {
      {"huginn/tiny_f32", {117}, {{"steps", "4"}, {"init-state", "zero"}}},
      {"mor/expert_mcyc_r3_linear_sigmoid", {18}, {}},
      {"calm/calm", {12, 50, 30, 27}, {{"ae", data + "calm/ae"}}},
  };
  for (const auto& f : fixtures) {
    SCOPED_TRACE(f.model);
    std::vector<float> got[3];
    int i = 0;
    for (const char* value : {"fp32", "int8", ""}) {
      std::map<std::string, std::string> o = f.extra;
      o["quantize"] = "q8";
      if (*value) o["q8-activations"] = value;
      const decoded d = cli_generate(f.model, f.prompt, 6, o, "family_" + std::to_string(i));
      EXPECT_GT(d.calls, 1);
      got[i++] = d.logits;
    }
    EXPECT_GT(max_abs_diff(got[0], got[1]), 0.0) << "fp32 and int8 activations gave the same decode";
    EXPECT_EQ(got[2], got[1]) << "the default is not int8";
  }
}

// What the option cannot do is a usage error that names it, in the caller's spelling.
TEST(FrontendOptions, Q8ActivationsErrors) {
  const auto load_error = [](const std::map<std::string, std::string>& given, fe::operation op) -> std::string {
    fe::option_values o(op, "", '_');
    for (const auto& [k, v] : given) o.set(k, v);
    try {
      fe::open_model(data + "llama/tiny_tied_mha", o);
    } catch (const muninn::error& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(load_error({{"q8-activations", "fp32"}}, fe::operation::load),
            "q8_activations chooses what q8 decode does with its activations; it needs quantize q8 (on the cpu)");
  EXPECT_EQ(load_error({{"quantize", "q8"}, {"q8-activations", "int4"}}, fe::operation::load),
            "q8_activations must be int8|fp32, got 'int4'");
  // A server's kernels are batch-invariant unless told otherwise: int8 there is a contradiction...
  EXPECT_NE(load_error({{"quantize", "q8"}, {"q8-activations", "int8"}}, fe::operation::serve)
                .find("q8_activations int8 does not combine with kernels batch-invariant (the default here)"),
            std::string::npos);
  // ... fp32 is what those kernels do anyway, and int8 with the fastest kernels is fine.
  EXPECT_EQ(load_error({{"quantize", "q8"}, {"q8-activations", "fp32"}}, fe::operation::serve), "no error");
  EXPECT_EQ(load_error({{"quantize", "q8"}, {"q8-activations", "int8"}, {"kernels", "fastest"}}, fe::operation::serve),
            "no error");
}
