#pragma once
/// \file
/// \brief Tensor names of Mixture-of-Recursions checkpoints as the reference's HF Trainer writes
/// them (`MoRLlamaForCausalLM`): every recursion's copy of the shared block is stored.

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/families/llama/names.hpp"
#include "muninn/families/mor/config.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/io/tensor_specs.hpp"

namespace muninn::io {

/// \brief Where each part of a MoR model lives in the checkpoint.
struct mor_names {
  std::string first;   ///< the unshared first layer (middle_cycle), e.g. "model.layers.0"; empty otherwise
  std::string last;    ///< the unshared last layer (middle_cycle); empty otherwise
  /// \brief Layer l of the shared block at recursion r.
  std::string block(std::int64_t r, std::int64_t l) const {
    return type == "expert" ? "model.layers." + std::to_string(o + r) + ".block." + std::to_string(l)
                            : "model.layers." + std::to_string(o) + ".block_list." + std::to_string(r) + "." +
                                  std::to_string(l);
  }
  /// \brief The router of recursion r (expert choice) or the one router (token choice), with a dot.
  std::string router(std::int64_t r) const {
    return "model.layers." + std::to_string(type == "expert" ? o + r : o) + ".mor_router.router.";
  }
  /// \brief Token choice's loss-free balancing bias.
  std::string router_bias() const { return "model.layers." + std::to_string(o) + ".router_bias"; }

  std::string type;      ///< "expert" or "token"
  std::int64_t o = 0;    ///< 1 when a first layer precedes the routed layers

  /// \brief The names for `cfg` (whose mor settings and layer groups are filled in).
  explicit mor_names(const mor_config& cfg) : type(cfg.mor.type), o(cfg.n_layers_in_prelude) {
    if (cfg.n_layers_in_prelude) first = "model.layers.0";
    if (cfg.n_layers_in_coda)
      last = "model.layers." + std::to_string(type == "expert" ? o + cfg.mor.recursions : o + 1);
  }
};

namespace detail {

inline void add_mor_layer(std::vector<tensor_spec>& specs, const mor_config& c, const std::string& p,
                          const llama_reasons& why) {
  const std::int64_t h = c.n_embd;
  specs.push_back({p + ".input_layernorm.weight", {h}, false, -1, why.h});
  add_llama_attention(specs, c, p, why);
  specs.push_back({p + ".post_attention_layernorm.weight", {h}, false, -1, why.h});
  add_llama_mlp(specs, c, p, why);
}

}  // namespace detail

/// \brief Every tensor a MoR checkpoint holds for `cfg`: embedding, the first and last layers
/// (middle_cycle), each recursion's copy of the B block layers, the routers (linear:
/// `router.weight` [out, h]; MLP: `router.0.weight` [2h, h] and `router.2.weight` [out, 2h], out =
/// 1 per expert-choice recursion, Nr for the token-choice router), the token router's bias
/// (balancing loss_free), the final norm and the head.
inline std::vector<tensor_spec> mor_tensor_specs(const mor_config& cfg) {
  const detail::llama_reasons why(cfg);
  const mor_names n(cfg);
  const std::int64_t h = cfg.n_embd, V = cfg.vocab_size, Nr = cfg.mor.recursions;
  std::vector<tensor_spec> specs;
  specs.push_back({"model.embed_tokens.weight", {V, h}, false, -1, why.vh});
  if (!n.first.empty()) detail::add_mor_layer(specs, cfg, n.first, why);
  for (std::int64_t r = 0; r < Nr; ++r)
    for (std::int64_t l = 0; l < cfg.n_layers_in_recurrent_block; ++l) detail::add_mor_layer(specs, cfg, n.block(r, l), why);
  const bool expert = cfg.mor.type == "expert";
  const std::int64_t out = expert ? 1 : Nr;
  const std::string r_why = "hidden_size=" + std::to_string(h) + ", mor.num_recursion=" + std::to_string(Nr);
  for (std::int64_t r = 0; r < (expert ? Nr : 1); ++r) {
    if (cfg.mor.router_type == "linear") {
      specs.push_back({n.router(r) + "weight", {out, h}, false, -1, r_why});
    } else {
      specs.push_back({n.router(r) + "0.weight", {2 * h, h}, false, -1, r_why});
      specs.push_back({n.router(r) + "2.weight", {out, 2 * h}, false, -1, r_why});
    }
  }
  if (!expert && cfg.mor.router_bias) specs.push_back({n.router_bias(), {Nr}, false, -1, r_why});
  if (!n.last.empty()) detail::add_mor_layer(specs, cfg, n.last, why);
  specs.push_back({"model.norm.weight", {h}, false, -1, why.h});
  specs.push_back({"lm_head.weight", {V, h}, cfg.tie_embeddings, -1, why.vh});
  return specs;
}

/// \brief Opens a MoR checkpoint and checks it holds exactly mor_tensor_specs(cfg).
inline checkpoint open_mor_checkpoint(const std::string& dir_or_file, const mor_config& cfg) {
  checkpoint c = checkpoint::open(dir_or_file);
  validate_tensor_specs(c, mor_tensor_specs(cfg), cfg.source.empty() ? "config.json" : cfg.source,
                        "Mixture-of-Recursions");
  return c;
}

}  // namespace muninn::io
