#pragma once
/// \file
/// \brief What a KV cache hands to attention for one layer call: where each run writes its new
/// keys and values, and what each run reads.

#include <cstdint>
#include <functional>
#include <vector>

#include "muninn/engine/rows.hpp"
#include "muninn/ops/attention_mask.hpp"

namespace muninn {

/// \brief One cache slot's key and value rows: [capacity, Hkv·D] each, row p = position p.
template <class T>
struct kv_slot {
  T* k;  ///< keys
  T* v;  ///< values
};

/// \brief Keys and values one run's queries attend to: rows [0, nkv), the last `n` being the
/// run's own tokens (bottom-right causal mask).
template <class T>
struct kv_read {
  const T* k;        ///< keys
  const T* v;        ///< values
  std::int64_t nkv;  ///< rows
  /// \brief Backend memory: the position of each key row, for a cache whose rows are not the
  /// positions 0 … nkv−1 (a ragged cache keeps only some tokens); attention then masks by
  /// position. nullptr: the bottom-right causal mask over row order.
  const std::int32_t* k_pos = nullptr;
};

/// \brief Where each run of a layer call writes its keys/values and what it reads.
///
/// With no `write` slots the call has no cache: the new keys and values stay in the layer's
/// scratch rows and each run attends to its own rows only (under `mask`).
template <class T>
struct kv_views {
  std::vector<kv_slot<T>> write;  ///< per run: the slot its new K/V rows go to (rows pos0 … pos0+n−1); empty: no cache
  /// \brief Per run: the slot row its first new K/V row goes to, for caches that keep only some
  /// tokens (ragged rows); empty: the run's position (dense rows).
  std::vector<std::int64_t> write_row;
  /// \brief True when no run keeps keys or values of its own (recursive KV sharing: every run
  /// reads another layer call's): the K/V projections and their RoPE are skipped.
  bool no_new_kv = false;
  const std::int32_t* row_pos = nullptr;  ///< backend memory: each stacked row's position (for reads with k_pos)
  /// \brief Per run: the rows it attends to (its slot's rows [0, pos0 + n) when empty).
  std::function<kv_read<T>(std::size_t run, const engine::row_run&)> read;
  /// \brief `causal` (by row order, or by position for reads with k_pos) or `full` (every query of
  /// a run sees every key it reads: bidirectional blocks).
  attn_mask mask = attn_mask::causal;
};

}  // namespace muninn
