// TRM / HRM on the host against our PyTorch reference (tools/reference/trm_ref.py, fixtures in
// tests/data/trm written in the released layout): the resolved configs, batch independence, the
// backend's halting decision, the drift of the fp32 run of a bf16 checkpoint from the bf16
// reference; the run's files (YAML defaults, dataset sizes, key prefixes, the newest step_N) and
// every bad input as one line naming the value or file. The fixtures' logits and q values after 1,
// 2 and 16 supervision steps, the Q-halt steps and predictions and the fp32 run of the bf16
// checkpoint are model cases, tests/model_cases.hpp, run on the host and on CUDA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "muninn/families/trm/model.hpp"
#include "muninn/muninn.hpp"
#include "test_io_util.hpp"
#include "test_trm_util.hpp"
#include "test_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_trm {

using namespace muninn;
using trm = trm_model<host_backend, float>;
using muninn_test::trm_case;

namespace {

constexpr double kTol = 1e-4;  // the fixtures' fp32 tolerance (expected.json: tolerances)

class TrmFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(TrmFixture, ConfigResolvesAsTheReference) {
  const trm_case c(GetParam());
  const trm m = trm::load(c.folder());
  const trm_config& k = m.config();
  const auto& e = c.expected.at("config");
  const auto& d = c.expected.at("derived");
  EXPECT_EQ(trm_arch_name(k.arch), e.at("arch").as_string());
  EXPECT_EQ(k.seq_len, e.at("seq_len").as_int());
  EXPECT_EQ(k.vocab_size, e.at("vocab_size").as_int());
  EXPECT_EQ(k.num_puzzle_identifiers, e.at("num_puzzle_identifiers").as_int());
  EXPECT_EQ(k.hidden_size, e.at("hidden_size").as_int());
  EXPECT_EQ(k.H_cycles, e.at("H_cycles").as_int());
  EXPECT_EQ(k.L_cycles, e.at("L_cycles").as_int());
  EXPECT_EQ(k.L_layers, e.at("L_layers").as_int());
  EXPECT_EQ(k.forward_dtype, e.at("forward_dtype").as_string());
  EXPECT_EQ(k.pos_encodings, e.at("pos_encodings").as_string());
  EXPECT_EQ(k.mlp_t, e.at("mlp_t").as_bool());
  EXPECT_EQ(k.prefix_len(), d.at("prefix_len").as_int());
  EXPECT_EQ(k.total_len(), d.at("total_len").as_int());
  EXPECT_EQ(k.swiglu_inter(k.hidden_size), d.at("swiglu_inter").as_int());
  EXPECT_EQ(k.net_calls_per_step(), d.at("net_calls_per_step").as_int());
  EXPECT_EQ(trm_halt_rule_name(k.halt_rule()), d.at("halt_rule").as_string());
  EXPECT_EQ(m.puzzle_table_rows(), k.num_puzzle_identifiers);
}

TEST_P(TrmFixture, BatchOfOneEqualsTheBatch) {
  // Samples never interact: each sample alone gives its row of the batch's outputs.
  const trm_case c(GetParam());
  trm m = trm::load(c.folder());
  const trm_result all = m.solve(c.inputs, c.ids, trm_halting::fixed{3});
  for (std::int64_t b = 0; b < c.B; ++b) {
    const std::vector<std::int32_t> in(c.inputs.begin() + b * c.L, c.inputs.begin() + (b + 1) * c.L);
    const trm_result one = m.solve(in, {c.ids[std::size_t(b)]}, trm_halting::fixed{3});
    const std::vector<float> row(all.logits.begin() + b * c.L * c.V, all.logits.begin() + (b + 1) * c.L * c.V);
    EXPECT_LE(muninn_test::max_abs_diff(one.logits, row), 1e-5) << "sample " << b;
  }
}

// The stream taps of a solve, in the order they arrive.
struct stream_event {
  std::string name;
  std::int64_t step = 0, rows = 0, cols = 0;
  std::vector<float> data;
  std::vector<std::int64_t> positions, sequences;
};

tap_options record_streams(std::vector<stream_event>& out, std::vector<std::string> names = {}) {
  tap_options t;
  t.names = std::move(names);
  t.on_tap = [&out](const tap_event& e) {
    stream_event s{std::string(e.name), e.step, e.rows, e.cols, std::vector<float>(e.data, e.data + e.rows * e.cols),
                   std::vector<std::int64_t>(e.positions, e.positions + e.rows), {}};
    if (e.sequences) s.sequences.assign(e.sequences, e.sequences + e.rows);
    out.push_back(std::move(s));
  };
  return t;
}

// z_H [n·S, D] through the heads by hand, in double: logits [n, L, V] of the grid positions
// (no final norm: lm_head on z_H) and q [n, 2] from position 0.
void heads_by_hand(const trm& m, const std::vector<float>& z, std::vector<float>& logits, std::vector<float>& q) {
  const trm_config& k = m.config();
  const std::int64_t S = k.total_len(), P = k.prefix_len(), L = k.seq_len, D = k.hidden_size, V = k.vocab_size;
  const std::int64_t n = std::int64_t(z.size()) / (S * D);
  const float* W = m.weights().lm_head.data();
  const float* qw = m.weights().q_w.data();
  const float* qb = m.weights().q_b.data();
  logits.assign(std::size_t(n * L * V), 0.0f);
  q.assign(std::size_t(n * 2), 0.0f);
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t p = 0; p < L; ++p)
      for (std::int64_t v = 0; v < V; ++v) {
        double acc = 0;
        for (std::int64_t d = 0; d < D; ++d) acc += double(z[std::size_t((b * S + P + p) * D + d)]) * W[v * D + d];
        logits[std::size_t((b * L + p) * V + v)] = float(acc);
      }
    for (std::int64_t j = 0; j < 2; ++j) {
      double acc = qb[j];
      for (std::int64_t d = 0; d < D; ++d) acc += double(z[std::size_t(b * S * D + d)]) * qw[j * D + d];
      q[std::size_t(b * 2 + j)] = float(acc);
    }
  }
}

