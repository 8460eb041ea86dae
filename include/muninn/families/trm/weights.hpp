#pragma once
/// \file
/// \brief TRM / HRM parameters on a backend, loaded from an opened run (families/trm/checkpoint.hpp).
///
/// What builds the input embedding stays on the host: the token table and learned positions are
/// small and read per batch, and the puzzle table — a buffer that reaches gigabytes for ARC
/// (≈1.2 M identifiers × 512 floats) — is never copied: it stays memory-mapped in the checkpoint
/// and only the rows a batch names are read (trm_puzzle_rows).

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "muninn/core/dtype.hpp"
#include "muninn/families/trm/names.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/ops/rope_table.hpp"

namespace muninn {

/// \brief All parameters of a TRM / HRM model but the puzzle table: the FamilyPolicy's weights of
/// `trm_arch`.
///
/// The layer stack is model_weights': `core` is the L net (TRM: the one net of both updates),
/// `coda` HRM's H net (empty for TRM); `lm_head` the untied head; `rope` the table over all S
/// positions, prefix included. A layer stores no norm weights (the post-norm is weightless); the
/// attention variant fills `wqkv` (q heads, k heads, v heads) and `attn_proj`, the `mlp_t` variant
/// `token_fc` and `token_proj` instead; both fill `fc` (gate; up) and `mlp_proj`.
template <class Backend, class T>
struct trm_weights : model_weights<Backend, T> {
  using buffer = typename Backend::template buffer<T>;  ///< storage on the backend
  buffer q_w;                                     ///< [2, D]: halt, continue
  buffer q_b;                                     ///< [2]
  std::vector<float> H_init;                      ///< [D] initial z_H (host)
  std::vector<float> L_init;                      ///< [D] initial z_L (host)
  std::vector<float> embed_tokens;                ///< [V, D] (host)
  std::vector<float> embed_pos;                   ///< [S, D] with learned positions, else empty (host)
};

namespace detail {

template <class Backend, class T>
std::vector<layer_weights<Backend, T>> load_trm_level(const Backend& be, const io::checkpoint& ck, const trm_config& c,
                                                     const std::string& level, std::int64_t layers, std::int64_t* cnt) {
  std::vector<layer_weights<Backend, T>> out;
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = level + ".layers." + std::to_string(i) + ".";
    layer_weights<Backend, T> w;
    if (c.mlp_t) {
      w.token_fc = load_tensor<Backend, T>(be, ck, p + "mlp_t.gate_up_proj.weight", cnt);
      w.token_proj = load_tensor<Backend, T>(be, ck, p + "mlp_t.down_proj.weight", cnt);
    } else {
      w.wqkv = load_tensor<Backend, T>(be, ck, p + "self_attn.qkv_proj.weight", cnt);
      w.attn_proj = load_tensor<Backend, T>(be, ck, p + "self_attn.o_proj.weight", cnt);
    }
    w.fc = load_tensor<Backend, T>(be, ck, p + "mlp.gate_up_proj.weight", cnt);
    w.mlp_proj = load_tensor<Backend, T>(be, ck, p + "mlp.down_proj.weight", cnt);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace detail

/// \brief Loads a validated run's parameters (io::open_trm has checked every name and shape).
template <class Backend, class T>
trm_weights<Backend, T> load_trm_weights(const Backend& be, const io::checkpoint& ck, const trm_config& c) {
  trm_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  w.core = detail::load_trm_level<Backend, T>(be, ck, c, "L_level", c.L_layers, cnt);
  if (c.arch == trm_arch::hrm) w.coda = detail::load_trm_level<Backend, T>(be, ck, c, "H_level", c.H_layers, cnt);
  w.lm_head = detail::load_tensor<Backend, T>(be, ck, "lm_head.weight", cnt);
  w.q_w = detail::load_tensor<Backend, T>(be, ck, "q_head.weight", cnt);
  w.q_b = detail::load_tensor<Backend, T>(be, ck, "q_head.bias", cnt);
  w.H_init = ck.read_f32("H_init");
  w.L_init = ck.read_f32("L_init");
  w.embed_tokens = ck.read_f32("embed_tokens.embedding_weight");
  *cnt += std::int64_t(w.embed_tokens.size());
  if (c.pos_encodings == "learned") {
    w.embed_pos = ck.read_f32("embed_pos.embedding_weight");
    *cnt += std::int64_t(w.embed_pos.size());
  }
  if (c.pos_encodings == "rope") {
    const std::vector<float> table = make_rope_table(c.head_width(), c.total_len(), c.rope_theta);
    w.rope = be.template alloc<float>(table.size());
    be.upload(w.rope.data(), table.data(), table.size());
  }
  return w;
}

/// \brief Reads rows `ids` of the memory-mapped puzzle table `puzzle_emb.weights` [N, ndim] as
/// floats into `out` [ids.size(), ndim]: only those rows are touched.
/// \throws muninn::error naming the identifier and the table's size for an id outside [0, N)
inline void trm_puzzle_rows(const io::checkpoint& ck, const std::vector<std::int32_t>& ids, std::vector<float>& out) {
  const io::tensor_info& t = ck.get("puzzle_emb.weights");
  const std::int64_t N = t.shape.at(0), ndim = t.shape.at(1);
  const std::size_t esize = dtype_size(t.type), row_bytes = std::size_t(ndim) * esize;
  out.resize(ids.size() * std::size_t(ndim));
  std::vector<unsigned char> staging(row_bytes + 8);  // the mapping may leave a row unaligned
  for (std::size_t i = 0; i < ids.size(); ++i) {
    MUNINN_CHECK(ids[i] >= 0 && ids[i] < N, "puzzle identifier ", ids[i], " (batch row ", i,
                 ") is outside the puzzle table [0, ", N, ") of ", t.file);
    const auto* src = static_cast<const unsigned char*>(t.data) + std::size_t(ids[i]) * row_bytes;
    void* aligned = staging.data() + (8 - reinterpret_cast<std::uintptr_t>(staging.data()) % 8) % 8;
    std::memcpy(aligned, src, row_bytes);
    convert_to(out.data() + i * std::size_t(ndim), aligned, t.type, std::size_t(ndim));
  }
}

}  // namespace muninn
