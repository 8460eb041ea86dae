#pragma once
// One list of whole-model test cases, written once and run on every backend and storage type.
//
// Each case is a type-parameterised GoogleTest (TYPED_TEST_P) over a "config" that names a
// backend, a storage type, how to get the backend and the tolerances. test_model.cpp instantiates
// it for the host backend (one thread and all threads), test_model_cuda.cu for cuda_backend with
// float and bf16, where every case skips without a GPU. The oracles are the fixtures: logits of
// the PyTorch references (tools/reference: huginn_ref.py, mor_ref.py, calm_ref.py, trm_ref.py)
// and of transformers (Llama), and the references' greedy tokens, depths, samples and generations.
//
// A config provides:
//   backend, storage          the model's Backend and T
//   available(), skip_reason() whether this machine runs it (a GPU for CUDA)
//   get()                     the backend (one per binary)
//   full_precision            fp32 storage: every case runs; bf16 runs the cases named below
//   logit_tol(want)           Huginn, Llama: bound on max |Δ| against fixture logits `want`
//   invariant_tol             bound between two fp32 paths of the same model (cache, batch)
//   mor_tol, calm_tol,        Mixture-of-Recursions, CALM, TRM / HRM: bound on max |Δ| against
//   trm_tol                   the fixture's logits (MoR), hidden states, latents and samples
//                             (CALM), logits and q values (TRM)
//
// Tolerances (max |Δ| over a call's outputs):
//
//   config     | logit_tol          | invariant_tol | mor_tol | calm_tol | trm_tol | why
//   -----------+--------------------+---------------+---------+----------+---------+-------------
//   host f32   | 1e-4               | 1e-5          | 1e-4    | 1e-4     | 1e-4    | (a)
//   cuda f32   | 1e-3               | 1e-4          | 1e-3    | 1e-4     | 1e-4    | (b)
//   cuda bf16  | 0.05 · max |want|  | -             | -       | 0.1      | 0.25    | (c)
//
//   (a) fp32 maths in another summation order; every reference fixture states 1e-4 as its fp32
//       tolerance (expected.json "tolerances").
//   (b) cuBLAS picks kernels by shape (order only). Huginn, Llama and MoR logits are O(1-5) and
//       the smallest change a wrong Huginn variant makes is 7.9e-3, so 1e-3 has room; CALM's and
//       TRM's CUDA checks have held 1e-4 since they were written (two-layer backbones and a
//       contractive recursion: the order effects stay ~1e-6) and keep it.
//   (c) weights and every activation rounded to bf16 (2^-9 each). Huginn, Llama: PyTorch's bf16
//       model is within 1.6 % of max |logit| of its fp32 one on these fixtures. CALM: hidden
//       states after the two-layer backbone (max |h| 3.2 here) within 0.1. TRM: over 16
//       supervision steps the fixture's own bf16 reference drifts up to ~0.03 from its fp32 run; a
//       bf16 port with other rounding points may drift further, but not by the logits' order of
//       magnitude, so 0.25 on logits and q_halt. MoR has no bf16 case: routing compares router
//       scores and takes the top tokens, a discrete choice bf16 rounding can flip.
//
// The cuda bf16 bounds are smoke checks, not wiring checks: bf16 rounding over a whole model is as
// large as the logit change of a RoPE sign flip. Wiring is checked by the fp32 configs (the model
// template is the same for every T) and each bf16 kernel by tests/op_cases.hpp on the same bf16
// inputs (test_model_cuda.cu's header says more). In bf16 the cases run: Huginn's and Llama's
// logits, CALM's hidden states, TRM's logits and q_halt after 1, 2 and 16 steps; the others
// (discrete outputs: tokens, depths, decoded chunks, halting steps) report skipped.
//
// Greedy tokens are compared exactly in fp32; in bf16 only where the fixture's smallest top-1 /
// top-2 gap exceeds 2 · logit_tol (a logit error ≤ tol moves that gap by at most 2 · tol), else
// the run must finish with in-range tokens.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/families/calm/model.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/families/trm/model.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/calm_generate.hpp"
#include "test_calm_util.hpp"
#include "test_model_util.hpp"
#include "test_mor_util.hpp"
#include "test_trm_util.hpp"

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

