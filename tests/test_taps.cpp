// Taps (run_options::taps): each tap's values against a quantity computed independently of the
// pass (embedding rows, the head's own maths, the final latents, a reference router's choices),
// the name filter, and outputs bit-identical with and without a callback.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/muninn.hpp"
#include "test_io_util.hpp"
#include "test_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_taps {

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

namespace {

// Every tap of the calls, in arrival order, one row at a time: (name, step, sequence, position)
// and the row's values; sequence -1 when the event has no sequences.
struct tap_row {
  std::string name;
  std::int64_t step = 0, sequence = -1, position = 0;
  std::vector<float> values;
};
struct row_log {
  std::vector<tap_row> rows;
  bool any_sequences = false;
  tap_options options(std::vector<std::string> names = {}) {
    tap_options t;
    t.names = std::move(names);
    t.on_tap = [this](const tap_event& e) {
      any_sequences = any_sequences || e.sequences != nullptr;
      for (std::int64_t i = 0; i < e.rows; ++i)
        rows.push_back({std::string(e.name), e.step, e.sequences ? e.sequences[i] : -1, e.positions[i],
                        std::vector<float>(e.data + i * e.cols, e.data + (i + 1) * e.cols)});
    };
    return t;
  }
};

// The statistics of the exit criteria, by hand in double from the taps' floats.
double log_sum_exp(const std::vector<float>& x) {
  double m = x[0], s = 0;
  for (float v : x) m = std::max(m, double(v));
  for (float v : x) s += std::exp(double(v) - m);
  return m + std::log(s);
}
double kl_by_hand(const std::vector<float>& prev, const std::vector<float>& cur) {  // KL(p_prev ‖ p_cur)
  const double a = log_sum_exp(prev), b = log_sum_exp(cur);
  double kl = 0;
  for (std::size_t c = 0; c < cur.size(); ++c) {
    const double lp = double(prev[c]) - a, lq = double(cur[c]) - b;
    kl += std::exp(lp) * (lp - lq);
  }
  return kl;
}
double entropy_by_hand(const std::vector<float>& x) {
  const double z = log_sum_exp(x);
  double h = 0;
  for (float v : x) h -= std::exp(double(v) - z) * (double(v) - z);
  return h;
}
double norm_by_hand(const std::vector<float>& x) {
  double s = 0;
  for (float v : x) s += double(v) * v;
  return std::sqrt(s);
}

// Walks a log of a call under `criterion` (zero initial state, every step checked) and checks
// each halt.value row against the statistic recomputed from the state or logits taps before it,
// each halt.exited flag against the threshold rule, and that an exited token runs no later
// step. Returns the number of exits before the last step.
int check_halt_log(const row_log& log, halt_criterion criterion, double thr, std::int64_t h) {
  struct token {
    std::vector<float> state, logits, prev_state, prev_logits;
    double prev_entropy = 100, value = 0;  // value: this check's statistic
    std::int64_t prev_argmax = -1, run = 0, exited_at = -1;
    bool checked = false;
  };
  std::map<std::pair<std::int64_t, std::int64_t>, token> tok;
  int exits = 0, checks = 0;
  for (const tap_row& r : log.rows) {
    token& t = tok[{r.sequence, r.position}];
    if (t.prev_state.empty()) t.prev_state.assign(std::size_t(h), 0.0f);
    if (r.name == "state") {
      EXPECT_LT(t.exited_at, 0) << "token " << r.sequence << ":" << r.position << " ran step " << r.step
                                << " after exiting at step " << t.exited_at;
      t.state = r.values;
    } else if (r.name == "logits") {
      t.logits = r.values;
    } else if (r.name == "halt.value") {
      ++checks;
      double& value = t.value;
      switch (criterion) {
        case halt_criterion::latent_diff: {
          std::vector<float> d(t.state.size());
          for (std::size_t c = 0; c < d.size(); ++c) d[c] = float(double(t.state[c]) - t.prev_state[c]);
          value = norm_by_hand(d) / norm_by_hand(t.state);
          t.prev_state = t.state;
          break;
        }
        case halt_criterion::cosine: {
          double dot = 0;
          for (std::size_t c = 0; c < t.state.size(); ++c) dot += double(t.state[c]) * t.prev_state[c];
          value = 1.0 - dot / std::max(norm_by_hand(t.state) * norm_by_hand(t.prev_state), 1e-30);
          t.prev_state = t.state;
          break;
        }
        case halt_criterion::kl: {
          if (t.prev_logits.empty()) t.prev_logits.assign(t.logits.size(), 0.0f);  // uniform
          value = kl_by_hand(t.prev_logits, t.logits);
          t.prev_logits = t.logits;
          break;
        }
        case halt_criterion::entropy_diff: {
          const double e = entropy_by_hand(t.logits);
          value = std::abs(e - t.prev_entropy);
          t.prev_entropy = e;
          break;
        }
        default: {  // argmax_stable: the run of equal arg-maxes
          const std::int64_t a = std::max_element(t.logits.begin(), t.logits.end()) - t.logits.begin();
          t.run = a == t.prev_argmax ? t.run + 1 : 0;
          t.prev_argmax = a;
          value = double(t.run);
        }
      }
      EXPECT_NEAR(r.values[0], value, 1e-6 + 1e-4 * std::abs(value))
          << "token " << r.sequence << ":" << r.position << " step " << r.step;
    } else if (r.name == "halt.exited") {
      const double value = t.value;
      const bool want = criterion == halt_criterion::argmax_stable ? value >= thr : value < thr;
      EXPECT_EQ(r.values[0] != 0.0f, want) << "token " << r.sequence << ":" << r.position << " step " << r.step
                                             << " value " << value << " threshold " << thr;
      if (r.values[0] != 0.0f) {
        t.exited_at = r.step;
        ++exits;
      }
    }
  }
  EXPECT_GT(checks, 0);
  return exits;
}

}  // namespace

