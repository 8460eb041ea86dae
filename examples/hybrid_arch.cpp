// Hybrids no single reference system builds, composed in user code from the library's slots:
// (a) a Huginn-style recurrent core (sandwich blocks, additive injection of the prelude output,
//     one KV slot per executed layer) with adaptive halting, under middle-cycle sharing, where an
//     expert-choice router decides before each step which tokens go on recurring;
// (b) the same core with CALM's chunk input and energy head: a recurrent-depth CALM that reads and
//     writes K tokens per position.
//
// Random weights; the program checks what it claims and exits non-zero otherwise:
// - (a) greedy decoding with the KV cache gives the tokens (and logits) that recomputing the
//   whole sequence without a cache gives; the router dropped some tokens and the halting
//   criterion stopped others, so tokens really ran different depths;
// - (b) sampled decoding (temperature 1/2, batch approximation) emits K tokens per step, and the
//   chunks equal those the head's sampler draws from a full recomputation; BrierLM evaluates it
//   as it evaluates CALM, and its Brier-n equal a count over the head's samples.
//
//   example_hybrid_arch
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <vector>

#include "muninn/families/calm/arch.hpp"
#include "muninn/families/calm/random_checkpoint.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/sampled_brier.hpp"

using namespace muninn;

namespace {

// Where the router dropped each token (position -> the step it did not run); read by the checks.
std::map<std::int64_t, std::int64_t> g_dropped;

// Router: expert choice with the causal rule of Mixture-of-Recursions. Step s >= 1 has its own
// router (the family's `mor_weights::routers[s]`, a linear map h -> 1 on the state); a token takes
// step s only when sigma(router_s(x)) >= 0.5, else it leaves the recursion. Step 0 takes every
// token. The rule looks at one token at a time, so decoding with a cache sees what a full
// recomputation sees. `routes` is false: depths come from exits, which the pass handles per token.
struct step_expert_choice {
  using slot = muninn::slot::router;
  static constexpr bool routes = false;
  static constexpr const char* name = "step_expert_choice";

  // One flag per run of the pass (1: leaves before step s), from the run's last token.
  template <class Pass>
  static std::vector<std::uint8_t> drops(Pass& p, std::int64_t s) {
    const auto& m = p.model();
    const auto& be = m.backend();
    const auto& routers = m.weights().routers;
    MUNINN_CHECK(s < std::int64_t(routers.size()), "step_expert_choice: step ", s, " has no router (",
                 routers.size(), " routers)");
    const std::int64_t h = m.dims().h;
    const auto& runs = p.rows().runs();
    float* score = p.ws().logits();  // scratch: the head has not run at this point of the step
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const float* last = p.x() + (runs[k].row0 + runs[k].n - 1) * h;
      gemm_nt(be, 1, 1, h, 1.0f, last, h, routers[std::size_t(s)].w1.data(), h, 0.0f, score + k, 1);
    }
    std::vector<float> z(runs.size());
    be.download(z.data(), score, z.size());
    std::vector<std::uint8_t> drop(runs.size(), 0);
    for (std::size_t k = 0; k < runs.size(); ++k) {
      drop[k] = z[k] < 0.0f;  // sigma(z) < 0.5
      if (drop[k]) g_dropped[runs[k].pos0 + runs[k].n - 1] = s;
    }
    return drop;
  }
};

// Recurrence: Huginn's core loop with the Router slot's decision before every step.
struct routed_core_loop {
  using slot = muninn::slot::recurrence;
  static constexpr const char* name = "routed_core_loop";
  template <class Pass>
  static void run(Pass& p) {
    p.embed();
    p.run_layers(layer_group::prelude, p.e());
    p.start_state();
    p.prepare_injection();
    for (std::int64_t s = 0; s < p.max_steps() && p.any_active(); ++s) {
      if (s > 0) p.exit_runs(Pass::arch_type::router_policy::drops(p, s));  // the router's choice
      if (!p.any_active()) break;
      p.inject();                                 // x = x + e
      p.run_layers(layer_group::core, p.x(), s);  // the core, as middle_cycle says
      p.end_step(s);                              // the halting criterion; converged tokens leave
    }
    p.emit_rest(p.x());
  }
  template <class Pass, class T>
  static void readout(Pass& p, T* y) {  // as Huginn: ln_f, then the coda
    p.final_norm(y);
    p.run_layers(layer_group::coda, y);
  }
};

