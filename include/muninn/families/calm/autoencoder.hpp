#pragma once
/// \file
/// \brief CALM's chunk autoencoder: K tokens ↔ one latent vector, as the reference computes it at
/// inference (no token dropout, no latent noise: the decoder reads the mean).

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/families/calm/config.hpp"
#include "muninn/families/calm/layers.hpp"
#include "muninn/families/calm/weights.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/nn/norm.hpp"

namespace muninn {

/// \brief A chunk autoencoder on a backend.
///
/// Encoder: embed K tokens → stage-0 layers per token → the K rows side by side (token-major)
/// → squeeze Linear(K·H → H) → stage-1 layers → RMSNorm → Linear(H → 2l) = mean; log σ.
/// Decoder: Linear(l → H) → stage-0 layers → expand Linear(H → K·H) → K rows → stage-1 layers →
/// RMSNorm → logits against the output matrix. Decoding to tokens runs in blocks of chunks so that
/// N·K × V logits never exist at once.
template <class Backend, class T = float>
class chunk_autoencoder {
 public:
  /// \brief Loads from a checkpoint whose tensors sit under `prefix` ("" for the autoencoder's own
  /// file, "ae_model." inside a CALM file), validating names and shapes first.
  chunk_autoencoder(Backend be, autoencoder_config cfg, const io::checkpoint& ck, const std::string& prefix = "")
      : be_(std::move(be)), cfg_(std::move(cfg)) {
    const auto specs = io::autoencoder_tensor_specs(cfg_, prefix);
    const io::tensor_spec_report r = io::check_tensor_specs(ck, specs, cfg_.source);
    if (r.n_problems) throw error(r.message(ck.source(), "CALM autoencoder"));
    if (prefix.empty() && !r.extras.empty()) throw error(r.message(ck.source(), "CALM autoencoder"));
    w_ = load_autoencoder_weights<Backend, T>(be_, ck, cfg_, prefix);
  }
  chunk_autoencoder(chunk_autoencoder&&) noexcept = default;             ///< movable
  chunk_autoencoder& operator=(chunk_autoencoder&&) noexcept = default;  ///< movable

  /// \brief Loads an autoencoder directory (config.json + pytorch_model.bin or model.safetensors).
  static chunk_autoencoder load(const std::string& dir, Backend be = Backend{}) {
    autoencoder_config cfg = io::read_autoencoder_config(dir);
    return chunk_autoencoder(std::move(be), std::move(cfg), io::checkpoint::open(dir));
  }

  /// \brief Sizes.
  const autoencoder_config& config() const { return cfg_; }
  /// \brief The backend.
  const Backend& backend() const { return be_; }
  /// \brief Unique parameters.
  std::int64_t parameter_count() const { return w_.parameter_count; }

  /// \brief Encodes `ids` (n·K tokens, n whole chunks; backend memory) into [n, 2l] on the
  /// backend: each row is mean (l values) then log σ (l values).
  void encode(const std::int32_t* ids, std::int64_t n, T* out) const {
    const std::int64_t H = cfg_.hidden_size, K = cfg_.patch_size;
    T* x = scratch_.get(be_, 0, std::size_t(n * K * H));
    embedding(be_, w_.embed.data(), cfg_.vocab_size, H, ids, n * K, 1.0f, x);
    run_stage(w_.encoder[0], x, n * K);
    T* y = scratch_.get(be_, 1, std::size_t(n * H));
    linear_forward(be_, w_.squeeze, x, n, y);  // [n, K·H] rows are the K token rows side by side
    run_stage(w_.encoder[1], y, n);
    nn::rms_norm<T>{w_.encoder_norm.data(), H, cfg_.eps}(be_, y, y, n);
    linear_forward(be_, w_.to_latent, y, n, out);
  }

  /// \brief Host convenience: mean; log σ per chunk [n, 2l] as float.
  std::vector<float> encode(const std::vector<std::int32_t>& ids) const {
    const std::int64_t n = check_chunks(ids);
    auto d_ids = upload_ids(ids);
    auto out = be_.template alloc<T>(std::size_t(n * 2 * cfg_.latent_size));
    encode(d_ids.data(), n, out.data());
    std::vector<float> host(out.size());
    engine::download_floats(be_, out.data(), std::int64_t(out.size()), host.data());
    return host;
  }

  /// \brief Decoder trunk: latents z [n, l] (backend) → normalised token rows [n·K, H] in `rows`.
  void decode_hidden(const T* z, std::int64_t n, T* rows) const {
    const std::int64_t H = cfg_.hidden_size;
    T* x = scratch_.get(be_, 2, std::size_t(n * H));
    linear_forward(be_, w_.from_latent, z, n, x);
    run_stage(w_.decoder[0], x, n);
    linear_forward(be_, w_.expand, x, n, rows);  // [n, K·H] = K token rows per chunk
    const std::int64_t tokens = n * cfg_.patch_size;
    run_stage(w_.decoder[1], rows, tokens);
    nn::rms_norm<T>{w_.decoder_norm.data(), H, cfg_.eps}(be_, rows, rows, tokens);
  }

