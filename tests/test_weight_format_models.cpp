// Whole models with their projection and output matrices stored in bf16 or q8
// (model::store_weights_as) against the same model in fp32: logit error, KL divergence and
// greedy-token agreement within bounds measured on these fixtures (docs/performance.md,
// "Weight formats"; TRM / HRM over three supervision steps, CALM on its backbone's hidden
// states), bit-equal results for any thread count, memory that shrinks, and for one
// untied model an exact oracle: the fp32 model run on the same rounded weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "muninn/families/calm/model.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/families/trm/model.hpp"
#include "muninn/io/random_checkpoint.hpp"
#include "muninn/muninn.hpp"
#include "test_io_util.hpp"
#include "test_trm_util.hpp"
#include "test_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_weight_format_models {

using namespace muninn;

namespace {

const std::string data = std::string(MUNINN_TEST_DATA) + "/";

// Logit bounds per family and format, on these tiny random-weight fixtures (their logits span
// tens of units, so absolute errors are larger than on a trained model). Each bound is the
// largest value measured over the family's fixtures (printed as "[ measured ]", and listed in
// docs/performance.md, "Weight formats") times about 2.5; argmax agreement is over 24 positions,
// and MoR's routers may flip a token's depth, so its bound is lower. A wrong wiring (a matrix not
// converted, or read at the wrong rows) is caught by the rounded-weights oracle below instead.
struct bounds {
  double max_abs;  // largest |logit - fp32 logit|
  double kl;       // largest per-position KL(fp32 || format)
  double agree;    // least fraction of positions whose argmax matches fp32
};
struct family_bounds {
  bounds bf16, q8;
};
const family_bounds llama_bounds{{0.4, 3e-3, 0.9}, {1.2, 2.5e-2, 0.9}};     // measured 0.163, 1.2e-3 / 0.477, 1.0e-2
const family_bounds huginn_bounds{{0.015, 4e-6, 0.9}, {0.04, 3e-5, 0.9}};  // measured 0.0042, 9.8e-7 / 0.0125, 8.1e-6
const family_bounds mor_bounds{{0.15, 6e-4, 0.9}, {0.5, 7e-3, 0.75}};      // measured 0.047, 1.9e-4 / 0.184, 2.3e-3
const family_bounds trm_bounds{{0.07, 1e-4, 0.9}, {0.1, 4.5e-4, 0.9}};      // measured 0.0263, 4.0e-5 / 0.0392, 1.8e-4
// q8 decode with int8 activations (check_q8_decode, below): one more rounding, so wider bounds;
// agreement over 24 positions: the tied Llama flips 2 near-tied argmaxes (0.917), the bound allows 4.
const bounds llama_q8_decode{1.3, 8e-2, 0.83};  // measured 0.508, 3.2e-2, 0.917
const bounds huginn_q8_decode{0.05, 4.5e-5, 0.9};  // measured 0.0187, 1.8e-5, 1.000

struct error_stats {
  double max_abs = 0, kl = 0, agree = 0;
};

error_stats compare(const std::vector<float>& want, const std::vector<float>& got, std::int64_t V) {
  error_stats s;
  const std::size_t rows = want.size() / std::size_t(V);
  std::size_t same = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* a = want.data() + r * std::size_t(V);
    const float* b = got.data() + r * std::size_t(V);
    double ma = a[0], mb = b[0];
    for (std::int64_t v = 0; v < V; ++v) ma = std::max(ma, double(a[v])), mb = std::max(mb, double(b[v]));
    double za = 0, zb = 0;
    for (std::int64_t v = 0; v < V; ++v) za += std::exp(a[v] - ma), zb += std::exp(b[v] - mb);
    double kl = 0;
    for (std::int64_t v = 0; v < V; ++v) {
      const double la = a[v] - ma - std::log(za), lb = b[v] - mb - std::log(zb);
      kl += std::exp(la) * (la - lb);
      s.max_abs = std::max(s.max_abs, std::fabs(double(a[v]) - double(b[v])));
    }
    s.kl = std::max(s.kl, kl);
    same += std::max_element(a, a + V) == a ? std::max_element(b, b + V) == b
                                            : (std::max_element(a, a + V) - a) == (std::max_element(b, b + V) - b);
  }
  s.agree = rows ? double(same) / double(rows) : 1.0;
  return s;
}

