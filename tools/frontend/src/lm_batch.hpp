#pragma once
// The batch engine of the model<> families (Huginn, Llama, Mixture-of-Recursions): every step
// stacks one row per decoding request and chunks of the prompts being read into one
// model::forward_batch over the requests' own contexts and one shared workspace. Requests whose
// pass options differ (recurrence depth, exit rule, initial state, routing) run in separate
// forward_batch calls of the same step. Included by those families' translation units.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "lm_adapter.hpp"
#include "muninn/frontend/batch.hpp"

namespace muninn::frontend::detail {

/// \brief The options of a generate request as the batch engines read them, checked.
struct lm_request_options {
  generate_options g;
  context_limits lim;
};

/// \brief Options a batch engine cannot honour: each is a usage error naming it.
inline void reject_unbatched(const option_values& o) {
  for (const char* f : {"draft-steps", "lookahead", "dump-states", "dump", "taps"})
    if (o.has(f)) fail_as(error_kind::usage, o.spelled(f), " is not available when serving (single-sequence only)");
  if (o.has("sampler") && o.choice("sampler", "plain") == "parallel")
    fail_as(error_kind::usage, o.spelled("sampler"), " parallel is not available when serving (single-sequence only)");
  (void)wants_parallel(o);  // the parallel sampler's knobs without it, CALM's samplers on this model
}

/// \brief Checks a request for a model<> and returns its options and context limits; `context`
/// bounds prompt + max-new-tokens (0: the model's block_size).
template <class Model>
lm_request_options lm_request_from(const Model& m, const std::vector<std::int32_t>& prompt, const option_values& o,
                                   std::int64_t context) {
  const model_config& cfg = m.config();
  check_ids(prompt, cfg.vocab_size, "the prompt");
  reject_unbatched(o);
  lm_request_options r;
  r.g = generate_options_from(m, o, {});
  const std::int64_t limit = context > 0 ? std::min(context, cfg.block_size) : cfg.block_size;
  const std::int64_t total = std::int64_t(prompt.size()) + r.g.max_new_tokens;
  if (std::int64_t(prompt.size()) >= limit)
    fail_as(error_kind::usage, "the prompt of ", prompt.size(), " tokens does not fit the context of ", limit,
            " positions (it needs room for at least one new token)");
  if (total > limit)
    fail_as(error_kind::usage, "the prompt of ", prompt.size(), " tokens + ", o.spelled("max-new-tokens"), " ",
            r.g.max_new_tokens, " = ", total, " exceeds the context of ", limit, " positions");
  r.lim.max_tokens = total;
  r.lim.max_steps = max_steps_needed(m, r.g);
  r.lim.kv_budget = o.integer("kv-budget");
  r.lim.fallback = o.choice("kv-fallback") == "none" ? kv_fallback::none : kv_fallback::latest;
  r.lim.max_chunk = 1;  // the engine's shared workspace does the work
  return r;
}

/// \brief Requests with equal keys can share one forward pass: everything of run_options that a
/// pass reads (the sampler and the stop ids stay per request).
template <class Model>
std::string pass_key(const Model& m, const run_options& r) {
  std::ostringstream k;
  k.precision(17);
  if (Model::sharing_policy::recurrent && m.config().n_layers_in_recurrent_block > 0) {
    const halting_options& h = r.halt;
    k << "s" << m.resolve_steps(r) << " i" << r.init.index() << " w" << int(r.warm) << " c" << int(h.criterion) << " t"
      << h.threshold << " n" << h.min_steps << " x" << h.max_steps << " e" << h.check_every << " p" << int(h.prefill)
      << " u" << int(h.end);
    // The random initial state is drawn from the run's seed: only then does the seed matter to the pass.
    if (!std::holds_alternative<state_init::zero>(r.init)) k << " r" << r.seed;
  }
  if (Model::router_policy::routes) k << " route" << int(r.routing);
  return k.str();
}

/// \brief The next token of request `r` (a batch engine's request: id, g, ctx, smp, produced,
/// done) sampled from `logits` as generate samples it; `r` is done at one of its stop ids, after
/// max-new-tokens, or at the end of its context.
template <class Request>
batch_output sample_next(Request& r, const float* logits, std::int64_t vocab) {
  const std::int32_t t = r.smp.sample(logits, vocab, r.ctx.tokens());
  batch_output o;
  o.id = r.id;
  o.tokens.push_back(t);
  o.steps.push_back(r.ctx.steps_used().back());
  ++r.produced;
  const bool stop = std::find(r.g.stop_ids.begin(), r.g.stop_ids.end(), t) != r.g.stop_ids.end();
  if (stop || r.produced >= r.g.max_new_tokens || r.ctx.length() >= r.ctx.limits().max_tokens) {
    r.done = true;
    o.finished = true;
    o.stop_reason = stop ? "stop" : "length";
  }
  return o;
}

/// \brief The forward_batch engine (see the file comment).
template <class Model>
class rows_batch final : public batch_engine {
  using context = typename Model::context_type;

