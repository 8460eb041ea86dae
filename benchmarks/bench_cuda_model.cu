// Whole-model CUDA benchmarks: Huginn-shaped models with random bf16 weights, timed with CUDA
// events (manual time; each iteration is one model call, which ends with the logits on the host).
//
//   decode/<model>/r:R          batch-1 decode of one token at R recurrences after a 64-token prompt
//   prefill/<model>/r:32        a 1024-token prompt in one chunk at r = 32
//   batch_decode/<model>/B:n    one decode step of n sequences stacked into one call (forward_batch)
//
// Models: "huginn-3.5B" has Huginn-0125's shape (h 5280, 55 heads of 96, MLP 17920, vocab 65536,
// layers (2, 4, 2), block_size 4096, mean_recurrence 32); "small-h1024" is the same layout at
// h 1024 (16 heads of 64, MLP 3456) for a quick run. Weights are drawn on the device (truncated
// normal, Huginn's σ; cuda_random_weights.cuh), so building the 3.5B model takes a second.
//
// Counters (computed from the manual time, not from Google Benchmark's rate flags):
//   tokens/s      tokens produced (decode) or consumed (prefill) per second
//   weight_GB/s   decode: weight bytes a token must read / time per token
//   %ceiling      decode: tokens/s ÷ (device DRAM bandwidth ÷ weight bytes per token), i.e. how
//                 close batch-1 decode is to the weight-bandwidth limit. Bytes per token are
//                 sizeof(T) · (prelude + coda layers + r · (core layers + adapter state half)
//                 + adapter input half + head); the KV cache and activations are not counted.
//   TFLOP/s       prefill and batch decode: 2 · weights touched · tokens / time (GEMMs only)
//
// Without a CUDA device every benchmark reports "no CUDA device" and the binary exits 0.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "muninn/cuda.cuh"
#include "muninn/muninn.hpp"
#include "cuda_bench_util.cuh"
#include "cuda_random_weights.cuh"

namespace {

using namespace muninn;
using i64 = std::int64_t;
using bench_model = model<cuda_backend, bf16>;

using muninn_bench::device;
using muninn_bench::skip_without_device;
using muninn_bench::timed_iterations;

// ------------------------------------------------------------------------------------ models

huginn_config huginn_shape(i64 h, i64 heads, i64 head_dim, i64 inter, const char* name) {
  huginn_config c;
  c.n_embd = h;
  c.n_heads = heads;
  c.n_kv_heads = heads;
  c.head_dim = head_dim;
  c.intermediate_size = inter;
  c.vocab_size = 65536;
  c.n_layers_in_prelude = 2;
  c.n_layers_in_recurrent_block = 4;
  c.n_layers_in_coda = 2;
  c.mean_recurrence = 32;
  c.block_size = 4096;
  c.rope_base = 50000.0f;
  c.source = name;
  return c;
}

/// Weights a token reads at r recurrences, in parameters (see the file comment).
double params_per_token(const model_config& c, i64 r) {
  const double h = double(c.n_embd), L = muninn_bench::layer_params(c);
  return double(c.n_layers_in_prelude + c.n_layers_in_coda) * L +
         double(r) * (double(c.n_layers_in_recurrent_block) * L + h * h) + h * h + double(c.vocab_size) * h;
}

struct bench_state {
  cuda_backend be;
  std::unique_ptr<bench_model> small, big;
};

/// Built on first use (so a --benchmark_filter run builds only what it needs) and released in
/// main before the CUDA runtime shuts down.
std::unique_ptr<bench_state> g_state;

const cuda_backend& backend() {
  if (!g_state) {
    g_state = std::make_unique<bench_state>();
    g_state->be = cuda_backend::create(0);
  }
  return g_state->be;
}

const bench_model& get_model(bool big) {
  const cuda_backend& be = backend();
  auto& slot = big ? g_state->big : g_state->small;
  if (!slot) {
    const huginn_config cfg = big ? huginn_shape(5280, 55, 96, 17920, "huginn-3.5B (random bf16 weights)")
                                 : huginn_shape(1024, 16, 64, 3456, "small-h1024 (random bf16 weights)");
    slot = std::make_unique<bench_model>(
        be, cfg, muninn_bench::device_random_huginn_weights<bf16, block::sandwich>(be, cfg, big ? 35 : 1));
  }
  return *slot;
}

/// Zero initial state at r recurrences: the options every benchmark here runs with.
run_options zero_state(i64 r) {
  run_options o;
  o.init = state_init::zero{};
  o.steps = r;
  return o;
}

/// tokens/s and TFLOP/s (2 · weights touched per token at r recurrences) of `tokens` in `seconds`.
void set_throughput(benchmark::State& st, const model_config& c, i64 r, double tokens, double seconds) {
  const double tps = tokens / seconds;
  st.counters["tokens/s"] = tps;
  st.counters["TFLOP/s"] = tps * 2.0 * params_per_token(c, r) * 1e-12;
}

std::vector<std::int32_t> some_ids(i64 n, i64 vocab, i64 salt) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) ids[std::size_t(i)] = std::int32_t((i * 7919 + salt * 104729) % vocab);
  return ids;
}

// -------------------------------------------------------------------------------- benchmarks

constexpr i64 kPrompt = 64;

