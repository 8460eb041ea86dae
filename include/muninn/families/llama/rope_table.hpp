#pragma once
/// \file
/// \brief The RoPE table of a Llama model: the config's `rope_scaling` handed to the shared
/// transformers-exact table builder (ops/rope_table.hpp).
///
/// Llama rotates element i of a head with element i + D/2 (rotate_half) rather than Huginn's
/// adjacent pairs, but the table is the same: entry i holds the angle of frequency i.

#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/llama/config.hpp"
#include "muninn/ops/rope_table.hpp"

namespace muninn {

/// \brief The rope_scaling that `cfg.rope_type` ("default", "linear", "llama3") and its
/// parameters describe.
/// \throws muninn::error naming the config file for any other rope_type
inline rope_scaling llama_rope_scaling(const llama_config& cfg) {
  rope_scaling s;
  s.factor = cfg.rope_factor;
  s.low_freq_factor = cfg.rope_low_freq_factor;
  s.high_freq_factor = cfg.rope_high_freq_factor;
  s.original_max_position_embeddings = cfg.rope_original_max_position;
  if (cfg.rope_type == "default") s.type = rope_scaling::kind::none;
  else if (cfg.rope_type == "linear") s.type = rope_scaling::kind::linear;
  else if (cfg.rope_type == "llama3") s.type = rope_scaling::kind::llama3;
  else fail(cfg.source, ": rope type \"", cfg.rope_type, "\" is not implemented; supported: default, linear, llama3");
  return s;
}

/// \brief The RoPE table [block_size][D/2][2] = {cos, sin} transformers' LlamaRotaryEmbedding
/// computes for `cfg` (fp32 inverse frequencies in torch's operation order; cos/sin from the C library).
inline std::vector<float> make_llama_rope_table(const llama_config& cfg) {
  return make_rope_table(cfg.head_dim, cfg.block_size, cfg.rope_base, llama_rope_scaling(cfg));
}

}  // namespace muninn