// Huginn's slots, with the core's injection, sharing, router, halting and recurrence chosen here
// and the Mixture-of-Recursions family (its config and weights carry the routers).
using hybrid_arch = huginn_arch::with<injection::add, state_init::zero, sharing::middle_cycle, step_expert_choice,
                                      halting::adaptive, routed_core_loop, family::mor>;
using hybrid_model = model<host_backend, float, hybrid_arch>;

mor_config small_config() {
  mor_config cfg;
  cfg.n_embd = 64;
  cfg.n_heads = 4;
  cfg.n_kv_heads = 2;
  cfg.head_dim = 16;
  cfg.intermediate_size = 128;
  cfg.vocab_size = 256;
  cfg.n_layers_in_prelude = 1;
  cfg.n_layers_in_recurrent_block = 2;
  cfg.n_layers_in_coda = 1;
  cfg.mean_recurrence = 8;
  cfg.block_size = 64;
  cfg.qk_bias = false;
  cfg.mor.recursions = cfg.mean_recurrence;  // one router per step
  cfg.source = "hybrid_arch example";
  return cfg;
}

// One random linear router per step, appended to w.routers.
template <class Weights>
void add_random_routers(const host_backend& be, const model_config& cfg, std::int64_t steps, Weights& w) {
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(float(cfg.n_embd)));
  for (std::int64_t r = 0; r < steps; ++r) {
    std::vector<float> v(std::size_t(cfg.n_embd));
    for (float& x : v) x = normal(rng);
    router_weights<host_backend, float> rw;
    rw.w1 = be.alloc<float>(v.size());
    be.upload(rw.w1.data(), v.data(), v.size());
    w.routers.push_back(std::move(rw));
  }
}

// The stack's random weights plus one random linear router per step.
mor_weights<host_backend, float> random_weights(const host_backend& be, const mor_config& cfg) {
  mor_weights<host_backend, float> w(make_random_weights<host_backend, float, block::sandwich>(be, cfg, 7));
  add_random_routers(be, cfg, cfg.mor.recursions, w);
  return w;
}

int failures = 0;
void check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

