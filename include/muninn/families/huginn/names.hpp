#pragma once
/// \file
/// \brief The tensor names and shapes of a Huginn (recurrent-depth "Raven") checkpoint, and a
/// validator that compares a checkpoint against them before any weight is loaded.

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/huginn/config.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/io/tensor_specs.hpp"

namespace muninn::io {

/// \brief Prefix that training checkpoints (torch.compile wrappers) put before every name.
inline constexpr const char* huginn_training_prefix = "_orig_mod._original_module.";

/// \brief Every tensor a Huginn checkpoint holds for `cfg`, in module order.
///
/// Global: transformer.wte.weight [V, h]; transformer.adapter.weight [h, 2h] (injection "linear");
/// transformer.ln_f.weight [h]; lm_head.weight [V, h] (optional when tied); freqs_cis
/// [1, block_size, 1, D/2, 2] (optional; a longer table is accepted). Per block
/// transformer.{prelude.i | core_block.j | coda.c}: norm_1..4.weight [h], attn.Wqkv.weight
/// [(H + 2 Hkv) D, h], attn.qk_bias [2, 1, H, D] (when qk_bias), attn.proj.weight [h, H D],
/// mlp.fc.weight [2 I, h], mlp.proj.weight [h, I].
/// \throws muninn::error for configs the layout cannot express (bias = true, odd head_dim)
inline std::vector<tensor_spec> huginn_tensor_specs(const huginn_config& cfg) {
  const std::string src = cfg.source.empty() ? "config" : cfg.source;
  if (cfg.bias) fail(src, ": bias = true is not supported by the Huginn layout (the released model has no Linear biases)");
  if (cfg.head_dim % 2 != 0) fail(src, ": head_dim = ", cfg.head_dim, " must be even (RoPE rotates pairs)");
  const std::int64_t h = cfg.n_embd, H = cfg.n_heads, Hkv = cfg.n_kv_heads, D = cfg.head_dim;
  const std::int64_t I = cfg.intermediate_size, V = cfg.vocab_size;
  const std::string s_h = "n_embd=" + std::to_string(h);
  const std::string s_vh = "vocab_size=" + std::to_string(V) + ", " + s_h;
  const std::string s_heads = "num_attention_heads=" + std::to_string(H) + ", head_dim=" + std::to_string(D);
  const std::string s_qkv = s_h + ", " + s_heads + ", num_key_value_heads=" + std::to_string(Hkv);
  const std::string s_mlp = s_h + ", intermediate_size=" + std::to_string(I);

  std::vector<tensor_spec> specs;
  const auto add = [&](std::string name, std::vector<std::int64_t> shape, const std::string& reason) {
    specs.push_back(tensor_spec{std::move(name), std::move(shape), false, -1, reason});
  };
  const auto add_block = [&](const std::string& prefix) {
    add(prefix + ".norm_1.weight", {h}, s_h);
    add(prefix + ".attn.Wqkv.weight", {(H + 2 * Hkv) * D, h}, s_qkv);
    if (cfg.qk_bias) add(prefix + ".attn.qk_bias", {2, 1, H, D}, s_heads);
    add(prefix + ".attn.proj.weight", {h, H * D}, s_h + ", " + s_heads);
    add(prefix + ".norm_2.weight", {h}, s_h);
    add(prefix + ".mlp.fc.weight", {2 * I, h}, s_mlp);
    add(prefix + ".mlp.proj.weight", {h, I}, s_mlp);
    if (cfg.block_type != "pre_norm") {  // the sandwich block's post-sublayer norms
      add(prefix + ".norm_3.weight", {h}, s_h);
      add(prefix + ".norm_4.weight", {h}, s_h);
    }
  };

  add("transformer.wte.weight", {V, h}, s_vh);
  for (std::int64_t i = 0; i < cfg.n_layers_in_prelude; ++i) add_block("transformer.prelude." + std::to_string(i));
  if (cfg.injection_type == "linear") add("transformer.adapter.weight", {h, 2 * h}, s_h + ", injection_type=linear");
  for (std::int64_t j = 0; j < cfg.n_layers_in_recurrent_block; ++j)
    add_block("transformer.core_block." + std::to_string(j));
  for (std::int64_t c = 0; c < cfg.n_layers_in_coda; ++c) add_block("transformer.coda." + std::to_string(c));
  add("transformer.ln_f.weight", {h}, s_h);
  add("lm_head.weight", {V, h}, s_vh + (cfg.tie_embeddings ? ", tie_embeddings=true" : ", tie_embeddings=false"));
  specs.back().optional = cfg.tie_embeddings;  // the release stores a duplicate copy; wte is used either way
  add("freqs_cis", {1, cfg.block_size, 1, D / 2, 2}, "block_size=" + std::to_string(cfg.block_size) + ", head_dim=" + std::to_string(D));
  specs.back().optional = true;
  specs.back().longer_dim = 1;
  return specs;
}

/// \brief Renames "_orig_mod._original_module.X" to "X" (training checkpoints); returns how many changed.
inline std::size_t strip_huginn_prefixes(checkpoint& ckpt) { return ckpt.strip_prefix(huginn_training_prefix); }

/// \brief Checks that `ckpt` holds exactly the tensors huginn_tensor_specs(cfg) lists, with those shapes.
///
/// Reports, in one muninn::error with one line per problem (check_tensor_specs): missing tensors
/// with their expected shape, wrong shapes with the config values that imply the right one and the
/// shard that holds the tensor, then the unknown extra tensors — first saying so when the names
/// still carry the training prefix.
inline void validate_huginn_checkpoint(const checkpoint& ckpt, const huginn_config& cfg) {
  const tensor_spec_report r =
      check_tensor_specs(ckpt, huginn_tensor_specs(cfg), cfg.source.empty() ? "config.json" : cfg.source);
  if (r.ok()) return;
  std::size_t n_prefixed = 0;
  for (const tensor_info* t : r.extras) n_prefixed += t->name.rfind(huginn_training_prefix, 0) == 0;
  std::string msg;
  if (n_prefixed)
    msg = ckpt.source() + ": tensor names carry the training prefix '" + huginn_training_prefix +
          "'; call strip_huginn_prefixes() (open_huginn_checkpoint() does) before validating\n";
  throw error(msg + r.message(ckpt.source(), "Huginn"));
}

/// \brief Opens a Huginn checkpoint, strips training prefixes and validates it against `cfg`.
/// \param dir_or_file as for checkpoint::open
/// \param cfg the model's config, e.g. from read_model_config(dir)
inline checkpoint open_huginn_checkpoint(const std::string& dir_or_file, const huginn_config& cfg) {
  checkpoint c = checkpoint::open(dir_or_file);
  strip_huginn_prefixes(c);
  validate_huginn_checkpoint(c, cfg);
  return c;
}

}  // namespace muninn::io