/// Batch-1 decode at r steps: one token per iteration after a kPrompt-token prompt.
void bm_decode(benchmark::State& st, bool big, i64 r) {
  if (skip_without_device(st)) return;
  const bench_model& m = get_model(big);
  const cuda_backend& be = backend();
  const model_config& c = m.config();
  const run_options o = zero_state(r);
  const i64 warm = 2;
  auto ctx = m.make_context(kPrompt + warm + st.max_iterations + 1, r);
  m.forward(ctx, some_ids(kPrompt, c.vocab_size, 1), o, logits_for::last);
  for (i64 i = 0; i < warm; ++i) m.forward(ctx, {std::int32_t(i + 3)}, o, logits_for::last);
  i64 t = 0;
  std::int32_t tok = 0;
  const double total = timed_iterations(
      st, be, [&] { tok = std::int32_t((t++ * 31 + 5) % c.vocab_size); },
      [&] { benchmark::DoNotOptimize(m.forward(ctx, {tok}, o, logits_for::last)); });
  const double tps = double(st.iterations()) / total;
  const double bytes = params_per_token(c, r) * sizeof(bf16);
  st.counters["tokens/s"] = tps;
  st.counters["weight_GB/s"] = tps * bytes * 1e-9;
  if (device().peak_bytes_per_s > 0) st.counters["%ceiling"] = 100.0 * tps / (device().peak_bytes_per_s / bytes);
  st.SetLabel(std::string(c.source) + ", ctx " + std::to_string(kPrompt) + "+");
}

/// A 1024-token prompt in one chunk at r = 32.
void bm_prefill(benchmark::State& st, bool big, i64 n, i64 r) {
  if (skip_without_device(st)) return;
  const bench_model& m = get_model(big);
  const cuda_backend& be = backend();
  const model_config& c = m.config();
  const run_options o = zero_state(r);
  context_limits lim;
  lim.max_tokens = n;
  lim.max_steps = r;
  lim.max_chunk = n;
  auto ctx = m.make_context(lim);
  const auto ids = some_ids(n, c.vocab_size, 2);
  ctx.reset();
  m.forward(ctx, ids, o, logits_for::last);  // warm-up: cuBLAS heuristics, workspace growth
  const double total = timed_iterations(
      st, be, [&] { ctx.reset(); }, [&] { benchmark::DoNotOptimize(m.forward(ctx, ids, o, logits_for::last)); });
  set_throughput(st, c, r, double(st.iterations()) * double(n), total);
  st.SetLabel(c.source);
}

/// One decode step of `batch` sequences stacked into one forward_batch call.
void bm_batch_decode(benchmark::State& st, bool big, i64 batch, i64 r) {
  if (skip_without_device(st)) return;
  const bench_model& m = get_model(big);
  const cuda_backend& be = backend();
  const model_config& c = m.config();
  const run_options o = zero_state(r);
  const i64 prompt = 32, warm = 1;
  std::vector<bench_model::context_type> ctxs;
  std::vector<bench_model::context_type*> ptrs;
  std::vector<std::vector<std::int32_t>> prompts;
  for (i64 b = 0; b < batch; ++b) {
    context_limits lim;
    lim.max_tokens = prompt + warm + st.max_iterations + 1;
    lim.max_steps = r;
    lim.max_chunk = 1;  // the shared workspace below does the work
    ctxs.push_back(m.make_context(lim));
    prompts.push_back(some_ids(prompt, c.vocab_size, 10 + b));
  }
  for (auto& x : ctxs) ptrs.push_back(&x);
  auto ws = m.make_workspace(batch * prompt);
  m.forward_batch(ws, ptrs, prompts, o, logits_for::last);
  std::vector<std::vector<std::int32_t>> step(std::size_t(batch), std::vector<std::int32_t>(1, 7));
  for (i64 i = 0; i < warm; ++i) m.forward_batch(ws, ptrs, step, o, logits_for::last);
  i64 t = 0;
  const auto next_tokens = [&] {
    for (i64 b = 0; b < batch; ++b) step[std::size_t(b)][0] = std::int32_t((t * 131 + b * 17 + 3) % c.vocab_size);
    ++t;
  };
  const double total = timed_iterations(st, be, next_tokens, [&] {
    benchmark::DoNotOptimize(m.forward_batch(ws, ptrs, step, o, logits_for::last));
  });
  set_throughput(st, c, r, double(st.iterations()) * double(batch), total);
  st.SetLabel(std::string(c.source) + ", r " + std::to_string(r));
}

void register_all() {
  struct model_case {
    bool big;
    const char* name;
    i64 decode_iters, prefill_iters, batch_iters;
  };
  // Iteration counts keep each benchmark to about a second on an H100 (3.5B at r = 32: ~35 ms
  // per decode token, ~0.3 s per 1024-token prefill).
  const model_case cases[] = {{false, "small-h1024", 64, 5, 16}, {true, "huginn-3.5B", 16, 3, 8}};
  for (const auto& mc : cases) {
    for (i64 r : {4, 8, 32}) {
      const std::string name = std::string("decode/") + mc.name + "/r:" + std::to_string(r);
      benchmark::RegisterBenchmark(name.c_str(), [mc, r](benchmark::State& st) { bm_decode(st, mc.big, r); })
          ->Iterations(mc.decode_iters)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
    const std::string pf = std::string("prefill/") + mc.name + "/n:1024/r:32";
    benchmark::RegisterBenchmark(pf.c_str(), [mc](benchmark::State& st) { bm_prefill(st, mc.big, 1024, 32); })
        ->Iterations(mc.prefill_iters)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    for (i64 b : {1, 8, 32}) {
      const std::string name = std::string("batch_decode/") + mc.name + "/r:32/B:" + std::to_string(b);
      benchmark::RegisterBenchmark(name.c_str(), [mc, b](benchmark::State& st) { bm_batch_decode(st, mc.big, b, 32); })
          ->Iterations(mc.batch_iters)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  muninn_bench::add_device_context();
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_state.reset();  // free device memory and the stream while the runtime is still up
  return 0;
}
