// `info` of the model<> families: the same labels for Huginn, Llama and Mixture-of-Recursions.

#include <set>
#include <sstream>

#include "common.hpp"
#include "muninn/core/config.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/io/tensor_specs.hpp"

namespace muninn::frontend::detail {
namespace {

std::int64_t count_parameters(const io::checkpoint& ck, const std::vector<io::tensor_spec>& specs,
                              const model_config& cfg, const lm_structure& s) {
  std::int64_t params = 0;
  for (const auto& spec : specs) {
    const bool rope = spec.name == "freqs_cis" || spec.name.find("inv_freq") != std::string::npos;
    if (rope || (cfg.tie_embeddings && spec.name == "lm_head.weight") || !ck.has(spec.name) ||
        (s.is_copy && s.is_copy(spec.name)))
      continue;
    std::int64_t n = 1;
    for (auto d : spec.shape) n *= d;
    params += n;
  }
  return params;
}

}  // namespace

model_info lm_info(lm_kind kind, const char* family, const char* display, const model_folder& f,
                   const model_config& cfg, const lm_structure& s, const io::checkpoint& ck,
                   const std::vector<io::tensor_spec>& specs) {
  model_info info;
  info.family = family;
  info.display = display;
  info.path = f.path;
  info.vocab_size = cfg.vocab_size;
  info.context = cfg.block_size;
  info.parameters = count_parameters(ck, specs, cfg, s);
  std::set<std::string> dtypes;
  double file_bytes = 0;
  for (const auto& name : ck.names()) {
    dtypes.insert(dtype_name(ck.get(name).type));
    file_bytes += double(ck.get(name).nbytes);
  }
  std::string dt;
  for (const auto& d : dtypes) dt += (dt.empty() ? "" : ",") + d;
  const std::int64_t r = cfg.mean_recurrence;
  const std::int64_t slots = cfg.n_layers_in_prelude + cfg.n_layers_in_recurrent_block * r + cfg.n_layers_in_coda;
  const std::int64_t kv_heads = cfg.n_kv_heads > 0 ? cfg.n_kv_heads : cfg.n_heads;
  add_field(info, "model", f.path);
  add_field(info, "family", str(family, " (model_type ", cfg.model_type, ")"));
  add_field(info, "block", s.block);
  add_field(info, "injection", s.injection);
  add_field(info, "rope", s.rope);
  add_field(info, "head", cfg.tie_embeddings ? "tied to the embedding" : "untied lm_head");
  for (const auto& [label, value] : s.more) add_field(info, label, value);
  add_field(info, "hidden", str(cfg.n_embd));
  add_field(info, "heads", str(cfg.n_heads, " (kv ", kv_heads, ", head_dim ", cfg.head_dim, ")"));
  add_field(info, "mlp", str(cfg.intermediate_size));
  add_field(info, "vocab", str(cfg.vocab_size));
  if (kind == lm_kind::llama)
    add_field(info, "layers", str(cfg.n_layers_in_prelude));
  else if (kind == lm_kind::mor)
    add_field(info, "layers", str("first ", cfg.n_layers_in_prelude, ", shared block ", cfg.n_layers_in_recurrent_block,
                                  " x ", r, " recursions, last ", cfg.n_layers_in_coda));
  else {
    add_field(info, "layers", str("prelude ", cfg.n_layers_in_prelude, ", core ", cfg.n_layers_in_recurrent_block,
                                  ", coda ", cfg.n_layers_in_coda));
    add_field(info, "mean_recurrence", str(r));
  }
  add_field(info, "max positions", str(cfg.block_size));
  add_field(info, "parameters",
            str(info.parameters, " unique (",
                ck.has("lm_head.weight") && cfg.tie_embeddings ? "checkpoint also stores a duplicate lm_head" : "as stored",
                ")"));
  add_field(info, "dtype", str(dt, " (", ck.names().size(), " tensors)"));
  add_field(info, "file size", human_bytes(file_bytes));
  add_field(info, "memory fp32", human_bytes(double(info.parameters) * 4) + " (host backend)");
  add_field(info, "memory bf16", human_bytes(double(info.parameters) * 2));
  add_field(info, "kv cache fp32",
            str(human_bytes(double(slots * 2 * kv_heads * cfg.head_dim * 4)), " per token",
                kind == lm_kind::llama ? ""
                : kind == lm_kind::mor ? " at most (tokens that run every recursion)"
                                       : " at r=" + std::to_string(r),
                " (", slots, " slots)"));
  return info;
}

}  // namespace muninn::frontend::detail
