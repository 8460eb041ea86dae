#pragma once
/// \file
/// \brief `forward_pass`: one stacked call of a model — the verbs a RecurrencePolicy composes
/// (embed, run a layer group, start the state, inject, end a step, emit), over active rows.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/kv_cache.hpp"
#include "muninn/engine/routing.hpp"
#include "muninn/engine/rows.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/engine/workspace.hpp"
#include "muninn/model/options.hpp"
#include "muninn/nn/layer.hpp"
#include "muninn/policies/detect.hpp"
#include "muninn/policies/halting_options.hpp"
#include "muninn/policies/head.hpp"
#include "muninn/policies/injection.hpp"
#include "muninn/policies/input.hpp"
#include "muninn/policies/state_init.hpp"

namespace muninn {

namespace detail {
template <class M>
using decide_values_t = decltype(std::declval<M&>().decide(
    std::declval<const typename M::value_type*>(), std::declval<const typename M::value_type*>(), std::int64_t(),
    std::declval<std::vector<std::uint8_t>&>(), std::declval<std::vector<float>*>()));
template <class M>
using decide_pooled_t = decltype(std::declval<M&>().decide_pooled(
    std::declval<const typename M::value_type*>(), std::int64_t(), std::declval<const std::vector<engine::row_run>&>(),
    std::declval<std::vector<std::uint8_t>&>()));
template <class S>
using write_row_t = decltype(std::declval<S&>().write_row(layer_group::core, std::int64_t(), std::int64_t(),
                                                          std::declval<const engine::row_run&>()));
/// \brief Whether a KV storage keeps ragged rows (and so says where each run's rows go).
template <class S>
inline constexpr bool has_write_row = detected_v<S, write_row_t>;
/// \brief Whether a halting monitor can decide on whole runs (prefill_exit::prompt).
template <class M>
inline constexpr bool has_decide_pooled = detected_v<M, decide_pooled_t>;
/// \brief Whether a halting monitor can hand back the statistic it compares with the threshold
/// (the `halt.value` tap).
template <class M>
inline constexpr bool has_decide_values = detected_v<M, decide_values_t>;
}  // namespace detail

/// \brief A run of tokens of one sequence fed in a stacked call.
template <class Context>
struct pass_piece {
  Context* ctx = nullptr;            ///< the sequence's context
  const std::int32_t* ids = nullptr; ///< its new tokens
  std::int64_t n = 0;                ///< how many
  std::int64_t offset = 0;           ///< index of ids[0] in the caller's list (given_state, latents, steps_used rows)
  float* out = nullptr;              ///< host destination of the last `out_rows` logit rows
  std::int64_t out_rows = 0;         ///< logit rows wanted (0: none)
  std::int64_t pos0 = 0;             ///< position of ids[0] in the sequence
  std::int64_t steps_done = 0;       ///< recurrence steps run so far
  /// \brief Whether its first token may continue the sequence's last thought (warm start): only
  /// the first piece of a call. Later pieces of the same call (chunks of one prefill, or the
  /// one-token pieces of a prefill under an exit criterion) start from the initial state.
  bool first_of_call = true;
  /// \brief Index of its sequence in a call that runs several (forward_batch's row), handed to
  /// taps as `tap_event::sequences`; -1 in a single-sequence call.
  std::int64_t sequence = -1;
};

/// \brief One stacked call of `Model` over pieces of one or more sequences.
///
/// Row i of every stream buffer (`e`, `x`) belongs to `rows().seq(i)` — the index of its piece —
/// at position `rows().pos(i)`. Pieces leave when their exit test passes; their rows are
/// compacted away and their outputs written at once.
template <class Model>
class forward_pass {
 public:
  using backend_type = typename Model::backend_type;  ///< the backend
  using value_type = typename Model::value_type;      ///< compute type
  using arch_type = typename Model::arch_type;        ///< the policies
  using halting_policy = typename arch_type::halting_policy;  ///< HaltingPolicy
  using piece = pass_piece<typename Model::context_type>;  ///< a fed run
  /// \brief The HaltingPolicy's per-call exit test.
  using monitor_type = typename halting_policy::template monitor<backend_type, value_type>;

