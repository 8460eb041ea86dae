#pragma once
// One list of whole-model test cases, written once and run on every backend and storage type.
//
// Each case is a type-parameterised GoogleTest (TYPED_TEST_P) over a "config" that names a
// backend, a storage type, how to get the backend and the tolerances. test_model.cpp instantiates
// it for the host backend (one thread and all threads), test_model_cuda.cu for cuda_backend with
// float and bf16, where every case skips without a GPU. The oracles are the fixtures: logits of
// the PyTorch reference (tools/reference/huginn_ref.py) and of transformers (Llama), and the
// reference's greedy tokens.
//
// A config provides:
//   backend, storage          the model's Backend and T
//   available(), skip_reason() whether this machine runs it (a GPU for CUDA)
//   get()                     the backend (one per binary)
//   full_precision            fp32 storage: every case runs; bf16 runs the logit cases only
//   logit_tol(want)           bound on max |Δ| against fixture logits `want`
//   invariant_tol             bound between two fp32 paths of the same model (cache, batch)
//
// Tolerances (max |Δ| over a call's logits):
//
//   config     | logit_tol               | invariant_tol | why
//   -----------+-------------------------+---------------+----------------------------------------
//   host f32   | 1e-4                    | 1e-5          | fp32 maths, another summation order
//   cuda f32   | 1e-3                    | 1e-4          | cuBLAS picks kernels by shape (order
//              |                         |               | only); the smallest change a wrong
//              |                         |               | variant makes is 7.9e-3
//   cuda bf16  | 0.05 · max |want|       | -             | weights and every activation rounded to
//              |                         |               | bf16 (2^-9 each); PyTorch's bf16 model
//              |                         |               | is within 1.6 % of max |logit| of its
//              |                         |               | fp32 one on these fixtures
//
// The cuda bf16 bound is a smoke check, not a wiring check: bf16 rounding over a whole model is as
// large as the logit change of a RoPE sign flip. Wiring is checked by the fp32 configs (the model
// template is the same for every T) and each bf16 kernel by tests/op_cases.hpp on the same bf16
// inputs (test_model_cuda.cu's header says more).
//
// Greedy tokens are compared exactly in fp32; in bf16 only where the fixture's smallest top-1 /
// top-2 gap exceeds 2 · logit_tol (a logit error ≤ tol moves that gap by at most 2 · tol), else
// the run must finish with in-range tokens.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/muninn.hpp"
#include "test_model_util.hpp"

namespace model_cases {

using muninn_test::data_dir;
using muninn_test::expected;
using muninn_test::ids_of;
using muninn_test::max_abs;
using muninn_test::max_abs_diff;

template <class Config, class Arch = muninn::huginn_arch>
using model_of = muninn::model<typename Config::backend, typename Config::storage, Arch>;

template <class Config>
class ModelCases : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Config::available()) GTEST_SKIP() << Config::skip_reason();
  }
};
TYPED_TEST_SUITE_P(ModelCases);

/// Greedy tokens against the reference's: exact when the run is fp32 or no near tie can flip.
template <class M>
void check_greedy(const M& m, const std::vector<std::int32_t>& prompt, const muninn::generate_options& g,
                  const std::vector<std::int32_t>& want, bool exact) {
  const auto got = muninn::generate_greedy(m, prompt, g);
  if (exact) {
    EXPECT_EQ(got, want) << "greedy tokens";
    return;
  }
  EXPECT_EQ(got.size(), want.size());
  for (auto t : got) EXPECT_TRUE(t >= 0 && t < m.config().vocab_size) << t;
}

/// Every case of a Huginn fixture's inputs.json: logits at several depths, chunked prefill, final
/// latents, a given initial state, greedy generation.
template <class Config, class Arch>
void huginn_fixture(const std::string& name) {
  SCOPED_TRACE(name);
  using namespace muninn;
  const io::json in = io::read_json_file(data_dir + name + "/inputs.json");
  const auto m = model_of<Config, Arch>::load(data_dir + name, Config::get());
  const std::int64_t V = m.config().vocab_size, h = m.config().n_embd;
  const auto tokens = ids_of(in.at("tokens"));
  const std::int64_t n = std::int64_t(tokens.size());
  run_options zero;
  zero.init = state_init::zero{};
  const io::json& g = in.at("generate");
  double gen_tol = 0;  // logit_tol at the generate case's depth, for the greedy rule
  for (const auto& r : in.at("steps").as_array()) {
    run_options o = zero;
    o.steps = r.as_int();
    const auto want = expected(name, "logits_r" + std::to_string(o.steps) + ".npy", {n, V});
    EXPECT_LE(max_abs_diff(m.forward(tokens, o), want), Config::logit_tol(want)) << "r=" << o.steps;
    if (o.steps == g.at("steps").as_int()) gen_tol = Config::logit_tol(want);
  }
  if (const io::json* gs = in.find("given_state")) {
    const auto want = expected(name, gs->at("file").as_string(), {n, V});
    EXPECT_LE(max_abs_diff(muninn_test::given_state_logits(m, name, tokens, *gs), want), Config::logit_tol(want))
        << "given state";
  }
  if (Config::full_precision) {
    if (const io::json* ch = in.find("chunked")) {
      const auto want = expected(name, ch->at("file").as_string(), {ch->at("n2").as_int(), V});
      EXPECT_LE(max_abs_diff(muninn_test::chunked_logits(m, tokens, *ch, zero), want), Config::logit_tol(want))
          << "chunked";
    }
    if (const io::json* lat = in.find("latents")) {
      const auto want = expected(name, lat->at("file").as_string(), {n, h});
      EXPECT_LE(max_abs_diff(muninn_test::final_latents(m, tokens, *lat, zero), want), Config::logit_tol(want))
          << "latents";
    }
  }
  const bool exact = Config::full_precision || g.at("min_top1_top2_gap").as_double() > 2 * gen_tol;
  check_greedy(m, ids_of(g.at("prompt")), muninn_test::generate_case_options(g), ids_of(g.at("expected")), exact);
}