// (a) greedy decoding of the routed, adaptive core against a full recomputation.
void routed_adaptive_core() {
  const mor_config cfg = small_config();
  host_backend be;
  hybrid_model m(be, cfg, random_weights(be, cfg));
  std::printf("routed adaptive core: %lld parameters\n", (long long)m.parameter_count());

  const std::vector<std::int32_t> prompt = {3, 14, 15, 92, 65};
  generate_options g;
  g.max_new_tokens = 12;
  g.run.steps = cfg.mean_recurrence;
  g.run.halt.criterion = halt_criterion::latent_diff;
  g.run.halt.threshold = 0.1;
  g.run.halt.min_steps = 1;
  g_dropped.clear();
  const generate_result r = generate(m, prompt, g);
  std::printf("generated:");
  for (std::size_t i = 0; i < r.tokens.size(); ++i) std::printf(" %d(%d steps)", r.tokens[i], r.steps[i]);
  std::printf("\n");
  const std::map<std::int64_t, std::int64_t> decode_drops = g_dropped;

  // Recompute: the prompt and every generated token but the last, in one call on a fresh context.
  std::vector<std::int32_t> all = prompt;
  all.insert(all.end(), r.tokens.begin(), r.tokens.end() - 1);
  std::vector<std::int32_t> steps;
  run_options run = g.run;
  run.steps_used = &steps;
  g_dropped.clear();
  const std::vector<float> logits = m.forward(all, run);
  const std::int64_t V = cfg.vocab_size, P = std::int64_t(prompt.size());
  bool same_tokens = true, same_steps = true;
  for (std::size_t t = 0; t < r.tokens.size(); ++t) {
    const std::int64_t row = P - 1 + std::int64_t(t);
    same_tokens &= argmax_host(logits.data() + row * V, V) == r.tokens[t];
    same_steps &= steps[std::size_t(row)] == r.steps[t];
  }
  double diff = 0;
  for (std::int64_t v = 0; v < V; ++v)
    diff = std::max(diff, std::fabs(double(logits[std::size_t((std::int64_t(all.size()) - 1) * V + v)]) -
                                    r.last_logits[std::size_t(v)]));
  check(same_tokens, "cached greedy decode gives the tokens of a full recomputation");
  check(same_steps, "each token ran the same depth in both");
  check(diff <= 1e-4, "the last token's logits agree within 1e-4");
  check(decode_drops == g_dropped, "the router dropped the same tokens at the same steps in both");

  // Depths: some tokens left by the router, some by the halting criterion, before the last step.
  std::int64_t by_router = 0, by_halting = 0;
  bool drops_stop = true;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto d = g_dropped.find(std::int64_t(i));
    if (d != g_dropped.end()) {
      ++by_router;
      drops_stop &= steps[i] == d->second;  // dropped before step s: s steps ran
    } else if (steps[i] < cfg.mean_recurrence) {
      ++by_halting;
    }
  }
  std::printf("of %zu tokens: %lld left by the router, %lld by the halting criterion\n", steps.size(),
              (long long)by_router, (long long)by_halting);
  check(by_router > 0 && drops_stop, "the router dropped some tokens, each before the step it skipped");
  check(by_halting > 0, "the halting criterion stopped some tokens");
}

// ---- (b) the same core with CALM's chunk input and energy head

// A family of our own: CALM's config and weights (compressor, energy head, autoencoder) plus the
// router of each step. It is built from random weights here, so reading a folder is refused.
template <class Backend, class T>
struct rd_calm_weights : calm_weights<Backend, T> {
  std::vector<router_weights<Backend, T>> routers;  // read by step_expert_choice
};
struct rd_calm_family {
  using slot = muninn::slot::family;
  static constexpr const char* name = "recurrent_depth_calm";
  using config_type = calm_model_config;
  template <class Backend, class T>
  using weights_type = rd_calm_weights<Backend, T>;
  static config_type read_config(const std::string&) { fail("recurrent_depth_calm: random weights only"); }
  static io::checkpoint open_checkpoint(const std::string&, const config_type&) {
    fail("recurrent_depth_calm: random weights only");
  }
  template <class Backend, class T, class Block>
  static weights_type<Backend, T> load_weights(const Backend&, const io::checkpoint&, const config_type&) {
    fail("recurrent_depth_calm: random weights only");
  }
  static bool recognizes(const io::json&) { return false; }
};

using rd_calm_arch = hybrid_arch::with<input::chunk_compress, head::energy, rd_calm_family>;
using rd_calm_model = model<host_backend, float, rd_calm_arch>;

