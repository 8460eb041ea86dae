// Whole models on the CUDA backend, fp32 and bf16, against the fixtures' PyTorch logits and against
// the host model (the oracle); the inference invariants (cache decode == recompute, exit steps,
// batch == single) on the GPU; the generic-head-dim attention kernel the fixtures need.
//
// Every test needs a GPU: without one (or without a driver) each case reports SKIPPED.
//
// Tolerances (max |Δ| over all logits of a call):
//
//   what                         | bound                      | why
//   -----------------------------+----------------------------+------------------------------------------
//   CUDA fp32 vs fixture / host  | 1e-3 absolute              | same fp32 maths (cuBLAS without TF32);
//                                |                            | summation order differs, ~1e-5 expected.
//                                |                            | Logits are O(1-5); the smallest change a
//                                |                            | deliberately wrong variant makes is 7.9e-3.
//   CUDA bf16 vs host fp32       | 0.05 · max |host logit|    | weights and every activation rounded to
//                                |                            | bf16 (2^-9 relative each); PyTorch's bf16
//                                |                            | model differs from its fp32 one by at most
//                                |                            | 1.6% of max |logit| on these fixtures.
//   bf16 greedy tokens           | equal when the fixture's   | a logit error ≤ tol moves top1 − top2 by
//                                | min top1−top2 gap > 2·tol  | at most 2·tol, so no near tie can flip
//   cache decode vs recompute    | 1e-4                       | GEMMs of M = 1 and M = n may pick
//   batch vs single (logits)     |                            | different cuBLAS kernels (order only)
//
// Attention (generic head dims) against the host op: |Δ| ≤ 1e-5 + rel·|want|, rel 1e-4 (fp32),
// 2e-2 (bf16: only the output rounding differs; inputs are the same bf16 values).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "muninn/cuda.cuh"
#include "muninn/families/llama/arch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/families/huginn/random_weights.hpp"
#include "muninn/muninn.hpp"
#include "test_model_util.hpp"
#include "test_util_cuda.cuh"

using namespace muninn;

namespace {

using muninn_test::data_dir;
using muninn_test::expected;
using muninn_test::ids_of;
using muninn_test::max_abs;
using muninn_test::max_abs_diff;

constexpr double kF32Tol = 1e-3;       // CUDA fp32 vs fixture and vs host
constexpr double kBf16Rel = 0.05;      // CUDA bf16 vs host fp32, relative to max |host logit|
constexpr double kInvariantTol = 1e-4; // two CUDA fp32 paths that must agree

/// One backend for the whole binary: stream and cuBLAS handle creation cost tens of ms.
class CudaModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!cuda_backend::available()) return;
    be_ = new cuda_backend(cuda_backend::create(0));
  }
  static void TearDownTestSuite() {
    delete be_;
    be_ = nullptr;
  }
  void SetUp() override {
    if (be_ == nullptr) GTEST_SKIP() << "no CUDA device (" << muninn_test::no_cuda_device_reason() << ")";
  }
  static const cuda_backend& gpu() { return *be_; }

 private:
  static cuda_backend* be_;
};
cuda_backend* CudaModel::be_ = nullptr;