// Logits `got` in format `f` against fp32 `want` ([rows, V]): prints the figures and checks them
// against the family's bounds (and that the format changed something at all).
void expect_within(const std::string& what, weight_format f, const std::vector<float>& want,
                   const std::vector<float>& got, std::int64_t V, const bounds& b) {
  ASSERT_EQ(got.size(), want.size());
  const error_stats e = compare(want, got, V);
  std::printf("[ measured ] %s %s: max|dlogit| %.3g, KL %.3g, argmax agreement %.3f\n", what.c_str(),
              weight_format_name(f), e.max_abs, e.kl, e.agree);
  EXPECT_GT(e.max_abs, 0.0) << "the format changed nothing: the converted matrices are not read";
  EXPECT_LE(e.max_abs, b.max_abs);
  EXPECT_LE(e.kl, b.kl);
  EXPECT_GE(e.agree, b.agree);
}

std::vector<std::int32_t> prompt(std::int64_t V) {
  std::vector<std::int32_t> ids;
  for (std::int32_t i = 0; i < 24; ++i) ids.push_back(std::int32_t((i * 37 + 5) % V));
  return ids;
}

run_options zero_state() {
  run_options o;
  o.init = state_init::zero{};
  return o;
}

// The model at `dir` in `f` against fp32: bounds, memory, thread-count invariance.
template <class M>
void check_format(const std::string& dir, weight_format f, const bounds& b) {
  SCOPED_TRACE(dir + " " + weight_format_name(f));
  const M ref = M::load(data + dir);
  const std::int64_t V = ref.config().vocab_size;
  const auto ids = prompt(V);
  const std::vector<float> want = ref.forward(ids, zero_state());

  host_backend one;
  one.num_threads = 1;
  M m = M::load(data + dir, one);
  m.store_weights_as(f);
  EXPECT_EQ(m.weight_format(), f);
  EXPECT_LT(m.weight_bytes(), ref.weight_bytes());
  EXPECT_NE(m.output_converted(), nullptr) << "the output matrix stayed fp32";
  const std::vector<float> got = m.forward(ids, zero_state());
  expect_within(dir, f, want, got, V, b);

  host_backend three;
  three.num_threads = 3;
  M m3 = M::load(data + dir, three);
  m3.store_weights_as(f);
  EXPECT_EQ(m3.forward(ids, zero_state()), got) << "results depend on the thread count";
}

template <class M>
void check_family(const std::string& dir, const family_bounds& b) {
  check_format<M>(dir, weight_format::bf16, b.bf16);
  check_format<M>(dir, weight_format::q8, b.q8);
}

using llama_model = model<host_backend, float, llama_arch>;

TEST(WeightFormatModels, LlamaTied) { check_family<llama_model>("llama/tiny_tied_mha", llama_bounds); }
TEST(WeightFormatModels, LlamaUntiedGqa) { check_family<llama_model>("llama/tiny_untied_gqa", llama_bounds); }
TEST(WeightFormatModels, LlamaWithBiases) { check_family<llama_model>("llama/tiny_linear_bias", llama_bounds); }
TEST(WeightFormatModels, Huginn) { check_family<model<host_backend, float, huginn_arch>>("huginn/tiny_f32", huginn_bounds); }
TEST(WeightFormatModels, MorExpertWithRecursionLayers) {
  check_family<model<host_backend, float, mor_expert_arch>>("mor_untied/expert_mcyc_attn", mor_bounds);
}
TEST(WeightFormatModels, MorToken) {
  check_family<model<host_backend, float, mor_token_arch>>("mor/token_mcyc_r3_softmax_lossfree", mor_bounds);
}

// Decode: the 24 tokens fed one at a time (a context with max_chunk 1), so every projection is a
// GEMM of one row, the path where q8 quantizes its activations to int8
// (host_backend::q8_int8_activations); the prefill checks above never take it. Then in chunks of
// 3 and of 8 tokens (short chunks, as speculative decoding and batched decode run them): GEMMs of
// 3 and 8 rows, the multi-row int8 kernel. Against the fp32 model decoded the same way, with the
// int8 activations on (the default) and off, bounded by the decode bounds above; the two must
// differ (the int8 path is taken) and the default must not depend on the thread count.
template <class M>
std::vector<float> decode(const M& m, const std::vector<std::int32_t>& ids, std::int64_t chunk = 1) {
  context_limits lim;
  lim.max_tokens = std::int64_t(ids.size());
  lim.max_chunk = chunk;
  auto ctx = m.make_context(lim);
  return m.forward(ctx, ids, zero_state(), logits_for::all);
}

