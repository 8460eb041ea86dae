#pragma once
/// \file
/// \brief `family::llama`: how a Hugging Face `LlamaForCausalLM` checkpoint is read — config.json,
/// tensor names, weight layout — so that a plain Llama stack runs on Muninn's layers.

#include <cstddef>
#include <string>

#include "muninn/families/llama/config.hpp"
#include "muninn/families/llama/names.hpp"
#include "muninn/families/llama/weights.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {
namespace family {

/// \brief Llama (transformers `LlamaForCausalLM`, Llama 1 to 3.x and their derivatives):
/// `model.{embed_tokens, layers.N, norm}` and `lm_head` names, separate q/k/v and gate/up
/// projections (fused on load), all layers in the prelude group, RoPE with default, `linear` or
/// `llama3` scaling. Implements the FamilyPolicy concept (policies/family.hpp).
struct llama {
  using slot = muninn::slot::family;             ///< fills the Family slot
  static constexpr const char* name = "llama";  ///< spelling in messages and `muninn info`
  using config_type = llama_config;              ///< sizes, RoPE scaling, biases
  /// \brief The layer stack alone.
  template <class Backend, class T>
  using weights_type = model_weights<Backend, T>;
  /// \brief Reads config.json as transformers 4.x or 5.x writes it (see io::llama_config_from_json).
  static llama_config read_config(const std::string& dir) { return io::read_llama_config(dir); }
  /// \brief Opens the safetensors files and validates every name and shape against `cfg`.
  static io::checkpoint open_checkpoint(const std::string& dir, const llama_config& cfg) {
    return io::open_llama_checkpoint(dir, cfg);
  }
  /// \brief Loads every parameter onto the backend (see load_llama_weights).
  template <class Backend, class T, class Block>
  static model_weights<Backend, T> load_weights(const Backend& be, const io::checkpoint& ck, const llama_config& cfg) {
    return load_llama_weights<Backend, T, Block>(be, ck, cfg);
  }
  /// \brief The same, showing each layer to `on_layer` as soon as it is read (ignore_layers).
  template <class Backend, class T, class Block, class OnLayer>
  static model_weights<Backend, T> load_weights(const Backend& be, const io::checkpoint& ck, const llama_config& cfg,
                                                OnLayer&& on_layer) {
    return load_llama_weights<Backend, T, Block>(be, ck, cfg, on_layer);
  }
  /// \brief True for config.json files of this family: `model_type` "llama" or an `architectures`
  /// entry "LlamaForCausalLM".
  static bool recognizes(const io::json& config) {
    if (!config.is_object()) return false;
    if (const io::json* t = config.find("model_type"); t && t->is_string() && t->as_string() == "llama") return true;
    if (const io::json* a = config.find("architectures"); a && a->is_array())
      for (std::size_t i = 0; i < a->size(); ++i)
        if ((*a)[i].is_string() && (*a)[i].as_string() == "LlamaForCausalLM") return true;
    return false;
  }
};

}  // namespace family
}  // namespace muninn
