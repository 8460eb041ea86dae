// Tokenizer encode throughput against input size, 10 KB to 10 MB: a flat time per MB means encoding is linear.
//
// Runs on the fixture tokenizers of tests/data/tokenizer: gpt2_prefix (ByteLevel with its regex, added tokens
// with lstrip, rstrip and single_word, which the text contains) and llama3 (a Split regex, then ByteLevel).
// A third case is one long pre-token: a run of 'l' without spaces ("l l" is a merge), which BPE takes as one word.
#include <benchmark/benchmark.h>

#include <string>

#include "muninn/io/tokenizer.hpp"

namespace {

using muninn::io::tokenizer;

const tokenizer& load(const std::string& name) {
  const std::string dir = std::string(MUNINN_BENCH_DATA) + "/tokenizer/";
  static const tokenizer gpt2_prefix = tokenizer::from_file(dir + "gpt2_prefix.json");
  static const tokenizer llama3 = tokenizer::from_file(dir + "llama3.json");
  return name == "llama3" ? llama3 : gpt2_prefix;
}

// Multilingual text with the added tokens of gpt2_prefix ("<mask>" strips spaces on its left, "[R]" on its right,
// "ing" counts only as a word of its own), repeated to `bytes`.
std::string text_of(std::size_t bytes) {
  static const std::string unit =
      "The quick brown fox <mask> jumps over the lazy dog; it's 2024 and we're testing ing words [R]   again.\n"
      "Grüße aus München! Привет, мир! 你好，世界 😀 <|end_turn|>  \t x = 3.14159; ing\r\n";
  std::string t;
  t.reserve(bytes + unit.size());
  while (t.size() < bytes) t += unit;
  t.resize(bytes);
  return t;
}

void encode(benchmark::State& state, const std::string& name, bool one_word) {
  const tokenizer& tok = load(name);
  const std::size_t bytes = std::size_t(state.range(0));
  const std::string text = one_word ? std::string(bytes, 'l') : text_of(bytes);
  std::size_t ids = 0;
  for (auto _ : state) {
    const auto out = tok.encode(text);
    ids = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(bytes));
  // Seconds per MB (shown with an SI prefix: 25m is 25 ms); flat across sizes means linear.
  state.counters["s_per_MB"] = benchmark::Counter(double(state.iterations()) * double(bytes) / 1e6,
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ids"] = double(ids);
}

void BM_encode_added_tokens(benchmark::State& state) { encode(state, "gpt2_prefix", false); }
void BM_encode_split_regex(benchmark::State& state) { encode(state, "llama3", false); }
void BM_encode_one_long_word(benchmark::State& state) { encode(state, "gpt2_prefix", true); }

#define MUNINN_SIZES ->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)
BENCHMARK(BM_encode_added_tokens) MUNINN_SIZES;
BENCHMARK(BM_encode_split_regex) MUNINN_SIZES;
BENCHMARK(BM_encode_one_long_word) MUNINN_SIZES;

}  // namespace

BENCHMARK_MAIN();
