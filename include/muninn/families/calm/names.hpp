#pragma once
/// \file
/// \brief The tensor names and shapes of CALM checkpoints as the reference saves them: the
/// autoencoder (alone, or embedded under `ae_model.`), the compressor `embed_proj`, the energy
/// head (stored twice, under `mlp_generator.` and `generative_head.`) and the Llama backbone under
/// `transformer.`.

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/families/calm/config.hpp"
#include "muninn/families/llama/names.hpp"
#include "muninn/io/tensor_specs.hpp"

namespace muninn::io {

/// \brief The two prefixes the energy head is stored under (the reference registers one module
/// under both names); a loader reads the first present and checks the other equal.
inline const char* const calm_head_prefixes[2] = {"generative_head.", "mlp_generator."};

/// \brief The prefix of the autoencoder embedded in a CALM checkpoint.
inline constexpr const char* calm_embedded_ae_prefix = "ae_model.";

namespace detail {
inline void add_linear(std::vector<tensor_spec>& s, const std::string& name, std::int64_t out, std::int64_t in,
                       const std::string& why) {
  s.push_back({name + ".weight", {out, in}, false, -1, why});
  s.push_back({name + ".bias", {out}, false, -1, why});
}
inline void add_layernorm(std::vector<tensor_spec>& s, const std::string& name, std::int64_t n, const std::string& why) {
  s.push_back({name + ".weight", {n}, false, -1, why});
  s.push_back({name + ".bias", {n}, false, -1, why});
}
inline void add_ae_layers(std::vector<tensor_spec>& s, const std::string& p, std::int64_t n, std::int64_t H,
                          std::int64_t I, const std::string& why) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string l = p + "." + std::to_string(i);
    s.push_back({l + ".layernorm.weight", {H}, false, -1, why});
    s.push_back({l + ".mlp.gate_proj.weight", {I, H}, false, -1, why});
    s.push_back({l + ".mlp.up_proj.weight", {I, H}, false, -1, why});
    s.push_back({l + ".mlp.down_proj.weight", {H, I}, false, -1, why});
  }
}
}  // namespace detail

/// \brief Every tensor of a chunk autoencoder, names prefixed by `prefix` ("" for the
/// autoencoder's own file, "ae_model." inside a CALM file).
///
/// encoder.embed_tokens [V, H]; encoder.encoder_layers.N.{layernorm [H], mlp.gate_proj [I, H],
/// mlp.up_proj [I, H], mlp.down_proj [H, I]}; encoder.squeeze_layer [H, K·H] + bias;
/// encoder.norm [H]; encoder.hidden_to_latent [2l, H] + bias; decoder.latent_to_hidden [H, l] +
/// bias; decoder.decoder_layers.N.*; decoder.expand_layer [K·H, H] + bias; decoder.norm [H];
/// decoder.lm_head_weight [V, H], optional: a deduplicated safetensors file drops it, and the
/// encoder embedding is the output matrix then.
inline std::vector<tensor_spec> autoencoder_tensor_specs(const autoencoder_config& c, const std::string& prefix) {
  const std::int64_t V = c.vocab_size, H = c.hidden_size, I = c.intermediate_size, l = c.latent_size,
                     K = c.patch_size;
  const std::string why = "vocab_size=" + std::to_string(V) + ", hidden_size=" + std::to_string(H) +
                          ", intermediate_size=" + std::to_string(I) + ", latent_size=" + std::to_string(l) +
                          ", patch_size=" + std::to_string(K);
  std::vector<tensor_spec> s;
  const std::string e = prefix + "encoder.", d = prefix + "decoder.";
  s.push_back({e + "embed_tokens.weight", {V, H}, false, -1, why});
  detail::add_ae_layers(s, e + "encoder_layers", c.encoder_layers, H, I, why);
  detail::add_linear(s, e + "squeeze_layer", H, K * H, why);
  s.push_back({e + "norm.weight", {H}, false, -1, why});
  detail::add_linear(s, e + "hidden_to_latent", 2 * l, H, why);
  s.push_back({d + "lm_head_weight", {V, H}, true, -1, why});
  detail::add_linear(s, d + "latent_to_hidden", H, l, why);
  detail::add_ae_layers(s, d + "decoder_layers", c.decoder_layers, H, I, why);
  detail::add_linear(s, d + "expand_layer", K * H, H, why);
  s.push_back({d + "norm.weight", {H}, false, -1, why});
  return s;
}

/// \brief The energy head's tensors under `prefix` (one of calm_head_prefixes): noise_embd
/// [d, noise] + bias, hidden_embd [d, d] + bias, norm_hidden and norm_noise (LayerNorm [d] +
/// bias); per block N `mlp_blocks.N.`: in_ln, linears.0 [d, 2d], linears.2 [d, d], linears.4
/// [2d, d], down_proj [d, d] (all with biases); final_layer.in_ln, final_layer.linears.0 [d, d],
/// final_layer.linears.2 [l, d].
inline std::vector<tensor_spec> energy_head_tensor_specs(const calm_config& c, const std::string& prefix,
                                                         bool optional) {
  const std::int64_t d = c.backbone.n_embd;
  const std::string why = "hidden_size=" + std::to_string(d) + ", noise_size=" + std::to_string(c.noise_size) +
                          ", latent_size=" + std::to_string(c.latent_size);
  std::vector<tensor_spec> s;
  detail::add_linear(s, prefix + "noise_embd", d, c.noise_size, why);
  detail::add_linear(s, prefix + "hidden_embd", d, d, why);
  detail::add_layernorm(s, prefix + "norm_hidden", d, why);
  detail::add_layernorm(s, prefix + "norm_noise", d, why);
  for (std::int64_t b = 0; b < c.mlp_blocks; ++b) {
    const std::string p = prefix + "mlp_blocks." + std::to_string(b) + ".";
    detail::add_layernorm(s, p + "in_ln", d, why);
    detail::add_linear(s, p + "linears.0", d, 2 * d, why);
    detail::add_linear(s, p + "linears.2", d, d, why);
    detail::add_linear(s, p + "linears.4", 2 * d, d, why);
    detail::add_linear(s, p + "down_proj", d, d, why);
  }
  detail::add_layernorm(s, prefix + "final_layer.in_ln", d, why);
  detail::add_linear(s, prefix + "final_layer.linears.0", d, d, why);
  detail::add_linear(s, prefix + "final_layer.linears.2", c.latent_size, d, why);
  for (auto& t : s) t.optional = optional;
  return s;
}

/// \brief The compressor and the backbone: embed_proj.0 [2d, K·d] + bias, embed_proj.2 [d, 2d] +
/// bias, embed_proj.3 (LayerNorm [d] + bias), and the Llama layout under `transformer.` (no
/// lm_head: the backbone's output feeds the energy head).
inline std::vector<tensor_spec> calm_backbone_tensor_specs(const calm_config& c) {
  const std::int64_t d = c.backbone.n_embd, K = c.patch_size;
  const std::string why = "hidden_size=" + std::to_string(d) + ", patch_size=" + std::to_string(K);
  std::vector<tensor_spec> s;
  detail::add_linear(s, "embed_proj.0", 2 * d, K * d, why);
  detail::add_linear(s, "embed_proj.2", d, 2 * d, why);
  detail::add_layernorm(s, "embed_proj.3", d, why);
  for (tensor_spec t : llama_tensor_specs(c.backbone)) {
    if (t.name == "lm_head.weight") continue;
    t.name = "transformer." + t.name.substr(std::string("model.").size());
    s.push_back(std::move(t));
  }
  return s;
}

}  // namespace muninn::io
