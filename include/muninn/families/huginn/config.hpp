#pragma once
/// \file
/// \brief Huginn's config (`huginn_config`) and its reader: the released huginn-0125
/// config.json as is, plus Muninn's extensions (`block_type`, grouped-query heads).

#include <cmath>
#include <cstdint>
#include <string>

#include "muninn/core/config.hpp"
#include "muninn/core/error.hpp"
#include "muninn/io/checked.hpp"
#include "muninn/io/config_json.hpp"
#include "muninn/io/json.hpp"

namespace muninn {

/// \brief A Huginn ("Raven") model's config: the stack's sizes and what Huginn's config.json says
/// of its structure, which the compiled policies must match (family::huginn::check).
struct huginn_config : model_config {
  std::string injection_type = "linear";  ///< "linear" (concat adapter) or "add"
  std::string block_type = "sandwich";    ///< Muninn extension: "sandwich" (Huginn) or "pre_norm"
  bool bias = false;                      ///< bias on Linear layers (the layout has none: true is refused)
  /// \brief The defaults of the released config (model_type huginn_raven).
  huginn_config() { model_type = "huginn_raven"; }
};

namespace io {

/// \brief Fills a huginn_config from a parsed Huginn config.json object.
/// \param root the parsed document
/// \param path named in error messages (stored in model_config::source)
/// \throws muninn::error naming the file and field for a missing required field or an invalid value
inline huginn_config model_config_from_json(const json& root, const std::string& path) {
  if (!root.is_object()) fail(path, ": config must be a JSON object, found ", root.type_name());
  using L = load_limits;
  const detail::config_fields f(root, path);
  huginn_config c;
  c.source = path;
  c.model_type = f.string({"model_type"}, c.model_type);
  c.n_embd = f.integer({"n_embd", "hidden_size"}, 1, L::max_width);
  c.n_heads = f.integer({"num_attention_heads", "n_heads"}, 1, L::max_heads);
  c.n_kv_heads = f.integer({"num_key_value_heads"}, 1, L::max_heads, c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    fail(path, ": num_attention_heads = ", c.n_heads, " is not a multiple of num_key_value_heads = ", c.n_kv_heads);
  c.head_dim = f.integer({"head_dim"}, 1, L::max_head_dim, 0);
  if (c.head_dim == 0) {
    if (c.n_embd % c.n_heads != 0)
      fail(path, ": n_embd = ", c.n_embd, " is not divisible by num_attention_heads = ", c.n_heads,
           " (give head_dim explicitly if that is intended)");
    c.head_dim = c.n_embd / c.n_heads;
  }
  if (c.head_dim > L::max_head_dim)
    fail(path, ": head_dim = ", c.head_dim, " exceeds Muninn's limit of ", L::max_head_dim);
  c.intermediate_size = f.integer({"intermediate_size"}, 1, L::max_width);
  c.vocab_size = f.integer({"vocab_size"}, 1, L::max_vocab);
  const std::int64_t padded = f.integer({"padded_vocab_size"}, 1, L::max_vocab, c.vocab_size);
  if (padded < c.vocab_size)
    fail(path, ": padded_vocab_size = ", padded, " is smaller than vocab_size = ", c.vocab_size);
  c.vocab_size = padded;  // the embedding and head have the padded row count
  c.n_layers_in_prelude = f.integer({"n_layers_in_prelude"}, 0, L::max_layers);
  c.n_layers_in_recurrent_block = f.integer({"n_layers_in_recurrent_block"}, 1, L::max_layers);
  c.n_layers_in_coda = f.integer({"n_layers_in_coda"}, 0, L::max_layers);
  // Each group is bounded, so the sum cannot overflow; the total has the same bound.
  if (c.n_unique_layers() > L::max_layers)
    fail(path, ": n_layers_in_prelude + n_layers_in_recurrent_block + n_layers_in_coda = ", c.n_unique_layers(),
         " exceeds Muninn's limit of ", L::max_layers, " layers");
  const std::int64_t n_layers = f.integer({"n_layers", "num_hidden_layers"}, 0, L::max_layers, c.n_unique_layers());
  if (n_layers != c.n_unique_layers())
    fail(path, ": n_layers = ", n_layers, " but n_layers_in_prelude + n_layers_in_recurrent_block + n_layers_in_coda = ",
         c.n_unique_layers());
  c.mean_recurrence = f.integer({"mean_recurrence"}, 1, L::max_recurrence);
  c.block_size = f.integer({"block_size", "max_position_embeddings"}, 1, L::max_positions);
  c.norm_eps = f.number({"norm_eps", "rms_norm_eps"}, c.norm_eps, true);
  c.rope_base = f.number({"rope_base", "rope_theta"}, c.rope_base, true);
  detail::check_rope_table(c, path);
  c.qk_bias = f.boolean({"qk_bias"}, c.qk_bias);
  c.bias = f.boolean({"bias"}, c.bias);
  c.tie_embeddings = f.boolean({"tie_embeddings", "tie_word_embeddings"}, c.tie_embeddings);
  c.injection_type = f.string({"injection_type"}, c.injection_type);
  if (c.injection_type != "linear" && c.injection_type != "add")
    fail(path, ": field 'injection_type' is \"", c.injection_type, "\"; supported: \"linear\", \"add\"");
  // Muninn extension: absent in Huginn checkpoints, whose blocks are all sandwich blocks.
  c.block_type = f.string({"block_type"}, c.block_type);
  if (c.block_type != "sandwich" && c.block_type != "pre_norm")
    fail(path, ": field 'block_type' is \"", c.block_type, "\"; supported: \"sandwich\", \"pre_norm\"");
  c.init_scale = f.number({"init_scale"}, c.init_scale, false);
  if (const json* iv = root.find("init_values"); iv && !iv->is_null()) {
    if (!iv->is_object()) fail(path, ": field 'init_values' must be an object, found ", iv->type_name());
    if (const json* s = iv->find("std"); s && !s->is_null()) {
      const float x = s->is_number() ? float(s->as_double()) : -1.0f;
      if (!std::isfinite(x) || !(x >= 0))
        fail(path, ": field 'init_values.std' must be a non-negative number that fits a float");
      c.init_std = x;
    }
  }
  return c;
}

/// \brief Reads a Huginn config.json (what family::huginn::read_config does).
/// \param path_or_dir the file, or a checkpoint directory holding config.json
/// \throws muninn::error naming the file and field on any problem (see model_config_from_json)
inline huginn_config read_model_config(const std::string& path_or_dir) {
  const std::string path = config_json_path(path_or_dir);
  return model_config_from_json(read_json_file(path), path);
}

}  // namespace io
}  // namespace muninn
