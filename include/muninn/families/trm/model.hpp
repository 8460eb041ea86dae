#pragma once
/// \file
/// \brief `trm_model<Backend, T>`: a Tiny Recursive Model (attention or token-mixing variant) or a
/// Hierarchical Reasoning Model, loaded from a run as the reference saves it — a
/// `model<Backend, T, trm_attention_arch>` (`trm_mlp_arch` for mlp_t) with the carried per-sample state and
/// the supervision loop (families/trm/halting.hpp for when a sample stops).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/families/trm/arch.hpp"
#include "muninn/families/trm/checkpoint.hpp"
#include "muninn/families/trm/halting.hpp"
#include "muninn/families/trm/pass.hpp"
#include "muninn/model/model.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {

/// \brief A batch of samples in flight: their states (z_H, z_L), input embeddings x, and which
/// batch sample each active row is. Samples that stopped have left (trm_model::retain).
template <class Backend, class T>
struct trm_carry {
  using buffer = typename Backend::template buffer<T>;  ///< storage on the backend
  buffer zH;     ///< [n, S, D] z_H (the answer stream y)
  buffer zL;     ///< [n, S, D] z_L (the latent z)
  buffer x;      ///< [n, S, D] input embeddings (constant per sample)
  buffer spare;  ///< [n, S, D] the destination of a compaction
  typename Backend::template buffer<std::int32_t> idx;  ///< [n] rows kept by a compaction
  std::vector<std::int64_t> sample;  ///< batch index of each active row
  std::vector<std::int32_t> steps;   ///< supervision steps done, per batch sample
  /// \brief Samples still running.
  std::int64_t active() const { return std::int64_t(sample.size()); }
};

/// \brief The outputs of one supervision step for the active rows, as host floats.
struct trm_step_output {
  std::vector<float> logits;      ///< [n, seq_len, V]: the grid positions (prefix dropped)
  std::vector<float> q_halt;      ///< [n]
  std::vector<float> q_continue;  ///< [n]
};

/// \brief What solve() returns: each sample's outputs at the last step it ran.
struct trm_result {
  std::int64_t batch = 0;            ///< samples
  std::int64_t seq_len = 0;          ///< grid tokens per sample
  std::int64_t vocab = 0;            ///< V
  std::vector<std::int32_t> steps;   ///< [B] supervision steps each sample used
  std::vector<std::int32_t> preds;   ///< [B, seq_len] arg-max tokens (the first index on ties)
  std::vector<float> logits;         ///< [B, seq_len, V]
  std::vector<float> q_halt;         ///< [B]
  std::vector<float> q_continue;     ///< [B]
};

/// \brief Arg-max of each row of `x` [rows, cols], the first index on ties (as torch.argmax).
inline std::vector<std::int32_t> trm_argmax(const float* x, std::int64_t rows, std::int64_t cols) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* p = x + r * cols;
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < cols; ++j)
      if (p[j] > p[best]) best = j;
    out[std::size_t(r)] = std::int32_t(best);
  }
  return out;
}

namespace detail {
template <class H>
using trm_rule_t = decltype(std::declval<const H&>().rule(std::declval<const trm_config&>()));
/// \brief solve() without a per-step callback: nothing but the halt bytes leaves the backend
/// before a sample stops.
struct trm_no_step_callback {};
}  // namespace detail

/// \brief A TRM or HRM model on a backend.
///
/// A thin wrapper over `model<Backend, T, trm_attention_arch>` (`trm_mlp_arch` for an mlp_t run): the model
/// holds the config and weights; this class adds what a batch of puzzles needs — the carried
/// streams, the supervision loop, the halting decision and compaction. One supervision step runs
/// `recurrence::two_stream` through `trm_pass`: x (token embedding · √D behind the puzzle prefix)
/// is built once per sample, z_H and z_L start from H_init / L_init and are carried; the heads
/// give logits from z_H without the prefix and q from z_H at position 0. Samples never interact,
/// so a batch is the samples' rows stacked.
template <class Backend, class T = float>
class trm_model {
 public:
  using carry_type = trm_carry<Backend, T>;             ///< a batch in flight
  using attention_model = model<Backend, T, trm_attention_arch>;  ///< TRM (attention) and HRM
  using token_mlp_model = model<Backend, T, trm_mlp_arch>;  ///< TRM's mlp_t variant

