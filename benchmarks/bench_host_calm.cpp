// CALM generation on the host against a Llama of the same width and depth, and where a CALM step
// spends its time. Random weights at the paper's CALM-M shape (backbone 16 layers, hidden 1024,
// 16 heads, MLP 2752; energy head 4 blocks, noise 64; the released autoencoder's 512-wide layers,
// latent 128, K = 4; vocabulary 128257), written once as a checkpoint under $TMPDIR and loaded
// through the real loader. The Llama baseline ("Transformer-M") has the same backbone plus an
// untied 128257-row head.
//
// BM_LlamaDecode:      one token per step (forward + arg-max), context 64 tokens.
// BM_CalmStep/N:       one CALM step = K tokens: feed the last chunk, N head samples, decode,
//                      choose (N = 1: T = 1; N = 200: the batch approximation at T = 1/2).
// BM_CalmBackbone:     the backbone's share: compress + 16 layers for one chunk.
// BM_CalmHead/N:       the energy head's share: N samples from one hidden state.
// BM_CalmDecode/N:     the autoencoder's share: N latents → N·K tokens (logits GEMM + arg-max).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "muninn/families/calm/random_checkpoint.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/calm_generate.hpp"

namespace {

using calm = muninn::calm_model<muninn::host_backend, float>;
using llama_model = muninn::model<muninn::host_backend, float, muninn::llama_arch>;
constexpr std::int64_t kContextChunks = 16;  // 64 tokens of context

muninn::calm_shape shape() { return muninn::calm_shape{}; }

calm& calm_m() {
  static calm m = [] {
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = std::string(tmp ? tmp : "/tmp") + "/muninn_bench_calm_m";
    if (!std::filesystem::exists(dir + "/model.safetensors")) muninn::write_random_calm(dir, shape(), 11, muninn::dtype::bf16);
    return calm::load(dir, dir + "/ae");
  }();
  return m;
}

const llama_model& llama_m() {
  static const llama_model m = [] {
    const muninn::calm_shape s = shape();
    muninn::llama_config c;
    c.model_type = "llama";
    c.n_embd = s.hidden;
    c.n_heads = c.n_kv_heads = s.heads;
    c.head_dim = s.hidden / s.heads;
    c.intermediate_size = s.inter;
    c.vocab_size = s.vocab;
    c.n_layers_in_prelude = s.layers;
    c.block_size = 2048;
    c.norm_eps = 1e-6f;
    c.rope_base = 10000.0f;
    c.tie_embeddings = false;
    c.source = "bench transformer-m";
    muninn::host_backend be;
    auto w = muninn::make_random_weights<muninn::host_backend, float, muninn::block::pre_norm>(be, c, 5);
    std::uint64_t stream = 1u << 30;  // the untied head, drawn apart from the rest
    w.lm_head = muninn::detail::random_tensor<muninn::host_backend, float>(be, std::size_t(c.vocab_size * c.n_embd),
                                                                          0.02f, 5, stream, &w.parameter_count);
    return llama_model(be, c, std::move(w));
  }();
  return m;
}

std::vector<std::int32_t> tokens(std::int64_t n) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) ids[std::size_t(i)] = std::int32_t((i * 7919 + 13) % 128000);
  return ids;
}

void BM_LlamaDecode(benchmark::State& state) {
  const auto& m = llama_m();
  const std::int64_t ctx_tokens = kContextChunks * 4;
  auto ctx = m.make_context(ctx_tokens + 1);
  auto logits = m.forward(ctx, tokens(ctx_tokens), {}, muninn::logits_for::last);
  for (auto _ : state) {
    ctx.truncate(ctx_tokens);
    logits = m.forward(ctx, {muninn::argmax_host(logits.data(), m.config().vocab_size)}, {}, muninn::logits_for::last);
    benchmark::DoNotOptimize(logits);
  }
  state.counters["tok_s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LlamaDecode)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CalmStep(benchmark::State& state) {
  calm& m = calm_m();
  const std::int64_t N = state.range(0), K = m.patch_size();
  auto ctx = m.make_context(kContextChunks + 1);
  std::vector<float> h = m.hidden(ctx, tokens(kContextChunks * K), muninn::logits_for::last);
  muninn::calm_generate_options o;
  o.temperature = N == 1 ? 1.0 : 0.5;
  o.num_samples = N;
  std::vector<std::int32_t> chunk;
  for (auto _ : state) {
    std::int64_t draws = 0;
    chunk = muninn::detail::next_calm_chunk(m, h, kContextChunks - 1, o, draws);
    ctx.truncate(kContextChunks);
    h = m.hidden(ctx, chunk, muninn::logits_for::last);
  }
  state.counters["tok_s"] = benchmark::Counter(double(K), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CalmStep)->Arg(1)->Arg(200)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CalmBackbone(benchmark::State& state) {
  calm& m = calm_m();
  const std::int64_t K = m.patch_size();
  auto ctx = m.make_context(kContextChunks + 1);
  m.hidden(ctx, tokens(kContextChunks * K), muninn::logits_for::last);
  const std::vector<std::int32_t> chunk = tokens(K);
  for (auto _ : state) {
    ctx.truncate(kContextChunks);
    benchmark::DoNotOptimize(m.hidden(ctx, chunk, muninn::logits_for::last));
  }
}
BENCHMARK(BM_CalmBackbone)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CalmHead(benchmark::State& state) {
  calm& m = calm_m();
  const std::int64_t N = state.range(0);
  const std::vector<float> h(std::size_t(m.config().backbone.n_embd), 0.5f);
  const std::vector<float> noise = muninn::calm_noise(3, 0, 0, N, m.config().noise_size);
  for (auto _ : state) benchmark::DoNotOptimize(m.sample_latents(h, noise, N));
}
BENCHMARK(BM_CalmHead)->Arg(1)->Arg(200)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CalmDecode(benchmark::State& state) {
  calm& m = calm_m();
  const std::int64_t N = state.range(0);
  const std::vector<float> z(std::size_t(N * m.config().latent_size), 0.25f);
  for (auto _ : state) benchmark::DoNotOptimize(m.autoencoder().decode(z));
  state.counters["GFLOP_s"] = benchmark::Counter(
      2.0 * double(N * m.patch_size()) * double(m.config().backbone.vocab_size) *
          double(m.autoencoder().config().hidden_size) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CalmDecode)->Arg(1)->Arg(200)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
