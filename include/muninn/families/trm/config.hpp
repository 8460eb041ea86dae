#pragma once
/// \file
/// \brief The settings of a TRM (Tiny Recursive Model) or HRM (Hierarchical Reasoning Model) run:
/// the `arch` block of the run's `all_config.yaml` with the reference classes' defaults for the
/// keys it lacks, and the sizes the YAML never holds (`seq_len`, `vocab_size`,
/// `num_puzzle_identifiers`) from the dataset's `train/dataset.json`.
///
/// The training script dumps only the model keys its arch YAML (or command line) set, so what is
/// absent takes the pydantic class default — which differs between the two: upstream HRM's arch
/// YAML names no `forward_dtype`, and its class default is bfloat16.

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "muninn/core/config.hpp"
#include "muninn/core/error.hpp"
#include "muninn/families/trm/puzzle_dataset.hpp"
#include "muninn/io/checked.hpp"
#include "muninn/io/config_json.hpp"
#include "muninn/io/float_setting.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/yaml.hpp"

namespace muninn {

/// \brief Which of the two recursive reasoners.
enum class trm_arch {
  trm,  ///< Tiny Recursive Model: one net for both updates
  hrm   ///< Hierarchical Reasoning Model: an L net and an H net
};

/// \brief The Q-halt rule of the reference's training loop (used for learned halting at inference).
enum class trm_halt_rule {
  q_halt_positive,      ///< q_halt > 0 (TRM with no_ACT_continue)
  q_halt_over_continue  ///< q_halt > q_continue (HRM; TRM with no_ACT_continue false)
};

/// \brief A TRM / HRM model's settings, named as in the reference's config classes.
///
/// It is also the FamilyPolicy's config of `trm_arch`: the model_config fields (the layer stack's
/// sizes: the core is the L net, the coda HRM's H net) are derived from these by
/// `fill_stack_sizes`, which io::open_trm calls. `vocab_size` and `source` are model_config's.
struct trm_config : model_config {
  trm_arch arch = trm_arch::trm;       ///< from `arch.name`
  std::int64_t seq_len = 0;            ///< grid tokens (dataset.json)
  std::int64_t num_puzzle_identifiers = 0;  ///< rows of the puzzle table (dataset.json)
  std::int64_t hidden_size = 0;        ///< D
  std::int64_t num_heads = 0;          ///< attention heads (key/value heads are the same)
  double expansion = 0;                ///< SwiGLU expansion e
  std::int64_t H_cycles = 0;           ///< T: outer cycles per supervision step
  std::int64_t L_cycles = 0;           ///< n: z_L updates per outer cycle
  std::int64_t H_layers = 0;           ///< HRM: layers of the H net (TRM: ignored)
  std::int64_t L_layers = 0;           ///< layers of the (L) net
  std::int64_t puzzle_emb_ndim = 0;    ///< width of a puzzle-table row
  std::string pos_encodings = "rope";  ///< rope | learned | none (TRM only)
  float rms_norm_eps = 1e-5f;          ///< RMSNorm epsilon
  float rope_theta = 10000.0f;         ///< RoPE base
  std::int64_t halt_max_steps = 16;    ///< N_sup of the reference's evaluation
  double halt_exploration_prob = 0.1;  ///< training only; kept for information
  std::string forward_dtype = "bfloat16";  ///< the dtype the reference computes in
  bool mlp_t = false;                  ///< TRM: the token-mixing variant instead of attention
  std::int64_t puzzle_emb_len = 16;    ///< TRM: prefix positions (0: ceil(ndim / D))
  bool no_ACT_continue = true;         ///< TRM: halt on q_halt > 0 alone
  std::string sizes_source;            ///< the file the sizes came from (or "given")

