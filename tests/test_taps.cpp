// Taps (run_options::taps): each tap's values against a quantity computed independently of the
// pass (embedding rows, the head's own maths, the final latents, a reference router's choices),
// the name filter, and outputs bit-identical with and without a callback.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/muninn.hpp"
#include "test_io_util.hpp"
#include "test_util.hpp"

using namespace muninn;

namespace {

// Every tap of a call, keyed "name@step", rows concatenated over the calls that reached it.
struct recorder {
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, std::vector<std::int64_t>> positions;
  std::map<std::string, std::int64_t> cols;
  tap_options options(std::vector<std::string> names = {}) {
    tap_options t;
    t.names = std::move(names);
    t.on_tap = [this](const tap_event& e) {
      const std::string key = std::string(e.name) + "@" + std::to_string(e.step);
      auto& v = values[key];
      v.insert(v.end(), e.data, e.data + e.rows * e.cols);
      auto& p = positions[key];
      p.insert(p.end(), e.positions, e.positions + e.rows);
      cols[key] = e.cols;
    };
    return t;
  }
};

const std::vector<std::int32_t> kIds = {3, 17, 42, 5, 60, 7};

// RMSNorm(x) · Wᵀ in double: the softmax head's maths, written out.
std::vector<float> head_by_hand(const std::vector<float>& x, const float* norm, const float* w, std::int64_t h,
                                std::int64_t V, double eps) {
  const std::int64_t n = std::int64_t(x.size()) / h;
  std::vector<float> out(std::size_t(n * V));
  for (std::int64_t i = 0; i < n; ++i) {
    double ss = 0;
    for (std::int64_t c = 0; c < h; ++c) ss += double(x[i * h + c]) * x[i * h + c];
    const double r = 1.0 / std::sqrt(ss / double(h) + eps);
    for (std::int64_t v = 0; v < V; ++v) {
      double acc = 0;
      for (std::int64_t c = 0; c < h; ++c) acc += double(x[i * h + c]) * r * norm[c] * w[v * h + c];
      out[std::size_t(i * V + v)] = float(acc);
    }
  }
  return out;
}

}  // namespace

