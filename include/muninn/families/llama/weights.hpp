#pragma once
/// \file
/// \brief Loads a Llama checkpoint into model_weights, in the fused layout the layer code runs:
/// q;k;v rows in one matrix, gate;up rows in another, every layer in the prelude group.

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/families/llama/config.hpp"
#include "muninn/families/llama/names.hpp"
#include "muninn/families/llama/rope_table.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/model/weights.hpp"

namespace muninn {

namespace detail {

// The tensors `names` as one buffer, their rows stacked in the given order, each converted straight
// into the compute type; on a device backend they are stacked on the host and uploaded once.
template <class Backend, class T>
typename Backend::template buffer<T> load_llama_rows(const Backend& be, const io::checkpoint& ck,
                                                     const std::vector<std::string>& names, std::int64_t* counter) {
  constexpr bool on_host = std::is_same_v<typename Backend::tag, host_tag>;
  std::size_t total = 0;
  for (const std::string& n : names) total += std::size_t(ck.get(n).numel());
  auto buf = be.template alloc<T>(total);
  std::vector<T> staging(on_host ? 0 : total);
  T* dst = on_host ? buf.data() : staging.data();
  for (const std::string& n : names) {
    const std::size_t m = std::size_t(ck.get(n).numel());
    ck.read_into<T>(n, dst, m);
    dst += m;
  }
  if constexpr (!on_host) be.upload(buf.data(), staging.data(), total);
  if (counter) *counter += std::int64_t(total);
  return buf;
}

// self_attn: q;k;v fused, o; with attention_bias the q;k biases go where Huginn's qk_bias goes
// (added before RoPE), v and o biases to their own buffers.
template <class Backend, class T>
void load_llama_attention(const Backend& be, const io::checkpoint& ck, const llama_config& cfg,
                          const std::string& a, layer_weights<Backend, T>& w, std::int64_t* cnt) {
  w.wqkv = load_llama_rows<Backend, T>(be, ck, {a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"}, cnt);
  w.attn_proj = load_tensor<Backend, T>(be, ck, a + "o_proj.weight", cnt);
  if (!cfg.attention_bias) return;
  w.qk_bias = load_llama_rows<Backend, T>(be, ck, {a + "q_proj.bias", a + "k_proj.bias"}, cnt);
  w.v_bias = load_tensor<Backend, T>(be, ck, a + "v_proj.bias", cnt);
  w.o_bias = load_tensor<Backend, T>(be, ck, a + "o_proj.bias", cnt);
}

// mlp: gate;up fused (gate rows first, as the SwiGLU code expects), down.
template <class Backend, class T>
void load_llama_mlp(const Backend& be, const io::checkpoint& ck, const llama_config& cfg, const std::string& m,
                    layer_weights<Backend, T>& w, std::int64_t* cnt) {
  w.fc = load_llama_rows<Backend, T>(be, ck, {m + "gate_proj.weight", m + "up_proj.weight"}, cnt);
  w.mlp_proj = load_tensor<Backend, T>(be, ck, m + "down_proj.weight", cnt);
  if (!cfg.mlp_bias) return;
  w.fc_bias = load_llama_rows<Backend, T>(be, ck, {m + "gate_proj.bias", m + "up_proj.bias"}, cnt);
  w.mlp_proj_bias = load_tensor<Backend, T>(be, ck, m + "down_proj.bias", cnt);
}

template <class Backend, class T>
layer_weights<Backend, T> load_llama_layer_at(const Backend& be, const io::checkpoint& ck, const llama_config& cfg,
                                              const std::string& p, std::int64_t* cnt) {
  layer_weights<Backend, T> w;
  w.norm[0] = load_tensor<Backend, T>(be, ck, p + ".input_layernorm.weight", cnt);
  w.norm[1] = load_tensor<Backend, T>(be, ck, p + ".post_attention_layernorm.weight", cnt);
  load_llama_attention<Backend, T>(be, ck, cfg, p + ".self_attn.", w, cnt);
  load_llama_mlp<Backend, T>(be, ck, cfg, p + ".mlp.", w, cnt);
  return w;
}

template <class Backend, class T>
layer_weights<Backend, T> load_llama_layer(const Backend& be, const io::checkpoint& ck, const llama_config& cfg,
                                           std::int64_t i, std::int64_t* cnt) {
  return load_llama_layer_at<Backend, T>(be, ck, cfg, io::llama_layer_prefix(i), cnt);
}

}  // namespace detail

/// \brief Loads every parameter of a Llama checkpoint onto the backend, after validating names and
/// shapes (io::validate_llama_checkpoint).
///
/// wte = model.embed_tokens; lm_head = lm_head.weight (empty when tied: a stored copy is not read);
/// ln_f = model.norm; no adapter; layer N goes to prelude[N] with norm[0] = input_layernorm,
/// norm[1] = post_attention_layernorm, wqkv = q_proj; k_proj; v_proj rows, fc = gate_proj; up_proj
/// rows, mlp_proj = down_proj, and with the config's biases qk_bias = q bias; k bias, v_bias,
/// o_bias, fc_bias = gate bias; up bias, mlp_proj_bias. The RoPE table is make_llama_rope_table(cfg).
/// parameter_count counts each stored parameter once (the tied head is the embedding).
/// `on_layer(layer_group::prelude, N, layer)` sees layer N as soon as it is read (ignore_layers);
/// the untied head is read after the layers, so that it is not held beside them in fp32.
/// \tparam Block the model's BlockPolicy; Llama layers hold two norms, so it must be block::pre_norm-like
template <class Backend, class T, class Block, class OnLayer = ignore_layers>
model_weights<Backend, T> load_llama_weights(const Backend& be, const io::checkpoint& ck, const llama_config& cfg,
                                             OnLayer&& on_layer = {}) {
  static_assert(Block::num_norms == 2,
                "family::llama layers have two RMSNorms (input_layernorm, post_attention_layernorm): use block::pre_norm");
  io::validate_llama_checkpoint(ck, cfg);
  model_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  w.wte = detail::load_tensor<Backend, T>(be, ck, "model.embed_tokens.weight", cnt);
  w.ln_f = detail::load_tensor<Backend, T>(be, ck, "model.norm.weight", cnt);
  for (std::int64_t i = 0; i < cfg.n_layers_in_prelude; ++i) {
    w.prelude.push_back(detail::load_llama_layer<Backend, T>(be, ck, cfg, i, cnt));
    on_layer(layer_group::prelude, std::size_t(i), w.prelude.back());
  }
  if (!cfg.tie_embeddings) w.lm_head = detail::load_tensor<Backend, T>(be, ck, "lm_head.weight", cnt);
  const std::vector<float> table = make_llama_rope_table(cfg);
  w.rope = be.template alloc<float>(table.size());
  be.upload(w.rope.data(), table.data(), table.size());
  return w;
}

}  // namespace muninn