template <class M>
void check_q8_decode(const std::string& dir, const bounds& b) {
  const M ref = M::load(data + dir);
  const std::int64_t V = ref.config().vocab_size;
  const auto ids = prompt(V);
  std::vector<float> one_at_a_time;
  for (std::int64_t chunk : {1, 3, 8}) {
    const std::string what = dir + " decode in chunks of " + std::to_string(chunk);
    SCOPED_TRACE(what);
    const std::vector<float> want = decode(ref, ids, chunk);
    std::vector<float> got[2];
    for (bool int8 : {true, false}) {
      host_backend be;
      be.num_threads = 1;
      be.q8_int8_activations = int8;
      M m = M::load(data + dir, be);
      m.store_weights_as(weight_format::q8);
      got[int8] = decode(m, ids, chunk);
      expect_within(what + (int8 ? ", int8 activations" : ", fp32 activations"), weight_format::q8, want, got[int8], V,
                    b);
    }
    EXPECT_NE(got[0], got[1]) << "the int8 activations changed nothing: decode did not take their kernels";
    if (chunk == 1) one_at_a_time = got[1];
    // Each row of a multi-row int8 GEMM is bitwise that row alone, and the rest of these models
    // works row by row: decoding in chunks gives the very logits of one token at a time.
    EXPECT_EQ(got[1], one_at_a_time) << "a row's int8 result depends on the rows decoded with it";
    host_backend three;
    three.num_threads = 3;
    M m3 = M::load(data + dir, three);
    m3.store_weights_as(weight_format::q8);
    EXPECT_EQ(decode(m3, ids, chunk), got[1]) << "results depend on the thread count";
  }
}

TEST(WeightFormatModels, Q8DecodeLlamaTied) { check_q8_decode<llama_model>("llama/tiny_tied_mha", llama_q8_decode); }
TEST(WeightFormatModels, Q8DecodeLlamaUntiedGqa) {
  check_q8_decode<llama_model>("llama/tiny_untied_gqa", llama_q8_decode);
}
TEST(WeightFormatModels, Q8DecodeLlamaWithBiases) {
  check_q8_decode<llama_model>("llama/tiny_linear_bias", llama_q8_decode);
}
TEST(WeightFormatModels, Q8DecodeHuginn) {
  check_q8_decode<model<host_backend, float, huginn_arch>>("huginn/tiny_f32", huginn_q8_decode);
}

// TRM / HRM: the logits of every puzzle position after three supervision steps (the states carried
// through 3 · H_cycles · (L_cycles + 1) net calls) against fp32.
void check_trm(const std::string& name, weight_format f, const bounds& b) {
  using trm = trm_model<host_backend, float>;
  SCOPED_TRACE(name + " " + weight_format_name(f));
  const muninn_test::trm_case c(name);
  trm ref = trm::load(c.folder());
  const trm_result want = ref.solve(c.inputs, c.ids, trm_halting::fixed{3});

  host_backend one;
  one.num_threads = 1;
  trm m = trm::load(c.folder(), {}, one);
  m.store_weights_as(f);
  EXPECT_EQ(m.weight_format(), f);
  EXPECT_LT(m.weight_bytes(), ref.weight_bytes());
  EXPECT_TRUE(m.visit([](const auto& x) { return x.output_converted() != nullptr; })) << "lm_head stayed fp32";
  const trm_result got = m.solve(c.inputs, c.ids, trm_halting::fixed{3});
  expect_within("trm/" + name, f, want.logits, got.logits, c.V, b);

  host_backend three;
  three.num_threads = 3;
  trm m3 = trm::load(c.folder(), {}, three);
  m3.store_weights_as(f);
  EXPECT_EQ(m3.solve(c.inputs, c.ids, trm_halting::fixed{3}).logits, got.logits) << "results depend on the thread count";
}

TEST(WeightFormatModels, TrmAttention) {
  check_trm("trm_att_f32", weight_format::bf16, trm_bounds.bf16);
  check_trm("trm_att_f32", weight_format::q8, trm_bounds.q8);
}
TEST(WeightFormatModels, TrmTokenMlp) {
  check_trm("trm_mlpt_f32", weight_format::bf16, trm_bounds.bf16);
  check_trm("trm_mlpt_f32", weight_format::q8, trm_bounds.q8);
}
TEST(WeightFormatModels, Hrm) {
  check_trm("hrm_f32", weight_format::bf16, trm_bounds.bf16);
  check_trm("hrm_f32", weight_format::q8, trm_bounds.q8);
}

