#pragma once
/// \file
/// \brief Continuous batching with per-token exits for recurrent-depth models (Huginn's core
/// loop): tokens of many sequences recur in one pool, each at its own step. Every call of `step`
/// admits waiting tokens into free rows (embedding, prelude, initial state, the injection's
/// per-token part), runs one recurrence step on every row at once — each row injecting, writing
/// and reading the KV slots of its own step in its own sequence's cache — and tests each row for
/// exit on its own schedule. A token that exits (or reaches its last step) leaves the pool at
/// once, so its row takes another sequence's token in the next step instead of idling until the
/// deepest token of a lock-step batch is done; the tokens that left get the readout and the head
/// together.
///
/// Each token runs exactly what `model::forward` runs for it alone under the same exit rule (a
/// pass of one token: a sequence has at most one token in the pool), so every sequence decodes
/// as it does alone. The pool shares one halting rule, depth and initial-state kind; each row
/// has its own seed.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <type_traits>
#include <variant>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/rows.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/model/model.hpp"
#include "muninn/nn/layer.hpp"

namespace muninn {

/// \brief What every token of an exit pool shares.
struct exit_pool_options {
  std::int64_t max_rows = 16;  ///< tokens recurring at once
  run_options run;             ///< depth, halting rule and initial-state kind (the seed is per token)
};

namespace detail {

template <class Model>
class exit_pool {
  using Backend = typename Model::backend_type;
  using T = typename Model::value_type;
  using Arch = typename Model::arch_type;
  using context = typename Model::context_type;
  using monitor = typename Arch::halting_policy::template monitor<Backend, T>;

 public:
  /// \brief A pool for `m`; sequence `seq` is `*ctxs[seq]` (the owner may reseat entries of
  /// sequences that hold no token here).
  exit_pool(const Model& m, std::vector<context*>& ctxs, const exit_pool_options& o)
      : m_(m), be_(m.backend()), ctxs_(ctxs), cap_(o.max_rows), run_(o.run), hopt_(m.resolve_halting(o.run)),
        ws_(m.make_workspace(o.max_rows)), x_(ws_.x()), alt_(ws_.alt()) {
    MUNINN_CHECK(cap_ >= 1, "exit pool: max_rows must be >= 1, got ", cap_);
    static_assert(Arch::sharing_policy::recurrent, "an exit pool batches recurrent-depth models");
    exits_ = Arch::halting_policy::exits(hopt_);
    max_steps_ = exits_ && hopt_.max_steps >= 0 ? hopt_.max_steps : m.resolve_steps(o.run);
    MUNINN_CHECK(o.run.warm == warm_start::none && hopt_.prefill == prefill_exit::per_token &&
                     hopt_.end == unchecked_end::final_step,
                 "exit pool: tokens start from their own state and exit one by one (no warm start, no reference "
                 "parity)");
  }

  /// \brief Queues token `token` of sequence `seq` (at position ctxs[seq]->length()), whose
  /// random initial state is drawn from `seed`.
  void push(std::int32_t seq, std::int32_t token, std::uint64_t seed) { waiting_.push_back({seq, token, seed}); }
  /// \brief Whether a token is waiting or recurring.
  bool busy() const { return !waiting_.empty() || !pool_.empty(); }
  /// \brief Tokens recurring now.
  std::int64_t recurring() const { return std::int64_t(pool_.size()); }
  /// \brief Forgets sequence `seq`'s token wherever it is; its row leaves the pool at once.
  void drop(std::int32_t seq) {
    waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [&](const queued& w) { return w.seq == seq; }),
                   waiting_.end());
    std::vector<std::uint8_t> keep(pool_.size(), 1);
    for (std::size_t i = 0; i < pool_.size(); ++i) keep[i] = pool_[i].seq != seq;
    compact(keep);
  }

