// Sharing strategies as policies: the stored layer each executed layer runs, checked against the
// reference's sharing map (families/mor/sharing_map.hpp, a port of the MoR code's), and end to
// end under a Huginn-style core loop: a recording BlockPolicy sees exactly the layers the
// strategy names, and cached decode equals recomputation.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "muninn/families/mor/sharing_map.hpp"
#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"
#include "test_model_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_sharing {

using namespace muninn;

namespace {

// The stored layer of every executed layer of `steps` recurrences, numbered across the groups
// (prelude 0 … P−1, core P … P+B−1, coda P+B …).
template <class S>
std::vector<std::int64_t> executed(const sharing_layout& l, std::int64_t steps) {
  std::vector<std::int64_t> out;
  for (std::int64_t j = 0; j < l.prelude; ++j) out.push_back(S::layer(l, layer_group::prelude, 0, j));
  for (std::int64_t s = 0; s < steps; ++s)
    for (std::int64_t j = 0; j < l.core; ++j) out.push_back(l.prelude + S::layer(l, layer_group::core, s, j));
  for (std::int64_t j = 0; j < l.coda; ++j) out.push_back(l.prelude + l.core + S::layer(l, layer_group::coda, 0, j));
  return out;
}

// Numbers each distinct value by its first appearance: two layer→weight maps are the same
// sharing when their relabellings are equal.
std::vector<std::int64_t> relabel(const std::vector<std::int64_t>& v) {
  std::map<std::int64_t, std::int64_t> id;
  std::vector<std::int64_t> out;
  for (auto x : v) out.push_back(id.emplace(x, std::int64_t(id.size())).first->second);
  return out;
}

template <class S>
void expect_reference_map(sharing_strategy st, std::int64_t L, std::int64_t Nr) {
  SCOPED_TRACE(std::string(sharing_name(st)) + " L=" + std::to_string(L) + " Nr=" + std::to_string(Nr));
  const sharing_map ref = make_sharing_map(st, L, Nr);
  ASSERT_EQ(ref.size(), L);  // divisible depths: every layer kept
  const std::int64_t m = ref.middle() ? 1 : 0;
  const sharing_layout l{m, ref.block, m, Nr};
  S::check(l, "test");
  EXPECT_EQ(relabel(executed<S>(l, Nr)), relabel(ref.owner));
}

TEST(SharingPolicies, MatchTheReferenceSharingMap) {
  expect_reference_map<sharing::cycle>(sharing_strategy::cycle, 9, 3);
  expect_reference_map<sharing::cycle>(sharing_strategy::cycle, 8, 4);
  expect_reference_map<sharing::sequence>(sharing_strategy::sequence, 6, 3);
  expect_reference_map<sharing::sequence>(sharing_strategy::sequence, 12, 4);
  expect_reference_map<sharing::middle_cycle>(sharing_strategy::middle_cycle, 8, 3);
  expect_reference_map<sharing::middle_sequence>(sharing_strategy::middle_sequence, 8, 3);
  expect_reference_map<sharing::middle_sequence>(sharing_strategy::middle_sequence, 14, 4);
}

TEST(SharingPolicies, SequenceSpreadsEachLayerOverTheSteps) {
  const sharing_layout l{0, 2, 0, 3};  // w0 w0 w0 w1 w1 w1 in steps of two
  EXPECT_EQ(executed<sharing::sequence>(l, 3), (std::vector<std::int64_t>{0, 0, 0, 1, 1, 1}));
  // Steps past R start the unrolled depth again.
  EXPECT_EQ(executed<sharing::sequence>(l, 4), (std::vector<std::int64_t>{0, 0, 0, 1, 1, 1, 0, 0}));
  EXPECT_EQ(executed<sharing::cycle>(l, 3), (std::vector<std::int64_t>{0, 1, 0, 1, 0, 1}));
}

TEST(SharingPolicies, LayoutsThatDoNotFitAreRefused) {
  const auto msg = [](auto&& f) {
    try {
      f();
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(msg([] { sharing::cycle::check({1, 2, 1, 3}, "cfg.json"); }).find("cfg.json: sharing::cycle shares every layer"),
            std::string::npos);
  EXPECT_NE(msg([] { sharing::middle_sequence::check({1, 2, 1, 0}, "cfg.json"); }).find("must be >= 1"), std::string::npos);
  EXPECT_NE(msg([] { sharing::none::check({2, 1, 0, 0}, "cfg.json"); }).find("needs n_layers_in_recurrent_block = 0"),
            std::string::npos);
}

// A pre-norm block that records which stored layer each call runs.
struct recording_pre_norm {
  using slot = muninn::slot::block;
  static constexpr int num_norms = 2;
  static constexpr const char* name = "recording_pre_norm";
  static inline std::vector<const void*>* seen = nullptr;
  template <class Layer>
  static void forward(Layer& l) {
    if (seen) seen->push_back(&l.weights());
    block::pre_norm::forward(l);
  }
};

template <class Sharing>
using core_loop_arch = huginn_arch::with<recording_pre_norm, injection::add, state_init::zero, Sharing>;

huginn_config small_config() {
  huginn_config c;
  c.n_embd = 32;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 64;
  c.vocab_size = 128;
  c.n_layers_in_prelude = 1;
  c.n_layers_in_recurrent_block = 2;
  c.n_layers_in_coda = 1;
  c.mean_recurrence = 3;
  c.block_size = 32;
  c.qk_bias = false;
  c.injection_type = "add";
  c.block_type = "recording_pre_norm";
  c.source = "test_sharing config";
  return c;
}

// The stored layers a forward at `steps` runs, numbered as `executed` numbers them.
template <class M>
std::vector<std::int64_t> layers_run(const M& m, std::int64_t steps) {
  std::map<const void*, std::int64_t> id;
  std::int64_t next = 0;
  for (layer_group g : {layer_group::prelude, layer_group::core, layer_group::coda})
    for (const auto& w : m.layers(g)) id[&w] = next++;
  std::vector<const void*> seen;
  recording_pre_norm::seen = &seen;
  run_options o;
  o.steps = steps;
  m.forward({5, 17, 99}, o);
  recording_pre_norm::seen = nullptr;
  std::vector<std::int64_t> out;
  for (const void* p : seen) out.push_back(id.at(p));
  return out;
}

TEST(SharingPolicies, MiddleSequenceUnderAHuginnCoreLoop) {
  using M = model<host_backend, float, core_loop_arch<sharing::middle_sequence>>;
  const huginn_config cfg = small_config();
  const M m(host_backend{}, cfg, make_random_weights<host_backend, float, recording_pre_norm>(host_backend{}, cfg, 11));
  // Prelude 0; the core's two layers spread over three steps: 1 1 | 1 2 | 2 2; coda 3.
  EXPECT_EQ(layers_run(m, 3), (std::vector<std::int64_t>{0, 1, 1, 1, 2, 2, 2, 3}));
  EXPECT_EQ(layers_run(m, 3), executed<sharing::middle_sequence>(m.sharing(), 3));
  EXPECT_EQ(layers_run(m, 5), executed<sharing::middle_sequence>(m.sharing(), 5));
  muninn_test::check_cache_decode_equals_recompute(m, 1e-5);
}

TEST(SharingPolicies, MiddleCycleIsHuginnsRecurrentCore) {
  static_assert(std::is_same_v<sharing::recurrent_core, sharing::middle_cycle>);
  using M = model<host_backend, float, core_loop_arch<sharing::middle_cycle>>;
  const huginn_config cfg = small_config();
  const M m(host_backend{}, cfg, make_random_weights<host_backend, float, recording_pre_norm>(host_backend{}, cfg, 11));
  EXPECT_EQ(layers_run(m, 3), (std::vector<std::int64_t>{0, 1, 2, 1, 2, 1, 2, 3}));
}

TEST(SharingPolicies, SequenceSharesEveryLayer) {
  using M = model<host_backend, float, core_loop_arch<sharing::sequence>>;
  huginn_config cfg = small_config();
  cfg.n_layers_in_prelude = cfg.n_layers_in_coda = 0;
  const M m(host_backend{}, cfg, make_random_weights<host_backend, float, recording_pre_norm>(host_backend{}, cfg, 11));
  EXPECT_EQ(layers_run(m, 3), (std::vector<std::int64_t>{0, 0, 0, 1, 1, 1}));
  muninn_test::check_cache_decode_equals_recompute(m, 1e-5);
  // A config with unshared layers does not fit sequence sharing.
  EXPECT_THROW(M(host_backend{}, small_config(),
                 make_random_weights<host_backend, float, recording_pre_norm>(host_backend{}, small_config(), 11)),
               error);
}

}  // namespace

}  // namespace test_sharing