// CALM: the backbone's normalised hidden states (what the energy head reads) against fp32; the
// compressor, the energy head and the autoencoder stay fp32, so given the same hidden state the
// head draws the same chunk.
TEST(WeightFormatModels, CalmBackbone) {
  using calm = calm_model<host_backend, float>;
  const std::string dir = data + "calm/calm", ae = data + "calm/ae";
  calm ref = calm::load(dir, ae);
  std::vector<std::int32_t> ids;
  for (std::int32_t i = 0; i < 6 * std::int32_t(ref.patch_size()); ++i)
    ids.push_back(std::int32_t((i * 37 + 5) % ref.autoencoder().config().vocab_size));
  auto ctx = ref.make_context(6);
  const std::vector<float> want = ref.hidden(ctx, ids);
  double scale = 0;
  for (float x : want) scale = std::max(scale, double(std::fabs(x)));
  for (weight_format f : {weight_format::bf16, weight_format::q8}) {
    SCOPED_TRACE(weight_format_name(f));
    host_backend one;
    one.num_threads = 1;
    calm m = calm::load(dir, ae, one);
    m.store_weights_as(f);
    EXPECT_EQ(m.weight_format(), f);
    EXPECT_LT(m.weight_bytes(), ref.weight_bytes());
    auto c1 = m.make_context(6);
    const std::vector<float> got = m.hidden(c1, ids);
    const double d = muninn_test::max_abs_diff(want, got);
    std::printf("[ measured ] calm %s: max|dhidden| %.3g of max|hidden| %.3g\n", weight_format_name(f), d, scale);
    EXPECT_GT(d, 0.0) << "the format changed nothing: the converted matrices are not read";
    EXPECT_LE(d, (f == weight_format::bf16 ? 0.012 : 0.025) * scale);  // measured 0.0044 / 0.0099 of it
    // The head and autoencoder are untouched: the same hidden row gives the same chunk.
    const std::vector<float> row(want.end() - std::ptrdiff_t(ref.arch_model().dims().h), want.end());
    EXPECT_EQ(m.sample_chunks_rows(row, 5, 1234, 2), ref.sample_chunks_rows(row, 5, 1234, 2));
    host_backend three;
    three.num_threads = 3;
    calm m3 = calm::load(dir, ae, three);
    m3.store_weights_as(f);
    auto c3 = m3.make_context(6);
    EXPECT_EQ(m3.hidden(c3, ids), got) << "results depend on the thread count";
  }
}

// The fp32 matrices replaced by what the format stores, widened back to fp32.
void round_in_place(host_buffer<float>& b, std::int64_t K, weight_format f) {
  if (!b.size()) return;
  const std::int64_t N = std::int64_t(b.size()) / K;
  const host_weight w(host_backend{}, b.data(), N, K, K, f);
  const weight_view v = w.view();
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) {
      float x = 0;
      if (f == weight_format::bf16) x = to_float(v.bf16_row(n)[k]);
      if (f == weight_format::q8) x = float(v.q8_row(n)[k]) * to_float(v.q8_scales(n)[k / q8_block]);
      b[std::size_t(n * K + k)] = x;
    }
}

// An untied model stored in bf16 / q8 equals the fp32 model run on the rounded matrices, up to
// the order of fp32 sums (1e-4): every projection and the head read their converted copy, at the
// right rows (the q / k / v slices of the fused matrix included).
TEST(WeightFormatModels, EqualsTheFp32ModelOnTheRoundedWeights) {
  using M = llama_model;
  const std::string dir = data + "llama/tiny_untied_gqa";
  for (weight_format f : {weight_format::bf16, weight_format::q8}) {
    SCOPED_TRACE(weight_format_name(f));
    auto cfg = M::family_policy::read_config(dir);
    const io::checkpoint ck = M::family_policy::open_checkpoint(dir, cfg);
    const host_backend be;
    auto w = M::family_policy::load_weights<host_backend, float, M::block_policy>(be, ck, cfg);
    const std::int64_t h = cfg.n_embd, qd = cfg.n_heads * cfg.head_dim;
    for (auto& l : w.prelude) {
      round_in_place(l.wqkv, h, f);
      round_in_place(l.attn_proj, qd, f);
      round_in_place(l.fc, h, f);
      round_in_place(l.mlp_proj, cfg.intermediate_size, f);
    }
    round_in_place(w.lm_head, h, f);
    const M rounded(be, cfg, std::move(w));
    M m = M::load(dir);
    m.store_weights_as(f);
    const auto ids = prompt(cfg.vocab_size);
    const auto want = rounded.forward(ids), got = m.forward(ids);
    EXPECT_LE(muninn_test::max_abs_diff(want, got), 1e-4);
  }
}