  /// \brief Admits waiting tokens, runs one recurrence step on every row and retires the tokens
  /// that exit. Returns the sequences whose token finished (committed to its context), their
  /// logits in `logits` [n, V] and the steps each ran in `steps`.
  std::vector<std::int32_t> step(std::vector<float>& logits, std::vector<std::int32_t>& steps) {
    admit();
    std::vector<std::uint8_t> done(pool_.size(), 0);
    std::vector<std::uint8_t> have_logits(pool_.size(), 0);
    check_pos_.assign(pool_.size(), -1);
    if (!pool_.empty() && max_steps_ > 0) recur(done, have_logits);
    for (std::size_t i = 0; i < pool_.size(); ++i) done[i] = done[i] || pool_[i].s >= max_steps_;
    return retire(done, have_logits, logits, steps);
  }

 private:
  struct queued {
    std::int32_t seq, token;
    std::uint64_t seed;
  };
  struct row {
    std::int32_t seq, token;
    std::int64_t s;                 // steps run
    std::unique_ptr<monitor> exit;  // its exit test, when the rule may exit early
  };

  // What the Arch's readout needs of a pass: the final norm and a layer group over some rows.
  struct readout_view {
    exit_pool& p;
    const std::vector<const row*>& rows;
    void final_norm(T* y) {
      rmsnorm(p.be_, y, p.m_.weights().ln_f.data(), y, std::int64_t(rows.size()), p.h(), p.m_.dims().eps);
    }
    void run_layers(layer_group g, T* y, std::int64_t step = 0) {
      p.run_group(g, y, rows, [step](std::size_t) { return step; });
    }
  };
  friend struct readout_view;

  std::int64_t h() const { return m_.dims().h; }
  context& ctx(std::int32_t seq) const { return *ctxs_[std::size_t(seq)]; }

  // The layers of `group` on buf for `rows` (row i at step step_of(i)), each in its sequence's cache.
  template <class StepOf>
  void run_group(layer_group group, T* buf, const std::vector<const row*>& rows, StepOf&& step_of) {
    engine::active_rows act;
    for (const row* r : rows) act.append(r->seq, ctx(r->seq).length(), 1);
    engine::upload_positions(be_, act, ws_.pos());
    const std::size_t n_layers = m_.layers(group).size();
    for (std::size_t j = 0; j < n_layers; ++j) {
      kv_views<T> kv;
      kv.row_pos = ws_.pos();
      for (std::size_t i = 0; i < rows.size(); ++i)
        kv.write.push_back(ctx(rows[i]->seq).kv_storage().slot(group, step_of(i), std::int64_t(j)));
      kv.read = [&, j](std::size_t i, const engine::row_run& run) {
        auto& c = ctx(rows[i]->seq);
        return c.kv_storage().read(group, step_of(i), std::int64_t(j), run, c.steps_used());
      };
      nn::run_layer<typename Arch::block_policy, typename Arch::rope_policy>(
          be_, m_.layer_at_steps(group, rows.size(), step_of, std::int64_t(j)), m_.dims(), buf, act, kv,
          m_.weights().rope.data(), ws_.scratch());
    }
  }

  std::vector<const row*> view(std::size_t first, std::size_t n) const {
    std::vector<const row*> v;
    for (std::size_t i = first; i < first + n; ++i) v.push_back(&pool_[i]);
    return v;
  }

  injection_args<Backend, T> injection(std::int64_t first, std::int64_t n) {
    const auto& a = m_.weights().adapter;
    return {be_, n, h(), ws_.e() + first * h(), a.size() ? a.data() : nullptr, ws_.e_part() + first * h()};
  }