TYPED_TEST_P(ModelCases, HuginnF32SingleFile) { huginn_fixture<TypeParam, muninn::huginn_arch>("tiny_f32"); }
TYPED_TEST_P(ModelCases, HuginnBf16ShardedWithoutFreqsCis) {
  huginn_fixture<TypeParam, muninn::huginn_arch>("tiny_bf16_sharded");
}
TYPED_TEST_P(ModelCases, HuginnF16SingleFile) { huginn_fixture<TypeParam, muninn::huginn_arch>("tiny_f16"); }
TYPED_TEST_P(ModelCases, HuginnAddInjection) {
  huginn_fixture<TypeParam, muninn::arch<muninn::block::sandwich, muninn::injection::add>>("tiny_add");
}
// The second policy combination: pre-norm blocks, add injection, zero state, GQA, untied head.
TYPED_TEST_P(ModelCases, HuginnPreNormAddGqaUntied) {
  huginn_fixture<TypeParam, muninn::arch<muninn::block::pre_norm, muninn::injection::add, muninn::state_init::zero>>(
      "tiny_prenorm_gqa");
}

/// Tiny LlamaForCausalLM checkpoints saved by transformers (tests/data/llama): prompt logits
/// against transformers', and in fp32 its greedy continuation.
TYPED_TEST_P(ModelCases, LlamaMatchesTransformers) {
  using namespace muninn;
  for (const char* name : {"tiny_tied_mha", "tiny_untied_gqa", "tiny_linear_bias", "tiny_bf16_sharded",
                           "tiny_bf16_sharded_v4", "tiny_text"}) {
    SCOPED_TRACE(name);
    const std::string dir = std::string(MUNINN_TEST_DATA) + "/llama/" + name;
    const io::json want = io::read_json_file(dir + "/expected.json");
    const auto m = model_of<TypeParam, llama_arch>::load(dir, TypeParam::get());
    const auto ids = ids_of(want.at("prompt_ids"));
    const auto logits = io::read_npy_f32(dir + "/logits.npy");
    ASSERT_EQ(logits.shape, (std::vector<std::int64_t>{std::int64_t(ids.size()), m.config().vocab_size}));
    EXPECT_LE(max_abs_diff(m.forward(ids), logits.data), TypeParam::logit_tol(logits.data)) << "prompt logits";
    if (!TypeParam::full_precision) continue;
    generate_options g;
    g.max_new_tokens = want.at("greedy").at("max_new_tokens").as_int();
    check_greedy(m, ids, g, ids_of(want.at("greedy").at("ids")), true);
  }
}

TYPED_TEST_P(ModelCases, CacheDecodeEqualsRecompute) {
  if (!TypeParam::full_precision) GTEST_SKIP() << "an fp32 invariant";
  const auto m = model_of<TypeParam>::load(data_dir + "tiny_f32", TypeParam::get());
  muninn_test::check_cache_decode_equals_recompute(m, TypeParam::invariant_tol);
}

/// generate_batch gives every row its own generate call's tokens (greedy and sampled), and one
/// stacked forward_batch gives every row its own call's logits.
TYPED_TEST_P(ModelCases, BatchEqualsSingle) {
  using namespace muninn;
  if (!TypeParam::full_precision) GTEST_SKIP() << "an fp32 invariant";
  using M = model_of<TypeParam>;
  const M m = M::load(data_dir + "tiny_f32", TypeParam::get());
  const std::vector<std::vector<std::int32_t>> prompts = {{5}, {117, 4, 44, 64, 100}, {9, 8, 7}, {1, 2, 3, 4, 5, 6, 7}};
  ASSERT_NO_FATAL_FAILURE(muninn_test::check_batch_rows_equal_single_runs(m, prompts));
  run_options o;
  o.init = state_init::zero{};
  o.steps = 4;
  std::vector<typename M::context_type> ctxs;
  for (std::size_t r = 0; r < prompts.size(); ++r) ctxs.push_back(m.make_context(16, 4));
  std::vector<typename M::context_type*> ptrs;
  for (auto& c : ctxs) ptrs.push_back(&c);
  auto ws = m.make_workspace(16);
  const auto stacked = m.forward_batch(ws, ptrs, prompts, o, logits_for::last);
  for (std::size_t r = 0; r < prompts.size(); ++r) {
    auto ctx = m.make_context(16, 4);
    EXPECT_LE(max_abs_diff(stacked[r], m.forward(ctx, prompts[r], o, logits_for::last)), TypeParam::invariant_tol)
        << "row " << r;
  }
}

REGISTER_TYPED_TEST_SUITE_P(ModelCases, HuginnF32SingleFile, HuginnBf16ShardedWithoutFreqsCis, HuginnF16SingleFile,
                            HuginnAddInjection, HuginnPreNormAddGqaUntied, LlamaMatchesTransformers,
                            CacheDecodeEqualsRecompute, BatchEqualsSingle);

}  // namespace model_cases
