#pragma once
/// \file
/// \brief Workspaces (activations for a stack of rows) and inference contexts (the KV cache of one
/// sequence), both allocated up front so that prefill and decode never allocate on the backend.

#include <cstdint>
#include <vector>

#include "muninn/model/blocks.hpp"

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
};

/// \brief Activation memory for a stack of up to `rows()` token rows on a backend.
template <class Backend, class T>
class workspace {
 public:
  using buffer = typename Backend::template buffer<T>;  ///< backend buffer type

  /// \brief Allocates everything for `rows` stacked tokens.
  workspace(const Backend& be, const layer_dims& d, std::int64_t vocab, std::int64_t rows) : rows_(rows) {
    const auto R = std::size_t(rows);
    e_ = be.template alloc<T>(R * d.h);
    x_ = be.template alloc<T>(R * d.h);
    alt_ = be.template alloc<T>(R * d.h);
    e_part_ = be.template alloc<T>(R * d.h);
    head_ = be.template alloc<T>(R * d.h);
    normed_ = be.template alloc<T>(R * d.h);
    q_ = be.template alloc<T>(R * d.q_dim());
    attn_ = be.template alloc<T>(R * d.q_dim());
    proj_ = be.template alloc<T>(R * d.h);
    mlp_in_ = be.template alloc<T>(R * 2 * d.inter);
    mlp_act_ = be.template alloc<T>(R * d.inter);
    k_tmp_ = be.template alloc<T>(R * d.kv_dim());
    v_tmp_ = be.template alloc<T>(R * d.kv_dim());
    logits_ = be.template alloc<T>(R * vocab);
    ids_ = be.template alloc<std::int32_t>(R);
    host_ids_.resize(R);
    host_rows_.resize(R * d.h);
  }
  /// \brief Capacity in stacked rows.
  std::int64_t rows() const { return rows_; }

 private:
  template <class, class, class>
  friend class model;
  layer_scratch<T> scratch() {
    return layer_scratch<T>{normed_.data(), q_.data(),      attn_.data(),  proj_.data(),
                            mlp_in_.data(), mlp_act_.data(), k_tmp_.data(), v_tmp_.data()};
  }
  std::int64_t rows_;
  buffer e_, x_, alt_, e_part_, head_, normed_, q_, attn_, proj_, mlp_in_, mlp_act_, k_tmp_, v_tmp_, logits_;
  typename Backend::template buffer<std::int32_t> ids_;
  std::vector<std::int32_t> host_ids_;
  std::vector<float> host_rows_;  // states downloaded for exit tests and trajectory hooks
};

/// \brief KV cache and bookkeeping for one sequence on a backend.
///
/// Made by `model::make_context`. Holds `length()` tokens already processed; each forward call
/// appends. One context belongs to one sequence and one thread at a time.
template <class Backend, class T>
class inference_context {
 public:
  using buffer = typename Backend::template buffer<T>;  ///< backend buffer type

  /// \brief Tokens already in the cache.
  std::int64_t length() const { return length_; }
  /// \brief The limits the context was made with.
  const context_limits& limits() const { return limits_; }
  /// \brief Ids of every token fed so far (the history samplers need).
  const std::vector<std::int32_t>& tokens() const { return tokens_; }
  /// \brief Recurrence steps each cached token ran (its exit step under adaptive halting).
  const std::vector<std::int32_t>& steps_used() const { return steps_used_; }
  /// \brief Number of KV slots per token.
  std::int64_t num_slots() const { return n_slots_; }
  /// \brief Bytes held by the KV cache.
  std::size_t kv_bytes() const { return (k_.size() + v_.size()) * sizeof(T); }
  /// \brief Bytes of KV cache one token occupies (all slots, keys and values).
  std::size_t kv_bytes_per_token() const { return std::size_t(2 * n_slots_ * kv_dim_) * sizeof(T); }
  /// \brief Forgets every token from `new_length` on (used by speculative decoding); no reallocation.
  void truncate(std::int64_t new_length) {
    MUNINN_CHECK(new_length >= 0 && new_length <= length_, "truncate: length ", new_length, " outside [0, ", length_,
                 "]");
    length_ = new_length;
    tokens_.resize(std::size_t(new_length));
    steps_used_.resize(std::size_t(new_length));
    if (new_length == 0) has_last_state_ = false;
  }
  /// \brief Empties the context for a new sequence (no reallocation).
  void reset() { truncate(0); }
  /// \brief Slot `s`'s key/value rows.
  kv_slot<T> slot(std::int64_t s) {
    return kv_slot<T>{k_.data() + s * limits_.max_tokens * kv_dim_, v_.data() + s * limits_.max_tokens * kv_dim_};
  }

 private:
  template <class, class, class>
  friend class model;

  inference_context(const Backend& be, const layer_dims& d, std::int64_t n_slots, std::int64_t vocab, context_limits lim)
      : limits_(lim), n_slots_(n_slots), kv_dim_(d.kv_dim()), ws_(be, d, vocab, lim.max_chunk) {
    const auto cache = std::size_t(n_slots * lim.max_tokens * kv_dim_);
    k_ = be.template alloc_zeroed<T>(cache);
    v_ = be.template alloc_zeroed<T>(cache);
    last_state_ = be.template alloc_zeroed<T>(std::size_t(d.h));
    if (lim.fallback == kv_fallback::none) {
      k_gather_ = be.template alloc<T>(std::size_t(lim.max_tokens * kv_dim_));
      v_gather_ = be.template alloc<T>(std::size_t(lim.max_tokens * kv_dim_));
    }
    tokens_.reserve(std::size_t(lim.max_tokens));
    steps_used_.reserve(std::size_t(lim.max_tokens));
  }

  context_limits limits_;
  std::int64_t n_slots_ = 0, kv_dim_ = 0, length_ = 0;
  buffer k_, v_;
  buffer last_state_;          // raw final state of the last token: the warm start of the next one
  bool has_last_state_ = false;
  buffer k_gather_, v_gather_;  // kv_fallback::none: the present rows of a slot, compacted
  workspace<Backend, T> ws_;
  std::vector<std::int32_t> tokens_, steps_used_;
};

}  // namespace muninn