 public:
  rows_batch(const Model& m, const batch_limits& lim)
      : m_(m), lim_(lim), ws_(m.make_workspace(std::max<std::int64_t>(1, lim.max_requests + lim.prefill_tokens))) {}

  void check(const std::vector<std::int32_t>& prompt, const option_values& o) const override {
    (void)lm_request_from(m_, prompt, o, lim_.context);
  }

  std::int64_t add(const std::vector<std::int32_t>& prompt, const option_values& o,
                   const std::vector<std::int32_t>& stops) override {
    lm_request_options r = lm_request_from(m_, prompt, o, lim_.context);
    r.g.stop_ids = stops;
    // A routed model's router, a warm start and a prompt that exits together see the whole
    // prompt in one call: it is prefilled alone, in a context whose workspace holds it.
    const bool whole = Model::router_policy::routes || r.g.run.warm != warm_start::none ||
                       r.g.run.halt.prefill == prefill_exit::prompt;
    if (whole) r.lim.max_chunk = std::int64_t(prompt.size());
    reqs_.push_back(std::make_unique<request>(next_id_, r.g, pass_key(m_, r.g.run), m_.make_context(r.lim), prompt, whole));
    return next_id_++;
  }

  std::vector<batch_output> step() override {
    stats_ = {};
    std::vector<batch_output> out;
    std::map<std::string, group> groups;  // by pass key; std::map keeps the order fixed
    std::int64_t budget = lim_.prefill_tokens;
    bool prefilled = false;
    for (auto& q : reqs_) {
      request& r = *q;
      if (r.fed < std::int64_t(r.prompt.size())) {
        const std::int64_t left = std::int64_t(r.prompt.size()) - r.fed;
        if (r.whole) {
          if (prefilled && left > budget) continue;  // next step
          prefill_whole(r, out);
          budget -= left;
          prefilled = true;
          continue;
        }
        const std::int64_t n = std::min(left, budget);
        if (n <= 0) continue;
        budget -= n;
        prefilled = true;
        add_row(groups[r.key], r, std::vector<std::int32_t>(r.prompt.begin() + r.fed, r.prompt.begin() + r.fed + n));
        stats_.prefill_tokens += n;
      } else {
        add_row(groups[r.key], r, {r.next});
      }
    }
    for (auto& [key, g] : groups) run_group(g, out);
    finish_step(out);
    return out;
  }

  void remove(std::int64_t id) override {
    reqs_.erase(std::remove_if(reqs_.begin(), reqs_.end(), [&](const auto& q) { return q->id == id; }), reqs_.end());
  }
  std::int64_t size() const override { return std::int64_t(reqs_.size()); }
  const batch_step_stats& last_step() const override { return stats_; }

