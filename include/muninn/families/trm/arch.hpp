#pragma once
/// \file
/// \brief TRM / HRM as slots: `family::trm` (how a run is read: all_config.yaml and a step_N file)
/// and the architectures `trm_attention_arch` (attention; HRM too) and `trm_mlp_arch` (the token-mixing
/// `mlp_t` variant).
///
/// | slot | TRM / HRM |
/// |---|---|
/// | block | `block::post_norm` (weightless RMSNorm) or `block::post_norm_token_mlp` |
/// | injection | `injection::add`: a net adds its injection to the state before its layers |
/// | state init | `state_init::given`: H_init / L_init broadcast over the positions |
/// | sharing | `sharing::recurrent_core`: the core is the L net; HRM's H net is the coda |
/// | kv cache | `kv_cache::none`: bidirectional attention over each sample's own rows |
/// | halting | `halting::q_halt`: the Q head's decision on the backend |
/// | head | `head::lm_q_halt`: logits without a final norm, and the Q head |
/// | input | `input::scaled_embedding`: (puzzle prefix, token embedding)·√D |
/// | rope | `rope::half` over all S positions, prefix included |
/// | recurrence | `recurrence::two_stream`: one supervision step, z_H and z_L carried |

#include <string>
#include <type_traits>

#include "muninn/core/error.hpp"
#include "muninn/families/trm/checkpoint.hpp"
#include "muninn/families/trm/weights.hpp"
#include "muninn/io/json.hpp"
#include "muninn/model/arch.hpp"
#include "muninn/policies/block.hpp"
#include "muninn/policies/head.hpp"
#include "muninn/policies/injection.hpp"
#include "muninn/policies/kv_cache.hpp"
#include "muninn/policies/q_halt.hpp"
#include "muninn/policies/state_init.hpp"

namespace muninn {
namespace family {

/// \brief TRM and HRM runs as the reference's training script leaves them: implements the
/// FamilyPolicy concept (policies/family.hpp).
struct trm {
  using slot = muninn::slot::family;          ///< fills the Family slot
  static constexpr const char* name = "trm";  ///< spelling in messages and `muninn info`
  using config_type = trm_config;             ///< the arch settings, the dataset sizes, the stack's sizes
  /// \brief The layer stack (L net as the core, HRM's H net as the coda), the Q head, the initial states.
  template <class Backend, class T>
  using weights_type = trm_weights<Backend, T>;
  /// \brief The settings of the run at `dir` (a folder: its newest step_N; or a step file).
  static trm_config read_config(const std::string& dir) { return io::open_trm(dir).config; }
  /// \brief The run's checkpoint, every name and shape validated, the key prefix stripped.
  static io::checkpoint open_checkpoint(const std::string& dir, const trm_config&) { return io::open_trm(dir).weights; }
  /// \brief Loads the parameters (load_trm_weights).
  template <class Backend, class T, class Block>
  static trm_weights<Backend, T> load_weights(const Backend& be, const io::checkpoint& ck, const trm_config& cfg) {
    return load_trm_weights<Backend, T>(be, ck, cfg);
  }
  /// \brief Never: a TRM / HRM run has no config.json of its own (front ends recognise its
  /// all_config.yaml).
  static bool recognizes(const io::json&) { return false; }
  /// \brief The run's mixer (mlp_t or attention) must be the one the Arch's block compiled in.
  template <class Arch>
  static void check(const trm_config& c) {
    constexpr bool token_mlp = std::is_same_v<typename Arch::block_policy, block::post_norm_token_mlp>;
    MUNINN_CHECK(c.mlp_t == token_mlp, c.source, ": the run ", c.mlp_t ? "mixes tokens with an MLP (mlp_t)" : "uses attention",
                 " but the model was compiled with block::", Arch::block_policy::name, " (use ",
                 c.mlp_t ? "trm_mlp_arch" : "trm_attention_arch", ")");
  }
};

}  // namespace family

/// \brief TRM (attention variant) and HRM: the slots of the table in this file's description.
using trm_attention_arch =
    arch<block::post_norm, injection::add, state_init::given, sharing::recurrent_core, router::none, kv_cache::none,
         halting::q_halt, head::lm_q_halt, input::scaled_embedding, rope::half, recurrence::two_stream, family::trm>;

/// \brief TRM's `mlp_t` variant: the token-mixing MLP instead of attention.
using trm_mlp_arch = trm_attention_arch::with<block::post_norm_token_mlp>;

}  // namespace muninn
