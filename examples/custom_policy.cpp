// Policies written in user code, with no library edit: a halting rule and a state init of our
// own, dropped into Huginn's architecture by slot name. The program checks that the model really
// used them and exits non-zero otherwise.
//
//   example_custom_policy
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"

// Halting: a token stops once its state moves less than `threshold` (relative L2) in one step.
// Written per token on host floats; halting::on_host below makes it a HaltingPolicy (the
// built-in criteria decide on the backend instead).
struct settled_rule {
  static constexpr const char* name = "settled_state";
  struct tracker {
    std::vector<float> prev;
    double threshold;
  };
  static muninn::halting_options resolve(muninn::halting_options o) {
    if (o.threshold < 0) o.threshold = 0.05;
    return o;
  }
  static bool exits(const muninn::halting_options& o) { return o.criterion != muninn::halt_criterion::none; }
  static bool needs_logits(const muninn::halting_options&) { return false; }
  static tracker start(const muninn::halting_options& o, const float* x0, std::int64_t h, std::int64_t) {
    return tracker{std::vector<float>(x0, x0 + h), o.threshold};
  }
  static bool update(tracker& t, const float* x, const float*, std::int64_t h) {
    const double change = relative_change(t.prev.data(), x, h);
    t.prev.assign(x, x + h);
    return change < t.threshold;
  }
  static double relative_change(const float* a, const float* b, std::int64_t h) {
    double num = 0, den = 0;
    for (std::int64_t i = 0; i < h; ++i) {
      num += (double(b[i]) - a[i]) * (double(b[i]) - a[i]);
      den += double(b[i]) * b[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
  }
};

// State init: every token starts from the same small constant vector.
struct constant_state {
  using slot = muninn::slot::state_init;
  static constexpr const char* name = "constant_state";
  template <class Backend, class T>
  static void fill(const muninn::state_init_args<Backend, T>& a) {
    const std::vector<float> v(std::size_t(a.rows * a.h), 0.25f);
    muninn::engine::upload_floats(a.be, a.x, v.data(), a.rows * a.h);
  }
};

using settled_state = muninn::halting::on_host<settled_rule>;  // names the Halting slot itself
using my_arch = muninn::arch<muninn::block::pre_norm, muninn::injection::add>::with<settled_state, constant_state>;
using my_model = muninn::model<muninn::host_backend, float, my_arch>;

muninn::huginn_config small_config() {
  muninn::huginn_config cfg;
  cfg.n_embd = 64;
  cfg.n_heads = 4;
  cfg.head_dim = 16;
  cfg.intermediate_size = 128;
  cfg.vocab_size = 256;
  cfg.n_layers_in_prelude = 1;
  cfg.n_layers_in_recurrent_block = 2;
  cfg.n_layers_in_coda = 1;
  cfg.mean_recurrence = 32;
  cfg.block_size = 64;
  cfg.qk_bias = false;
  cfg.injection_type = "add";
  cfg.block_type = "pre_norm";
  cfg.source = "custom_policy example";
  return cfg;
}

int main() {
  const muninn::huginn_config cfg = small_config();
  muninn::host_backend be;
  const my_model m(be, cfg, muninn::make_random_weights<muninn::host_backend, float, muninn::block::pre_norm>(be, cfg, 3));
  const std::vector<std::int32_t> prompt = {10, 20, 30, 40, 50};

  // Record every state, and the steps each token ran under our halting rule.
  std::map<std::int64_t, std::vector<std::vector<float>>> trajectory;
  std::vector<std::int32_t> steps;
  muninn::run_options opt;
  opt.steps = 32;
  opt.steps_used = &steps;
  opt.on_step = [&](std::int64_t pos, std::int64_t, const float* x) {
    trajectory[pos].emplace_back(x, x + cfg.n_embd);
  };
  m.forward(prompt, opt);

  // Replay the rule from the trajectory: the first step whose change falls below 5% must be where
  // each token stopped, and the first state must have started from our constant vector.
  int bad = 0;
  for (std::size_t t = 0; t < prompt.size(); ++t) {
    const auto& tr = trajectory[std::int64_t(t)];
    std::vector<float> prev(std::size_t(cfg.n_embd), 0.25f);
    std::int32_t want = 32;  // no exit test after the last step
    for (std::size_t s = 0; s + 1 < 32 && s < tr.size(); ++s) {
      if (settled_rule::relative_change(prev.data(), tr[s].data(), cfg.n_embd) < 0.05) {
        want = std::int32_t(s + 1);
        break;
      }
      prev = tr[s];
    }
    std::printf("token %zu: stopped after %d steps (rule says %d)\n", t, steps[t], want);
    bad += steps[t] != want || std::int32_t(tr.size()) != steps[t] || steps[t] >= 32;
  }
  // Fixed at one step, our constant start and an explicit zero start must give different logits.
  muninn::run_options one;
  one.steps = 1;
  one.halt.criterion = muninn::halt_criterion::none;
  const auto from_constant = m.forward(prompt, one);
  one.init = muninn::state_init::zero{};
  const auto from_zero = m.forward(prompt, one);
  bad += from_constant == from_zero;
  std::printf("%s\n", bad ? "custom policies NOT used" : "custom halting and state init used");
  return bad ? 1 : 0;
}
