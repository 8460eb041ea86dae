#pragma once
/// \file
/// \brief Mixture-of-Recursions architectures: a Llama whose middle layers are one shared block
/// run up to Nr times, with expert-choice or token-choice routing and recursion-wise KV caching.

#include "muninn/families/mor/family.hpp"
#include "muninn/model/arch.hpp"
#include "muninn/families/mor/router.hpp"

namespace muninn {

/// \brief MoR with expert-choice routers (the paper's main model): first layer → Nr recursions of
/// the shared block, each over the tokens its router keeps → last layer → RMSNorm → head.
using mor_expert_arch = arch<block::pre_norm, injection::none, state_init::zero, sharing::recurrent_core,
                             router::expert_choice, kv_cache::recursion_wise, halting::fixed, head::softmax,
                             input::embedding, rope::half, recurrence::mixture, family::mor>;

/// \brief MoR with a token-choice router: each token's depth is chosen once, after the first layer.
using mor_token_arch = mor_expert_arch::with<router::token_choice>;

}  // namespace muninn