/// Every check of tests/test_model.cpp on the CUDA fp32 model (against the fixture and the host
/// model), and logits and greedy tokens of the CUDA bf16 model against the host fp32 model.
template <class Arch>
void check_fixture(const cuda_backend& be, const std::string& name) {
  SCOPED_TRACE(name);
  const io::json in = io::read_json_file(data_dir + name + "/inputs.json");
  using H = model<host_backend, float, Arch>;
  using F = model<cuda_backend, float, Arch>;
  using B = model<cuda_backend, bf16, Arch>;
  const H host = H::load(data_dir + name);
  const F f32 = F::load(data_dir + name, be);
  const B b16 = B::load(data_dir + name, be);
  const std::int64_t V = host.config().vocab_size, h = host.config().n_embd;
  const auto tokens = ids_of(in.at("tokens"));
  const std::int64_t n = std::int64_t(tokens.size());
  run_options zero;
  zero.init = state_init::zero{};

  double max_logit = 0;  // at the generate case's depth, for the bf16 greedy rule
  const std::int64_t gen_steps = in.at("generate").at("steps").as_int();
  for (const auto& r : in.at("steps").as_array()) {
    run_options o = zero;
    o.steps = r.as_int();
    SCOPED_TRACE("r=" + std::to_string(o.steps));
    const auto want = expected(name, "logits_r" + std::to_string(o.steps) + ".npy", {n, V});
    const auto oracle = host.forward(tokens, o);
    const auto got = f32.forward(tokens, o);
    EXPECT_LE(max_abs_diff(got, want), kF32Tol) << "CUDA fp32 vs fixture";
    EXPECT_LE(max_abs_diff(got, oracle), kF32Tol) << "CUDA fp32 vs host fp32";
    const double tol = kBf16Rel * max_abs(oracle);
    EXPECT_LE(max_abs_diff(b16.forward(tokens, o), oracle), tol) << "CUDA bf16 vs host fp32";
    if (o.steps == gen_steps) max_logit = max_abs(oracle);
  }

  if (const io::json* ch = in.find("chunked")) {
    const std::int64_t n2 = ch->at("n2").as_int();
    const auto got = muninn_test::chunked_logits(f32, tokens, *ch, zero);
    EXPECT_LE(max_abs_diff(got, expected(name, ch->at("file").as_string(), {n2, V})), kF32Tol) << "chunked";
  }

  if (const io::json* lat = in.find("latents")) {
    const auto latents = muninn_test::final_latents(f32, tokens, *lat, zero);
    EXPECT_LE(max_abs_diff(latents, expected(name, lat->at("file").as_string(), {n, h})), kF32Tol) << "latents";
  }

  if (const io::json* gs = in.find("given_state")) {
    const auto want = expected(name, gs->at("file").as_string(), {n, V});
    EXPECT_LE(max_abs_diff(muninn_test::given_state_logits(f32, name, tokens, *gs), want), kF32Tol) << "given state";
    EXPECT_LE(max_abs_diff(muninn_test::given_state_logits(b16, name, tokens, *gs), want), kBf16Rel * max_abs(want))
        << "given state, bf16";
  }

  const io::json& g = in.at("generate");
  const generate_options go = muninn_test::generate_case_options(g);
  const auto prompt = ids_of(g.at("prompt")), want_ids = ids_of(g.at("expected"));
  EXPECT_EQ(generate_greedy(f32, prompt, go), want_ids) << "CUDA fp32 greedy";
  const double gap = g.at("min_top1_top2_gap").as_double();
  const double bf16_tol = kBf16Rel * max_logit;
  if (gap > 2 * bf16_tol) {
    EXPECT_EQ(generate_greedy(b16, prompt, go), want_ids) << "CUDA bf16 greedy (gap " << gap << " > 2·" << bf16_tol << ")";
  } else {
    // The near tie could flip under bf16 rounding; the run must still work and stay in range.
    const auto got = generate_greedy(b16, prompt, go);
    EXPECT_EQ(got.size(), want_ids.size());
    for (auto t : got) EXPECT_TRUE(t >= 0 && t < V) << t;
  }
}

}  // namespace

// ------------------------------------------------------------------------------- golden fixtures

TEST_F(CudaModel, GoldenF32SingleFile) { check_fixture<huginn_arch>(gpu(), "tiny_f32"); }
TEST_F(CudaModel, GoldenBf16Sharded) { check_fixture<huginn_arch>(gpu(), "tiny_bf16_sharded"); }
TEST_F(CudaModel, GoldenF16SingleFile) { check_fixture<huginn_arch>(gpu(), "tiny_f16"); }
TEST_F(CudaModel, GoldenAddInjection) { check_fixture<arch<block::sandwich, injection::add>>(gpu(), "tiny_add"); }
TEST_F(CudaModel, GoldenPreNormAddGqaUntied) {
  check_fixture<arch<block::pre_norm, injection::add, state_init::zero>>(gpu(), "tiny_prenorm_gqa");
}

