#pragma once
/// \file
/// \brief The tensor names and shapes of a Hugging Face `LlamaForCausalLM` checkpoint, and opening
/// a checkpoint validated against them.

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/families/llama/config.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/io/tensor_specs.hpp"

namespace muninn::io {

/// \brief "model.layers.<i>": the name prefix of decoder layer i.
inline std::string llama_layer_prefix(std::int64_t i) { return "model.layers." + std::to_string(i); }

namespace detail {

// The config values each shape follows from, spelled as config.json spells them.
struct llama_reasons {
  std::string h, vh, q, kv, o, mlp, rope;
  explicit llama_reasons(const llama_config& c) {
    const std::string s_h = "hidden_size=" + std::to_string(c.n_embd);
    const std::string s_d = "head_dim=" + std::to_string(c.head_dim);
    h = s_h;
    vh = "vocab_size=" + std::to_string(c.vocab_size) + ", " + s_h;
    q = "num_attention_heads=" + std::to_string(c.n_heads) + ", " + s_d + ", " + s_h;
    kv = "num_key_value_heads=" + std::to_string(c.n_kv_heads) + ", " + s_d + ", " + s_h;
    o = s_h + ", num_attention_heads=" + std::to_string(c.n_heads) + ", " + s_d;
    mlp = s_h + ", intermediate_size=" + std::to_string(c.intermediate_size);
    rope = s_d;
  }
};

inline void add_llama_attention(std::vector<tensor_spec>& specs, const llama_config& c, const std::string& p,
                                const llama_reasons& why) {
  const std::int64_t h = c.n_embd, q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  const std::string bias = ", attention_bias=true";
  specs.push_back({p + ".self_attn.q_proj.weight", {q, h}, false, -1, why.q});
  specs.push_back({p + ".self_attn.k_proj.weight", {kv, h}, false, -1, why.kv});
  specs.push_back({p + ".self_attn.v_proj.weight", {kv, h}, false, -1, why.kv});
  specs.push_back({p + ".self_attn.o_proj.weight", {h, q}, false, -1, why.o});
  if (!c.attention_bias) return;
  specs.push_back({p + ".self_attn.q_proj.bias", {q}, false, -1, why.q + bias});
  specs.push_back({p + ".self_attn.k_proj.bias", {kv}, false, -1, why.kv + bias});
  specs.push_back({p + ".self_attn.v_proj.bias", {kv}, false, -1, why.kv + bias});
  specs.push_back({p + ".self_attn.o_proj.bias", {h}, false, -1, why.h + bias});
}

inline void add_llama_mlp(std::vector<tensor_spec>& specs, const llama_config& c, const std::string& p,
                          const llama_reasons& why) {
  const std::int64_t h = c.n_embd, I = c.intermediate_size;
  const std::string bias = ", mlp_bias=true";
  specs.push_back({p + ".mlp.gate_proj.weight", {I, h}, false, -1, why.mlp});
  specs.push_back({p + ".mlp.up_proj.weight", {I, h}, false, -1, why.mlp});
  specs.push_back({p + ".mlp.down_proj.weight", {h, I}, false, -1, why.mlp});
  if (!c.mlp_bias) return;
  specs.push_back({p + ".mlp.gate_proj.bias", {I}, false, -1, why.mlp + bias});
  specs.push_back({p + ".mlp.up_proj.bias", {I}, false, -1, why.mlp + bias});
  specs.push_back({p + ".mlp.down_proj.bias", {h}, false, -1, why.h + bias});
}

}  // namespace detail

/// \brief Every tensor a Llama checkpoint holds for `cfg`, in module order.
///
/// model.embed_tokens.weight [V, h]; per layer N `model.layers.N.`: self_attn.{q_proj [H·D, h],
/// k_proj [Hkv·D, h], v_proj [Hkv·D, h], o_proj [h, H·D]}.weight (+ .bias [out] when
/// attention_bias), mlp.{gate_proj [I, h], up_proj [I, h], down_proj [h, I]}.weight (+ .bias when
/// mlp_bias), input_layernorm.weight [h], post_attention_layernorm.weight [h]; model.norm.weight
/// [h]; lm_head.weight [V, h] (optional when tied). Optional and ignored when present: the
/// `rotary_emb.inv_freq` buffers [D/2] that older transformers versions saved (model-level or per layer).
inline std::vector<tensor_spec> llama_tensor_specs(const llama_config& cfg) {
  const detail::llama_reasons why(cfg);
  const std::int64_t h = cfg.n_embd, V = cfg.vocab_size, half = cfg.head_dim / 2;
  std::vector<tensor_spec> specs;
  specs.push_back({"model.embed_tokens.weight", {V, h}, false, -1, why.vh});
  for (std::int64_t i = 0; i < cfg.n_layers_in_prelude; ++i) {
    const std::string p = llama_layer_prefix(i);
    specs.push_back({p + ".input_layernorm.weight", {h}, false, -1, why.h});
    detail::add_llama_attention(specs, cfg, p, why);
    specs.push_back({p + ".post_attention_layernorm.weight", {h}, false, -1, why.h});
    detail::add_llama_mlp(specs, cfg, p, why);
    specs.push_back({p + ".self_attn.rotary_emb.inv_freq", {half}, true, -1, why.rope});
  }
  specs.push_back({"model.norm.weight", {h}, false, -1, why.h});
  specs.push_back({"model.rotary_emb.inv_freq", {half}, true, -1, why.rope});
  // A tied checkpoint may still store the head (a copy of embed_tokens); it is accepted and never
  // read: the embedding serves as the head, as in transformers' tie_weights().
  specs.push_back({"lm_head.weight", {V, h}, cfg.tie_embeddings, -1,
                   why.vh + (cfg.tie_embeddings ? ", tie_word_embeddings=true" : ", tie_word_embeddings=false")});
  return specs;
}

/// \brief Checks that `ckpt` holds exactly the tensors llama_tensor_specs(cfg) lists, with those
/// shapes; one muninn::error names every missing tensor, wrong shape (with its file and the config
/// values it follows from) and unexpected extra tensor.
inline void validate_llama_checkpoint(const checkpoint& ckpt, const llama_config& cfg) {
  validate_tensor_specs(ckpt, llama_tensor_specs(cfg), cfg.source.empty() ? "config.json" : cfg.source, "Llama");
}

/// \brief Opens a Llama checkpoint (model.safetensors or model.safetensors.index.json, as
/// checkpoint::open) and validates it against `cfg` before anything is loaded.
/// \param dir_or_file as for checkpoint::open
/// \param cfg the model's config, e.g. from read_llama_config(dir)
inline checkpoint open_llama_checkpoint(const std::string& dir_or_file, const llama_config& cfg) {
  checkpoint c = checkpoint::open(dir_or_file);
  validate_llama_checkpoint(c, cfg);
  return c;
}

}  // namespace muninn::io
