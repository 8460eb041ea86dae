#pragma once
/// \file
/// \brief Finding and validating the files of a CALM checkpoint: the model's config.json and
/// weights, and its autoencoder's config.json (always needed) and weights (when not embedded).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/calm/config.hpp"
#include "muninn/families/calm/names.hpp"
#include "muninn/io/safetensors.hpp"

namespace muninn::io {

/// \brief The opened, validated files of a CALM model.
struct calm_files {
  calm_config config;                ///< the CALM config.json
  checkpoint model;                  ///< the CALM weights
  autoencoder_config ae_config;      ///< the autoencoder's config.json
  std::optional<checkpoint> ae;      ///< the autoencoder's own weights, when the CALM file lacks them
  bool ae_embedded = false;          ///< the CALM file holds the autoencoder under `ae_model.`
  std::string head_prefix;           ///< which of calm_head_prefixes the head is read from
  std::string ae_dir;                ///< where the autoencoder config came from
};

namespace detail {

inline bool has_config_json(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / "config.json", ec);
}

// Where the autoencoder's config.json is: --ae, else config.ae_path (a relative one against the
// model folder first, then the current directory, so that a command works from any directory),
// else an `ae` or `autoencoder` folder beside the weights. None: one error that says what was tried.
inline std::string find_calm_autoencoder(const std::string& dir, const calm_config& cfg, const std::string& ae_dir) {
  namespace fs = std::filesystem;
  if (!ae_dir.empty()) {
    MUNINN_CHECK(has_config_json(ae_dir), "autoencoder directory '", ae_dir, "' (--ae) has no config.json");
    return ae_dir;
  }
  std::vector<std::string> tried;
  if (!cfg.ae_path.empty()) {
    if (fs::path(cfg.ae_path).is_relative()) tried.push_back((fs::path(dir) / cfg.ae_path).lexically_normal().string());
    tried.push_back(cfg.ae_path);
  }
  for (const char* sub : {"ae", "autoencoder"}) tried.push_back((fs::path(dir) / sub).string());
  for (const std::string& t : tried)
    if (has_config_json(t)) return t;
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "'" : ", '") + t + "/config.json'";
  fail(cfg.source, ": CALM's config.json does not describe its autoencoder, and no autoencoder config.json was found",
       " (tried ", list, cfg.ae_path.empty() ? "" : "; ae_path is the authors' training path",
       "); give the autoencoder's directory with --ae DIR: its hidden size, layers and RMSNorm eps cannot be inferred");
}

// The head prefix to read: the first stored; when both are, each tensor must match its twin.
inline std::string calm_head_prefix(const checkpoint& ck, const calm_config& cfg) {
  const std::string a = calm_head_prefixes[0], b = calm_head_prefixes[1];
  const bool has_a = ck.has(a + "noise_embd.weight"), has_b = ck.has(b + "noise_embd.weight");
  MUNINN_CHECK(has_a || has_b, ck.source(), ": no energy head (neither '", a, "noise_embd.weight' nor '", b,
               "noise_embd.weight')");
  if (has_a && has_b)
    for (const tensor_spec& s : energy_head_tensor_specs(cfg, a, false)) {
      const std::string twin = b + s.name.substr(a.size());
      if (!ck.has(s.name) || !ck.has(twin)) continue;  // a missing tensor is reported by validation
      MUNINN_CHECK(same_tensor(ck, s.name, twin), ck.source(), ": tensor '", s.name, "' differs from its twin '", twin,
                   "' (the head is stored twice and both must be equal)");
    }
  return has_a ? a : b;
}

}  // namespace detail

/// \brief Opens a CALM model directory and its autoencoder, and checks every tensor name and
/// shape against the configs before anything is loaded.
/// \param dir    the CALM directory (config.json + pytorch_model.bin or model.safetensors)
/// \param ae_dir the autoencoder's directory (`--ae`), or empty to look for it
/// \throws muninn::error naming the file, tensor or value for a missing autoencoder config, a
///         chunk/latent/vocabulary size that disagrees between the two, a missing or misshapen
///         tensor, an unexpected tensor, or head twins that differ
inline calm_files open_calm(const std::string& dir, const std::string& ae_dir) {
  calm_files f{read_calm_config(dir), checkpoint::open(dir), {}, std::nullopt, false, "", ""};
  f.ae_dir = detail::find_calm_autoencoder(dir, f.config, ae_dir);
  f.ae_config = read_autoencoder_config(f.ae_dir);
  check_autoencoder_fits(f.config, f.ae_config);
  f.ae_embedded = f.model.has(std::string(calm_embedded_ae_prefix) + "encoder.embed_tokens.weight");
  f.head_prefix = detail::calm_head_prefix(f.model, f.config);
  std::vector<tensor_spec> specs = calm_backbone_tensor_specs(f.config);
  for (const char* p : calm_head_prefixes) {
    auto h = energy_head_tensor_specs(f.config, p, p != f.head_prefix);
    specs.insert(specs.end(), h.begin(), h.end());
  }
  if (f.ae_embedded) {
    auto a = autoencoder_tensor_specs(f.ae_config, calm_embedded_ae_prefix);
    specs.insert(specs.end(), a.begin(), a.end());
  } else {
    f.ae = checkpoint::open(f.ae_dir);
  }
  validate_tensor_specs(f.model, specs, f.config.source, "CALM");
  return f;
}

}  // namespace muninn::io