// Llama on the GPU: fp32 against the transformers fixture and the host model, bf16 within the bf16
// bound of the host model, fp32 greedy tokens equal to transformers'.
TEST_F(CudaModel, LlamaMatchesTransformersAndHost) {
  using H = model<host_backend, float, llama_arch>;
  using F = model<cuda_backend, float, llama_arch>;
  using B = model<cuda_backend, bf16, llama_arch>;
  for (const char* name : {"tiny_untied_gqa", "tiny_linear_bias", "tiny_bf16_sharded"}) {
    SCOPED_TRACE(name);
    const std::string dir = std::string(MUNINN_TEST_DATA) + "/llama/" + name;
    const io::json want = io::read_json_file(dir + "/expected.json");
    const H host = H::load(dir);
    const F f32 = F::load(dir, gpu());
    const B b16 = B::load(dir, gpu());
    const auto ids = ids_of(want.at("prompt_ids"));
    const auto oracle = host.forward(ids);
    const auto got = f32.forward(ids);
    EXPECT_LE(max_abs_diff(got, io::read_npy_f32(dir + "/logits.npy").data), kF32Tol) << "CUDA fp32 vs transformers";
    EXPECT_LE(max_abs_diff(got, oracle), kF32Tol) << "CUDA fp32 vs host fp32";
    EXPECT_LE(max_abs_diff(b16.forward(ids), oracle), kBf16Rel * max_abs(oracle)) << "CUDA bf16 vs host fp32";
    generate_options g;
    g.max_new_tokens = want.at("greedy").at("max_new_tokens").as_int();
    EXPECT_EQ(generate_greedy(f32, ids, g), ids_of(want.at("greedy").at("ids"))) << "CUDA fp32 greedy";
  }
}

TEST_F(CudaModel, Bf16CheckpointLoadsBitExact) {
  // A bf16 checkpoint goes to a bf16 model without an fp32 detour: the device holds the file's bits.
  using B = model<cuda_backend, bf16>;
  const std::string dir = data_dir + "tiny_bf16_sharded";
  const B m = B::load(dir, gpu());
  const huginn_config cfg = io::read_model_config(dir);
  const io::checkpoint ck = io::open_huginn_checkpoint(dir, cfg);
  auto check = [&](const std::string& tensor, const cuda_buffer<bf16>& buf) {
    std::vector<bf16> want(buf.size()), got(buf.size());
    ck.read_into<bf16>(tensor, want.data(), want.size());
    gpu().download(got.data(), buf.data(), got.size());
    std::size_t diff = 0;
    for (std::size_t i = 0; i < got.size(); ++i) diff += got[i].bits != want[i].bits;
    EXPECT_EQ(diff, 0u) << tensor;
  };
  check("transformer.wte.weight", m.weights().wte);
  check("transformer.adapter.weight", m.weights().adapter);
  check("transformer.core_block.0.attn.Wqkv.weight", m.weights().core[0].wqkv);
  check("transformer.coda.0.mlp.fc.weight", m.weights().coda[0].fc);
}

// ------------------------------------------------------------------- tuned head dims, random weights

namespace {

huginn_config random_config(std::int64_t head_dim, std::int64_t n_heads, std::int64_t n_kv_heads) {
  huginn_config c;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.head_dim = head_dim;
  c.n_embd = n_heads * head_dim;
  c.intermediate_size = 2 * c.n_embd;
  c.vocab_size = 256;
  c.n_layers_in_prelude = 1;
  c.n_layers_in_recurrent_block = 2;
  c.n_layers_in_coda = 1;
  c.mean_recurrence = 3;
  c.block_size = 96;
  c.rope_base = 10000.0f;
  c.source = "test_model_cuda random_config(head_dim " + std::to_string(head_dim) + ")";
  return c;
}

}  // namespace