  // Waiting tokens take the free rows: embedding, prelude, initial state, the injection's part
  // that sees only e, and a fresh exit test.
  void admit() {
    const std::int64_t n = std::min<std::int64_t>(std::int64_t(waiting_.size()), cap_ - std::int64_t(pool_.size()));
    if (n <= 0) return;
    const std::int64_t first = std::int64_t(pool_.size());
    std::vector<queued> in(waiting_.begin(), waiting_.begin() + n);
    waiting_.erase(waiting_.begin(), waiting_.begin() + n);
    std::vector<std::int32_t> ids;
    for (const queued& q : in) {
      ids.push_back(q.token);
      pool_.push_back({q.seq, q.token, 0, nullptr});
    }
    be_.upload(ws_.ids(), ids.data(), ids.size());
    embedding(be_, m_.weights().wte.data(), m_.config().vocab_size, h(), ws_.ids(), n, Arch::input_policy::scale(h()),
              ws_.e() + first * h());
    run_group(layer_group::prelude, ws_.e() + first * h(), view(std::size_t(first), std::size_t(n)),
              [](std::size_t) { return std::int64_t(0); });
    for (std::int64_t i = 0; i < n; ++i) {
      T* x = x_ + (first + i) * h();
      const std::int64_t pos = ctx(in[std::size_t(i)].seq).length();
      const state_init_args<Backend, T> args{be_, x, 1, h(), pos, in[std::size_t(i)].seed, nullptr, m_.config()};
      std::visit(
          [&](auto choice) {
            using C = decltype(choice);
            if constexpr (std::is_same_v<C, state_init::arch_default>)
              Arch::state_init_policy::fill(args);
            else
              C::fill(args);
          },
          run_.init);
      if (exits_) {
        row& r = pool_[std::size_t(first + i)];
        r.exit = take_monitor();
        r.exit->start(hopt_, x, 1);
      }
    }
    Arch::injection_policy::prepare(injection(first, n));
  }

  // One recurrence step on every row, each at its own depth; then the rows due for a check are
  // tested, each against its own previous values.
  void recur(std::vector<std::uint8_t>& done, std::vector<std::uint8_t>& have_logits) {
    const std::int64_t n = std::int64_t(pool_.size());
    Arch::injection_policy::apply(injection(0, n), x_, alt_);
    const std::vector<const row*> all = view(0, std::size_t(n));
    run_group(layer_group::core, x_, all, [&](std::size_t i) { return pool_[i].s; });
    std::vector<std::size_t> check;
    for (std::size_t i = 0; i < pool_.size(); ++i) {
      const std::int64_t s = pool_[i].s++;
      if (exits_ && s + 1 < max_steps_ && s >= hopt_.min_steps && (s - hopt_.min_steps) % hopt_.check_every == 0) {
        check_pos_[i] = std::int64_t(check.size());
        check.push_back(i);
      }
    }
    if (check.empty()) return;
    const bool logit_rule = Arch::halting_policy::needs_logits(hopt_);
    if (logit_rule) head(check, x_, check_logits_);
    std::vector<std::uint8_t> exit;
    for (std::size_t k = 0; k < check.size(); ++k) {
      const std::size_t i = check[k];
      const T* logits = logit_rule ? ws_.logits() + std::int64_t(k) * m_.output_width() : nullptr;
      pool_[i].exit->decide(x_ + std::int64_t(i) * h(), logits, 1, exit);
      if (exit[0]) {
        done[i] = 1;
        have_logits[i] = logit_rule;  // the check's readout gave its outputs (and wrote its coda KV)
      }
    }
  }

  // Readout and head on the rows `idx` of `src` (left intact); logits [idx.size(), V] downloaded to `out`.
  void head(const std::vector<std::size_t>& idx, const T* src, std::vector<float>& out) {
    const std::int64_t n = std::int64_t(idx.size()), V = m_.output_width();
    T* y = ws_.head();
    std::vector<const row*> rows;
    for (std::int64_t k = 0; k < n; ++k) {
      be_.copy(y + k * h(), src + std::int64_t(idx[std::size_t(k)]) * h(), std::size_t(h()));
      rows.push_back(&pool_[idx[std::size_t(k)]]);
    }
    readout_view rv{*this, rows};
    Arch::recurrence_policy::readout(rv, y);
    be_.copy(ws_.normed(), y, std::size_t(n * h()));
    const head_args<Backend, T> a{be_, ws_.normed(), n, h(), V, m_.weights().ln_f.data(), m_.dims().eps,
                                  m_.output_weight(), ws_.logits(), m_.output_converted()};
    Arch::head_policy::logits(a);
    out.resize(std::size_t(n * V));
    engine::download_floats(be_, ws_.logits(), n * V, out.data());
  }

