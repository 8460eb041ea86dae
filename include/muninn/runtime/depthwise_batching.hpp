#pragma once
/// \file
/// \brief Continuous depth-wise batching for Mixture-of-Recursions decoding (the throughput scheme
/// of the MoR paper's appendix, for which its code releases nothing): tokens of many sequences at
/// different recursion depths share one call of the shared block per step, a token that stops
/// frees its place for the next sequence's token at once, and stopped tokens wait until enough of
/// them have gathered for one batched call of the last layer and the head.
///
/// Every token is routed by the causal rule (`routing_mode::causal`), which depends on the token
/// alone, so each sequence gets exactly what `generate` gives it alone.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <type_traits>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/rows.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/nn/layer.hpp"
#include "muninn/families/mor/router.hpp"
#include "muninn/runtime/generate.hpp"

namespace muninn {

/// \brief Sizes of the depth-wise batcher.
struct depthwise_options {
  std::int64_t max_batch = 32;  ///< tokens recurring at once (rows of one shared-block call)
  std::int64_t flush_at = 0;    ///< stopped tokens gathered before the last layer runs (0: max_batch)
};

/// \brief Work counters of a depth-wise batched generation.
struct depthwise_stats {
  std::int64_t block_calls = 0;  ///< calls of the shared block
  std::int64_t block_rows = 0;   ///< token rows those calls ran (one per token per recursion)
  std::int64_t last_calls = 0;   ///< calls of the last layer and head
  std::int64_t tokens = 0;       ///< tokens that went through the recursions (decoded, not prefilled)
};

namespace detail {

// What router::detail::router_logits needs of a pass.
template <class Model>
struct router_view {
  const Model& m;
  workspace<typename Model::backend_type, typename Model::value_type>& w;
  const Model& model() const { return m; }
  workspace<typename Model::backend_type, typename Model::value_type>& ws() { return w; }
};

template <class Model>
class depthwise_batcher {
  using Backend = typename Model::backend_type;
  using T = typename Model::value_type;
  using Arch = typename Model::arch_type;
  using context = typename Model::context_type;

 public:
  /// \brief Sequence `seq` is `*ctxs[seq]`; the owner may grow the list and reseat entries of
  /// sequences that hold no token here (see drop).
  depthwise_batcher(const Model& m, std::vector<context*>& ctxs, const depthwise_options& d)
      : m_(m), be_(m.backend()), ctxs_(ctxs), cap_(d.max_batch), flush_at_(d.flush_at > 0 ? d.flush_at : d.max_batch),
        pool_ws_(m.make_workspace(d.max_batch)), last_ws_(m.make_workspace(2 * d.max_batch)) {
    MUNINN_CHECK(d.max_batch >= 1, "depth-wise batching: max_batch must be >= 1, got ", d.max_batch);
    MUNINN_CHECK(flush_at_ >= 1 && flush_at_ <= cap_, "depth-wise batching: flush_at must be in [1, max_batch]");
  }

  /// \brief Queues the next token of sequence `seq` (fed at position ctxs[seq].length()).
  void push(std::int32_t seq, std::int32_t token) { waiting_.push_back({seq, token}); }
  /// \brief True while a token is waiting, recurring or waiting for the last layer.
  bool busy() const { return !waiting_.empty() || !pool_.empty() || !done_.empty(); }
  /// \brief Tokens recurring now (rows of the next shared-block call).
  std::int64_t recurring() const { return std::int64_t(pool_.size()); }
  /// \brief Forgets sequence `seq`'s token wherever it is (a request that was cancelled): its row
  /// leaves the pool at once; its context keeps only what was committed before.
  void drop(std::int32_t seq) {
    waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [&](const waiting_token& w) { return w.seq == seq; }),
                   waiting_.end());
    drop_rows(done_, last_ws_, seq);
    drop_rows(pool_, pool_ws_, seq);
  }

