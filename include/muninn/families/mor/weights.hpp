#pragma once
/// \file
/// \brief Loading a Mixture-of-Recursions checkpoint: one copy of the shared block, the routers.

#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/llama/rope_table.hpp"
#include "muninn/families/llama/weights.hpp"
#include "muninn/families/mor/config.hpp"
#include "muninn/families/mor/names.hpp"
#include "muninn/model/weights.hpp"

namespace muninn {

/// \brief One router's parameters (Mixture-of-Recursions): a linear map, or Linear → GELU → Linear.
template <class Backend, class T>
struct router_weights {
  using buffer = typename Backend::template buffer<T>;  ///< owning storage on the backend
  buffer w1;  ///< linear router [out, h]; MLP router: first layer [2h, h]
  buffer w2;  ///< MLP router: second layer [out, 2h]; empty for a linear router
  std::vector<float> bias;  ///< token choice: loss-free balancing bias [out] (host; enters the choice only)
};

/// \brief A Mixture-of-Recursions model's parameters: the layer stack (first layer, one copy of
/// the shared block, last layer) and the routers.
template <class Backend, class T>
struct mor_weights : model_weights<Backend, T> {
  /// \brief One router per recursion (expert choice) or one (token choice).
  std::vector<router_weights<Backend, T>> routers;

  /// \brief No weights yet (a loader fills them).
  mor_weights() = default;
  /// \brief A stack without routers yet (random weights: the caller adds them).
  explicit mor_weights(model_weights<Backend, T>&& stack) : model_weights<Backend, T>(std::move(stack)) {}
};

namespace detail {

// The reference ties MLP and norms across recursions but (a known bug of its expert transform)
// re-creates the attention per recursion; released checkpoints share it. Muninn runs one block:
// copies that differ are reported once and recursion 0's is used.
inline void check_recursion_copies(const io::checkpoint& ck, const mor_config& cfg, const io::mor_names& n) {
  static const char* parts[] = {".self_attn.q_proj.weight", ".self_attn.k_proj.weight", ".self_attn.v_proj.weight",
                                ".self_attn.o_proj.weight", ".mlp.gate_proj.weight",    ".mlp.up_proj.weight",
                                ".mlp.down_proj.weight",    ".input_layernorm.weight",  ".post_attention_layernorm.weight"};
  for (std::int64_t r = 1; r < cfg.mor.recursions; ++r)
    for (std::int64_t l = 0; l < cfg.n_layers_in_recurrent_block; ++l)
      for (const char* part : parts) {
        if (io::same_tensor(ck, n.block(0, l) + part, n.block(r, l) + part)) continue;
        const bool attention = std::string(part).find("self_attn") != std::string::npos;
        MUNINN_CHECK(attention, cfg.source, ": ", n.block(r, l), part, " differs from recursion 0's copy ",
                     n.block(0, l), part, ": the recursions of a MoR block share their weights");
        std::cerr << "muninn: warning: " << n.block(r, l) << part << " differs from recursion 0's copy; using "
                  << "recursion 0's (the reference's expert transform untied attention by mistake)\n";
      }
}

template <class Backend, class T>
router_weights<Backend, T> load_router(const Backend& be, const io::checkpoint& ck, const mor_config& cfg,
                                       const io::mor_names& n, std::int64_t r, std::int64_t* cnt) {
  router_weights<Backend, T> w;
  const std::string p = n.router(r);
  if (cfg.mor.router_type == "linear") {
    w.w1 = load_tensor<Backend, T>(be, ck, p + "weight", cnt);
  } else {
    w.w1 = load_tensor<Backend, T>(be, ck, p + "0.weight", cnt);
    w.w2 = load_tensor<Backend, T>(be, ck, p + "2.weight", cnt);
  }
  if (cfg.mor.type == "token" && cfg.mor.router_bias) w.bias = ck.read_f32(n.router_bias());
  return w;
}

}  // namespace detail

/// \brief Loads a MoR checkpoint (names and shapes already validated by io::open_mor_checkpoint):
/// the first layer into the prelude group, recursion 0's copy of the block into the core group,
/// the last layer into the coda group, one router per recursion (expert choice) or one (token
/// choice); the other recursions' copies are compared with recursion 0's and not loaded.
template <class Backend, class T, class Block>
mor_weights<Backend, T> load_mor_weights(const Backend& be, const io::checkpoint& ck, const mor_config& cfg) {
  static_assert(Block::num_norms == 2, "family::mor layers are Llama layers: use block::pre_norm");
  const io::mor_names n(cfg);
  detail::check_recursion_copies(ck, cfg, n);
  mor_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  w.wte = detail::load_tensor<Backend, T>(be, ck, "model.embed_tokens.weight", cnt);
  if (!cfg.tie_embeddings) w.lm_head = detail::load_tensor<Backend, T>(be, ck, "lm_head.weight", cnt);
  w.ln_f = detail::load_tensor<Backend, T>(be, ck, "model.norm.weight", cnt);
  if (!n.first.empty()) w.prelude.push_back(detail::load_llama_layer_at<Backend, T>(be, ck, cfg, n.first, cnt));
  for (std::int64_t l = 0; l < cfg.n_layers_in_recurrent_block; ++l)
    w.core.push_back(detail::load_llama_layer_at<Backend, T>(be, ck, cfg, n.block(0, l), cnt));
  if (!n.last.empty()) w.coda.push_back(detail::load_llama_layer_at<Backend, T>(be, ck, cfg, n.last, cnt));
  const std::int64_t routers = cfg.mor.type == "expert" ? cfg.mor.recursions : 1;
  for (std::int64_t r = 0; r < routers; ++r) w.routers.push_back(detail::load_router<Backend, T>(be, ck, cfg, n, r, cnt));
  const std::vector<float> table = make_llama_rope_table(cfg);
  w.rope = be.template alloc<float>(table.size());
  be.upload(w.rope.data(), table.data(), table.size());
  return w;
}

}  // namespace muninn
