// Whole-model tests on the host: the shared model cases (tests/model_cases.hpp: golden fixtures of
// tools/reference and transformers for Huginn, Llama, Mixture-of-Recursions, CALM and TRM / HRM,
// cache decode == recompute, batch == single) at one and all threads, and the host's own: random
// states, chunked prefill, policies, user families.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "muninn/families/huginn/random_weights.hpp"
#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"
#include "model_cases.hpp"
#include "test_model_util.hpp"

using namespace muninn;

namespace {

using muninn_test::data_dir;
using muninn_test::expected;
using muninn_test::ids_of;
using muninn_test::max_abs_diff;

// The host configs of the shared model cases (tests/model_cases.hpp): one thread and every thread.
template <int Threads>
struct host_config {
  using backend = host_backend;
  using storage = float;
  static constexpr bool full_precision = true;
  static constexpr double invariant_tol = 1e-5;
  static double logit_tol(const std::vector<float>&) { return 1e-4; }  // max |Δlogit| against fp32 PyTorch
  // MoR, CALM, TRM / HRM: each fixture's stated fp32 tolerance (expected.json "tolerances")
  static constexpr double mor_tol = 1e-4, calm_tol = 1e-4, trm_tol = 1e-4;
  static bool available() { return true; }
  static const char* skip_reason() { return ""; }
  static const host_backend& get() {
    static const host_backend be{Threads};
    return be;
  }
};

}  // namespace

namespace model_cases {
using host_config_for_tests = host_config<0>;
using HostConfigs = ::testing::Types<host_config<1>, host_config<0>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Host, ModelCases, HostConfigs);
}  // namespace model_cases

TEST(HuginnModel, RandomStateIsSeededAndPerPosition) {
  using M = model<host_backend, float>;
  const M m = M::load(data_dir + "tiny_f32");
  run_options a;
  a.init = state_init::truncated_normal{};
  a.seed = 11;
  a.steps = 2;
  const std::vector<std::int32_t> seq = {1, 2, 3, 4, 5, 6};
  const auto l1 = m.forward(seq, a);
  EXPECT_EQ(max_abs_diff(l1, m.forward(seq, a)), 0.0);  // same seed, same logits
  run_options b = a;
  b.seed = 12;
  EXPECT_GT(max_abs_diff(l1, m.forward(seq, b)), 1e-3);  // another seed, another state
  // Chunking does not change the random state: each position draws from its own counter range.
  context_limits lim;
  lim.max_tokens = 6;
  lim.max_steps = 2;
  lim.max_chunk = 4;
  auto ctx = m.make_context(lim);
  EXPECT_LE(max_abs_diff(m.forward(ctx, seq, a), l1), 1e-5);
}

TEST(HuginnModel, RandomStateHasHuginnStatistics) {
  // std √(2/(5h))·√h = √0.4 ≈ 0.6325 before truncation at ±3σ; truncation shrinks it by ≈1.3%.
  const std::int64_t n = 200000;
  std::vector<float> x(n);
  const float sigma = float(std::sqrt(0.4));
  fill_truncated_normal(host_backend{}, x.data(), n, 3, 0, sigma);
  double s = 0, s2 = 0, mx = 0;
  for (float v : x) {
    s += v;
    s2 += double(v) * v;
    mx = std::max(mx, std::fabs(double(v)));
  }
  const double mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 5 * sigma / std::sqrt(double(n)));
  EXPECT_NEAR(sd, 0.98658 * sigma, 0.005);  // std of N(0,1) truncated at ±3 is 0.98658
  EXPECT_LE(mx, 3.0 * sigma * (1 + 1e-6));
  EXPECT_GT(mx, 2.5 * sigma);
}

