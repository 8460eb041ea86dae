#pragma once
/// \file
/// \brief Llama's config (`llama_config`) and its reader: a Hugging Face `LlamaForCausalLM`
/// config.json as transformers 4.x or 5.x writes it.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "muninn/core/config.hpp"
#include "muninn/core/error.hpp"
#include "muninn/io/config_json.hpp"
#include "muninn/io/json.hpp"

namespace muninn {

/// \brief A Llama model's config: the stack's sizes (every layer in the prelude group) and what
/// only Llama's loader reads: RoPE scaling and the projection biases.
struct llama_config : model_config {
  std::string rope_type = "default";        ///< rope_scaling type: "default" (none), "linear" or "llama3"
  float rope_factor = 1.0f;                 ///< rope_scaling "factor" (linear and llama3)
  float rope_low_freq_factor = 1.0f;        ///< llama3 "low_freq_factor"
  float rope_high_freq_factor = 4.0f;       ///< llama3 "high_freq_factor"
  std::int64_t rope_original_max_position = 0;  ///< llama3 "original_max_position_embeddings"
  bool attention_bias = false;              ///< biases on the v and o projections too (q, k: `qk_bias`)
  bool mlp_bias = false;                    ///< biases on the gate, up and down projections
  /// \brief model_type "llama"; every other default is model_config's.
  llama_config() { model_type = "llama"; }
};

namespace io {

namespace detail {

// Every RoPE field under one flat, dotted name: "rope_theta" (4.x, top level), and each key of
// "rope_scaling" (4.x) and "rope_parameters" (5.x) as "rope_scaling.<key>" / "rope_parameters.<key>".
// config_fields can then treat the two spellings of one field as aliases, which reports a config
// that holds both with different values instead of silently picking one.
inline json llama_rope_view(const json& root, const std::string& path) {
  json::object_t out;
  if (const json* t = root.find("rope_theta")) out.emplace_back("rope_theta", *t);
  for (const char* group : {"rope_scaling", "rope_parameters"}) {
    const json* g = root.find(group);
    if (!g || g->is_null()) continue;  // transformers writes "rope_scaling": null for plain RoPE
    if (!g->is_object()) fail(path, ": field '", group, "' must be an object or null, found ", g->type_name());
    for (const auto& [key, value] : g->as_object()) out.emplace_back(std::string(group) + "." + key, value);
  }
  return json::make_object(std::move(out));
}

// A scaling parameter the rope type needs, from either spelling; absent is an error naming both.
inline float llama_rope_number(const config_fields& f, const std::string& key, const std::string& type,
                                const std::string& path) {
  const std::string a = "rope_scaling." + key, b = "rope_parameters." + key;
  const float v = f.number({a.c_str(), b.c_str()}, std::numeric_limits<float>::quiet_NaN(), true);
  if (std::isnan(v))
    fail(path, ": rope type \"", type, "\" needs field '", a, "' (or '", b, "'), which is missing");
  return v;
}

inline void read_llama3_rope(const config_fields& f, const std::string& path, llama_config& c) {
  c.rope_factor = llama_rope_number(f, "factor", "llama3", path);
  c.rope_low_freq_factor = llama_rope_number(f, "low_freq_factor", "llama3", path);
  c.rope_high_freq_factor = llama_rope_number(f, "high_freq_factor", "llama3", path);
  if (!(c.rope_high_freq_factor > c.rope_low_freq_factor))  // the smoothing divides by their difference
    fail(path, ": rope type \"llama3\" needs high_freq_factor > low_freq_factor, found ", c.rope_high_freq_factor,
         " and ", c.rope_low_freq_factor);
  c.rope_original_max_position = f.integer(
      {"rope_scaling.original_max_position_embeddings", "rope_parameters.original_max_position_embeddings"}, 1,
      load_limits::max_positions, 0);
  if (c.rope_original_max_position == 0)
    fail(path, ": rope type \"llama3\" needs field 'rope_scaling.original_max_position_embeddings' (or "
               "'rope_parameters.original_max_position_embeddings'), which is missing");
}

// rope_theta and the scaling type with its parameters, from either transformers layout.
inline void read_llama_rope(const json& root, const std::string& path, llama_config& c) {
  const json view = llama_rope_view(root, path);
  const config_fields f(view, path);
  c.rope_base = f.number({"rope_theta", "rope_parameters.rope_theta"}, 10000.0f, true);
  const char* type_field = nullptr;
  const json* t = f.find(
      {"rope_scaling.rope_type", "rope_scaling.type", "rope_parameters.rope_type", "rope_parameters.type"}, type_field);
  if (t && !t->is_string()) fail(path, ": field '", type_field, "' must be a string, found ", t->type_name());
  c.rope_type = t ? t->as_string() : "default";
  if (c.rope_type == "linear") {
    c.rope_factor = llama_rope_number(f, "factor", "linear", path);
  } else if (c.rope_type == "llama3") {
    read_llama3_rope(f, path, c);
  } else if (c.rope_type != "default") {
    fail(path, ": field '", type_field, "' is \"", c.rope_type,
         "\", which Muninn does not implement; supported: \"default\" (or null), \"linear\", \"llama3\"");
  }
}

// Sizes, named as LlamaConfig names them; defaults are LlamaConfig's where transformers has one
// that released configs may omit, the structural sizes are required.
inline void read_llama_sizes(const config_fields& f, const std::string& path, llama_config& c) {
  using L = load_limits;
  c.n_embd = f.integer({"hidden_size"}, 1, L::max_width);
  c.intermediate_size = f.integer({"intermediate_size"}, 1, L::max_width);
  c.vocab_size = f.integer({"vocab_size"}, 1, L::max_vocab);
  c.n_layers_in_prelude = f.integer({"num_hidden_layers"}, 1, L::max_layers);
  c.block_size = f.integer({"max_position_embeddings"}, 1, L::max_positions, 2048);
  c.norm_eps = f.number({"rms_norm_eps"}, 1e-6f, true);
  c.n_heads = f.integer({"num_attention_heads"}, 1, L::max_heads);
  c.n_kv_heads = f.integer({"num_key_value_heads"}, 1, L::max_heads, c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    fail(path, ": field 'num_attention_heads' = ", c.n_heads, " is not a multiple of 'num_key_value_heads' = ",
         c.n_kv_heads);
  // LlamaConfig's default is hidden_size // num_attention_heads (floor); head_dim may differ from it.
  c.head_dim = f.integer({"head_dim"}, 1, L::max_head_dim, c.n_embd / c.n_heads);
  if (c.head_dim == 0)
    fail(path, ": hidden_size = ", c.n_embd, " / num_attention_heads = ", c.n_heads,
         " gives head_dim 0 (give field 'head_dim' explicitly)");
  if (c.head_dim > L::max_head_dim)
    fail(path, ": head_dim = ", c.head_dim, " exceeds Muninn's limit of ", L::max_head_dim);
  if (c.head_dim % 2 != 0) fail(path, ": head_dim = ", c.head_dim, " must be even (RoPE rotates pairs)");
  check_rope_table(c, path);
}

// Fields whose other values would change the computation in ways Muninn does not implement.
inline void check_llama_supported(const config_fields& f, const std::string& path) {
  const std::string type = f.string({"model_type"}, "llama");
  if (type != "llama") fail(path, ": field 'model_type' is \"", type, "\"; family llama reads \"llama\" configs");
  const std::string act = f.string({"hidden_act"}, "silu");
  if (act != "silu")
    fail(path, ": field 'hidden_act' is \"", act, "\"; family llama supports only \"silu\" (SwiGLU MLP)");
  const std::int64_t tp = f.integer({"pretraining_tp"}, 1, std::numeric_limits<std::int64_t>::max(), 1);
  if (tp > 1)
    fail(path, ": field 'pretraining_tp' = ", tp,
         " is unsupported (the sliced projections of pretraining_tp > 1 are not implemented; 1 gives the same "
         "model up to rounding)");
  f.string({"torch_dtype", "dtype"}, "");  // 4.x / 5.x spelling: unused (tensors carry their dtype), must agree
}

}  // namespace detail

/// \brief Fills a llama_config from a parsed Llama config.json object.
///
/// Maps hidden_size, num_attention_heads, num_key_value_heads (default: heads), head_dim (default:
/// hidden_size / heads), intermediate_size, num_hidden_layers (all in the prelude group: no core,
/// no coda, mean_recurrence 0), rms_norm_eps, max_position_embeddings, vocab_size,
/// tie_word_embeddings (default false), attention_bias (q, k, v, o biases), mlp_bias, rope_theta
/// and the RoPE scaling ("default"/null, "linear", "llama3") from the 4.x keys (`rope_theta`,
/// `rope_scaling` with `rope_type` or legacy `type`) or the 5.x `rope_parameters` object; both
/// present and disagreeing is an error.
/// \param root the parsed document
/// \param path named in error messages (stored in model_config::source)
/// \throws muninn::error naming the file and field for a missing or invalid field, or a setting
///         Muninn does not implement (hidden_act other than silu, pretraining_tp > 1, other RoPE types)
inline llama_config llama_config_from_json(const json& root, const std::string& path) {
  if (!root.is_object()) fail(path, ": config must be a JSON object, found ", root.type_name());
  const detail::config_fields f(root, path);
  detail::check_llama_supported(f, path);
  llama_config c;
  c.source = path;
  c.model_type = "llama";
  detail::read_llama_sizes(f, path, c);
  detail::read_llama_rope(root, path, c);
  c.tie_embeddings = f.boolean({"tie_word_embeddings"}, false);  // LlamaConfig's default, unlike Huginn's
  c.attention_bias = f.boolean({"attention_bias"}, false);
  c.qk_bias = c.attention_bias;  // the q and k biases use Huginn's qk_bias path (added before RoPE)
  c.mlp_bias = f.boolean({"mlp_bias"}, false);
  c.n_layers_in_recurrent_block = 0;
  c.n_layers_in_coda = 0;
  c.mean_recurrence = 0;
  return c;
}

/// \brief Reads a Llama config.json.
/// \param path_or_dir the file, or a checkpoint directory holding config.json
/// \throws muninn::error naming the file and field on any problem (see llama_config_from_json)
inline llama_config read_llama_config(const std::string& path_or_dir) {
  const std::string path = config_json_path(path_or_dir);
  return llama_config_from_json(read_json_file(path), path);
}

}  // namespace io
}  // namespace muninn
