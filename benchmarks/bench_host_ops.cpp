// Google Benchmark for the host ops.
//
// Throughput counters: "FLOP/s" = 2·M·N·K per GEMM; "bytes/s" = bytes of weight (GEMV) or of
// K/V cache (decode attention) or of activations (norms) read per iteration. The "threads"
// argument is the host_backend's thread count. Single-thread runs report the benchmark thread's
// CPU time (robust on a shared machine: time spent descheduled is not counted); multi-thread
// runs report wall time ("/real_time" in the name), as they must.
//
// Define MUNINN_BENCH_CBLAS (and link a CBLAS such as OpenBLAS) to add cblas_sgemm with the same
// shapes, and cblas_sgemv for the M = 1 shapes, for the own-GEMM-vs-BLAS comparison.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "muninn/ops/gemm_weight.hpp"
#include "muninn/ops/ops.hpp"

#if defined(MUNINN_BENCH_CBLAS)
#include <cblas.h>
#endif

namespace {

using i64 = std::int64_t;

std::vector<float> random_vec(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

muninn::host_backend backend_for(const benchmark::State& st, int arg) {
  return muninn::host_backend{int(st.range(arg))};
}

void set_gemm_counters(benchmark::State& st, i64 M, i64 N, i64 K) {
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * double(M) * double(N) * double(K),
                                             benchmark::Counter::kIsIterationInvariantRate);
  st.counters["weight_bytes/s"] =
      benchmark::Counter(4.0 * double(N) * double(K), benchmark::Counter::kIsIterationInvariantRate);
}

// Times gemm_nt on random fp32 A [M, K] and B [N, K] with backend `be`.
void time_gemm(benchmark::State& st, const muninn::host_backend& be, i64 M, i64 N, i64 K) {
  const auto A = random_vec(std::size_t(M * K), 1);
  const auto B = random_vec(std::size_t(N * K), 2);
  std::vector<float> C(std::size_t(M * N));
  for (auto _ : st) {
    muninn::gemm_nt(be, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, C.data(), N);
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  set_gemm_counters(st, M, N, K);
}

// Args: M, N, K, threads.
void BM_gemm_nt(benchmark::State& st) { time_gemm(st, backend_for(st, 3), st.range(0), st.range(1), st.range(2)); }

// The default kernels (mode 0) against the row-invariant ones (mode 1, host_backend::batch_invariant:
// one summation order for every row count, what continuous batching needs). Args: mode, M, N, K,
// threads.
void BM_gemm_batch_invariant(benchmark::State& st) {
  auto be = backend_for(st, 4);
  be.batch_invariant = st.range(0) == 1;
  time_gemm(st, be, st.range(1), st.range(2), st.range(3));
}

#if defined(MUNINN_BENCH_CBLAS)
// Same shapes through cblas_sgemm(RowMajor, NoTrans, Trans): C = A·Bᵀ with B stored [N, K].
void BM_cblas_sgemm(benchmark::State& st) {
  const i64 M = st.range(0), N = st.range(1), K = st.range(2);
#if defined(OPENBLAS_VERSION)
  openblas_set_num_threads(int(st.range(3)));
#endif
  const auto A = random_vec(std::size_t(M * K), 1);
  const auto B = random_vec(std::size_t(N * K), 2);
  std::vector<float> C(std::size_t(M * N));
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(N), int(K), 1.0f, A.data(), int(K), B.data(),
                int(K), 0.0f, C.data(), int(N));
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  set_gemm_counters(st, M, N, K);
}

// Decode through the BLAS routine made for it: y = B·x with B [N, K] row-major. Args as above
// (M must be 1).
void BM_cblas_sgemv(benchmark::State& st) {
  const i64 N = st.range(1), K = st.range(2);
#if defined(OPENBLAS_VERSION)
  openblas_set_num_threads(int(st.range(3)));
#endif
  const auto x = random_vec(std::size_t(K), 1);
  const auto B = random_vec(std::size_t(N * K), 2);
  std::vector<float> y(static_cast<std::size_t>(N));
  for (auto _ : st) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, int(N), int(K), 1.0f, B.data(), int(K), x.data(), 1, 0.0f, y.data(), 1);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_gemm_counters(st, 1, N, K);
}
#endif

