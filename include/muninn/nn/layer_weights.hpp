#pragma once
/// \file
/// \brief One transformer layer's parameters on a backend, in checkpoint layout: what the
/// layer verbs of nn/layer.hpp read.

namespace muninn {

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
};

}  // namespace muninn