  /// \brief Loads a run: `path` is its folder (the newest step_N is taken) or a step file.
  static trm_model load(const std::string& path, const trm_load_options& options = {}, Backend be = Backend{}) {
    return trm_model(std::move(be), io::open_trm(path, options));
  }

  /// \brief Builds the model from an opened run; the checkpoint is kept for the puzzle table.
  trm_model(Backend be, io::trm_files f)
      : be_(be), ck_(std::move(f.weights)), step_file_(std::move(f.step_file)), m_(make(be, f.config, ck_)),
        monitor_(be_, 0) {}

  /// \brief Settings.
  const trm_config& config() const { return visit([](const auto& m) -> const trm_config& { return m.config(); }); }
  /// \brief The backend.
  const Backend& backend() const { return be_; }
  /// \brief The checkpoint file.
  const std::string& step_file() const { return step_file_; }
  /// \brief Parameters (the puzzle table not counted: it is a buffer in the reference).
  std::int64_t parameter_count() const { return weights().parameter_count; }
  /// \brief Rows of the puzzle table.
  std::int64_t puzzle_table_rows() const { return ck_.get("puzzle_emb.weights").shape.at(0); }
  /// \brief The parameters.
  const trm_weights<Backend, T>& weights() const {
    return visit([](const auto& m) -> const trm_weights<Backend, T>& { return m.weights(); });
  }
  /// \brief Host only: stores the layers' projection matrices and the output matrix in `format`
  /// (bf16 or q8, model::store_weights_as). The token-mixing MLP, the Q head, the embeddings and
  /// the initial states stay fp32: they are a small part of the bytes a step reads. Call before
  /// start().
  void store_weights_as(muninn::weight_format format) {
    std::visit([&](auto& m) { m.store_weights_as(format); }, m_);
  }
  /// \brief How the layers' projection matrices and the output matrix are stored.
  muninn::weight_format weight_format() const {
    return visit([](const auto& m) { return m.weight_format(); });
  }
  /// \brief Bytes of parameter storage (model::weight_bytes).
  std::size_t weight_bytes() const {
    return visit([](const auto& m) { return m.weight_bytes(); });
  }
  /// \brief Calls f with the underlying `model<Backend, T, Arch>` (attention_model or token_mlp_model).
  template <class F>
  decltype(auto) visit(F&& f) const { return std::visit(std::forward<F>(f), m_); }

  /// \brief Starts a batch: `inputs` [B, seq_len] tokens and `puzzle_identifiers` [B]; every
  /// sample at (H_init, L_init) with 0 steps.
  /// \throws muninn::error naming the value for a length that is not B·seq_len, a token outside
  ///         the vocabulary, or an identifier outside the puzzle table
  carry_type start(const std::vector<std::int32_t>& inputs, const std::vector<std::int32_t>& puzzle_identifiers) {
    const trm_config& cfg = config();
    const std::int64_t B = std::int64_t(puzzle_identifiers.size()), L = cfg.seq_len;
    MUNINN_CHECK(B > 0, "trm: an empty batch");
    MUNINN_CHECK(std::int64_t(inputs.size()) == B * L, "trm: ", inputs.size(), " input tokens for ", B,
                 " puzzles, but the model's puzzles have seq_len ", L, " tokens (", B * L, " expected)");
    for (std::size_t i = 0; i < inputs.size(); ++i)
      MUNINN_CHECK(inputs[i] >= 0 && inputs[i] < cfg.vocab_size, "trm: token ", inputs[i], " of puzzle ",
                   i / std::size_t(L), " (position ", i % std::size_t(L), ") is outside the vocabulary [0, ",
                   cfg.vocab_size, ")");
    const std::vector<float> x = embed(inputs, puzzle_identifiers);
    const std::int64_t rows = B * cfg.total_len(), D = cfg.hidden_size;
    carry_type c;
    for (auto* b : {&c.zH, &c.zL, &c.x, &c.spare}) *b = be_.template alloc<T>(x.size());
    c.idx = be_.template alloc<std::int32_t>(std::size_t(B));
    engine::upload_floats(be_, c.x.data(), x.data(), std::int64_t(x.size()));
    // The StateInit slot (state_init::given): the stored initial states broadcast over the positions.
    const auto init = [&](T* dst, const std::vector<float>& row) {
      const std::vector<float> given = broadcast(row, std::size_t(rows));
      trm_attention_arch::state_init_policy::fill(state_init_args<Backend, T>{be_, dst, rows, D, 0, 0, given.data(), cfg});
    };
    init(c.zH.data(), weights().H_init);
    init(c.zL.data(), weights().L_init);
    c.sample.resize(std::size_t(B));
    for (std::int64_t i = 0; i < B; ++i) c.sample[std::size_t(i)] = i;
    c.steps.assign(std::size_t(B), 0);
    ws_.reserve(be_, cfg, B);
    if (B > monitor_capacity_) {
      monitor_ = q_halt_monitor<Backend, T>(be_, B);
      monitor_capacity_ = B;
    }
    return c;
  }

