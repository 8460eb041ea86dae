#pragma once
/// \file
/// \brief `trm_model<Backend, T>`: a Tiny Recursive Model (attention or token-mixing variant) or a
/// Hierarchical Reasoning Model, loaded from a run as the reference saves it, with its carried
/// per-sample state and the supervision loop (families/trm/halting.hpp for when a sample stops).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/families/trm/checkpoint.hpp"
#include "muninn/families/trm/halting.hpp"
#include "muninn/families/trm/layers.hpp"

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

/// \brief A TRM or HRM model on a backend.
///
/// One supervision step recomputes nothing but the recursion: x (token embedding · √D behind the
/// puzzle prefix) is built once per sample, z_H and z_L start from H_init / L_init and are
/// carried; each step runs trm_recursion and the heads (logits from z_H without the prefix, q from
/// z_H at position 0). Samples never interact, so a batch is the samples' rows stacked.
template <class Backend, class T = float>
class trm_model {
 public:
  using carry_type = trm_carry<Backend, T>;  ///< a batch in flight

  /// \brief Loads a run: `path` is its folder (the newest step_N is taken) or a step file.
  static trm_model load(const std::string& path, const trm_load_options& options = {}, Backend be = Backend{}) {
    return trm_model(std::move(be), io::open_trm(path, options));
  }

  /// \brief Builds the model from an opened run; the checkpoint is kept for the puzzle table.
  trm_model(Backend be, io::trm_files f)
      : be_(be), cfg_(std::move(f.config)), ck_(std::move(f.weights)), step_file_(std::move(f.step_file)),
        w_(load_trm_weights<Backend, T>(be_, ck_, cfg_)) {}

  /// \brief Settings.
  const trm_config& config() const { return cfg_; }
  /// \brief The backend.
  const Backend& backend() const { return be_; }
  /// \brief The checkpoint file.
  const std::string& step_file() const { return step_file_; }
  /// \brief Parameters (the puzzle table not counted: it is a buffer in the reference).
  std::int64_t parameter_count() const { return w_.parameter_count; }
  /// \brief Rows of the puzzle table.
  std::int64_t puzzle_table_rows() const { return ck_.get("puzzle_emb.weights").shape.at(0); }

  /// \brief Starts a batch: `inputs` [B, seq_len] tokens and `puzzle_identifiers` [B]; every
  /// sample at (H_init, L_init) with 0 steps.
  /// \throws muninn::error naming the value for a length that is not B·seq_len, a token outside
  ///         the vocabulary, or an identifier outside the puzzle table
  carry_type start(const std::vector<std::int32_t>& inputs, const std::vector<std::int32_t>& puzzle_identifiers) {
    const std::int64_t B = std::int64_t(puzzle_identifiers.size()), L = cfg_.seq_len;
    MUNINN_CHECK(B > 0, "trm: an empty batch");
    MUNINN_CHECK(std::int64_t(inputs.size()) == B * L, "trm: ", inputs.size(), " input tokens for ", B,
                 " puzzles, but the model's puzzles have seq_len ", L, " tokens (", B * L, " expected)");
    for (std::size_t i = 0; i < inputs.size(); ++i)
      MUNINN_CHECK(inputs[i] >= 0 && inputs[i] < cfg_.vocab_size, "trm: token ", inputs[i], " of puzzle ",
                   i / std::size_t(L), " (position ", i % std::size_t(L), ") is outside the vocabulary [0, ",
                   cfg_.vocab_size, ")");
    const std::vector<float> x = embed(inputs, puzzle_identifiers);
    const std::size_t rows = std::size_t(B * cfg_.total_len());
    carry_type c;
    for (auto* b : {&c.zH, &c.zL, &c.x, &c.spare}) *b = be_.template alloc<T>(x.size());
    c.idx = be_.template alloc<std::int32_t>(std::size_t(B));
    engine::upload_floats(be_, c.x.data(), x.data(), std::int64_t(x.size()));
    engine::upload_floats(be_, c.zH.data(), broadcast(w_.H_init, rows).data(), std::int64_t(x.size()));
    engine::upload_floats(be_, c.zL.data(), broadcast(w_.L_init, rows).data(), std::int64_t(x.size()));
    c.sample.resize(std::size_t(B));
    for (std::int64_t i = 0; i < B; ++i) c.sample[std::size_t(i)] = i;
    c.steps.assign(std::size_t(B), 0);
    ws_.reserve(be_, cfg_, B);
    return c;
  }