  // The finished rows leave: their outputs (the check's, or a readout now), their cache's
  // fallback for deeper steps, the token committed; the rest are compacted.
  std::vector<std::int32_t> retire(const std::vector<std::uint8_t>& done, const std::vector<std::uint8_t>& have_logits,
                                   std::vector<float>& logits, std::vector<std::int32_t>& steps) {
    const std::int64_t V = m_.output_width();
    std::vector<std::size_t> leaving, need_head;
    for (std::size_t i = 0; i < pool_.size(); ++i)
      if (done[i]) {
        leaving.push_back(i);
        if (!have_logits[i]) need_head.push_back(i);
      }
    std::vector<std::int32_t> seqs;
    logits.assign(leaving.size() * std::size_t(V), 0.0f);
    steps.clear();
    if (leaving.empty()) return seqs;
    std::vector<float> fresh;
    if (!need_head.empty()) head(need_head, x_, fresh);
    std::size_t headed = 0;
    for (std::size_t k = 0; k < leaving.size(); ++k) {
      const std::size_t i = leaving[k];
      const float* src = have_logits[i] ? check_logits_.data() + std::size_t(check_pos_[i]) * std::size_t(V)
                                        : fresh.data() + headed++ * std::size_t(V);
      std::copy(src, src + V, logits.begin() + std::ptrdiff_t(k * std::size_t(V)));
      row& r = pool_[i];
      context& c = ctx(r.seq);
      c.kv_storage().on_exit(c.length(), 1, r.s);
      c.commit_token(r.token, std::int32_t(r.s));
      seqs.push_back(r.seq);
      steps.push_back(std::int32_t(r.s));
      if (r.exit) spare_.push_back(std::move(r.exit));
    }
    std::vector<std::uint8_t> keep(pool_.size(), 1);
    for (std::size_t i : leaving) keep[i] = 0;
    compact(keep);
    return seqs;
  }

  void compact(const std::vector<std::uint8_t>& keep) {
    if (std::find(keep.begin(), keep.end(), std::uint8_t(0)) == keep.end()) return;
    for (T* b : {ws_.e(), x_, ws_.e_part()}) engine::compact_rows(be_, b, h(), keep, ws_.head());
    std::vector<row> kept;
    for (std::size_t i = 0; i < pool_.size(); ++i)
      if (keep[i]) kept.push_back(std::move(pool_[i]));
      else if (pool_[i].exit) spare_.push_back(std::move(pool_[i].exit));
    pool_ = std::move(kept);
  }

  std::unique_ptr<monitor> take_monitor() {
    if (spare_.empty()) return std::make_unique<monitor>(be_, 1, h(), m_.output_width());
    auto m = std::move(spare_.back());
    spare_.pop_back();
    return m;
  }

  const Model& m_;
  const Backend& be_;
  std::vector<context*>& ctxs_;
  std::int64_t cap_;
  run_options run_;
  halting_options hopt_;
  bool exits_ = false;
  std::int64_t max_steps_ = 0;
  typename Model::workspace_type ws_;
  T* x_;
  T* alt_;
  std::deque<queued> waiting_;
  std::vector<row> pool_;
  std::vector<std::unique_ptr<monitor>> spare_;  // exit tests of rows that left, reused
  std::vector<float> check_logits_;              // the last check's logits, in check order
  std::vector<std::int64_t> check_pos_;          // per row: its place among the last check's rows (-1: none)
};

}  // namespace detail
}  // namespace muninn
