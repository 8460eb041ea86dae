#pragma once
/// \file
/// \brief Per-call options of a forward pass.

#include <cstdint>
#include <functional>
#include <vector>

#include "muninn/model/taps.hpp"
#include "muninn/policies/halting_options.hpp"
#include "muninn/policies/router.hpp"
#include "muninn/policies/state_init.hpp"

namespace muninn {

/// \brief Continuous chain-of-thought: start a token from the previous token's final state
/// instead of a fresh one.
enum class warm_start {
  none,        ///< every token starts from `init`
  raw,         ///< the previous token's final raw state (the reference's adaptive-compute generator)
  normalized,  ///< the previous token's final state after ln_f (the reference's minimal generator)
};

/// \brief Called after every recurrence step with a token's position in its sequence, the step
/// (0-based) and its raw state [h] (host memory).
using step_hook = std::function<void(std::int64_t token, std::int64_t step, const float* state)>;

/// \brief Mixes the prelude output of a call with earlier input embeddings of the same positions
/// (the parallel sampler's embedding EMA, which smooths the inputs of positions whose tokens
/// are still being revised): fed token i gets e_i ← (1−w)·e_i + w·previous_i when i < `rows`,
/// else e_i ← (1−w)·e_i, as the reference does.
struct input_blend {
  float weight = 0.0f;                   ///< w in [0, 1]; the blend is off while 0 and `mixed` is null
  const float* previous = nullptr;       ///< [rows, h] host memory: earlier embeddings of the first fed tokens
  std::int64_t rows = 0;                 ///< how many fed tokens have a previous embedding
  std::vector<float>* mixed = nullptr;   ///< receives the blended embeddings [n_tokens, h] when set
};

/// \brief Per-call options of a forward pass.
struct run_options {
  std::int64_t steps = -1;             ///< recurrence steps; -1 means config.mean_recurrence
  state_init_choice init;              ///< initial state: the Arch's StateInit policy unless a built-in one is named
  std::uint64_t seed = 0;              ///< seed of the random state (drawn per position: chunking does not change it)
  const float* given_state = nullptr;  ///< [n_tokens, h] host memory, used with state_init::given
  warm_start warm = warm_start::none;  ///< start each token from the previous token's final state
  halting_options halt;                ///< per-token early exit (needs a HaltingPolicy with early_exit)
  std::vector<float>* latents = nullptr;         ///< receives the raw final state [n_tokens, h] when set
  std::vector<std::int32_t>* steps_used = nullptr;  ///< receives the steps each token ran when set
  step_hook on_step;                   ///< latent trajectory hook (downloads states each step: slow, for analysis)
  input_blend blend;                   ///< mixes the prelude output with earlier embeddings (parallel sampler)
  routing_mode routing = routing_mode::causal;  ///< how routers pick tokens (routed models only)
  std::vector<std::int32_t>* depths = nullptr;  ///< routed models: receives the recursions each token ran when set
  /// \brief Backend memory [n_tokens, h] of the model's value type that replaces the embedding
  /// lookup (transformers' `inputs_embeds`): CALM feeds its compressed chunks this way. The ids
  /// given with it then only count positions. Single-sequence calls only.
  const void* input_rows = nullptr;
  /// \brief Named observation points (model/taps.hpp): a callback and the taps it wants. Unset,
  /// a tap point costs one test.
  tap_options taps;
};

/// \brief Which positions get logits.
enum class logits_for {
  all,   ///< every fed token: [n, V]
  last,  ///< only the last fed token: [1, V]
};

}  // namespace muninn