  /// \brief One scheduling step: admit waiting tokens, one call of the shared block, and the last
  /// layer for the stopped tokens when enough have gathered (or nothing else is running). Returns
  /// the (sequence, logits row) pairs finished by this step, logits in `logits` [n, V].
  std::vector<std::int32_t> step(std::vector<float>& logits) {
    admit();
    if (!pool_.empty()) recur();
    std::vector<std::int32_t> finished;
    if (!done_.empty() && (std::int64_t(done_.size()) >= flush_at_ || pool_.empty())) finished = finish(logits);
    return finished;
  }
  /// \brief Work counters so far.
  const depthwise_stats& stats() const { return stats_; }

 private:
  struct waiting_token { std::int32_t seq, token; };
  struct row { std::int32_t seq, token; std::int64_t next; float gate; };  // next: the recursion it runs next

  std::int64_t h() const { return m_.dims().h; }
  context& ctx(std::int32_t seq) const { return *ctxs_[std::size_t(seq)]; }
  std::int64_t pos_of(const row& r) const { return ctx(r.seq).length(); }

  // Removes `seq`'s rows from `rows`, compacting their states in ws.e() (the pool) or last_ws_.e().
  void drop_rows(std::vector<row>& rows, workspace<Backend, T>& ws, std::int32_t seq = -1) {
    if (seq < 0) return;
    std::vector<std::uint8_t> keep(rows.size(), 1);
    bool any = false;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (rows[i].seq == seq) keep[i] = 0, any = true;
    if (!any) return;
    engine::compact_rows(be_, ws.e(), h(), keep, ws.head());
    std::vector<row> kept;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (keep[i]) kept.push_back(rows[i]);
    rows = std::move(kept);
  }

  // One run per row (each row is a different sequence's token); positions uploaded to `pos`.
  engine::active_rows rows_of(const std::vector<row>& rows, std::int32_t* pos) const {
    engine::active_rows a;
    for (const row& r : rows) a.append(r.seq, pos_of(r), 1);
    engine::upload_positions(be_, a, pos);
    return a;
  }

