// Google Benchmark for the CUDA ops, timed with CUDA events (manual time).
//
// Each benchmark launches its op `reps` times between two events (reps chosen so that one
// measurement lasts about 200 µs, which hides the event overhead for decode-sized ops) and
// reports the time per op. Counters:
//   GB/s     bytes the op must move (inputs read once + outputs written) / time
//   %BW      GB/s as a share of the device's peak DRAM bandwidth
//   TFLOP/s  useful floating-point operations / time (GEMM: 2·M·N·K; attention: 4·D per
//            visible (query, key) pair per head)
//   %FLOP    TFLOP/s as a share of the dense peak for the dtype (fp32 CUDA cores, bf16 tensor
//            cores); an estimate from the SM count, clock and compute capability
// Working sets of the bandwidth benchmarks exceed the 50 MB L2 of an H100 unless they model a
// decode step, whose real working set is small too.
//
// Without a CUDA device every benchmark reports "no CUDA device" and the binary exits 0.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "muninn/cuda.cuh"
#include "muninn/ops/rope.hpp"
#include "cuda_bench_util.cuh"

namespace {

using namespace muninn;
using i64 = std::int64_t;

using muninn_bench::device;
using muninn_bench::skip_without_device;

/// Dense peak FLOP/s of the device for the %FLOP counters; an estimate from the SM count, clock and
/// compute capability (0 without a device).
struct flop_peaks {
  double f32 = 0.0;
  double bf16 = 0.0;
};

const flop_peaks& peaks() {
  static const flop_peaks f = [] {
    flop_peaks r;
    const muninn_bench::cuda_device& d = device();
    if (!d.ok) return r;
    int clock_khz = 0;
    (void)cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, d.index);
    (void)cudaGetLastError();
    const double sm_hz = double(d.prop.multiProcessorCount) * double(clock_khz) * 1e3;
    // FP32 lanes per SM: 128 on sm_86+/sm_90, 64 on sm_80. Dense bf16 tensor-core FLOP per SM
    // per clock: 4096 on sm_90 (989 TFLOP/s on an H100 SXM), 2048 on sm_80 (312 on an A100).
    const bool hopper = d.prop.major >= 9, a100 = d.prop.major == 8 && d.prop.minor == 0;
    r.f32 = sm_hz * 2.0 * (a100 ? 64.0 : 128.0);
    r.bf16 = sm_hz * (hopper ? 4096.0 : a100 ? 2048.0 : 1024.0);
    return r;
  }();
  return f;
}

const cuda_backend& backend() {
  static const cuda_backend be = cuda_backend::create();
  return be;
}

template <class T>
cuda_buffer<T> random_device(const cuda_backend& be, std::size_t n, std::uint32_t seed, float lo = -1.0f,
                             float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<T> h(n);
  for (auto& x : h) x = from_float<T>(d(gen));
  auto b = be.alloc<T>(n);
  be.upload(b.data(), h.data(), n);
  return b;
}

template <class T>
double peak_flops() {
  return std::is_same_v<T, float> ? peaks().f32 : peaks().bf16;
}

/// Times `op` with CUDA events and sets the manual time and the throughput counters.
template <class F>
void run_timed(benchmark::State& st, F&& op, double bytes, double flops, double flop_peak) {
  const cuda_backend& be = backend();
  muninn_bench::event_timer timer;
  const auto measure = [&](int reps) {
    const auto ops = [&] {
      for (int r = 0; r < reps; ++r) op();
    };
    return timer.seconds(be, ops) / reps;
  };
  measure(1);  // warm-up: lazy module loading, workspace growth, cuBLAS heuristics
  const double once = measure(1);
  const int reps = int(std::clamp(200e-6 / std::max(once, 1e-9), 1.0, 1000.0));
  double total = 0.0;
  std::int64_t n = 0;
  for (auto _ : st) {
    const double t = measure(reps);
    st.SetIterationTime(t);
    total += t;
    ++n;
  }
  if (n == 0 || total <= 0.0) return;
  const double per_op = total / double(n);
  if (bytes > 0) {
    st.counters["GB/s"] = bytes / per_op / 1e9;
    if (device().peak_bytes_per_s > 0) st.counters["%BW"] = 100.0 * bytes / per_op / device().peak_bytes_per_s;
  }
  if (flops > 0) {
    st.counters["TFLOP/s"] = flops / per_op / 1e12;
    if (flop_peak > 0) st.counters["%FLOP"] = 100.0 * flops / per_op / flop_peak;
  }
  st.counters["reps"] = reps;
}