  /// \brief One supervision step for every active sample of `c`; returns their outputs (logits
  /// and q values downloaded: the caller asked for them). `taps` receives the streams after each
  /// update (z_L.cycle.T.J, z_H.cycle.T: docs/taps.md).
  trm_step_output step(carry_type& c, const tap_options& taps = {}) {
    trm_step_output out;
    if (c.active() == 0) return out;
    advance(c, taps);
    download_outputs(c.active(), out);
    return out;
  }

  /// \brief Keeps the active rows with keep[i] != 0 (in order); the others leave the batch.
  void retain(carry_type& c, const std::vector<std::uint8_t>& keep) {
    MUNINN_CHECK(std::int64_t(keep.size()) == c.active(), "trm: retain needs one flag per active sample (",
                 c.active(), "), got ", keep.size());
    std::vector<std::int32_t> rows;
    std::vector<std::int64_t> sample;
    for (std::size_t i = 0; i < keep.size(); ++i)
      if (keep[i]) rows.push_back(std::int32_t(i)), sample.push_back(c.sample[i]);
    if (rows.size() == keep.size()) return;
    c.sample = std::move(sample);
    if (rows.empty()) return;
    const std::int64_t width = config().total_len() * config().hidden_size, n = std::int64_t(rows.size());
    be_.upload(c.idx.data(), rows.data(), rows.size());
    for (auto* b : {&c.zH, &c.zL, &c.x}) {
      gather_rows(be_, static_cast<const T*>(b->data()), width, static_cast<const std::int32_t*>(c.idx.data()), n,
                  width, c.spare.data(), width);
      std::swap(*b, c.spare);
    }
  }

