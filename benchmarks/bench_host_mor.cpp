// Mixture-of-Recursions decoding throughput on the host, against a vanilla Llama of the same
// unrolled depth (the MoR paper's comparison; its figure is up to 2.06x for MoR-4 at 360M on an
// H100 with max batch). SmolLM-135M-shaped random models: hidden 576, 9 heads / 3 KV heads,
// head_dim 64, MLP 1536, vocab 49152, tied. MoR: Middle-Cycle, 3 recursions of a 10-layer block
// between an unshared first and last layer (32 unrolled layers, the paper's 135M MoR-3), expert
// choice with random linear routers (so each recursion keeps about half of the tokens that reach
// it, by the causal rule). Vanilla: 32 layers.
//
// Work: kRows prompts of kPrompt tokens, kNew greedy tokens each, prefill included.
//   BM_VanillaSequenceWise  generate_batch: each step stacks every row through all 32 layers
//   BM_MorSequenceWise      generate_batch on MoR: each step stacks every row; recursion r runs
//                           only the rows still recurring, the others wait for the step to end
//   BM_MorDepthWise         generate_depthwise: continuous depth-wise batching (max batch kRows)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/depthwise_batching.hpp"
#include "smollm_shape.hpp"

namespace {

using llama_model = muninn::model<muninn::host_backend, float, muninn::llama_arch>;
using mor_model = muninn::model<muninn::host_backend, float, muninn::mor_expert_arch>;
constexpr std::int64_t kRows = 16, kPrompt = 8, kNew = 16, kBlock = 10, kRecursions = 3;


const llama_model& vanilla() {
  static const llama_model m = [] {
    muninn::host_backend be;
    const auto cfg = smollm_135m_shape(2 + kBlock * kRecursions, "bench_host_mor vanilla");
    return llama_model(be, cfg, muninn::make_random_weights<muninn::host_backend, float, muninn::block::pre_norm>(be, cfg, 3));
  }();
  return m;
}

const mor_model& mor() {
  static const mor_model m = [] {
    muninn::host_backend be;
    auto cfg = smollm_135m_shape<muninn::mor_config>(1, "bench_host_mor");
    cfg.n_layers_in_recurrent_block = kBlock;
    cfg.n_layers_in_coda = 1;
    cfg.mean_recurrence = kRecursions;
    cfg.mor.recursions = kRecursions;
    muninn::mor_weights<muninn::host_backend, float> w(
        muninn::make_random_weights<muninn::host_backend, float, muninn::block::pre_norm>(be, cfg, 3));
    for (std::int64_t r = 0; r < kRecursions; ++r) {
      std::vector<float> z(std::size_t(cfg.n_embd));
      muninn::fill_truncated_normal(be, z.data(), cfg.n_embd, 100 + std::uint64_t(r), 0, 1.0f);
      muninn::router_weights<muninn::host_backend, float> rw;
      rw.w1 = be.alloc<float>(z.size());
      be.upload(rw.w1.data(), z.data(), z.size());
      w.routers.push_back(std::move(rw));
    }
    return mor_model(be, cfg, std::move(w));
  }();
  return m;
}

std::vector<std::vector<std::int32_t>> prompts() {
  std::vector<std::vector<std::int32_t>> p(kRows);
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t i = 0; i < kPrompt; ++i) p[std::size_t(r)].push_back(std::int32_t((r * 7919 + i * 104729 + 11) % 49152));
  return p;
}

muninn::generate_options options() {
  muninn::generate_options g;
  g.max_new_tokens = kNew;
  return g;
}

// `model` is built (random weights, seconds) before the timed loop, not inside its first repetition.
template <class Model, class Run>
void measure(benchmark::State& state, const Model& (*model)(), Run&& run) {
  model();
  double tokens = 0, depth = 0, fed = 0;
  for (auto _ : state) {
    const auto res = run();
    for (const auto& r : res) {
      tokens += double(r.tokens.size());
      for (std::size_t i = 1; i < r.steps.size(); ++i) depth += r.steps[i];
      fed += double(r.steps.size() - 1);
    }
  }
  state.counters["tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  if (depth > 0) state.counters["mean_depth"] = depth / fed;
}

void BM_VanillaSequenceWise(benchmark::State& state) {
  measure(state, vanilla, [] { return muninn::generate_batch(vanilla(), prompts(), options()); });
}
BENCHMARK(BM_VanillaSequenceWise)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MorSequenceWise(benchmark::State& state) {
  measure(state, mor, [] { return muninn::generate_batch(mor(), prompts(), options()); });
}
BENCHMARK(BM_MorSequenceWise)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MorDepthWise(benchmark::State& state) {
  muninn::depthwise_options d;
  d.max_batch = kRows;
  muninn::depthwise_stats st;
  measure(state, mor, [&] { return muninn::generate_depthwise(mor(), prompts(), options(), d, &st); });
  state.counters["rows/block_call"] = double(st.block_rows) / double(st.block_calls);
  state.counters["rows/last_call"] = double(st.tokens) / double(st.last_calls);
}
BENCHMARK(BM_MorDepthWise)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
