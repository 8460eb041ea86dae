// The other families on the GPU in bf16, on the work the host benchmarks time (bench_host_llama,
// bench_host_mor, bench_host_calm, bench_host_trm), so a host/GPU ratio needs no new definition;
// plus a Llama at Llama-3.2-1B's shape, large enough for batch-1 decode to meet the weight-bandwidth
// limit rather than launch overhead. Random weights (drawn on the device, or written once as a
// checkpoint under $TMPDIR and read through the real loader, as the host benchmarks do).
//
//   llama/<shape>/prefill:n     one n-token prompt on an empty cache (CUDA events)
//   llama/<shape>/decode        one token after a 128-token prompt (CUDA events); weight_GB/s and
//                               %ceiling as bench_cuda_model: bytes per token = 2 · (layers + head)
//   mor/vanilla-32L/sequence_wise, mor/mor-3x10/{sequence_wise,depth_wise}
//                               16 prompts of 8 tokens, 16 greedy tokens each (bench_host_mor)
//   calm/calm-m/step/N:n        one CALM step (K = 4 tokens) with n head samples (bench_host_calm)
//   trm/sudoku/<variant>/B:n    one supervision step for n puzzles (bench_host_trm)
//
// Iterations are fixed so the binary's time is known ahead: the GPU run (tools/cuda_run.sh) has
// a budget. Without a CUDA device every benchmark reports "no CUDA device" and the binary exits 0.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cuda_bench_util.cuh"
#include "cuda_random_weights.cuh"
#include "muninn/cuda.cuh"
#include "muninn/families/calm/random_checkpoint.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/families/trm/model.hpp"
#include "muninn/families/trm/random_checkpoint.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/calm_generate.hpp"
#include "muninn/runtime/depthwise_batching.hpp"
#include "smollm_shape.hpp"
#include "trm_sudoku_shape.hpp"

namespace {

using namespace muninn;
using i64 = std::int64_t;
using llama_bf16 = model<cuda_backend, bf16, llama_arch>;
using mor_bf16 = model<cuda_backend, bf16, mor_expert_arch>;
using calm_bf16 = calm_model<cuda_backend, bf16>;
using trm_bf16 = trm_model<cuda_backend, bf16>;

using muninn_bench::device;
using muninn_bench::skip_without_device;
using muninn_bench::timed_iterations;

/// Every model the benchmarks build, on first use (so a --benchmark_filter run builds only what it
/// needs), released in main while the CUDA runtime is still up.
struct bench_state {
  cuda_backend be = cuda_backend::create(0);
  std::unique_ptr<llama_bf16> smollm, llama_1b, vanilla;
  std::unique_ptr<mor_bf16> mor;
  std::unique_ptr<calm_bf16> calm;
  std::unique_ptr<trm_bf16> trm_att, trm_mlp;
};
std::unique_ptr<bench_state> g_state;

bench_state& state() {
  if (!g_state) g_state = std::make_unique<bench_state>();
  return *g_state;
}

const cuda_backend& backend() { return state().be; }

std::string tmp_dir(const char* name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/" + name;
}

std::vector<std::int32_t> some_ids(i64 n, i64 vocab, i64 salt) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) ids[std::size_t(i)] = std::int32_t((i * 7919 + salt * 104729 + 13) % vocab);
  return ids;
}

// ---------------------------------------------------------------------------------- Llama

/// Llama-3.2-1B's shape: hidden 2048, 32 heads / 8 KV heads of 64, MLP 8192, 16 layers, vocab
/// 128256, tied embeddings, RoPE θ 500000.
llama_config llama_1b_shape() {
  llama_config c = smollm_135m_shape(16, "llama-1b (random bf16 weights)");
  c.n_embd = 2048;
  c.n_heads = 32;
  c.n_kv_heads = 8;
  c.head_dim = 64;
  c.intermediate_size = 8192;
  c.vocab_size = 128256;
  c.block_size = 4096;
  c.rope_base = 500000.0f;
  return c;
}

const llama_bf16& llama(bool big) {
  auto& slot = big ? state().llama_1b : state().smollm;
  if (!slot) {
    const llama_config cfg = big ? llama_1b_shape() : smollm_135m_shape(30, "smollm-135m (random bf16 weights)");
    slot = std::make_unique<llama_bf16>(
        backend(), cfg, muninn_bench::device_random_weights<bf16, block::pre_norm>(backend(), cfg, big ? 9 : 7));
  }
  return *slot;
}

/// Weights one decode token reads: every layer and the (tied) head; the embedding row is noise.
double llama_params_per_token(const model_config& c) {
  return double(c.n_layers_in_prelude) * muninn_bench::layer_params(c) + double(c.vocab_size) * double(c.n_embd);
}