TEST_P(TrmFixture, StreamTapsEveryCycleAndTheLastZHIsWhatTheHeadsRead) {
  // Under Q halting (the samples stop at different steps): per supervision step H_cycles·L_cycles
  // z_L taps and H_cycles z_H taps in the schedule's order, rows n·S of the samples still running;
  // the last z_H through lm_head and the Q head by hand gives that step's logits and q values.
  const trm_case c(GetParam());
  trm m = trm::load(c.folder());
  const trm_config& k = m.config();
  const std::int64_t S = k.total_len(), D = k.hidden_size;
  std::vector<stream_event> ev;
  std::vector<std::vector<std::int64_t>> samples;
  std::vector<trm_step_output> outs;
  const trm_result tapped = m.solve(
      c.inputs, c.ids, trm_halting::q_halt{},
      [&](std::int64_t, const std::vector<std::int64_t>& active, const trm_step_output& o) {
        samples.push_back(active);
        outs.push_back(o);
      },
      record_streams(ev));
  std::vector<std::string> order;  // one supervision step's taps, as the paper's loop reaches them
  for (std::int64_t t = 0; t < k.H_cycles; ++t) {
    for (std::int64_t j = 0; j < k.L_cycles; ++j)
      order.push_back("z_L.cycle." + std::to_string(t) + "." + std::to_string(j));
    order.push_back("z_H.cycle." + std::to_string(t));
  }
  const std::size_t per_step = std::size_t(k.H_cycles * (k.L_cycles + 1));
  ASSERT_EQ(ev.size(), samples.size() * per_step);
  ASSERT_GT(samples.front().size(), samples.back().size()) << "the case should halt samples at different steps";
  for (std::size_t s = 0; s < samples.size(); ++s) {
    const std::int64_t n = std::int64_t(samples[s].size());
    for (std::size_t i = 0; i < per_step; ++i) {
      const stream_event& e = ev[s * per_step + i];
      EXPECT_EQ(e.name, order[i]) << "step " << s;
      EXPECT_EQ(e.step, std::int64_t(s));
      ASSERT_EQ(e.rows, n * S);
      ASSERT_EQ(e.cols, D);
      for (std::int64_t r = 0; r < e.rows; ++r) {
        ASSERT_EQ(e.positions[std::size_t(r)], r % S);
        ASSERT_EQ(e.sequences[std::size_t(r)], samples[s][std::size_t(r / S)]) << "step " << s << " row " << r;
      }
    }
    std::vector<float> logits, q;
    heads_by_hand(m, ev[(s + 1) * per_step - 1].data, logits, q);
    EXPECT_LE(muninn_test::max_abs_diff(logits, outs[s].logits), 1e-5) << "step " << s;
    for (std::int64_t b = 0; b < n; ++b) {
      EXPECT_NEAR(q[std::size_t(2 * b)], outs[s].q_halt[std::size_t(b)], 1e-5);
      EXPECT_NEAR(q[std::size_t(2 * b + 1)], outs[s].q_continue[std::size_t(b)], 1e-5);
    }
    // Every z_L and z_H of the step differs from the next: each update changes the stream.
    for (std::size_t i = 0; i + 1 < per_step; ++i)
      if (ev[s * per_step + i].name.compare(0, 3, "z_H") == 0) {
        EXPECT_NE(ev[s * per_step + i].data, ev[(s + 1) * per_step - 1].data) << "step " << s << " tap " << i;
      }
  }
  // Taps change nothing.
  const trm_result plain = m.solve(c.inputs, c.ids, trm_halting::q_halt{});
  EXPECT_EQ(tapped.logits, plain.logits);
  EXPECT_EQ(tapped.steps, plain.steps);
  EXPECT_EQ(tapped.q_halt, plain.q_halt);
}

