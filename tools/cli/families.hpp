#pragma once
// Which compiled model runs a checkpoint: config.json names the family (model_type /
// architectures) and, for Huginn, the block and injection; each supported combination is one
// instantiation of model<Backend, T, Arch>. A checkpoint outside this list gets one error line
// that says what was found and what this build runs.

#include <filesystem>
#include <string>
#include <utility>

#include "muninn/families/llama/arch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/io/json.hpp"
#include "muninn/muninn.hpp"

namespace muninn::cli {

/// \brief The model combinations this CLI is compiled for.
enum class model_kind {
  huginn,          ///< sandwich blocks, concat adapter (huginn-0125)
  huginn_add,      ///< sandwich blocks, additive injection
  huginn_prenorm,  ///< pre-norm blocks, concat adapter
  huginn_prenorm_add,  ///< pre-norm blocks, additive injection
  llama,           ///< Hugging Face LlamaForCausalLM
  mor_expert,      ///< Mixture-of-Recursions, expert-choice routers
  mor_token,       ///< Mixture-of-Recursions, token-choice router
};

/// \brief The Huginn combinations: early exit compiled in (the criterion is a flag).
using huginn_cli_arch = huginn_adaptive_arch;
using huginn_add_cli_arch = huginn_adaptive_arch::with<injection::add>;                          ///< tiny_add
using huginn_prenorm_cli_arch = huginn_adaptive_arch::with<block::pre_norm>;                     ///< pre-norm + adapter
using huginn_prenorm_add_cli_arch = huginn_adaptive_arch::with<block::pre_norm, injection::add>;  ///< tiny_prenorm_gqa

/// \brief What the CLI supports, for the error line.
inline constexpr const char* supported_models =
    "huginn_raven / RavenForCausalLM (block_type sandwich or pre_norm, injection_type linear or add), "
    "llama / LlamaForCausalLM and Mixture-of-Recursions (a Llama config.json with a mor block)";

namespace detail {
inline std::string string_field(const io::json& cfg, const char* key, const std::string& fallback) {
  const io::json* v = cfg.find(key);
  return v && v->is_string() ? v->as_string() : fallback;
}
inline std::string architectures(const io::json& cfg) {
  const io::json* a = cfg.find("architectures");
  if (!a || !a->is_array()) return "none";
  std::string s;
  for (std::size_t i = 0; i < a->size(); ++i) s += (i ? "," : "") + ((*a)[i].is_string() ? (*a)[i].as_string() : "?");
  return s;
}
inline model_kind huginn_kind(const io::json& cfg, const std::string& path) {
  const std::string block = string_field(cfg, "block_type", "sandwich"), inj = string_field(cfg, "injection_type", "linear");
  const bool pre = block == "pre_norm", add = inj == "add";
  MUNINN_CHECK((block == "sandwich" || pre) && (inj == "linear" || add), path, ": huginn_raven with block_type '",
               block, "' and injection_type '", inj, "' is not supported; this build runs ", supported_models);
  return pre ? (add ? model_kind::huginn_prenorm_add : model_kind::huginn_prenorm)
             : (add ? model_kind::huginn_add : model_kind::huginn);
}
}  // namespace detail

/// \brief Reads `dir`/config.json (and for Mixture-of-Recursions the YAML `yaml`, or the one
/// beside the checkpoint, when config.json has no mor block) and says which combination runs it.
inline model_kind detect_model(const std::string& dir, const std::string& yaml = "") {
  const std::string path = io::config_json_path(dir);
  MUNINN_CHECK(std::filesystem::exists(path), path, " does not exist (a checkpoint directory holds config.json)");
  const io::json cfg = io::read_json_file(path);
  MUNINN_CHECK(cfg.is_object(), path, ": config must be a JSON object");
  if (family::mor::recognizes(cfg) || !yaml.empty())  // a Llama config with MoR settings: before plain Llama
    return io::read_mor_config(dir, yaml).mor.type == "token" ? model_kind::mor_token : model_kind::mor_expert;
  if (family::llama::recognizes(cfg)) return model_kind::llama;
  if (family::huginn::recognizes(cfg)) return detail::huginn_kind(cfg, path);
  fail(path, ": model_type '", detail::string_field(cfg, "model_type", "none"), "' (architectures ",
       detail::architectures(cfg), ") is not supported; this build runs ", supported_models);
}

/// \brief Whether a combination is a Mixture-of-Recursions model.
inline bool is_mor(model_kind k) { return k == model_kind::mor_expert || k == model_kind::mor_token; }

/// \brief The family name of a combination ("huginn", "llama" or "mor").
inline const char* family_name(model_kind k) {
  return k == model_kind::llama ? "llama" : is_mor(k) ? "mor" : "huginn";
}

/// \brief The config of the checkpoint at `dir`, read as its family reads it (`yaml`: see detect_model).
inline model_config read_config_of(model_kind k, const std::string& dir, const std::string& yaml = "") {
  if (k == model_kind::llama) return family::llama::read_config(dir);
  if (is_mor(k)) return io::read_mor_config(dir, yaml);
  return family::huginn::read_config(dir);
}

/// \brief Loads the checkpoint at `dir` as the model type `kind` (detect_model of its config.json)
/// and returns `f(model)`.
template <class Backend, class T, class F>
decltype(auto) with_model(model_kind kind, const std::string& dir, const Backend& be, F&& f, const std::string& yaml = "") {
  const auto mor_model = [&](auto arch) {
    using M = model<Backend, T, decltype(arch)>;
    const model_config cfg = io::read_mor_config(dir, yaml);
    return M(be, cfg, io::open_mor_checkpoint(dir, cfg));
  };
  switch (kind) {
    case model_kind::llama: return f(model<Backend, T, llama_arch>::load(dir, be));
    case model_kind::mor_expert: return f(mor_model(mor_expert_arch{}));
    case model_kind::mor_token: return f(mor_model(mor_token_arch{}));
    case model_kind::huginn_add: return f(model<Backend, T, huginn_add_cli_arch>::load(dir, be));
    case model_kind::huginn_prenorm: return f(model<Backend, T, huginn_prenorm_cli_arch>::load(dir, be));
    case model_kind::huginn_prenorm_add: return f(model<Backend, T, huginn_prenorm_add_cli_arch>::load(dir, be));
    case model_kind::huginn: break;
  }
  return f(model<Backend, T, huginn_cli_arch>::load(dir, be));
}

}  // namespace muninn::cli