// ------------------------------------------------------------------ Mixture-of-Recursions

/// A case of tests/data/mor (tools/reference/mor_ref.py): scoring-mode logits and selections,
/// causal-rule logits and depths, greedy decoding with the recursion-wise cache, alone and batched.
template <class Config, class Arch>
void mor_fixture(const std::string& name) {
  if (!Config::full_precision) GTEST_SKIP() << "routing is a discrete choice bf16 rounding can flip";
  SCOPED_TRACE(name);
  const auto m = model_of<Config, Arch>::load(muninn_test::mor_dir + name, Config::get());
  const muninn::io::json doc = muninn::io::read_json_file(muninn_test::mor_dir + name + "/expected.json");
  muninn_test::mor_check_passes(m, doc, Config::mor_tol);
  muninn_test::mor_check_greedy(m, doc, Config::mor_tol);
}

TYPED_TEST_P(ModelCases, MorExpertChoiceMiddleCycleLinearSigmoid) {
  mor_fixture<TypeParam, muninn::mor_expert_arch>("expert_mcyc_r3_linear_sigmoid");
}
TYPED_TEST_P(ModelCases, MorExpertChoiceCycleMlpTanh) {
  mor_fixture<TypeParam, muninn::mor_expert_arch>("expert_cycle_r2_mlp_tanh");
}
TYPED_TEST_P(ModelCases, MorExpertChoiceDroppedLayers) {
  mor_fixture<TypeParam, muninn::mor_expert_arch>("expert_mcyc_L9_drop");
}
TYPED_TEST_P(ModelCases, MorExpertChoiceKvSharing) {
  mor_fixture<TypeParam, muninn::mor_expert_arch>("expert_mcyc_r3_kvshare");
}
TYPED_TEST_P(ModelCases, MorTokenChoiceSoftmaxLossFree) {
  mor_fixture<TypeParam, muninn::mor_token_arch>("token_mcyc_r3_softmax_lossfree");
}
TYPED_TEST_P(ModelCases, MorTokenChoiceSigmoid) { mor_fixture<TypeParam, muninn::mor_token_arch>("token_cycle_r3_sigmoid"); }

// -------------------------------------------------------------------------------------- CALM

// tests/data/calm (tools/reference/calm_ref.py): a two-layer backbone (the .bin with the
// autoencoder embedded), its autoencoder and the reference's outputs (test_calm_util.hpp).
using muninn_test::calm_data;
using muninn_test::calm_expected;
using muninn_test::floats_of;

template <class Config>
using calm_of = muninn::calm_model<typename Config::backend, typename Config::storage>;

template <class Config>
calm_of<Config> calm_fixture_model() {
  return calm_of<Config>::load(calm_data + "calm", calm_data + "ae", Config::get());
}

/// Why bf16 runs CALM's hidden-state case only.
inline const char* const calm_bf16_skip =
    "bf16 runs CALM's hidden states only (the decoded tokens and samples downstream are discrete choices)";

