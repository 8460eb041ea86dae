#pragma once
/// \file
/// \brief Writes a TRM / HRM run of random weights — all_config.yaml, a config.json with the
/// sizes, and `step_1` (a safetensors file under the `model.inner.` names) — for benchmarks and
/// device tests that load a model of any shape through the real loader.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "muninn/families/trm/names.hpp"
#include "muninn/io/random_checkpoint.hpp"

namespace muninn {

/// \brief Writes the run of config `c` (its arch settings and sizes) to `dir`, weights drawn from
/// `seed` with standard deviation `std_` (q head bias 0).
inline void write_random_trm(const std::string& dir, const trm_config& c, std::uint64_t seed, float std_ = 0.02f) {
  std::filesystem::create_directories(dir);
  std::ofstream y(dir + "/all_config.yaml");
  y << "arch:\n  H_cycles: " << c.H_cycles << "\n  H_layers: " << c.H_layers << "\n  L_cycles: " << c.L_cycles
    << "\n  L_layers: " << c.L_layers << "\n  expansion: " << c.expansion << "\n  forward_dtype: " << c.forward_dtype
    << "\n  halt_max_steps: " << c.halt_max_steps << "\n  hidden_size: " << c.hidden_size
    << "\n  name: " << (c.arch == trm_arch::hrm ? "hrm.hrm_act_v1@HierarchicalReasoningModel_ACTV1"
                                                 : "recursive_reasoning.trm@TinyRecursiveReasoningModel_ACTV1")
    << "\n  num_heads: " << c.num_heads << "\n  pos_encodings: " << c.pos_encodings
    << "\n  puzzle_emb_ndim: " << c.puzzle_emb_ndim << "\n";
  if (c.arch == trm_arch::trm)
    y << "  mlp_t: " << (c.mlp_t ? "true" : "false") << "\n  puzzle_emb_len: " << c.puzzle_emb_len
      << "\n  no_ACT_continue: " << (c.no_ACT_continue ? "true" : "false") << "\n";
  std::ofstream j(dir + "/config.json");
  j << "{\"seq_len\": " << c.seq_len << ", \"vocab_size\": " << c.vocab_size
    << ", \"num_puzzle_identifiers\": " << c.num_puzzle_identifiers << "}\n";
  std::vector<io::tensor_spec> specs = io::trm_tensor_specs(c);
  for (auto& s : specs) s.name = io::trm_key_prefixes[1] + s.name;
  io::write_random_checkpoint(dir + "/step_1", specs, seed, std_);
}

}  // namespace muninn
