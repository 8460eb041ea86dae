#pragma once
/// \file
/// \brief Inference contexts: the KV cache object and bookkeeping of one sequence, allocated up
/// front so that prefill and decode never allocate on the backend.

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "muninn/engine/kv_cache.hpp"
#include "muninn/engine/workspace.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {

template <class Model>
class forward_pass;

namespace detail {
template <class S>
using truncate_t = decltype(std::declval<S&>().truncate(std::int64_t()));
/// \brief Whether a KV storage must be told when tokens are forgotten (ragged caches).
template <class S>
inline constexpr bool has_truncate = detected_v<S, truncate_t>;
}  // namespace detail

/// \brief KV cache and bookkeeping for one sequence on a backend.
///
/// \tparam Kv the model's KvCachePolicy; the context owns a `Kv::storage<Backend, T>`.
/// Made by `model::make_context`. Holds `length()` tokens already processed; each forward call
/// appends. One context belongs to one sequence and one thread at a time.
template <class Backend, class T, class Kv>
class inference_context {
 public:
  using storage_type = typename Kv::template storage<Backend, T>;  ///< the KV cache object

  /// \brief Allocates the cache for `lim` (max_steps already resolved) and a workspace of
  /// `lim.max_chunk` rows.
  /// `tokens_per_position`: ids per position (K of a chunk input; 1 for token embeddings).
  inference_context(const Backend& be, const layer_dims& d, const kv_layout& lay, std::int64_t vocab,
                    context_limits lim, std::int64_t tokens_per_position = 1)
      : limits_(lim), tokens_per_position_(tokens_per_position), kv_(be, lay, lim), ws_(be, d, vocab, lim.max_chunk) {
    last_state_ = be.template alloc_zeroed<T>(std::size_t(d.h));
    tokens_.reserve(std::size_t(lim.max_tokens * tokens_per_position));
    steps_used_.reserve(std::size_t(lim.max_tokens));
  }

  /// \brief Positions already in the cache (tokens, or chunks of K tokens under a chunk input).
  std::int64_t length() const { return length_; }
  /// \brief The limits the context was made with.
  const context_limits& limits() const { return limits_; }
  /// \brief Ids of every token fed so far (the history samplers need): length() · K of them.
  const std::vector<std::int32_t>& tokens() const { return tokens_; }
  /// \brief Recurrence steps each cached token ran (its exit step under adaptive halting).
  const std::vector<std::int32_t>& steps_used() const { return steps_used_; }
  /// \brief Number of KV slots per token.
  std::int64_t num_slots() const { return kv_.num_slots(); }
  /// \brief Bytes held by the KV cache.
  std::size_t kv_bytes() const { return kv_.bytes(); }
  /// \brief Bytes of KV cache one token occupies (all slots, keys and values).
  std::size_t kv_bytes_per_token() const { return kv_.bytes_per_token(); }
  /// \brief Forgets every token from `new_length` on (used by speculative decoding); no reallocation.
  void truncate(std::int64_t new_length) {
    MUNINN_CHECK(new_length >= 0 && new_length <= length_, "truncate: length ", new_length, " outside [0, ", length_,
                 "]");
    length_ = new_length;
    if constexpr (detail::has_truncate<storage_type>) kv_.truncate(new_length);  // ragged caches drop rows
    tokens_.resize(std::size_t(new_length * tokens_per_position_));
    steps_used_.resize(std::size_t(new_length));
    if (new_length == 0) has_last_state_ = false;
  }
  /// \brief Empties the context for a new sequence (no reallocation).
  void reset() { truncate(0); }

  /// \brief The KV cache object, for schedulers that drive layers themselves (depth-wise batching).
  storage_type& kv_storage() { return kv_; }
  /// \brief Records token `id`, whose keys and values a scheduler has written at position
  /// length(), as cached, with the steps (recursions) it ran.
  void commit_token(std::int32_t id, std::int32_t steps) {
    MUNINN_CHECK(length_ < limits_.max_tokens, "context: no room for another token (", limits_.max_tokens, ")");
    ++length_;
    tokens_.push_back(id);
    steps_used_.push_back(steps);
  }

 private:
  template <class Model>
  friend class forward_pass;
  template <class, class, class>
  friend class model;

  context_limits limits_;
  std::int64_t tokens_per_position_ = 1;
  std::int64_t length_ = 0;
  storage_type kv_;
  typename Backend::template buffer<T> last_state_;  // raw final state of the last token: the warm start of the next
  bool has_last_state_ = false;
  workspace<Backend, T> ws_;
  std::vector<std::int32_t> tokens_, steps_used_;
};

}  // namespace muninn
