#pragma once
/// \file
/// \brief Loading a Huginn-layout checkpoint's parameters onto a backend.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/huginn/config.hpp"
#include "muninn/families/huginn/names.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/ops/rope.hpp"
#include "muninn/policies/block.hpp"

namespace muninn {

/// \brief A Huginn model's parameters: the layer stack and the concat adapter of its injection.
template <class Backend, class T>
struct huginn_weights : model_weights<Backend, T> {
  /// \brief [h, 2h] concat adapter, state columns first (empty for add-injection); what
  /// injection::concat_linear reads.
  typename Backend::template buffer<T> adapter;

  /// \brief No weights yet (a loader fills them).
  huginn_weights() = default;
  /// \brief A stack whose injection has no weight (injection::add): the adapter stays empty.
  huginn_weights(model_weights<Backend, T>&& stack) : model_weights<Backend, T>(std::move(stack)) {}
};

namespace detail {

template <class Backend, class T>
layer_weights<Backend, T> load_huginn_layer(const Backend& be, const io::checkpoint& ck, const huginn_config& cfg,
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
/// \tparam Block the model's BlockPolicy: decides how many norms each layer must have
/// (block::from_config: those of the config's `block_type`).
/// The RoPE table comes from the checkpoint's `freqs_cis` buffer when present (bit-exact with the
/// reference), else it is computed in fp32 from `rope_base`.
/// `on_layer(group, index, layer)` sees each layer of the stack as soon as it is read
/// (ignore_layers); the untied head is read after the layers, so that it is not held beside them
/// in fp32.
template <class Backend, class T, class Block, class OnLayer = ignore_layers>
huginn_weights<Backend, T> load_huginn_weights(const Backend& be, const io::checkpoint& ck, const huginn_config& cfg,
                                               OnLayer&& on_layer = {}) {
  io::validate_huginn_checkpoint(ck, cfg);
  huginn_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  w.wte = detail::load_tensor<Backend, T>(be, ck, "transformer.wte.weight", cnt);
  if (cfg.injection_type == "linear") w.adapter = detail::load_tensor<Backend, T>(be, ck, "transformer.adapter.weight", cnt);
  w.ln_f = detail::load_tensor<Backend, T>(be, ck, "transformer.ln_f.weight", cnt);
  const int norms = block::layer_norms<Block>(cfg.block_type);  // block::from_config: the config's block
  auto load_group = [&](layer_group g, const char* group, std::int64_t count, std::vector<layer_weights<Backend, T>>& out) {
    for (std::int64_t i = 0; i < count; ++i) {
      out.push_back(detail::load_huginn_layer<Backend, T>(be, ck, cfg, std::string("transformer.") + group + "." + std::to_string(i),
                                                   norms, cnt));
      on_layer(g, std::size_t(i), out.back());
    }
  };
  load_group(layer_group::prelude, "prelude", cfg.n_layers_in_prelude, w.prelude);
  load_group(layer_group::core, "core_block", cfg.n_layers_in_recurrent_block, w.core);
  load_group(layer_group::coda, "coda", cfg.n_layers_in_coda, w.coda);
  if (!cfg.tie_embeddings) w.lm_head = detail::load_tensor<Backend, T>(be, ck, "lm_head.weight", cnt);

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