TEST(HuginnModel, ClearErrors) {
  using M = model<host_backend, float>;
  const M m = M::load(data_dir + "tiny_f32");
  auto msg = [](auto&& f) {
    try {
      f();
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(msg([&] { m.forward({1, 128}); }).find("token id 128 at index 1 is out of range for vocab_size 128"),
            std::string::npos);
  EXPECT_NE(msg([&] { m.forward({-1}); }).find("token id -1"), std::string::npos);
  EXPECT_NE(msg([&] { m.forward(std::vector<std::int32_t>(65, 1)); }).find("exceeds block_size 64"), std::string::npos);
  auto ctx = m.make_context(4, 2);
  run_options two;
  two.steps = 2;
  EXPECT_NE(msg([&] { m.forward(ctx, {1, 2, 3, 4, 5}, two); }).find("exceeds the context capacity of 4 tokens"),
            std::string::npos);
  run_options deep;
  deep.steps = 3;
  EXPECT_NE(msg([&] { m.forward(ctx, {1}, deep); }).find("at most 2"), std::string::npos);
  // A model compiled for add-injection refuses a concat-adapter checkpoint.
  using A = model<host_backend, float, arch<block::sandwich, injection::add>>;
  EXPECT_NE(msg([&] { A::load(data_dir + "tiny_f32"); }).find("does not match the compiled injection policy add"),
            std::string::npos);
}

// ---------------------------------------------------------------- block and injection from the config
//
// block::from_config and injection::from_config run every Huginn combination with one model type
// (the front end's). Against each fixture's PyTorch logits (model_cases::huginn_fixture, 1e-4), and
// bit for bit against the model compiled for the fixture's own combination: the same kernels run
// in the same order, so any difference is a wrong choice.
namespace {

// The front end's Huginn type (per-token exits compiled in), with the state init a fixture needs.
template <class StateInit = state_init::truncated_normal>
using from_config_arch = huginn_adaptive_arch::with<block::from_config, injection::from_config, StateInit>;

template <class Fixed, class Chosen>
void expect_same_logits(const Fixed& fixed, const Chosen& chosen, const std::vector<std::int32_t>& tokens) {
  for (std::int64_t steps : {1, 3}) {
    run_options o;
    o.init = state_init::zero{};
    o.steps = steps;
    const std::vector<float> a = fixed.forward(tokens, o), b = chosen.forward(tokens, o);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "r = " << steps;
  }
  run_options exits;  // per-token exits: the steps each token ran depend on every layer's output
  exits.init = state_init::zero{};
  exits.steps = 6;
  exits.halt.criterion = halt_criterion::latent_diff;
  exits.halt.threshold = 0.35;
  std::vector<std::int32_t> fixed_steps, chosen_steps;
  exits.steps_used = &fixed_steps;
  const std::vector<float> a = fixed.forward(tokens, exits);
  exits.steps_used = &chosen_steps;
  const std::vector<float> b = chosen.forward(tokens, exits);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "with exits";
  EXPECT_EQ(fixed_steps, chosen_steps);
  EXPECT_LT(*std::min_element(chosen_steps.begin(), chosen_steps.end()), 6) << "no token exited early";
  generate_options g;
  g.max_new_tokens = 8;
  g.run.steps = 2;
  g.run.init = state_init::zero{};
  EXPECT_EQ(generate_greedy(fixed, tokens, g), generate_greedy(chosen, tokens, g));
}

template <class FixedArch, class ChosenArch>
void expect_fixture_same(const std::string& name) {
  for (weight_format f : {weight_format::f32, weight_format::bf16, weight_format::q8}) {
    SCOPED_TRACE(name + ", weights " + weight_format_name(f));
    const auto fixed = model<host_backend, float, FixedArch>::load(data_dir + name, host_backend{}, f);
    const auto chosen = model<host_backend, float, ChosenArch>::load(data_dir + name, host_backend{}, f);
    expect_same_logits(fixed, chosen, {5, 17, 3, 60, 2, 9, 33});
  }
}

}  // namespace

TEST(HuginnFromConfig, MatchesTheReferenceOnEveryFixtureCombination) {
  using C = model_cases::host_config_for_tests;
  model_cases::huginn_fixture<C, from_config_arch<>>("tiny_f32");                           // sandwich, linear
  model_cases::huginn_fixture<C, from_config_arch<>>("tiny_add");                           // sandwich, add
  model_cases::huginn_fixture<C, from_config_arch<state_init::zero>>("tiny_prenorm_gqa");  // pre-norm, add
  model_cases::huginn_fixture<C, from_config_arch<>>("tiny_prenorm_linear");                // pre-norm, linear
  // The compiled fourth combination against its reference too (the model cases hold the others).
  model_cases::huginn_fixture<C, arch<block::pre_norm, injection::concat_linear>>("tiny_prenorm_linear");
}

TEST(HuginnFromConfig, EqualsTheCompiledCombinationBitwise) {
  using A = huginn_adaptive_arch;  // both sides with exits compiled in, as the front end's
  expect_fixture_same<A, from_config_arch<>>("tiny_f32");
  expect_fixture_same<A::with<injection::add>, from_config_arch<>>("tiny_add");
  expect_fixture_same<A::with<block::pre_norm, injection::add, state_init::zero>, from_config_arch<state_init::zero>>(
      "tiny_prenorm_gqa");
  expect_fixture_same<A::with<block::pre_norm>, from_config_arch<>>("tiny_prenorm_linear");
  // Random weights (benchmarks, tests) for pre-norm with the adapter, the same draws for both.
  huginn_config cfg = io::read_model_config(data_dir + "tiny_f32");
  cfg.block_type = "pre_norm";
  const host_backend be;
  using fixed_arch = A::with<block::pre_norm, injection::concat_linear>;
  const model<host_backend, float, fixed_arch> fixed(
      be, cfg, make_random_huginn_weights<host_backend, float, block::pre_norm>(be, cfg, 3));
  const model<host_backend, float, from_config_arch<>> chosen(
      be, cfg, make_random_huginn_weights<host_backend, float, block::from_config>(be, cfg, 3));
  expect_same_logits(fixed, chosen, {1, 2, 3, 4, 5});
}

TEST(HuginnFromConfig, ReadsTheNormsOfTheNamedBlockAndRefusesOthers) {
  EXPECT_EQ(block::layer_norms<block::from_config>("sandwich"), 4);
  EXPECT_EQ(block::layer_norms<block::from_config>("pre_norm"), 2);
  EXPECT_EQ(block::layer_norms<block::sandwich>("pre_norm"), 4);  // a fixed block reads its own
  // Random weights must be told which block's norms to draw (the layers' count picks the block).
  const huginn_config f32_cfg = io::read_model_config(data_dir + "tiny_f32");
  const auto draw = [&](int norms) {
    return make_random_weights<host_backend, float, block::from_config>(host_backend{}, f32_cfg, 1, norms);
  };
  EXPECT_THROW(draw(-1), error);
  EXPECT_EQ(draw(2).core[0].norm[1].size(), std::size_t(f32_cfg.n_embd));
  EXPECT_EQ(draw(2).core[0].norm[2].size(), 0u);
  const auto pre = model<host_backend, float, from_config_arch<state_init::zero>>::load(data_dir + "tiny_prenorm_gqa");
  EXPECT_EQ(pre.weights().core[0].norm[1].size(), std::size_t(pre.config().n_embd));
  EXPECT_EQ(pre.weights().core[0].norm[2].size(), 0u);
  huginn_config cfg = io::read_model_config(data_dir + "tiny_f32");
  cfg.block_type = "post_norm";
  try {
    family::huginn::check<from_config_arch<>>(cfg);
    ADD_FAILURE() << "block_type post_norm accepted";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("block_type \"post_norm\" does not match the compiled block policy "
                                         "block::from_config"),
              std::string::npos)
        << e.what();
  }
  cfg.block_type = "sandwich";
  cfg.injection_type = "gated";
  try {
    family::huginn::check<from_config_arch<>>(cfg);
    ADD_FAILURE() << "injection_type gated accepted";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("injection_type \"gated\" does not match"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- a family written in user code
//
// A family defined here, with a config field and a weight of its own, and an injection policy
// that reads that weight: nothing in the library names them. x_{s+1} = core(x_s + e + b), b the
// family's learned `state_bias`. After one step from the zero state that is core(e + b), which
// injection::add computes from the given state b: the two models must agree exactly.
namespace {
namespace user {

struct bias_config : model_config {
  std::string injection = "add_with_bias";  // what the checkpoint says it was trained with
};

template <class Backend, class T>
struct bias_weights : model_weights<Backend, T> {
  typename Backend::template buffer<T> state_bias;  // [h], added to the state at every step
  explicit bias_weights(model_weights<Backend, T>&& stack) : model_weights<Backend, T>(std::move(stack)) {}
};

struct add_with_bias {
  using slot = muninn::slot::injection;
  static constexpr const char* name = "add_with_bias";
  static constexpr const char* config_name = "add_with_bias";
  static constexpr bool has_weight = true;
  template <class Weights>
  static auto weight(const Weights& w) -> decltype(w.state_bias.data()) {
    return w.state_bias.data();
  }
  template <class Backend, class T>
  static void prepare(const injection_args<Backend, T>&) {}
  template <class Backend, class T>
  static void apply(const injection_args<Backend, T>& a, T*& x, T*&) {
    muninn::add(a.be, x, a.e, x, a.rows * a.h);
    add_bias_rows(a.be, x, a.h, a.weight, a.rows, a.h);
  }
};

struct bias_family {
  using slot = muninn::slot::family;
  static constexpr const char* name = "bias_family";
  using config_type = bias_config;
  template <class Backend, class T>
  using weights_type = bias_weights<Backend, T>;
  static bias_config read_config(const std::string& dir) { fail(dir, ": bias_family models are built in code"); }
  static io::checkpoint open_checkpoint(const std::string& dir, const bias_config&) {
    fail(dir, ": bias_family models are built in code");
  }
  template <class Backend, class T, class Block>
  static bias_weights<Backend, T> load_weights(const Backend&, const io::checkpoint& ck, const bias_config&) {
    fail(ck.source(), ": bias_family models are built in code");
  }
  static bool recognizes(const io::json&) { return false; }
  template <class Arch>
  static void check(const bias_config& cfg) {
    MUNINN_CHECK(cfg.injection == Arch::injection_policy::config_name, cfg.source, ": trained with ", cfg.injection,
                 ", compiled with ", Arch::injection_policy::name);
  }
};

}  // namespace user

TEST(UserFamily, OwnConfigAndWeightsPlugInWithoutALibraryEdit) {
  using biased = huginn_arch::with<block::pre_norm, user::add_with_bias, state_init::zero, user::bias_family>;
  using plain = huginn_arch::with<block::pre_norm, injection::add, state_init::given>;
  static_assert(std::is_same_v<model<host_backend, float, biased>::weights_type, user::bias_weights<host_backend, float>>);
  user::bias_config cfg;
  cfg.n_embd = 32;
  cfg.n_heads = 4;
  cfg.head_dim = 8;
  cfg.n_kv_heads = 4;
  cfg.intermediate_size = 64;
  cfg.vocab_size = 50;
  cfg.n_layers_in_prelude = 1;
  cfg.n_layers_in_recurrent_block = 2;
  cfg.n_layers_in_coda = 1;
  cfg.mean_recurrence = 1;
  cfg.block_size = 16;
  cfg.qk_bias = false;
  cfg.source = "user family test";
  const std::int64_t h = cfg.n_embd;
  host_backend be;
  user::bias_weights<host_backend, float> w(make_random_weights<host_backend, float, block::pre_norm>(be, cfg, 7));
  std::vector<float> b(static_cast<std::size_t>(h));
  for (std::int64_t i = 0; i < h; ++i) b[std::size_t(i)] = 0.3f * std::sin(float(i));
  w.state_bias = be.alloc<float>(b.size());
  be.upload(w.state_bias.data(), b.data(), b.size());
  const model<host_backend, float, biased> m(be, cfg, std::move(w));

  huginn_config hc;
  static_cast<model_config&>(hc) = cfg;
  hc.injection_type = "add";
  hc.block_type = "pre_norm";
  const model<host_backend, float, plain> ref(be, hc, make_random_weights<host_backend, float, block::pre_norm>(be, cfg, 7));

  const std::vector<std::int32_t> ids = {3, 17, 42, 8, 29};
  std::vector<float> given;
  for (std::size_t t = 0; t < ids.size(); ++t) given.insert(given.end(), b.begin(), b.end());
  run_options one;
  one.steps = 1;
  run_options from_b = one;
  from_b.init = state_init::given{};
  from_b.given_state = given.data();
  EXPECT_EQ(max_abs_diff(m.forward(ids, one), ref.forward(ids, from_b)), 0.0);
  // A second step injects e + b again, which the plain model does not: the test can tell.
  run_options two = one, two_from_b = from_b;
  two.steps = two_from_b.steps = 2;
  EXPECT_GT(max_abs_diff(m.forward(ids, two), ref.forward(ids, two_from_b)), 1e-3);

  // The family's own check runs when a model is built: a config trained with another injection is refused.
  user::bias_config other = cfg;
  other.injection = "add";
  user::bias_weights<host_backend, float> w2(make_random_weights<host_backend, float, block::pre_norm>(be, cfg, 7));
  w2.state_bias = be.alloc<float>(b.size());
  try {
    const model<host_backend, float, biased> bad(be, other, std::move(w2));
    ADD_FAILURE() << "a config trained with another injection was accepted";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("trained with add, compiled with add_with_bias"), std::string::npos) << e.what();
  }
}

}  // namespace
