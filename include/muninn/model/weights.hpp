#pragma once
/// \file
/// \brief Weight storage of a model on its backend, and loading it from a Huginn-layout checkpoint.

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/config.hpp"
#include "muninn/core/dtype.hpp"
#include "muninn/core/error.hpp"
#include "muninn/io/huginn_names.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/ops/rope.hpp"

namespace muninn {

/// \brief One transformer layer's parameters, in backend memory, in checkpoint layout.
template <class Backend, class T>
struct layer_weights {
  using buffer = typename Backend::template buffer<T>;  ///< owning storage on the backend
  buffer norm[4];   ///< norm_1..norm_4 (pre_norm blocks use the first two)
  buffer wqkv;      ///< [(H + 2·Hkv)·D, h], rows q; k; v
  buffer qk_bias;   ///< q bias [H·D] then k bias [Hkv·D], added before RoPE (empty when the config has no qk_bias)
  buffer attn_proj; ///< [h, H·D]
  buffer fc;        ///< [2·I, h], rows gate; up
  buffer mlp_proj;  ///< [h, I]
  buffer v_bias;    ///< [Hkv·D] value bias (Llama `attention_bias`; empty otherwise)
  buffer o_bias;    ///< [h] output-projection bias (Llama `attention_bias`; empty otherwise)
  buffer fc_bias;   ///< [2·I] gate; up biases (Llama `mlp_bias`; empty otherwise)
  buffer mlp_proj_bias;  ///< [h] down-projection bias (Llama `mlp_bias`; empty otherwise)
};

/// \brief One router's parameters (Mixture-of-Recursions): a linear map, or Linear → GELU → Linear.
template <class Backend, class T>
struct router_weights {
  using buffer = typename Backend::template buffer<T>;  ///< owning storage on the backend
  buffer w1;  ///< linear router [out, h]; MLP router: first layer [2h, h]
  buffer w2;  ///< MLP router: second layer [out, 2h]; empty for a linear router
  std::vector<float> bias;  ///< token choice: loss-free balancing bias [out] (host; enters the choice only)
};

/// \brief All parameters of a prelude/core/coda model.
template <class Backend, class T>
struct model_weights {
  using buffer = typename Backend::template buffer<T>;  ///< owning storage on the backend
  buffer wte;        ///< [V, h] embedding (also the head when tied)
  buffer lm_head;    ///< [V, h] untied head (empty when tied)
  buffer adapter;    ///< [h, 2h] concat adapter (empty for add-injection)
  buffer ln_f;       ///< [h]
  typename Backend::template buffer<float> rope;  ///< [block_size, D/2, 2] cos/sin, always fp32
  /// \brief Routers (Mixture-of-Recursions): one per recursion (expert choice) or one (token choice).
  std::vector<router_weights<Backend, T>> routers;
  /// \brief Prelude layers, run once before the recurrence.
  std::vector<layer_weights<Backend, T>> prelude, core, coda;
  /// \var core
  /// \brief Recurrent core layers, run once per recurrence step.
  /// \var coda
  /// \brief Coda layers, run once after the recurrence.
  std::int64_t parameter_count = 0;  ///< unique parameters (the RoPE table and a duplicate lm_head excluded)
};

namespace detail {

template <class Backend, class T>
typename Backend::template buffer<T> load_tensor(const Backend& be, const io::checkpoint& ck, const std::string& name,
                                                 std::int64_t* counter) {
  const io::tensor_info& info = ck.get(name);
  std::size_t n = 1;
  for (auto d : info.shape) n *= std::size_t(d);
  auto buf = be.template alloc<T>(n);
  if constexpr (std::is_same_v<typename Backend::tag, host_tag>) {
    ck.read_into<T>(name, buf.data(), n);
  } else {
    // Converted on the host straight into the compute type (a bf16 checkpoint stays bf16), then uploaded.
    std::vector<T> staging(n);
    ck.read_into<T>(name, staging.data(), n);
    be.upload(buf.data(), staging.data(), n);
  }
  if (counter) *counter += std::int64_t(n);
  return buf;
}

template <class Backend, class T>
layer_weights<Backend, T> load_layer(const Backend& be, const io::checkpoint& ck, const model_config& cfg,
                                     const std::string& prefix, int num_norms, std::int64_t* counter) {
  layer_weights<Backend, T> w;
  for (int i = 0; i < num_norms; ++i)
    w.norm[i] = load_tensor<Backend, T>(be, ck, prefix + ".norm_" + std::to_string(i + 1) + ".weight", counter);
  w.wqkv = load_tensor<Backend, T>(be, ck, prefix + ".attn.Wqkv.weight", counter);
  if (cfg.qk_bias) w.qk_bias = load_tensor<Backend, T>(be, ck, prefix + ".attn.qk_bias", counter);
  w.attn_proj = load_tensor<Backend, T>(be, ck, prefix + ".attn.proj.weight", counter);
  w.fc = load_tensor<Backend, T>(be, ck, prefix + ".mlp.fc.weight", counter);
  w.mlp_proj = load_tensor<Backend, T>(be, ck, prefix + ".mlp.proj.weight", counter);
  return w;
}

}  // namespace detail

/// \brief Loads every parameter named by the Huginn name map, after validating names and shapes
/// (`io::open_huginn_checkpoint` has already stripped training prefixes).
///
/// \tparam Block the model's BlockPolicy: decides how many norms each layer must have.
/// The RoPE table comes from the checkpoint's `freqs_cis` buffer when present (bit-exact with the
/// reference), else it is computed in fp32 from `rope_base`.
template <class Backend, class T, class Block>
model_weights<Backend, T> load_huginn_weights(const Backend& be, const io::checkpoint& ck, const model_config& cfg) {
  io::validate_huginn_checkpoint(ck, cfg);
  model_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  w.wte = detail::load_tensor<Backend, T>(be, ck, "transformer.wte.weight", cnt);
  if (!cfg.tie_embeddings) w.lm_head = detail::load_tensor<Backend, T>(be, ck, "lm_head.weight", cnt);
  if (cfg.injection_type == "linear") w.adapter = detail::load_tensor<Backend, T>(be, ck, "transformer.adapter.weight", cnt);
  w.ln_f = detail::load_tensor<Backend, T>(be, ck, "transformer.ln_f.weight", cnt);
  auto load_group = [&](const char* group, std::int64_t count, std::vector<layer_weights<Backend, T>>& out) {
    for (std::int64_t i = 0; i < count; ++i)
      out.push_back(detail::load_layer<Backend, T>(be, ck, cfg, std::string("transformer.") + group + "." + std::to_string(i),
                                                   Block::num_norms, cnt));
  };
  load_group("prelude", cfg.n_layers_in_prelude, w.prelude);
  load_group("core_block", cfg.n_layers_in_recurrent_block, w.core);
  load_group("coda", cfg.n_layers_in_coda, w.coda);

  const std::int64_t half = cfg.head_dim / 2;
  const std::size_t table_n = std::size_t(cfg.block_size * half * 2);
  std::vector<float> table;
  if (ck.has("freqs_cis")) {
    const auto& info = ck.get("freqs_cis");
    std::size_t n = 1;
    for (auto d : info.shape) n *= std::size_t(d);
    MUNINN_CHECK(n >= table_n && n % std::size_t(half * 2) == 0, info.file, ": tensor 'freqs_cis' has ", n,
                 " values, fewer than block_size*head_dim = ", table_n);
    table.resize(n);
    ck.read_into<float>("freqs_cis", table.data(), n);
    table.resize(table_n);
  } else {
    table = make_rope_table(cfg.head_dim, cfg.block_size, cfg.rope_base);
  }
  w.rope = be.template alloc<float>(table_n);
  be.upload(w.rope.data(), table.data(), table_n);
  return w;
}

}  // namespace muninn