  /// \brief Validates the call and lays the pieces out as active rows.
  forward_pass(const Model& m, workspace<backend_type, value_type>& ws, std::vector<piece>& pieces,
               const run_options& opt)
      : m_(m), be_(m.backend()), ws_(ws), pieces_(pieces), opt_(opt), hopt_(m.resolve_halting(opt)) {
    exits_ = halting_policy::exits(hopt_);
    pooled_ = exits_ && hopt_.prefill == prefill_exit::prompt && !halting_policy::needs_logits(hopt_) &&
              detail::has_decide_pooled<monitor_type>;
    keep_checked_ = exits_ && hopt_.end == unchecked_end::last_checked && halting_policy::needs_logits(hopt_);
    steps_ = arch_type::sharing_policy::recurrent ? m.resolve_steps(opt) : 0;
    max_steps_ = exits_ && hopt_.max_steps >= 0 ? hopt_.max_steps : steps_;
    MUNINN_CHECK(steps_ >= 0, "recurrence steps must be >= 0, got ", steps_);
    MUNINN_CHECK(hopt_.check_every >= 1, "check_every must be >= 1, got ", hopt_.check_every);
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      piece& p = pieces_[i];
      MUNINN_CHECK(!arch_type::sharing_policy::recurrent || max_steps_ <= p.ctx->limits_.max_steps, "requested ",
                   max_steps_, " recurrence steps but the context was made for at most ", p.ctx->limits_.max_steps);
      p.pos0 = p.ctx->length_;
      rows_.append(std::int32_t(i), p.pos0, p.n);
    }
    MUNINN_CHECK(rows_.size() <= ws.rows(), "a call of ", rows_.size(), " tokens exceeds the workspace of ", ws.rows(),
                 " rows");
    x_ = ws.x();
    alt_ = ws.alt();
    upload_positions();
  }

  /// \brief Runs the Arch's schedule, then records the new tokens in their contexts.
  void run() {
    arch_type::recurrence_policy::run(*this);
    commit();
  }

  /// \brief The model this call runs.
  const Model& model() const { return m_; }
  /// \brief The call's options.
  const run_options& options() const { return opt_; }
  /// \brief The workspace (policies use its routing scratch).
  workspace<backend_type, value_type>& ws() { return ws_; }
  /// \brief Tokens sequence `seq` feeds in this call (a router's T).
  std::int64_t fed(std::int32_t seq) const { return pieces_[std::size_t(seq)].n; }
  /// \brief Records that the picked rows have run `depth` recursions: a routed model's tokens
  /// each keep their own depth (their steps_used, and `run_options::depths`).
  void record_depth(const engine::row_subset& s, std::int32_t depth) {
    if (depth_.empty())
      for (const piece& p : pieces_) depth_.emplace_back(std::size_t(p.n), 0);
    for (std::int64_t i = 0; i < s.rows.size(); ++i) {
      const piece& p = pieces_[std::size_t(s.rows.seq(i))];
      depth_[std::size_t(s.rows.seq(i))][std::size_t(s.rows.pos(i) - p.pos0)] = depth;
    }
  }
  /// \brief Gathers the rows `s` picks from `src` into `buf` and runs the layers of `group` (at
  /// recursion `step`) on them, each reading and writing its sequence's cache.
  void run_subset(const engine::row_subset& s, const value_type* src, value_type* buf, layer_group group,
                  std::int64_t step) {
    const std::int64_t h = m_.dims().h;
    engine::gather(be_, s, src, h, ws_.route_idx(), buf);
    engine::upload_positions(be_, s.rows, ws_.route_pos());
    run_layers_on(s.rows, ws_.route_pos(), group, buf, step);
  }

