#pragma once
/// \file
/// \brief The run-time sizes of a transformer layer and the scratch rows one layer call uses
/// (owned by a workspace).

#include <cstdint>

namespace muninn {

/// \brief Sizes a layer needs at run time, taken from the config once.
struct layer_dims {
  std::int64_t h = 0;           ///< hidden size
  std::int64_t n_heads = 0;     ///< query heads
  std::int64_t n_kv_heads = 0;  ///< key/value heads
  std::int64_t head_dim = 0;    ///< per-head width
  std::int64_t inter = 0;       ///< MLP inner width
  float eps = 1e-6f;            ///< RMSNorm epsilon
  /// \brief Width of all query heads.
  std::int64_t q_dim() const { return n_heads * head_dim; }
  /// \brief Width of all key (or value) heads.
  std::int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

/// \brief Scratch memory for a stack of rows through a layer (owned by a workspace).
template <class T>
struct layer_scratch {
  T* normed;   ///< [rows, h]
  T* q;        ///< [rows, H·D]
  T* attn;     ///< [rows, H·D]
  T* proj;     ///< [rows, h]
  T* mlp_in;   ///< [rows, 2I]
  T* mlp_act;  ///< [rows, I]
  T* k_tmp;    ///< [rows, Hkv·D]: new keys of a multi-run stack before they go to each cache
  T* v_tmp;    ///< [rows, Hkv·D]
  /// \brief [rows, (H + 2·Hkv)·D], or null. When set and a call has no cache (keys and values stay
  /// in scratch), attention projects q, k and v with one GEMM into it, as the fused weight is stored.
  T* qkv = nullptr;
};

}  // namespace muninn
