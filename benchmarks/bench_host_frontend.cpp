// Generation through the front-end library (what the muninn CLI, the Python module and a server
// call) on the SmolLM-135M-shaped random Llama of bench_host_llama, loaded from a folder by the
// registry: a 128-token prompt, then N greedy new tokens per iteration (N = 1 and 65, so that
// (t65 - t1) / 64 is the time of one decode step). BM_FrontendGenerateTiny does the same on the
// tiny Llama fixture (tests/data/llama/tiny_text, 8-token prompt), where a token costs microseconds
// and a binding's cost per token would show. tools/bench/compare_python.py times the same calls
// from Python and reports the binding's cost per token against these.
//
// The folder is $MUNINN_BENCH_SMOLLM_DIR (default /tmp/muninn_bench_smollm135m), written at first
// use: config.json (LlamaForCausalLM) and model.safetensors (random fp32, seed 7, ~540 MB).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "muninn/families/llama/names.hpp"
#include "muninn/frontend/registry.hpp"
#include "muninn/io/random_checkpoint.hpp"
#include "smollm_shape.hpp"

namespace {

namespace fe = muninn::frontend;
constexpr std::int64_t kPrompt = 128;

std::string folder() {
  const char* d = std::getenv("MUNINN_BENCH_SMOLLM_DIR");
  return d && *d ? d : "/tmp/muninn_bench_smollm135m";
}

void write_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(dir) / "model.safetensors")) return;
  fs::create_directories(dir);
  const muninn::llama_config c = smollm_135m_shape(30, "bench smollm_135m");
  std::ofstream(fs::path(dir) / "config.json")
      << "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": " << c.n_embd
      << ", \"intermediate_size\": " << c.intermediate_size << ", \"num_hidden_layers\": " << c.n_layers_in_prelude
      << ", \"num_attention_heads\": " << c.n_heads << ", \"num_key_value_heads\": " << c.n_kv_heads
      << ", \"head_dim\": " << c.head_dim << ", \"vocab_size\": " << c.vocab_size
      << ", \"max_position_embeddings\": " << c.block_size << ", \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0"
      << ", \"tie_word_embeddings\": true, \"hidden_act\": \"silu\"}\n";
  muninn::io::write_random_checkpoint((fs::path(dir) / "model.safetensors").string(), muninn::io::llama_tensor_specs(c),
                                      7);
}

const fe::loaded_model& smollm() {
  static const std::unique_ptr<fe::loaded_model> m = [] {
    write_folder(folder());
    return fe::open_model(folder(), fe::option_values(fe::operation::load));
  }();
  return *m;
}

const fe::loaded_model& tiny() {
  static const std::unique_ptr<fe::loaded_model> m =
      fe::open_model(std::string(MUNINN_BENCH_DATA) + "/llama/tiny_text", fe::option_values(fe::operation::load));
  return *m;
}

// The prompt of bench_host_llama: n ids below `vocab`.
std::vector<std::int32_t> prompt(std::int64_t n, std::int64_t vocab) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) ids[std::size_t(i)] = std::int32_t((i * 7919 + 13) % vocab);
  return ids;
}

// Greedy generation of state.range(0) new tokens after `ids`, ignoring end-of-sequence ids. The
// counter fastest_s is the fastest call: on a shared machine, the call least disturbed by others
// (what a comparison with the same calls from Python takes on both sides).
void generate(benchmark::State& state, const fe::loaded_model& m, const std::vector<std::int32_t>& ids) {
  fe::option_values o(fe::operation::generate);
  o.set("max-new-tokens", std::to_string(state.range(0)));
  o.set("ignore-eos", "");
  std::int64_t made = 0;
  double fastest = 1e300;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    made = std::int64_t(m.generate(ids, o, {}, {}).tokens.size());
    fastest = std::min(fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (made != state.range(0)) state.SkipWithError("generated fewer tokens than asked");
  state.counters["new_tokens"] = double(made);
  state.counters["fastest_s"] = fastest;
}

void BM_FrontendGenerate(benchmark::State& state) { generate(state, smollm(), prompt(kPrompt, 49152)); }
BENCHMARK(BM_FrontendGenerate)->Arg(1)->Arg(65)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FrontendGenerateTiny(benchmark::State& state) {
  generate(state, tiny(), prompt(8, tiny().info().vocab_size));
}
BENCHMARK(BM_FrontendGenerateTiny)->Arg(1)->Arg(65)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