  /// \brief Whether the call's tap callback wants tap `name` (see run_options::taps).
  bool tapping(std::string_view name) const { return opt_.taps.wants(name); }
  /// \brief Hands tap `name` of step `step` to the callback: `data` [rows.size(), cols] in host
  /// memory, row i at position rows.pos(i). Callers test tapping(name) first.
  void tap_host(std::string_view name, std::int64_t step, const float* data, const engine::active_rows& rows,
                std::int64_t cols) const {
    std::vector<std::int64_t> pos(std::size_t(rows.size())), seq;
    for (std::int64_t i = 0; i < rows.size(); ++i) pos[std::size_t(i)] = rows.pos(i);
    // A batched call's pieces know their sequence; a single sequence's taps leave it null.
    const bool batched = !pieces_.empty() && pieces_.front().sequence >= 0;
    if (batched) {
      seq.resize(std::size_t(rows.size()));
      for (std::int64_t i = 0; i < rows.size(); ++i) seq[std::size_t(i)] = pieces_[std::size_t(rows.seq(i))].sequence;
    }
    opt_.taps.on_tap(tap_event{name, step, rows.size(), cols, data, pos.data(), batched ? seq.data() : nullptr});
  }
  /// \brief tap_host for values `data` [rows.size(), cols] in backend memory (copied to the host
  /// only when the tap is wanted).
  void tap_rows(std::string_view name, std::int64_t step, const value_type* data, const engine::active_rows& rows,
                std::int64_t cols) const {
    if (!tapping(name)) return;
    std::vector<float> host(std::size_t(rows.size() * cols));
    engine::download_floats(be_, data, rows.size() * cols, host.data());
    tap_host(name, step, host.data(), rows, cols);
  }

  /// \brief Embedded input / prelude output [rows, h].
  value_type* e() { return ws_.e(); }
  /// \brief Recurrent state [rows, h].
  value_type* x() { return x_; }
  /// \brief The active rows.
  const engine::active_rows& rows() const { return rows_; }
  /// \brief Deepest step this call may run.
  std::int64_t max_steps() const { return max_steps_; }
  /// \brief True while some piece is still running.
  bool any_active() const { return !rows_.empty(); }

  /// \brief e = embedding(ids) · InputPolicy::scale(h), or what the InputPolicy's own `embed`
  /// makes of the rows' K ids (a chunk input), or the caller's `run_options::input_rows`.
  void embed() {
    embed_input();
    if (opt_.taps.on_tap) tap_rows("embeddings", -1, ws_.e(), rows_, m_.dims().h);
  }

  /// \brief embed() without its tap.
  void embed_input() {
    if (opt_.input_rows) return copy_input_rows();
    using input = typename arch_type::input_policy;
    const std::int64_t K = m_.tokens_per_position();
    if (std::int64_t(ws_.host_ids.size()) < rows_.size() * K) ws_.host_ids.resize(std::size_t(rows_.size() * K));
    std::int64_t r = 0;
    for (const auto& run : rows_.runs()) {
      const piece& p = pieces_[std::size_t(run.seq)];
      std::copy(p.ids, p.ids + p.n * K, ws_.host_ids.begin() + r * K);
      r += p.n;
    }
    if constexpr (detail::has_input_embed<input, forward_pass>) {
      input::embed(*this, ws_.host_ids.data(), r);
    } else {
      be_.upload(ws_.ids(), ws_.host_ids.data(), std::size_t(r));
      const std::int64_t h = m_.dims().h;
      embedding(be_, m_.weights().wte.data(), m_.config().vocab_size, h, ws_.ids(), r, input::scale(h), ws_.e());
    }
  }

  /// \brief e = the rows of `run_options::input_rows` that belong to each piece.
  void copy_input_rows() {
    const std::int64_t h = m_.dims().h;
    const auto* src = static_cast<const value_type*>(opt_.input_rows);
    for (const auto& run : rows_.runs()) {
      const piece& p = pieces_[std::size_t(run.seq)];
      be_.copy(ws_.e() + run.row0 * h, src + p.offset * h, std::size_t(run.n * h));
    }
  }

