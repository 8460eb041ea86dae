#pragma once
// The Huginn family's host model in the front-end library: the per-token-exit batch engine and the
// function that builds the model. One model type runs every Huginn checkpoint: its block (sandwich
// or pre-norm) and injection (concat adapter or add) are chosen from the config at load
// (block::from_config, injection::from_config), with per-token early exit compiled in. Four
// compiled combinations, one per block and injection, took a fifth of the CLI's clean build
// (docs/performance.md, "Build cost").

#include <map>
#include <memory>
#include <sstream>

#include "lm_batch.hpp"
#include "slot_batch.hpp"
#include "muninn/families/huginn/family.hpp"
#include "muninn/runtime/exit_batching.hpp"

namespace muninn::frontend::detail::huginn_host {

// Huginn served with per-token exits: requests whose exit rule lets tokens leave early decode
// through exit pools (one per depth, rule and initial-state kind), in which every token recurs
// at its own step and a token that exits frees its row for another request's token within the
// same step; prompt tokens go through the pool one by one, as a lone forward under an exit rule
// runs them. Fixed-depth requests, a warm start and the reference's whole-prompt exit use the
// forward_batch engine beside it.
template <class Model>
struct exit_request {
  using pool = muninn::detail::exit_pool<Model>;
  exit_request(std::int64_t i, std::int32_t s, generate_options o, typename Model::context_type c,
               std::vector<std::int32_t> p, pool* h)
      : id(i), slot(s), g(std::move(o)), ctx(std::move(c)), smp(g.sampling), prompt(std::move(p)), home(h) {}
  std::int64_t id;
  std::int32_t slot;  // its sequence index in the pools
  generate_options g;
  typename Model::context_type ctx;
  sampler smp;
  std::vector<std::int32_t> prompt;
  pool* home;
  std::int64_t produced = 0;
  bool done = false;
};

template <class Model>
class exit_batch final : public detail::slot_batch<Model, exit_request<Model>> {
  using base = detail::slot_batch<Model, exit_request<Model>>;
  using request = exit_request<Model>;
  using pool = muninn::detail::exit_pool<Model>;
  using base::by_slot;
  using base::lim_;
  using base::m_;
  using base::stats_;

 public:
  exit_batch(const Model& m, const batch_limits& lim) : base(m, lim) {}

  std::int64_t add(const std::vector<std::int32_t>& prompt, const option_values& o,
                   const std::vector<std::int32_t>& stops) override {
    detail::lm_request_options r = detail::lm_request_from(m_, prompt, o, lim_.context);
    const std::int64_t id = this->new_id();
    const run_options& run = r.g.run;
    const halting_options h = m_.resolve_halting(run);
    if (h.criterion == halt_criterion::none || run.warm != warm_start::none || h.prefill != prefill_exit::per_token ||
        h.end != unchecked_end::final_step) {
      this->add_beside(id, prompt, o, stops);
      return id;
    }
    r.g.stop_ids = stops;
    pool& p = pool_for(run);
    request& q = this->hold(std::make_unique<request>(id, this->free_slot(), r.g, m_.make_context(r.lim), prompt, &p));
    p.push(q.slot, prompt[0], run.seed);
    return id;
  }

  std::vector<batch_output> step() override {
    std::vector<batch_output> out;
    this->step_beside(out);
    std::vector<float> logits;
    std::vector<std::int32_t> steps;
    const std::int64_t V = m_.config().vocab_size;
    for (auto& [key, p] : pools_) {
      if (!p->busy()) continue;
      const std::int64_t recurring = p->recurring();
      const std::vector<std::int32_t> seqs = p->step(logits, steps);
      stats_.rows += std::max(recurring, p->recurring());
      stats_.layer_rows += std::max(recurring, p->recurring());
      for (std::size_t i = 0; i < seqs.size(); ++i) {
        request& r = by_slot(seqs[i]);
        const std::int64_t len = r.ctx.length(), P = std::int64_t(r.prompt.size());
        if (len <= P) ++stats_.prefill_tokens;
        if (len < P) {  // a prompt token before the last: the next one follows, its logits are not needed
          r.home->push(r.slot, r.prompt[std::size_t(len)], r.g.run.seed);
          continue;
        }
        ++stats_.requests;
        take(r, logits.data() + std::int64_t(i) * V, out);
      }
    }
    this->reap();
    return out;
  }

 private:
  void drop(const request& r) override { r.home->drop(r.slot); }

  // Requests share a pool when everything but the seed of their passes is equal.
  pool& pool_for(const run_options& run) {
    run_options keyed = run;
    keyed.seed = 0;  // each token draws its initial state from its own request's seed
    const std::string key = detail::pass_key(m_, keyed);
    auto& p = pools_[key];
    if (!p) {
      exit_pool_options po;
      po.max_rows = std::max<std::int64_t>(1, lim_.max_requests);
      po.run = keyed;
      p = std::make_unique<pool>(m_, this->ctx_of_, po);
    }
    return *p;
  }

  void take(request& r, const float* logits, std::vector<batch_output>& out) {
    batch_output o = detail::sample_next(r, logits, m_.config().vocab_size);
    if (!o.finished) r.home->push(r.slot, o.tokens.back(), r.g.run.seed);
    out.push_back(std::move(o));
  }

  std::map<std::string, std::unique_ptr<pool>> pools_;
};

template <class Model>
std::unique_ptr<batch_engine> make_exit_batch(const Model& m, const batch_limits& lim) {
  if (!lim.by_depth) return detail::make_rows_batch(m, lim);
  return std::make_unique<exit_batch<Model>>(m, lim);
}

/// \brief Every Huginn checkpoint's arch in the front end: the config picks block and injection.
using host_arch = huginn_adaptive_arch::with<block::from_config, injection::from_config>;

template <class Arch>
std::unique_ptr<loaded_model> host_model(host_backend be, huginn_config cfg, const io::checkpoint& ck,
                                         detail::lm_extras x, weight_format weights) {
  using M = model<host_backend, float, Arch>;
  // Converted layer by layer while it loads: the fp32 stack is never resident as a whole.
  M m = as_kind(error_kind::checkpoint, [&] { return M(be, std::move(cfg), ck, weights); });
  detail::add_weights_field(x.info, weights, m.weight_bytes());
  return std::make_unique<detail::lm_model<M>>(std::move(m), std::move(x), &make_exit_batch<M>);
}

}  // namespace muninn::frontend::detail::huginn_host
