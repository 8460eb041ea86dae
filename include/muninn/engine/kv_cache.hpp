#pragma once
/// \file
/// \brief KV cache objects: they own the key/value storage of one sequence and know which slot
/// each executed layer writes and which rows a run reads.
///
/// Concept KvStorage (what a KvCachePolicy's `storage<Backend, T>` must provide):
/// constructor `(const Backend&, const kv_layout&, const context_limits&)`;
/// `kv_slot<T> slot(layer_group, step, layer)`; `kv_read<T> read(layer_group, step, layer,
/// const engine::row_run&, const std::vector<std::int32_t>& steps_used)`; `void on_exit(pos0, n,
/// steps_done)`; `num_slots()`, `bytes()`, `bytes_per_token()`.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/kv_views.hpp"
#include "muninn/engine/rows.hpp"

namespace muninn {

/// \brief What older tokens show a later token at a recurrence step they did not run (they exited early).
enum class kv_fallback {
  latest,  ///< the deepest step of the same core layer the token did run (reference "latest-m4")
  none,    ///< nothing: such tokens are left out of attention (reference "full" with gaps = "skip")
};

/// \brief What a context is sized for.
struct context_limits {
  std::int64_t max_tokens = 0;   ///< cache capacity in tokens (≤ the model's block_size)
  std::int64_t max_steps = -1;   ///< deepest recurrence a call may ask for (-1: mean_recurrence)
  std::int64_t max_chunk = 256;  ///< tokens processed together; longer inputs are fed in chunks
  std::int64_t kv_budget = 0;    ///< recurrences that own KV slots (0: every step; k: step s uses s mod k)
  kv_fallback fallback = kv_fallback::latest;  ///< see kv_fallback
  /// \brief Recursive KV sharing (Mixture-of-Recursions): core steps ≥ 1 attend to step 0's keys
  /// and values of the same layer and keep none of their own (ragged caches only).
  bool share_first_step = false;
};

/// \brief The layer groups of a model: prelude (run once), core (run per recurrence step), coda.
/// A plain stack keeps all its layers in the prelude.
enum class layer_group { prelude, core, coda };

/// \brief A layer group's name: "prelude", "core" or "coda" (tap names, messages).
inline const char* layer_group_name(layer_group g) {
  return g == layer_group::prelude ? "prelude" : g == layer_group::core ? "core" : "coda";
}

/// \brief The layer counts and key/value width a cache is laid out for.
struct kv_layout {
  std::int64_t prelude = 0;  ///< layers run once before the recurrence
  std::int64_t core = 0;     ///< layers run at every recurrence step
  std::int64_t coda = 0;     ///< layers run once after it
  std::int64_t kv_dim = 0;   ///< Hkv·D
};

namespace engine {

/// \brief Contiguous slots of [max_tokens, kv_dim] keys and values; `Indexing` (the
/// KvCachePolicy) maps (group, step, layer) to a slot.
template <class Backend, class T, class Indexing>
class slot_cache {
 public:
  /// \brief Allocates every slot up front, zeroed.
  slot_cache(const Backend& be, const kv_layout& lay, const context_limits& lim)
      : lay_(lay), lim_(lim), n_slots_(Indexing::num_slots(lay, lim)) {
    const auto n = std::size_t(n_slots_ * lim.max_tokens * lay.kv_dim);
    k_ = be.template alloc_zeroed<T>(n);
    v_ = be.template alloc_zeroed<T>(n);
  }
  /// \brief The slot that layer `layer` of `group` at recurrence `step` writes.
  kv_slot<T> slot(layer_group group, std::int64_t step, std::int64_t layer) {
    return slot_at(Indexing::slot_id(lay_, lim_, group, step, layer));
  }
  /// \brief What a run attends to: its slot's rows [0, pos0 + n).
  kv_read<T> read(layer_group group, std::int64_t step, std::int64_t layer, const row_run& run,
                  const std::vector<std::int32_t>&) {
    const kv_slot<T> s = slot(group, step, layer);
    return kv_read<T>{s.k, s.v, run.pos0 + run.n};
  }
  /// \brief Called when tokens pos0 … pos0+n−1 stop after `steps_done` recurrences: nothing to do here.
  void on_exit(std::int64_t, std::int64_t, std::int64_t) {}
  /// \brief Slots per token.
  std::int64_t num_slots() const { return n_slots_; }
  /// \brief Bytes held (keys and values).
  std::size_t bytes() const { return (k_.size() + v_.size()) * sizeof(T); }
  /// \brief Bytes one token occupies over all slots.
  std::size_t bytes_per_token() const { return std::size_t(2 * n_slots_ * lay_.kv_dim) * sizeof(T); }