  /// \brief Runs every layer of `group` in place on buf (recurrence `step` for the core), each
  /// run reading and writing its own sequence's cache.
  void run_layers(layer_group group, value_type* buf, std::int64_t step = 0) {
    run_layers_on(rows_, ws_.pos(), group, buf, step);
  }

  /// \brief run_layers on a subset of the rows (a router's choice, gathered into `buf`):
  /// `rows` are the subset's rows, `pos` their positions on the backend.
  void run_layers_on(const engine::active_rows& rows, const std::int32_t* pos, layer_group group, value_type* buf,
                     std::int64_t step) {
    const std::size_t n_layers = m_.layers(group).size();
    for (std::size_t j = 0; j < n_layers; ++j) {
      kv_views<value_type> kv;
      kv.row_pos = pos;
      for (const auto& run : rows.runs()) {
        auto& storage = ctx_of(run).kv_;
        kv.write.push_back(storage.slot(group, step, std::int64_t(j)));
        if constexpr (detail::has_write_row<std::decay_t<decltype(storage)>>) {
          kv.write_row.push_back(storage.write_row(group, step, std::int64_t(j), run));
          kv.no_new_kv = storage.discards(group, step);  // the same for every run of one step
        }
      }
      kv.read = [&, j](std::size_t, const engine::row_run& run) {
        auto& c = ctx_of(run);
        return c.kv_.read(group, step, std::int64_t(j), run, c.steps_used_);
      };
      nn::run_layer<typename arch_type::block_policy, typename arch_type::rope_policy>(
          be_, m_.layer_at(group, step, std::int64_t(j)), m_.dims(), buf, rows, kv, m_.weights().rope.data(),
          ws_.scratch());
      if (opt_.taps.on_tap) {
        const std::string name = std::string(layer_group_name(group)) + ".layer." + std::to_string(j);
        tap_rows(name, group == layer_group::core ? step : -1, buf, rows, m_.dims().h);
      }
    }
  }


  /// \brief Applies `run_options::blend` to the prelude output (a no-op unless asked for). The
  /// blend is a small host-side step: only the parallel sampler uses it, on a wave of rows.
  void blend_input() {
    const input_blend& b = opt_.blend;
    if (b.weight == 0.0f && b.mixed == nullptr) return;
    MUNINN_CHECK(b.weight >= 0.0f && b.weight <= 1.0f, "input_blend: weight must be in [0, 1], got ", b.weight);
    MUNINN_CHECK(b.rows == 0 || b.previous != nullptr, "input_blend: ", b.rows, " rows but no previous embeddings");
    const std::int64_t h = m_.dims().h;
    float* e = ws_.host_rows.data();
    engine::download_floats(be_, ws_.e(), rows_.size() * h, e);
    const float keep = float(1.0 - double(b.weight));  // as the reference: the scalar 1 − w rounded once to fp32
    for (const auto& run : rows_.runs()) {
      const piece& p = pieces_[std::size_t(run.seq)];
      for (std::int64_t i = 0; i < run.n; ++i) {
        const std::int64_t fed = p.offset + i;  // index in the caller's token list
        float* row = e + (run.row0 + i) * h;
        const float* prev = fed < b.rows ? b.previous + fed * h : nullptr;
        for (std::int64_t c = 0; c < h; ++c) row[c] = prev ? row[c] * keep + prev[c] * b.weight : row[c] * keep;
        if (b.mixed) std::copy(row, row + h, b.mixed->begin() + fed * h);
      }
    }
    engine::upload_floats(be_, ws_.e(), e, rows_.size() * h);
  }