  /// \brief One supervision step for every active sample of `c`; returns their outputs.
  trm_step_output step(carry_type& c) {
    const std::int64_t n = c.active(), S = cfg_.total_len(), L = cfg_.seq_len, V = cfg_.vocab_size,
                       P = cfg_.prefix_len();
    trm_step_output out;
    if (n == 0) return out;
    trm_recursion(be_, cfg_, w_, c.zH.data(), c.zL.data(), static_cast<const T*>(c.x.data()), n, ws_);
    trm_heads(be_, cfg_, w_, static_cast<const T*>(c.zH.data()), n, ws_);
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
      ++c.steps[std::size_t(c.sample[std::size_t(b)])];
    }
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
    const std::int64_t width = cfg_.total_len() * cfg_.hidden_size, n = std::int64_t(rows.size());
    be_.upload(c.idx.data(), rows.data(), rows.size());
    for (auto* b : {&c.zH, &c.zL, &c.x}) {
      gather_rows(be_, static_cast<const T*>(b->data()), width, static_cast<const std::int32_t*>(c.idx.data()), n,
                  width, c.spare.data(), width);
      std::swap(*b, c.spare);
    }
  }

  /// \brief Runs a batch to the end under a halting policy (trm_halting::fixed or q_halt).
  /// \param inputs   [B, seq_len] tokens
  /// \param puzzle_identifiers [B] rows of the puzzle table
  /// \param policy   when a sample stops
  /// \param on_step  called after every step as on_step(step, active samples, outputs) (optional)
  template <class Halting, class OnStep>
  trm_result solve(const std::vector<std::int32_t>& inputs, const std::vector<std::int32_t>& puzzle_identifiers,
                   const Halting& policy, OnStep&& on_step) {
    const std::int64_t N = policy.max_steps(cfg_), L = cfg_.seq_len, V = cfg_.vocab_size;
    MUNINN_CHECK(N >= 1, "trm: the number of supervision steps must be at least 1, got ", N);
    carry_type c = start(inputs, puzzle_identifiers);
    trm_result r;
    r.batch = c.active();
    r.seq_len = L;
    r.vocab = V;
    r.logits.resize(std::size_t(r.batch * L * V));
    r.q_halt.resize(std::size_t(r.batch));
    r.q_continue.resize(std::size_t(r.batch));
    for (std::int64_t s = 1; s <= N && c.active() > 0; ++s) {
      const trm_step_output o = step(c);
      on_step(s, static_cast<const std::vector<std::int64_t>&>(c.sample), o);
      std::vector<std::uint8_t> keep(c.sample.size(), 1);
      for (std::size_t i = 0; i < c.sample.size(); ++i) {
        const std::size_t b = std::size_t(c.sample[i]);
        std::copy_n(o.logits.begin() + std::int64_t(i) * L * V, L * V, r.logits.begin() + std::int64_t(b) * L * V);
        r.q_halt[b] = o.q_halt[i];
        r.q_continue[b] = o.q_continue[i];
        keep[i] = !(s == N || policy.stop(cfg_, o.q_halt[i], o.q_continue[i]));
      }
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
    return solve(inputs, puzzle_identifiers, policy, [](std::int64_t, const std::vector<std::int64_t>&,
                                                         const trm_step_output&) {});
  }

 private:
  // x [B, S, D] on the host: the puzzle row zero-padded over the prefix positions, the token
  // embeddings, (learned positions: 0.707106781·(e + pos)), all times √D.
  std::vector<float> embed(const std::vector<std::int32_t>& inputs, const std::vector<std::int32_t>& ids) const {
    const std::int64_t B = std::int64_t(ids.size()), S = cfg_.total_len(), D = cfg_.hidden_size,
                       L = cfg_.seq_len, P = cfg_.prefix_len(), nd = cfg_.puzzle_emb_ndim;
    std::vector<float> rows;
    trm_puzzle_rows(ck_, ids, rows);
    std::vector<float> x(std::size_t(B * S * D), 0.0f);
    const float scale = float(std::sqrt(double(D)));
    for (std::int64_t b = 0; b < B; ++b) {
      float* xb = x.data() + b * S * D;
      std::copy_n(rows.begin() + b * nd, nd, xb);
      for (std::int64_t t = 0; t < L; ++t)
        std::copy_n(w_.embed_tokens.begin() + std::int64_t(inputs[std::size_t(b * L + t)]) * D, D, xb + (P + t) * D);
      for (std::int64_t i = 0; i < S * D; ++i) {
        float e = xb[i];
        if (!w_.embed_pos.empty()) e = 0.707106781f * (e + w_.embed_pos[std::size_t(i)]);
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
  trm_config cfg_;
  io::checkpoint ck_;
  std::string step_file_;
  trm_weights<Backend, T> w_;
  trm_workspace<Backend, T> ws_;
};

}  // namespace muninn