void bm_llama_prefill(benchmark::State& st, bool big, i64 n) {
  if (skip_without_device(st)) return;
  const llama_bf16& m = llama(big);
  const auto ids = some_ids(n, m.config().vocab_size, 1);
  auto ctx = m.make_context(n);
  m.forward(ctx, ids, {}, logits_for::last);  // warm-up: cuBLAS heuristics, workspace growth
  const double total = timed_iterations(st, backend(), [&] { ctx.reset(); },
                                        [&] { benchmark::DoNotOptimize(m.forward(ctx, ids, {}, logits_for::last)); });
  const double tps = double(st.iterations()) * double(n) / total;
  st.counters["tokens/s"] = tps;
  st.counters["TFLOP/s"] = tps * 2.0 * llama_params_per_token(m.config()) * 1e-12;
  st.SetLabel(m.config().source);
}

void bm_llama_decode(benchmark::State& st, bool big) {
  if (skip_without_device(st)) return;
  const llama_bf16& m = llama(big);
  const i64 prompt = 128, V = m.config().vocab_size;
  auto ctx = m.make_context(prompt + 2 + st.max_iterations);
  m.forward(ctx, some_ids(prompt, V, 2), {}, logits_for::last);
  m.forward(ctx, {5}, {}, logits_for::last);  // warm-up of the single-token path
  i64 t = 0;
  std::int32_t tok = 0;
  const double total = timed_iterations(
      st, backend(), [&] { tok = std::int32_t((t++ * 31 + 5) % V); },
      [&] { benchmark::DoNotOptimize(m.forward(ctx, {tok}, {}, logits_for::last)); });
  const double tps = double(st.iterations()) / total;
  const double bytes = llama_params_per_token(m.config()) * sizeof(bf16);
  st.counters["tokens/s"] = tps;
  st.counters["weight_GB/s"] = tps * bytes * 1e-9;
  if (device().peak_bytes_per_s > 0) st.counters["%ceiling"] = 100.0 * tps * bytes / device().peak_bytes_per_s;
  st.SetLabel(m.config().source);
}

// -------------------------------------------------------------------- Mixture-of-Recursions

constexpr i64 kMorRows = 16, kMorPrompt = 8, kMorNew = 16, kMorBlock = 10, kMorRecursions = 3;

const llama_bf16& mor_vanilla() {
  auto& slot = state().vanilla;
  if (!slot) {
    const llama_config cfg = smollm_135m_shape(2 + kMorBlock * kMorRecursions, "vanilla 32 layers (random bf16 weights)");
    slot = std::make_unique<llama_bf16>(
        backend(), cfg, muninn_bench::device_random_weights<bf16, block::pre_norm>(backend(), cfg, 3));
  }
  return *slot;
}

/// bench_host_mor's MoR: Middle-Cycle, 3 recursions of a 10-layer block between an unshared first
/// and last layer, expert choice with random linear routers.
const mor_bf16& mor() {
  auto& slot = state().mor;
  if (!slot) {
    mor_config cfg = smollm_135m_shape<mor_config>(1, "mor 3x10 (random bf16 weights)");
    cfg.n_layers_in_recurrent_block = kMorBlock;
    cfg.n_layers_in_coda = 1;
    cfg.mean_recurrence = kMorRecursions;
    cfg.mor.recursions = kMorRecursions;
    mor_weights<cuda_backend, bf16> w(muninn_bench::device_random_weights<bf16, block::pre_norm>(backend(), cfg, 3));
    for (i64 r = 0; r < kMorRecursions; ++r) {
      std::vector<float> z(std::size_t(cfg.n_embd));
      fill_truncated_normal(host_backend{}, z.data(), cfg.n_embd, 100 + std::uint64_t(r), 0, 1.0f);
      router_weights<cuda_backend, bf16> rw;
      rw.w1 = backend().alloc<bf16>(z.size());
      engine::upload_floats(backend(), rw.w1.data(), z.data(), i64(z.size()));
      w.routers.push_back(std::move(rw));
    }
    slot = std::make_unique<mor_bf16>(backend(), cfg, std::move(w));
  }
  return *slot;
}

std::vector<std::vector<std::int32_t>> mor_prompts() {
  std::vector<std::vector<std::int32_t>> p;
  for (i64 r = 0; r < kMorRows; ++r) p.push_back(some_ids(kMorPrompt, 49152, r));
  return p;
}

