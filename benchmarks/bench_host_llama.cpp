// Plain Llama on the host: prefill and greedy decode of a SmolLM-135M-shaped random model
// (hidden 576, 9 heads / 3 KV heads, head_dim 64, MLP 1536, 30 layers, vocab 49152, tied), the
// same work as tools/bench/llama_pytorch.py times in transformers (tools/bench/compare_llama.py
// runs both and prints the ratio).
//
// prefill: one call over a 128-token prompt on an empty cache, logits of the last position only.
// decode:  after an untimed 128-token prefill, 64 single-token calls, each on the argmax of the
//          previous logits.
// batch:   `rows` sequences (arg) decoded together by forward_batch, one token each per call, 16
//          calls after an untimed 32-token prefill of each: every projection a GEMM of `rows`
//          rows (batched decode; for q8 the multi-row int8 kernel when rows <= 8).
// The Bf16 and Q8 rows run the same model with its projection and output matrices stored in
// that format (model::store_weights_as; the CLI's --dtype bf16 / --quantize q8).
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

llama_model make_model(muninn::weight_format f) {
  muninn::host_backend be;
  const auto cfg = smollm_135m();
  llama_model m(be, cfg, muninn::make_random_weights<muninn::host_backend, float, muninn::block::pre_norm>(be, cfg, 7));
  m.store_weights_as(f);
  return m;
}

// One model per format, made the first time a benchmark asks for it.
template <muninn::weight_format F = muninn::weight_format::f32>
const llama_model& model() {
  static const llama_model m = make_model(F);
  return m;
}

std::vector<std::int32_t> prompt() {
  std::vector<std::int32_t> ids(kPrompt);
  for (std::int64_t i = 0; i < kPrompt; ++i) ids[std::size_t(i)] = std::int32_t((i * 7919 + 13) % 49152);
  return ids;
}

template <muninn::weight_format F>
void prefill(benchmark::State& state) {
  const auto& m = model<F>();
  const auto ids = prompt();
  auto ctx = m.make_context(kPrompt + kDecode);
  for (auto _ : state) {
    ctx.reset();
    benchmark::DoNotOptimize(m.forward(ctx, ids, {}, muninn::logits_for::last));
  }
  state.counters["tok_s"] = benchmark::Counter(double(kPrompt), benchmark::Counter::kIsIterationInvariantRate);
}
void BM_LlamaPrefill(benchmark::State& state) { prefill<muninn::weight_format::f32>(state); }
void BM_LlamaPrefillBf16(benchmark::State& state) { prefill<muninn::weight_format::bf16>(state); }
void BM_LlamaPrefillQ8(benchmark::State& state) { prefill<muninn::weight_format::q8>(state); }
BENCHMARK(BM_LlamaPrefill)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LlamaPrefillBf16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LlamaPrefillQ8)->Unit(benchmark::kMillisecond)->UseRealTime();

template <muninn::weight_format F>
void decode(benchmark::State& state) {
  const auto& m = model<F>();
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
void BM_LlamaDecode(benchmark::State& state) { decode<muninn::weight_format::f32>(state); }
void BM_LlamaDecodeBf16(benchmark::State& state) { decode<muninn::weight_format::bf16>(state); }
void BM_LlamaDecodeQ8(benchmark::State& state) { decode<muninn::weight_format::q8>(state); }
BENCHMARK(BM_LlamaDecode)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LlamaDecodeBf16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LlamaDecodeQ8)->Unit(benchmark::kMillisecond)->UseRealTime();

template <muninn::weight_format F>
void batch(benchmark::State& state) {
  constexpr std::int64_t kBatchPrompt = 32, kSteps = 16;
  const auto& m = model<F>();
  const std::int64_t rows = state.range(0), V = m.config().vocab_size;
  using context = decltype(m.make_context(1));
  std::vector<context> ctxs;
  for (std::int64_t r = 0; r < rows; ++r) ctxs.push_back(m.make_context(kBatchPrompt + kSteps));
  std::vector<context*> ptrs;
  for (auto& c : ctxs) ptrs.push_back(&c);
  auto ws = m.make_workspace(rows * kBatchPrompt);
  const auto ids = prompt();
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<std::vector<std::int32_t>> in;
    for (std::int64_t r = 0; r < rows; ++r) {
      ctxs[std::size_t(r)].reset();
      in.emplace_back(ids.begin() + r, ids.begin() + r + kBatchPrompt);  // a different prompt per row
    }
    auto out = m.forward_batch(ws, ptrs, in, {}, muninn::logits_for::last);
    state.ResumeTiming();
    for (std::int64_t t = 0; t < kSteps; ++t) {
      for (std::int64_t r = 0; r < rows; ++r)
        in[std::size_t(r)] = {std::int32_t(muninn::argmax_host(out[std::size_t(r)].data(), V))};
      out = m.forward_batch(ws, ptrs, in, {}, muninn::logits_for::last);
    }
    benchmark::DoNotOptimize(out);
  }
  state.counters["tok_s"] = benchmark::Counter(double(rows * kSteps), benchmark::Counter::kIsIterationInvariantRate);
}
void BM_LlamaBatchDecode(benchmark::State& state) { batch<muninn::weight_format::f32>(state); }
void BM_LlamaBatchDecodeQ8(benchmark::State& state) { batch<muninn::weight_format::q8>(state); }
BENCHMARK(BM_LlamaBatchDecode)->ArgName("rows")->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LlamaBatchDecodeQ8)->ArgName("rows")->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