 protected:
  /// \brief Slot `id`'s rows.
  kv_slot<T> slot_at(std::int64_t id) {
    const std::int64_t off = id * lim_.max_tokens * lay_.kv_dim;
    return kv_slot<T>{k_.data() + off, v_.data() + off};
  }
  kv_layout lay_;          ///< layer counts
  context_limits lim_;     ///< capacity, steps, budget, fallback
  std::int64_t n_slots_;   ///< slots per token

 private:
  typename Backend::template buffer<T> k_, v_;
};

/// \brief Huginn's cache: one slot per executed layer (with a step budget), plus the fallbacks
/// for tokens that exited before a step (`kv_fallback`).
template <class Backend, class T, class Indexing>
class executed_layer_cache : public slot_cache<Backend, T, Indexing> {
  using base = slot_cache<Backend, T, Indexing>;

 public:
  /// \brief Allocates the slots, and the gather rows `kv_fallback::none` needs.
  executed_layer_cache(const Backend& be, const kv_layout& lay, const context_limits& lim)
      : base(be, lay, lim), be_(be) {
    if (lim.fallback == kv_fallback::none) {
      k_gather_ = be.template alloc<T>(std::size_t(lim.max_tokens * lay.kv_dim));
      v_gather_ = be.template alloc<T>(std::size_t(lim.max_tokens * lay.kv_dim));
    }
  }

  /// \brief As slot_cache::read, except that under `kv_fallback::none` a core step leaves out
  /// older tokens that never ran it (gathered into contiguous rows).
  kv_read<T> read(layer_group group, std::int64_t step, std::int64_t layer, const row_run& run,
                  const std::vector<std::int32_t>& steps_used) {
    const kv_slot<T> s = this->slot(group, step, layer);
    const kv_read<T> own{s.k, s.v, run.pos0 + run.n};
    if (group != layer_group::core || this->lim_.fallback != kv_fallback::none) return own;
    const std::int64_t need = this->lim_.kv_budget > 0 ? step % this->lim_.kv_budget : step;
    const auto ran = [&](std::int64_t p) { return p >= run.pos0 || steps_used[std::size_t(p)] > need; };
    bool gaps = false;
    for (std::int64_t p = 0; p < run.pos0 && !gaps; ++p) gaps = !ran(p);
    if (!gaps) return own;
    const std::int64_t kvd = this->lay_.kv_dim;
    std::int64_t m = 0;
    for (std::int64_t p = 0; p < run.pos0 + run.n; ++p) {
      if (!ran(p)) continue;
      be_.copy(k_gather_.data() + m * kvd, s.k + p * kvd, std::size_t(kvd));
      be_.copy(v_gather_.data() + m * kvd, s.v + p * kvd, std::size_t(kvd));
      ++m;
    }
    return kv_read<T>{k_gather_.data(), v_gather_.data(), m};
  }