// A random CALM written in the released layout gives the compressor, head and autoencoder; the
// stack is replaced by a prelude / core / coda of sandwich blocks, and routers are added.
rd_calm_model make_rd_calm(const host_backend& be, const std::filesystem::path& dir) {
  calm_shape s;
  s.vocab = 128;
  s.hidden = 64;
  s.inter = 128;
  s.layers = 1;
  s.heads = 4;
  s.positions = 64;
  s.patch = 4;
  s.latent = 16;
  s.noise = 8;
  s.blocks = 2;
  s.ae_hidden = 32;
  s.ae_inter = 64;
  write_random_calm(dir.string(), s, 5);
  const io::calm_files f = io::open_calm(dir.string(), "");
  calm_model_config cfg = calm_model_config_of(f);
  cfg.n_layers_in_prelude = 1;
  cfg.n_layers_in_recurrent_block = 2;
  cfg.n_layers_in_coda = 1;
  cfg.mean_recurrence = 6;
  cfg.rope_base = 10000.0f;
  cfg.source = "hybrid_arch example (recurrent-depth CALM)";
  rd_calm_weights<host_backend, float> w;
  static_cast<calm_weights<host_backend, float>&>(w) = load_calm_weights<host_backend, float>(be, f);
  const std::int64_t extra = w.compressor.parameter_count + w.head.parameter_count;
  static_cast<model_weights<host_backend, float>&>(w) = make_random_weights<host_backend, float, block::sandwich>(be, cfg, 9);
  w.parameter_count += extra;
  add_random_routers(be, cfg, cfg.mean_recurrence, w);
  return rd_calm_model(be, cfg, std::move(w));
}

// BrierLM takes this arch as it takes CALM: two head samples per position. With K >= 4 every
// predicted chunk adds its own n-grams, so the estimate can be recounted here from one forward
// pass and the head's samples at the seeds the estimator documents. The text is written so that
// each chunk is the first sample the head draws for it: at the documented seeds every accuracy
// term of sample 1 hits, and a draw at any other seed or position would miss.
void brier_of_recurrent_depth_calm(const rd_calm_model& m) {
  const std::int64_t K = m.tokens_per_position(), L = 8, h = m.dims().h;  // 8 chunks per block
  brierlm_options o;
  o.block_size = L * K;
  o.seed = 7;
  run_options run;
  run.steps = 2;  // not the config's mean: the run's options must reach the model
  auto smp = head::energy::make_sampler(m);
  std::mt19937 gen(11);
  std::vector<std::int32_t> stream;
  for (std::int64_t b = 0; b < 2; ++b) {
    const std::uint64_t seed = stream_seed(o.seed, sampled_brier_stream_kind, std::uint64_t(b * L * K));
    std::vector<std::int32_t> block(static_cast<std::size_t>(K));
    for (auto& t : block) t = std::int32_t(gen() % std::uint32_t(m.config().vocab_size));
    for (std::int64_t p = 0; p + 1 < L; ++p) {  // chunk p + 1 = sample 0 drawn from position p
      const std::vector<float> rows = m.forward(block, run);
      const std::vector<float> last(rows.end() - h, rows.end());
      const std::vector<std::int32_t> x = smp.sample_chunks_rows(last, p, seed, 1);
      block.insert(block.end(), x.begin(), x.end());
    }
    stream.insert(stream.end(), block.begin(), block.end());
  }
  const brierlm_result got = evaluate_brierlm(m, stream, o, run);

  brier_values want{};
  for (std::int64_t b = 0; b < 2; ++b) {
    const std::vector<std::int32_t> block(stream.begin() + b * L * K, stream.begin() + (b + 1) * L * K);
    const std::vector<float> rows = m.forward(block, run);
    const std::vector<float> pred_rows(rows.begin(), rows.begin() + (L - 1) * h);
    const std::vector<std::int32_t> x = smp.sample_chunks_rows(
        pred_rows, 0, stream_seed(o.seed, sampled_brier_stream_kind, std::uint64_t(b * L * K)), 2);
    for (int n = 1; n <= 4; ++n) {
      double sum = 0;
      for (std::int64_t p = 0; p + 1 < L; ++p) {
        const std::int32_t* y = block.data() + (p + 1) * K;
        const std::int32_t* x1 = x.data() + (p * 2) * K;
        const std::int32_t* x2 = x1 + K;
        bool hit1 = true, hit2 = true, same = true;
        for (int k = 0; k < n; ++k) {
          hit1 = hit1 && x1[k] == y[k];
          hit2 = hit2 && x2[k] == y[k];
          same = same && x1[k] == x2[k];
        }
        sum += double(hit1) + double(hit2) - double(same);
      }
      want[std::size_t(n - 1)] += sum / double(L - 1) / 2.0;  // mean over positions, then over 2 blocks
    }
  }
  double diff = 0;
  for (int n = 0; n < 4; ++n) diff = std::max(diff, std::fabs(got.brier[std::size_t(n)] - want[std::size_t(n)]));
  std::printf("BrierLM of the recurrent-depth CALM on text drawn from its own head (2 blocks of %lld tokens): "
              "Brier-1..4 %.3f %.3f %.3f %.3f, BrierLM %.1f\n",
              (long long)(L * K), got.brier[0], got.brier[1], got.brier[2], got.brier[3], got.brierlm);
  check(diff <= 1e-12, "BrierLM's Brier-n equal a count over the head's samples of one forward pass");
  // Sample 1 equals the text, so each term is 1 + 1{x2 = y} - 1{x2 = x1} = 1.
  check(got.brier == brier_values{1.0, 1.0, 1.0, 1.0}, "Brier-1..4 are exactly 1 on text the head's first samples wrote");
}