  /// \brief The state before the first step: a warm start from the sequence's last state for a
  /// piece's first token when asked, else the call's (or the Arch's) StateInit policy.
  void start_state() {
    for (const auto& run : rows_.runs()) start_piece(run);
    if (!exits_) return;
    monitor_ = &ws_.template reuse<monitor_type>(
        [&] { return monitor_type(be_, ws_.rows(), m_.dims().h, m_.output_width()); });
    if (pooled_)
      monitor_->start(hopt_, x_, rows_.size());
    else
      monitor_->start(hopt_, last_rows(x_), std::int64_t(rows_.runs().size()));
  }

  /// \brief Once per call: the InjectionPolicy's precomputation.
  void prepare_injection() { arch_type::injection_policy::prepare(injection()); }
  /// \brief Every step: the InjectionPolicy mixes e into the state.
  void inject() { arch_type::injection_policy::apply(injection(), x_, alt_); }

  /// \brief After step s: trajectory hooks, then (on checked steps) the exit test; pieces that
  /// exit emit their logits and leave the stack.
  void end_step(std::int64_t s) {
    for (const auto& run : rows_.runs()) pieces_[std::size_t(run.seq)].steps_done = s + 1;
    if (opt_.taps.on_tap) tap_rows("state", s, x_, rows_, m_.dims().h);
    const bool check = exits_ && s + 1 < max_steps_ && s >= hopt_.min_steps &&
                       (s - hopt_.min_steps) % hopt_.check_every == 0;
    if (opt_.on_step) {
      const std::int64_t h = m_.dims().h;
      engine::download_floats(be_, x_, rows_.size() * h, ws_.host_rows.data());
      for (std::int64_t i = 0; i < rows_.size(); ++i) opt_.on_step(rows_.pos(i), s, ws_.host_rows.data() + i * h);
    }
    if (!check) return;
    if (keep_checked_) {  // the outputs the reference keeps if no later step is checked
      be_.copy(ws_.checked(), x_, std::size_t(rows_.size() * m_.dims().h));
      has_checked_ = true;
    }
    exit_converged(s);
  }

  /// \brief Every piece still running emits its logits from `src` and finishes.
  /// With `unchecked_end::last_checked` and a logit criterion the logits come from the state of
  /// the last checked step instead when the last step is not a check step (the reference's
  /// behaviour); the recorded final state stays `src`.
  void emit_rest(const value_type* src) {
    if (rows_.empty()) return;
    const bool from_check = keep_checked_ && has_checked_ && !hopt_.checks_at(max_steps_ - 1);
    emit(from_check ? ws_.checked() : src, [](const piece& p) { return p.out_rows; },
         [](const piece& p) { return p.out; });
    for (const auto& run : rows_.runs()) finish(run, src);
  }

  /// \brief Pieces flagged in `done` (one flag per run, in run order) leave now, between steps:
  /// they emit their outputs, finish (their cache fills the deeper slots they skip) and their rows
  /// are compacted away, as when the exit test passes. A schedule's own exit rule uses it: a
  /// router that drops tokens from the recursion, say.
  void exit_runs(const std::vector<std::uint8_t>& done) {
    MUNINN_CHECK(done.size() == rows_.runs().size(), "exit_runs: ", done.size(), " flags for ", rows_.runs().size(),
                 " runs");
    if (std::find(done.begin(), done.end(), std::uint8_t(1)) != done.end()) leave(done, false);
  }

  /// \brief y = RMSNorm(y) with the final norm (ln_f), on the active rows.
  void final_norm(value_type* y) {
    rmsnorm(be_, y, m_.weights().ln_f.data(), y, rows_.size(), m_.dims().h, m_.dims().eps);
  }

 private:
  typename Model::context_type& ctx_of(const engine::row_run& run) { return *pieces_[std::size_t(run.seq)].ctx; }

  injection_args<backend_type, value_type> injection() {
    const value_type* w = injection_weight<typename arch_type::injection_policy, value_type>(m_.weights());
    return {be_, rows_.size(), m_.dims().h, ws_.e(), w, ws_.e_part()};
  }