TEST_P(TrmFixture, LastZHThroughTheHeadIsTheReferenceLogits) {
  // The reference's logits after supervision steps 1, 2 and 16 (logits.npy) from the z_H taps
  // alone, selected by a dotted prefix; without a step callback (the taps' own path).
  const trm_case c(GetParam());
  trm m = trm::load(c.folder());
  const std::int64_t H = m.config().H_cycles;
  std::vector<stream_event> ev;
  const std::string last = "z_H.cycle." + std::to_string(H - 1);
  m.solve(c.inputs, c.ids, trm_halting::fixed{16}, muninn::detail::trm_no_step_callback{}, record_streams(ev, {"z_H"}));
  ASSERT_EQ(ev.size(), std::size_t(16 * H));
  for (const auto& e : ev) ASSERT_EQ(e.name.compare(0, 4, "z_H."), 0) << e.name;
  const auto want = c.npy("logits.npy", {3, c.B, c.L, c.V});
  const std::int64_t LV = c.B * c.L * c.V;
  const std::int64_t steps[3] = {0, 1, 15};
  for (int slot = 0; slot < 3; ++slot) {
    const stream_event& e = ev[std::size_t((steps[slot] + 1) * H - 1)];
    ASSERT_EQ(e.name, last);
    ASSERT_EQ(e.step, steps[slot]);
    std::vector<float> logits, q;
    heads_by_hand(m, e.data, logits, q);
    const std::vector<float> ref(want.begin() + slot * LV, want.begin() + (slot + 1) * LV);
    EXPECT_LE(muninn_test::max_abs_diff(logits, ref), kTol) << "supervision step " << steps[slot] + 1;
  }
  // One tap by its full name; a dotted prefix takes all it stands for; a name of none, nothing.
  std::vector<stream_event> one, prefix, none;
  m.solve(c.inputs, c.ids, trm_halting::fixed{2}, muninn::detail::trm_no_step_callback{}, record_streams(one, {"z_L.cycle.0.0"}));
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[1].name, "z_L.cycle.0.0");
  EXPECT_EQ(one[1].step, 1);
  m.solve(c.inputs, c.ids, trm_halting::fixed{2}, muninn::detail::trm_no_step_callback{}, record_streams(prefix, {"z_L.cycle"}));
  EXPECT_EQ(prefix.size(), std::size_t(2 * H * m.config().L_cycles));
  m.solve(c.inputs, c.ids, trm_halting::fixed{2}, muninn::detail::trm_no_step_callback{}, record_streams(none, {"z_L.cyc"}));
  EXPECT_TRUE(none.empty());
}

