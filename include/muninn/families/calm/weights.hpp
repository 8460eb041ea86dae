#pragma once
/// \file
/// \brief CALM's parameters on a backend — autoencoder, compressor, energy head — and loading them
/// from an opened checkpoint under the names of families/calm/names.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/families/calm/names.hpp"
#include "muninn/families/llama/weights.hpp"
#include "muninn/model/weights.hpp"

namespace muninn {

/// \brief A Linear layer with bias: weight [out, in], bias [out].
template <class Backend, class T>
struct linear_weights {
  typename Backend::template buffer<T> w;  ///< [out, in]
  typename Backend::template buffer<T> b;  ///< [out]
  std::int64_t out = 0;                    ///< rows of w
  std::int64_t in = 0;                     ///< columns of w
};

/// \brief An affine LayerNorm: weight and bias [n].
template <class Backend, class T>
struct layernorm_weights {
  typename Backend::template buffer<T> w;  ///< [n]
  typename Backend::template buffer<T> b;  ///< [n]
};

/// \brief One autoencoder layer, `x + down(silu(gate(n)) · up(n))` with n = RMSNorm(x).
template <class Backend, class T>
struct ae_layer_weights {
  typename Backend::template buffer<T> norm;     ///< [H]
  typename Backend::template buffer<T> gate_up;  ///< [2I, H], rows gate; up
  typename Backend::template buffer<T> down;     ///< [H, I]
};

/// \brief The chunk autoencoder.
template <class Backend, class T>
struct autoencoder_weights {
  using buffer = typename Backend::template buffer<T>;  ///< owning storage on the backend
  buffer embed;                                  ///< encoder.embed_tokens [V, H]
  buffer lm_head;                                ///< decoder.lm_head_weight [V, H]; empty when it is `embed`
  std::vector<ae_layer_weights<Backend, T>> encoder[2];  ///< the encoder's two stages (per token, per chunk)
  std::vector<ae_layer_weights<Backend, T>> decoder[2];  ///< the decoder's two stages (per chunk, per token)
  linear_weights<Backend, T> squeeze;            ///< [H, K·H]
  buffer encoder_norm;                           ///< [H]
  linear_weights<Backend, T> to_latent;          ///< [2l, H]: mean; log σ
  linear_weights<Backend, T> from_latent;        ///< [H, l]
  linear_weights<Backend, T> expand;             ///< [K·H, H]
  buffer decoder_norm;                           ///< [H]
  std::int64_t parameter_count = 0;              ///< unique parameters
  /// \brief The decoder's output matrix [V, H].
  const T* output_matrix() const { return lm_head.size() ? lm_head.data() : embed.data(); }
};

/// \brief One residual block of the energy head.
template <class Backend, class T>
struct energy_block_weights {
  layernorm_weights<Backend, T> in_ln;  ///< on the noise stream only
  linear_weights<Backend, T> l0;        ///< [d, 2d] over concat(in_ln(e), c)
  linear_weights<Backend, T> l2;        ///< [d, d]
  linear_weights<Backend, T> l4;        ///< [2d, d]: gate; up
  linear_weights<Backend, T> down;      ///< [d, d]
};

/// \brief The energy head (the reference's MLPGenerator).
template <class Backend, class T>
struct energy_head_weights {
  linear_weights<Backend, T> noise_embd;   ///< [d, noise]
  linear_weights<Backend, T> hidden_embd;  ///< [d, d]
  layernorm_weights<Backend, T> norm_hidden;  ///< [d], on the hidden-state stream
  layernorm_weights<Backend, T> norm_noise;   ///< [d], on the noise stream
  std::vector<energy_block_weights<Backend, T>> blocks;   ///< num_mlp_layers blocks
  layernorm_weights<Backend, T> final_ln;  ///< [d]
  linear_weights<Backend, T> final0;       ///< [d, d]
  linear_weights<Backend, T> final2;       ///< [l, d]
  std::int64_t parameter_count = 0;        ///< parameters (counted once)
};

/// \brief The compressor: K token embeddings → Linear → SiLU → Linear → LayerNorm.
template <class Backend, class T>
struct compressor_weights {
  linear_weights<Backend, T> l0;    ///< [2d, K·d]
  linear_weights<Backend, T> l2;    ///< [d, 2d]
  layernorm_weights<Backend, T> ln; ///< [d]
  std::int64_t parameter_count = 0; ///< parameters
};

namespace detail {

template <class Backend, class T>
linear_weights<Backend, T> load_linear(const Backend& be, const io::checkpoint& ck, const std::string& name,
                                       std::int64_t* cnt) {
  linear_weights<Backend, T> l;
  const io::tensor_info& w = ck.get(name + ".weight");
  l.out = w.shape.at(0);
  l.in = w.shape.at(1);
  l.w = load_tensor<Backend, T>(be, ck, name + ".weight", cnt);
  l.b = load_tensor<Backend, T>(be, ck, name + ".bias", cnt);
  return l;
}

template <class Backend, class T>
layernorm_weights<Backend, T> load_layernorm(const Backend& be, const io::checkpoint& ck, const std::string& name,
                                             std::int64_t* cnt) {
  return {load_tensor<Backend, T>(be, ck, name + ".weight", cnt), load_tensor<Backend, T>(be, ck, name + ".bias", cnt)};
}

// The layers the reference runs: two stages of n/2 each (an odd last layer is stored but unused).
template <class Backend, class T>
void load_ae_stages(const Backend& be, const io::checkpoint& ck, const std::string& p, std::int64_t n,
                    std::vector<ae_layer_weights<Backend, T>> (&stages)[2], std::int64_t* cnt) {
  const std::int64_t per_stage = n / 2;
  for (int s = 0; s < 2; ++s)
    for (std::int64_t i = 0; i < per_stage; ++i) {
      const std::string l = p + "." + std::to_string(s * per_stage + i);
      ae_layer_weights<Backend, T> w;
      w.norm = load_tensor<Backend, T>(be, ck, l + ".layernorm.weight", cnt);
      w.gate_up = load_llama_rows<Backend, T>(be, ck, {l + ".mlp.gate_proj.weight", l + ".mlp.up_proj.weight"}, cnt);
      w.down = load_tensor<Backend, T>(be, ck, l + ".mlp.down_proj.weight", cnt);
      stages[s].push_back(std::move(w));
    }
}

}  // namespace detail

/// \brief Loads the autoencoder stored under `prefix` ("" or "ae_model."), after validating its
/// names and shapes against `cfg`.
///
/// The output matrix is `decoder.lm_head_weight` when stored and different from the encoder
/// embedding, else the encoder embedding itself (a `.bin` stores both names on one storage; a
/// deduplicated safetensors file drops the decoder's name).
template <class Backend, class T>
autoencoder_weights<Backend, T> load_autoencoder_weights(const Backend& be, const io::checkpoint& ck,
                                                         const autoencoder_config& cfg, const std::string& prefix) {
  const std::string e = prefix + "encoder.", d = prefix + "decoder.";
  autoencoder_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  w.embed = detail::load_tensor<Backend, T>(be, ck, e + "embed_tokens.weight", cnt);
  if (ck.has(d + "lm_head_weight") && !io::same_tensor(ck, d + "lm_head_weight", e + "embed_tokens.weight"))
    w.lm_head = detail::load_tensor<Backend, T>(be, ck, d + "lm_head_weight", cnt);
  detail::load_ae_stages<Backend, T>(be, ck, e + "encoder_layers", cfg.encoder_layers, w.encoder, cnt);
  w.squeeze = detail::load_linear<Backend, T>(be, ck, e + "squeeze_layer", cnt);
  w.encoder_norm = detail::load_tensor<Backend, T>(be, ck, e + "norm.weight", cnt);
  w.to_latent = detail::load_linear<Backend, T>(be, ck, e + "hidden_to_latent", cnt);
  w.from_latent = detail::load_linear<Backend, T>(be, ck, d + "latent_to_hidden", cnt);
  detail::load_ae_stages<Backend, T>(be, ck, d + "decoder_layers", cfg.decoder_layers, w.decoder, cnt);
  w.expand = detail::load_linear<Backend, T>(be, ck, d + "expand_layer", cnt);
  w.decoder_norm = detail::load_tensor<Backend, T>(be, ck, d + "norm.weight", cnt);
  return w;
}

/// \brief Loads the energy head stored under `prefix` (one of io::calm_head_prefixes).
template <class Backend, class T>
energy_head_weights<Backend, T> load_energy_head_weights(const Backend& be, const io::checkpoint& ck,
                                                         const calm_config& cfg, const std::string& prefix) {
  energy_head_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  w.noise_embd = detail::load_linear<Backend, T>(be, ck, prefix + "noise_embd", cnt);
  w.hidden_embd = detail::load_linear<Backend, T>(be, ck, prefix + "hidden_embd", cnt);
  w.norm_hidden = detail::load_layernorm<Backend, T>(be, ck, prefix + "norm_hidden", cnt);
  w.norm_noise = detail::load_layernorm<Backend, T>(be, ck, prefix + "norm_noise", cnt);
  for (std::int64_t b = 0; b < cfg.mlp_blocks; ++b) {
    const std::string p = prefix + "mlp_blocks." + std::to_string(b) + ".";
    energy_block_weights<Backend, T> k;
    k.in_ln = detail::load_layernorm<Backend, T>(be, ck, p + "in_ln", cnt);
    k.l0 = detail::load_linear<Backend, T>(be, ck, p + "linears.0", cnt);
    k.l2 = detail::load_linear<Backend, T>(be, ck, p + "linears.2", cnt);
    k.l4 = detail::load_linear<Backend, T>(be, ck, p + "linears.4", cnt);
    k.down = detail::load_linear<Backend, T>(be, ck, p + "down_proj", cnt);
    w.blocks.push_back(std::move(k));
  }
  w.final_ln = detail::load_layernorm<Backend, T>(be, ck, prefix + "final_layer.in_ln", cnt);
  w.final0 = detail::load_linear<Backend, T>(be, ck, prefix + "final_layer.linears.0", cnt);
  w.final2 = detail::load_linear<Backend, T>(be, ck, prefix + "final_layer.linears.2", cnt);
  return w;
}

/// \brief Loads the compressor `embed_proj.{0,2,3}`.
template <class Backend, class T>
compressor_weights<Backend, T> load_compressor_weights(const Backend& be, const io::checkpoint& ck) {
  compressor_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  w.l0 = detail::load_linear<Backend, T>(be, ck, "embed_proj.0", cnt);
  w.l2 = detail::load_linear<Backend, T>(be, ck, "embed_proj.2", cnt);
  w.ln = detail::load_layernorm<Backend, T>(be, ck, "embed_proj.3", cnt);
  return w;
}

/// \brief Loads the Llama backbone stored under `transformer.` into model_weights (embedding,
/// layers in the prelude group, final norm, RoPE table); no lm_head.
template <class Backend, class T>
model_weights<Backend, T> load_calm_backbone_weights(const Backend& be, const io::checkpoint& ck,
                                                     const llama_config& cfg) {
  model_weights<Backend, T> w;
  std::int64_t* cnt = &w.parameter_count;
  w.wte = detail::load_tensor<Backend, T>(be, ck, "transformer.embed_tokens.weight", cnt);
  w.ln_f = detail::load_tensor<Backend, T>(be, ck, "transformer.norm.weight", cnt);
  for (std::int64_t i = 0; i < cfg.n_layers_in_prelude; ++i)
    w.prelude.push_back(
        detail::load_llama_layer_at<Backend, T>(be, ck, cfg, "transformer.layers." + std::to_string(i), cnt));
  const std::vector<float> table = make_llama_rope_table(cfg);
  w.rope = be.template alloc<float>(table.size());
  be.upload(w.rope.data(), table.data(), table.size());
  return w;
}

}  // namespace muninn