TEST_F(CudaModel, TunedHeadDimsMatchHostOnPrefillAndDecode) {
  // The fixtures' heads (16, 32) take the generic attention kernel; Huginn's (96) and the other
  // tuned ones run here: a 40-token prompt (tiled prefill kernel) then single tokens (split-KV
  // decode), random state (device RNG, bit-equal to the host's), against the host model.
  for (const auto& [D, H, Hkv] : std::vector<std::array<std::int64_t, 3>>{{64, 2, 2}, {96, 2, 1}, {128, 2, 2}}) {
    SCOPED_TRACE("head_dim " + std::to_string(D));
    const huginn_config cfg = random_config(D, H, Hkv);
    using HM = model<host_backend, float>;
    using FM = model<cuda_backend, float>;
    using BM = model<cuda_backend, bf16>;
    const HM host(host_backend{}, cfg, make_random_huginn_weights<host_backend, float, block::sandwich>(host_backend{}, cfg, 5));
    const FM f32(gpu(), cfg, make_random_huginn_weights<cuda_backend, float, block::sandwich>(gpu(), cfg, 5));
    const BM b16(gpu(), cfg, make_random_huginn_weights<cuda_backend, bf16, block::sandwich>(gpu(), cfg, 5));
    run_options o;
    o.init = state_init::truncated_normal{};
    o.seed = 9;
    o.steps = 3;
    std::vector<std::int32_t> prompt(40);
    for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = std::int32_t((i * 37 + 11) % 256);
    auto hc = host.make_context(64, 3);
    auto fc = f32.make_context(64, 3);
    auto bc = b16.make_context(64, 3);
    auto hl = host.forward(hc, prompt, o, logits_for::all);
    EXPECT_LE(max_abs_diff(f32.forward(fc, prompt, o, logits_for::all), hl), kF32Tol) << "prefill fp32";
    EXPECT_LE(max_abs_diff(b16.forward(bc, prompt, o, logits_for::all), hl), kBf16Rel * max_abs(hl)) << "prefill bf16";
    for (int t = 0; t < 6; ++t) {
      const std::int32_t next = std::int32_t((t * 53 + 7) % 256);
      hl = host.forward(hc, {next}, o, logits_for::last);
      EXPECT_LE(max_abs_diff(f32.forward(fc, {next}, o, logits_for::last), hl), kF32Tol) << "decode fp32, token " << t;
      EXPECT_LE(max_abs_diff(b16.forward(bc, {next}, o, logits_for::last), hl), kBf16Rel * max_abs(hl))
          << "decode bf16, token " << t;
    }
  }
}

// ------------------------------------------------------------------------ inference invariants

TEST_F(CudaModel, CacheDecodeEqualsRecompute) {
  using M = model<cuda_backend, float>;
  const M m = M::load(data_dir + "tiny_f32", gpu());
  muninn_test::check_cache_decode_equals_recompute(m, kInvariantTol);
}

TEST_F(CudaModel, KlExitStepsEqualHost) {
  using HM = model<host_backend, float, huginn_adaptive_arch>;
  using FM = model<cuda_backend, float, huginn_adaptive_arch>;
  const HM host = HM::load(data_dir + "tiny_f32");
  const FM gpu_m = FM::load(data_dir + "tiny_f32", gpu());
  for (double thr : {1e-1, 1e-2, 1e-3}) {
    SCOPED_TRACE("threshold " + std::to_string(thr));
    run_options o;
    o.init = state_init::zero{};
    o.steps = 12;
    o.halt.criterion = halt_criterion::kl;
    o.halt.threshold = thr;
    std::vector<std::int32_t> hu, gu;
    const std::vector<std::int32_t> seq = {3, 40, 77, 120, 5, 9};
    o.steps_used = &hu;
    const auto hl = host.forward(seq, o);
    o.steps_used = &gu;
    const auto gl = gpu_m.forward(seq, o);
    EXPECT_EQ(gu, hu);
    EXPECT_LE(max_abs_diff(gl, hl), kF32Tol);
  }
  // Generation with the exit: same tokens and the same steps per token.
  generate_options g;
  g.run.init = state_init::zero{};
  g.run.steps = 10;
  g.run.halt.criterion = halt_criterion::kl;
  g.run.halt.threshold = 1e-2;
  g.max_new_tokens = 8;
  const auto hr = generate(host, {117, 4, 44, 64, 100}, g);
  const auto gr = generate(gpu_m, {117, 4, 44, 64, 100}, g);
  EXPECT_EQ(gr.tokens, hr.tokens);
  EXPECT_EQ(gr.steps, hr.steps);
}