  void start_piece(const engine::row_run& run) {
    piece& p = pieces_[std::size_t(run.seq)];
    auto& ctx = *p.ctx;
    const std::int64_t h = m_.dims().h;
    value_type* x = x_ + run.row0 * h;
    std::int64_t first = 0;
    if (opt_.warm != warm_start::none && p.first_of_call && ctx.has_last_state_) {
      // Continuous CoT: the new token continues the previous token's thought.
      if (opt_.warm == warm_start::raw)
        be_.copy(x, ctx.last_state_.data(), std::size_t(h));
      else
        rmsnorm(be_, ctx.last_state_.data(), m_.weights().ln_f.data(), x, 1, h, m_.dims().eps);
      first = 1;
    }
    if (first == run.n) return;
    const float* given = opt_.given_state ? opt_.given_state + (p.offset + first) * h : nullptr;
    const state_init_args<backend_type, value_type> args{be_, x + first * h, run.n - first, h,
                                                         run.pos0 + first, opt_.seed, given, m_.config()};
    std::visit(
        [&](auto choice) {
          using C = decltype(choice);
          if constexpr (std::is_same_v<C, state_init::arch_default>)
            arch_type::state_init_policy::fill(args);
          else
            C::fill(args);
        },
        opt_.init);
  }

  // Each run's last row of src, contiguous: src itself when every run is one row (the usual
  // case under an exit criterion), else gathered into the workspace.
  const value_type* last_rows(const value_type* src) {
    const auto& runs = rows_.runs();
    if (std::int64_t(runs.size()) == rows_.size()) return src;
    const std::int64_t h = m_.dims().h;
    for (std::size_t k = 0; k < runs.size(); ++k)
      be_.copy(ws_.last() + std::int64_t(k) * h, src + (runs[k].row0 + runs[k].n - 1) * h, std::size_t(h));
    return ws_.last();
  }

  // The HaltingPolicy decides on each piece's last token; converged pieces emit, finish and leave.
  void exit_converged(std::int64_t s) {
    const std::int64_t runs = std::int64_t(rows_.runs().size());
    const value_type* logits = nullptr;
    if (halting_policy::needs_logits(hopt_)) {
      head_logits(x_, [](const piece&) { return std::int64_t(1); });
      logits = ws_.logits();
    }
    std::vector<std::uint8_t> done;
    std::vector<float> values;  // the criterion's statistic per run, only for the halt.value tap
    std::vector<float>* want = nullptr;
    if constexpr (detail::has_decide_values<monitor_type>) {
      if (opt_.taps.on_tap && tapping("halt.value")) want = &values;
    }
    if constexpr (detail::has_decide_pooled<monitor_type>) {
      if (pooled_) monitor_->decide_pooled(x_, rows_.size(), rows_.runs(), done, want);
    }
    if (!pooled_) {
      if constexpr (detail::has_decide_values<monitor_type>)
        monitor_->decide(last_rows(x_), logits, runs, done, want);
      else
        monitor_->decide(last_rows(x_), logits, runs, done);
    }
    if (opt_.taps.on_tap) tap_halt(s, values, done);
    if (std::find(done.begin(), done.end(), std::uint8_t(1)) != done.end()) leave(done, logits != nullptr);
  }

  // The halt.value and halt.exited taps of check step s: one row per run (its last token, the
  // one the test decides on), before the exiting runs leave.
  void tap_halt(std::int64_t s, const std::vector<float>& values, const std::vector<std::uint8_t>& done) {
    engine::active_rows out;
    for (const auto& run : rows_.runs()) out.append(run.seq, run.pos0 + run.n - 1, 1);
    if (!values.empty() && tapping("halt.value")) tap_host("halt.value", s, values.data(), out, 1);
    if (tapping("halt.exited")) {
      std::vector<float> flags(done.begin(), done.end());
      tap_host("halt.exited", s, flags.data(), out, 1);
    }
  }