TEST(Taps, HuginnEmbeddingsAreScaledEmbeddingRows) {
  const auto m = model<host_backend, float>::load(muninn_test::data_dir + "tiny_f32");
  recorder rec;
  run_options o;
  o.taps = rec.options({"embeddings"});
  m.forward(kIds, o);
  ASSERT_EQ(rec.values.size(), 1u);
  const auto& e = rec.values.at("embeddings@-1");
  const std::int64_t h = m.dims().h;
  ASSERT_EQ(e.size(), kIds.size() * std::size_t(h));
  const float scale = float(std::sqrt(double(h)));
  for (std::size_t i = 0; i < kIds.size(); ++i)
    for (std::int64_t c = 0; c < h; ++c)
      ASSERT_NEAR(e[i * h + c], m.weights().wte.data()[kIds[i] * h + c] * scale, 1e-6) << i << "," << c;
  EXPECT_EQ(rec.positions.at("embeddings@-1"), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(Taps, HuginnStatesHeadInputAndLogits) {
  const auto m = model<host_backend, float>::load(muninn_test::data_dir + "tiny_f32");
  recorder rec;
  run_options o;
  o.steps = 3;
  std::vector<float> latents;
  o.latents = &latents;
  o.taps = rec.options();
  const auto logits = m.forward(kIds, o);
  const std::int64_t h = m.dims().h, V = m.output_width();
  // One state tap per step; the last equals the final latents.
  for (int s = 0; s < 3; ++s) EXPECT_EQ(rec.values.count("state@" + std::to_string(s)), 1u) << s;
  EXPECT_EQ(rec.values.count("state@3"), 0u);
  EXPECT_EQ(rec.values.at("state@2"), latents);
  // Layers: each group's layers, the core's at every step; the last core layer of a step is not
  // the state (the injection comes before the core, the state is its output).
  EXPECT_EQ(rec.values.count("prelude.layer.0@-1"), 1u);
  EXPECT_EQ(rec.values.count("core.layer.1@2"), 1u);
  EXPECT_EQ(rec.values.at("core.layer." + std::to_string(m.config().n_layers_in_recurrent_block - 1) + "@2"), latents);
  EXPECT_EQ(rec.values.count("coda.layer.0@-1"), 1u);
  // The logits tap is the call's output, and the head's maths on the head.input tap give it.
  EXPECT_EQ(rec.values.at("logits@-1"), logits);
  EXPECT_EQ(rec.cols.at("logits@-1"), V);
  const auto& hin = rec.values.at("head.input@-1");
  ASSERT_EQ(hin.size(), kIds.size() * std::size_t(h));
  EXPECT_LE(muninn_test::max_abs_diff(head_by_hand(hin, m.weights().ln_f.data(), m.output_weight(), h, V,
                                                   m.dims().eps), logits), 1e-4);
}

TEST(Taps, FilterTakesNamesAndDottedPrefixes) {
  const auto m = model<host_backend, float>::load(muninn_test::data_dir + "tiny_f32");
  recorder rec;
  run_options o;
  o.taps = rec.options({"core", "logits"});
  m.forward(kIds, o);
  for (const auto& [key, v] : rec.values)
    EXPECT_TRUE(key.rfind("core.layer.", 0) == 0 || key == "logits@-1") << key;
  EXPECT_EQ(rec.values.count("logits@-1"), 1u);
  EXPECT_EQ(rec.values.count("core.layer.0@0"), 1u);
  tap_options t;
  t.names = {"cor"};
  t.on_tap = [](const tap_event&) {};
  EXPECT_FALSE(t.wants("core.layer.0"));  // a prefix must end at a dot
  EXPECT_TRUE(t.wants("cor"));
  t.on_tap = nullptr;
  EXPECT_FALSE(t.wants("cor"));  // no callback: nothing is taken
}

TEST(Taps, OutputsAreBitIdenticalWithAndWithoutTaps) {
  const auto m = model<host_backend, float>::load(muninn_test::data_dir + "tiny_f32");
  const auto plain = m.forward(kIds);
  recorder all, none;
  run_options o;
  o.taps = all.options();
  EXPECT_EQ(m.forward(kIds, o), plain);
  o.taps = none.options({"no.such.tap"});
  EXPECT_EQ(m.forward(kIds, o), plain);
  EXPECT_TRUE(none.values.empty());
  generate_options g;
  g.max_new_tokens = 4;
  const auto gen_plain = generate(m, kIds, g);
  g.run.taps = all.options();
  const auto gen_tapped = generate(m, kIds, g);
  EXPECT_EQ(gen_tapped.tokens, gen_plain.tokens);
  EXPECT_EQ(gen_tapped.last_logits, gen_plain.last_logits);
}

TEST(Taps, LlamaLastLayerFeedsTheHead) {
  const auto m = model<host_backend, float, llama_arch>::load(std::string(MUNINN_TEST_DATA) + "/llama/tiny_tied_mha");
  recorder rec;
  run_options o;
  o.taps = rec.options({"prelude", "head.input", "embeddings"});
  const auto logits = m.forward(kIds, o);
  const std::int64_t last = std::int64_t(m.layers(layer_group::prelude).size()) - 1;
  EXPECT_EQ(rec.values.at("prelude.layer." + std::to_string(last) + "@-1"), rec.values.at("head.input@-1"));
  EXPECT_NE(rec.values.at("prelude.layer." + std::to_string(last - 1) + "@-1"), rec.values.at("head.input@-1"));
  const std::int64_t h = m.dims().h;
  EXPECT_LE(muninn_test::max_abs_diff(head_by_hand(rec.values.at("head.input@-1"), m.weights().ln_f.data(),
                                                   m.output_weight(), h, m.output_width(), m.dims().eps),
                                      logits),
            1e-4);
  const auto& e = rec.values.at("embeddings@-1");
  for (std::size_t i = 0; i < kIds.size(); ++i)
    for (std::int64_t c = 0; c < h; ++c) ASSERT_EQ(e[i * h + c], m.weights().wte.data()[kIds[i] * h + c]);
}

// The reference's scoring-mode selections (which positions ran recursion r) are the positions the
// "router.selected" tap flags, and each gate is α·σ(logit) of its router logit.
TEST(Taps, MorRouterSelectionsMatchTheReference) {
  const std::string dir = std::string(MUNINN_TEST_DATA) + "/mor/expert_mcyc_r3_linear_sigmoid";
  const auto m = model<host_backend, float, mor_expert_arch>::load(dir);
  const io::json doc = io::read_json_file(dir + "/expected.json");
  const io::json& s = doc.at("scoring");
  for (std::size_t b = 0; b < s.at("input_ids").size(); ++b) {
    recorder rec;
    run_options o;
    o.routing = routing_mode::scoring;
    o.taps = rec.options({"router"});
    m.forward(muninn_test::ids_of(s.at("input_ids")[b]), o);
    const io::json& sel = s.at("selected")[b];
    for (std::size_t r = 0; r < sel.size(); ++r) {
      const std::string key = "router.selected@" + std::to_string(r);
      std::vector<std::int64_t> picked;
      for (std::size_t i = 0; i < rec.values.at(key).size(); ++i)
        if (rec.values.at(key)[i] != 0.0f) picked.push_back(rec.positions.at(key)[i]);
      std::vector<std::int64_t> want;
      for (std::size_t i = 0; i < sel[r].size(); ++i) want.push_back(sel[r][i].as_int());
      std::sort(want.begin(), want.end());
      EXPECT_EQ(picked, want) << "row " << b << " recursion " << r;
      const auto& z = rec.values.at("router.logits@" + std::to_string(r));
      const auto& g = rec.values.at("router.gates@" + std::to_string(r));
      ASSERT_EQ(z.size(), g.size());
      for (std::size_t i = 0; i < z.size(); ++i)
        EXPECT_NEAR(g[i], m.config().mor.alpha / (1.0 + std::exp(-double(z[i]))), 1e-6);
    }
  }
}

TEST(Taps, MorTokenChoiceDepthsAreTheRunsDepths) {
  const std::string dir = std::string(MUNINN_TEST_DATA) + "/mor/token_cycle_r3_sigmoid";
  const auto m = model<host_backend, float, mor_token_arch>::load(dir);
  recorder rec;
  run_options o;
  std::vector<std::int32_t> depths;
  o.depths = &depths;
  o.taps = rec.options({"router"});
  m.forward(kIds, o);
  const auto& d = rec.values.at("router.depths@-1");
  ASSERT_EQ(d.size(), depths.size());
  for (std::size_t i = 0; i < d.size(); ++i) EXPECT_EQ(d[i], float(depths[i])) << i;
  EXPECT_EQ(rec.cols.at("router.logits@-1"), m.config().mor.recursions);
  EXPECT_EQ(rec.cols.at("router.probs@-1"), m.config().mor.recursions);
}