// A rule decided on the host from every step's downloaded q values (a policy with stop() only).
struct host_rule {
  q_halt_rule r;
  std::int64_t max_steps(const trm_config& c) const { return c.halt_max_steps; }
  bool stop(const trm_config&, float qh, float qc) const {
    return r.kind == q_halt_kind::above ? qh > r.threshold : r.kind == q_halt_kind::over_continue ? qh > qc : false;
  }
};
// The same rule decided on the backend (a policy with rule()).
struct device_rule {
  q_halt_rule r;
  std::int64_t max_steps(const trm_config& c) const { return c.halt_max_steps; }
  q_halt_rule rule(const trm_config&) const { return r; }
};

TEST_P(TrmFixture, BackendHaltingEqualsTheRuleOnHostFloats) {
  // The backend's decision (only a byte per sample downloaded) stops every sample at the step the
  // rule on the downloaded q values stops it, with the same outputs; a step callback (which makes
  // every step's outputs download) changes nothing either.
  const trm_case c(GetParam());
  trm m = trm::load(c.folder());
  const trm_result free_run = m.solve(c.inputs, c.ids, trm_halting::fixed{});
  std::vector<float> q = free_run.q_halt;  // a threshold inside the samples' q_halt range halts some, not all
  std::sort(q.begin(), q.end());
  const float mid = 0.5f * (q[1] + q[2]);
  for (const q_halt_rule r : {q_halt_rule{q_halt_kind::over_continue, 0.0f}, q_halt_rule{q_halt_kind::above, 0.0f},
                              q_halt_rule{q_halt_kind::above, mid}}) {
    const trm_result host = m.solve(c.inputs, c.ids, host_rule{r});
    const trm_result dev = m.solve(c.inputs, c.ids, device_rule{r});
    std::int64_t steps_seen = 0;
    const trm_result with_cb = m.solve(c.inputs, c.ids, device_rule{r},
                                       [&](std::int64_t, const std::vector<std::int64_t>&, const trm_step_output& o) {
                                         steps_seen += std::int64_t(o.q_halt.size());
                                       });
    const std::string what = std::string("rule ") + std::to_string(int(r.kind)) + " at " + std::to_string(r.threshold);
    EXPECT_EQ(dev.steps, host.steps) << what;
    EXPECT_EQ(dev.logits, host.logits) << what;
    EXPECT_EQ(dev.q_halt, host.q_halt) << what;
    EXPECT_EQ(dev.q_continue, host.q_continue) << what;
    EXPECT_EQ(with_cb.steps, dev.steps) << what;
    EXPECT_EQ(with_cb.logits, dev.logits) << what;
    std::int64_t total = 0;
    for (auto s : dev.steps) total += s;
    EXPECT_EQ(steps_seen, total) << what;  // the callback saw each active sample once per step
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, TrmFixture, ::testing::Values("trm_att_f32", "trm_mlpt_f32", "hrm_f32"));

// ---- the slots

TEST(TrmArch, AModelOfTheArchLoadsARunAndRefusesTheOtherMixer) {
  using att_model = model<host_backend, float, trm_attention_arch>;
  using mlp_model = model<host_backend, float, trm_mlp_arch>;
  const trm_case att("trm_att_f32"), mlp("trm_mlpt_f32"), hrm("hrm_f32");
  EXPECT_EQ(att_model::load(att.folder()).parameter_count(), trm::load(att.folder()).parameter_count());
  EXPECT_EQ(mlp_model::load(mlp.folder()).parameter_count(), trm::load(mlp.folder()).parameter_count());
  const att_model h = att_model::load(hrm.folder());  // HRM: the H net is the coda
  EXPECT_EQ(std::int64_t(h.layers(layer_group::coda).size()), h.config().H_layers);
  EXPECT_EQ(std::int64_t(h.layers(layer_group::core).size()), h.config().L_layers);
  std::string msg = muninn_test::error_of([&] { att_model::load(mlp.folder()); });
  EXPECT_NE(msg.find("mixes tokens with an MLP (mlp_t) but the model was compiled with block::post_norm (use "
                     "trm_mlp_arch)"),
            std::string::npos)
      << msg;
  msg = muninn_test::error_of([&] { mlp_model::load(att.folder()); });
  EXPECT_NE(msg.find("uses attention but the model was compiled with block::post_norm_token_mlp (use trm_attention_arch)"),
            std::string::npos)
      << msg;
}

TEST(TrmBf16, DriftFromTheBf16ReferenceStaysWhereTheFixtureSays) {
  // The host computes in fp32; the released setting is bf16. The drift of our fp32 run from the
  // bf16 reference must be the drift of the reference's own fp32 run (up to the fp32 tolerance).
  const trm_case c("trm_att_bf16");
  trm m = trm::load(c.folder());
  const auto t = muninn_test::trace_fixed(m, c);
  const auto bf = c.npy("logits.npy", {3, c.B, c.L, c.V});
  const auto& drift = c.expected.at("fp32_run").at("drift_from_bf16");
  const auto bq = trm_case::table(c.expected.at("q_halt"));
  const std::int64_t n = c.B * c.L * c.V;
  const int steps[3] = {1, 2, 16};
  for (int s = 0; s < 3; ++s) {
    const std::vector<float> a(t.logits.begin() + s * n, t.logits.begin() + (s + 1) * n), b(bf.begin() + s * n, bf.begin() + (s + 1) * n);
    const double d = muninn_test::max_abs_diff(a, b);
    const double dq = muninn_test::max_abs_diff(t.q_halt[std::size_t(steps[s] - 1)], bq[std::size_t(steps[s] - 1)]);
    const auto& ref = drift[std::size_t(steps[s] - 1)];  // one entry per step 1..16
    std::printf("[ drift ] step %d: max |dlogit| %.4f (reference fp32 run %.4f), max |dq_halt| %.4f (%.4f)\n", steps[s], d,
                ref.at("max_abs_logit").as_double(), dq, ref.at("max_abs_q_halt").as_double());
    EXPECT_LE(d, ref.at("max_abs_logit").as_double() + kTol);
    EXPECT_LE(dq, ref.at("max_abs_q_halt").as_double() + kTol);
  }
  for (std::size_t s = 0; s < 16; ++s)
    EXPECT_LE(muninn_test::max_abs_diff(t.q_halt[s], bq[s]), drift[s].at("max_abs_q_halt").as_double() + kTol) << s + 1;
}

// ---- the run's files

class TrmFiles : public muninn_test::temp_dir_test {
 protected:
  TrmFiles() : temp_dir_test("muninn_trm_") {}
  // A copy of a case in dir_/run (and the datasets in dir_/data unless `with_data` is false).
  std::string copy_case(const std::string& name, bool with_data = true) {
    namespace fs = std::filesystem;
    fs::copy(muninn_test::trm_dir + name, dir_ / "run", fs::copy_options::recursive);
    if (with_data) fs::copy(muninn_test::trm_dir + "data", dir_ / "data", fs::copy_options::recursive);
    return (dir_ / "run").string();
  }
  static void edit(const std::string& file, const std::string& from, const std::string& to) {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from << " not in " << file;
    text.replace(at, from.size(), to);
    muninn_test::write_bytes(file, text);
  }
};

TEST_F(TrmFiles, TakesTheNewestStepFile) {
  const std::string run = copy_case("trm_mlpt_f32");
  std::filesystem::copy_file(run + "/step_1560", run + "/step_99");
  EXPECT_EQ(std::filesystem::path(io::find_trm_step_file(run)).filename(), "step_1560");
  std::filesystem::copy_file(run + "/step_1560", run + "/step_20000");
  EXPECT_EQ(std::filesystem::path(io::find_trm_step_file(run)).filename(), "step_20000");
  EXPECT_EQ(trm::load(run + "/step_99").step_file(), run + "/step_99");  // a file path is taken as given
}

TEST_F(TrmFiles, HrmDefaultsToBf16WhenTheYamlSaysNothing) {
  const std::string run = copy_case("hrm_f32");
  edit(run + "/all_config.yaml", "  forward_dtype: float32\n", "");
  EXPECT_EQ(trm::load(run).config().forward_dtype, "bfloat16");
}

TEST_F(TrmFiles, SizesFromAConfigJsonOrGivenExplicitly) {
  const std::string run = copy_case("trm_mlpt_f32", false);
  EXPECT_NE(muninn_test::error_of([&] { trm::load(run); }).find("train/dataset.json"), std::string::npos);
  trm_load_options o;
  o.sizes = trm_sizes{16, 6, 1};
  EXPECT_EQ(trm::load(run, o).config().sizes_source, "the sizes given");
  muninn_test::write_bytes(run + "/config.json", R"({"seq_len": 16, "vocab_size": 6, "num_puzzle_identifiers": 1})");
  EXPECT_EQ(trm::load(run).config().vocab_size, 6);
}

TEST_F(TrmFiles, DataDirIsTheLastResort) {
  const std::string run = copy_case("trm_mlpt_f32", false);
  trm_load_options o;
  o.data_dir = muninn_test::trm_dir + "data/sudoku4/test";
  EXPECT_EQ(trm::load(run, o).config().seq_len, 16);
}

TEST_F(TrmFiles, AMissingDatasetJsonIsOneLineNamingTheDataset) {
  const std::string run = copy_case("trm_att_f32");
  std::filesystem::remove(dir_ / "data/arc4/train/dataset.json");
  const std::string msg = muninn_test::error_of([&] { trm::load(run); });
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find("all_config.yaml: the dataset 'data/arc4' has no train/dataset.json"),
            std::string::npos)
      << msg;
}