TEST_F(CudaModel, PromptExitsAndParallelSamplerEqualHost) {
  using HM = model<host_backend, float, huginn_adaptive_arch>;
  using FM = model<cuda_backend, float, huginn_adaptive_arch>;
  const HM host = HM::load(data_dir + "tiny_f32");
  const FM gpu_m = FM::load(data_dir + "tiny_f32", gpu());
  const std::vector<std::int32_t> prompt = {117, 4, 44, 64, 100};
  // The reference's adaptive prefill: the whole prompt exits together (state criterion averaged).
  generate_options g;
  g.run.init = state_init::zero{};
  g.run.steps = 10;
  g.run.halt.criterion = halt_criterion::latent_diff;
  g.run.halt.threshold = 0.05;
  g.run.halt.reference_parity();
  g.max_new_tokens = 6;
  const auto hr = generate(host, prompt, g);
  const auto gr = generate(gpu_m, prompt, g);
  EXPECT_EQ(gr.tokens, hr.tokens);
  EXPECT_EQ(gr.steps, hr.steps);
  // The parallel sampler (case latent_default_thr of parallel.json: the host matches the reference).
  generate_options pg;
  pg.max_new_tokens = 8;
  pg.run.steps = 8;
  pg.run.seed = 5;
  const auto hp = generate_parallel(host, prompt, pg);
  const auto gp = generate_parallel(gpu_m, prompt, pg);
  EXPECT_EQ(gp.tokens, hp.tokens);
  EXPECT_EQ(gp.diffusion_steps, hp.diffusion_steps);
  EXPECT_EQ(gp.cache_clears, hp.cache_clears);
}

TEST_F(CudaModel, MixtureOfRecursionsEqualsHost) {
  const std::string mor = std::string(MUNINN_TEST_DATA) + "/mor/";
  const std::vector<std::int32_t> ids = {18, 43, 2, 11, 45, 3, 54, 7, 19, 37};
  for (const char* name : {"expert_mcyc_r3_linear_sigmoid", "expert_cycle_r2_mlp_tanh", "expert_mcyc_r3_kvshare"}) {
    SCOPED_TRACE(name);
    using HM = model<host_backend, float, mor_expert_arch>;
    using FM = model<cuda_backend, float, mor_expert_arch>;
    const HM host = HM::load(mor + name);
    const FM dev = FM::load(mor + name, gpu());
    for (const routing_mode mode : {routing_mode::scoring, routing_mode::causal}) {
      run_options o;
      o.routing = mode;
      std::vector<std::int32_t> hd, gd;
      o.depths = &hd;
      const auto hl = host.forward(ids, o);
      o.depths = &gd;
      const auto gl = dev.forward(ids, o);
      EXPECT_EQ(gd, hd);
      EXPECT_LE(max_abs_diff(gl, hl), kF32Tol);
    }
    generate_options g;
    g.max_new_tokens = 6;
    EXPECT_EQ(generate(dev, {18, 43, 2}, g).tokens, generate(host, {18, 43, 2}, g).tokens);
  }
  using TM = model<cuda_backend, float, mor_token_arch>;
  using TH = model<host_backend, float, mor_token_arch>;
  const TH th = TH::load(mor + "token_mcyc_r3_softmax_lossfree");
  const TM td = TM::load(mor + "token_mcyc_r3_softmax_lossfree", gpu());
  EXPECT_LE(max_abs_diff(td.forward(ids), th.forward(ids)), kF32Tol);
}

