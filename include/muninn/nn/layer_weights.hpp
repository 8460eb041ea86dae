#pragma once
/// \file
/// \brief One transformer layer's parameters on a backend, in checkpoint layout: what the
/// layer verbs of nn/layer.hpp read.

#include <memory>

#include "muninn/ops/weight.hpp"

namespace muninn {

/// \brief A layer's matrices converted to a bf16 or q8 weight_format on the host.
///
/// A null entry means the layer's fp32 buffer is used; a set entry replaced it (the buffer is then
/// empty). Shared pointers, because Mixture-of-Recursions layers may share a stored copy.
struct converted_layer {
  std::shared_ptr<const host_weight> wqkv;       ///< replaces layer_weights::wqkv
  std::shared_ptr<const host_weight> attn_proj;  ///< replaces layer_weights::attn_proj
  std::shared_ptr<const host_weight> fc;         ///< replaces layer_weights::fc
  std::shared_ptr<const host_weight> mlp_proj;   ///< replaces layer_weights::mlp_proj
};

/// \brief One transformer layer's parameters, in backend memory, in checkpoint layout.
template <class Backend, class T>
struct layer_weights {
  using buffer = typename Backend::template buffer<T>;  ///< owning storage on the backend
  buffer norm[4];   ///< norm_1..norm_4 (pre_norm blocks use the first two)
  buffer wqkv;      ///< [(H + 2·Hkv)·D, h], rows q; k; v
  buffer qk_bias;   ///< q bias [H·D] then k bias [Hkv·D], added before RoPE (empty when the config has no qk_bias)
  buffer attn_proj; ///< [h, H·D]
  buffer fc;        ///< [2·I, h], rows gate; up
  buffer mlp_proj;  ///< [h, I]
  buffer v_bias;    ///< [Hkv·D] value bias (Llama `attention_bias`; empty otherwise)
  buffer o_bias;    ///< [h] output-projection bias (Llama `attention_bias`; empty otherwise)
  buffer fc_bias;   ///< [2·I] gate; up biases (Llama `mlp_bias`; empty otherwise)
  buffer mlp_proj_bias;  ///< [h] down-projection bias (Llama `mlp_bias`; empty otherwise)
  buffer token_fc;       ///< [2·I_S, S] token-mixing MLP gate; up over the S positions (TRM `mlp_t`; empty otherwise)
  buffer token_proj;     ///< [S, I_S] token-mixing MLP down projection (TRM `mlp_t`; empty otherwise)
  /// \brief Host only: the matrices stored in a bf16 or q8 format (all null on other backends and
  /// for fp32 weights).
  converted_layer converted;
};

}  // namespace muninn