  /// \brief Runs a batch to the end under a halting policy (trm_halting::fixed or q_halt).
  ///
  /// A policy with `rule()` is decided on the backend: per step only a byte per sample reaches
  /// the host, and a sample's logits and q values are downloaded once, at the step it stops.
  /// `on_step` asks for every step's outputs, so they are downloaded each step.
  /// \param inputs   [B, seq_len] tokens
  /// \param puzzle_identifiers [B] rows of the puzzle table
  /// \param policy   when a sample stops
  /// \param on_step  called after every step as on_step(step, active samples, outputs)
  /// \param taps     the streams z_L and z_H after each update within a step (z_L.cycle.T.J,
  ///                 z_H.cycle.T; docs/taps.md), tap_event::step the 0-based supervision step;
  ///                 without a callback nothing is copied
  template <class Halting, class OnStep>
  trm_result solve(const std::vector<std::int32_t>& inputs, const std::vector<std::int32_t>& puzzle_identifiers,
                   const Halting& policy, OnStep&& on_step, const tap_options& taps = {}) {
    constexpr bool on_device = muninn::detail::detected_v<Halting, muninn::detail::trm_rule_t>;
    constexpr bool callback = !std::is_same_v<std::decay_t<OnStep>, muninn::detail::trm_no_step_callback>;
    const trm_config& cfg = config();
    const std::int64_t N = policy.max_steps(cfg), L = cfg.seq_len, V = cfg.vocab_size;
    MUNINN_CHECK(N >= 1, "trm: the number of supervision steps must be at least 1, got ", N);
    carry_type c = start(inputs, puzzle_identifiers);
    trm_result r;
    r.batch = c.active();
    r.seq_len = L;
    r.vocab = V;
    r.logits.resize(std::size_t(r.batch * L * V));
    r.q_halt.resize(std::size_t(r.batch));
    r.q_continue.resize(std::size_t(r.batch));
    std::vector<std::uint8_t> halt;
    for (std::int64_t s = 1; s <= N && c.active() > 0; ++s) {
      const std::int64_t n = c.active();
      advance(c, taps);
      trm_step_output o;  // every output of this step, only when someone reads them on the host
      if (callback || !on_device) download_outputs(n, o);
      if constexpr (on_device) {
        const q_halt_rule rule = policy.rule(cfg);
        monitor_.decide(static_cast<const T*>(ws_.q_halt.data()), n, rule.kind, rule.threshold, halt);
      } else {
        halt.assign(std::size_t(n), 0);
        for (std::int64_t i = 0; i < n; ++i)
          halt[std::size_t(i)] = policy.stop(cfg, o.q_halt[std::size_t(i)], o.q_continue[std::size_t(i)]);
      }
      if constexpr (callback) on_step(s, static_cast<const std::vector<std::int64_t>&>(c.sample), o);
      std::vector<std::uint8_t> keep(std::size_t(n), 1);
      for (std::size_t i = 0; i < std::size_t(n); ++i) keep[i] = !(s == N || halt[i]);
      record(c, keep, o, r);
      retain(c, keep);
    }
    r.steps = c.steps;
    r.preds = trm_argmax(r.logits.data(), r.batch * L, V);
    return r;
  }

  /// \brief solve() without a per-step callback.
  template <class Halting>
  trm_result solve(const std::vector<std::int32_t>& inputs, const std::vector<std::int32_t>& puzzle_identifiers,
                   const Halting& policy) {
    return solve(inputs, puzzle_identifiers, policy, muninn::detail::trm_no_step_callback{});
  }

 private:
  using models = std::variant<attention_model, token_mlp_model>;

  static models make(const Backend& be, const trm_config& cfg, const io::checkpoint& ck) {
    trm_weights<Backend, T> w = load_trm_weights<Backend, T>(be, ck, cfg);
    if (cfg.mlp_t) return models(std::in_place_index<1>, be, cfg, std::move(w));
    return models(std::in_place_index<0>, be, cfg, std::move(w));
  }

  // One supervision step on the active samples: the streams advance, the heads' logits and q
  // stay in the workspace. The samples of a carry step together, so the first one's count is
  // the step's index.
  void advance(carry_type& c, const tap_options& taps) {
    const std::int64_t n = c.active();
    const std::int64_t step = c.steps[std::size_t(c.sample.front())];
    visit([&](const auto& m) {
      trm_pass<std::decay_t<decltype(m)>> p(m, ws_, c.zH.data(), c.zL.data(), static_cast<const T*>(c.x.data()), n);
      p.set_taps(&taps, step, &c.sample);
      p.run();
    });
    for (const std::int64_t b : c.sample) ++c.steps[std::size_t(b)];
  }

  // The n active samples' logits (prefix dropped) and q values of the last step, to the host.
  void download_outputs(std::int64_t n, trm_step_output& out) const {
    const trm_config& cfg = config();
    const std::int64_t S = cfg.total_len(), L = cfg.seq_len, V = cfg.vocab_size, P = cfg.prefix_len();
    std::vector<float> all(std::size_t(n * S * V)), q(std::size_t(n * 2));
    engine::download_floats(be_, static_cast<const T*>(ws_.logits.data()), std::int64_t(all.size()), all.data());
    engine::download_floats(be_, static_cast<const T*>(ws_.q_halt.data()), std::int64_t(q.size()), q.data());
    out.logits.resize(std::size_t(n * L * V));
    for (std::int64_t b = 0; b < n; ++b)
      std::copy_n(all.begin() + (b * S + P) * V, L * V, out.logits.begin() + b * L * V);
    out.q_halt.resize(std::size_t(n));
    out.q_continue.resize(std::size_t(n));
    for (std::int64_t b = 0; b < n; ++b) {
      out.q_halt[std::size_t(b)] = q[std::size_t(2 * b)];
      out.q_continue[std::size_t(b)] = q[std::size_t(2 * b + 1)];
    }
  }