TEST_F(CudaModel, BatchEqualsSingle) {
  using M = model<cuda_backend, float>;
  const M m = M::load(data_dir + "tiny_f32", gpu());
  const std::vector<std::vector<std::int32_t>> prompts = {{5}, {117, 4, 44, 64, 100}, {9, 8, 7}, {1, 2, 3, 4, 5, 6, 7}};
  ASSERT_NO_FATAL_FAILURE(muninn_test::check_batch_rows_equal_single_runs(m, prompts));
  // The logits of one stacked call equal each row's own call.
  run_options o;
  o.init = state_init::zero{};
  o.steps = 4;
  std::vector<M::context_type> ctxs;
  for (std::size_t r = 0; r < prompts.size(); ++r) ctxs.push_back(m.make_context(16, 4));
  std::vector<M::context_type*> ptrs;
  for (auto& c : ctxs) ptrs.push_back(&c);
  auto ws = m.make_workspace(16);
  const auto stacked = m.forward_batch(ws, ptrs, prompts, o, logits_for::last);
  for (std::size_t r = 0; r < prompts.size(); ++r) {
    auto ctx = m.make_context(16, 4);
    EXPECT_LE(max_abs_diff(stacked[r], m.forward(ctx, prompts[r], o, logits_for::last)), kInvariantTol) << "row " << r;
  }
}

// --------------------------------------------------------------------- generic-head-dim attention

namespace {

using muninn_test::random_vec;
using muninn_test::rounded;
using muninn_test::to_device;
using muninn_test::to_host;

template <class T>
void check_generic_attention(const cuda_backend& be, double rel) {
  struct attn_case {
    std::int64_t nq, nkv, H, Hkv, D, pad;
  };
  const attn_case cases[] = {
      {12, 12, 4, 4, 16, 0},   // the fixtures' prefill
      {1, 40, 3, 3, 32, 0},    // decode over two key tiles
      {4, 9, 4, 2, 16, 0},     // chunked prefill, GQA (tiny_prenorm_gqa)
      {20, 70, 2, 1, 48, 5},   // padded strides, three tiles
      {3, 33, 1, 1, 8, 0},     // a head narrower than a warp
      {2, 65, 2, 2, 80, 0},    // two columns per lane, the second partial
      {5, 100, 2, 1, 256, 3},  // the widest head
      {1, 1, 1, 1, 1, 0},      // degenerate
  };
  std::uint32_t seed = 900;
  for (const auto& c : cases) {
    const std::int64_t ldq = c.H * c.D + c.pad, ldkv = c.Hkv * c.D + c.pad;
    const auto q = rounded<T>(random_vec(std::size_t(c.nq * ldq), seed++, -2.0f, 2.0f));
    const auto k = rounded<T>(random_vec(std::size_t(c.nkv * ldkv), seed++, -2.0f, 2.0f));
    const auto v = rounded<T>(random_vec(std::size_t(c.nkv * ldkv), seed++, -1.0f, 1.0f));
    const float sc = 1.0f / std::sqrt(float(c.D));
    std::vector<float> want(std::size_t(c.nq * ldq), 0.0f);
    attention(host_backend{}, q.data(), ldq, k.data(), v.data(), ldkv, want.data(), ldq, c.nq, c.nkv, c.H, c.Hkv, c.D,
              sc);
    auto dq = to_device<T>(be, q), dk = to_device<T>(be, k), dv = to_device<T>(be, v);
    auto dout = to_device<T>(be, std::vector<float>(want.size(), 0.0f));
    attention(be, dq.data(), ldq, dk.data(), dv.data(), ldkv, dout.data(), ldq, c.nq, c.nkv, c.H, c.Hkv, c.D, sc);
    const std::vector<float> got_f = to_host<T>(be, dout.data(), want.size());
    std::size_t bad = 0;
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double got = double(got_f[i]);
      const double d = std::fabs(got - double(want[i])), lim = 1e-5 + rel * std::fabs(double(want[i]));
      if (!(d <= lim)) ++bad;
      worst = std::max(worst, d);
    }
    EXPECT_EQ(bad, 0u) << "nq=" << c.nq << " nkv=" << c.nkv << " H=" << c.H << " Hkv=" << c.Hkv << " D=" << c.D
                       << " worst |diff| " << worst;
  }
}

}  // namespace

TEST_F(CudaModel, GenericHeadDimAttentionMatchesHost) {
  check_generic_attention<float>(gpu(), 1e-4);
  check_generic_attention<bf16>(gpu(), 2e-2);
}