  // Runs the layers of `group` on buf for `rows`, row i at recursion step(i), each in its sequence's cache.
  // Rows whose recursions run one stored layer share one call of it (one GEMM per weight); when
  // their recursions hold different copies of a layer (a checkpoint saved with untied copies),
  // the rows are grouped by copy: gathered into ws.alt(), one call per copy, scattered back.
  template <class StepOf>
  void run_group(layer_group group, T* buf, const std::vector<row>& rows, workspace<Backend, T>& ws, StepOf&& step_of) {
    if (rows.empty()) return;
    const std::size_t n_layers = m_.layers(group).size();
    for (std::size_t j = 0; j < n_layers; ++j) {
      std::vector<const layer_weights<Backend, T>*> copy;  // the distinct layers the rows run, in first-row order
      std::vector<std::size_t> copy_of(rows.size());
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto* w = &m_.layer_at(group, step_of(i), std::int64_t(j));
        copy_of[i] = std::size_t(std::find(copy.begin(), copy.end(), w) - copy.begin());
        if (copy_of[i] == copy.size()) copy.push_back(w);
      }
      if (copy.size() == 1) {
        std::vector<std::size_t> all(rows.size());
        for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
        run_layer_rows(group, j, *copy[0], buf, rows, all, ws.pos(), ws, step_of);
        continue;
      }
      std::vector<std::int32_t> order;  // rows grouped by copy
      std::vector<std::vector<std::size_t>> members(copy.size());
      for (std::size_t c = 0; c < copy.size(); ++c)
        for (std::size_t i = 0; i < rows.size(); ++i)
          if (copy_of[i] == c) {
            members[c].push_back(i);
            order.push_back(std::int32_t(i));
          }
      be_.upload(ws.route_idx(), order.data(), order.size());
      gather_rows(be_, buf, h(), ws.route_idx(), std::int64_t(order.size()), h(), ws.alt(), h());
      std::int64_t at = 0;
      for (std::size_t c = 0; c < copy.size(); ++c) {
        run_layer_rows(group, j, *copy[c], ws.alt() + at * h(), rows, members[c], ws.pos() + at, ws, step_of);
        at += std::int64_t(members[c].size());
      }
      scatter_rows(be_, buf, h(), ws.route_idx(), ws.alt(), h(), std::int64_t(order.size()), h());
    }
  }

  // Layer j of `group` (stored weights w) on the rows `idx` of `rows`, which lie in that order in x;
  // their positions go to `pos`.
  template <class StepOf>
  void run_layer_rows(layer_group group, std::size_t j, const layer_weights<Backend, T>& w, T* x,
                      const std::vector<row>& rows, const std::vector<std::size_t>& idx, std::int32_t* pos,
                      workspace<Backend, T>& ws, StepOf&& step_of) {
    std::vector<row> sub;
    for (std::size_t i : idx) sub.push_back(rows[i]);
    const engine::active_rows act = rows_of(sub, pos);
    kv_views<T> kv;
    kv.row_pos = pos;
    for (std::size_t k = 0; k < idx.size(); ++k) {
      auto& st = ctx(sub[k].seq).kv_storage();
      const std::int64_t s = step_of(idx[k]);
      kv.write.push_back(st.slot(group, s, std::int64_t(j)));
      kv.write_row.push_back(st.write_row(group, s, std::int64_t(j), act.runs()[k]));
    }
    kv.read = [&, j](std::size_t k, const engine::row_run& run) {
      auto& c = ctx(sub[k].seq);
      return c.kv_storage().read(group, step_of(idx[k]), std::int64_t(j), run, c.steps_used());
    };
    nn::run_layer<typename Arch::block_policy, typename Arch::rope_policy>(be_, w, m_.dims(), x, act, kv,
                                                                         m_.weights().rope.data(), ws.scratch());
  }

  // Router `r` on rows [first, first + n) of the pool state: each row's gate, and whether it runs r.
  void route(std::int64_t r, std::int64_t first, std::int64_t n) {
    router_view<Model> view{m_, pool_ws_};
    const std::vector<float> z = router::detail::router_logits(view, std::size_t(r), pool_ws_.e() + first * h(), n, 1);
    const auto& mor = m_.config().mor;
    for (std::int64_t i = 0; i < n; ++i) {
      row& p = pool_[std::size_t(first + i)];
      p.gate = router::expert_choice::gate_of(mor.router_func, mor.alpha, z[std::size_t(i)]);
      const bool go = r == 0 || (mor.router_func == "sigmoid" ? router::detail::sigmoid(z[std::size_t(i)]) >= 0.5f
                                                              : z[std::size_t(i)] >= 0.0f);
      p.next = go ? r : -1;
    }
  }

  // Waiting tokens enter the free places: embedding, first layer, router 0.
  void admit() {
    const std::int64_t n = std::min<std::int64_t>(std::int64_t(waiting_.size()), cap_ - std::int64_t(pool_.size()));
    if (n <= 0) return;
    std::vector<row> in;
    for (std::int64_t i = 0; i < n; ++i) {
      in.push_back({waiting_.front().seq, waiting_.front().token, 0, 0.0f});
      waiting_.pop_front();
    }
    const std::int64_t first = std::int64_t(pool_.size());
    T* x = pool_ws_.e() + first * h();
    std::vector<std::int32_t> ids;
    for (const row& r : in) ids.push_back(r.token);
    be_.upload(pool_ws_.ids(), ids.data(), ids.size());
    embedding(be_, m_.weights().wte.data(), m_.config().vocab_size, h(), pool_ws_.ids(), n,
              Arch::input_policy::scale(h()), x);
    run_group(layer_group::prelude, x, in, pool_ws_, [](std::size_t) { return std::int64_t(0); });
    pool_.insert(pool_.end(), in.begin(), in.end());
    route(0, first, n);
  }

  // One call of the shared block on every recurring row, each at its own recursion: H += g·f(H).
  void recur() {
    const std::int64_t n = std::int64_t(pool_.size());
    T* H = pool_ws_.e();
    T* F = pool_ws_.x();
    be_.copy(F, H, std::size_t(n * h()));
    run_group(layer_group::core, F, pool_, pool_ws_, [&](std::size_t i) { return pool_[i].next; });
    std::vector<float> g;
    std::vector<std::int32_t> idx;
    for (std::int64_t i = 0; i < n; ++i) {
      g.push_back(pool_[std::size_t(i)].gate);
      idx.push_back(std::int32_t(i));
    }
    be_.upload(pool_ws_.gates(), g.data(), g.size());
    be_.upload(pool_ws_.route_idx(), idx.data(), idx.size());
    scatter_add_gated(be_, H, h(), pool_ws_.route_idx(), F, h(), pool_ws_.gates(), n, h());
    ++stats_.block_calls;
    stats_.block_rows += n;
    // Each row ran recursion `next`; the router of the next recursion says whether it goes on.
    const std::int64_t Nr = m_.config().mor.recursions;
    for (auto& p : pool_) p.next += 1;
    for (std::int64_t r = 1; r < Nr; ++r) {  // rows are routed in groups of equal next recursion
      std::vector<std::int64_t> at;
      for (std::int64_t i = 0; i < n; ++i)
        if (pool_[std::size_t(i)].next == r) at.push_back(i);
      for (std::int64_t i : at) route_one(r, i);
    }
    retire();
  }

  void route_one(std::int64_t r, std::int64_t i) {
    row& p = pool_[std::size_t(i)];
    const std::int64_t depth = p.next;
    route(r, i, 1);
    if (p.next < 0) p.next = -depth;  // stopped after `depth` recursions
  }

  // Rows that stopped (router said so, or every recursion ran) move to the last-layer queue.
  void retire() {
    const std::int64_t Nr = m_.config().mor.recursions, n = std::int64_t(pool_.size());
    std::vector<std::uint8_t> keep(std::size_t(n), 1);
    for (std::int64_t i = 0; i < n; ++i) {
      row& p = pool_[std::size_t(i)];
      const bool stop = p.next < 0 || p.next >= Nr;
      if (!stop) continue;
      keep[std::size_t(i)] = 0;
      be_.copy(last_ws_.e() + std::int64_t(done_.size()) * h(), pool_ws_.e() + i * h(), std::size_t(h()));
      done_.push_back(p);
      done_.back().next = p.next < 0 ? -p.next : Nr;  // the depth it ran
    }
    if (std::find(keep.begin(), keep.end(), std::uint8_t(0)) == keep.end()) return;
    engine::compact_rows(be_, pool_ws_.e(), h(), keep, pool_ws_.head());
    std::vector<row> kept;
    for (std::int64_t i = 0; i < n; ++i)
      if (keep[std::size_t(i)]) kept.push_back(pool_[std::size_t(i)]);
    pool_ = std::move(kept);
  }

  // Last layer and head on the queued rows; their tokens join their contexts.
  std::vector<std::int32_t> finish(std::vector<float>& logits) {
    const std::int64_t n = std::int64_t(done_.size()), V = m_.config().vocab_size;
    T* x = last_ws_.e();
    run_group(layer_group::coda, x, done_, last_ws_, [](std::size_t) { return std::int64_t(0); });
    const head_args<Backend, T> a{be_, x, n, h(), V, m_.weights().ln_f.data(), m_.dims().eps, m_.output_weight(),
                                  last_ws_.logits(), m_.output_converted()};
    Arch::head_policy::logits(a);
    logits.resize(std::size_t(n * V));
    engine::download_floats(be_, last_ws_.logits(), n * V, logits.data());
    std::vector<std::int32_t> seqs;
    for (const row& r : done_) {
      ctx(r.seq).commit_token(r.token, std::int32_t(r.next));
      seqs.push_back(r.seq);
    }
    stats_.tokens += n;
    ++stats_.last_calls;
    done_.clear();
    return seqs;
  }

  const Model& m_;
  const Backend& be_;
  std::vector<context*>& ctxs_;
  std::int64_t cap_, flush_at_;
  workspace<Backend, T> pool_ws_, last_ws_;
  std::deque<waiting_token> waiting_;
  std::vector<row> pool_, done_;
  depthwise_stats stats_;
};

}  // namespace detail