  // The outputs of the samples that stop now (keep[i] == 0) into r: from `o` when this step's
  // outputs are on the host already, else downloaded for those samples alone.
  void record(const carry_type& c, const std::vector<std::uint8_t>& keep, const trm_step_output& o, trm_result& r) const {
    const trm_config& cfg = config();
    const std::int64_t S = cfg.total_len(), L = cfg.seq_len, V = cfg.vocab_size, P = cfg.prefix_len();
    std::vector<float> q(2);
    for (std::size_t i = 0; i < keep.size(); ++i) {
      if (keep[i]) continue;
      const std::size_t b = std::size_t(c.sample[i]);
      float* dst = r.logits.data() + std::int64_t(b) * L * V;
      if (!o.q_halt.empty()) {
        std::copy_n(o.logits.begin() + std::int64_t(i) * L * V, L * V, dst);
        r.q_halt[b] = o.q_halt[i];
        r.q_continue[b] = o.q_continue[i];
        continue;
      }
      engine::download_floats(be_, static_cast<const T*>(ws_.logits.data()) + (std::int64_t(i) * S + P) * V, L * V, dst);
      engine::download_floats(be_, static_cast<const T*>(ws_.q_halt.data()) + 2 * std::int64_t(i), 2, q.data());
      r.q_halt[b] = q[0];
      r.q_continue[b] = q[1];
    }
  }

  // x [B, S, D] on the host: the puzzle row zero-padded over the prefix positions, the token
  // embeddings, (learned positions: 0.707106781·(e + pos)), all times the InputPolicy's scale (√D).
  std::vector<float> embed(const std::vector<std::int32_t>& inputs, const std::vector<std::int32_t>& ids) const {
    const trm_config& cfg = config();
    const trm_weights<Backend, T>& w = weights();
    const std::int64_t B = std::int64_t(ids.size()), S = cfg.total_len(), D = cfg.hidden_size, L = cfg.seq_len,
                       P = cfg.prefix_len(), nd = cfg.puzzle_emb_ndim;
    std::vector<float> rows;
    trm_puzzle_rows(ck_, ids, rows);
    std::vector<float> x(std::size_t(B * S * D), 0.0f);
    const float scale = trm_attention_arch::input_policy::scale(D);
    for (std::int64_t b = 0; b < B; ++b) {
      float* xb = x.data() + b * S * D;
      std::copy_n(rows.begin() + b * nd, nd, xb);
      for (std::int64_t t = 0; t < L; ++t)
        std::copy_n(w.embed_tokens.begin() + std::int64_t(inputs[std::size_t(b * L + t)]) * D, D, xb + (P + t) * D);
      for (std::int64_t i = 0; i < S * D; ++i) {
        float e = xb[i];
        if (!w.embed_pos.empty()) e = 0.707106781f * (e + w.embed_pos[std::size_t(i)]);
        xb[i] = scale * e;
      }
    }
    return x;
  }

  std::vector<float> broadcast(const std::vector<float>& row, std::size_t rows) const {
    std::vector<float> out(rows * row.size());
    for (std::size_t r = 0; r < rows; ++r) std::copy(row.begin(), row.end(), out.begin() + r * row.size());
    return out;
  }

  Backend be_;
  io::checkpoint ck_;
  std::string step_file_;
  models m_;
  trm_workspace<Backend, T> ws_;
  q_halt_monitor<Backend, T> monitor_;
  std::int64_t monitor_capacity_ = 0;
};

}  // namespace muninn