template <class Run>
void bm_generated(benchmark::State& st, Run&& run) {
  if (skip_without_device(st)) return;
  generate_options g;
  g.max_new_tokens = kMorNew;
  run(g);  // warm-up
  double tokens = 0;
  for (auto _ : st)
    for (const auto& r : run(g)) tokens += double(r.tokens.size());
  st.counters["tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
}

// --------------------------------------------------------------------------------- CALM

calm_bf16& calm() {
  auto& slot = state().calm;
  if (!slot) {
    const std::string dir = tmp_dir("muninn_bench_calm_m");
    if (!std::filesystem::exists(dir + "/model.safetensors")) write_random_calm(dir, calm_shape{}, 11, dtype::bf16);
    slot = std::make_unique<calm_bf16>(calm_bf16::load(dir, dir + "/ae", backend()));
  }
  return *slot;
}

/// One CALM step as bench_host_calm's BM_CalmStep: the last chunk through the backbone, n head
/// samples, decode, choose; 64 tokens of context.
void bm_calm_step(benchmark::State& st, i64 n) {
  if (skip_without_device(st)) return;
  calm_bf16& m = calm();
  const i64 chunks = 16, K = m.patch_size();
  auto ctx = m.make_context(chunks + 1);
  std::vector<float> h = m.hidden(ctx, some_ids(chunks * K, 128000, 3), logits_for::last);
  calm_generate_options o;
  o.temperature = n == 1 ? 1.0 : 0.5;
  o.num_samples = n;
  for (auto _ : st) {
    i64 draws = 0;
    const std::vector<std::int32_t> chunk = detail::next_calm_chunk(m, h, chunks - 1, o, draws);
    ctx.truncate(chunks);
    h = m.hidden(ctx, chunk, logits_for::last);
  }
  st.counters["tokens/s"] = benchmark::Counter(double(K), benchmark::Counter::kIsIterationInvariantRate);
}

// ---------------------------------------------------------------------------------- TRM

trm_bf16& trm(bool mlp_t) {
  auto& slot = mlp_t ? state().trm_mlp : state().trm_att;
  if (!slot) {
    const std::string dir = tmp_dir(mlp_t ? "muninn_bench_cuda_trm_mlpt" : "muninn_bench_cuda_trm_att");
    if (!std::filesystem::exists(dir + "/step_1")) write_random_trm(dir, trm_sudoku_shape(mlp_t, "bfloat16"), 7);
    slot = std::make_unique<trm_bf16>(trm_bf16::load(dir, {}, backend()));
  }
  return *slot;
}

void bm_trm_step(benchmark::State& st, bool mlp_t, i64 batch) {
  if (skip_without_device(st)) return;
  trm_bf16& m = trm(mlp_t);
  std::vector<std::int32_t> inputs(std::size_t(batch * 81)), ids(std::size_t(batch), 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i] = std::int32_t(1 + (i * 7) % 10);
  benchmark::DoNotOptimize(m.solve(inputs, ids, trm_halting::fixed{1}).preds.data());  // warm-up
  for (auto _ : st) benchmark::DoNotOptimize(m.solve(inputs, ids, trm_halting::fixed{1}).preds.data());
  st.counters["puzzles/s"] = benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(mlp_t ? "mlp_t" : "attention");
}

// ------------------------------------------------------------------------------ registry

template <class F>
void add(const std::string& name, i64 iterations, bool manual_time, F&& f) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), std::forward<F>(f))->Iterations(iterations)->Unit(benchmark::kMillisecond);
  if (manual_time) b->UseManualTime();
  else b->UseRealTime();
}

void register_all() {
  // Iteration counts keep each benchmark to about a second or less on an H100.
  add("llama/smollm-135m/prefill:128", 20, true, [](benchmark::State& st) { bm_llama_prefill(st, false, 128); });
  add("llama/smollm-135m/decode", 128, true, [](benchmark::State& st) { bm_llama_decode(st, false); });
  add("llama/llama-1b/prefill:1024", 10, true, [](benchmark::State& st) { bm_llama_prefill(st, true, 1024); });
  add("llama/llama-1b/decode", 128, true, [](benchmark::State& st) { bm_llama_decode(st, true); });
  add("mor/vanilla-32L/sequence_wise", 3, false, [](benchmark::State& st) {
    bm_generated(st, [](const generate_options& g) { return generate_batch(mor_vanilla(), mor_prompts(), g); });
  });
  add("mor/mor-3x10/sequence_wise", 3, false, [](benchmark::State& st) {
    bm_generated(st, [](const generate_options& g) { return generate_batch(mor(), mor_prompts(), g); });
  });
  add("mor/mor-3x10/depth_wise", 3, false, [](benchmark::State& st) {
    bm_generated(st, [](const generate_options& g) {
      depthwise_options d;
      d.max_batch = kMorRows;
      return generate_depthwise(mor(), mor_prompts(), g, d);
    });
  });
  for (const i64 n : {1, 200})
    add("calm/calm-m/step/N:" + std::to_string(n), 32, false, [n](benchmark::State& st) { bm_calm_step(st, n); });
  for (const bool mlp_t : {false, true})
    for (const i64 b : {1, 16, 256})
      add(std::string("trm/sudoku/") + (mlp_t ? "mlp_t" : "attention") + "/B:" + std::to_string(b), 8, false,
          [mlp_t, b](benchmark::State& st) { bm_trm_step(st, mlp_t, b); });
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  muninn_bench::add_device_context();
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_state.reset();  // free device memory while the runtime is still up
  return 0;
}
