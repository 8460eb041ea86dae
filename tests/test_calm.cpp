// CALM on the host: loading the released layout (and its failure modes), the model's invariants on
// random checkpoints written through the real format, and what only the host runs against our
// PyTorch reference (tools/reference/calm_ref.py, fixtures in tests/data/calm): generate() over
// calm_arch, given draws, Brier scores. The reference's autoencoder, hidden states, head samples
// and generations are model cases, tests/model_cases.hpp, run on the host and on CUDA.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "muninn/families/calm/model.hpp"
#include "muninn/families/calm/random_checkpoint.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/calm_brier.hpp"
#include "muninn/runtime/calm_generate.hpp"
#include "test_calm_util.hpp"
#include "test_io_util.hpp"
#include "test_util.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_calm {

using namespace muninn;
using calm = calm_model<host_backend, float>;

namespace {

calm_shape tiny_shape() {
  calm_shape s;
  s.vocab = 64;
  s.hidden = 32;
  s.inter = 64;
  s.layers = 2;
  s.heads = 4;
  s.positions = 64;
  s.patch = 4;
  s.latent = 8;
  s.noise = 4;
  s.blocks = 2;
  s.ae_hidden = 32;
  s.ae_inter = 64;
  s.ae_layers = 2;
  return s;
}

// Replaces `from` by `to` in a text file (a config edit).
void edit(const std::string& path, const std::string& from, const std::string& to) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from << " not in " << path;
  text.replace(at, from.size(), to);
  muninn_test::write_bytes(path, text);
}

class CalmRandom : public muninn_test::temp_dir_test {
 protected:
  CalmRandom() : temp_dir_test("muninn_calm_") {}
  void SetUp() override {
    temp_dir_test::SetUp();
    ae_ = write_random_calm(dir_.string(), tiny_shape(), 21);
  }
  std::string ae_;
};

}  // namespace

TEST_F(CalmRandom, FindsTheAutoencoderBesideTheWeights) {
  calm m = calm::load(dir_.string());
  EXPECT_EQ(m.patch_size(), 4);
  EXPECT_EQ(m.autoencoder().config().hidden_size, 32);
}

TEST_F(CalmRandom, ARelativeAePathIsFoundFromTheModelFolderWhateverTheCurrentDirectory) {
  // The authors' config names its autoencoder relative to where training ran; a user who keeps
  // the two folders side by side must get the same model from any current directory.
  namespace fs = std::filesystem;
  const fs::path model = path("runs/calm");
  fs::create_directories(model);
  const fs::path ae = write_random_calm(model.string(), tiny_shape(), 21);
  fs::rename(ae, path("runs/my_ae"));
  edit((model / "config.json").string(), "/absent/calm-autoencoder", "../my_ae");
  const fs::path cwd = fs::current_path();
  for (const fs::path& from : {fs::path(dir_), model, fs::path("/")}) {
    fs::current_path(from);
    EXPECT_NO_THROW(calm::load(model.string())) << "from " << from;
  }
  fs::current_path(cwd);
  fs::rename(path("runs/my_ae"), path("runs/gone"));
  const std::string msg = muninn_test::error_of([&] { calm::load(model.string()); });
  EXPECT_NE(msg.find("'" + path("runs/my_ae") + "/config.json'"), std::string::npos) << msg;  // the model folder's
  EXPECT_NE(msg.find("'../my_ae/config.json'"), std::string::npos) << msg;  // then the current directory's
}

TEST_F(CalmRandom, AMissingAutoencoderConfigIsOneErrorThatNamesTheOverride) {
  std::filesystem::rename(ae_, path("elsewhere"));
  const std::string msg = muninn_test::error_of([&] { calm::load(dir_.string()); });
  EXPECT_NE(msg.find("/absent/calm-autoencoder/config.json"), std::string::npos) << msg;  // ae_path was tried
  EXPECT_NE(msg.find("--ae DIR"), std::string::npos) << msg;
  EXPECT_NE(msg.find("eps"), std::string::npos) << msg;
  EXPECT_NO_THROW(calm::load(dir_.string(), path("elsewhere")));
  EXPECT_NE(muninn_test::error_of([&] { calm::load(dir_.string(), path("nowhere")); }).find("has no config.json"),
            std::string::npos);
}