// Args: rows, cols, threads.
void BM_rmsnorm(benchmark::State& st) {
  const i64 rows = st.range(0), cols = st.range(1);
  const auto be = backend_for(st, 2);
  const auto x = random_vec(std::size_t(rows * cols), 3);
  const auto w = random_vec(std::size_t(cols), 4);
  std::vector<float> y(x.size());
  for (auto _ : st) {
    muninn::rmsnorm(be, x.data(), w.data(), y.data(), rows, cols, 1e-6f);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  st.counters["bytes/s"] =
      benchmark::Counter(4.0 * double(rows * cols), benchmark::Counter::kIsIterationInvariantRate);
}

// Args: rows, cols, threads.
void BM_add_rmsnorm(benchmark::State& st) {
  const i64 rows = st.range(0), cols = st.range(1);
  const auto be = backend_for(st, 2);
  const auto a = random_vec(std::size_t(rows * cols), 3);
  auto b = random_vec(std::size_t(rows * cols), 5);
  const auto w = random_vec(std::size_t(cols), 4);
  std::vector<float> y(a.size());
  for (auto _ : st) {
    muninn::add_rmsnorm(be, a.data(), b.data(), w.data(), y.data(), rows, cols, 1e-6f);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  st.counters["bytes/s"] =
      benchmark::Counter(8.0 * double(rows * cols), benchmark::Counter::kIsIterationInvariantRate);
}

// Args: rows, inter, threads. Huginn's intermediate size is 17920.
void BM_silu_mul(benchmark::State& st) {
  const i64 rows = st.range(0), inter = st.range(1);
  const auto be = backend_for(st, 2);
  const auto in = random_vec(std::size_t(rows * 2 * inter), 6);
  std::vector<float> out(std::size_t(rows * inter));
  for (auto _ : st) {
    muninn::silu_mul(be, in.data(), 2 * inter, out.data(), inter, rows, inter);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.counters["elems/s"] = benchmark::Counter(double(rows * inter), benchmark::Counter::kIsIterationInvariantRate);
}

// Args: nq, nkv, threads. Huginn: 55 heads of 96, no GQA.
void BM_attention(benchmark::State& st) {
  const i64 nq = st.range(0), nkv = st.range(1), H = 55, D = 96;
  const auto be = backend_for(st, 2);
  const auto q = random_vec(std::size_t(nq * H * D), 7);
  const auto k = random_vec(std::size_t(nkv * H * D), 8);
  const auto v = random_vec(std::size_t(nkv * H * D), 9);
  std::vector<float> out(q.size());
  for (auto _ : st) {
    muninn::attention(be, q.data(), H * D, k.data(), v.data(), H * D, out.data(), H * D, nq, nkv, H, H, D,
                      1.0f / std::sqrt(float(D)));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  // Causal pairs: every query sees nkv − nq + i + 1 keys.
  const double pairs = double(nq) * double(nkv - nq) + double(nq) * double(nq + 1) / 2.0;
  st.counters["kv_bytes/s"] =
      benchmark::Counter(8.0 * double(H * D) * double(nkv), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["FLOP/s"] =
      benchmark::Counter(4.0 * pairs * double(H * D), benchmark::Counter::kIsIterationInvariantRate);
}

// Args: cols, threads. Decode-time softmax over Huginn's 65536-token vocab.
void BM_softmax_argmax(benchmark::State& st) {
  const i64 cols = st.range(0);
  const auto be = backend_for(st, 1);
  const auto x = random_vec(std::size_t(cols), 10);
  std::vector<float> y(x.size());
  for (auto _ : st) {
    muninn::softmax_rows(be, x.data(), y.data(), 1, cols);
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(muninn::argmax(be, y.data(), cols));
    benchmark::ClobberMemory();
  }
  st.counters["elems/s"] = benchmark::Counter(double(cols), benchmark::Counter::kIsIterationInvariantRate);
}

// The two single-row GEMV kernels on weights cold in DRAM, as in decode: 400 MB of [N = 576, K]
// matrices, each used once per iteration. kernel 0 = rows read one after another (gemv_rows),
// 1 = the interleaved 8-row tile (gemm_small_m<1>); gemm_nt picks by K (gemv_rows_max_k);
// 2 = rows one after another with one accumulator (gemv_rows_invariant, the row-invariant order).
void BM_gemv_cold(benchmark::State& st) {
  const i64 K = st.range(0), N = 576, kernel = st.range(1);
  const i64 count = std::max<i64>(1, (400ll << 20) / (N * K * 4));
  std::vector<std::vector<float>> w(std::size_t(count), random_vec(std::size_t(N * K), 3));
  const auto x = random_vec(std::size_t(K), 4);
  std::vector<float> y(static_cast<std::size_t>(N));
  for (auto _ : st)
    for (const auto& m : w) {
      if (kernel == 0)
        muninn::detail::gemv_rows(0, N, K, 1.0f, x.data(), m.data(), K, 0.0f, y.data());
      else if (kernel == 2)
        muninn::detail::gemv_rows_invariant(0, N, K, 1.0f, x.data(), m.data(), K, 0.0f, y.data());
      else
        muninn::detail::gemm_small_m<1>(0, N, K, 1.0f, x.data(), K, m.data(), K, 0.0f, y.data(), N);
      benchmark::DoNotOptimize(y.data());
    }
  st.counters["weight_bytes/s"] =
      benchmark::Counter(double(count * N * K * 4), benchmark::Counter::kIsIterationInvariantRate);
}

// GEMM with a weight stored as fp32 (format 0), bf16 (1) or q8 (2). Args: format, M, N, K, threads.
// weight_bytes/s counts the bytes of the format (q8: values and scales).
void BM_weight_gemm(benchmark::State& st) {
  const auto fmt = muninn::weight_format(st.range(0));
  const i64 M = st.range(1), N = st.range(2), K = st.range(3);
  const auto be = backend_for(st, 4);
  const auto A = random_vec(std::size_t(M * K), 1);
  const auto Bf = random_vec(std::size_t(N * K), 2);
  const muninn::host_weight B(be, Bf.data(), N, K, K, fmt);
  std::vector<float> C(std::size_t(M * N));
  for (auto _ : st) {
    muninn::gemm_nt(be, M, N, K, 1.0f, A.data(), K, B.view(), 0.0f, C.data(), N);
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * double(M * N * K), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["weight_bytes/s"] = benchmark::Counter(double(B.bytes()), benchmark::Counter::kIsIterationInvariantRate);
}

// The decode GEMV on weights cold in DRAM (400 MB of [576, K] matrices of the format, each used
// once per iteration, as in decode). Args: format, K, threads.
void BM_weight_gemv_cold(benchmark::State& st) {
  const auto fmt = muninn::weight_format(st.range(0));
  const i64 K = st.range(1), N = 576;
  const auto be = backend_for(st, 2);
  const double bytes = double(N * K) * muninn::weight_format_bytes(fmt);
  const i64 count = std::max<i64>(1, i64((400ll << 20) / bytes));
  const auto src = random_vec(std::size_t(N * K), 3);
  std::vector<muninn::host_weight> w;
  for (i64 i = 0; i < count; ++i) w.emplace_back(be, src.data(), N, K, K, fmt);
  const auto x = random_vec(std::size_t(K), 4);
  std::vector<float> y(static_cast<std::size_t>(N));
  for (auto _ : st)
    for (const auto& m : w) {
      muninn::gemm_nt(be, 1, N, K, 1.0f, x.data(), K, m.view(), 0.0f, y.data(), N);
      benchmark::DoNotOptimize(y.data());
    }
  st.counters["weight_bytes/s"] = benchmark::Counter(double(count) * bytes, benchmark::Counter::kIsIterationInvariantRate);
}

// The machine's read bandwidth: a sum over 512 MB, split over the threads. Args: threads.
void BM_stream_read(benchmark::State& st) {
  const auto be = backend_for(st, 0);
  const std::size_t n = std::size_t(128) << 20;
  // Integer words: their sum may be reordered, so the compiler vectorises the loop and the figure is
  // the memory's read rate, not the latency of a chain of float additions.
  std::vector<std::uint32_t> v(n, 1u);
  std::vector<std::uint64_t> part(64, 0);
  for (auto _ : st) {
    be.parallel_for(i64(n), i64(n) / 64, [&](i64 b, i64 e) {
      std::uint32_t s = 0;
      for (i64 i = b; i < e; ++i) s += v[std::size_t(i)];
      part[std::size_t(b * 64 / i64(n))] = s;
    });
    benchmark::DoNotOptimize(part.data());
  }
  st.counters["bytes/s"] = benchmark::Counter(double(n * 4), benchmark::Counter::kIsIterationInvariantRate);
}

using bench_fn = void (*)(benchmark::State&);

// Registers `fn` once per argument list; the last argument is the thread count, which picks
// CPU time (1 thread) or wall time (more).
void add(const char* name, bench_fn fn, const std::vector<std::vector<std::int64_t>>& args,
         const std::vector<std::string>& names, benchmark::TimeUnit unit = benchmark::kMicrosecond) {
  for (const auto& a : args) {
    auto* b = benchmark::RegisterBenchmark(name, fn)->Args(a)->ArgNames(names)->Unit(unit);
    if (a.back() > 1) b->UseRealTime();
  }
}

std::vector<std::vector<std::int64_t>> gemm_shapes() {
  std::vector<std::vector<std::int64_t>> v;
  for (i64 t : {1, 2}) {
    // Decode (GEMV, memory-bound): square 1024/2048 (in L3), Huginn's attention out-proj
    // (5280 x 5280) and Wqkv (15840 x 5280) from DRAM; and a few-token draft/batch.
    for (const auto& nk : std::vector<std::vector<i64>>{{1024, 1024}, {2048, 2048}, {5280, 5280}, {15840, 5280}})
      v.push_back({1, nk[0], nk[1], t});
    v.push_back({4, 5280, 5280, t});
    v.push_back({8, 5280, 5280, t});
    // Prefill (compute-bound).
    for (i64 m : {32, 128, 512})
      for (i64 nk : {1024, 2048}) v.push_back({m, nk, nk, t});
    v.push_back({128, 5280, 5280, t});
  }
  return v;
}

void register_all() {
  const std::vector<std::string> gemm_names = {"M", "N", "K", "threads"};
  add("BM_gemm_nt", BM_gemm_nt, gemm_shapes(), gemm_names);
#if defined(MUNINN_BENCH_CBLAS)
  add("BM_cblas_sgemm", BM_cblas_sgemm, gemm_shapes(), gemm_names);
  std::vector<std::vector<std::int64_t>> gemv;
  for (const auto& a : gemm_shapes())
    if (a[0] == 1) gemv.push_back(a);
  add("BM_cblas_sgemv", BM_cblas_sgemv, gemv, gemm_names);
#endif
  std::vector<std::vector<std::int64_t>> cold;
  for (i64 K : {576, 1024, 2048, 3072, 5280})
    for (i64 kernel : {0, 1, 2}) cold.push_back({K, kernel});
  for (const auto& a : cold)
    benchmark::RegisterBenchmark("BM_gemv_cold", BM_gemv_cold)->Args(a)->ArgNames({"K", "kernel"})->Unit(benchmark::kMillisecond);
  std::vector<std::vector<std::int64_t>> invariant;
  for (i64 t : {1, 2})
    for (i64 mode : {0, 1})
      for (const auto& mnk : std::vector<std::vector<i64>>{
               {1, 1536, 576}, {4, 1536, 576}, {16, 1536, 576}, {64, 1536, 576}, {128, 576, 1536}, {512, 2048, 2048}})
        invariant.push_back({mode, mnk[0], mnk[1], mnk[2], t});
  add("BM_gemm_batch_invariant", BM_gemm_batch_invariant, invariant, {"invariant", "M", "N", "K", "threads"});
  std::vector<std::vector<std::int64_t>> wg, wc;
  for (i64 t : {1, 2})
    for (i64 f : {0, 1, 2}) {
      for (const auto& mnk : std::vector<std::vector<i64>>{
               {1, 1536, 576}, {1, 576, 1536}, {1, 49152, 576}, {1, 5280, 5280}, {4, 1536, 576}, {8, 5280, 5280},
               {128, 1536, 576}, {128, 576, 1536}, {128, 5280, 5280}, {512, 2048, 2048},
               // Batched decode at the SmolLM-135M shapes (MLP up/down, the 49152-row output
               // layer from DRAM): the q8 multi-row int8 kernel's range.
               {2, 1536, 576}, {2, 576, 1536}, {2, 49152, 576}, {4, 576, 1536}, {4, 49152, 576},
               {8, 1536, 576}, {8, 576, 1536}, {8, 49152, 576}, {3, 1536, 576}, {5, 1536, 576}, {6, 1536, 576},
               {7, 1536, 576}})
        wg.push_back({f, mnk[0], mnk[1], mnk[2], t});
      for (i64 K : {576, 1536, 5280}) wc.push_back({f, K, t});
    }
  add("BM_weight_gemm", BM_weight_gemm, wg, {"format", "M", "N", "K", "threads"});
  add("BM_weight_gemv_cold", BM_weight_gemv_cold, wc, {"format", "K", "threads"}, benchmark::kMillisecond);
  add("BM_stream_read", BM_stream_read, {{1}, {2}}, {"threads"}, benchmark::kMillisecond);
  add("BM_rmsnorm", BM_rmsnorm, {{1, 5280, 1}, {128, 5280, 1}, {128, 5280, 2}}, {"rows", "cols", "threads"},
      benchmark::kNanosecond);
  add("BM_add_rmsnorm", BM_add_rmsnorm, {{1, 5280, 1}, {128, 5280, 2}}, {"rows", "cols", "threads"},
      benchmark::kNanosecond);
  add("BM_silu_mul", BM_silu_mul, {{1, 17920, 1}, {128, 17920, 2}}, {"rows", "inter", "threads"});
  add("BM_attention", BM_attention, {{1, 512, 1}, {1, 4096, 1}, {1, 4096, 2}, {512, 512, 2}},
      {"nq", "nkv", "threads"});
  add("BM_softmax_argmax", BM_softmax_argmax, {{65536, 1}}, {"cols", "threads"});
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
