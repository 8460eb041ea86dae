#pragma once
/// \file
/// \brief The tensor names and shapes of TRM / HRM checkpoints as the reference saves them
/// (`torch.save(model.state_dict(), "step_N")`): keys under `_orig_mod.model.inner.` (a
/// torch.compile'd run) or `model.inner.` (DISABLE_COMPILE).
///
/// After the prefix: `H_init`, `L_init` [D]; `embed_tokens.embedding_weight` [V, D];
/// `lm_head.weight` [V, D]; `q_head.weight` [2, D] and `.bias` [2]; `puzzle_emb.weights`
/// [num_puzzle_identifiers, puzzle_emb_ndim]; `embed_pos.embedding_weight` [S, D] with learned
/// positions; per net (`L_level`, and HRM's `H_level`) and layer i: `self_attn.qkv_proj.weight`
/// [3D, D] (rows: q heads, k heads, v heads) and `self_attn.o_proj.weight` [D, D], or for `mlp_t`
/// `mlp_t.gate_up_proj.weight` [2·I_S, S] and `mlp_t.down_proj.weight` [S, I_S]; then
/// `mlp.gate_up_proj.weight` [2·I, D] (rows: gate, then up) and `mlp.down_proj.weight` [D, I].

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/families/trm/config.hpp"
#include "muninn/io/tensor_specs.hpp"

namespace muninn::io {

/// \brief The key prefixes of the two ways the reference saves a run, compiled first.
inline const char* const trm_key_prefixes[2] = {"_orig_mod.model.inner.", "model.inner."};

/// \brief The layers of one net: `L_level` (both nets of TRM) or `H_level` (HRM).
inline std::vector<tensor_spec> trm_level_specs(const trm_config& c, const std::string& level, std::int64_t layers,
                                                const std::string& why) {
  const std::int64_t D = c.hidden_size, S = c.total_len(), I = c.swiglu_inter(D);
  std::vector<tensor_spec> s;
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = level + ".layers." + std::to_string(i) + ".";
    if (c.mlp_t) {
      const std::int64_t It = c.swiglu_inter(S);
      s.push_back({p + "mlp_t.gate_up_proj.weight", {2 * It, S}, false, -1, why});
      s.push_back({p + "mlp_t.down_proj.weight", {S, It}, false, -1, why});
    } else {
      s.push_back({p + "self_attn.qkv_proj.weight", {3 * D, D}, false, -1, why});
      s.push_back({p + "self_attn.o_proj.weight", {D, D}, false, -1, why});
    }
    s.push_back({p + "mlp.gate_up_proj.weight", {2 * I, D}, false, -1, why});
    s.push_back({p + "mlp.down_proj.weight", {D, I}, false, -1, why});
  }
  return s;
}

/// \brief Every tensor of a TRM / HRM checkpoint for `c`, names without the prefix.
inline std::vector<tensor_spec> trm_tensor_specs(const trm_config& c) {
  const std::int64_t D = c.hidden_size, V = c.vocab_size;
  const std::string why = std::string(trm_arch_name(c.arch)) + ", hidden_size=" + std::to_string(D) +
                          ", vocab_size=" + std::to_string(V) + ", seq_len=" + std::to_string(c.seq_len) +
                          ", num_puzzle_identifiers=" + std::to_string(c.num_puzzle_identifiers) +
                          ", L_layers=" + std::to_string(c.L_layers) +
                          (c.arch == trm_arch::hrm ? ", H_layers=" + std::to_string(c.H_layers) : "") +
                          (c.mlp_t ? ", mlp_t" : "");
  std::vector<tensor_spec> s;
  s.push_back({"H_init", {D}, false, -1, why});
  s.push_back({"L_init", {D}, false, -1, why});
  s.push_back({"embed_tokens.embedding_weight", {V, D}, false, -1, why});
  s.push_back({"lm_head.weight", {V, D}, false, -1, why});
  s.push_back({"q_head.weight", {2, D}, false, -1, why});
  s.push_back({"q_head.bias", {2}, false, -1, why});
  s.push_back({"puzzle_emb.weights", {c.num_puzzle_identifiers, c.puzzle_emb_ndim}, false, -1, why});
  if (c.pos_encodings == "learned") s.push_back({"embed_pos.embedding_weight", {c.total_len(), D}, false, -1, why});
  if (c.arch == trm_arch::hrm) {
    auto h = trm_level_specs(c, "H_level", c.H_layers, why);
    s.insert(s.end(), h.begin(), h.end());
  }
  auto l = trm_level_specs(c, "L_level", c.L_layers, why);
  s.insert(s.end(), l.begin(), l.end());
  return s;
}

}  // namespace muninn::io
