#pragma once
/// \file
/// \brief Writes a random CALM model and its autoencoder in the released layout (config.json
/// files with the reference's field names, safetensors weights), for benchmarks at the paper's
/// shapes and for device tests: everything then loads through the real loader.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "muninn/core/error.hpp"
#include "muninn/families/calm/names.hpp"
#include "muninn/io/random_checkpoint.hpp"

namespace muninn {

/// \brief Sizes of a random CALM model (defaults: CALM-M's backbone, noise and head; the released
/// autoencoder; the Llama-3 vocabulary plus [PAD]).
struct calm_shape {
  std::int64_t vocab = 128257;     ///< V
  std::int64_t hidden = 1024;      ///< backbone width d
  std::int64_t inter = 2752;       ///< backbone MLP width
  std::int64_t layers = 16;        ///< backbone layers
  std::int64_t heads = 16;         ///< attention heads (MHA)
  std::int64_t positions = 2048;   ///< max chunk positions
  std::int64_t patch = 4;          ///< K
  std::int64_t latent = 128;       ///< l
  std::int64_t noise = 64;         ///< noise size
  std::int64_t blocks = 4;         ///< energy head blocks
  std::int64_t ae_hidden = 512;    ///< autoencoder width
  std::int64_t ae_inter = 1280;    ///< autoencoder MLP width
  std::int64_t ae_layers = 2;      ///< encoder layers = decoder layers
};

namespace detail {
inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::trunc);
  MUNINN_CHECK(bool(out), "cannot create '", p.string(), "'");
  out << text;
}
}  // namespace detail

/// \brief Writes `dir`/config.json + model.safetensors (CALM, head under `generative_head.`, no
/// embedded autoencoder) and `dir`/ae/config.json + model.safetensors; returns `dir`/ae.
inline std::string write_random_calm(const std::string& dir, const calm_shape& s, std::uint64_t seed,
                                     dtype type = dtype::f32) {
  namespace fs = std::filesystem;
  const fs::path root(dir), ae = root / "ae";
  fs::create_directories(ae);
  const std::string V = std::to_string(s.vocab), pad = std::to_string(s.vocab - 1);
  detail::write_text(ae / "config.json",
                     "{\"vocab_size\": " + V + ", \"hidden_size\": " + std::to_string(s.ae_hidden) +
                         ", \"intermediate_size\": " + std::to_string(s.ae_inter) +
                         ", \"latent_size\": " + std::to_string(s.latent) + ", \"patch_size\": " + std::to_string(s.patch) +
                         ", \"num_encoder_layers\": " + std::to_string(s.ae_layers) +
                         ", \"num_decoder_layers\": " + std::to_string(s.ae_layers) +
                         ", \"rms_norm_eps\": 1e-06, \"hidden_act\": \"silu\", \"pad_token_id\": " + pad +
                         ", \"eos_token_id\": 1}\n");
  detail::write_text(root / "config.json",
                     "{\"ae_path\": \"/absent/calm-autoencoder\", \"patch_size\": " + std::to_string(s.patch) +
                         ", \"latent_size\": " + std::to_string(s.latent) + ", \"noise_size\": " + std::to_string(s.noise) +
                         ", \"num_mlp_layers\": " + std::to_string(s.blocks) + ", \"num_samples\": 8, \"beta\": 1.0" +
                         ", \"vocab_size\": " + V + ", \"hidden_size\": " + std::to_string(s.hidden) +
                         ", \"intermediate_size\": " + std::to_string(s.inter) +
                         ", \"num_hidden_layers\": " + std::to_string(s.layers) +
                         ", \"num_attention_heads\": " + std::to_string(s.heads) +
                         ", \"num_key_value_heads\": " + std::to_string(s.heads) +
                         ", \"max_position_embeddings\": " + std::to_string(s.positions) +
                         ", \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0, \"pad_token_id\": " + pad +
                         ", \"eos_token_id\": 1}\n");
  const calm_config cfg = io::read_calm_config(dir);
  const autoencoder_config ae_cfg = io::read_autoencoder_config(ae.string());
  std::vector<io::tensor_spec> specs = io::calm_backbone_tensor_specs(cfg);
  for (auto& t : io::energy_head_tensor_specs(cfg, io::calm_head_prefixes[0], false)) specs.push_back(t);
  io::write_random_checkpoint((root / "model.safetensors").string(), specs, seed, 0.02f, type);
  io::write_random_checkpoint((ae / "model.safetensors").string(), io::autoencoder_tensor_specs(ae_cfg, ""),
                              seed + 1, 0.02f, type);
  return ae.string();
}

}  // namespace muninn
