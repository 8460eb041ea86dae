#pragma once
/// \file
/// \brief `family::huginn`: how a Huginn-0125 ("Raven") checkpoint is read — config.json, tensor
/// names, weight layout.

#include <string>

#include "muninn/core/config.hpp"
#include "muninn/families/huginn/config.hpp"
#include "muninn/families/huginn/names.hpp"
#include "muninn/families/huginn/weights.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {

/// \brief Checkpoint families: one type per released checkpoint layout (the "family" slot).
///
/// Concept FamilyPolicy: `slot` = slot::family, `name`; `static model_config read_config(const std::string& dir)`;
/// `static io::checkpoint open_checkpoint(const std::string& dir, const model_config&)` (names and
/// shapes validated); `template <class Backend, class T, class Block> static model_weights<Backend, T>
/// load_weights(const Backend&, const io::checkpoint&, const model_config&)`; and
/// `static bool recognizes(const io::json& config)` for dispatch on config.json.
namespace family {

/// \brief Huginn-0125: `transformer.{wte, prelude.i, adapter, core_block.j, coda.c, ln_f}` names,
/// fused Wqkv and gate;up weights, interleaved RoPE table (`freqs_cis`) when stored.
struct huginn {
  using slot = muninn::slot::family;              ///< fills the Family slot
  static constexpr const char* name = "huginn";  ///< spelling in messages and `muninn info`
  /// \brief Reads config.json (the released huginn-0125 config as is, plus Muninn's extensions).
  static model_config read_config(const std::string& dir) { return io::read_model_config(dir); }
  /// \brief Opens the safetensors files and validates every name and shape against `cfg`.
  static io::checkpoint open_checkpoint(const std::string& dir, const model_config& cfg) {
    return io::open_huginn_checkpoint(dir, cfg);
  }
  /// \brief Loads every parameter onto the backend.
  template <class Backend, class T, class Block>
  static model_weights<Backend, T> load_weights(const Backend& be, const io::checkpoint& ck, const model_config& cfg) {
    return load_huginn_weights<Backend, T, Block>(be, ck, cfg);
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