/// The autoencoder: latent means and log-stds of the ids, decoder logits and tokens of the means;
/// the copy embedded in the CALM file is the same autoencoder.
TYPED_TEST_P(ModelCases, CalmAutoencoderLatentsLogitsAndTokens) {
  if (!TypeParam::full_precision) GTEST_SKIP() << calm_bf16_skip;
  const muninn::io::json& e = calm_expected();
  const auto ids = ids_of(e.at("ids"));
  auto ae = muninn::chunk_autoencoder<typename TypeParam::backend, typename TypeParam::storage>::load(
      calm_data + "ae", TypeParam::get());
  const std::vector<float> lat = ae.encode(ids);
  const std::int64_t l = 8, n = 6;
  std::vector<float> mean, log_std;
  for (std::int64_t i = 0; i < n; ++i) {
    mean.insert(mean.end(), lat.begin() + i * 2 * l, lat.begin() + i * 2 * l + l);
    log_std.insert(log_std.end(), lat.begin() + i * 2 * l + l, lat.begin() + (i + 1) * 2 * l);
  }
  const double tol = TypeParam::calm_tol;
  EXPECT_LE(max_abs_diff(mean, floats_of(e.at("ae").at("mean"))), tol);
  EXPECT_LE(max_abs_diff(log_std, floats_of(e.at("ae").at("log_std"))), tol);
  EXPECT_LE(max_abs_diff(ae.decode_logits(floats_of(e.at("ae").at("mean"))), floats_of(e.at("ae").at("decoded_logits"))),
            tol);
  EXPECT_EQ(ae.decode(floats_of(e.at("ae").at("mean"))), ids_of(e.at("ae").at("decoded_ids")));
  EXPECT_EQ(calm_fixture_model<TypeParam>().autoencoder().encode(ids), lat);
}

/// The backbone's hidden states of the ids (the one CALM case bf16 runs).
TYPED_TEST_P(ModelCases, CalmBackboneHiddenStates) {
  const muninn::io::json& e = calm_expected();
  auto m = calm_fixture_model<TypeParam>();
  auto ctx = m.make_context(6);
  EXPECT_LE(max_abs_diff(m.hidden(ctx, ids_of(e.at("ids"))), floats_of(e.at("hidden"))), TypeParam::calm_tol);
}

/// The energy head's latents from the reference's hidden states, with its noise given and with the
/// counter stream's noise (bit for bit the reference's), and the chunks they decode to.
TYPED_TEST_P(ModelCases, CalmHeadSamplesWithTheNoiseGivenAndFromTheStream) {
  if (!TypeParam::full_precision) GTEST_SKIP() << calm_bf16_skip;
  const muninn::io::json& e = calm_expected();
  auto m = calm_fixture_model<TypeParam>();
  const std::vector<float> hidden = floats_of(e.at("hidden"));
  EXPECT_LE(max_abs_diff(m.sample_latents(hidden, floats_of(e.at("head_noise")), 3), floats_of(e.at("head_samples"))),
            TypeParam::calm_tol);
  const muninn::io::json& s = e.at("head_stream");
  std::vector<float> noise;
  for (std::int64_t p = 0; p < 6; ++p) {
    const auto u = muninn::calm_noise(1234, p, 0, 2, 4);
    noise.insert(noise.end(), u.begin(), u.end());
  }
  EXPECT_EQ(noise, floats_of(s.at("noise")));  // the counter stream, bit for bit
  EXPECT_LE(max_abs_diff(m.sample_latents(hidden, noise, 2), floats_of(s.at("samples"))), TypeParam::calm_tol);
  EXPECT_EQ(m.sample_chunks_rows(hidden, 0, 1234, 2), ids_of(s.at("chunks")));
}