  /// \brief Latest-available-depth fallback: tokens that ran `steps_done` steps expose their
  /// last step's keys/values at every deeper step they skipped, so later tokens attend to
  /// their deepest thought.
  void on_exit(std::int64_t pos0, std::int64_t n, std::int64_t steps_done) {
    const std::int64_t owned = Indexing::core_steps(this->lim_);
    if (this->lim_.fallback != kv_fallback::latest || steps_done <= 0 || steps_done >= owned) return;
    const std::int64_t kvd = this->lay_.kv_dim;
    for (std::int64_t j = 0; j < this->lay_.core; ++j) {
      const kv_slot<T> src = this->slot(layer_group::core, steps_done - 1, j);
      for (std::int64_t t = steps_done; t < owned; ++t) {
        const kv_slot<T> dst = this->slot(layer_group::core, t, j);
        be_.copy(dst.k + pos0 * kvd, src.k + pos0 * kvd, std::size_t(n * kvd));
        be_.copy(dst.v + pos0 * kvd, src.v + pos0 * kvd, std::size_t(n * kvd));
      }
    }
  }

 private:
  Backend be_;
  typename Backend::template buffer<T> k_gather_, v_gather_;
};

/// \brief A recursion-wise cache: each slot keeps only the tokens that ran its layer, in position
/// order (Mixture-of-Recursions: a token routed out after recursion r leaves no keys or values
/// at deeper recursions). Slot lengths differ, so reads carry the key positions and attention
/// masks by position; `Indexing` maps (group, recursion, layer) to a slot.
template <class Backend, class T, class Indexing>
class ragged_slot_cache : public slot_cache<Backend, T, Indexing> {
  using base = slot_cache<Backend, T, Indexing>;

 public:
  /// \brief Allocates every slot for `lim.max_tokens` rows, and their position lists.
  ragged_slot_cache(const Backend& be, const kv_layout& lay, const context_limits& lim)
      : base(be, lay, lim), be_(be), pos_(std::size_t(base::num_slots())), len_(std::size_t(base::num_slots()), 0) {
    pos_dev_ = be.template alloc<std::int32_t>(std::size_t(base::num_slots() * lim.max_tokens));
    if (lim.share_first_step) {  // where the discarded keys and values of steps >= 1 go
      k_scratch_ = be.template alloc<T>(std::size_t(lim.max_tokens * lay.kv_dim));
      v_scratch_ = be.template alloc<T>(std::size_t(lim.max_tokens * lay.kv_dim));
    }
  }
  /// \brief The slot (group, step, layer) writes: its own, or under recursive sharing a scratch
  /// slot for core steps ≥ 1 (their keys and values are computed and dropped).
  kv_slot<T> slot(layer_group group, std::int64_t step, std::int64_t layer) {
    if (discards(group, step)) return kv_slot<T>{k_scratch_.data(), v_scratch_.data()};
    return base::slot(group, step, layer);
  }
  /// \brief Appends the run's positions to the slot of (group, step, layer); returns the slot row
  /// its keys and values go to.
  std::int64_t write_row(layer_group group, std::int64_t step, std::int64_t layer, const row_run& run) {
    if (discards(group, step)) return run.pos0;
    const std::int64_t id = Indexing::slot_id(this->lay_, this->lim_, group, step, layer);
    auto& pos = pos_[std::size_t(id)];
    const std::int64_t row = len_[std::size_t(id)];
    MUNINN_CHECK(row + run.n <= this->lim_.max_tokens, "KV slot ", id, " is full (", this->lim_.max_tokens, " rows)");
    MUNINN_CHECK(row == 0 || pos.back() < run.pos0, "KV slot ", id, ": position ", run.pos0,
                 " written after position ", row ? pos.back() : -1);
    for (std::int64_t i = 0; i < run.n; ++i) pos.push_back(std::int32_t(run.pos0 + i));
    be_.upload(pos_dev_.data() + id * this->lim_.max_tokens + row, pos.data() + row, std::size_t(run.n));
    len_[std::size_t(id)] += run.n;
    return row;
  }
  /// \brief What a run attends to: the slot's rows up to its last token, with their positions.
  kv_read<T> read(layer_group group, std::int64_t step, std::int64_t layer, const row_run& run,
                  const std::vector<std::int32_t>&) {
    if (discards(group, step)) step = 0;  // recursive sharing: step 0's keys and values, all tokens
    const std::int64_t id = Indexing::slot_id(this->lay_, this->lim_, group, step, layer);
    const auto& pos = pos_[std::size_t(id)];
    const auto end = std::upper_bound(pos.begin(), pos.end(), std::int32_t(run.pos0 + run.n - 1));
    const kv_slot<T> s = base::slot(group, step, layer);
    return kv_read<T>{s.k, s.v, std::int64_t(end - pos.begin()), pos_dev_.data() + id * this->lim_.max_tokens};
  }
  /// \brief Whether (group, step) keeps no keys or values of its own: core steps ≥ 1 under
  /// recursive sharing, which read step 0's.
  bool discards(layer_group group, std::int64_t step) const {
    return this->lim_.share_first_step && group == layer_group::core && step > 0;
  }
  /// \brief Forgets every token from position `length` on.
  void truncate(std::int64_t length) {
    for (std::size_t id = 0; id < pos_.size(); ++id) {
      auto& pos = pos_[id];
      pos.erase(std::lower_bound(pos.begin(), pos.end(), std::int32_t(length)), pos.end());
      len_[id] = std::int64_t(pos.size());
    }
  }
  /// \brief Nothing to do: tokens that stop early simply leave no rows deeper.
  void on_exit(std::int64_t, std::int64_t, std::int64_t) {}
  /// \brief Tokens each slot holds now (its ragged length).
  const std::vector<std::int64_t>& slot_lengths() const { return len_; }
  /// \brief Bytes of keys and values the held tokens occupy (what a paged cache would need).
  std::size_t used_bytes() const {
    std::int64_t rows = 0;
    for (auto n : len_) rows += n;
    return std::size_t(2 * rows * this->lay_.kv_dim) * sizeof(T);
  }