// The halt.value tap is the exit criterion's statistic, recomputed by hand from the state taps
// (latent change, cosine distance) or the logits taps the checks read (KL, entropy change,
// arg-max run); halt.exited flags exactly the tokens whose value crossed the threshold, and
// those run no further step. One sequence and a batch of three; outputs unchanged by the taps.
TEST(Taps, HaltValueIsTheCriterionRecomputedFromTheStateAndLogitTaps) {
  const auto m = model<host_backend, float, huginn_adaptive_arch>::load(muninn_test::data_dir + "tiny_f32");
  const std::int64_t h = m.dims().h;
  const std::vector<std::vector<std::int32_t>> batch = {{3, 17, 42}, {5, 60, 7, 9, 11}, {25, 63}};
  for (halt_criterion criterion : {halt_criterion::latent_diff, halt_criterion::cosine, halt_criterion::kl,
                                   halt_criterion::entropy_diff, halt_criterion::argmax_stable}) {
    SCOPED_TRACE(int(criterion));
    run_options o;
    o.steps = 8;
    o.init = state_init::zero{};
    o.halt.criterion = criterion;
    // A first run that never exits gives the values; the threshold is then put between two of
    // them so that some checks exit and some do not.
    const bool run_rule = criterion == halt_criterion::argmax_stable;
    o.halt.threshold = run_rule ? 1e9 : 0.0;
    row_log free_run;
    o.taps = free_run.options({"halt.value"});
    m.forward(kIds, o);
    if (run_rule) {
      o.halt.threshold = 2.0;
    } else {
      std::vector<double> values;
      for (const auto& r : free_run.rows)
        if (r.step >= 1) values.push_back(r.values[0]);
      std::sort(values.begin(), values.end());
      ASSERT_GE(values.size(), 8u);
      std::size_t k = values.size() / 4;  // the widest gap in the middle half: far from every value
      for (std::size_t i = k; i < 3 * values.size() / 4; ++i)
        if (values[i + 1] - values[i] > values[k + 1] - values[k]) k = i;
      o.halt.threshold = 0.5 * (values[k] + values[k + 1]);
    }

    const auto plain = m.forward(kIds, o);
    row_log log;
    o.taps = log.options({"state", "logits", "halt"});
    std::vector<std::int32_t> steps_used;
    o.steps_used = &steps_used;
    EXPECT_EQ(m.forward(kIds, o), plain);
    EXPECT_FALSE(log.any_sequences);
    const int exits = check_halt_log(log, criterion, o.halt.threshold, h);
    if (!run_rule) {
      EXPECT_GT(exits, 0);
      EXPECT_LT(*std::min_element(steps_used.begin(), steps_used.end()), 8);
    }

    // The same through forward_batch: each call stacks one token of every sequence.
    o.steps_used = nullptr;
    std::vector<decltype(m.make_context(8))> ctxs;
    for (std::size_t r = 0; r < batch.size(); ++r) ctxs.push_back(m.make_context(8, 8));
    std::vector<decltype(m.make_context(8))*> ptrs;
    for (auto& c : ctxs) ptrs.push_back(&c);
    auto ws = m.make_workspace(8);
    row_log blog;
    o.taps = blog.options({"state", "logits", "halt"});
    m.forward_batch(ws, ptrs, batch, o, logits_for::last);
    EXPECT_TRUE(blog.any_sequences);
    const int batch_exits = check_halt_log(blog, criterion, o.halt.threshold, h);
    if (!run_rule) {
      EXPECT_GT(batch_exits, 0);
    }
  }
}