  /// \brief Decodes latents z [n, l] (backend) to n·K token ids (backend), the arg-max of each
  /// token's logits, in blocks of chunks that bound the logits buffer to about `logits_budget` bytes.
  void decode_argmax(const T* z, std::int64_t n, std::int32_t* ids,
                     std::size_t logits_budget = std::size_t(64) << 20) const {
    const std::int64_t K = cfg_.patch_size, H = cfg_.hidden_size, V = cfg_.vocab_size, l = cfg_.latent_size;
    const std::int64_t per_block = std::max<std::int64_t>(1, std::int64_t(logits_budget / (sizeof(T) * K * V)));
    for (std::int64_t c0 = 0; c0 < n; c0 += per_block) {
      const std::int64_t m = std::min(per_block, n - c0);
      T* rows = scratch_.get(be_, 3, std::size_t(m * K * H));
      decode_hidden(z + c0 * l, m, rows);
      T* logits = scratch_.get(be_, 4, std::size_t(m * K * V));
      gemm_nt(be_, m * K, V, H, 1.0f, rows, H, w_.output_matrix(), H, 0.0f, logits, V);
      argmax_rows(be_, logits, m * K, V, ids + c0 * K);
    }
  }

  /// \brief Host convenience: logits [n·K, V] (float) of latents z [n, l] given on the host.
  std::vector<float> decode_logits(const std::vector<float>& z) const {
    const std::int64_t n = check_latents(z), K = cfg_.patch_size, H = cfg_.hidden_size, V = cfg_.vocab_size;
    auto dz = upload(z);
    T* rows = scratch_.get(be_, 3, std::size_t(n * K * H));
    decode_hidden(dz.data(), n, rows);
    auto logits = be_.template alloc<T>(std::size_t(n * K * V));
    gemm_nt(be_, n * K, V, H, 1.0f, rows, H, w_.output_matrix(), H, 0.0f, logits.data(), V);
    std::vector<float> host(logits.size());
    engine::download_floats(be_, logits.data(), std::int64_t(host.size()), host.data());
    return host;
  }

  /// \brief Host convenience: token ids [n·K] decoded from latents z [n, l] given on the host.
  std::vector<std::int32_t> decode(const std::vector<float>& z) const {
    const std::int64_t n = check_latents(z);
    auto dz = upload(z);
    auto ids = be_.template alloc<std::int32_t>(std::size_t(n * cfg_.patch_size));
    decode_argmax(dz.data(), n, ids.data());
    std::vector<std::int32_t> host(ids.size());
    be_.download(host.data(), ids.data(), host.size());
    return host;
  }

  /// \brief Round trip: decode(mean of encode(ids)), the autoencoder's reconstruction.
  std::vector<std::int32_t> reconstruct(const std::vector<std::int32_t>& ids) const {
    const std::vector<float> lat = encode(ids);
    const std::int64_t n = std::int64_t(ids.size()) / cfg_.patch_size, l = cfg_.latent_size;
    std::vector<float> mean(std::size_t(n * l));
    for (std::int64_t i = 0; i < n; ++i)
      std::copy(lat.begin() + i * 2 * l, lat.begin() + i * 2 * l + l, mean.begin() + i * l);
    return decode(mean);
  }

 private:
  void run_stage(const std::vector<ae_layer_weights<Backend, T>>& layers, T* x, std::int64_t rows) const {
    const std::int64_t H = cfg_.hidden_size, I = cfg_.intermediate_size;
    if (layers.empty()) return;
    T* t = scratch_.get(be_, 5, std::size_t(rows * H));
    T* gu = scratch_.get(be_, 6, std::size_t(rows * 2 * I));
    T* a = scratch_.get(be_, 7, std::size_t(rows * I));
    for (const auto& w : layers) ae_layer_forward(be_, w, x, rows, H, I, cfg_.eps, t, gu, a);
  }

  std::int64_t check_chunks(const std::vector<std::int32_t>& ids) const {
    const std::int64_t n = std::int64_t(ids.size()), K = cfg_.patch_size;
    MUNINN_CHECK(n > 0 && n % K == 0, "autoencoder: ", n, " tokens is not a positive multiple of patch_size ", K,
                 " (", cfg_.source, ")");
    for (std::size_t i = 0; i < ids.size(); ++i)
      MUNINN_CHECK(ids[i] >= 0 && ids[i] < cfg_.vocab_size, "autoencoder: token id ", ids[i], " at index ", i,
                   " is out of range for vocab_size ", cfg_.vocab_size);
    return n / K;
  }
  std::int64_t check_latents(const std::vector<float>& z) const {
    const std::int64_t l = cfg_.latent_size;
    MUNINN_CHECK(!z.empty() && std::int64_t(z.size()) % l == 0, "autoencoder: ", z.size(),
                 " latent values is not a positive multiple of latent_size ", l);
    return std::int64_t(z.size()) / l;
  }
  typename Backend::template buffer<std::int32_t> upload_ids(const std::vector<std::int32_t>& ids) const {
    auto d = be_.template alloc<std::int32_t>(ids.size());
    be_.upload(d.data(), ids.data(), ids.size());
    return d;
  }
  typename Backend::template buffer<T> upload(const std::vector<float>& v) const {
    auto d = be_.template alloc<T>(v.size());
    engine::upload_floats(be_, d.data(), v.data(), std::int64_t(v.size()));
    return d;
  }

  Backend be_;
  autoencoder_config cfg_;
  autoencoder_weights<Backend, T> w_;
  // Activations of the calls (the decoder is const: a head decodes with it from the model's
  // weights); one call at a time per autoencoder.
  mutable calm_scratch<Backend, T> scratch_;
};

}  // namespace muninn
