#pragma once
/// \file
/// \brief `family::mor`: how a Mixture-of-Recursions checkpoint (the reference's
/// `MoRLlamaForCausalLM`) is read — a Llama config.json with a `mor` block, the reference's
/// tensor names, one copy of the shared block.

#include <string>

#include "muninn/engine/kv_cache.hpp"
#include "muninn/families/mor/config.hpp"
#include "muninn/families/mor/names.hpp"
#include "muninn/families/mor/weights.hpp"
#include "muninn/families/mor/yaml.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {
namespace family {

/// \brief Mixture-of-Recursions on a Llama: implements the FamilyPolicy concept (policies/family.hpp).
struct mor {
  using slot = muninn::slot::family;           ///< fills the Family slot
  static constexpr const char* name = "mor";  ///< spelling in messages and `muninn info`
  using config_type = mor_config;             ///< Llama's fields, the recursion layout, the routing settings
  /// \brief The layer stack and the routers.
  template <class Backend, class T>
  using weights_type = mor_weights<Backend, T>;
  /// \brief The Llama fields plus the `mor` block, or the YAML beside the checkpoint (io::read_mor_config).
  static mor_config read_config(const std::string& dir) { return io::read_mor_config(dir, ""); }
  /// \brief Opens the checkpoint and validates every name and shape against `cfg`.
  static io::checkpoint open_checkpoint(const std::string& dir, const mor_config& cfg) {
    return io::open_mor_checkpoint(dir, cfg);
  }
  /// \brief Loads the parameters (load_mor_weights).
  template <class Backend, class T, class Block>
  static mor_weights<Backend, T> load_weights(const Backend& be, const io::checkpoint& ck, const mor_config& cfg) {
    return load_mor_weights<Backend, T, Block>(be, ck, cfg);
  }
  /// \brief Recursive KV sharing (`kv_sharing.enable`): recursions ≥ 1 read recursion 0's keys and values.
  static void configure(const mor_config& cfg, context_limits& lim) { lim.share_first_step = cfg.mor.kv_sharing; }
  /// \brief True for a config.json with a `mor` object, or whose architectures name
  /// MoRLlamaForCausalLM (the reference's output; its settings are in the run's YAML).
  static bool recognizes(const io::json& config) {
    if (!config.is_object()) return false;
    if (const io::json* m = config.find("mor"); m && m->is_object()) return true;
    if (const io::json* a = config.find("architectures"); a && a->is_array())
      for (std::size_t i = 0; i < a->size(); ++i)
        if ((*a)[i].is_string() && (*a)[i].as_string() == "MoRLlamaForCausalLM") return true;
    return false;
  }
};

}  // namespace family
}  // namespace muninn
