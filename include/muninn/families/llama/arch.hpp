#pragma once
/// \file
/// \brief `llama_arch`: a Hugging Face `LlamaForCausalLM` as a policy combination.

#include "muninn/families/llama/family.hpp"
#include "muninn/model/arch.hpp"

namespace muninn {

/// \brief Plain Llama: embedding (no scale) → L pre-norm layers with rotate-half RoPE and GQA →
/// RMSNorm → lm_head (tied or not, as config.json says). No recurrence, no injection, one KV slot
/// per layer. The substrate of Mixture-of-Recursions and CALM.
using llama_arch = arch<block::pre_norm, injection::none, state_init::zero, sharing::none, router::none,
                        kv_cache::per_layer, halting::fixed, head::softmax, input::embedding, rope::half,
                        recurrence::none, family::llama>;

}  // namespace muninn
