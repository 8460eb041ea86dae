#pragma once
/// \file
/// \brief Loading a Mixture-of-Recursions checkpoint: the shared block as each recursion stored
/// it (equal copies once), the routers.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/kv_cache.hpp"
#include "muninn/families/llama/rope_table.hpp"
#include "muninn/families/llama/weights.hpp"
#include "muninn/families/mor/config.hpp"
#include "muninn/families/mor/copies.hpp"
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

/// \brief A Mixture-of-Recursions model's parameters: the layer stack (first layer, recursion 0's
/// copy of the shared block, last layer), the layers of other recursions that differ from it, and
/// the routers.
template <class Backend, class T>
struct mor_weights : model_weights<Backend, T> {
  /// \brief One router per recursion (expert choice) or one (token choice).
  std::vector<router_weights<Backend, T>> routers;
  /// \brief The block's layers at recursions ≥ 1 that are not recursion 0's (some stored tensor of
  /// theirs differs); their parts equal to a copy stored before them borrow that copy's buffer.
  std::vector<layer_weights<Backend, T>> recursion_layers;
  /// \brief At [(r − 1)·B + l] for recursion r ≥ 1 and block layer l: the index into
  /// recursion_layers of the layer that runs there, or −1 for core[l]. Empty when every recursion
  /// runs recursion 0's layers.
  std::vector<std::int64_t> recursion_layer_of;

  /// \brief No weights yet (a loader fills them).
  mor_weights() = default;
  /// \brief A stack without routers yet (random weights: the caller adds them).
  explicit mor_weights(model_weights<Backend, T>&& stack) : model_weights<Backend, T>(std::move(stack)) {}

  /// \brief The layer that runs as layer j of group g at recursion `step` when it is not the
  /// stack's own (a recursion whose copy differs); nullptr otherwise. model::layer_at asks.
  const layer_weights<Backend, T>* layer_at_step(layer_group g, std::int64_t step, std::int64_t j) const {
    if (g != layer_group::core || step < 1 || recursion_layer_of.empty()) return nullptr;
    const std::size_t at = std::size_t((step - 1) * std::int64_t(this->core.size()) + j);
    if (at >= recursion_layer_of.size() || recursion_layer_of[at] < 0) return nullptr;
    return &recursion_layers[std::size_t(recursion_layer_of[at])];
  }
};

