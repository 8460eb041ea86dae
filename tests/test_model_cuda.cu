// Whole models on the CUDA backend, fp32 and bf16: the shared model cases of tests/model_cases.hpp
// (golden fixtures of every family: Huginn, Llama, Mixture-of-Recursions, CALM, TRM / HRM; cache
// decode == recompute, batch == single), and the GPU's own checks against the host model (the
// oracle): bf16 loading, tuned head dims, exit steps, the parallel sampler, CALM at a shape its
// fixture lacks; the generic-head-dim attention kernel the fixtures need. (The TRM ops are in
// test_ops_cuda.cu.)
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
//   CALM fp32 vs host            | 1e-4                       | hidden states and head latents of a
//                                |                            | two-layer backbone: order effects ~1e-6
//   CALM bf16 vs host fp32       | 0.1                        | hidden states within bf16 rounding
//
// The MoR, CALM and TRM bounds of the model cases are in model_cases.hpp's table (the config below).
//
// What the bf16 bound can and cannot see. A wiring fault (a RoPE sign flip, a dropped residual)
// moves fp32 logits of these fixtures by 0.05-0.09, the size of bf16's own rounding noise over a
// whole model (1.6 % of max |logit| in PyTorch's own bf16 run), so no whole-model bf16 bound can
// tell the two apart, and a host oracle in bf16-rounded arithmetic would not help: it would have
// to round at exactly the points each CUDA kernel does (inside cuBLAS too) to be tighter than the
// noise. Such faults are caught elsewhere instead: model<cuda_backend, T> is one template whose
// only T-dependent code is the upload/download conversion and the bf16 checkpoint load (checked bit
// for bit below), so the fp32 run above (1e-3, where the smallest wrong variant moves 7.9e-3)
// checks the wiring bf16 shares, and every bf16 kernel is checked alone in tests/op_cases.hpp
// against double precision on the same bf16 inputs (2e-2 relative per element: a sign flip changes
// an element by O(1)). This bound is what is left: a smoke check that the bf16 model as a whole
// runs and stays within its rounding.
//
// Attention (generic head dims) against the host op: |Δ| ≤ 1e-5 + rel·|want|, rel 1e-4 (fp32),
// 2e-2 (bf16: only the output rounding differs; inputs are the same bf16 values).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <type_traits>
#include <unistd.h>
#include <vector>

#include "muninn/cuda.cuh"
#include "muninn/families/llama/arch.hpp"
#include "muninn/families/calm/random_checkpoint.hpp"
#include "muninn/families/huginn/random_weights.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/calm_generate.hpp"
#include "model_cases.hpp"
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
constexpr double kCalmTol = 1e-4;      // CALM fp32 vs host (and the fixture, model_cases.hpp)
constexpr double kCalmBf16Tol = 0.1;   // CALM bf16 hidden states vs host fp32

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

/// The GPU of the CUDA configs of the shared model cases (created once, never destroyed: CUDA
/// handles must not outlive the runtime at exit).
const cuda_backend& shared_gpu() {
  static const cuda_backend* be = new cuda_backend(cuda_backend::create(0));
  return *be;
}

/// The CUDA configs of tests/model_cases.hpp (its table gives the tolerances and why).
template <class T>
struct cuda_config {
  using backend = cuda_backend;
  using storage = T;
  static constexpr bool full_precision = std::is_same_v<T, float>;
  static constexpr double invariant_tol = kInvariantTol;
  // MoR: as Huginn's logits. CALM, TRM: the bounds their CUDA checks have always held; bf16 as
  // model_cases.hpp's table says (MoR has no bf16 case).
  static constexpr double mor_tol = kF32Tol;
  static constexpr double calm_tol = full_precision ? kCalmTol : kCalmBf16Tol;
  static constexpr double trm_tol = full_precision ? 1e-4 : 0.25;
  static double logit_tol(const std::vector<float>& want) { return full_precision ? kF32Tol : kBf16Rel * max_abs(want); }
  static bool available() { return cuda_backend::available(); }
  static std::string skip_reason() { return "no CUDA device (" + muninn_test::no_cuda_device_reason() + ")"; }
  static const cuda_backend& get() { return shared_gpu(); }
};

}  // namespace

namespace model_cases {
using CudaConfigs = ::testing::Types<cuda_config<float>, cuda_config<bf16>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, ModelCases, CudaConfigs);
}  // namespace model_cases

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

// ------------------------------------------------------------------- CALM at a shape of its own

namespace {

/// A random CALM checkpoint written through the released layout at a shape the reference fixture
/// (model_cases.hpp) does not have: vocab 300 (> 256), head dim 16, latent 16, noise 8.
struct random_calm_dir {
  std::string dir = (std::filesystem::temp_directory_path() / ("muninn_calm_cuda_" + std::to_string(::getpid()))).string();
  random_calm_dir() {
    calm_shape s;
    s.vocab = 300;
    s.hidden = 64;
    s.inter = 128;
    s.layers = 2;
    s.heads = 4;
    s.positions = 64;
    s.latent = 16;
    s.noise = 8;
    s.blocks = 2;
    s.ae_hidden = 32;
    s.ae_inter = 64;
    write_random_calm(dir, s, 3);
  }
  ~random_calm_dir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

const std::vector<std::int32_t> kCalmIds = {5, 17, 250, 3, 99, 42, 7, 1, 64, 128, 200, 11};

}  // namespace

TEST_F(CudaModel, CalmAtAnotherShapeEqualsHost) {
  // Backbone hidden states and head latents (noise fixed) within kCalmTol of the host, the
  // autoencoder's round trip and whole generations (both samplers) equal.
  const random_calm_dir d;
  auto host = calm_model<host_backend, float>::load(d.dir);
  auto dev = calm_model<cuda_backend, float>::load(d.dir, "", gpu());
  auto hc = host.make_context(8);
  auto dc = dev.make_context(8);
  const auto hh = host.hidden(hc, kCalmIds), dh = dev.hidden(dc, kCalmIds);
  EXPECT_LE(max_abs_diff(dh, hh), kCalmTol);
  const std::vector<float> noise = calm_noise(9, 0, 0, 3 * 5, host.config().noise_size);
  EXPECT_LE(max_abs_diff(dev.sample_latents(hh, noise, 5), host.sample_latents(hh, noise, 5)), kCalmTol);
  EXPECT_EQ(dev.autoencoder().reconstruct(kCalmIds), host.autoencoder().reconstruct(kCalmIds));
  calm_generate_options o;
  o.max_length = 32;
  o.seed = 3;
  for (const double t : {1.0, 0.5}) {
    o.temperature = t;
    o.num_samples = 32;
    EXPECT_EQ(generate_calm(dev, {5, 17, 250}, o).padded, generate_calm(host, {5, 17, 250}, o).padded) << t;
  }
  o.sampler = calm_sampler::exact;
  EXPECT_EQ(generate_calm(dev, {5, 17, 250}, o).padded, generate_calm(host, {5, 17, 250}, o).padded);
}

TEST_F(CudaModel, CalmAtAnotherShapeBf16HiddenStatesWithinRounding) {
  const random_calm_dir d;
  auto host = calm_model<host_backend, float>::load(d.dir);
  auto dev = calm_model<cuda_backend, bf16>::load(d.dir, "", gpu());
  auto hc = host.make_context(8);
  auto dc = dev.make_context(8);
  EXPECT_LE(max_abs_diff(dev.hidden(dc, kCalmIds), host.hidden(hc, kCalmIds)), kCalmBf16Tol);
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
