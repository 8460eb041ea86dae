#pragma once
// The TRM / HRM fixtures of tests/data/trm (written by tools/reference/make_trm_fixtures.py from
// trm_ref.py): a case's batch and expected outputs, and a run of a model over them that records
// the logits at the fixture's steps and the q values at every step. Shared by the host and CUDA
// tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/families/trm/model.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/npy.hpp"
#include "test_util.hpp"

namespace muninn_test {

/// tests/data/trm with the trailing '/'.
inline const std::string trm_dir = std::string(MUNINN_TEST_DATA) + "/trm/";

/// One fixture case.
struct trm_case {
  std::string name;
  muninn::io::json expected;
  std::vector<std::int32_t> inputs;  // [B, seq_len]
  std::vector<std::int32_t> ids;     // [B]
  std::vector<std::vector<std::int32_t>> labels;  // [B][seq_len], -100 ignored
  std::int64_t B = 0, L = 0, V = 0;

  explicit trm_case(const std::string& n) : name(n), expected(muninn::io::read_json_file(trm_dir + n + "/expected.json")) {
    const auto& batch = expected.at("batch");
    for (const auto& row : batch.at("inputs").as_array())
      for (const auto& t : row.as_array()) inputs.push_back(std::int32_t(t.as_int()));
    for (const auto& row : batch.at("labels").as_array()) labels.push_back(ids_of(row));
    ids = ids_of(batch.at("puzzle_identifiers"));
    B = std::int64_t(ids.size());
    L = expected.at("config").at("seq_len").as_int();
    V = expected.at("config").at("vocab_size").as_int();
  }
  std::string folder() const { return trm_dir + name; }
  /// An .npy of the case, shape checked.
  std::vector<float> npy(const std::string& file, std::vector<std::int64_t> shape) const {
    auto arr = muninn::io::read_npy_f32(folder() + "/" + file);
    EXPECT_EQ(arr.shape, shape) << file;
    return arr.data;
  }
  /// A [steps][B] float table of expected.json (q_halt / q_continue), or one under `parent`.
  static std::vector<std::vector<float>> table(const muninn::io::json& t) {
    std::vector<std::vector<float>> out;
    for (const auto& row : t.as_array()) {
      out.emplace_back();
      for (const auto& v : row.as_array()) out.back().push_back(float(v.as_double()));
    }
    return out;
  }
  static std::vector<float> floats(const muninn::io::json& a) {
    std::vector<float> v;
    for (const auto& x : a.as_array()) v.push_back(float(x.as_double()));
    return v;
  }
};

/// A model's outputs over a case: logits [3, B, L, V] at steps 1, 2, 16 and q [16][B], from a
/// fixed 16-step run (every sample active at every step).
struct trm_trace {
  std::vector<float> logits;
  std::vector<std::vector<float>> q_halt, q_continue;
  muninn::trm_result result;
};

template <class Model>
trm_trace trace_fixed(Model& m, const trm_case& c) {
  trm_trace t;
  t.logits.assign(std::size_t(3 * c.B * c.L * c.V), 0.0f);
  t.q_halt.assign(16, std::vector<float>(std::size_t(c.B)));
  t.q_continue = t.q_halt;
  const std::int64_t LV = c.L * c.V;
  t.result = m.solve(c.inputs, c.ids, muninn::trm_halting::fixed{16},
                     [&](std::int64_t s, const std::vector<std::int64_t>& samples, const muninn::trm_step_output& o) {
                       const int slot = s == 1 ? 0 : s == 2 ? 1 : s == 16 ? 2 : -1;
                       for (std::size_t i = 0; i < samples.size(); ++i) {
                         const auto b = std::size_t(samples[i]);
                         t.q_halt[std::size_t(s - 1)][b] = o.q_halt[i];
                         t.q_continue[std::size_t(s - 1)][b] = o.q_continue[i];
                         if (slot >= 0)
                           std::copy_n(o.logits.begin() + std::int64_t(i) * LV, LV,
                                       t.logits.begin() + (slot * c.B + std::int64_t(b)) * LV);
                       }
                     });
  return t;
}

/// max |a − b| over two tables.
inline double max_abs_diff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  double m = 0;
  EXPECT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, max_abs_diff(a[i], b[i]));
  return m;
}

}  // namespace muninn_test
