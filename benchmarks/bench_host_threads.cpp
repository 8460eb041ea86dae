// The host backend's threads, idle and with other processes on the machine.
//
// Every benchmark takes `threads` (the host_backend's thread count; 0: the default, which
// MUNINN_NUM_THREADS sets) and `busy`: the number of
// competing processes, each spinning on a core for the whole measurement (forked here, killed
// after), which is what a shared workstation, CI runner or server looks like. Wall time.
//
// BM_ForkJoin:      one parallel_for of `threads` empty chunks: the pool's fork/join cost, with the
//                   workers still spinning from the previous call (gap 0) or asleep (gap 2 ms).
// BM_LlamaPrefill:  the SmolLM-135M-shaped random Llama (benchmarks/smollm_shape.hpp), a
//                   128-token prompt in one call.
// BM_LlamaDecode:   16 greedy single-token calls after a 128-token prompt.
// BM_LlamaBatch:    16 sequences decoded together (forward_batch, one row each), 8 steps.
//
// tools/bench/threads_under_load.py runs these and every other benchmark and demo at one thread
// and at the default thread count, idle and loaded, and prints the ratios docs/performance.md
// reports.
#include <benchmark/benchmark.h>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"
#include "smollm_shape.hpp"

namespace {

using llama_model = muninn::model<muninn::host_backend, float, muninn::llama_arch>;
constexpr std::int64_t kPrompt = 128, kDecode = 16, kRows = 16, kBatchSteps = 8;

/// `n` child processes that spin until this object goes away.
class busy_processes {
 public:
  explicit busy_processes(std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        volatile std::uint64_t x = 0;
        for (;;) x = x + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
    if (n > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let them reach the CPU
  }
  ~busy_processes() {
    for (pid_t p : pids_) kill(p, SIGKILL);
    for (pid_t p : pids_) waitpid(p, nullptr, 0);
  }
  busy_processes(const busy_processes&) = delete;
  busy_processes& operator=(const busy_processes&) = delete;

 private:
  std::vector<pid_t> pids_;
};

muninn::host_backend backend_of(const benchmark::State& st) { return muninn::host_backend{int(st.range(0))}; }

const llama_model& model_at(int threads) {
  // One model per thread count (the backend, with its thread count, is part of the model).
  static std::vector<std::unique_ptr<llama_model>> models(8);
  auto& m = models[std::size_t(threads)];
  if (!m) {
    const muninn::host_backend be{threads};
    const auto cfg = smollm_135m_shape(30, "bench_host_threads");
    m = std::make_unique<llama_model>(be, cfg, muninn::make_random_weights<muninn::host_backend, float, muninn::block::pre_norm>(be, cfg, 7));
  }
  return *m;
}

std::vector<std::int32_t> prompt(std::int64_t n, std::int64_t salt = 0) {
  std::vector<std::int32_t> ids(std::size_t(n), 0);
  for (std::int64_t i = 0; i < n; ++i) ids[std::size_t(i)] = std::int32_t((i * 7919 + 13 + salt * 104729) % 49152);
  return ids;
}

void BM_ForkJoin(benchmark::State& st) {
  const auto be = backend_of(st);
  const busy_processes load(st.range(1));
  const auto gap = std::chrono::microseconds(st.range(2));
  std::vector<std::int64_t> sink(64, 0);
  for (auto _ : st) {
    if (gap.count()) {
      st.PauseTiming();
      std::this_thread::sleep_for(gap);
      st.ResumeTiming();
    }
    be.parallel_for(be.threads(), 1, [&](std::int64_t b, std::int64_t e) { sink[std::size_t(b) * 8] += e; });
  }
  benchmark::DoNotOptimize(sink);
}
BENCHMARK(BM_ForkJoin)->ArgNames({"threads", "busy", "gap_us"})
    ->Args({2, 0, 0})->Args({2, 0, 2000})->Args({2, 1, 0})->Args({2, 1, 2000})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_LlamaPrefill(benchmark::State& st) {
  const auto& m = model_at(int(st.range(0)));
  const auto ids = prompt(kPrompt);
  auto ctx = m.make_context(kPrompt);
  const busy_processes load(st.range(1));
  for (auto _ : st) {
    ctx.reset();
    benchmark::DoNotOptimize(m.forward(ctx, ids, {}, muninn::logits_for::last));
  }
  st.counters["tok_s"] = benchmark::Counter(double(kPrompt), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_LlamaDecode(benchmark::State& st) {
  const auto& m = model_at(int(st.range(0)));
  const auto ids = prompt(kPrompt);
  const std::int64_t V = m.config().vocab_size;
  auto ctx = m.make_context(kPrompt + kDecode);
  const busy_processes load(st.range(1));
  for (auto _ : st) {
    st.PauseTiming();
    ctx.reset();
    auto logits = m.forward(ctx, ids, {}, muninn::logits_for::last);
    st.ResumeTiming();
    for (std::int64_t t = 0; t < kDecode; ++t)
      logits = m.forward(ctx, {muninn::argmax_host(logits.data(), V)}, {}, muninn::logits_for::last);
    benchmark::DoNotOptimize(logits);
  }
  st.counters["tok_s"] = benchmark::Counter(double(kDecode), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_LlamaBatch(benchmark::State& st) {
  const auto& m = model_at(int(st.range(0)));
  const std::int64_t V = m.config().vocab_size;
  std::vector<decltype(m.make_context(1))> ctxs;
  for (std::int64_t r = 0; r < kRows; ++r) ctxs.push_back(m.make_context(8 + kBatchSteps));
  std::vector<decltype(ctxs)::value_type*> ptrs;
  for (auto& c : ctxs) ptrs.push_back(&c);
  auto ws = m.make_workspace(kRows * 8);
  const busy_processes load(st.range(1));
  for (auto _ : st) {
    st.PauseTiming();
    std::vector<std::vector<std::int32_t>> in;
    for (std::int64_t r = 0; r < kRows; ++r) {
      ctxs[std::size_t(r)].reset();
      in.push_back(prompt(8, r));
    }
    auto rows = m.forward_batch(ws, ptrs, in, {}, muninn::logits_for::last);
    st.ResumeTiming();
    for (std::int64_t s = 0; s < kBatchSteps; ++s) {
      for (std::int64_t r = 0; r < kRows; ++r) in[std::size_t(r)] = {muninn::argmax_host(rows[std::size_t(r)].data(), V)};
      rows = m.forward_batch(ws, ptrs, in, {}, muninn::logits_for::last);
    }
    benchmark::DoNotOptimize(rows);
  }
  st.counters["tok_s"] = benchmark::Counter(double(kRows * kBatchSteps), benchmark::Counter::kIsIterationInvariantRate);
}

void model_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"threads", "busy"});
  for (int busy : {0, 1})
    for (int t : {1, 2}) b->Args({t, busy});
  b->Args({0, 0});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_LlamaPrefill)->Apply(model_args);
BENCHMARK(BM_LlamaDecode)->Apply(model_args);
BENCHMARK(BM_LlamaBatch)->Apply(model_args);

}  // namespace

BENCHMARK_MAIN();
