#pragma once
/// \file
/// \brief Writes a safetensors checkpoint of random tensors for a family's list of tensor specs,
/// so that benchmarks and device tests load a model of any shape through the real loader.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/dtype.hpp"
#include "muninn/io/checked.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/io/tensor_specs.hpp"
#include "muninn/ops/random.hpp"

namespace muninn::io {

/// \brief True for the weight of a normalisation layer, by name (RMSNorm and LayerNorm weights
/// start at 1).
inline bool is_norm_weight(const std::string& name) {
  for (const char* key : {"norm.weight", "layernorm.weight", "_ln.weight", "in_ln.weight", "norm_hidden.weight",
                          "norm_noise.weight", "embed_proj.3.weight"})
    if (name.size() >= std::string(key).size() && name.compare(name.size() - std::string(key).size(), std::string::npos, key) == 0)
      return true;
  return false;
}

/// \brief Writes every non-optional spec of `specs` to `path` as `type`: norm weights 1 (see
/// is_norm_weight), biases 0, other tensors a truncated normal of standard deviation `std_`
/// (counter-based from `seed`, so the same call writes the same file).
inline void write_random_checkpoint(const std::string& path, const std::vector<tensor_spec>& specs, std::uint64_t seed,
                                    float std_ = 0.02f, dtype type = dtype::f32) {
  std::vector<std::pair<std::string, tensor_to_write>> out;
  std::uint64_t stream = 0;
  for (const tensor_spec& s : specs) {
    if (s.optional) continue;
    tensor_to_write t;
    t.shape = s.shape;
    t.type = type;
    const std::int64_t n = checked::numel(s.shape);
    const bool bias = s.name.size() > 5 && s.name.compare(s.name.size() - 5, 5, ".bias") == 0;
    t.values.assign(std::size_t(n), is_norm_weight(s.name) ? 1.0f : 0.0f);
    if (!bias && !is_norm_weight(s.name)) fill_truncated_normal(host_backend{}, t.values.data(), n, seed, stream, std_);
    stream += std::uint64_t(n);
    out.emplace_back(s.name, std::move(t));
  }
  write_safetensors(path, out);
}

}  // namespace muninn::io