// ------------------------------------------------------------------------------------ ops

// Args: M, N, K. Decode GEMV shapes of Huginn-3.5B (h 5280, Wqkv 15840, MLP 2·17920, vocab
// 65536), small batches and a 1024-token prefill.
template <class T>
void BM_gemm_nt(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 M = st.range(0), N = st.range(1), K = st.range(2);
  const auto& be = backend();
  auto A = random_device<T>(be, std::size_t(M * K), 1), B = random_device<T>(be, std::size_t(N * K), 2);
  auto C = be.alloc<T>(std::size_t(M * N));
  run_timed(
      st, [&] { gemm_nt(be, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, C.data(), N); },
      double(M * K + N * K + M * N) * sizeof(T), 2.0 * double(M) * double(N) * double(K), peak_flops<T>());
}
void gemm_args(benchmark::internal::Benchmark* b) {
  for (i64 m : {1, 8, 32}) {
    b->Args({m, 15840, 5280})->Args({m, 5280, 5280})->Args({m, 35840, 5280})->Args({m, 5280, 17920});
  }
  b->Args({1, 65536, 5280});
  b->Args({1024, 15840, 5280})->Args({1024, 35840, 5280})->Args({1024, 5280, 17920});
}
BENCHMARK_TEMPLATE(BM_gemm_nt, bf16)->Apply(gemm_args)->ArgNames({"M", "N", "K"})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_gemm_nt, float)
    ->Args({1, 15840, 5280})
    ->Args({1024, 5280, 5280})
    ->ArgNames({"M", "N", "K"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// Args: rows, cols.
template <class T>
void BM_rmsnorm(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 rows = st.range(0), cols = st.range(1);
  const auto& be = backend();
  auto x = random_device<T>(be, std::size_t(rows * cols), 3), w = random_device<T>(be, std::size_t(cols), 4);
  auto y = be.alloc<T>(std::size_t(rows * cols));
  run_timed(
      st, [&] { rmsnorm(be, x.data(), w.data(), y.data(), rows, cols, 1e-6f); },
      double(2 * rows * cols + cols) * sizeof(T), 0.0, 0.0);
}
BENCHMARK_TEMPLATE(BM_rmsnorm, bf16)->Args({1, 5280})->Args({4096, 5280})->ArgNames({"rows", "cols"})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_rmsnorm, float)->Args({4096, 5280})->ArgNames({"rows", "cols"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: rows, cols. y aliases b, as in the sandwich block.
template <class T>
void BM_add_rmsnorm(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 rows = st.range(0), cols = st.range(1);
  const auto& be = backend();
  auto a = random_device<T>(be, std::size_t(rows * cols), 5), b = random_device<T>(be, std::size_t(rows * cols), 6);
  auto w = random_device<T>(be, std::size_t(cols), 7);
  run_timed(
      st, [&] { add_rmsnorm(be, a.data(), b.data(), w.data(), b.data(), rows, cols, 1e-6f); },
      double(3 * rows * cols + cols) * sizeof(T), 0.0, 0.0);
}
BENCHMARK_TEMPLATE(BM_add_rmsnorm, bf16)->Args({1, 5280})->Args({4096, 5280})->ArgNames({"rows", "cols"})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_add_rmsnorm, float)->Args({4096, 5280})->ArgNames({"rows", "cols"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: n.
template <class T>
void BM_add(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 n = st.range(0);
  const auto& be = backend();
  auto a = random_device<T>(be, std::size_t(n), 8), b = random_device<T>(be, std::size_t(n), 9);
  auto y = be.alloc<T>(std::size_t(n));
  run_timed(st, [&] { add(be, a.data(), b.data(), y.data(), n); }, 3.0 * double(n) * sizeof(T), 0.0, 0.0);
}
BENCHMARK_TEMPLATE(BM_add, bf16)->Arg(5280)->Arg(1 << 26)->ArgNames({"n"})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_add, float)->Arg(1 << 26)->ArgNames({"n"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: n.
template <class T>
void BM_scale(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 n = st.range(0);
  const auto& be = backend();
  auto x = random_device<T>(be, std::size_t(n), 10);
  run_timed(st, [&] { scale(be, x.data(), 1.0f, n); }, 2.0 * double(n) * sizeof(T), 0.0, 0.0);
}
BENCHMARK_TEMPLATE(BM_scale, bf16)->Arg(1 << 26)->ArgNames({"n"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: rows, inter.
template <class T>
void BM_silu_mul(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 rows = st.range(0), inter = st.range(1);
  const auto& be = backend();
  auto in = random_device<T>(be, std::size_t(rows * 2 * inter), 11, -4.0f, 4.0f);
  auto out = be.alloc<T>(std::size_t(rows * inter));
  run_timed(
      st, [&] { silu_mul(be, in.data(), 2 * inter, out.data(), inter, rows, inter); },
      3.0 * double(rows * inter) * sizeof(T), 0.0, 0.0);
}
BENCHMARK_TEMPLATE(BM_silu_mul, bf16)->Args({1, 17920})->Args({1024, 17920})->ArgNames({"rows", "inter"})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_silu_mul, float)->Args({1024, 17920})->ArgNames({"rows", "inter"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: rows. Huginn's q: 55 heads of 96 with qk_bias, in a packed qkv row of 3·5280.
template <class T>
void BM_rope(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 rows = st.range(0), H = 55, D = 96, ld = 3 * H * D;
  const auto& be = backend();
  auto x = random_device<T>(be, std::size_t(rows * ld), 12), bias = random_device<T>(be, std::size_t(H * D), 13);
  const auto table = make_rope_table(D, std::max<i64>(rows, 1), 50000.0f);
  auto dt = be.alloc<float>(table.size());
  be.upload(dt.data(), table.data(), table.size());
  run_timed(
      st, [&] { rope_interleaved(be, x.data(), rows, ld, H, D, bias.data(), dt.data(), 0); },
      double(2 * rows * H * D) * sizeof(T) + double(rows * D) * sizeof(float), 0.0, 0.0);
}
BENCHMARK_TEMPLATE(BM_rope, bf16)->Arg(1)->Arg(1024)->ArgNames({"rows"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: nq, nkv. Huginn: 55 heads of 96, no GQA.
template <class T>
void BM_attention(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 nq = st.range(0), nkv = st.range(1), H = 55, D = 96, w = H * D;
  const auto& be = backend();
  auto q = random_device<T>(be, std::size_t(nq * w), 14), k = random_device<T>(be, std::size_t(nkv * w), 15);
  auto v = random_device<T>(be, std::size_t(nkv * w), 16);
  auto out = be.alloc<T>(std::size_t(nq * w));
  // Visible (query, key) pairs under the bottom-right causal mask.
  const double pairs = double(nq) * double(nkv - nq) + double(nq) * double(nq + 1) / 2.0;
  run_timed(
      st,
      [&] {
        attention(be, q.data(), w, k.data(), v.data(), w, out.data(), w, nq, nkv, H, H, D,
                  1.0f / std::sqrt(float(D)));
      },
      double(2 * nkv * w + 2 * nq * w) * sizeof(T), 4.0 * double(D) * double(H) * pairs, peaks().f32);
}
BENCHMARK_TEMPLATE(BM_attention, bf16)
    ->Args({1, 1024})
    ->Args({1, 4096})
    ->Args({8, 4096})
    ->Args({1024, 1024})
    ->ArgNames({"nq", "nkv"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_attention, float)->Args({1, 4096})->Args({1024, 1024})->ArgNames({"nq", "nkv"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: rows, cols (a vocabulary row).
template <class T>
void BM_log_softmax(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 rows = st.range(0), cols = st.range(1);
  const auto& be = backend();
  auto x = random_device<T>(be, std::size_t(rows * cols), 17, -10.0f, 10.0f);
  auto y = be.alloc<float>(std::size_t(rows * cols));
  run_timed(
      st, [&] { log_softmax_rows(be, x.data(), y.data(), rows, cols); },
      double(rows * cols) * double(sizeof(T) + sizeof(float)), 0.0, 0.0);
}
BENCHMARK_TEMPLATE(BM_log_softmax, bf16)->Args({1, 65536})->Args({1024, 65536})->ArgNames({"rows", "cols"})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_log_softmax, float)->Args({1024, 65536})->ArgNames({"rows", "cols"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: rows, cols.
void BM_kl_div_rows(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 rows = st.range(0), cols = st.range(1);
  const auto& be = backend();
  auto a = random_device<float>(be, std::size_t(rows * cols), 18, -12.0f, -9.0f);
  auto b = random_device<float>(be, std::size_t(rows * cols), 19, -12.0f, -9.0f);
  auto out = be.alloc<float>(std::size_t(rows));
  run_timed(
      st, [&] { kl_div_rows(be, a.data(), b.data(), out.data(), rows, cols); },
      double(2 * rows * cols + rows) * sizeof(float), 0.0, 0.0);
}
BENCHMARK(BM_kl_div_rows)->Args({1, 65536})->Args({256, 65536})->ArgNames({"rows", "cols"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: n. argmax includes the copy of the index to the host (it synchronises).
void BM_argmax(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 n = st.range(0);
  const auto& be = backend();
  auto x = random_device<float>(be, std::size_t(n), 20);
  run_timed(st, [&] { benchmark::DoNotOptimize(argmax(be, x.data(), n)); }, double(n) * sizeof(float), 0.0, 0.0);
}
BENCHMARK(BM_argmax)->Arg(65536)->Arg(1 << 24)->ArgNames({"n"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: n, k.
void BM_top_k(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 n = st.range(0), k = st.range(1);
  const auto& be = backend();
  auto x = random_device<float>(be, std::size_t(n), 21);
  auto vals = be.alloc<float>(std::size_t(k));
  auto idx = be.alloc<std::int32_t>(std::size_t(k));
  run_timed(st, [&] { top_k(be, x.data(), n, k, vals.data(), idx.data()); }, double(n) * sizeof(float), 0.0, 0.0);
}
BENCHMARK(BM_top_k)->Args({65536, 50})->ArgNames({"n", "k"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: tokens. Huginn: vocab 65536, h 5280, scale sqrt(h).
template <class T>
void BM_embedding(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 n = st.range(0), vocab = 65536, dim = 5280;
  const auto& be = backend();
  auto table = random_device<T>(be, std::size_t(vocab * dim), 22);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) ids[std::size_t(i)] = std::int32_t((i * 7919) % vocab);
  auto dids = be.alloc<std::int32_t>(ids.size());
  be.upload(dids.data(), ids.data(), ids.size());
  auto out = be.alloc<T>(std::size_t(n * dim));
  run_timed(
      st, [&] { embedding(be, table.data(), vocab, dim, dids.data(), n, 72.66f, out.data()); },
      2.0 * double(n * dim) * sizeof(T), 0.0, 0.0);
}
BENCHMARK_TEMPLATE(BM_embedding, bf16)->Arg(1)->Arg(1024)->ArgNames({"tokens"})->UseManualTime()->Unit(benchmark::kMicrosecond);

// Args: n. Bytes written only; the sampler runs in double precision.
template <class T>
void BM_fill_truncated_normal(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const i64 n = st.range(0);
  const auto& be = backend();
  auto x = be.alloc<T>(std::size_t(n));
  run_timed(st, [&] { fill_truncated_normal(be, x.data(), n, 7, 0, 0.6325f); }, double(n) * sizeof(T), 0.0, 0.0);
}
BENCHMARK_TEMPLATE(BM_fill_truncated_normal, bf16)->Arg(5280)->Arg(1 << 24)->ArgNames({"n"})->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  muninn_bench::add_device_context();
  if (device().ok) {
    benchmark::AddCustomContext("peak_fp32_TFLOP/s", std::to_string(peaks().f32 / 1e12));
    benchmark::AddCustomContext("peak_bf16_TFLOP/s", std::to_string(peaks().bf16 / 1e12));
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
