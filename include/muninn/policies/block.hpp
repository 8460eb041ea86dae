#pragma once
/// \file
/// \brief BlockPolicy (the "block" slot): how a layer composes norms, attention, MLP and residuals.
///
/// Concept BlockPolicy: `slot` = slot::block, `name`, `num_norms` (RMSNorm weights per layer), and
/// `template <class Layer> static void forward(Layer& l)` written with the sublayer verbs of
/// `nn::layer_pass`: `l.norm(i)` → normed input, `l.attention(in)`, `l.mlp(in)` → projection,
/// `l.add_norm(i)` (x = norm_i(proj + x)), `l.add_residual()` (x += proj).

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

}  // namespace block
}  // namespace muninn