// forward_batch's taps name each row's sequence: every row of sequence r holds what the same
// tap holds for that position when r's tokens run alone; a single call's taps have none. Fixed
// depth stacks every token in one call; under an exit criterion each call stacks one token of
// the sequences that have one left, so a call's k-th piece need not be sequence k.
TEST(Taps, BatchedTapsCarryEachRowsSequence) {
  const auto m = model<host_backend, float, huginn_adaptive_arch>::load(muninn_test::data_dir + "tiny_f32");
  const std::vector<std::vector<std::int32_t>> batch = {{25, 63}, {3, 17, 42}, {5, 60, 7, 9, 11}};
  for (const bool per_token : {false, true}) {
    SCOPED_TRACE(per_token ? "per-token exit" : "fixed depth");
    run_options o;
    o.steps = 3;
    if (per_token) {
      o.halt.criterion = halt_criterion::latent_diff;
      o.halt.threshold = 0;  // checked at every step, never reached
    }
    std::vector<decltype(m.make_context(8))> ctxs;
    for (std::size_t r = 0; r < batch.size(); ++r) ctxs.push_back(m.make_context(8, 3));
    std::vector<decltype(m.make_context(8))*> ptrs;
    for (auto& c : ctxs) ptrs.push_back(&c);
    auto ws = m.make_workspace(16);
    const std::vector<std::string> names = {"embeddings", "state", "core.layer.0", "logits", "halt"};
    row_log log;
    o.taps = log.options(names);
    m.forward_batch(ws, ptrs, batch, o, logits_for::all);
    ASSERT_TRUE(log.any_sequences);
    std::size_t total = 0;
    for (std::size_t r = 0; r < batch.size(); ++r) {
      row_log alone;
      run_options a = o;
      a.taps = alone.options(names);
      m.forward(batch[r], a);
      EXPECT_FALSE(alone.any_sequences);
      std::map<std::tuple<std::string, std::int64_t, std::int64_t>, std::vector<float>> want;
      for (const auto& row : alone.rows) want[{row.name, row.step, row.position}] = row.values;
      std::size_t seen = 0;
      for (const auto& row : log.rows) {
        if (row.sequence != std::int64_t(r)) continue;
        ++seen;
        const auto it = want.find({row.name, row.step, row.position});
        ASSERT_NE(it, want.end()) << row.name << "@" << row.step << " position " << row.position << " of sequence " << r;
        EXPECT_LE(muninn_test::max_abs_diff(row.values, it->second), 1e-5) << row.name << " sequence " << r;
      }
      EXPECT_EQ(seen, alone.rows.size()) << "sequence " << r;
      total += seen;
    }
    EXPECT_EQ(total, log.rows.size());
  }
}

// generate_batch names the prompt of each row, also once earlier prompts have finished: with
// greedy sampling the arg-max of each logits row is the token its prompt's generation took next.
TEST(Taps, GenerateBatchTapsNameThePrompt) {
  const auto m = model<host_backend, float>::load(muninn_test::data_dir + "tiny_f32");
  const std::vector<std::vector<std::int32_t>> prompts = {{3, 17, 42}, {5, 60, 7, 9}, {25, 63}};
  generate_options g;
  g.max_new_tokens = 4;
  g.sampling.greedy = true;
  g.run.steps = 2;
  // Prompt 0 stops at its first token (a stop id); the others must go on.
  g.stop_ids = {generate(m, prompts[0], g).tokens.at(0)};
  row_log log;
  g.run.taps = log.options({"logits"});
  const auto res = generate_batch(m, prompts, g);
  ASSERT_EQ(res[0].tokens.size(), 1u);
  ASSERT_GT(res[1].tokens.size() + res[2].tokens.size(), 2u) << "the other prompts should outlive prompt 0";
  std::size_t checked = 0;
  for (const auto& row : log.rows) {
    ASSERT_GE(row.sequence, 0);
    ASSERT_LT(row.sequence, 3);
    const auto& toks = res[std::size_t(row.sequence)].tokens;
    const std::int64_t k = row.position - std::int64_t(prompts[std::size_t(row.sequence)].size()) + 1;
    ASSERT_GE(k, 0) << "a logits row before the prompt's end";
    ASSERT_LT(k, std::int64_t(toks.size()));
    const std::int64_t a = std::max_element(row.values.begin(), row.values.end()) - row.values.begin();
    EXPECT_EQ(a, toks[std::size_t(k)]) << "sequence " << row.sequence << " position " << row.position;
    ++checked;
  }
  std::size_t generated = 0;
  for (const auto& r : res) generated += r.tokens.size();
  EXPECT_EQ(checked, generated);
}

}  // namespace test_taps
