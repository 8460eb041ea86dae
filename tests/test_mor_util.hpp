#pragma once
// The Mixture-of-Recursions fixtures of tests/data/mor and tests/data/mor_untied (written by
// tools/reference/mor_ref.py): the checks of a case's expected.json on any model, with the logit
// bound given by the caller (the fixture's own tolerance on the host, the backend's in
// tests/model_cases.hpp). Shared by test_mor.cpp and the model cases (g++ and nvcc).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/families/mor/arch.hpp"
#include "muninn/muninn.hpp"
#include "test_util.hpp"

namespace muninn_test {

/// tests/data/mor and tests/data/mor_untied with the trailing '/'.
inline const std::string mor_dir = std::string(MUNINN_TEST_DATA) + "/mor/";
inline const std::string mor_untied_dir = std::string(MUNINN_TEST_DATA) + "/mor_untied/";

/// The fp32 logit tolerance a case's expected.json states.
inline double mor_fixture_tol(const muninn::io::json& doc) { return doc.at("tolerances").at("logits").as_double(); }

/// A JSON matrix, rows concatenated.
inline std::vector<float> mor_floats_of(const muninn::io::json& rows) {
  std::vector<float> out;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < rows[i].size(); ++j) out.push_back(float(rows[i][j].as_double()));
  return out;
}

/// Scoring and causal-rule passes over each row of the case, logits within `tol`; depths (the
/// recursions each token ran) exactly.
template <class M>
void mor_check_passes(const M& m, const muninn::io::json& doc, double tol) {
  using namespace muninn;
  for (const char* mode : {"scoring", "decode_rule"}) {
    if (!doc.contains(mode)) continue;
    SCOPED_TRACE(mode);
    const io::json& s = doc.at(mode);
    for (std::size_t b = 0; b < s.at("input_ids").size(); ++b) {
      run_options o;
      o.routing = std::string(mode) == "scoring" ? routing_mode::scoring : routing_mode::causal;
      std::vector<std::int32_t> depth;
      o.depths = &depth;
      const auto lg = m.forward(ids_of(s.at("input_ids")[b]), o);
      EXPECT_LE(max_abs_diff(lg, mor_floats_of(s.at("logits")[b])), tol) << "row " << b;
      if (s.contains("depth")) {
        EXPECT_EQ(depth, ids_of(s.at("depth")[b])) << "row " << b;
      }
      if (s.contains("selected")) {  // scoring: recursion r ran on the selected positions
        const io::json& sel = s.at("selected")[b];
        std::vector<std::int32_t> want(depth.size(), 0);
        for (std::size_t r = 0; r < sel.size(); ++r)
          for (std::size_t i = 0; i < sel[r].size(); ++i) want[std::size_t(sel[r][i].as_int())] = std::int32_t(r + 1);
        EXPECT_EQ(depth, want) << "row " << b;
      }
    }
  }
}

/// Greedy decoding token by token (recursion-wise KV cache), every row alone (tokens exactly, the
/// last logits within `tol`) and all rows batched (tokens exactly).
template <class M>
void mor_check_greedy(const M& m, const muninn::io::json& doc, double tol) {
  using namespace muninn;
  if (!doc.contains("greedy")) return;
  const io::json& g = doc.at("greedy");
  generate_options o;
  o.run.routing = routing_mode::causal;
  for (std::size_t b = 0; b < g.at("prompt").size(); ++b) {
    o.max_new_tokens = std::int64_t(g.at("new_ids")[b].size());
    const auto r = generate(m, ids_of(g.at("prompt")[b]), o);
    EXPECT_EQ(r.tokens, ids_of(g.at("new_ids")[b])) << "row " << b;
    std::vector<float> last;
    for (std::size_t i = 0; i < g.at("last_logits")[b].size(); ++i) last.push_back(float(g.at("last_logits")[b][i].as_double()));
    EXPECT_LE(max_abs_diff(r.last_logits, last), tol) << "row " << b;
  }
  std::vector<std::vector<std::int32_t>> prompts;
  for (std::size_t b = 0; b < g.at("prompt").size(); ++b) prompts.push_back(ids_of(g.at("prompt")[b]));
  o.max_new_tokens = std::int64_t(g.at("new_ids")[0].size());
  const auto batch = generate_batch(m, prompts, o);
  for (std::size_t b = 0; b < prompts.size(); ++b) EXPECT_EQ(batch[b].tokens, ids_of(g.at("new_ids")[b])) << "row " << b;
}

}  // namespace muninn_test
