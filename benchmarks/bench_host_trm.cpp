// TRM on the host at Sudoku size — sequence 81 + 16 prefix = 97, D = 512, 8 heads, 2 layers,
// H_cycles 3, L_cycles 6 (21 net calls per supervision step), the paper's 7 M shape — with
// random weights written once as a run under $TMPDIR and loaded through the real loader.
//
// BM_TrmStep/<variant>/<batch>: one supervision step for a batch of puzzles (start + step), as
// puzzles per second; variant 0 = attention, 1 = mlp_t. tools/bench/trm_pytorch.py times
// trm_ref.py's model (PyTorch eager) on the same work.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "muninn/families/trm/model.hpp"
#include "muninn/families/trm/random_checkpoint.hpp"
#include "muninn/muninn.hpp"
#include "trm_sudoku_shape.hpp"

namespace {

using trm = muninn::trm_model<muninn::host_backend, float>;

trm& model(bool mlp_t) {
  static std::map<bool, std::unique_ptr<trm>> models;
  auto& m = models[mlp_t];
  if (!m) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = std::string(tmp ? tmp : "/tmp") + (mlp_t ? "/muninn_bench_trm_mlpt" : "/muninn_bench_trm_att");
    if (!std::filesystem::exists(dir + "/step_1")) muninn::write_random_trm(dir, trm_sudoku_shape(mlp_t, "float32"), 7);
    m = std::make_unique<trm>(trm::load(dir));
  }
  return *m;
}

void BM_TrmStep(benchmark::State& state) {
  const bool mlp_t = state.range(0) != 0;
  const std::int64_t B = state.range(1);
  trm& m = model(mlp_t);
  std::vector<std::int32_t> inputs(std::size_t(B * 81)), ids(std::size_t(B), 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i] = std::int32_t(1 + (i * 7) % 10);
  for (auto _ : state) {
    const muninn::trm_result r = m.solve(inputs, ids, muninn::trm_halting::fixed{1});
    benchmark::DoNotOptimize(r.preds.data());
  }
  state.counters["puzzles/s"] = benchmark::Counter(double(B) * double(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(mlp_t ? "mlp_t" : "attention");
}
BENCHMARK(BM_TrmStep)->ArgsProduct({{0, 1}, {1, 16}})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