/// generate_calm at every temperature and sampler of the fixture: the padded sequence, the output,
/// the EOS stop, the number of steps and (exact sampler) the draws each step took.
TYPED_TEST_P(ModelCases, CalmGenerationsAtEveryTemperatureAndSampler) {
  if (!TypeParam::full_precision) GTEST_SKIP() << calm_bf16_skip;
  using namespace muninn;
  auto m = calm_fixture_model<TypeParam>();
  for (const auto& c : calm_expected().at("generate").as_array()) {
    SCOPED_TRACE(c.at("name").as_string());
    const calm_generate_options o = muninn_test::calm_generate_options_of(c);
    const calm_generation g = generate_calm(m, ids_of(c.at("prompt")), o);
    EXPECT_EQ(g.padded, ids_of(c.at("full")));
    EXPECT_EQ(g.ids, ids_of(c.at("output")));
    EXPECT_EQ(g.stopped_at_eos, c.at("finished_by_eos").as_bool());
    const auto& steps = c.at("steps").as_array();
    ASSERT_EQ(g.draws.size(), steps.size());
    if (o.sampler == calm_sampler::exact) {
      for (std::size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(g.draws[i], steps[i].at("draws").as_int()) << "step " << i;
    }
  }
}

// ------------------------------------------------------------------------------- TRM / HRM

template <class Config>
using trm_of = muninn::trm_model<typename Config::backend, typename Config::storage>;

/// A case of tests/data/trm (tools/reference/trm_ref.py) over a fixed 16-step run: logits after 1,
/// 2 and 16 supervision steps and q_halt at every step; in fp32 also q_continue, the predictions
/// at the recorded steps (the fixtures keep top-1/top-2 gaps above the tolerance), every sample's
/// 16 steps and the step-16 outputs as the result.
template <class Config>
void trm_fixed_steps(const std::string& name) {
  using muninn_test::trm_case;
  SCOPED_TRACE(name);
  const trm_case c(name);
  auto m = trm_of<Config>::load(c.folder(), {}, Config::get());
  const auto t = muninn_test::trace_fixed(m, c);
  EXPECT_LE(max_abs_diff(t.logits, c.npy("logits.npy", {3, c.B, c.L, c.V})), Config::trm_tol);
  EXPECT_LE(muninn_test::max_abs_diff(t.q_halt, trm_case::table(c.expected.at("q_halt"))), Config::trm_tol);
  if (!Config::full_precision) return;
  EXPECT_LE(muninn_test::max_abs_diff(t.q_continue, trm_case::table(c.expected.at("q_continue"))), Config::trm_tol);
  const auto& preds = c.expected.at("preds");
  for (int s = 0; s < 3; ++s) {
    const auto got = muninn::trm_argmax(t.logits.data() + s * c.B * c.L * c.V, c.B * c.L, c.V);
    std::vector<std::int32_t> exp;
    for (const auto& row : preds[std::size_t(s)].as_array())
      for (const auto& v : row.as_array()) exp.push_back(std::int32_t(v.as_int()));
    EXPECT_EQ(got, exp) << "step slot " << s;
  }
  EXPECT_EQ(t.result.steps, std::vector<std::int32_t>(std::size_t(c.B), 16));
  const std::vector<float> last(t.logits.begin() + 2 * c.B * c.L * c.V, t.logits.end());
  EXPECT_EQ(t.result.logits, last);
}

/// The same case under the Q-halt policy: each sample's halting step, the logits and q values at
/// that step and the predictions (fp32: a halting step is a discrete choice).
template <class Config>
void trm_q_halt(const std::string& name) {
  using muninn_test::trm_case;
  if (!Config::full_precision) GTEST_SKIP() << "a halting step is a discrete choice bf16 rounding can move";
  SCOPED_TRACE(name);
  const trm_case c(name);
  auto m = trm_of<Config>::load(c.folder(), {}, Config::get());
  const muninn::trm_result r = m.solve(c.inputs, c.ids, muninn::trm_halting::q_halt{});
  const auto& q = c.expected.at("qhalt");
  EXPECT_EQ(r.steps, ids_of(q.at("steps")));
  EXPECT_LE(max_abs_diff(r.logits, c.npy("halt_logits.npy", {c.B, c.L, c.V})), Config::trm_tol);
  EXPECT_LE(max_abs_diff(r.q_halt, trm_case::floats(q.at("q_halt"))), Config::trm_tol);
  EXPECT_LE(max_abs_diff(r.q_continue, trm_case::floats(q.at("q_continue"))), Config::trm_tol);
  std::vector<std::int32_t> exp;
  for (const auto& row : q.at("preds").as_array())
    for (const auto& v : row.as_array()) exp.push_back(std::int32_t(v.as_int()));
  EXPECT_EQ(r.preds, exp);
}

TYPED_TEST_P(ModelCases, TrmAttentionFixedSteps) { trm_fixed_steps<TypeParam>("trm_att_f32"); }
TYPED_TEST_P(ModelCases, TrmAttentionQHalt) { trm_q_halt<TypeParam>("trm_att_f32"); }
TYPED_TEST_P(ModelCases, TrmTokenMlpFixedSteps) { trm_fixed_steps<TypeParam>("trm_mlpt_f32"); }
TYPED_TEST_P(ModelCases, TrmTokenMlpQHalt) { trm_q_halt<TypeParam>("trm_mlpt_f32"); }
TYPED_TEST_P(ModelCases, HrmFixedSteps) { trm_fixed_steps<TypeParam>("hrm_f32"); }
TYPED_TEST_P(ModelCases, HrmQHalt) { trm_q_halt<TypeParam>("hrm_f32"); }

/// A checkpoint trained in bf16 (forward_dtype bfloat16), against the reference's fp32 run of it:
/// logits after 1, 2 and 16 steps and q_halt at every step; in fp32 also q_continue, the Q-halt
/// steps, and the Q-halt logits and predictions against the host's fp32 run (the fixture keeps no
/// fp32 halting outputs; the host's run is the one checked against the reference above, on the host).
TYPED_TEST_P(ModelCases, TrmBf16CheckpointAgainstTheReferenceFp32Run) {
  using muninn_test::trm_case;
  const trm_case c("trm_att_bf16");
  auto m = trm_of<TypeParam>::load(c.folder(), {}, TypeParam::get());
  EXPECT_EQ(m.config().forward_dtype, "bfloat16");
  const auto t = muninn_test::trace_fixed(m, c);
  const auto& f = c.expected.at("fp32_run");
  EXPECT_LE(max_abs_diff(t.logits, c.npy("logits_fp32.npy", {3, c.B, c.L, c.V})), TypeParam::trm_tol);
  EXPECT_LE(muninn_test::max_abs_diff(t.q_halt, trm_case::table(f.at("q_halt"))), TypeParam::trm_tol);
  if (!TypeParam::full_precision) return;
  EXPECT_LE(muninn_test::max_abs_diff(t.q_continue, trm_case::table(f.at("q_continue"))), TypeParam::trm_tol);
  const muninn::trm_result r = m.solve(c.inputs, c.ids, muninn::trm_halting::q_halt{});
  EXPECT_EQ(r.steps, ids_of(f.at("qhalt_steps")));
  auto host = muninn::trm_model<muninn::host_backend, float>::load(c.folder());
  const muninn::trm_result h = host.solve(c.inputs, c.ids, muninn::trm_halting::q_halt{});
  EXPECT_LE(max_abs_diff(r.logits, h.logits), TypeParam::trm_tol);
  EXPECT_EQ(r.preds, h.preds);
}

REGISTER_TYPED_TEST_SUITE_P(ModelCases, HuginnF32SingleFile, HuginnBf16ShardedWithoutFreqsCis, HuginnF16SingleFile,
                            HuginnAddInjection, HuginnPreNormAddGqaUntied, LlamaMatchesTransformers,
                            CacheDecodeEqualsRecompute, BatchEqualsSingle, MorExpertChoiceMiddleCycleLinearSigmoid,
                            MorExpertChoiceCycleMlpTanh, MorExpertChoiceDroppedLayers, MorExpertChoiceKvSharing,
                            MorTokenChoiceSoftmaxLossFree, MorTokenChoiceSigmoid, CalmAutoencoderLatentsLogitsAndTokens,
                            CalmBackboneHiddenStates, CalmHeadSamplesWithTheNoiseGivenAndFromTheStream,
                            CalmGenerationsAtEveryTemperatureAndSampler, TrmAttentionFixedSteps, TrmAttentionQHalt,
                            TrmTokenMlpFixedSteps, TrmTokenMlpQHalt, HrmFixedSteps, HrmQHalt,
                            TrmBf16CheckpointAgainstTheReferenceFp32Run);

}  // namespace model_cases
