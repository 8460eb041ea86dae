#pragma once
/// \file
/// \brief Mixture-of-Recursions settings from the reference's Hydra YAML (`conf/pretrain/*.yaml`),
/// parsed with yaml-cpp: the reference's HF Trainer output has a plain LlamaConfig and no MoR
/// fields, so the run's YAML is where its recursion and routing settings live.

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "muninn/core/error.hpp"
#include "muninn/families/mor/config.hpp"
#include "muninn/io/yaml.hpp"

namespace muninn::io {
namespace detail {

// `mor.capacity`: the reference's comma-joined string ("1.0,0.66,0.33"), a list, or absent.
inline std::vector<double> yaml_capacity(const YAML::Node& root, const std::string& path) {
  const YAML::Node n = yaml_at(root, "mor.capacity");
  std::vector<double> out;
  if (!n.IsDefined() || n.IsNull()) return out;
  std::vector<std::string> items;
  if (n.IsSequence()) {
    for (const auto& it : n) items.push_back(it.Scalar());
  } else {
    std::stringstream ss(n.Scalar());
    for (std::string s; std::getline(ss, s, ',');) items.push_back(s);
  }
  for (const auto& s : items) {
    try {
      std::size_t used = 0;
      out.push_back(std::stod(s, &used));
      MUNINN_CHECK(s.find_first_not_of(" \t", used) == std::string::npos, "");
    } catch (const std::exception&) {
      fail(path, ": field 'mor.capacity' holds '", s, "', not a number");
    }
  }
  return out;
}

}  // namespace detail

namespace detail {
inline mor_settings mor_settings_of(const YAML::Node& root, const std::string& path);
}  // namespace detail

/// \brief Reads `recursive.{enable, num_recursion, sharing}`, `mor.{enable, type, capacity,
/// router_type, temp}`, `mor.expert.{router_func, alpha}` or `mor.token.{router_func, alpha,
/// balancing}` and `kv_sharing.enable` from a Hydra YAML file.
/// \throws muninn::error naming the file and field for a missing, disabled or ill-typed setting
inline mor_settings mor_settings_from_yaml(const std::string& path) {
  const YAML::Node root = detail::load_yaml_file(path);
  try {
    return detail::mor_settings_of(root, path);
  } catch (const YAML::Exception& e) {  // a node of an unexpected kind deep inside
    fail(path, ": unexpected YAML structure: ", e.what());
  }
}

namespace detail {
inline mor_settings mor_settings_of(const YAML::Node& root, const std::string& path) {
  MUNINN_CHECK(root.IsMap(), path, ": a Hydra config must be a mapping");
  MUNINN_CHECK(detail::yaml_value<bool>(root, "recursive.enable", path, false), path,
               ": field 'recursive.enable' is not true: not a recursive model");
  MUNINN_CHECK(detail::yaml_value<bool>(root, "mor.enable", path, false), path,
               ": field 'mor.enable' is not true: not a Mixture-of-Recursions model");
  mor_settings m;
  m.recursions = detail::yaml_value<std::int64_t>(root, "recursive.num_recursion", path, 0);
  m.sharing = detail::yaml_value<std::string>(root, "recursive.sharing", path, m.sharing);
  m.type = detail::yaml_value<std::string>(root, "mor.type", path, m.type);
  m.router_type = detail::yaml_value<std::string>(root, "mor.router_type", path, m.router_type);
  m.temp = detail::mor_temp(detail::yaml_value<double>(root, "mor.temp", path, 1.0), path, "mor.temp");
  const std::string sub = m.type == "token" ? "mor.token." : "mor.expert.";
  const YAML::Node func = detail::yaml_at(root, sub + "router_func");
  m.router_func = func.IsDefined() && func.IsNull()  // the reference's None: the gate is the raw logit
                      ? "none"
                      : detail::yaml_value<std::string>(root, sub + "router_func", path,
                                                        m.type == "token" ? "softmax" : "sigmoid");
  m.alpha = detail::mor_alpha(detail::yaml_value<double>(root, sub + "alpha", path, m.type == "token" ? 1.0 : 0.1),
                              path, sub + "alpha");
  if (m.type == "token") m.router_bias = detail::yaml_value<std::string>(root, "mor.token.balancing", path, "loss") == "loss_free";
  if (m.type == "expert") m.capacity = detail::yaml_capacity(root, path);
  m.kv_sharing = detail::yaml_value<bool>(root, "kv_sharing.enable", path, false);
  check_mor_settings(m, path);
  return m;
}
}  // namespace detail

namespace detail {

inline bool is_yaml_name(const std::filesystem::path& p) {
  const std::string e = p.extension().string();
  return e == ".yaml" || e == ".yml";
}

// Whether a YAML file in a checkpoint's parent folder describes a Mixture-of-Recursions run: it
// parses and has a top-level `mor` mapping. A file that does not parse describes nothing here
// (the parent folder is not ours to validate); one that is refused for its size or kind neither.
inline bool describes_mor_run(const std::filesystem::path& p) {
  try {
    const YAML::Node root = load_yaml_file(p.string());
    return root.IsMap() && root["mor"].IsMap();
  } catch (const std::exception&) {
    return false;
  }
}

// How many entries of the parent folder are looked at: a run folder holds a few files; a folder of
// thousands is not a run's, and scanning it would cost more than the answer is worth.
inline constexpr std::size_t mor_parent_scan_limit = 4096;

// The parent folder's YAML files that describe a MoR run, sorted.
inline std::vector<std::string> mor_yamls_in(const std::filesystem::path& parent) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  std::error_code ec;
  fs::directory_iterator it(parent, ec), end;
  for (std::size_t seen = 0; !ec && it != end && seen < mor_parent_scan_limit; it.increment(ec), ++seen) {
    const fs::path p = it->path();
    if (is_yaml_name(p) && fs::is_regular_file(p, ec) && describes_mor_run(p)) found.push_back(p.string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The checkpoint folder as an absolute path without a trailing separator (so that its parent is
// the folder above it); a config.json path stands for its folder.
inline std::filesystem::path folder_path(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(fs::is_directory(dir, ec) ? fs::path(dir) : fs::path(dir).parent_path()).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

}  // namespace detail

/// \brief Every place looked for the YAML of the checkpoint folder `dir`, in order: the folder's
/// `mor.yaml` and `.hydra/config.yaml`, then one level up (where a training run leaves it, with
/// the checkpoint as a subfolder) `.hydra/config.yaml`, `<folder name>.yaml` / `.yml` and
/// `run.yaml`; last, any other YAML file up there with a top-level `mor` block.
inline std::vector<std::string> mor_yaml_places(const std::string& dir) {
  const std::filesystem::path here = detail::folder_path(dir), up = here.parent_path();
  const std::string name = here.filename().string();
  return {(here / "mor.yaml").string(),          (here / ".hydra" / "config.yaml").string(),
          (up / ".hydra" / "config.yaml").string(), (up / (name + ".yaml")).string(),
          (up / (name + ".yml")).string(),       (up / "run.yaml").string(),
          (up / "*.yaml").string() + " with a top-level 'mor' block"};
}

/// \brief The YAML that describes the checkpoint folder `dir` when its config.json has no `mor`
/// block, from the places of mor_yaml_places in their order; empty when none exists. Several
/// unnamed YAML files one level up that each describe a MoR run are one error listing them: which
/// of them trained this checkpoint cannot be told, and a guess would run it with wrong settings.
inline std::string mor_yaml_beside(const std::string& dir) {
  std::error_code ec;
  const std::vector<std::string> places = mor_yaml_places(dir);
  for (std::size_t i = 0; i + 1 < places.size(); ++i)
    if (std::filesystem::is_regular_file(places[i], ec)) return places[i];
  const std::vector<std::string> found = detail::mor_yamls_in(detail::folder_path(dir).parent_path());
  if (found.size() <= 1) return found.empty() ? "" : found.front();
  std::string list;
  for (const std::string& f : found) list += (list.empty() ? "" : ", ") + f;
  fail(dir, ": its config.json has no 'mor' block and several YAML files one level up describe a "
            "Mixture-of-Recursions run (", list, "); give this checkpoint's with --config FILE");
}

/// \brief A mor_config: config.json's Llama fields with the `mor` block, or — for the
/// reference's own output, whose config.json has none — the settings of `yaml` (or of the YAML
/// found beside the checkpoint). A `kv_sharing` block in config.json (the one MoR field the
/// reference writes there) must agree with them.
inline mor_config read_mor_config(const std::string& path_or_dir, const std::string& yaml) {
  const std::string path = config_json_path(path_or_dir);
  const json root = read_json_file(path);
  const bool has_block = root.is_object() && root.find("mor");
  const std::string y = !yaml.empty() ? yaml : has_block ? "" : mor_yaml_beside(path);
  if (y.empty()) {
    if (has_block) return mor_config_from_json(root, path);
    std::string looked;
    for (const std::string& p : mor_yaml_places(path))
      looked += (looked.empty() ? "" : ", ") + p;
    fail(path, ": no 'mor' block: not a Mixture-of-Recursions config, and no run YAML was found (looked at ",
         looked, "); give the run's Hydra YAML with --config FILE");
  }
  MUNINN_CHECK(!(has_block && !yaml.empty()), path, " has a 'mor' block and --config ", yaml,
               " was given too: use one of them");
  const mor_settings m = mor_settings_from_yaml(y);
  if (const json* kv = root.is_object() ? root.find("kv_sharing") : nullptr; kv && kv->is_object())
    if (const json* en = kv->find("enable"); en && en->is_bool())
      MUNINN_CHECK(en->as_bool() == m.kv_sharing, path, ": kv_sharing.enable = ", en->as_bool() ? "true" : "false",
                   " disagrees with ", y, " (kv_sharing.enable = ", m.kv_sharing ? "true" : "false", ")");
  return mor_config_with(root, path, m);
}

}  // namespace muninn::io
