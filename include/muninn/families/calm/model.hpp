#pragma once
/// \file
/// \brief `calm_model<Backend, T>`: a `model<Backend, T, calm_arch>` loaded from the reference's
/// checkpoints as released (the autoencoder's folder may be named apart), with the energy head's
/// sampler at hand for the CALM front ends (generation with given draws, BrierLM).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/calm/arch.hpp"
#include "muninn/model/model.hpp"

namespace muninn {

/// \brief A CALM model on a backend: `model<Backend, T, calm_arch>` plus its head's sampler.
///
/// A step consumes one chunk of K tokens: `input::chunk_compress` maps them to one position, the
/// Llama stack runs it with a per-layer KV cache, and `head::energy`'s sampler turns the hidden
/// state into K tokens. `generate` (runtime/generate.hpp) serves the model itself
/// (`calm_model::arch_model()`) as any arch; `generate_calm` (runtime/calm_generate.hpp) adds the
/// reference's prompt padding and EOS rule.
template <class Backend, class T = float>
class calm_model {
 public:
  using model_type = muninn::model<Backend, T, calm_arch>;   ///< the model: slots only
  using backbone_type = model_type;                           ///< the same (earlier name)
  using context_type = typename model_type::context_type;     ///< its KV cache over chunk positions
  using sampler_type = calm_chunk_sampler<Backend, T>;        ///< the energy head's sampler

  /// \brief Loads a CALM directory; `ae_dir` names the autoencoder's directory (its config.json is
  /// always needed; its weights only when the CALM file does not embed them). Empty: the config's
  /// `ae_path` when it exists here, else `ae/` or `autoencoder/` beside the weights (io::open_calm).
  static calm_model load(const std::string& dir, const std::string& ae_dir = "", Backend be = Backend{}) {
    io::calm_files f = io::open_calm(dir, ae_dir);
    return calm_model(std::move(be), std::move(f));
  }

  /// \brief Builds the model from opened files.
  calm_model(Backend be, io::calm_files f)
      : m_(std::make_unique<model_type>(be, calm_model_config_of(f), load_calm_weights<Backend, T>(be, f))),
        sampler_(head::energy::make_sampler(*m_)) {}

  /// \brief Sizes and settings.
  const calm_config& config() const { return m_->config().calm; }
  /// \brief The backend.
  const Backend& backend() const { return m_->backend(); }
  /// \brief The model (`generate`, `forward`, contexts).
  const model_type& arch_model() const { return *m_; }
  /// \brief The model (the name callers know).
  const model_type& backbone() const { return *m_; }
  /// \brief The autoencoder.
  const chunk_autoencoder<Backend, T>& autoencoder() const { return m_->weights().autoencoder(); }
  /// \brief The energy head's sampler.
  sampler_type& sampler() { return sampler_; }
  /// \brief Tokens per step (K).
  std::int64_t patch_size() const { return config().patch_size; }
  /// \brief Parameters of backbone, compressor and head (the autoencoder counted apart).
  std::int64_t parameter_count() const { return m_->parameter_count(); }
  /// \brief Host only: stores the backbone layers' projection matrices in `format` (bf16 or q8,
  /// model::store_weights_as). The compressor, the energy head and the autoencoder stay fp32:
  /// the energy head samples from noise through several MLP blocks per step, where fp32 keeps
  /// the reference's draws reproducible. Call before any context is made.
  void store_weights_as(muninn::weight_format format) { m_->store_weights_as(format); }
  /// \brief How the backbone's projection matrices are stored.
  muninn::weight_format weight_format() const { return m_->weight_format(); }
  /// \brief Bytes of parameter storage (model::weight_bytes; the autoencoder not counted).
  std::size_t weight_bytes() const { return m_->weight_bytes(); }

  /// \brief A KV cache for `max_chunks` chunk positions, fed up to `max_feed` chunks per call.
  context_type make_context(std::int64_t max_chunks, std::int64_t max_feed = 256) const {
    context_limits lim;
    lim.max_tokens = max_chunks;
    lim.max_chunk = std::min(max_feed, max_chunks);
    return m_->make_context(lim);
  }

  /// \brief Feeds whole chunks (`ids`: n·K tokens) after what `ctx` holds; returns the
  /// normalised hidden state [n, d] for `logits_for::all`, or of the last chunk [1, d].
  std::vector<float> hidden(context_type& ctx, const std::vector<std::int32_t>& ids,
                            logits_for which = logits_for::all) {
    const std::int64_t n = std::int64_t(ids.size()), K = patch_size();
    MUNINN_CHECK(n > 0 && n % K == 0, "calm: ", n, " tokens is not a positive multiple of patch_size ", K);
    return m_->forward(ctx, ids, run_options{}, which);
  }

  /// \brief Latent samples from the head with the noise given (calm_chunk_sampler::sample_latents).
  std::vector<float> sample_latents(const std::vector<float>& hidden, const std::vector<float>& noise, std::int64_t S) {
    return sampler_.sample_latents(hidden, noise, S);
  }
  /// \brief Samples j0 … j0+S−1 at chunk position `p` (calm_chunk_sampler::sample_chunks): [S, K] ids.
  std::vector<std::int32_t> sample_chunks(const std::vector<float>& hidden, std::int64_t p, std::uint64_t seed,
                                          std::int64_t j0, std::int64_t S) {
    return sampler_.sample_chunks(hidden, p, seed, j0, S);
  }
  /// \brief S samples with the noise given (calm_chunk_sampler::sample_chunks_with_noise): [S, K] ids.
  std::vector<std::int32_t> sample_chunks_with_noise(const std::vector<float>& hidden, const std::vector<float>& noise,
                                                     std::int64_t S) {
    return sampler_.sample_chunks_with_noise(hidden, noise, S);
  }
  /// \brief The batch approximation at chunk position `p` (calm_chunk_sampler::choose_by_count).
  /// \param hidden      the hidden state [d] that feeds the head
  /// \param p           the chunk position (names the random streams)
  /// \param seed        the run's seed
  /// \param N           head samples to draw and count
  /// \param temperature T, with 1/T an integer
  /// \param order   how the candidates are listed before the choice
  /// \param noise   the head noise [N, noise_size], or empty for calm_noise(seed, p, 0, N)
  /// \param uniform the choice uniform in [0, 1), or null for chunk_choice_uniform(seed, p)
  std::vector<std::int32_t> choose_by_count(const std::vector<float>& hidden, std::int64_t p, std::uint64_t seed,
                                            std::int64_t N, double temperature,
                                            chunk_order order = chunk_order::key,
                                            const std::vector<float>& noise = {}, const double* uniform = nullptr) {
    return sampler_.choose_by_count(hidden, p, seed, N, temperature, order, noise, uniform);
  }
  /// \brief Samples 0 … S−1 for each of n hidden rows (calm_chunk_sampler::sample_chunks_rows): [n, S, K] ids.
  std::vector<std::int32_t> sample_chunks_rows(const std::vector<float>& hidden, std::int64_t p0, std::uint64_t seed,
                                               std::int64_t S) {
    return sampler_.sample_chunks_rows(hidden, p0, seed, S);
  }

 private:
  std::unique_ptr<model_type> m_;  // on the heap: the sampler points into its weights, and calm_model moves
  sampler_type sampler_;
};

}  // namespace muninn