namespace detail {

// The buffer of `w` that holds `part`.
template <class Backend, class T>
typename Backend::template buffer<T>& part_buffer(layer_weights<Backend, T>& w, layer_part part) {
  switch (part) {
    case layer_part::input_norm: return w.norm[0];
    case layer_part::post_norm: return w.norm[1];
    case layer_part::qkv: return w.wqkv;
    case layer_part::o: return w.attn_proj;
    case layer_part::qk_bias: return w.qk_bias;
    case layer_part::v_bias: return w.v_bias;
    case layer_part::o_bias: return w.o_bias;
    case layer_part::gate_up: return w.fc;
    case layer_part::down: return w.mlp_proj;
    case layer_part::gate_up_bias: return w.fc_bias;
    case layer_part::down_bias: return w.mlp_proj_bias;
  }
  fail("part_buffer: unknown layer part");
}

// Layer l of the block at recursion r: each part loaded from its own stored copy, or borrowed
// from the layer `owner(copy)` that loaded the copy it equals.
template <class Backend, class T, class OwnerOf>
layer_weights<Backend, T> load_block_layer(const Backend& be, const io::checkpoint& ck, const io::mor_names& n,
                                           const recursion_copies& c, std::int64_t r, std::int64_t l, OwnerOf&& owner,
                                           std::int64_t* cnt) {
  layer_weights<Backend, T> w;
  for (std::size_t p = 0; p < c.parts.size(); ++p) {
    const block_part& part = c.parts[p];
    auto& dst = part_buffer(w, part.which);
    if (!c.own(r, l, p)) {
      auto& src = part_buffer(owner(c.at(r, l, p)), part.which);
      dst = Backend::template buffer<T>::borrowed(src.data(), src.size());
      continue;
    }
    std::vector<std::string> names;
    for (const std::string& t : part.tensors) names.push_back(n.block(r, l) + t);
    dst = load_llama_rows<Backend, T>(be, ck, names, cnt);
  }
  return w;
}

// The block's layers: recursion 0's into w.core, then every other recursion's layer that does
// not run the same copies as recursion 0's layer l (or as one already loaded) into
// w.recursion_layers.
template <class Backend, class T>
void load_block(const Backend& be, const io::checkpoint& ck, const mor_config& cfg, const io::mor_names& n,
                mor_weights<Backend, T>& w, std::int64_t* cnt) {
  const recursion_copies c = find_recursion_copies(ck, cfg);
  const std::int64_t B = c.block;
  std::vector<std::int64_t> of(std::size_t(c.recursions * B), -1);  // [(r·B + l)]: as recursion_layer_of, r = 0 too
  std::vector<recursion_copies::copy> first;                       // the copy each recursion layer was loaded for
  const auto owner = [&](const recursion_copies::copy& s) -> layer_weights<Backend, T>& {
    const std::int64_t i = of[std::size_t(s.r * B + s.l)];
    return i < 0 ? w.core[std::size_t(s.l)] : w.recursion_layers[std::size_t(i)];
  };
  for (std::int64_t l = 0; l < B; ++l) w.core.push_back(load_block_layer<Backend, T>(be, ck, n, c, 0, l, owner, cnt));
  for (std::int64_t r = 1; r < c.recursions; ++r)
    for (std::int64_t l = 0; l < B; ++l) {
      if (c.same_layer(r, l, 0, l)) continue;
      std::int64_t found = -1;
      for (std::size_t i = 0; i < first.size() && found < 0; ++i)
        if (c.same_layer(r, l, first[i].r, first[i].l)) found = std::int64_t(i);
      if (found < 0) {
        found = std::int64_t(w.recursion_layers.size());
        w.recursion_layers.push_back(load_block_layer<Backend, T>(be, ck, n, c, r, l, owner, cnt));
        first.push_back({r, l});
      }
      of[std::size_t(r * B + l)] = found;
    }
  if (!w.recursion_layers.empty()) w.recursion_layer_of.assign(of.begin() + B, of.end());
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
/// choice). Every recursion runs its own stored copy of the block (find_recursion_copies): a part
/// equal to a copy stored before it shares that buffer and is not counted again; a recursion whose
/// layer differs anywhere gets a layer of its own in recursion_layers.
template <class Backend, class T, class Block>
mor_weights<Backend, T> load_mor_weights(const Backend& be, const io::checkpoint& ck, const mor_config& cfg) {
  static_assert(Block::num_norms == 2, "family::mor layers are Llama layers: use block::pre_norm");
  const io::mor_names n(cfg);
  mor_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  w.wte = detail::load_tensor<Backend, T>(be, ck, "model.embed_tokens.weight", cnt);
  if (!cfg.tie_embeddings) w.lm_head = detail::load_tensor<Backend, T>(be, ck, "lm_head.weight", cnt);
  w.ln_f = detail::load_tensor<Backend, T>(be, ck, "model.norm.weight", cnt);
  if (!n.first.empty()) w.prelude.push_back(detail::load_llama_layer_at<Backend, T>(be, ck, cfg, n.first, cnt));
  detail::load_block<Backend, T>(be, ck, cfg, n, w, cnt);
  if (!n.last.empty()) w.coda.push_back(detail::load_llama_layer_at<Backend, T>(be, ck, cfg, n.last, cnt));
  const std::int64_t routers = cfg.mor.type == "expert" ? cfg.mor.recursions : 1;
  for (std::int64_t r = 0; r < routers; ++r) w.routers.push_back(detail::load_router<Backend, T>(be, ck, cfg, n, r, cnt));
  const std::vector<float> table = make_llama_rope_table(cfg);
  w.rope = be.template alloc<float>(table.size());
  be.upload(w.rope.data(), table.data(), table.size());
  return w;
}

}  // namespace muninn
