// CALM's chunk temperature samplers on the host (runtime/chunk_sampling.hpp): rows/s of the batch
// approximation at the reference's N = 200 samples of K = 4 tokens, and the cost of one exact
// sample (time and chunk draws per sample) with a cheap synthetic chunk source.
//
//   OMP_NUM_THREADS=1 build/host/benchmarks/bench_host_chunk_sampling
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "muninn/runtime/chunk_sampling.hpp"

namespace {

constexpr std::int64_t kK = 4;

// Chunk `c` of a synthetic vocabulary of chunks.
void write_chunk(int c, std::int32_t* ids) {
  for (std::int64_t t = 0; t < kK; ++t) ids[t] = std::int32_t(c * 31 + t * 7) % 5003;
}

// Draw j of stream `seed`: a uniform mapped through the cumulative distribution `cdf`.
int draw_category(const std::vector<double>& cdf, std::uint64_t seed, std::int64_t j) {
  const double u = muninn::uniform01_at(seed, std::uint64_t(j));
  int c = 0;
  while (c + 1 < int(cdf.size()) && u >= cdf[std::size_t(c)]) ++c;
  return c;
}

std::vector<double> cdf_of(std::vector<double> p) {
  double s = 0, c = 0;
  for (double x : p) s += x;
  for (double& x : p) x = (c += x / s);
  return p;
}

// Zipf over `distinct` chunks (P ∝ 1 / rank): a head that repeats its likely chunks, as a trained
// CALM head does at T < 1; distinct = 0 makes every sample a different chunk (the worst case).
std::vector<std::int32_t> make_rows(std::int64_t rows, std::int64_t samples, int distinct) {
  std::vector<std::int32_t> chunks(std::size_t(rows * samples * kK));
  std::vector<double> p;
  for (int r = 0; r < distinct; ++r) p.push_back(1.0 / (r + 1));
  const auto cdf = cdf_of(p);
  for (std::int64_t i = 0; i < rows * samples; ++i)
    write_chunk(distinct > 0 ? draw_category(cdf, 7, i) : int(i), chunks.data() + i * kK);
  return chunks;
}

// Args: N, B, distinct chunks of the Zipf source (0: all distinct). T = 1/2.
void BM_ChooseChunks(benchmark::State& state) {
  const std::int64_t samples = state.range(0), rows = state.range(1);
  const auto chunks = make_rows(rows, samples, int(state.range(2)));
  std::vector<std::int64_t> positions(static_cast<std::size_t>(rows));
  std::vector<std::int32_t> out(static_cast<std::size_t>(rows * kK));
  const muninn::host_backend be;
  std::int64_t step = 0;
  for (auto _ : state) {
    for (std::int64_t r = 0; r < rows; ++r) positions[std::size_t(r)] = step + r;
    muninn::choose_chunks(be, chunks.data(), rows, samples, kK, 0.5, 1, positions.data(), out.data());
    benchmark::DoNotOptimize(out.data());
    step += rows;
  }
  state.counters["rows/s"] = benchmark::Counter(double(step), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ChooseChunks)
    ->Args({200, 1, 50})
    ->Args({200, 16, 50})
    ->Args({200, 1, 0})
    ->Args({200, 16, 0})
    ->ArgNames({"N", "B", "distinct"});

// One exact sample per iteration (a new position each time) from P = {0.35, 0.25, 0.2, 0.12, 0.08}
// over 5 chunks; the source costs a few ns per draw, so the time is the sampler's own.
void BM_ExactSample(benchmark::State& state, double temperature) {
  const auto cdf = cdf_of({0.35, 0.25, 0.2, 0.12, 0.08});
  std::int64_t position = 0, draws = 0;
  std::int32_t out[kK];
  for (auto _ : state) {
    const std::uint64_t stream = muninn::stream_seed(1, 1, std::uint64_t(position));
    auto source = [&](std::int64_t first, std::int64_t count, std::int32_t* ids) {
      for (std::int64_t i = 0; i < count; ++i) write_chunk(draw_category(cdf, stream, first + i), ids + i * kK);
    };
    draws += muninn::sample_chunk_exact(source, kK, temperature, 1, position++, out).draws;
    benchmark::DoNotOptimize(out);
  }
  state.counters["samples/s"] = benchmark::Counter(double(position), benchmark::Counter::kIsRate);
  state.counters["draws/sample"] = double(draws) / double(position);
}
BENCHMARK_CAPTURE(BM_ExactSample, T_1_2, 0.5);
BENCHMARK_CAPTURE(BM_ExactSample, T_1_3, 1.0 / 3);
BENCHMARK_CAPTURE(BM_ExactSample, T_0_7, 0.7);

}  // namespace

BENCHMARK_MAIN();