TEST_F(CalmRandom, ChunkSizeMustAgreeBetweenBackboneAndAutoencoder) {
  edit(ae_ + "/config.json", "\"patch_size\": 4", "\"patch_size\": 2");
  const std::string msg = muninn_test::error_of([&] { calm::load(dir_.string()); });
  EXPECT_NE(msg.find("patch_size 4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("patch_size 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find(ae_), std::string::npos) << msg;
}

TEST_F(CalmRandom, AnAutoencoderConfigWithoutEpsTakesTheClassDefault) {
  // rms_norm_eps absent: the reference's class default (1e-6) applies, as transformers would load it.
  edit(ae_ + "/config.json", "\"rms_norm_eps\": 1e-06, ", "");
  EXPECT_FLOAT_EQ(calm::load(dir_.string()).autoencoder().config().eps, 1e-6f);
}

TEST_F(CalmRandom, AMisshapenTensorNamesTheTensorAndTheConfigValue) {
  edit(path("config.json"), "\"noise_size\": 4", "\"noise_size\": 5");
  const std::string msg = muninn_test::error_of([&] { calm::load(dir_.string()); });
  EXPECT_NE(msg.find("generative_head.noise_embd.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("noise_size=5"), std::string::npos) << msg;
}

TEST_F(CalmRandom, ChunkedPrefillEqualsOnePass) {
  calm m = calm::load(dir_.string());
  std::vector<std::int32_t> ids(24);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int32_t((i * 37 + 5) % 63);
  auto one = m.make_context(6);
  const std::vector<float> all = m.hidden(one, ids, logits_for::all);
  auto ctx = m.make_context(6);
  const std::int64_t d = m.config().backbone.n_embd;
  for (std::int64_t c = 0; c < 6; ++c) {
    const std::vector<std::int32_t> chunk(ids.begin() + c * 4, ids.begin() + c * 4 + 4);
    const std::vector<float> h = m.hidden(ctx, chunk, logits_for::last);
    const std::vector<float> want(all.begin() + c * d, all.begin() + (c + 1) * d);
    EXPECT_LT(muninn_test::max_abs_diff(h, want), 1e-5) << "chunk " << c;
  }
}

// The model under calm_arch takes ids K per position: its context counts positions and keeps
// every id; a call that is not whole chunks is one error naming the input policy.
TEST_F(CalmRandom, TheArchModelTakesIdsKPerPosition) {
  calm m = calm::load(dir_.string());
  const auto& a = m.arch_model();
  EXPECT_EQ(a.tokens_per_position(), 4);
  EXPECT_EQ(a.tokens_per_emission(), 4);
  EXPECT_EQ(a.output_width(), m.config().backbone.n_embd);
  auto ctx = m.make_context(6);
  const std::vector<std::int32_t> ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  a.forward(ctx, ids, run_options{}, logits_for::last);
  EXPECT_EQ(ctx.length(), 3);
  EXPECT_EQ(ctx.tokens(), ids);
  ctx.truncate(2);
  EXPECT_EQ(ctx.tokens(), std::vector<std::int32_t>(ids.begin(), ids.begin() + 8));
  EXPECT_THAT(muninn_test::error_of([&] { a.forward(ctx, {1, 2, 3}, run_options{}, logits_for::last); }),
              testing::HasSubstr("3 tokens is not a whole number of positions of 4 tokens (chunk_compress input)"));
}

TEST_F(CalmRandom, ASampleDependsOnlyOnSeedPositionAndIndex) {
  calm m = calm::load(dir_.string());
  auto ctx = m.make_context(4);
  const std::vector<float> h = m.hidden(ctx, {1, 2, 3, 4, 5, 6, 7, 8}, logits_for::last);
  const auto five = m.sample_chunks(h, 1, 99, 0, 5);
  const auto two = m.sample_chunks(h, 1, 99, 3, 2);
  EXPECT_EQ(std::vector<std::int32_t>(five.begin() + 12, five.end()), two);
  EXPECT_NE(m.sample_chunks(h, 2, 99, 0, 5), five);  // another position draws other noise
}

TEST_F(CalmRandom, DecodingInBlocksEqualsOneBlock) {
  calm m = calm::load(dir_.string());
  const std::int64_t l = m.config().latent_size, n = 7;
  const std::vector<float> z = muninn_test::random_vec(std::size_t(n * l), 5, -3.0f, 3.0f);
  const std::vector<std::int32_t> whole = m.autoencoder().decode(z);
  host_backend be;
  auto dz = be.alloc<float>(z.size());
  std::copy(z.begin(), z.end(), dz.data());
  std::vector<std::int32_t> blocks(whole.size());
  m.autoencoder().decode_argmax(dz.data(), n, blocks.data(), 1);  // one chunk per block
  EXPECT_EQ(blocks, whole);
}

TEST_F(CalmRandom, GenerationPadsThePromptRemovesPadsAndStopsAtMaxLength) {
  calm m = calm::load(dir_.string());
  calm_generate_options o;
  o.temperature = 1.0;
  o.max_length = 17;  // padded prompt 8 → chunks at 8, 12, 16 → stops at 20 >= 17
  o.seed = 4;
  const calm_generation g = generate_calm(m, {3, 4, 5, 6, 7}, o);
  EXPECT_EQ(g.padded.size() % 4, 0u);
  EXPECT_EQ(g.padded[5], 63);  // the pad id
  EXPECT_TRUE(g.stopped_at_eos || g.padded.size() == 20u) << g.padded.size();
  EXPECT_EQ(std::count(g.ids.begin(), g.ids.end(), 63), 0);
  EXPECT_EQ(std::vector<std::int32_t>(g.ids.begin(), g.ids.begin() + 5), (std::vector<std::int32_t>{3, 4, 5, 6, 7}));
  EXPECT_EQ(generate_calm(m, {3, 4, 5, 6, 7}, o).padded, g.padded);  // seeded: reproducible
}

// ---------------------------------------------------------------- against tools/reference/calm_ref.py

using muninn_test::calm_data;
using muninn_test::floats_of;
using muninn_test::calm_expected;

TEST(CalmReference, TheReleasedLayoutsLoad) {
  // calm/: .bin with the autoencoder embedded and the head under both prefixes (one storage);
  // its config's ae_path does not exist, so the autoencoder's config comes from --ae.
  EXPECT_NE(muninn_test::error_of([] { calm::load(calm_data + "calm"); }).find("--ae DIR"), std::string::npos);
  calm bin = calm::load(calm_data + "calm", calm_data + "ae");
  calm st = calm::load(calm_data + "calm_safetensors", calm_data + "ae");  // no embedded autoencoder
  const auto ids = muninn_test::ids_of(calm_expected().at("ids"));
  auto c1 = bin.make_context(6);
  auto c2 = st.make_context(6);
  EXPECT_EQ(bin.hidden(c1, ids), st.hidden(c2, ids));
  EXPECT_EQ(bin.autoencoder().reconstruct(ids), st.autoencoder().reconstruct(ids));
}

namespace {
calm& fixture_model() {
  static calm m = calm::load(calm_data + "calm", calm_data + "ae");
  return m;
}
}  // namespace

// The fixture's autoencoder latents and decoded tokens, backbone hidden states, head samples and
// generations (generate_calm at every temperature and sampler) are model cases,
// tests/model_cases.hpp, run on the host and on CUDA.

// The same generations from `generate`, which serves calm_arch as any arch: the prompt padded to
// whole chunks, the energy head's sampler drawing each chunk, EOS as a stop id.
TEST(CalmReference, GenerateServesTheCalmArchAsTheReferenceGenerates) {
  calm& m = fixture_model();
  const std::int64_t K = m.patch_size();
  for (const auto& c : calm_expected().at("generate").as_array()) {
    SCOPED_TRACE(c.at("name").as_string());
    std::vector<std::int32_t> padded = muninn_test::ids_of(c.at("prompt"));
    padded.resize((padded.size() + std::size_t(K) - 1) / std::size_t(K) * std::size_t(K),
                  std::int32_t(m.config().pad_id));
    generate_options g;
    g.chunks.temperature = c.at("temperature").as_double();
    g.chunks.sampler = c.at("sampler").as_string() == "exact" ? chunk_sampler::exact : chunk_sampler::approximate;
    if (const io::json* n = c.find("num_samples")) g.chunks.num_samples = n->as_int();
    g.chunks.seed = std::uint64_t(c.at("seed").as_int());
    g.max_new_tokens = std::max<std::int64_t>(1, c.at("max_length").as_int() - std::int64_t(padded.size()));
    g.stop_ids = {std::int32_t(m.config().eos_id)};
    std::vector<std::int32_t> picked;  // each chunk's head taps: the arg-max of its ae.logits rows
    const std::int64_t V = m.config().backbone.vocab_size;
    g.run.taps.names = {"ae.logits"};
    g.run.taps.on_tap = [&](const tap_event& e) {
      ASSERT_EQ(e.name, "ae.logits");
      ASSERT_EQ(e.step, std::int64_t(picked.size()) / K);
      for (std::int64_t r = 0; r < e.rows; ++r)
        picked.push_back(std::int32_t(std::max_element(e.data + r * V, e.data + (r + 1) * V) - (e.data + r * V)));
    };
    const generate_result r = generate(m.arch_model(), padded, g);
    EXPECT_EQ(picked, r.tokens);
    EXPECT_EQ(std::int64_t(r.tokens.size()) % K, 0);  // whole chunks
    std::vector<std::int32_t> full = padded;
    full.insert(full.end(), r.tokens.begin(), r.tokens.end());
    EXPECT_EQ(full, muninn_test::ids_of(c.at("full")));
    EXPECT_EQ(r.forward_calls, std::int64_t(r.tokens.size()) / K);  // one call per chunk, the prefill's included
  }
}

// Draws given to our reference (tools/reference/make_calm_order_fixture.py writes reference_order/):
// with the authors' candidate order Muninn reproduces that generation token for token; the default
// key order, fed the same draws, picks another chunk on some step (so the order matters).
TEST(CalmReference, GivenDrawsReproduceTheReferenceOrderGeneration) {
  const std::string dir = calm_data + "reference_order/";
  const io::json e = io::read_json_file(dir + "expected.json");
  calm& m = fixture_model();
  calm_generate_options o;
  o.temperature = e.at("temperature").as_double();
  o.num_samples = e.at("num_samples").as_int();
  o.max_length = e.at("max_length").as_int();
  o.noise = io::read_npy_f32(dir + "noise.npy").data;
  o.uniforms = io::read_npy_f64(dir + "uniforms.npy").data;
  o.order = chunk_order::reference;
  const std::vector<std::int32_t> prompt = muninn_test::ids_of(e.at("prompt"));
  const calm_generation g = generate_calm(m, prompt, o);
  EXPECT_EQ(g.ids, muninn_test::ids_of(e.at("reference_output")));
  EXPECT_EQ(std::int64_t(g.draws.size()), e.at("steps").as_int());
  o.order = chunk_order::key;
  const calm_generation k = generate_calm(m, prompt, o);
  EXPECT_EQ(k.ids, muninn_test::ids_of(e.at("key_output")));
  EXPECT_NE(k.ids, g.ids);
}

TEST(CalmReference, GivenNoiseAtTemperatureOneEqualsTheStreamItReplaces) {
  calm& m = fixture_model();
  calm_generate_options o;
  o.temperature = 1.0;
  o.seed = 7;
  o.max_length = 24;
  const std::vector<std::int32_t> prompt = {12, 50, 30, 27, 29};
  const calm_generation want = generate_calm(m, prompt, o);
  for (std::int64_t p = 1; p <= std::int64_t(want.draws.size()); ++p) {  // the padded prompt is 2 chunks
    const std::vector<float> u = calm_noise(o.seed, p, 0, 1, m.config().noise_size);
    o.noise.insert(o.noise.end(), u.begin(), u.end());
  }
  o.seed = 99;  // the given noise, not the seed, decides
  EXPECT_EQ(generate_calm(m, prompt, o).ids, want.ids);
}

namespace {
constexpr double kTol = 1e-4;  // fp32, as the fixture's "tolerances.float" states

// Every tap of a run, keyed "name@step", rows appended over the calls that reached it.
struct tap_log {
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, std::vector<std::int64_t>> positions;
  std::map<std::string, std::int64_t> calls;
  tap_options options() {
    tap_options t;
    t.on_tap = [this](const tap_event& e) {
      const std::string key = std::string(e.name) + "@" + std::to_string(e.step);
      values[key].insert(values[key].end(), e.data, e.data + e.rows * e.cols);
      if (e.positions) positions[key].insert(positions[key].end(), e.positions, e.positions + e.rows);
      ++calls[key];
    };
    return t;
  }
};
}  // namespace

// The backbone's taps through calm_model::hidden: the compressor output is the reference's
// embed_proj, the last layer's output is head.input, and RMSNorm of head.input with the backbone's
// final norm weight (written out here) is the logits tap, which is the call's result.
TEST(CalmReference, BackboneTapsAreTheReferencesTensors) {
  const io::json& e = calm_expected();
  calm& m = fixture_model();
  tap_log log;
  run_options run;
  run.taps = log.options();
  auto ctx = m.make_context(6);
  const std::vector<float> h = m.hidden(ctx, muninn_test::ids_of(e.at("ids")), run);
  EXPECT_LE(muninn_test::max_abs_diff(log.values.at("embeddings@-1"), floats_of(e.at("embed_proj"))), kTol);
  EXPECT_EQ(log.values.at("logits@-1"), h);
  EXPECT_EQ(log.values.at("prelude.layer.1@-1"), log.values.at("head.input@-1"));
  EXPECT_NE(log.values.at("prelude.layer.0@-1"), log.values.at("head.input@-1"));
  const std::vector<float>& x = log.values.at("head.input@-1");
  const std::int64_t d = m.config().backbone.n_embd;
  std::vector<float> w(static_cast<std::size_t>(d));
  m.backend().download(w.data(), m.arch_model().weights().ln_f.data(), w.size());
  std::vector<float> normed(x.size());
  for (std::size_t r = 0; r < x.size() / std::size_t(d); ++r) {
    double ss = 0;
    for (std::int64_t c = 0; c < d; ++c) ss += double(x[r * d + c]) * x[r * d + c];
    const double inv = 1.0 / std::sqrt(ss / double(d) + double(m.config().backbone.norm_eps));
    for (std::int64_t c = 0; c < d; ++c) normed[r * d + c] = float(double(x[r * d + c]) * inv * w[std::size_t(c)]);
  }
  EXPECT_LE(muninn_test::max_abs_diff(normed, h), 1e-5);
  auto plain_ctx = m.make_context(6);
  EXPECT_EQ(m.hidden(plain_ctx, muninn_test::ids_of(e.at("ids"))), h);  // the old signature, no taps
}

// A generation's taps against the reference's record of each step: the logits tap of call s is the
// hidden state it recorded, head.samples decode to its pool of samples (every drawn chunk, in draw
// order: Algorithm 2's N and Algorithm 1's draws), ae.logits pick the chunk it generated and
// decode head.latent; the generation is the same with every tap taken.
TEST(CalmReference, GenerationTapsFollowTheReferenceStepByStep) {
  calm& m = fixture_model();
  const std::int64_t K = m.patch_size(), l = m.config().latent_size, V = m.config().backbone.vocab_size;
  for (const auto& c : calm_expected().at("generate").as_array()) {
    SCOPED_TRACE(c.at("name").as_string());
    calm_generate_options o = muninn_test::calm_generate_options_of(c);
    const std::vector<std::int32_t> prompt = muninn_test::ids_of(c.at("prompt"));
    const calm_generation plain = generate_calm(m, prompt, o);
    tap_log log;
    o.run.taps = log.options();
    const calm_generation tapped = generate_calm(m, prompt, o);
    EXPECT_EQ(tapped.padded, plain.padded);
    EXPECT_EQ(tapped.draws, plain.draws);
    const auto& steps = c.at("steps").as_array();
    ASSERT_EQ(tapped.draws.size(), steps.size());
    // one backbone call per step: the prompt's, then each chunk but the last
    const std::vector<float>& hidden = log.values.at("logits@-1");
    ASSERT_EQ(hidden.size(), steps.size() * std::size_t(m.config().backbone.n_embd));
    for (std::size_t s = 0; s < steps.size(); ++s) {
      SCOPED_TRACE("step " + std::to_string(s));
      const std::string at = "@" + std::to_string(s);
      const std::int64_t d = m.config().backbone.n_embd;
      const std::vector<float> row(hidden.begin() + std::ptrdiff_t(s * d), hidden.begin() + std::ptrdiff_t((s + 1) * d));
      EXPECT_LE(muninn_test::max_abs_diff(row, floats_of(steps[s].at("hidden"))), kTol);
      const std::vector<float>& samples = log.values.at("head.samples" + at);
      EXPECT_EQ(std::int64_t(samples.size()), tapped.draws[s] * l);
      if (const io::json* pool = steps[s].find("pool")) {
        EXPECT_EQ(m.autoencoder().decode(samples), muninn_test::ids_of(*pool));
      }
      const std::vector<float>& logits = log.values.at("ae.logits" + at);
      ASSERT_EQ(std::int64_t(logits.size()), K * V);
      std::vector<std::int32_t> picked;
      for (std::int64_t r = 0; r < K; ++r)
        picked.push_back(std::int32_t(std::max_element(logits.begin() + r * V, logits.begin() + (r + 1) * V) -
                                      (logits.begin() + r * V)));
      EXPECT_EQ(picked, muninn_test::ids_of(steps[s].at("chunk")));
      const std::vector<float>& latent = log.values.at("head.latent" + at);
      EXPECT_EQ(m.autoencoder().decode(latent), picked);
      const std::int64_t j = log.positions.at("head.latent" + at).at(0);
      EXPECT_EQ(latent, std::vector<float>(samples.begin() + j * l, samples.begin() + (j + 1) * l));
      const std::int64_t p = steps[s].at("position").as_int();
      EXPECT_EQ(log.positions.at("ae.logits" + at).front(), (p + 1) * K);
    }
  }
}

TEST(CalmReference, GivenDrawsThatDoNotFitAreOneError) {
  calm& m = fixture_model();
  const std::vector<std::int32_t> prompt = {12, 50, 30, 27, 29};
  calm_generate_options o;
  o.num_samples = 4;
  o.max_length = 40;
  o.noise.assign(2 * 4 * 4, 0.25f);  // two steps of 4 samples x noise_size 4
  EXPECT_THAT(muninn_test::error_of([&] { generate_calm(m, prompt, o); }),
              ::testing::HasSubstr("calm generate: the given noise holds 2 steps of 4 samples x noise_size 4; step 3 "
                                   "needs one more"));
  o.noise.pop_back();
  EXPECT_THAT(muninn_test::error_of([&] { generate_calm(m, prompt, o); }),
              ::testing::HasSubstr("not a whole number of steps of 4 samples x noise_size 4"));
  o.noise.push_back(std::numeric_limits<float>::quiet_NaN());
  EXPECT_THAT(muninn_test::error_of([&] { generate_calm(m, prompt, o); }),
              ::testing::HasSubstr("calm generate: given noise value 31 is nan"));
  o.noise.clear();
  o.uniforms = {0.5, 1.0};
  EXPECT_THAT(muninn_test::error_of([&] { generate_calm(m, prompt, o); }),
              ::testing::HasSubstr("given uniforms: choice uniform 1 must lie in [0, 1), got 1"));
  o.uniforms = {0.5};
  o.sampler = calm_sampler::exact;
  EXPECT_THAT(muninn_test::error_of([&] { generate_calm(m, prompt, o); }),
              ::testing::HasSubstr("given choice uniforms need the batch approximation below T = 1"));
}

TEST(CalmReference, BrierOfTheTeacherForcedSequence) {
  const io::json& b = calm_expected().at("brier");
  const brier_values got = calm_brier_block(fixture_model(), muninn_test::ids_of(calm_expected().at("ids")),
                                            brier_draws{std::uint64_t(b.at("seed").as_int()), 0})
                               .means();
  for (int n = 0; n < 4; ++n)
    EXPECT_NEAR(got[std::size_t(n)], b.at("brier" + std::to_string(n + 1)).as_double(), 1e-6) << "Brier-" << n + 1;
}

TEST_F(CalmRandom, HeadTwinsThatDifferAreOneError) {
  // The head stored under both names with different values (each twin drawn apart).
  const calm_config cfg = io::read_calm_config(dir_.string());
  std::vector<io::tensor_spec> specs = io::calm_backbone_tensor_specs(cfg);
  for (const char* prefix : io::calm_head_prefixes)
    for (auto& t : io::energy_head_tensor_specs(cfg, prefix, false)) specs.push_back(t);
  io::write_random_checkpoint(path("model.safetensors"), specs, 77);
  const std::string msg = muninn_test::error_of([&] { calm::load(dir_.string()); });
  EXPECT_NE(msg.find("differs from its twin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("generative_head.noise_embd.weight"), std::string::npos) << msg;
}

// K < 4: the collision term is rolled out along sample 1's path. The oracle below recomputes every
// rollout from a fresh cache (gold chunks 0 … p, then sample 1's chunks) instead of truncating one
// cache, and counts the windows itself. The head's noise weights are scaled down so that samples
// often agree and rollouts reach their second step, where the cache path matters.
namespace {

struct rollout_oracle {
  brier_values brier{};
  int second_steps = 0;      // rollouts that fed sample 1's chunk
  int second_step_hits = 0;  // … and whose two fresh samples agreed
};

rollout_oracle short_chunk_oracle(calm& m, const std::vector<std::int32_t>& block, std::uint64_t seed) {
  const std::int64_t K = m.patch_size(), L = std::int64_t(block.size()) / K, P = L - 1, S = (4 + K - 1) / K;
  const std::int64_t d = m.config().backbone.n_embd;
  auto ctx = m.make_context(L);
  const std::vector<float> h = m.hidden(ctx, block, logits_for::all);
  const auto pred = m.sample_chunks_rows(std::vector<float>(h.begin(), h.begin() + P * d), 0, stream_seed(seed, 4, 0), 2);
  rollout_oracle o;
  for (std::int64_t p = 0; p + S < P; ++p) {
    std::vector<std::int32_t> a(pred.begin() + 2 * p * K, pred.begin() + (2 * p + 1) * K);
    std::vector<std::int32_t> b(pred.begin() + (2 * p + 1) * K, pred.begin() + (2 * p + 2) * K);
    std::array<bool, 4> same{};
    for (std::int64_t j = 0; j < S; ++j) {
      if (j > 0) {
        ++o.second_steps;
        auto fresh = m.make_context(L);
        m.hidden(fresh, std::vector<std::int32_t>(block.begin(), block.begin() + (p + 1) * K), logits_for::last);
        const auto hj = m.hidden(fresh, a, logits_for::last);
        const auto two = m.sample_chunks_rows(hj, p + j, stream_seed(seed, 4, std::uint64_t(1 + p)), 2);
        a.assign(two.begin(), two.begin() + K);
        b.assign(two.begin() + K, two.end());
        o.second_step_hits += a == b;
      }
      for (std::int64_t k = 0; k < K && j * K + k < 4; ++k) same[std::size_t(j * K + k)] = a[std::size_t(k)] == b[std::size_t(k)];
      if (a != b) break;
    }
    bool hit1 = true, hit2 = true, col = true;
    for (int t = 0; t < 4; ++t) {
      const std::int64_t c = p + t / K, k = t % K;
      hit1 = hit1 && pred[std::size_t(2 * c * K + k)] == block[std::size_t((c + 1) * K + k)];
      hit2 = hit2 && pred[std::size_t((2 * c + 1) * K + k)] == block[std::size_t((c + 1) * K + k)];
      col = col && same[std::size_t(t)];
      o.brier[std::size_t(t)] += double(hit1) + double(hit2) - double(col);
    }
  }
  for (double& v : o.brier) v /= double(P - S);
  return o;
}

// Rewrites `file` with tensor `name` changed by `edit(values, shape)`.
template <class Edit>
void rewrite_tensor(const std::string& file, const std::string& name, Edit&& edit) {
  std::vector<std::pair<std::string, io::tensor_to_write>> tensors;
  {
    const io::checkpoint ck = io::checkpoint::open(file);
    for (const auto& t : ck.tensors()) {
      std::vector<float> v = ck.read_f32(t.name);
      if (t.name == name) edit(v, t.shape);
      tensors.push_back({t.name, io::tensor_to_write{t.shape, std::move(v)}});
    }
  }
  io::write_safetensors(file, tensors);
}

}  // namespace

TEST_F(CalmRandom, BrierWithShortChunksRollsOutTheCollisionTerm) {
  // The decoder's output matrix (the encoder embedding) gets only `distinct` different rows, so
  // decoded tokens take few values and two samples agree often enough for rollouts to reach their
  // second step, where the cache path matters (arg-max ties go to the first index everywhere).
  calm_shape s = tiny_shape();
  s.patch = 2;
  std::vector<std::int32_t> block(96);
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = std::int32_t((i * 11 + 3) % 60);
  bool mixed = false;  // some second steps agreed and some did not
  for (const std::int64_t distinct : {64, 4, 2}) {
    SCOPED_TRACE(distinct);
    write_random_calm(dir_.string(), s, 21);
    rewrite_tensor(ae_ + "/model.safetensors", "encoder.embed_tokens.weight",
                   [&](std::vector<float>& v, const std::vector<std::int64_t>& shape) {
                     for (std::int64_t r = 0; r < shape[0]; ++r)
                       std::copy(v.begin() + (r % distinct) * shape[1], v.begin() + (r % distinct + 1) * shape[1],
                                 v.begin() + r * shape[1]);
                   });
    calm m = calm::load(dir_.string());
    const rollout_oracle want = short_chunk_oracle(m, block, 5);
    const brier_values got = calm_brier_block(m, block, brier_draws{5, 0}).means();
    for (int n = 0; n < 4; ++n) EXPECT_NEAR(got[std::size_t(n)], want.brier[std::size_t(n)], 1e-12) << "Brier-" << n + 1;
    mixed = mixed || (want.second_step_hits > 0 && want.second_step_hits < want.second_steps);
  }
  EXPECT_TRUE(mixed) << "no setting gave rollouts that both agreed and differed: the check is too weak";
}

}  // namespace test_calm
