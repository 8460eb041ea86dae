#pragma once
/// \file
/// \brief Reading CALM's two config.json files: the chunk autoencoder's and the CALM model's.
///
/// Neither file carries a `model_type` (the reference's config classes leave it empty), so both
/// are recognised by their fields. The CALM file does not describe its autoencoder: that comes
/// from the autoencoder's own config.json, never from guesses (an RMSNorm epsilon cannot be
/// inferred from tensors).

#include <cstdint>
#include <string>

#include "muninn/core/config.hpp"
#include "muninn/core/error.hpp"
#include "muninn/families/llama/config.hpp"
#include "muninn/io/config_json.hpp"
#include "muninn/io/json.hpp"

namespace muninn {

/// \brief Sizes of CALM's chunk autoencoder (the reference's `AutoencoderConfig`).
struct autoencoder_config {
  std::int64_t vocab_size = 0;         ///< V (Llama-3 vocabulary + [PAD] in the release: 128257)
  std::int64_t hidden_size = 0;        ///< width of the autoencoder's layers (512 in the release)
  std::int64_t intermediate_size = 0;  ///< SwiGLU width (1280)
  std::int64_t latent_size = 0;        ///< l, one latent per chunk (128)
  std::int64_t patch_size = 0;         ///< K, tokens per chunk (4)
  std::int64_t encoder_layers = 0;     ///< residual MLP layers of the encoder, split evenly in two stages
  std::int64_t decoder_layers = 0;     ///< the same for the decoder
  float eps = 1e-6f;                   ///< RMSNorm epsilon
  std::int64_t pad_id = -1;            ///< [PAD] (-1: none)
  std::int64_t eos_id = -1;            ///< end of text (-1: none)
  std::string source;                  ///< the file read, for error messages
};

/// \brief A CALM model's settings: the Llama backbone over chunk positions, the compressor and the
/// energy head (the reference's `CALMConfig`).
struct calm_config {
  llama_config backbone;          ///< the Llama backbone (its head is the final RMSNorm only)
  std::int64_t patch_size = 0;    ///< K
  std::int64_t latent_size = 0;   ///< l
  std::int64_t noise_size = 0;    ///< width of the head's uniform noise (64 in the release)
  std::int64_t mlp_blocks = 0;    ///< residual blocks of the energy head (`num_mlp_layers`, 4)
  std::int64_t train_samples = 0; ///< `num_samples`: head samples per position in training and BrierLM (8)
  std::int64_t pad_id = -1;       ///< [PAD], appended to prompts to fill a chunk (-1: none)
  std::int64_t eos_id = -1;       ///< a chunk holding it ends a generation (-1: none)
  std::string ae_path;            ///< where the authors' autoencoder was: usually absent here
  std::string source;             ///< the file read
};

namespace io {

namespace detail {
inline bool has_fields(const json& root, std::initializer_list<const char*> names) {
  if (!root.is_object()) return false;
  for (const char* n : names)
    if (!root.find(n)) return false;
  return true;
}

// A token id field (pad/eos): absent or null gives -1; a list (transformers allows one) its first entry.
inline std::int64_t token_id_field(const json& root, const char* name, std::int64_t vocab, const std::string& path) {
  const json* v = root.find(name);
  if (!v || v->is_null()) return -1;
  if (v->is_array() && v->size() > 0) v = &(*v)[0];
  json::object_t one;
  one.emplace_back(name, *v);
  const json holder = json::make_object(std::move(one));  // config_fields keeps a reference
  const config_fields f(holder, path);
  return f.integer({name}, 0, vocab - 1);
}
}  // namespace detail

/// \brief True for an autoencoder config.json: it has the encoder/decoder layer counts and a latent size.
inline bool is_autoencoder_config(const json& root) {
  return detail::has_fields(root, {"num_encoder_layers", "num_decoder_layers", "latent_size", "patch_size"});
}

/// \brief True for a CALM config.json: patch, latent and noise sizes and the head's block count.
inline bool is_calm_config(const json& root) {
  if (!detail::has_fields(root, {"patch_size", "latent_size", "noise_size", "num_mlp_layers"})) return false;
  const json* t = root.find("model_type");
  return !t || t->is_null() || (t->is_string() && (t->as_string().empty() || t->as_string() == "energy"));
}

/// \brief Reads an autoencoder config.json (file or directory).
/// \throws muninn::error naming the file and field for a missing or invalid size, an activation
///         other than silu, or encoder/decoder layer counts that are odd (the two stages split them)
inline autoencoder_config read_autoencoder_config(const std::string& path_or_dir) {
  using L = load_limits;
  const std::string path = config_json_path(path_or_dir);
  const json root = read_json_file(path);
  if (!is_autoencoder_config(root))
    fail(path, ": not a CALM autoencoder config (it needs num_encoder_layers, num_decoder_layers, latent_size and "
               "patch_size)");
  const detail::config_fields f(root, path);
  autoencoder_config c;
  c.source = path;
  c.vocab_size = f.integer({"vocab_size"}, 1, L::max_vocab);
  c.hidden_size = f.integer({"hidden_size"}, 1, L::max_width);
  c.intermediate_size = f.integer({"intermediate_size"}, 1, L::max_width);
  c.latent_size = f.integer({"latent_size"}, 1, L::max_width);
  c.patch_size = f.integer({"patch_size"}, 1, 1024);
  c.encoder_layers = f.integer({"num_encoder_layers"}, 0, L::max_layers);
  c.decoder_layers = f.integer({"num_decoder_layers"}, 0, L::max_layers);
  c.eps = f.number({"rms_norm_eps"}, 1e-6f, true);
  const std::string act = f.string({"hidden_act"}, "silu");
  MUNINN_CHECK(act == "silu", path, ": field 'hidden_act' is \"", act, "\"; the autoencoder's layers are SwiGLU (silu)");
  MUNINN_CHECK(!f.boolean({"mlp_bias"}, false), path, ": field 'mlp_bias' is true; the reference's layers have none");
  c.pad_id = detail::token_id_field(root, "pad_token_id", c.vocab_size, path);
  c.eos_id = detail::token_id_field(root, "eos_token_id", c.vocab_size, path);
  return c;
}

/// \brief Reads a CALM config.json (file or directory): the backbone through the Llama reader
/// (hidden sizes, heads, RoPE), then the CALM fields.
/// \throws muninn::error naming the file and field on any problem, or for a model_type other than
///         "energy" (the reference's diffusion and flow heads are not implemented)
inline calm_config read_calm_config(const std::string& path_or_dir) {
  const std::string path = config_json_path(path_or_dir);
  const json root = read_json_file(path);
  if (!is_calm_config(root))
    fail(path, ": not a CALM config (it needs patch_size, latent_size, noise_size and num_mlp_layers, and no "
               "model_type other than \"energy\")");
  // The Llama reader insists on model_type "llama" when present; CALM's is absent or "energy".
  json::object_t fields;
  for (const auto& kv : root.as_object())
    fields.emplace_back(kv.first, kv.first == "model_type" ? json::make_string("llama") : kv.second);
  calm_config c;
  c.backbone = llama_config_from_json(json::make_object(std::move(fields)), path);
  c.backbone.model_type = "calm";
  c.backbone.tie_embeddings = true;  // the backbone has no lm_head; its embedding feeds the compressor
  const detail::config_fields f(root, path);
  c.source = path;
  c.patch_size = f.integer({"patch_size"}, 1, 1024);
  c.latent_size = f.integer({"latent_size"}, 1, load_limits::max_width);
  c.noise_size = f.integer({"noise_size"}, 1, load_limits::max_width);
  c.mlp_blocks = f.integer({"num_mlp_layers"}, 0, load_limits::max_layers);
  c.train_samples = f.integer({"num_samples"}, 2, 1 << 16, 8);
  c.pad_id = detail::token_id_field(root, "pad_token_id", c.backbone.vocab_size, path);
  c.eos_id = detail::token_id_field(root, "eos_token_id", c.backbone.vocab_size, path);
  c.ae_path = f.string({"ae_path"}, "");
  return c;
}

/// \brief Checks that an autoencoder fits a CALM model: same K, l and vocabulary.
/// \throws muninn::error naming both files and the value that differs
inline void check_autoencoder_fits(const calm_config& m, const autoencoder_config& ae) {
  MUNINN_CHECK(m.patch_size == ae.patch_size, m.source, ": patch_size ", m.patch_size, " but the autoencoder (",
               ae.source, ") has patch_size ", ae.patch_size, "; the chunk size must agree");
  MUNINN_CHECK(m.latent_size == ae.latent_size, m.source, ": latent_size ", m.latent_size, " but the autoencoder (",
               ae.source, ") has latent_size ", ae.latent_size);
  MUNINN_CHECK(m.backbone.vocab_size == ae.vocab_size, m.source, ": vocab_size ", m.backbone.vocab_size,
               " but the autoencoder (", ae.source, ") has vocab_size ", ae.vocab_size);
}

}  // namespace io
}  // namespace muninn
