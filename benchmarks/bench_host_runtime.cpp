// Inference-feature benchmarks on the host: decode tokens/s and mean recurrence steps per exit
// criterion, KV bytes per token per cache policy, speculative decoding against plain decoding.
//
// Runs on the trained demo model (examples/models/demo) when present, else on the tiny test
// checkpoint; the model used is in the benchmark context ("model").
#include <benchmark/benchmark.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "muninn/muninn.hpp"

namespace {

using adaptive_model = muninn::model<muninn::host_backend, float, muninn::huginn_adaptive_arch>;

std::string model_dir() {
  const std::string demo = std::string(MUNINN_SOURCE_DIR) + "/examples/models/demo";
  return std::filesystem::exists(demo + "/config.json") ? demo : std::string(MUNINN_BENCH_DATA) + "/huginn/tiny_f32";
}

const adaptive_model& bench_model() {
  static const adaptive_model m = [] {
    benchmark::AddCustomContext("model", model_dir());
    return adaptive_model::load(model_dir());
  }();
  return m;
}

std::vector<std::int32_t> bench_prompt(const adaptive_model& m) {
  std::vector<std::int32_t> p;
  for (int i = 0; i < 12; ++i) p.push_back(std::int32_t((i * 5 + 3) % m.config().vocab_size));
  return p;
}

constexpr std::int64_t kNewTokens = 24;
constexpr std::int64_t kMaxSteps = 32;

void run_generation(benchmark::State& state, muninn::generate_options g, std::int64_t budget = 0,
                    muninn::kv_fallback fb = muninn::kv_fallback::latest) {
  const auto& m = bench_model();
  const auto prompt = bench_prompt(m);
  muninn::context_limits lim;
  lim.max_tokens = std::int64_t(prompt.size()) + kNewTokens + g.lookahead;
  lim.max_steps = kMaxSteps;
  lim.kv_budget = budget;
  lim.fallback = fb;
  auto ctx = m.make_context(lim);
  double steps = 0, tokens = 0;
  for (auto _ : state) {
    ctx.reset();
    const auto r = muninn::generate(m, ctx, prompt, g);
    steps += std::accumulate(r.steps.begin(), r.steps.end(), 0.0);
    tokens += double(r.tokens.size());
  }
  state.counters["tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["mean_steps"] = tokens > 0 ? steps / tokens : 0;
  state.counters["kv_bytes/token"] = double(ctx.kv_bytes_per_token());
}

muninn::generate_options base_options() {
  muninn::generate_options g;
  g.max_new_tokens = kNewTokens;
  g.run.init = muninn::state_init::zero{};
  g.run.steps = kMaxSteps;
  return g;
}

void BM_DecodeFixed(benchmark::State& state) { run_generation(state, base_options()); }
BENCHMARK(BM_DecodeFixed)->Unit(benchmark::kMillisecond);

void BM_DecodeExit(benchmark::State& state) {
  auto g = base_options();
  g.run.halt.criterion = muninn::halt_criterion(state.range(0));
  const char* names[] = {"policy_default", "none", "kl", "entropy-diff", "latent-diff", "argmax-stable", "cosine"};
  state.SetLabel(names[state.range(0)]);
  run_generation(state, g);
}
BENCHMARK(BM_DecodeExit)
    ->Arg(int(muninn::halt_criterion::kl))
    ->Arg(int(muninn::halt_criterion::entropy_diff))
    ->Arg(int(muninn::halt_criterion::latent_diff))
    ->Arg(int(muninn::halt_criterion::argmax_stable))
    ->Arg(int(muninn::halt_criterion::cosine))
    ->ArgName("criterion")
    ->Unit(benchmark::kMillisecond);

void BM_DecodeKvBudget(benchmark::State& state) { run_generation(state, base_options(), state.range(0)); }
BENCHMARK(BM_DecodeKvBudget)->Arg(1)->Arg(4)->Arg(8)->ArgName("budget")->Unit(benchmark::kMillisecond);

void BM_DecodeSpeculative(benchmark::State& state) {
  auto g = base_options();
  g.draft_steps = state.range(0);
  g.lookahead = state.range(1);
  run_generation(state, g);
}
BENCHMARK(BM_DecodeSpeculative)->Args({4, 4})->Args({4, 8})->Args({8, 8})->ArgNames({"draft", "lookahead"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
