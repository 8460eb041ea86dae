#pragma once
/// \file
/// \brief `family::calm`: a CALM model's state as a family declares it — the backbone's Llama
/// config with CALM's settings beside it, the backbone's layers with the compressor, the energy
/// head and the chunk autoencoder beside them — and how a released CALM folder is read into it.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "muninn/families/calm/autoencoder.hpp"
#include "muninn/families/calm/checkpoint.hpp"
#include "muninn/families/calm/config.hpp"
#include "muninn/families/calm/weights.hpp"
#include "muninn/families/llama/config.hpp"
#include "muninn/io/json.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {

/// \brief A CALM model's config: the backbone's sizes (a Llama over chunk positions) and CALM's
/// own settings (K, latent and noise sizes, pad and EOS ids), which `input::chunk_compress` and
/// `head::energy` read.
struct calm_model_config : llama_config {
  calm_config calm;    ///< CALM's settings (its `backbone` equals the base)
  std::string ae_dir;  ///< where the autoencoder's config.json was found (its weights too, unless embedded)
};

/// \brief A CALM model's parameters: the backbone's layers (embedding, layers, final norm, RoPE),
/// the compressor (`input::chunk_compress`), the energy head and the autoencoder (`head::energy`).
/// `parameter_count` counts backbone, compressor and head; the autoencoder counts apart.
template <class Backend, class T>
struct calm_weights : model_weights<Backend, T> {
  compressor_weights<Backend, T> compressor;               ///< K embeddings → one position
  energy_head_weights<Backend, T> head;                    ///< the generator
  std::optional<chunk_autoencoder<Backend, T>> ae;         ///< latents ↔ chunks (set by the loader)
  /// \brief The autoencoder.
  const chunk_autoencoder<Backend, T>& autoencoder() const { return *ae; }
};

/// \brief Loads a CALM model's weights from its opened files (io::open_calm).
template <class Backend, class T>
calm_weights<Backend, T> load_calm_weights(const Backend& be, const io::calm_files& f) {
  calm_weights<Backend, T> w;
  static_cast<model_weights<Backend, T>&>(w) = load_calm_backbone_weights<Backend, T>(be, f.model, f.config.backbone);
  w.compressor = load_compressor_weights<Backend, T>(be, f.model);
  w.head = load_energy_head_weights<Backend, T>(be, f.model, f.config, f.head_prefix);
  w.parameter_count += w.compressor.parameter_count + w.head.parameter_count;
  w.ae.emplace(be, f.ae_config, f.ae_embedded ? f.model : *f.ae, f.ae_embedded ? io::calm_embedded_ae_prefix : "");
  return w;
}

/// \brief The family config of opened CALM files.
inline calm_model_config calm_model_config_of(const io::calm_files& f) {
  calm_model_config c;
  static_cast<llama_config&>(c) = f.config.backbone;
  c.calm = f.config;
  c.ae_dir = f.ae_dir;
  return c;
}

namespace family {

/// \brief CALM (the reference's `EnergyTransformer` checkpoints and their autoencoder): a Llama
/// backbone under `transformer.`, the compressor `embed_proj`, the energy head, and the
/// autoencoder embedded under `ae_model.` or in its own folder. Implements the FamilyPolicy
/// concept (policies/family.hpp); `calm_model::load` takes an autoencoder folder explicitly.
struct calm {
  using slot = muninn::slot::family;            ///< fills the Family slot
  static constexpr const char* name = "calm";  ///< spelling in messages and `muninn info`
  using config_type = calm_model_config;        ///< backbone sizes and CALM's settings
  /// \brief Backbone, compressor, head and autoencoder.
  template <class Backend, class T>
  using weights_type = calm_weights<Backend, T>;
  /// \brief Reads config.json and finds the autoencoder's (io::open_calm's search).
  static calm_model_config read_config(const std::string& dir) {
    calm_model_config c;
    const calm_config cc = io::read_calm_config(dir);
    static_cast<llama_config&>(c) = cc.backbone;
    c.calm = cc;
    c.ae_dir = io::detail::find_calm_autoencoder(dir, cc, "");
    return c;
  }
  /// \brief Opens the CALM weights (every name and shape validated by io::open_calm).
  static io::checkpoint open_checkpoint(const std::string& dir, const calm_model_config& cfg) {
    return std::move(io::open_calm(dir, cfg.ae_dir).model);
  }
  /// \brief Loads every parameter; the autoencoder from the CALM file when embedded, else from `cfg.ae_dir`.
  template <class Backend, class T, class Block>
  static calm_weights<Backend, T> load_weights(const Backend& be, const io::checkpoint& ck,
                                               const calm_model_config& cfg) {
    calm_weights<Backend, T> w;
    static_cast<model_weights<Backend, T>&>(w) = load_calm_backbone_weights<Backend, T>(be, ck, cfg.calm.backbone);
    w.compressor = load_compressor_weights<Backend, T>(be, ck);
    w.head = load_energy_head_weights<Backend, T>(be, ck, cfg.calm, io::detail::calm_head_prefix(ck, cfg.calm));
    w.parameter_count += w.compressor.parameter_count + w.head.parameter_count;
    const autoencoder_config ae = io::read_autoencoder_config(cfg.ae_dir);
    if (ck.has(std::string(io::calm_embedded_ae_prefix) + "encoder.embed_tokens.weight"))
      w.ae.emplace(be, ae, ck, io::calm_embedded_ae_prefix);
    else
      w.ae.emplace(be, ae, io::checkpoint::open(cfg.ae_dir));
    return w;
  }
  /// \brief True for a CALM config.json (io::is_calm_config).
  static bool recognizes(const io::json& config) { return io::is_calm_config(config); }
};

}  // namespace family
}  // namespace muninn
