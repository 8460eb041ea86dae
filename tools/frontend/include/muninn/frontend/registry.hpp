#pragma once
/// \file
/// \brief The family registry shared by every front end: a compile-time list of the families
/// this build runs, each with `recognizes(folder)`, and the one path from a folder the user named
/// to a loaded model — with the errors a newcomer needs (the folder is a file, no family
/// recognises it, an option does not apply to this family, this family runs under another command).
///
/// A front end calls open_model(path, op, options) and then the loaded_model's functions; it
/// never names a family. Adding a family = one struct declared here, one translation unit
/// defining it, one entry in `families`.

#include <memory>
#include <string>
#include <vector>

#include "muninn/frontend/model.hpp"
#include "muninn/frontend/options.hpp"

namespace muninn::io {
class json;
}

namespace muninn::frontend {

/// \brief What the user pointed at: a checkpoint folder (config.json, weights), a TRM / HRM run
/// folder (all_config.yaml, step_N) or a TRM step file, read once for every family's test.
struct model_folder {
  std::string path;       ///< as given
  std::string dir;        ///< the folder
  std::string step_file;  ///< a TRM / HRM checkpoint file named directly ("" otherwise)
  std::string config_path;  ///< dir/config.json
  std::shared_ptr<const io::json> config;  ///< parsed config.json; null when the folder has none
  bool trm_run = false;   ///< dir holds all_config.yaml
  std::string mor_yaml;   ///< a Mixture-of-Recursions YAML given with the model (option "config")

  /// \brief Opens `path` given as option `flag` of `op`: it must exist; a file is accepted only
  /// as a TRM step file (its folder holds all_config.yaml). Usage errors otherwise; a config.json
  /// that is not a JSON object is a config error.
  static model_folder open(const std::string& path, const std::string& flag, const std::string& mor_yaml = "");
};

/// \brief One family as the registry knows it at run time.
struct family_entry {
  const char* name;     ///< "huginn"
  const char* display;  ///< "Huginn"
  const char* what;     ///< "a recurrent-depth transformer (Huginn-0125)"
  bool (*recognizes)(const model_folder&);
  std::unique_ptr<loaded_model> (*load)(const model_folder&, const option_values&);
  /// "" when the family runs `op`; otherwise one line saying which command does.
  std::string (*redirect)(operation op);
};

// ---- the families (each defined in src/<family>.cpp)

/// \brief Huginn-0125 (Raven): prelude, recurrent core with injection, coda; early exit.
struct huginn_family {
  static constexpr const char* name = "huginn";
  static constexpr const char* display = "Huginn";
  static constexpr const char* what = "a recurrent-depth transformer (Huginn-0125 / Raven)";
  static bool recognizes(const model_folder& f);
  static std::unique_ptr<loaded_model> load(const model_folder& f, const option_values& o);
  static std::string redirect(operation op);
};

/// \brief Hugging Face LlamaForCausalLM.
struct llama_family {
  static constexpr const char* name = "llama";
  static constexpr const char* display = "Llama";
  static constexpr const char* what = "a plain transformer (LlamaForCausalLM)";
  static bool recognizes(const model_folder& f);
  static std::unique_ptr<loaded_model> load(const model_folder& f, const option_values& o);
  static std::string redirect(operation op);
};

/// \brief Mixture-of-Recursions on a Llama (the reference's MoRLlamaForCausalLM).
struct mor_family {
  static constexpr const char* name = "mor";
  static constexpr const char* display = "Mixture-of-Recursions";
  static constexpr const char* what = "a routed-depth transformer (Mixture-of-Recursions)";
  static bool recognizes(const model_folder& f);
  static std::unique_ptr<loaded_model> load(const model_folder& f, const option_values& o);
  static std::string redirect(operation op);
};

/// \brief CALM: K tokens per step through an energy head and a chunk autoencoder.
struct calm_family {
  static constexpr const char* name = "calm";
  static constexpr const char* display = "CALM";
  static constexpr const char* what = "a continuous autoregressive model (CALM, energy head)";
  static bool recognizes(const model_folder& f);
  static std::unique_ptr<loaded_model> load(const model_folder& f, const option_values& o);
  static std::string redirect(operation op);
};

/// \brief TRM / HRM: recursive puzzle reasoners with learned halting.
struct trm_family {
  static constexpr const char* name = "trm";
  static constexpr const char* display = "TRM";
  static constexpr const char* what = "a recursive puzzle reasoner (TRM / HRM run folder)";
  static bool recognizes(const model_folder& f);
  static std::unique_ptr<loaded_model> load(const model_folder& f, const option_values& o);
  static std::string redirect(operation op);
};

/// \brief A compile-time list of families.
template <class... F>
struct family_list {};

/// \brief The families this build runs, in the order they are tried (Mixture-of-Recursions
/// before Llama: its config.json is a Llama config with a mor block).
using families = family_list<mor_family, llama_family, huginn_family, calm_family, trm_family>;

/// \brief The run-time table of `families`, in order.
const std::vector<family_entry>& family_table();

/// \brief "Huginn, Llama, Mixture-of-Recursions, CALM and TRM" and what each folder holds.
std::string supported_families();

/// \brief The family that recognises `f`; a config error naming what was found otherwise.
const family_entry& identify(const model_folder& f);

/// \brief Usage errors for options `o` that `family` does not take under `o.op()`
/// ("--exit applies to Huginn checkpoints; this is a Llama checkpoint") and for an operation it
/// does not run (its redirect line).
void check_applicable(const family_entry& family, const option_values& o);

/// \brief The family entry of a loaded model (by its info().family).
const family_entry& family_of(const loaded_model& m);

/// \brief What open_model checks before loading, for a call on a model loaded once (a Python
/// module, a server): every given value against its table entry, then check_applicable for the
/// model's family. Usage errors.
void check_call(const loaded_model& m, const option_values& o);

/// \brief Opens, identifies, checks and loads: what a front end calls. Errors while reading a
/// config are error_kind::config, while reading weights error_kind::checkpoint.
std::unique_ptr<loaded_model> open_model(const std::string& path, const option_values& o,
                                         const std::string& flag = "--model");

/// \brief Runs `f`; a muninn::error of kind runtime that escapes is re-thrown as `kind`.
template <class F>
decltype(auto) as_kind(error_kind kind, F&& f) {
  try {
    return f();
  } catch (const error& e) {
    if (e.kind() != error_kind::runtime) throw;
    throw error(e.what(), kind);
  }
}

}  // namespace muninn::frontend