 private:
  struct request {
    request(std::int64_t i, generate_options o, std::string k, context c, std::vector<std::int32_t> p, bool w)
        : id(i), g(std::move(o)), key(std::move(k)), ctx(std::move(c)), smp(g.sampling), prompt(std::move(p)), whole(w) {}
    std::int64_t id;
    generate_options g;
    std::string key;
    context ctx;
    sampler smp;
    std::vector<std::int32_t> prompt;
    bool whole;
    std::int64_t fed = 0;        // prompt tokens in the cache
    std::int32_t next = -1;      // the last token produced, fed in the next step
    std::int64_t produced = 0;
    bool done = false;
  };
  struct group {
    std::vector<request*> reqs;
    std::vector<context*> ctxs;
    std::vector<std::vector<std::int32_t>> ids;
  };

  void add_row(group& g, request& r, std::vector<std::int32_t> ids) {
    stats_.rows += std::int64_t(ids.size());
    g.reqs.push_back(&r);
    g.ctxs.push_back(&r.ctx);
    g.ids.push_back(std::move(ids));
  }

  // One forward_batch for the group, in workspace-sized slices.
  void run_group(group& g, std::vector<batch_output>& out) {
    std::size_t first = 0;
    while (first < g.reqs.size()) {
      std::size_t last = first;
      std::int64_t rows = 0;
      while (last < g.reqs.size() && rows + std::int64_t(g.ids[last].size()) <= ws_.rows()) rows += std::int64_t(g.ids[last++].size());
      if (last == first) ++last;  // cannot happen: a row's chunk never exceeds the workspace
      const std::vector<context*> ctxs(g.ctxs.begin() + std::ptrdiff_t(first), g.ctxs.begin() + std::ptrdiff_t(last));
      const std::vector<std::vector<std::int32_t>> ids(g.ids.begin() + std::ptrdiff_t(first),
                                                       g.ids.begin() + std::ptrdiff_t(last));
      const auto logits = m_.forward_batch(ws_, ctxs, ids, g.reqs[first]->g.run, logits_for::last);
      for (std::size_t i = first; i < last; ++i) {
        request& r = *g.reqs[i];
        const bool was_prefill = r.fed < std::int64_t(r.prompt.size());
        if (was_prefill) r.fed += std::int64_t(g.ids[i].size());
        ++stats_.requests;
        stats_.layer_rows += layer_rows(r, std::int64_t(g.ids[i].size()));
        if (r.fed == std::int64_t(r.prompt.size())) take(r, logits[i - first].data(), out);
      }
      first = last;
    }
  }

  // A whole prompt in one call on the request's own context.
  void prefill_whole(request& r, std::vector<batch_output>& out) {
    const auto logits = m_.forward(r.ctx, r.prompt, r.g.run, logits_for::last);
    r.fed = std::int64_t(r.prompt.size());
    stats_.rows += r.fed;
    stats_.prefill_tokens += r.fed;
    ++stats_.requests;
    stats_.layer_rows += layer_rows(r, r.fed);
    take(r, logits.data(), out);
  }

  // Rows × depth of the tokens just fed: recurrence steps or recursions each ran.
  std::int64_t layer_rows(const request& r, std::int64_t n) const {
    const auto& s = r.ctx.steps_used();
    std::int64_t sum = 0;
    for (std::int64_t i = std::int64_t(s.size()) - n; i < std::int64_t(s.size()); ++i) sum += std::max(1, s[std::size_t(i)]);
    return sum;
  }

  void take(request& r, const float* logits, std::vector<batch_output>& out) {
    out.push_back(sample_next(r, logits, m_.config().vocab_size));
    r.next = out.back().tokens.back();
  }

  void finish_step(const std::vector<batch_output>&) {
    reqs_.erase(std::remove_if(reqs_.begin(), reqs_.end(), [](const auto& q) { return q->done; }), reqs_.end());
  }

  const Model& m_;
  batch_limits lim_;
  typename Model::workspace_type ws_;
  std::vector<std::unique_ptr<request>> reqs_;
  std::int64_t next_id_ = 1;
  batch_step_stats stats_;
};

template <class Model>
std::unique_ptr<batch_engine> make_rows_batch(const Model& m, const batch_limits& lim) {
  return std::make_unique<rows_batch<Model>>(m, lim);
}

}  // namespace muninn::frontend::detail
