#pragma once
/// \file
/// \brief Which stored copy of the shared block each recursion runs: a Mixture-of-Recursions
/// checkpoint stores the block once per recursion, and the copies need not be equal (the
/// reference's expert-choice transform creates a fresh attention module per recursion, and a model
/// trained that way holds different attention weights at every recursion). Each part of each
/// layer runs as stored; a part equal to one stored before it shares that one's buffer.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/mor/config.hpp"
#include "muninn/families/mor/names.hpp"
#include "muninn/io/safetensors.hpp"

namespace muninn {

/// \brief The buffers of a Llama layer as the layer code holds them (layer_weights members).
enum class layer_part : std::uint8_t {
  input_norm,     ///< norm[0] = input_layernorm
  post_norm,      ///< norm[1] = post_attention_layernorm
  qkv,            ///< wqkv = q_proj; k_proj; v_proj rows
  o,              ///< attn_proj = o_proj
  qk_bias,        ///< q and k biases (attention_bias)
  v_bias,         ///< v bias (attention_bias)
  o_bias,         ///< o bias (attention_bias)
  gate_up,        ///< fc = gate_proj; up_proj rows
  down,           ///< mlp_proj = down_proj
  gate_up_bias,   ///< gate and up biases (mlp_bias)
  down_bias,      ///< down bias (mlp_bias)
};

/// \brief One buffer of a layer and the stored tensors stacked in it (names after the layer's prefix).
struct block_part {
  layer_part which;                  ///< the buffer
  const char* label;                 ///< how messages and `muninn info` name it
  std::vector<std::string> tensors;  ///< e.g. ".self_attn.q_proj.weight", stacked in this order
};

/// \brief The buffers of one of `cfg`'s Llama layers, biases only where the config has them.
inline std::vector<block_part> llama_block_parts(const llama_config& cfg) {
  const std::string a = ".self_attn.", m = ".mlp.";
  std::vector<block_part> p = {
      {layer_part::input_norm, "input_layernorm", {".input_layernorm.weight"}},
      {layer_part::post_norm, "post_attention_layernorm", {".post_attention_layernorm.weight"}},
      {layer_part::qkv, "q;k;v", {a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"}},
      {layer_part::o, "o", {a + "o_proj.weight"}},
      {layer_part::gate_up, "gate;up", {m + "gate_proj.weight", m + "up_proj.weight"}},
      {layer_part::down, "down", {m + "down_proj.weight"}},
  };
  if (cfg.attention_bias) {
    p.push_back({layer_part::qk_bias, "q;k bias", {a + "q_proj.bias", a + "k_proj.bias"}});
    p.push_back({layer_part::v_bias, "v bias", {a + "v_proj.bias"}});
    p.push_back({layer_part::o_bias, "o bias", {a + "o_proj.bias"}});
  }
  if (cfg.mlp_bias) {
    p.push_back({layer_part::gate_up_bias, "gate;up bias", {m + "gate_proj.bias", m + "up_proj.bias"}});
    p.push_back({layer_part::down_bias, "down bias", {m + "down_proj.bias"}});
  }
  return p;
}

/// \brief For every recursion r, block layer l and part p, the stored copy that runs there: its
/// own, or the first copy stored before it (recursion-major, then layer) that holds the same
/// bytes, whose buffer it then shares. A checkpoint whose recursions share their tensors (one
/// storage record, as torch.save writes tied parameters) or hold equal ones needs one copy of the
/// block; one whose attention differs per recursion needs one attention buffer per recursion.
struct recursion_copies {
  /// \brief A stored copy: layer l of the block at recursion r.
  struct copy {
    std::int64_t r = 0;  ///< recursion
    std::int64_t l = 0;  ///< layer in the block
    /// \brief Same recursion and layer.
    bool operator==(const copy& o) const { return r == o.r && l == o.l; }
  };
  std::vector<block_part> parts;  ///< the buffers of a layer
  std::int64_t recursions = 0;    ///< Nr
  std::int64_t block = 0;         ///< B, layers of the block
  std::vector<copy> from;         ///< at [(r·B + l)·parts + p]: the copy whose part p runs there

  /// \brief The copy whose part p runs as layer l of recursion r.
  const copy& at(std::int64_t r, std::int64_t l, std::size_t p) const {
    return from[std::size_t((r * block + l) * std::int64_t(parts.size())) + p];
  }
  /// \brief Whether layer l of recursion r holds part p itself (it is the first copy of those bytes).
  bool own(std::int64_t r, std::int64_t l, std::size_t p) const { return at(r, l, p) == copy{r, l}; }
  /// \brief Whether every part of layer l at recursion r comes from the same copies as layer l2 at r2's.
  bool same_layer(std::int64_t r, std::int64_t l, std::int64_t r2, std::int64_t l2) const {
    for (std::size_t p = 0; p < parts.size(); ++p)
      if (!(at(r, l, p) == at(r2, l2, p))) return false;
    return true;
  }
  /// \brief Whether every recursion runs recursion 0's layers (one copy of the block).
  bool tied() const {
    for (std::int64_t r = 1; r < recursions; ++r)
      for (std::int64_t l = 0; l < block; ++l)
        if (!same_layer(r, l, 0, l)) return false;
    return true;
  }
  /// \brief Distinct stored copies of part p, over every recursion and layer.
  std::int64_t distinct(std::size_t p) const {
    std::int64_t n = 0;
    for (std::int64_t r = 0; r < recursions; ++r)
      for (std::int64_t l = 0; l < block; ++l) n += own(r, l, p);
    return n;
  }
};

namespace detail {

// Whether two stored tensors hold the same bytes: one storage record (torch.save's aliases of a
// tied parameter), or equal shape, type and contents.
inline bool same_bytes(const io::tensor_info& a, const io::tensor_info& b) {
  if (a.shape != b.shape || a.type != b.type || a.nbytes != b.nbytes) return false;
  return a.data == b.data || a.nbytes == 0 || std::memcmp(a.data, b.data, a.nbytes) == 0;
}

inline bool same_part(const io::checkpoint& ck, const block_part& part, const std::string& a, const std::string& b) {
  for (const std::string& t : part.tensors)
    if (!same_bytes(ck.get(a + t), ck.get(b + t))) return false;
  return true;
}

}  // namespace detail

/// \brief The copies of `cfg`'s shared block in `ck` (names and shapes already validated by
/// io::open_mor_checkpoint): each part of each (recursion, layer) is matched against the distinct
/// copies stored before it. Tied parts are one storage record and match at once; equal parts of
/// separate records are compared byte by byte, so a copy that differs anywhere runs as its own.
inline recursion_copies find_recursion_copies(const io::checkpoint& ck, const mor_config& cfg) {
  const io::mor_names n(cfg);
  recursion_copies c;
  c.parts = llama_block_parts(cfg);
  c.recursions = cfg.mor.recursions;
  c.block = cfg.n_layers_in_recurrent_block;
  c.from.resize(std::size_t(c.recursions * c.block) * c.parts.size());
  for (std::size_t p = 0; p < c.parts.size(); ++p) {
    std::vector<recursion_copies::copy> seen;  // the distinct copies of part p so far
    for (std::int64_t r = 0; r < c.recursions; ++r)
      for (std::int64_t l = 0; l < c.block; ++l) {
        recursion_copies::copy use{r, l};
        for (const auto& s : seen)
          if (detail::same_part(ck, c.parts[p], n.block(s.r, s.l), n.block(r, l))) {
            use = s;
            break;
          }
        if (use == recursion_copies::copy{r, l}) seen.push_back(use);
        c.from[std::size_t((r * c.block + l) * std::int64_t(c.parts.size())) + p] = use;
      }
  }
  return c;
}

/// \brief The stored tensors of the block that run from another copy (a recursion's copy equal to
/// one stored before it): not unique parameters, and not loaded.
inline std::vector<std::string> shared_copy_tensors(const recursion_copies& c, const mor_config& cfg) {
  const io::mor_names n(cfg);
  std::vector<std::string> out;
  for (std::int64_t r = 0; r < c.recursions; ++r)
    for (std::int64_t l = 0; l < c.block; ++l)
      for (std::size_t p = 0; p < c.parts.size(); ++p)
        if (!c.own(r, l, p))
          for (const std::string& t : c.parts[p].tensors) out.push_back(n.block(r, l) + t);
  return out;
}

}  // namespace muninn
