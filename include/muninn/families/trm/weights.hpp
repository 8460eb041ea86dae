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

/// \brief One post-norm block: a sequence mixer (attention, or the token-mixing SwiGLU) and the
/// feature SwiGLU.
template <class Backend, class T>
struct trm_layer_weights {
  typename Backend::template buffer<T> qkv;          ///< [3D, D]: q heads, k heads, v heads (attention)
  typename Backend::template buffer<T> o;            ///< [D, D] (attention)
  typename Backend::template buffer<T> mix_gate_up;  ///< [2·I_S, S]: gate, then up (mlp_t)
  typename Backend::template buffer<T> mix_down;     ///< [S, I_S] (mlp_t)
  typename Backend::template buffer<T> gate_up;      ///< [2·I, D]: gate, then up
  typename Backend::template buffer<T> down;         ///< [D, I]
};

/// \brief All parameters of a TRM / HRM model but the puzzle table.
template <class Backend, class T>
struct trm_weights {
  using buffer = typename Backend::template buffer<T>;  ///< storage on the backend
  std::vector<trm_layer_weights<Backend, T>> L_level;  ///< the net of both TRM updates; HRM's L net
  std::vector<trm_layer_weights<Backend, T>> H_level;  ///< HRM's H net (empty for TRM)
  buffer lm_head;                                 ///< [V, D]
  buffer q_w;                                     ///< [2, D]: halt, continue
  buffer q_b;                                     ///< [2]
  typename Backend::template buffer<float> rope;  ///< [S][head_dim/2][2] over all positions, prefix included
  std::vector<float> H_init;                      ///< [D] initial z_H (host)
  std::vector<float> L_init;                      ///< [D] initial z_L (host)
  std::vector<float> embed_tokens;                ///< [V, D] (host)
  std::vector<float> embed_pos;                   ///< [S, D] with learned positions, else empty (host)
  std::int64_t parameter_count = 0;               ///< parameters (buffers and the puzzle table not counted)
};

namespace detail {

template <class Backend, class T>
std::vector<trm_layer_weights<Backend, T>> load_trm_level(const Backend& be, const io::checkpoint& ck,
                                                          const trm_config& c, const std::string& level,
                                                          std::int64_t layers, std::int64_t* cnt) {
  std::vector<trm_layer_weights<Backend, T>> out;
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = level + ".layers." + std::to_string(i) + ".";
    trm_layer_weights<Backend, T> w;
    if (c.mlp_t) {
      w.mix_gate_up = load_tensor<Backend, T>(be, ck, p + "mlp_t.gate_up_proj.weight", cnt);
      w.mix_down = load_tensor<Backend, T>(be, ck, p + "mlp_t.down_proj.weight", cnt);
    } else {
      w.qkv = load_tensor<Backend, T>(be, ck, p + "self_attn.qkv_proj.weight", cnt);
      w.o = load_tensor<Backend, T>(be, ck, p + "self_attn.o_proj.weight", cnt);
    }
    w.gate_up = load_tensor<Backend, T>(be, ck, p + "mlp.gate_up_proj.weight", cnt);
    w.down = load_tensor<Backend, T>(be, ck, p + "mlp.down_proj.weight", cnt);
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
  w.L_level = detail::load_trm_level<Backend, T>(be, ck, c, "L_level", c.L_layers, cnt);
  if (c.arch == trm_arch::hrm) w.H_level = detail::load_trm_level<Backend, T>(be, ck, c, "H_level", c.H_layers, cnt);
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
    const std::vector<float> table = make_rope_table(c.head_dim(), c.total_len(), c.rope_theta);
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
