// Plain Llama on the host: prefill and greedy decode of a SmolLM-135M-shaped random model
// (hidden 576, 9 heads / 3 KV heads, head_dim 64, MLP 1536, 30 layers, vocab 49152, tied), the
// same work as tools/bench/llama_pytorch.py times in transformers (tools/bench/compare_llama.py
// runs both and prints the ratio).
//
// prefill: one call over a 128-token prompt on an empty cache, logits of the last position only.
// decode:  after an untimed 128-token prefill, 64 single-token calls, each on the argmax of the
//          previous logits.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"
#include "smollm_shape.hpp"

namespace {

using llama_model = muninn::model<muninn::host_backend, float, muninn::llama_arch>;
constexpr std::int64_t kPrompt = 128, kDecode = 64;

muninn::llama_config smollm_135m() { return smollm_135m_shape(30, "bench smollm_135m"); }

const llama_model& model() {
  static const llama_model m = [] {
    muninn::host_backend be;
    const auto cfg = smollm_135m();
    return llama_model(be, cfg, muninn::make_random_weights<muninn::host_backend, float, muninn::block::pre_norm>(be, cfg, 7));
  }();
  return m;
}

std::vector<std::int32_t> prompt() {
  std::vector<std::int32_t> ids(kPrompt);
  for (std::int64_t i = 0; i < kPrompt; ++i) ids[std::size_t(i)] = std::int32_t((i * 7919 + 13) % 49152);
  return ids;
}

void BM_LlamaPrefill(benchmark::State& state) {
  const auto& m = model();
  const auto ids = prompt();
  auto ctx = m.make_context(kPrompt + kDecode);
  for (auto _ : state) {
    ctx.reset();
    benchmark::DoNotOptimize(m.forward(ctx, ids, {}, muninn::logits_for::last));
  }
  state.counters["tok_s"] = benchmark::Counter(double(kPrompt), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LlamaPrefill)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LlamaDecode(benchmark::State& state) {
  const auto& m = model();
  const auto ids = prompt();
  const std::int64_t V = m.config().vocab_size;
  auto ctx = m.make_context(kPrompt + kDecode);
  for (auto _ : state) {
    state.PauseTiming();
    ctx.reset();
    auto logits = m.forward(ctx, ids, {}, muninn::logits_for::last);
    state.ResumeTiming();
    for (std::int64_t t = 0; t < kDecode; ++t)
      logits = m.forward(ctx, {muninn::argmax_host(logits.data(), V)}, {}, muninn::logits_for::last);
    benchmark::DoNotOptimize(logits);
  }
  state.counters["tok_s"] = benchmark::Counter(double(kDecode), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LlamaDecode)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