TEST_F(TrmFiles, LayerCountsThatDisagreeWithTheYaml) {
  const std::string run = copy_case("trm_att_f32");
  edit(run + "/all_config.yaml", "L_layers: 2", "L_layers: 3");
  const std::string msg = muninn_test::error_of([&] { trm::load(run); });
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find("step_51020: holds 2 layers of L_level but "), std::string::npos) << msg;
  EXPECT_NE(msg.find("all_config.yaml says L_layers 3"), std::string::npos) << msg;
  const std::string hrm = (dir_ / "hrm").string();
  std::filesystem::copy(muninn_test::trm_dir + "hrm_f32", hrm, std::filesystem::copy_options::recursive);
  edit(hrm + "/all_config.yaml", "H_layers: 1", "H_layers: 4");
  EXPECT_NE(muninn_test::error_of([&] { trm::load(hrm); }).find("holds 1 layers of H_level but"), std::string::npos);
}

TEST_F(TrmFiles, AWidthThatDisagreesNamesTheTensor) {
  const std::string run = copy_case("trm_mlpt_f32");
  edit(run + "/all_config.yaml", "expansion: 4", "expansion: 40");
  const std::string msg = muninn_test::error_of([&] { trm::load(run); });
  EXPECT_NE(msg.find("tensor 'L_level.layers.0.mlp.gate_up_proj.weight' has shape [512, 12] but"), std::string::npos)
      << msg;
}

