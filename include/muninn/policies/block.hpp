#pragma once
/// \file
/// \brief BlockPolicy (the "block" slot): how a layer composes norms, attention, MLP and residuals.
///
/// Concept BlockPolicy: `slot` = slot::block, `name`, `num_norms` (RMSNorm weights per layer), and
/// `template <class Layer> static void forward(Layer& l)` written with the sublayer verbs of
/// `nn::layer_pass`: `l.norm(i)` → normed input, `l.attention(in)`, `l.mlp(in)` → projection,
/// `l.add_norm(i)` (x = norm_i(proj + x)), `l.add_residual()` (x += proj), `l.input()` (x itself,
/// for post-norm blocks), `l.token_mlp()` (the token-mixing MLP with its own post-norm, in place),
/// `l.holds_norm(i)` (whether the layer stores a weight for norm i).

#include <string>
#include <type_traits>

#include "muninn/policies/detect.hpp"

namespace muninn {
namespace block {

/// \brief Huginn's block: `x = n2(attn(n1(x)) + x); x = n4(mlp(n3(x)) + x)` — four RMSNorms.
struct sandwich {
  using slot = muninn::slot::block;                ///< fills the Block slot
  static constexpr int num_norms = 4;              ///< RMSNorm weights per layer
  static constexpr const char* name = "sandwich";  ///< spelling used in messages and config checks
  /// \brief One layer on the stack bound to `l`.
  template <class Layer>
  static void forward(Layer& l) {
    l.attention(l.norm(0));
    l.add_norm(1);
    l.mlp(l.norm(2));
    l.add_norm(3);
  }
};

/// \brief Llama-style pre-norm block: `x += attn(n1(x)); x += mlp(n2(x))` — two RMSNorms.
struct pre_norm {
  using slot = muninn::slot::block;                ///< fills the Block slot
  static constexpr int num_norms = 2;              ///< RMSNorm weights per layer
  static constexpr const char* name = "pre_norm";  ///< spelling used in messages and config checks
  /// \brief One layer on the stack bound to `l`.
  template <class Layer>
  static void forward(Layer& l) {
    l.attention(l.norm(0));
    l.add_residual();
    l.mlp(l.norm(1));
    l.add_residual();
  }
};

/// \brief Post-norm block: `x = n1(x + attn(x)); x = n2(x + mlp(x))`. A layer that stores no
/// norm weights normalises without them (TRM / HRM's weightless RMSNorm); the attention is whatever
/// the call's KV views say (TRM / HRM: bidirectional, no cache).
struct post_norm {
  using slot = muninn::slot::block;                 ///< fills the Block slot
  static constexpr int num_norms = 2;               ///< RMSNorms per layer (weightless when not stored)
  static constexpr const char* name = "post_norm";  ///< spelling used in messages and config checks
  /// \brief One layer on the stack bound to `l`.
  template <class Layer>
  static void forward(Layer& l) {
    l.attention(l.input());
    l.add_norm(0);
    l.mlp(l.input());
    l.add_norm(1);
  }
};

/// \brief Post-norm block whose sequence mixer is the token-mixing MLP instead of attention (TRM's
/// `mlp_t`): `x = mix_S(x)` (an MLP across the positions with its own post-norm over them), then
/// `x = n2(x + mlp(x))`.
struct post_norm_token_mlp {
  using slot = muninn::slot::block;                           ///< fills the Block slot
  static constexpr int num_norms = 2;                         ///< RMSNorms per layer (weightless when not stored)
  static constexpr const char* name = "post_norm_token_mlp";  ///< spelling used in messages and config checks
  /// \brief One layer on the stack bound to `l`.
  template <class Layer>
  static void forward(Layer& l) {
    l.token_mlp();
    l.mlp(l.input());
    l.add_norm(1);
  }
};

/// \brief Huginn's `sandwich` or `pre_norm`, chosen at run time by the layer: a layer that holds a
/// fourth RMSNorm weight runs `sandwich`, one that holds two runs `pre_norm`.
///
/// A checkpoint's config names its block (Huginn's `block_type`), and the loader reads as many
/// norms per layer as the named block has (`layer_norms`). One model type then runs checkpoints
/// of both kinds: the CLI, the server and Python compile one Huginn model instead of one per
/// block, for a branch per layer. The compile-time policies stay the choice where the block is
/// known when the program is built.
struct from_config {
  using slot = muninn::slot::block;                   ///< fills the Block slot
  static constexpr int num_norms = 4;                 ///< the most a layer holds (sandwich's four)
  static constexpr const char* name = "from_config";  ///< spelling used in messages and config checks
  /// \brief One layer on the stack bound to `l`, as the block its weights belong to.
  template <class Layer>
  static void forward(Layer& l) {
    if (l.holds_norm(3))
      sandwich::forward(l);
    else
      pre_norm::forward(l);
  }
};

/// \brief RMSNorm weights per layer a model with BlockPolicy `Block` reads from a checkpoint whose
/// config names the block `block_type`: `Block::num_norms`, except for `from_config`, which reads
/// those of the named block ("sandwich" 4, else 2).
template <class Block>
int layer_norms(const std::string& block_type) {
  if constexpr (std::is_same_v<Block, from_config>)
    return block_type == sandwich::name ? sandwich::num_norms : pre_norm::num_norms;
  else
    return Block::num_norms;
}

}  // namespace block
}  // namespace muninn