/// \brief Generates for several prompts with continuous depth-wise batching (expert-choice MoR,
/// causal routing). Prompts are prefilled one by one; then every step runs the shared block once
/// on up to `d.max_batch` tokens, whatever recursion each is at, refills the places of tokens that
/// stopped with the next waiting tokens, and runs the last layer and head on the stopped tokens
/// in batches of `d.flush_at`. Each row's tokens and depths equal `generate` for it alone.
template <class Model>
std::vector<generate_result> generate_depthwise(const Model& m, const std::vector<std::vector<std::int32_t>>& prompts,
                                                const generate_options& opt, const depthwise_options& d = {},
                                                depthwise_stats* stats = nullptr) {
  static_assert(std::is_same_v<typename Model::arch_type::router_policy, router::expert_choice>,
                "generate_depthwise batches expert-choice Mixture-of-Recursions models (mor_expert_arch)");
  MUNINN_CHECK(opt.draft_steps == 0 && opt.lookahead == 0, "generate_depthwise: no speculative decoding");
  MUNINN_CHECK(opt.run.routing == routing_mode::causal, "generate_depthwise decodes with the causal routing rule");
  std::vector<generate_result> res(prompts.size());
  if (opt.max_new_tokens <= 0) return res;
  std::vector<typename Model::context_type> ctxs;
  std::vector<sampler> samplers;
  for (const auto& p : prompts) {
    MUNINN_CHECK(!p.empty(), "generate_depthwise: an empty prompt");
    context_limits lim;
    lim.max_tokens = std::min(std::int64_t(p.size()) + opt.max_new_tokens, m.config().block_size);
    lim.max_chunk = std::int64_t(p.size());
    ctxs.push_back(m.make_context(lim));
    samplers.emplace_back(opt.sampling);
  }
  std::vector<typename Model::context_type*> ctx_of;
  for (auto& c : ctxs) ctx_of.push_back(&c);
  detail::depthwise_batcher<Model> batcher(m, ctx_of, d);
  const std::int64_t V = m.config().vocab_size;
  const auto take = [&](std::size_t r, const float* logits) {
    auto& ctx = ctxs[r];
    const std::int32_t t = samplers[r].sample(logits, V, ctx.tokens());
    res[r].tokens.push_back(t);
    res[r].steps.push_back(ctx.steps_used().back());
    const bool done = detail::is_stop(opt, t) || std::int64_t(res[r].tokens.size()) >= opt.max_new_tokens ||
                      ctx.length() >= ctx.limits().max_tokens;
    if (!done) batcher.push(std::int32_t(r), t);
  };
  for (std::size_t r = 0; r < prompts.size(); ++r) {
    const auto logits = m.forward(ctxs[r], prompts[r], opt.run, logits_for::last);
    ++res[r].forward_calls;
    take(r, logits.data());
  }
  std::vector<float> logits;
  while (batcher.busy()) {
    const auto finished = batcher.step(logits);
    for (std::size_t i = 0; i < finished.size(); ++i) take(std::size_t(finished[i]), logits.data() + std::int64_t(i) * V);
  }
  if (stats) *stats = batcher.stats();
  return res;
}

}  // namespace muninn