TEST_F(TrmFiles, AMissingRequiredKeyNamesIt) {
  const std::string run = copy_case("hrm_f32");
  edit(run + "/all_config.yaml", "  H_layers: 1\n", "");
  EXPECT_NE(muninn_test::error_of([&] { trm::load(run); }).find("missing field 'arch.H_layers'"), std::string::npos);
}

// Float settings of all_config.yaml: finite (YAML spells .inf and .nan) and inside their ranges, one line each.
TEST_F(TrmFiles, FloatSettingsMustBeFiniteAndInRange) {
  const std::string run = copy_case("trm_att_f32", false);
  const std::string yaml = run + "/all_config.yaml";
  std::ifstream in(yaml);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto with = [&](const std::string& line) {  // `line` added to the arch block
    std::string t = text;
    t.insert(t.find("  forward_dtype:"), line + "\n");
    muninn_test::write_bytes(yaml, t);
  };
  const auto error_with = [&](const std::string& line) {
    with(line);
    return muninn_test::error_of([&] { io::trm_arch_from_yaml(yaml); });
  };
  const std::string positive = "; it must be a finite number in (0, 3.40282e+38]";
  EXPECT_EQ(error_with("  rope_theta: .inf"), yaml + ": field 'arch.rope_theta' is inf" + positive);
  EXPECT_EQ(error_with("  rope_theta: .nan"), yaml + ": field 'arch.rope_theta' is nan" + positive);
  EXPECT_EQ(error_with("  rope_theta: -10000"), yaml + ": field 'arch.rope_theta' is -10000" + positive);
  EXPECT_EQ(error_with("  rms_norm_eps: .inf"), yaml + ": field 'arch.rms_norm_eps' is inf" + positive);
  EXPECT_EQ(error_with("  rms_norm_eps: 1e-60"), yaml + ": field 'arch.rms_norm_eps' is 1e-60, which is 0 as a float");
  EXPECT_EQ(error_with("  halt_exploration_prob: .nan"),
            yaml + ": field 'arch.halt_exploration_prob' is nan; it must be a finite number in [0, 1]");
  EXPECT_EQ(error_with("  halt_exploration_prob: 1.5"),
            yaml + ": field 'arch.halt_exploration_prob' is 1.5; it must be a finite number in [0, 1]");
  with("  rope_theta: 1000000.0\n  rms_norm_eps: 1e-30\n  halt_exploration_prob: 1");
  EXPECT_EQ(io::trm_arch_from_yaml(yaml).rope_theta, 1e6f);
}

