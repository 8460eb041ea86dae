#pragma once
/// \file
/// \brief Finding and validating the files of a TRM / HRM run: the newest `step_N` checkpoint,
/// the `all_config.yaml` beside it, and the dataset metadata that holds the sizes the YAML lacks.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/trm/config.hpp"
#include "muninn/families/trm/names.hpp"
#include "muninn/io/safetensors.hpp"

namespace muninn {

/// \brief How open_trm finds what the checkpoint folder does not say.
struct trm_load_options {
  /// A dataset folder (holding `train/`, or a split folder holding `dataset.json`) to take the
  /// sizes from when the YAML's data path cannot be found.
  std::string data_dir;
  /// The sizes, given explicitly (they win over every file).
  std::optional<trm_sizes> sizes;
};

namespace io {

/// \brief The opened, validated files of a TRM / HRM run.
struct trm_files {
  trm_config config;    ///< the resolved settings (YAML + class defaults + sizes)
  checkpoint weights;   ///< the step file, names without the key prefix
  std::string prefix;   ///< the key prefix the file used
  std::string step_file;  ///< the checkpoint file
};

namespace detail {

// N of a file named step_N, or -1.
inline std::int64_t trm_step_number(const std::string& name) {
  if (name.rfind("step_", 0) != 0 || name.size() == 5 || name.size() > 5 + 18) return -1;
  std::int64_t n = 0;
  for (std::size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

// The dataset.json candidates for the sizes, in the order they are tried.
inline std::vector<std::filesystem::path> trm_dataset_json_candidates(const std::filesystem::path& folder,
                                                                      const std::vector<std::string>& data_paths,
                                                                      const std::string& data_dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  for (const std::string& dp : data_paths) {
    if (fs::path(dp).is_absolute()) {
      out.push_back(fs::path(dp) / "train" / "dataset.json");
      continue;
    }
    std::error_code ec;
    fs::path base = fs::absolute(folder, ec);
    for (int up = 0; up < 64 && !base.empty(); ++up) {
      out.push_back(base / dp / "train" / "dataset.json");
      if (base == base.parent_path()) break;
      base = base.parent_path();
    }
  }
  if (!data_dir.empty()) {
    const fs::path d(data_dir);
    out.push_back(d / "train" / "dataset.json");
    out.push_back(d.parent_path() / "train" / "dataset.json");  // a split folder was given
    out.push_back(d / "dataset.json");
  }
  return out;
}

// Layers stored for `level` (one past the largest index seen), to name a mismatch in one line.
inline std::int64_t trm_stored_layers(const checkpoint& ck, const std::string& level) {
  const std::string p = level + ".layers.";
  std::int64_t n = 0;
  for (const tensor_info& t : ck.tensors()) {
    if (t.name.rfind(p, 0) != 0) continue;
    std::int64_t i = 0;
    std::size_t k = p.size();
    for (; k < t.name.size() && t.name[k] >= '0' && t.name[k] <= '9' && i < (1 << 20); ++k) i = i * 10 + (t.name[k] - '0');
    if (k > p.size()) n = std::max(n, i + 1);
  }
  return n;
}

}  // namespace detail

/// \brief The checkpoint file of `path`: the file itself, or in a folder the `step_N` with the
/// largest N.
/// \throws muninn::error when the path does not exist or a folder holds no step_N file
inline std::string find_trm_step_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("model path '", path, "' does not exist");
  if (!fs::is_directory(path, ec)) return path;
  std::string best;
  std::int64_t best_n = -1;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const std::int64_t n = detail::trm_step_number(e.path().filename().string());
    if (n > best_n && e.is_regular_file(ec)) best_n = n, best = e.path().string();
  }
  MUNINN_CHECK(best_n >= 0, "no checkpoint in '", path, "': looked for files named step_N");
  return best;
}

/// \brief Opens a TRM / HRM run: the newest step_N of a folder (or the file given), the
/// `all_config.yaml` beside it, and the sizes (options, else a `config.json` beside it, else the
/// YAML's dataset `train/dataset.json` searched from the folder up through its parents, else
/// `options.data_dir`); strips the key prefix and checks every tensor name and shape.
/// \throws muninn::error naming the file and the value: no YAML, no sizes, layer counts that
///         disagree with the YAML, a missing, misshapen or unexpected tensor
inline trm_files open_trm(const std::string& path, const trm_load_options& options = {}) {
  namespace fs = std::filesystem;
  trm_files f;
  f.step_file = find_trm_step_file(path);
  const fs::path folder = fs::path(f.step_file).parent_path().empty() ? fs::path(".") : fs::path(f.step_file).parent_path();
  const fs::path yaml = folder / "all_config.yaml";
  std::error_code ec;
  MUNINN_CHECK(fs::is_regular_file(yaml, ec), "no all_config.yaml beside '", f.step_file,
               "': the run's config is needed for the model's settings");
  f.config = trm_arch_from_yaml(yaml.string());
  if (options.sizes) {
    set_trm_sizes(f.config, *options.sizes, "the sizes given");
  } else if (fs::is_regular_file(folder / "config.json", ec)) {
    set_trm_sizes(f.config, trm_sizes_from_config_json((folder / "config.json").string()),
                  (folder / "config.json").string());
  } else {
    const std::vector<std::string> dps = trm_data_paths_from_yaml(yaml.string());
    const auto cands = detail::trm_dataset_json_candidates(folder, dps, options.data_dir);
    std::string found;
    for (const fs::path& c : cands)
      if (fs::is_regular_file(c, ec)) {
        found = c.string();
        break;
      }
    if (found.empty()) {
      std::string names;
      for (const std::string& d : dps) names += (names.empty() ? "'" : ", '") + d + "'";
      fail(yaml.string(), ": the dataset ", names.empty() ? std::string("(no data_paths / data_path)") : names,
           " has no train/dataset.json under '", folder.string(), "' or its parents",
           options.data_dir.empty() ? "" : (" nor in '" + options.data_dir + "'"),
           "; seq_len, vocab_size and num_puzzle_identifiers come from it (or from a config.json beside the checkpoint)");
    }
    set_trm_sizes(f.config, trm_sizes_from_dataset_json(found), found);
  }
  f.weights = checkpoint::open(f.step_file);
  for (const char* p : trm_key_prefixes)
    if (f.weights.has(std::string(p) + "H_init")) {
      f.prefix = p;
      break;
    }
  MUNINN_CHECK(!f.prefix.empty(), f.step_file, ": no tensor '", trm_key_prefixes[0], "H_init' or '", trm_key_prefixes[1],
               "H_init': not a TRM / HRM checkpoint");
  f.weights.strip_prefix(f.prefix);
  const trm_config& c = f.config;
  const auto check_layers = [&](const char* level, const char* key, std::int64_t want) {
    const std::int64_t have = detail::trm_stored_layers(f.weights, level);
    MUNINN_CHECK(have == want, f.step_file, ": holds ", have, " layers of ", level, " but ", c.source, " says ", key,
                 " ", want);
  };
  check_layers("L_level", "L_layers", c.L_layers);
  if (c.arch == trm_arch::hrm) check_layers("H_level", "H_layers", c.H_layers);
  MUNINN_CHECK(c.arch == trm_arch::hrm || !f.weights.has("H_level.layers.0.mlp.down_proj.weight"), f.step_file,
               ": holds an H_level (an HRM checkpoint) but ", c.source, " names a TRM model");
  validate_tensor_specs(f.weights, trm_tensor_specs(c), c.source, trm_arch_name(c.arch));
  f.config.fill_stack_sizes();
  return f;
}

}  // namespace io
}  // namespace muninn