  // Pieces flagged in `done` (per run) write their outputs, finish, and their rows are compacted away.
  void leave(const std::vector<std::uint8_t>& done, bool logits_ready) {
    const auto runs = rows_.runs();
    const std::int64_t V = m_.output_width(), h = m_.dims().h;
    std::vector<std::uint8_t> piece_done(pieces_.size(), 0);
    for (std::size_t k = 0; k < runs.size(); ++k) piece_done[std::size_t(runs[k].seq)] = done[k];
    const auto is_done = [&](const piece& p) { return piece_done[std::size_t(&p - pieces_.data())] != 0; };
    // The check's logits (each piece's last row) are the outputs of exiting pieces that want
    // one row; its readout already wrote their coda KV. Otherwise — exits decided on the state
    // alone, or pieces that want the logits of all their rows — the readout and head run now,
    // also when no logits are wanted, because the coda KV of an exiting token must be written.
    // (The coda also runs for the pieces that stay; their coda slots are rewritten when they exit.)
    const auto check_has_all = [&](const piece& p) { return logits_ready && p.out_rows == 1; };
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const piece& p = pieces_[std::size_t(runs[k].seq)];
      if (done[k] && check_has_all(p)) engine::download_floats(be_, ws_.logits() + std::int64_t(k) * V, V, p.out);
    }
    const auto head_rows = [&](const piece& p) { return is_done(p) && !check_has_all(p) ? p.out_rows : std::int64_t(0); };
    if (!logits_ready || std::any_of(pieces_.begin(), pieces_.end(), [&](const piece& p) { return head_rows(p) > 0; }))
      emit(x_, head_rows, [](const piece& p) { return p.out; });
    std::vector<std::uint8_t> keep(std::size_t(rows_.size()), 1), keep_runs(runs.size(), 1);
    for (std::size_t k = 0; k < runs.size(); ++k) {
      if (!done[k]) continue;
      finish(runs[k], x_);
      keep_runs[k] = 0;
      std::fill(keep.begin() + runs[k].row0, keep.begin() + runs[k].row0 + runs[k].n, std::uint8_t(0));
    }
    for (value_type* b : {x_, ws_.e(), ws_.e_part(), ws_.checked()})
      if (b != ws_.checked() || has_checked_) engine::compact_rows(be_, b, h, keep, ws_.head());
    rows_ = rows_.kept(keep);
    upload_positions();
    if (monitor_) monitor_->keep(pooled_ ? keep : keep_runs);
  }

  // The rows' positions on the backend, for caches that attend by position.
  void upload_positions() { engine::upload_positions(be_, rows_, ws_.pos()); }

  // Readout → head on every active row of src (left intact): the logits of each piece's last
  // rows_of(piece) rows, stacked in run order in ws.logits(). Returns the rows written.
  template <class RowsOf>
  std::int64_t head_logits(const value_type* src, RowsOf&& rows_of) {
    const std::int64_t h = m_.dims().h, V = m_.output_width();
    value_type* y = ws_.head();
    be_.copy(y, src, std::size_t(rows_.size() * h));
    arch_type::recurrence_policy::readout(*this, y);
    value_type* g = ws_.normed();
    std::int64_t m = 0;
    for (const auto& run : rows_.runs()) {
      const std::int64_t r = rows_of(pieces_[std::size_t(run.seq)]);
      if (r <= 0) continue;
      be_.copy(g + m * h, y + (run.row0 + run.n - r) * h, std::size_t(r * h));
      m += r;
    }
    if (m == 0) return 0;
    const head_args<backend_type, value_type> a{be_, g, m, h, V, m_.weights().ln_f.data(), m_.dims().eps,
                                                m_.output_weight(), ws_.logits(), m_.output_converted()};
    if (opt_.taps.on_tap) tap_head("head.input", g, h, rows_of);  // before the head norms g in place
    arch_type::head_policy::logits(a);
    if (opt_.taps.on_tap) tap_head("logits", ws_.logits(), V, rows_of);
    return m;
  }

  // Tap `name` of the rows head_logits runs (each piece's last rows_of(piece) rows, in run
  // order): `data` [those rows, cols].
  template <class RowsOf>
  void tap_head(std::string_view name, const value_type* data, std::int64_t cols, RowsOf&& rows_of) {
    if (!tapping(name)) return;
    engine::active_rows out;
    for (const auto& run : rows_.runs()) {
      const std::int64_t r = rows_of(pieces_[std::size_t(run.seq)]);
      if (r > 0) out.append(run.seq, run.pos0 + run.n - r, r);
    }
    tap_rows(name, -1, data, out, cols);
  }

  // head_logits, then each piece's rows to dst_of(piece) (host float, [rows, V]).
  template <class RowsOf, class DstOf>
  void emit(const value_type* src, RowsOf&& rows_of, DstOf&& dst_of) {
    if (head_logits(src, rows_of) == 0) return;
    const std::int64_t V = m_.output_width();
    std::int64_t off = 0;
    for (const auto& run : rows_.runs()) {
      piece& p = pieces_[std::size_t(run.seq)];
      const std::int64_t r = rows_of(p);
      if (r <= 0) continue;
      engine::download_floats(be_, ws_.logits() + off * V, r * V, dst_of(p));
      off += r;
    }
  }

  // A piece is done: record its final state; let its cache fill deeper slots it never wrote.
  void finish(const engine::row_run& run, const value_type* src) {
    piece& p = pieces_[std::size_t(run.seq)];
    const std::int64_t h = m_.dims().h;
    const value_type* xs = src + run.row0 * h;
    if (opt_.latents) engine::download_floats(be_, xs, run.n * h, opt_.latents->data() + p.offset * h);
    be_.copy(p.ctx->last_state_.data(), xs + (run.n - 1) * h, std::size_t(h));
    p.ctx->has_last_state_ = true;
    p.ctx->kv_.on_exit(p.pos0, p.n, p.steps_done);
  }

  // The call's tokens join their contexts, with the steps (a routed model: the recursions) each ran.
  void commit() {
    for (std::size_t k = 0; k < pieces_.size(); ++k) {
      piece& p = pieces_[k];
      auto& ctx = *p.ctx;
      ctx.length_ += p.n;
      ctx.tokens_.insert(ctx.tokens_.end(), p.ids, p.ids + p.n * ctx.tokens_per_position_);
      std::vector<std::int32_t> steps(std::size_t(p.n), std::int32_t(p.steps_done));
      if (!depth_.empty()) steps = depth_[k];
      ctx.steps_used_.insert(ctx.steps_used_.end(), steps.begin(), steps.end());
      if (opt_.steps_used) std::copy(steps.begin(), steps.end(), opt_.steps_used->begin() + p.offset);
      if (opt_.depths && !depth_.empty()) std::copy(steps.begin(), steps.end(), opt_.depths->begin() + p.offset);
    }
  }

  const Model& m_;
  const backend_type& be_;
  workspace<backend_type, value_type>& ws_;
  std::vector<piece>& pieces_;
  const run_options& opt_;
  halting_options hopt_;
  bool exits_ = false;
  bool pooled_ = false;        // prefill_exit::prompt with a state criterion: statistics averaged over a run's rows
  bool keep_checked_ = false;  // unchecked_end::last_checked with a logit criterion: keep the checked states
  bool has_checked_ = false;   // ws.checked() holds the states of this call's last check
  std::vector<std::vector<std::int32_t>> depth_;  // routed models: per piece, the recursions each token ran
  std::int64_t steps_ = 0, max_steps_ = 0;
  engine::active_rows rows_;
  value_type* x_ = nullptr;
  value_type* alt_ = nullptr;
  monitor_type* monitor_ = nullptr;  // the exit test (kept by the workspace), when this call may exit early
};

}  // namespace muninn