void recurrent_depth_calm() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "muninn_hybrid_arch_calm";
  host_backend be;
  const rd_calm_model m = make_rd_calm(be, dir);
  std::filesystem::remove_all(dir);
  const std::int64_t K = m.tokens_per_position();
  std::printf("recurrent-depth CALM: %lld parameters, K = %lld tokens per position\n", (long long)m.parameter_count(),
              (long long)K);

  const std::vector<std::int32_t> prompt = {5, 6, 7, 8, 9, 10, 11, 12};  // two chunks
  generate_options g;
  g.max_new_tokens = 6 * K;
  g.run.steps = m.config().mean_recurrence;
  g.run.halt.criterion = halt_criterion::latent_diff;
  g.run.halt.threshold = 0.1;
  g.run.halt.min_steps = 1;
  g.chunks.temperature = 0.5;  // the batch approximation: N head samples, chosen by count
  g.chunks.num_samples = 16;
  g.chunks.seed = 3;
  const generate_result r = generate(m, prompt, g);
  std::printf("generated:");
  for (std::size_t i = 0; i < r.tokens.size(); ++i)
    std::printf("%s%d", i % std::size_t(K) ? "," : " | ", r.tokens[i]);
  std::printf("\n");
  check(std::int64_t(r.tokens.size()) == g.max_new_tokens && r.forward_calls * K == std::int64_t(r.tokens.size()),
        "one call per step, K tokens per step");

  // Recompute: prompt and every chunk but the last in one call on a fresh context; the head's
  // sampler draws step t's chunk from row (prompt positions − 1 + t).
  std::vector<std::int32_t> all = prompt;
  all.insert(all.end(), r.tokens.begin(), r.tokens.end() - K);
  const std::vector<float> rows = m.forward(all, g.run);
  const std::int64_t h = m.dims().h, P = std::int64_t(prompt.size()) / K, steps = std::int64_t(r.tokens.size()) / K;
  auto smp = head::energy::make_sampler(m);
  bool same = true;
  for (std::int64_t t = 0; t < steps; ++t) {
    std::int64_t draws = 0;
    const std::vector<std::int32_t> chunk = smp.next(rows.data() + (P - 1 + t) * h, P - 1 + t, t, g.chunks, draws);
    same &= std::equal(chunk.begin(), chunk.end(), r.tokens.begin() + t * K);
  }
  double diff = 0;
  for (std::int64_t c = 0; c < h; ++c)
    diff = std::max(diff, std::fabs(double(rows[std::size_t((P - 2 + steps) * h + c)]) - r.last_logits[std::size_t(c)]));
  check(same, "cached sampled decode draws the chunks a full recomputation draws");
  check(diff <= 1e-4, "the last hidden state agrees within 1e-4");
  brier_of_recurrent_depth_calm(m);
}

}  // namespace

int main() {
  routed_adaptive_core();
  recurrent_depth_calm();
  if (failures) std::printf("%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
