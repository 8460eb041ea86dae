#pragma once
/// \file
/// \brief An inference context: the KV cache and the workspace of one sequence, allocated up front.

#include <cstdint>
#include <vector>

#include "muninn/model/blocks.hpp"

namespace muninn {

/// \brief What a context is sized for. Everything is allocated when the context is made, so that
/// prefill and decode never allocate.
struct context_limits {
  std::int64_t max_tokens = 0;  ///< cache capacity in tokens (≤ the model's block_size)
  std::int64_t max_steps = 0;   ///< deepest recurrence a call may ask for
  std::int64_t max_chunk = 256; ///< tokens processed together; longer inputs are fed in chunks
};

/// \brief KV cache + workspace for one sequence on a backend.
///
/// Made by `model::make_context`. Holds `length()` tokens already processed; each forward call
/// appends. Not shareable between threads while a call runs.
template <class Backend, class T>
class inference_context {
 public:
  using buffer = typename Backend::template buffer<T>;

  /// \brief Tokens already in the cache.
  std::int64_t length() const { return length_; }
  /// \brief The limits the context was made with.
  const context_limits& limits() const { return limits_; }
  /// \brief Ids of every token fed so far (the history samplers may need).
  const std::vector<std::int32_t>& tokens() const { return tokens_; }
  /// \brief Bytes held by the KV cache.
  std::size_t kv_bytes() const { return (k_.size() + v_.size()) * sizeof(T); }
  /// \brief Bytes of KV cache one token occupies.
  std::size_t kv_bytes_per_token() const { return std::size_t(2 * n_slots_ * kv_dim_) * sizeof(T); }
  /// \brief Forgets the last `k` tokens (their cache rows are simply overwritten later).
  void truncate(std::int64_t new_length) {
    MUNINN_CHECK(new_length >= 0 && new_length <= length_, "truncate: length ", new_length, " outside [0, ", length_, "]");
    length_ = new_length;
    tokens_.resize(std::size_t(new_length));
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

  inference_context(const Backend& be, const layer_dims& d, std::int64_t n_slots, std::int64_t vocab,
                    std::int64_t inj_width, context_limits lim)
      : limits_(lim), n_slots_(n_slots), kv_dim_(d.kv_dim()) {
    const std::int64_t c = lim.max_chunk;
    k_ = be.template alloc_zeroed<T>(std::size_t(n_slots * lim.max_tokens * kv_dim_));
    v_ = be.template alloc_zeroed<T>(std::size_t(n_slots * lim.max_tokens * kv_dim_));
    e_ = be.template alloc<T>(std::size_t(c * d.h));
    x_ = be.template alloc<T>(std::size_t(c * d.h));
    inj_ = be.template alloc<T>(std::size_t(c * inj_width));
    normed_ = be.template alloc<T>(std::size_t(c * d.h));
    q_ = be.template alloc<T>(std::size_t(c * d.q_dim()));
    attn_ = be.template alloc<T>(std::size_t(c * d.q_dim()));
    proj_ = be.template alloc<T>(std::size_t(c * d.h));
    mlp_in_ = be.template alloc<T>(std::size_t(c * 2 * d.inter));
    mlp_act_ = be.template alloc<T>(std::size_t(c * d.inter));
    logits_ = be.template alloc<T>(std::size_t(c * vocab));
    ids_ = be.template alloc<std::int32_t>(std::size_t(c));
    tokens_.reserve(std::size_t(lim.max_tokens));
  }
  layer_scratch<T> scratch() {
    return layer_scratch<T>{normed_.data(), q_.data(), attn_.data(), proj_.data(), mlp_in_.data(), mlp_act_.data()};
  }

  context_limits limits_;
  std::int64_t n_slots_ = 0, kv_dim_ = 0, length_ = 0;
  buffer k_, v_;
  buffer e_, x_, inj_, normed_, q_, attn_, proj_, mlp_in_, mlp_act_, logits_;
  typename Backend::template buffer<std::int32_t> ids_;
  std::vector<std::int32_t> tokens_;
};

}  // namespace muninn
