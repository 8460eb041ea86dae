#pragma once
// The SmolLM-135M shape shared by the Llama and Mixture-of-Recursions benchmarks: hidden 576,
// 9 heads / 3 KV heads, head_dim 64, MLP 1536, vocab 49152, tied embeddings, RMSNorm eps 1e-5,
// RoPE theta 1e4. `layers` go to the prelude group (a plain stack); a caller may regroup them.
#include <cstdint>

#include "muninn/families/llama/config.hpp"

// Config: llama_config, or a config built on it (mor_config).
template <class Config = muninn::llama_config>
Config smollm_135m_shape(std::int64_t layers, const char* source) {
  Config c;
  c.model_type = "llama";
  c.n_embd = 576;
  c.n_heads = 9;
  c.n_kv_heads = 3;
  c.head_dim = 64;
  c.intermediate_size = 1536;
  c.vocab_size = 49152;
  c.n_layers_in_prelude = layers;
  c.n_layers_in_recurrent_block = 0;
  c.n_layers_in_coda = 0;
  c.block_size = 2048;
  c.norm_eps = 1e-5f;
  c.rope_base = 10000.0f;
  c.qk_bias = false;
  c.tie_embeddings = true;
  c.source = source;
  return c;
}
