// Whole-model host benchmarks: prefill and decode throughput of Huginn-architecture models.
//
// Reports tokens/s and the matmul GFLOP/s achieved (2 · weights touched per token), so the
// figure can be read against the GEMM roofline from bench_host_ops.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "muninn/families/huginn/random_weights.hpp"
#include "muninn/muninn.hpp"

namespace {

using host_model = muninn::model<muninn::host_backend, float>;

muninn::huginn_config small_config() {
  // A "small" Huginn: the released layout (2, 4, 2) at h = 512.
  muninn::huginn_config c;
  c.n_embd = 512;
  c.n_heads = 8;
  c.n_kv_heads = 8;
  c.head_dim = 64;
  c.intermediate_size = 1536;
  c.vocab_size = 8192;
  c.n_layers_in_prelude = 2;
  c.n_layers_in_recurrent_block = 4;
  c.n_layers_in_coda = 2;
  c.mean_recurrence = 8;
  c.block_size = 1024;
  c.source = "bench small_config";
  return c;
}

// Matmul FLOPs per token at r steps: every Linear once per executed layer, the adapter's state
// half per step (its embedding half once per token), and the head.
double flops_per_token(const muninn::huginn_config& c, std::int64_t r) {
  const double h = double(c.n_embd), I = double(c.intermediate_size), V = double(c.vocab_size);
  const double layer = 2.0 * (3 * h * h + h * h + 2 * I * h + I * h);
  const double layers = double(c.n_layers_in_prelude + c.n_layers_in_coda) + double(c.n_layers_in_recurrent_block) * double(r);
  return layers * layer + 2.0 * h * h * (double(r) + 1) + 2.0 * h * V;
}

const host_model& small_model() {
  static const host_model m = [] {
    muninn::host_backend be;
    auto cfg = small_config();
    return host_model(be, cfg, muninn::make_random_huginn_weights<muninn::host_backend, float, muninn::block::sandwich>(be, cfg, 1));
  }();
  return m;
}

void BM_TinyCheckpointForward(benchmark::State& state) {
  // The repository's tiny_f32 golden checkpoint, 12 tokens at r = 4 (what `muninn forward` runs).
  static const host_model m = host_model::load(std::string(MUNINN_BENCH_DATA) + "/huginn/tiny_f32");
  const std::vector<std::int32_t> ids = {25, 63, 80, 91, 81, 55, 13, 76, 33, 71, 82, 24};
  muninn::run_options o;
  o.init = muninn::state_init::zero{};
  o.steps = 4;
  for (auto _ : state) benchmark::DoNotOptimize(m.forward(ids, o));
  state.counters["tokens/s"] = benchmark::Counter(double(ids.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TinyCheckpointForward)->Unit(benchmark::kMicrosecond);

void BM_SmallPrefill(benchmark::State& state) {
  const auto& m = small_model();
  const std::int64_t n = state.range(0), r = state.range(1);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) ids[std::size_t(i)] = std::int32_t((i * 7919) % m.config().vocab_size);
  muninn::run_options o;
  o.steps = r;
  auto ctx = m.make_context(n, r);
  for (auto _ : state) {
    ctx.reset();
    benchmark::DoNotOptimize(m.forward(ctx, ids, o, muninn::logits_for::last));
  }
  state.counters["tokens/s"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(double(n) * flops_per_token(m.config(), r) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SmallPrefill)->Args({128, 8})->Unit(benchmark::kMillisecond);

void BM_SmallDecode(benchmark::State& state) {
  const auto& m = small_model();
  const std::int64_t r = state.range(0);
  muninn::run_options o;
  o.steps = r;
  auto ctx = m.make_context(512, r);
  std::vector<std::int32_t> prompt(64, 3);
  m.forward(ctx, prompt, o, muninn::logits_for::last);
  for (auto _ : state) {
    if (ctx.length() >= 511) {
      ctx.truncate(64);
    }
    benchmark::DoNotOptimize(m.forward(ctx, {5}, o, muninn::logits_for::last));
  }
  state.counters["tokens/s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_token(m.config(), r) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  // Weight bytes streamed per token (decode is bound by memory bandwidth, not FLOPs).
  state.counters["weight GB/s"] = benchmark::Counter(flops_per_token(m.config(), r) / 2 * 4 * 1e-9,
                                                     benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SmallDecode)->Arg(1)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond);

// Plain decoding against the parallel sampler at the same depth: 32 recurrences per token.
// The sampler freezes by the `fixed` rule (every token recurs num_steps / inner_recurrence
// sampler steps, i.e. 32 recurrences, before it freezes), so both spend the same recurrences
// per token on these random weights, whose states never settle for the latent-diff rule.
constexpr std::int64_t kGenDepth = 32, kGenTokens = 48;

muninn::generate_options gen_options() {
  muninn::generate_options g;
  g.max_new_tokens = kGenTokens;
  g.run.steps = kGenDepth;
  return g;
}

std::vector<std::int32_t> gen_prompt(const host_model& m) {
  std::vector<std::int32_t> p;
  for (int i = 0; i < 16; ++i) p.push_back(std::int32_t((i * 7919 + 11) % m.config().vocab_size));
  return p;
}

void BM_SmallGeneratePlain(benchmark::State& state) {
  const auto& m = small_model();
  const auto prompt = gen_prompt(m);
  double tokens = 0;
  for (auto _ : state) tokens += double(muninn::generate(m, prompt, gen_options()).tokens.size());
  state.counters["tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["recurrences/token"] = double(kGenDepth);
}
BENCHMARK(BM_SmallGeneratePlain)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SmallGenerateParallel(benchmark::State& state) {
  const auto& m = small_model();
  const auto prompt = gen_prompt(m);
  muninn::parallel_options p;
  p.freeze = muninn::freeze_rule::fixed;
  p.inner_recurrence = state.range(0);
  double tokens = 0, steps = 0, token_recurrences = 0;
  for (auto _ : state) {
    const auto r = muninn::generate_parallel(m, prompt, gen_options(), p);
    tokens += double(r.tokens.size());
    steps += double(r.diffusion_steps);
    token_recurrences += double(r.tokens_forward - std::int64_t(prompt.size()));
  }
  state.counters["tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["sampler_steps/token"] = steps / tokens;
  state.counters["recurrences/token"] = token_recurrences / tokens;  // every wave row's recurrences, per frozen token
}
BENCHMARK(BM_SmallGenerateParallel)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