  /// \brief D / num_heads (model_config::head_dim once fill_stack_sizes ran).
  std::int64_t head_width() const { return hidden_size / num_heads; }
  /// \brief Puzzle-embedding positions in front of the grid: TRM's puzzle_emb_len unless 0, else
  /// (and always for HRM) ceil(puzzle_emb_ndim / D).
  std::int64_t prefix_len() const {
    const std::int64_t ceil = (puzzle_emb_ndim + hidden_size - 1) / hidden_size;
    return arch == trm_arch::trm && puzzle_emb_len != 0 ? puzzle_emb_len : ceil;
  }
  /// \brief S = seq_len + prefix_len.
  std::int64_t total_len() const { return seq_len + prefix_len(); }
  /// \brief The reference's SwiGLU width for input width h: ceil_256(round(e·h·2/3)).
  std::int64_t swiglu_inter(std::int64_t h) const {
    const auto n = std::int64_t(std::nearbyint(expansion * double(h) * 2.0 / 3.0));
    return (n + 255) / 256 * 256;
  }
  /// \brief The Q-halt rule.
  trm_halt_rule halt_rule() const {
    return arch == trm_arch::trm && no_ACT_continue ? trm_halt_rule::q_halt_positive
                                                    : trm_halt_rule::q_halt_over_continue;
  }
  /// \brief Net calls per supervision step: H_cycles · (L_cycles + 1).
  std::int64_t net_calls_per_step() const { return H_cycles * (L_cycles + 1); }
  /// \brief Sets the model_config fields from the TRM settings: hidden size, heads (key/value
  /// heads the same), the feature SwiGLU width, the L net as the core and HRM's H net as the coda,
  /// the RMSNorm epsilon and RoPE base, S as the block size, an untied head.
  void fill_stack_sizes() {
    model_type = arch == trm_arch::hrm ? "hrm" : "trm";
    n_embd = hidden_size;
    n_heads = n_kv_heads = num_heads;
    head_dim = num_heads > 0 ? head_width() : 0;
    intermediate_size = swiglu_inter(hidden_size);
    n_layers_in_prelude = 0;
    n_layers_in_recurrent_block = L_layers;
    n_layers_in_coda = arch == trm_arch::hrm ? H_layers : 0;
    mean_recurrence = H_cycles;
    block_size = total_len();
    norm_eps = rms_norm_eps;
    rope_base = rope_theta;
    qk_bias = false;
    tie_embeddings = false;
  }
};

/// \brief "trm" or "hrm".
inline const char* trm_arch_name(trm_arch a) { return a == trm_arch::trm ? "trm" : "hrm"; }

/// \brief The rule in words: "q_halt > 0" or "q_halt > q_continue".
inline const char* trm_halt_rule_name(trm_halt_rule r) {
  return r == trm_halt_rule::q_halt_positive ? "q_halt > 0" : "q_halt > q_continue";
}

/// \brief The sizes a TRM / HRM config takes from the dataset.
struct trm_sizes {
  std::int64_t seq_len = 0;                 ///< tokens per example
  std::int64_t vocab_size = 0;              ///< tokens
  std::int64_t num_puzzle_identifiers = 0;  ///< rows of the puzzle table
};

namespace io {
namespace detail {

// A required arch key: the reference's config classes have no default for it.
template <class V>
V yaml_required(const YAML::Node& root, const std::string& key, const std::string& path) {
  const YAML::Node n = yaml_at(root, key);
  MUNINN_CHECK(n.IsDefined() && !n.IsNull(), path, ": missing field '", key,
               "' (the reference's model config has no default for it)");
  return yaml_value<V>(root, key, path, V{});
}

inline void check_trm_config(const trm_config& c, const std::string& path) {
  using L = load_limits;
  const auto in = [&](const char* key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    MUNINN_CHECK(v >= lo && v <= hi, path, ": field '", key, "' is ", v, ", outside [", lo, ", ", hi, "]");
  };
  in("hidden_size", c.hidden_size, 1, L::max_width);
  in("num_heads", c.num_heads, 1, c.hidden_size);
  MUNINN_CHECK(c.hidden_size % c.num_heads == 0, path, ": hidden_size ", c.hidden_size,
               " is not a multiple of num_heads ", c.num_heads);
  MUNINN_CHECK(c.pos_encodings != "rope" || c.head_width() % 2 == 0, path, ": RoPE needs an even head_dim, got ",
               c.head_width());
  float_setting(c.expansion, 0, 64, true, path, "arch.expansion");
  in("H_cycles", c.H_cycles, 1, 1 << 16);
  in("L_cycles", c.L_cycles, 1, 1 << 16);
  in("L_layers", c.L_layers, 1, L::max_layers);
  if (c.arch == trm_arch::hrm) in("H_layers", c.H_layers, 1, L::max_layers);
  MUNINN_CHECK(c.puzzle_emb_ndim > 0, path, ": puzzle_emb_ndim is ", c.puzzle_emb_ndim,
               "; a model without a puzzle embedding is not supported");
  in("puzzle_emb_ndim", c.puzzle_emb_ndim, 1, L::max_width);
  in("puzzle_emb_len", c.puzzle_emb_len, 0, 4096);
  MUNINN_CHECK(c.puzzle_emb_ndim <= c.prefix_len() * c.hidden_size, path, ": puzzle_emb_ndim ", c.puzzle_emb_ndim,
               " does not fit in ", c.prefix_len(), " prefix positions of hidden_size ", c.hidden_size);
  in("halt_max_steps", c.halt_max_steps, 1, 1 << 20);
  MUNINN_CHECK(c.pos_encodings == "rope" || c.pos_encodings == "learned" ||
                   (c.pos_encodings == "none" && c.arch == trm_arch::trm),
               path, ": pos_encodings '", c.pos_encodings, "' (TRM: rope, learned or none; HRM: rope or learned)");
  MUNINN_CHECK(c.forward_dtype == "float32" || c.forward_dtype == "bfloat16", path, ": forward_dtype '",
               c.forward_dtype, "' (float32 or bfloat16)");
  MUNINN_CHECK(!(c.mlp_t && c.arch == trm_arch::hrm), path, ": HRM has no mlp_t variant");
}

}  // namespace detail

/// \brief The `arch` block of a run's all_config.yaml with the class defaults of the reference
/// named by `arch.name` (HRM: ...Hierarchical...; anything else TRM). The sizes stay 0.
/// \throws muninn::error naming the file and field for a missing required key, a value of the
///         wrong type or out of range, or an unsupported setting
inline trm_config trm_arch_from_yaml(const std::string& path) {
  const YAML::Node root = detail::load_yaml_file(path);
  try {
    const YAML::Node arch = detail::yaml_at(root, "arch");
    MUNINN_CHECK(root.IsMap() && arch.IsDefined() && arch.IsMap(), path,
                 ": no 'arch' block (not a TRM / HRM all_config.yaml)");
    trm_config c;
    c.source = path;
    const std::string name = detail::yaml_required<std::string>(root, "arch.name", path);
    c.arch = name.find("Hierarchical") != std::string::npos || name.rfind("hrm.", 0) == 0 ? trm_arch::hrm
                                                                                            : trm_arch::trm;
    c.H_cycles = detail::yaml_required<std::int64_t>(root, "arch.H_cycles", path);
    c.L_cycles = detail::yaml_required<std::int64_t>(root, "arch.L_cycles", path);
    c.L_layers = detail::yaml_required<std::int64_t>(root, "arch.L_layers", path);
    c.H_layers = c.arch == trm_arch::hrm ? detail::yaml_required<std::int64_t>(root, "arch.H_layers", path)
                                         : detail::yaml_value<std::int64_t>(root, "arch.H_layers", path, 0);
    c.hidden_size = detail::yaml_required<std::int64_t>(root, "arch.hidden_size", path);
    c.num_heads = detail::yaml_required<std::int64_t>(root, "arch.num_heads", path);
    c.expansion = detail::yaml_required<double>(root, "arch.expansion", path);
    c.pos_encodings = detail::yaml_required<std::string>(root, "arch.pos_encodings", path);
    c.halt_max_steps = detail::yaml_required<std::int64_t>(root, "arch.halt_max_steps", path);
    c.halt_exploration_prob = float_setting(detail::yaml_value<double>(root, "arch.halt_exploration_prob", path, 0.1),
                                            0, 1, false, path, "arch.halt_exploration_prob");
    c.puzzle_emb_ndim = detail::yaml_value<std::int64_t>(root, "arch.puzzle_emb_ndim", path, 0);
    c.rms_norm_eps = positive_float_setting(detail::yaml_value<double>(root, "arch.rms_norm_eps", path, 1e-5), path,
                                            "arch.rms_norm_eps");
    c.rope_theta = positive_float_setting(detail::yaml_value<double>(root, "arch.rope_theta", path, 10000.0), path,
                                          "arch.rope_theta");
    c.forward_dtype = detail::yaml_value<std::string>(root, "arch.forward_dtype", path, "bfloat16");
    if (c.arch == trm_arch::trm) {
      c.mlp_t = detail::yaml_value<bool>(root, "arch.mlp_t", path, false);
      c.puzzle_emb_len = detail::yaml_value<std::int64_t>(root, "arch.puzzle_emb_len", path, 16);
      c.no_ACT_continue = detail::yaml_value<bool>(root, "arch.no_ACT_continue", path, true);
    } else {
      c.puzzle_emb_len = 0;
      c.no_ACT_continue = false;
    }
    detail::check_trm_config(c, path);
    return c;
  } catch (const YAML::Exception& e) {
    fail(path, ": unexpected YAML structure: ", e.what());
  }
}

/// \brief The dataset folders the run trained on: `data_paths` (TRM, a list) or `data_path`
/// (HRM, a string), as written (relative to where the run was launched, usually).
inline std::vector<std::string> trm_data_paths_from_yaml(const std::string& path) {
  const YAML::Node root = detail::load_yaml_file(path);
  std::vector<std::string> out;
  try {
    const YAML::Node list = detail::yaml_at(root, "data_paths");
    if (list.IsDefined() && list.IsSequence())
      for (const auto& n : list)
        if (n.IsScalar()) out.push_back(n.Scalar());
    const YAML::Node one = detail::yaml_at(root, "data_path");
    if (one.IsDefined() && one.IsScalar()) out.push_back(one.Scalar());
  } catch (const YAML::Exception& e) {
    fail(path, ": unexpected YAML structure: ", e.what());
  }
  return out;
}

/// \brief The sizes from a `dataset.json` (a split's metadata).
inline trm_sizes trm_sizes_from_dataset_json(const std::string& path) {
  const puzzle_metadata m = read_puzzle_metadata(path);
  return {m.seq_len, m.vocab_size, m.num_puzzle_identifiers};
}

/// \brief The sizes from a `config.json` holding `seq_len`, `vocab_size` and
/// `num_puzzle_identifiers` (for a checkpoint shipped without its dataset).
inline trm_sizes trm_sizes_from_config_json(const std::string& path) {
  const json root = read_json_file(path);
  MUNINN_CHECK(root.is_object(), path, ": expected a JSON object");
  const detail::config_fields f(root, path);
  trm_sizes s;
  s.seq_len = f.integer({"seq_len"}, 1, load_limits::max_positions);
  s.vocab_size = f.integer({"vocab_size"}, 1, load_limits::max_vocab);
  s.num_puzzle_identifiers = f.integer({"num_puzzle_identifiers"}, 1, load_limits::max_puzzle_identifiers);
  return s;
}

/// \brief Puts the sizes into a config and checks what depends on them.
inline void set_trm_sizes(trm_config& c, const trm_sizes& s, const std::string& from) {
  c.seq_len = s.seq_len;
  c.vocab_size = s.vocab_size;
  c.num_puzzle_identifiers = s.num_puzzle_identifiers;
  c.sizes_source = from;
  MUNINN_CHECK(c.seq_len > 0 && c.vocab_size > 0 && c.num_puzzle_identifiers > 0, from,
               ": seq_len, vocab_size and num_puzzle_identifiers must be positive");
  MUNINN_CHECK(c.total_len() <= load_limits::max_positions, from, ": seq_len ", c.seq_len, " + prefix ",
               c.prefix_len(), " exceeds ", load_limits::max_positions, " positions");
}

}  // namespace io
}  // namespace muninn