 private:
  Backend be_;
  typename Backend::template buffer<T> k_scratch_, v_scratch_;  // recursive sharing: dropped keys and values
  std::vector<std::vector<std::int32_t>> pos_;  // per slot: positions of its rows, ascending
  std::vector<std::int64_t> len_;               // per slot: rows held
  typename Backend::template buffer<std::int32_t> pos_dev_;  // per slot: the positions on the backend
};

/// \brief No cache: each layer call attends only to the rows of its own call (a model that sees
/// the whole input at once, like the tiny recursive reasoners). One scratch slot holds the
/// current layer's keys and values; nothing survives a call, so there is nothing to decode from.
template <class Backend, class T>
class scratch_only_cache {
 public:
  /// \brief Allocates the scratch slot for `lim.max_tokens` rows.
  scratch_only_cache(const Backend& be, const kv_layout& lay, const context_limits& lim)
      : kv_dim_(lay.kv_dim),
        k_(be.template alloc_zeroed<T>(std::size_t(lim.max_tokens * lay.kv_dim))),
        v_(be.template alloc_zeroed<T>(std::size_t(lim.max_tokens * lay.kv_dim))) {}
  /// \brief The scratch slot, whatever the layer.
  kv_slot<T> slot(layer_group, std::int64_t, std::int64_t) { return kv_slot<T>{k_.data(), v_.data()}; }
  /// \brief A run attends to its own rows only.
  kv_read<T> read(layer_group, std::int64_t, std::int64_t, const row_run& run, const std::vector<std::int32_t>&) {
    return kv_read<T>{k_.data() + run.pos0 * kv_dim_, v_.data() + run.pos0 * kv_dim_, run.n};
  }
  /// \brief Nothing to do.
  void on_exit(std::int64_t, std::int64_t, std::int64_t) {}
  /// \brief No slot is kept per token.
  std::int64_t num_slots() const { return 0; }
  /// \brief Bytes of the scratch slot.
  std::size_t bytes() const { return (k_.size() + v_.size()) * sizeof(T); }
  /// \brief Nothing is kept per token.
  std::size_t bytes_per_token() const { return 0; }

 private:
  std::int64_t kv_dim_;
  typename Backend::template buffer<T> k_, v_;
};

}  // namespace engine
}  // namespace muninn