// Loading straight into a format (the constructor that takes one: layer by layer for Huginn and
// Llama, load-then-convert for MoR) makes the same model as store_weights_as afterwards: the same
// weights, bytes and logits, bit for bit; fp32 through it is the plain load.
template <class M>
void check_loading_into(const std::string& dir) {
  const auto ids = prompt(M::load(data + dir).config().vocab_size);
  for (weight_format f : {weight_format::f32, weight_format::bf16, weight_format::q8}) {
    SCOPED_TRACE(dir + " " + weight_format_name(f));
    M after = M::load(data + dir);
    after.store_weights_as(f);
    const M into = M::load(data + dir, host_backend{}, f);
    EXPECT_EQ(into.weight_format(), f);
    EXPECT_EQ(into.weight_bytes(), after.weight_bytes());
    EXPECT_EQ(into.forward(ids, zero_state()), after.forward(ids, zero_state()));
  }
}

TEST(WeightFormatModels, LoadingIntoAFormatEqualsConvertingAfterwards) {
  check_loading_into<llama_model>("llama/tiny_tied_mha");
  check_loading_into<llama_model>("llama/tiny_untied_gqa");
  check_loading_into<model<host_backend, float, huginn_arch>>("huginn/tiny_f32");
  check_loading_into<model<host_backend, float, mor_expert_arch>>("mor_untied/expert_mcyc_attn");
}

// Resident memory of this process, from /proc/self/status ("VmRSS" now, "VmHWM" its peak), bytes.
std::int64_t status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, field.size() + 1, field + ":") == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  return -1;
}

class LoadPeak : public muninn_test::temp_dir_test {
 protected:
  LoadPeak() : temp_dir_test("muninn_load_peak_") {}
};

// A Llama of 8 layers of 4 MiB fp32 each (32 MiB of projections; small embedding and head) loaded
// into q8: converted layer by layer, the load's peak above the resident memory before it is the
// q8 stack (about 8.5 MiB), one fp32 layer and the head — under half the fp32 stack, where
// loading everything in fp32 first peaks above the whole 32 MiB. The peak comes from the kernel
// (VmHWM, reset by writing 5 to /proc/self/clear_refs), so allocator and page-cache effects count.
TEST_F(LoadPeak, LoadingIntoQ8NeverHoldsTheWholeFp32Stack) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory in quarantine, so resident memory says nothing here";
#endif
  if (status_bytes("VmHWM") < 0 || !std::ofstream("/proc/self/clear_refs").good())
    GTEST_SKIP() << "no /proc/self/status or /proc/self/clear_refs here";
  const std::int64_t h = 256, inter = 1024, layers = 8, V = 256;
  std::ofstream(path("config.json"))
      << "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": " << h
      << ", \"intermediate_size\": " << inter << ", \"num_hidden_layers\": " << layers
      << ", \"num_attention_heads\": 4, \"num_key_value_heads\": 4, \"vocab_size\": " << V
      << ", \"max_position_embeddings\": 64, \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0"
      << ", \"tie_word_embeddings\": false, \"hidden_act\": \"silu\"}\n";
  {
    const llama_config cfg = llama_model::family_policy::read_config(path(""));
    io::write_random_checkpoint(path("model.safetensors"), io::llama_tensor_specs(cfg), 5);
  }
  const double fp32_stack = double(layers * (h * 3 * h + h * h + h * 2 * inter + inter * h) * 4);
  const std::int64_t before = status_bytes("VmRSS");
  std::ofstream("/proc/self/clear_refs") << "5";
  const llama_model m = llama_model::load(path(""), host_backend{}, weight_format::q8);
  const double peak = double(status_bytes("VmHWM") - before);
  EXPECT_EQ(m.weight_format(), weight_format::q8);
  EXPECT_LT(peak, 0.5 * fp32_stack) << "peak " << peak / 1048576 << " MiB, fp32 stack " << fp32_stack / 1048576
                                    << " MiB";
  std::cout << "[ measured ] load peak into q8: " << peak / 1048576 << " MiB above the start, fp32 stack "
            << fp32_stack / 1048576 << " MiB\n";
}

TEST(WeightFormatModels, ConvertingTwiceIsAnError) {
  llama_model m = llama_model::load(data + "llama/tiny_tied_mha");
  m.store_weights_as(weight_format::f32);  // nothing to do
  m.store_weights_as(weight_format::bf16);
  EXPECT_THROW(m.store_weights_as(weight_format::q8), error);
}

}  // namespace

}  // namespace test_weight_format_models
