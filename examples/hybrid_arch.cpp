// A hybrid no single reference system builds, composed in user code from the library's slots:
// a Huginn-style recurrent core (sandwich blocks, additive injection of the prelude output, one
// KV slot per executed layer) with adaptive halting, under middle-cycle sharing, where an
// expert-choice router decides before each step which tokens go on recurring.
//
// Random weights; the program checks what it claims and exits non-zero otherwise:
// - greedy decoding with the KV cache gives the tokens (and logits) that recomputing the whole
//   sequence without a cache gives;
// - the router dropped some tokens and the halting criterion stopped others, so tokens really
//   ran different depths.
//
//   example_hybrid_arch
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "muninn/families/mor/arch.hpp"
#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"

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

// The stack's random weights plus one random linear router per step.
mor_weights<host_backend, float> random_weights(const host_backend& be, const mor_config& cfg) {
  mor_weights<host_backend, float> w(make_random_weights<host_backend, float, block::sandwich>(be, cfg, 7));
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(float(cfg.n_embd)));
  for (std::int64_t r = 0; r < cfg.mor.recursions; ++r) {
    std::vector<float> v(std::size_t(cfg.n_embd));
    for (float& x : v) x = normal(rng);
    router_weights<host_backend, float> rw;
    rw.w1 = be.alloc<float>(v.size());
    be.upload(rw.w1.data(), v.data(), v.size());
    w.routers.push_back(std::move(rw));
  }
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

}  // namespace

int main() {
  routed_adaptive_core();
  if (failures) std::printf("%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