// ---- bad inputs: one line naming the value

TEST(TrmBadInput, PuzzleLengthTokenAndIdentifier) {
  const trm_case c("trm_att_f32");
  trm m = trm::load(c.folder());
  std::vector<std::int32_t> short_in(c.inputs.begin(), c.inputs.end() - 1);
  std::string msg = muninn_test::error_of([&] { m.solve(short_in, c.ids, trm_halting::fixed{1}); });
  EXPECT_NE(msg.find("63 input tokens for 4 puzzles, but the model's puzzles have seq_len 16 tokens"),
            std::string::npos)
      << msg;
  auto bad = c.inputs;
  bad[3] = 12;
  msg = muninn_test::error_of([&] { m.solve(bad, c.ids, trm_halting::fixed{1}); });
  EXPECT_NE(msg.find("token 12 of puzzle 0 (position 3) is outside the vocabulary [0, 12)"), std::string::npos) << msg;
  auto ids = c.ids;
  ids[2] = 7;
  msg = muninn_test::error_of([&] { m.solve(c.inputs, ids, trm_halting::fixed{1}); });
  EXPECT_NE(msg.find("puzzle identifier 7 (batch row 2) is outside the puzzle table [0, 7)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(TrmHalting, MoreStepsThanTrainingAndEveryPolicyStopsAtItsMaximum) {
  const trm_case c("trm_mlpt_f32");
  trm m = trm::load(c.folder());
  EXPECT_EQ(m.solve(c.inputs, c.ids, trm_halting::fixed{40}).steps, std::vector<std::int32_t>(4, 40));
  const trm_result q = m.solve(c.inputs, c.ids, trm_halting::q_halt{3});
  for (auto s : q.steps) EXPECT_LE(s, 3);
}

TEST(TrmOps, QHaltDecideIsStrictAndReadsBothLogits) {
  host_backend be;
  // (q_halt, q_continue) pairs: above / at / below 0, and above / at / below q_continue
  const std::vector<float> q = {0.5f, 1.0f, 0.0f, -1.0f, -0.25f, -0.5f, 2.0f, 2.0f, 1.5f, 0.25f, -3.0f, 4.0f};
  const std::int64_t n = std::int64_t(q.size() / 2);
  std::vector<std::uint8_t> mask(std::size_t(n), 7);
  const auto run = [&](q_halt_kind k, float t) {
    q_halt_decide(be, q.data(), n, k, t, mask.data());
    return mask;
  };
  EXPECT_EQ(run(q_halt_kind::above, 0.0f), (std::vector<std::uint8_t>{1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(run(q_halt_kind::above, 1.5f), (std::vector<std::uint8_t>{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(run(q_halt_kind::over_continue, 0.0f), (std::vector<std::uint8_t>{0, 1, 1, 0, 1, 0}));
  EXPECT_EQ(run(q_halt_kind::never, 0.0f), (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0}));
}

TEST(TrmOps, TransposeBatched) {
  host_backend be;
  std::vector<float> x(2 * 37 * 45), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  transpose_batched(be, x.data(), 2, 37, 45, y.data());
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 37; ++r)
      for (int k = 0; k < 45; ++k) ASSERT_EQ(y[std::size_t(b * 37 * 45 + k * 37 + r)], x[std::size_t(b * 37 * 45 + r * 45 + k)]);
}

}  // namespace

}  // namespace test_trm
