#pragma once
/// \file
/// \brief `family::huginn`: how a Huginn-0125 ("Raven") checkpoint is read — config.json, tensor
/// names, weight layout.

#include <string>
#include <type_traits>

#include "muninn/core/error.hpp"
#include "muninn/families/huginn/config.hpp"
#include "muninn/families/huginn/names.hpp"
#include "muninn/families/huginn/weights.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/policies/block.hpp"
#include "muninn/policies/detect.hpp"
#include "muninn/policies/injection.hpp"

namespace muninn {

/// \brief Checkpoint families: one type per released checkpoint layout (the "family" slot). The
/// FamilyPolicy concept is described in policies/family.hpp.
namespace family {

/// \brief Huginn-0125: `transformer.{wte, prelude.i, adapter, core_block.j, coda.c, ln_f}` names,
/// fused Wqkv and gate;up weights, interleaved RoPE table (`freqs_cis`) when stored.
struct huginn {
  using slot = muninn::slot::family;              ///< fills the Family slot
  static constexpr const char* name = "huginn";  ///< spelling in messages and `muninn info`
  using config_type = huginn_config;              ///< sizes, injection and block type
  /// \brief The stack's weights and the concat adapter.
  template <class Backend, class T>
  using weights_type = huginn_weights<Backend, T>;
  /// \brief Reads config.json (the released huginn-0125 config as is, plus Muninn's extensions).
  static huginn_config read_config(const std::string& dir) { return io::read_model_config(dir); }
  /// \brief Opens the safetensors files and validates every name and shape against `cfg`.
  static io::checkpoint open_checkpoint(const std::string& dir, const huginn_config& cfg) {
    return io::open_huginn_checkpoint(dir, cfg);
  }
  /// \brief Loads every parameter onto the backend.
  template <class Backend, class T, class Block>
  static huginn_weights<Backend, T> load_weights(const Backend& be, const io::checkpoint& ck, const huginn_config& cfg) {
    return load_huginn_weights<Backend, T, Block>(be, ck, cfg);
  }
  /// \brief The same, showing each layer to `on_layer` as soon as it is read (ignore_layers).
  template <class Backend, class T, class Block, class OnLayer>
  static huginn_weights<Backend, T> load_weights(const Backend& be, const io::checkpoint& ck, const huginn_config& cfg,
                                                 OnLayer&& on_layer) {
    return load_huginn_weights<Backend, T, Block>(be, ck, cfg, on_layer);
  }
  /// \brief The config names the block and injection of a Huginn checkpoint; they must be the
  /// ones the Arch compiled in (injection only matters where a state recurs), or either Huginn
  /// block / injection where the Arch chooses from the config (block::from_config,
  /// injection::from_config).
  template <class Arch>
  static void check(const huginn_config& cfg) {
    using injection = typename Arch::injection_policy;
    using block = typename Arch::block_policy;
    const bool injection_ok = std::is_same_v<injection, muninn::injection::from_config>
                                  ? cfg.injection_type == muninn::injection::concat_linear::config_name ||
                                        cfg.injection_type == muninn::injection::add::config_name
                                  : cfg.injection_type == injection::config_name;
    MUNINN_CHECK(!Arch::sharing_policy::recurrent || injection_ok, cfg.source, ": config injection_type \"",
                 cfg.injection_type, "\" does not match the compiled injection policy ", injection::name,
                 " (which reads \"", injection::config_name, "\")");
    const bool block_ok = std::is_same_v<block, muninn::block::from_config>
                              ? cfg.block_type == muninn::block::sandwich::name ||
                                    cfg.block_type == muninn::block::pre_norm::name
                              : cfg.block_type == block::name;
    MUNINN_CHECK(block_ok, cfg.source, ": config block_type \"", cfg.block_type,
                 "\" does not match the compiled block policy block::", block::name);
    MUNINN_CHECK(!cfg.bias, cfg.source, ": Linear biases (\"bias\": true) are not supported by the Huginn layout");
  }
  /// \brief True for config.json files of this family: `model_type` "huginn_raven" or an
  /// `architectures` entry "RavenForCausalLM".
  static bool recognizes(const io::json& config) {
    if (const io::json* t = config.find("model_type"); t && t->is_string() && t->as_string() == "huginn_raven")
      return true;
    if (const io::json* a = config.find("architectures"); a && a->is_array())
      for (std::size_t i = 0; i < a->size(); ++i)
        if ((*a)[i].is_string() && (*a)[i].as_string() == "RavenForCausalLM") return true;
    return false;
  }
};

}  // namespace family
}  // namespace muninn
