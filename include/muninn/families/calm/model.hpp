#pragma once
/// \file
/// \brief `calm_model<Backend, T>`: a Continuous Autoregressive Language Model — compressor →
/// Llama backbone over chunk positions → energy head → chunk autoencoder — loaded from the
/// reference's checkpoints as released.

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/families/calm/autoencoder.hpp"
#include "muninn/families/calm/checkpoint.hpp"
#include "muninn/families/calm/energy_head.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/model/model.hpp"
#include "muninn/nn/norm.hpp"
#include "muninn/ops/chunk_choice.hpp"

namespace muninn {

/// \brief CALM's backbone: a plain Llama stack whose head is the final RMSNorm (its output rows
/// are hidden states for the energy head, not logits); inputs come as rows (`input_rows`).
using calm_backbone_arch = llama_arch::with<head::final_norm>;

/// \brief A CALM model on a backend.
///
/// A step consumes one chunk of K tokens: the compressor maps their K backbone embeddings to one
/// row, the backbone runs it at the next chunk position with a per-layer KV cache, and the energy
/// head turns the hidden state and noise into latent samples that the autoencoder decodes to K
/// tokens each. Sampling policies (temperature) live in runtime/calm_generate.hpp.
template <class Backend, class T = float>
class calm_model {
 public:
  using backbone_type = model<Backend, T, calm_backbone_arch>;  ///< the Llama backbone
  using context_type = typename backbone_type::context_type;    ///< its KV cache over chunk positions

  /// \brief Loads a CALM directory; `ae_dir` names the autoencoder's directory (its config.json is
  /// always needed; its weights only when the CALM file does not embed them). Empty: the config's
  /// `ae_path` when it exists here, else `ae/` or `autoencoder/` beside the weights (io::open_calm).
  static calm_model load(const std::string& dir, const std::string& ae_dir = "", Backend be = Backend{}) {
    io::calm_files f = io::open_calm(dir, ae_dir);
    return calm_model(std::move(be), std::move(f));
  }

  /// \brief Builds the model from opened files.
  calm_model(Backend be, io::calm_files f)
      : be_(be), cfg_(std::move(f.config)),
        backbone_(be, cfg_.backbone, load_calm_backbone_weights<Backend, T>(be, f.model, cfg_.backbone)),
        compressor_(load_compressor_weights<Backend, T>(be, f.model)),
        head_(load_energy_head_weights<Backend, T>(be, f.model, cfg_, f.head_prefix)),
        ae_(be, f.ae_config, f.ae_embedded ? f.model : *f.ae, f.ae_embedded ? io::calm_embedded_ae_prefix : "") {}

  /// \brief Sizes and settings.
  const calm_config& config() const { return cfg_; }
  /// \brief The backend.
  const Backend& backend() const { return be_; }
  /// \brief The backbone.
  const backbone_type& backbone() const { return backbone_; }
  /// \brief The autoencoder.
  chunk_autoencoder<Backend, T>& autoencoder() { return ae_; }
  /// \brief Tokens per step (K).
  std::int64_t patch_size() const { return cfg_.patch_size; }
  /// \brief Parameters of backbone, compressor and head (the autoencoder counted apart).
  std::int64_t parameter_count() const {
    return backbone_.parameter_count() + compressor_.parameter_count + head_.parameter_count;
  }

  /// \brief A KV cache for `max_chunks` chunk positions, fed up to `max_feed` chunks per call.
  context_type make_context(std::int64_t max_chunks, std::int64_t max_feed = 256) const {
    context_limits lim;
    lim.max_tokens = max_chunks;
    lim.max_chunk = std::min(max_feed, max_chunks);
    return backbone_.make_context(lim);
  }

  /// \brief Feeds whole chunks (`ids`: n·K tokens) after what `ctx` holds; returns the backbone's
  /// normalised hidden state [n, d] for `logits_for::all`, or of the last chunk [1, d].
  std::vector<float> hidden(context_type& ctx, const std::vector<std::int32_t>& ids,
                            logits_for which = logits_for::all) {
    const std::int64_t n = check_chunks(ids);
    T* rows = compress(ids, n);
    run_options opt;
    opt.input_rows = rows;
    return backbone_.forward(ctx, std::vector<std::int32_t>(std::size_t(n), 0), opt, which);
  }

  /// \brief Latent samples from the head with the noise given: `hidden` [n, d], `noise`
  /// [n·S, noise_size] (row i·S + s is sample s of row i); returns [n·S, l].
  std::vector<float> sample_latents(const std::vector<float>& hidden, const std::vector<float>& noise, std::int64_t S) {
    const std::int64_t n = hidden_rows(hidden);
    MUNINN_CHECK(S > 0 && std::int64_t(noise.size()) == n * S * cfg_.noise_size, "calm: noise holds ", noise.size(),
                 " values; ", n, " rows x ", S, " samples x noise_size ", cfg_.noise_size, " expected");
    const T* z = head_samples(hidden, noise, n, S);
    std::vector<float> out(std::size_t(n * S * cfg_.latent_size));
    engine::download_floats(be_, z, std::int64_t(out.size()), out.data());
    return out;
  }

  /// \brief Samples j0 … j0+S−1 at chunk position `p` from one hidden state [d] with the
  /// counter-based noise of `seed` (calm_noise), decoded to tokens: [S, K] ids.
  std::vector<std::int32_t> sample_chunks(const std::vector<float>& hidden, std::int64_t p, std::uint64_t seed,
                                          std::int64_t j0, std::int64_t S) {
    check_one_row(hidden);
    return download_ids(decoded_samples(hidden, calm_noise(seed, p, j0, S, cfg_.noise_size), 1, S),
                        S * cfg_.patch_size);
  }

  /// \brief S samples from one hidden state [d] with the noise given ([S, noise_size], e.g. a
  /// reference run's), decoded to tokens: [S, K] ids.
  std::vector<std::int32_t> sample_chunks_with_noise(const std::vector<float>& hidden, const std::vector<float>& noise,
                                                     std::int64_t S) {
    check_one_row(hidden);
    check_noise(noise, S);
    return download_ids(decoded_samples(hidden, noise, 1, S), S * cfg_.patch_size);
  }

  /// \brief The batch approximation at chunk position `p`: samples 0 … N−1 from one hidden
  /// state [d], decoded, counted and chosen on the backend (`choose_chunks`, ops/chunk_choice.hpp);
  /// only the K chosen ids cross to the host.
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
    check_one_row(hidden);
    const std::int64_t K = cfg_.patch_size;
    if (!noise.empty()) check_noise(noise, N);
    const std::int32_t* ids =
        decoded_samples(hidden, noise.empty() ? calm_noise(seed, p, 0, N, cfg_.noise_size) : noise, 1, N);
    if (positions_.size() == 0) positions_ = be_.template alloc<std::int64_t>(1);
    be_.upload(positions_.data(), &p, 1);
    chunk_choice_options opt;
    opt.order = order;
    if (uniform) {
      detail::check_choice_uniforms("calm", uniform, 1);
      if (uniforms_.size() == 0) uniforms_ = be_.template alloc<double>(1);
      be_.upload(uniforms_.data(), uniform, 1);
      opt.uniforms = uniforms_.data();
    }
    std::int32_t* chosen = scratch_.ids(be_, 3, std::size_t(K));
    choose_chunks(be_, ids, 1, N, K, temperature, seed, positions_.data(), chosen, nullptr, opt);
    return download_ids(chosen, K);
  }

  /// \brief Samples 0 … S−1 for each of n hidden rows [n, d] at chunk positions p0 … p0+n−1
  /// (noise of `seed` by calm_noise), decoded: [n, S, K] ids.
  std::vector<std::int32_t> sample_chunks_rows(const std::vector<float>& hidden, std::int64_t p0, std::uint64_t seed,
                                               std::int64_t S) {
    const std::int64_t n = hidden_rows(hidden);
    std::vector<float> noise;
    noise.reserve(std::size_t(n * S * cfg_.noise_size));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::vector<float> u = calm_noise(seed, p0 + i, 0, S, cfg_.noise_size);
      noise.insert(noise.end(), u.begin(), u.end());
    }
    return download_ids(decoded_samples(hidden, noise, n, S), n * S * cfg_.patch_size);
  }

 private:
  // The head's latents [n·S, l] on the backend for `hidden` [n, d] and `noise` [n·S, noise_size].
  const T* head_samples(const std::vector<float>& hidden, const std::vector<float>& noise, std::int64_t n,
                        std::int64_t S) {
    T* z = scratch_.get(be_, 22, std::size_t(n * S * cfg_.latent_size));
    head::energy::sample(be_, head_, put(20, hidden), n, put(21, noise), S, z, scratch_);
    return z;
  }

  // head_samples decoded by the autoencoder: [n·S, K] ids on the backend.
  const std::int32_t* decoded_samples(const std::vector<float>& hidden, const std::vector<float>& noise,
                                      std::int64_t n, std::int64_t S) {
    const T* z = head_samples(hidden, noise, n, S);
    std::int32_t* ids = scratch_.ids(be_, 1, std::size_t(n * S * cfg_.patch_size));
    ae_.decode_argmax(z, n * S, ids);
    return ids;
  }

  std::vector<std::int32_t> download_ids(const std::int32_t* ids, std::int64_t count) const {
    std::vector<std::int32_t> out(static_cast<std::size_t>(count));
    be_.download(out.data(), ids, out.size());
    return out;
  }

  // Rows of a [n, d] hidden-state buffer; a size that is not a positive multiple of d is an error.
  std::int64_t hidden_rows(const std::vector<float>& hidden) const {
    const std::int64_t d = cfg_.backbone.n_embd, n = std::int64_t(hidden.size()) / d;
    MUNINN_CHECK(n > 0 && n * d == std::int64_t(hidden.size()), "calm: hidden holds ", hidden.size(),
                 " values, not a positive multiple of hidden_size ", d);
    return n;
  }
  void check_noise(const std::vector<float>& noise, std::int64_t S) const {
    MUNINN_CHECK(std::int64_t(noise.size()) == S * cfg_.noise_size, "calm: the given noise holds ", noise.size(),
                 " values; ", S, " samples x noise_size ", cfg_.noise_size, " expected");
  }
  void check_one_row(const std::vector<float>& hidden) const {
    MUNINN_CHECK(std::int64_t(hidden.size()) == cfg_.backbone.n_embd, "calm: one hidden row of ",
                 cfg_.backbone.n_embd, " values expected, got ", hidden.size());
  }

  // embed_proj: the K backbone embeddings of each chunk side by side → Linear → SiLU → Linear → LayerNorm.
  T* compress(const std::vector<std::int32_t>& ids, std::int64_t n) {
    const std::int64_t d = cfg_.backbone.n_embd, K = cfg_.patch_size;
    std::int32_t* dids = scratch_.ids(be_, 2, ids.size());
    be_.upload(dids, ids.data(), ids.size());
    T* e = scratch_.get(be_, 23, std::size_t(n * K * d));
    embedding(be_, backbone_.weights().wte.data(), cfg_.backbone.vocab_size, d, dids, n * K, 1.0f, e);
    T* a = scratch_.get(be_, 24, std::size_t(n * 2 * d));
    linear_forward(be_, compressor_.l0, e, n, a);
    silu(be_, a, n * 2 * d);
    T* rows = scratch_.get(be_, 25, std::size_t(n * d));
    linear_forward(be_, compressor_.l2, a, n, rows);
    nn::layer_norm<T>{compressor_.ln.w.data(), compressor_.ln.b.data(), d, 1e-6f}(be_, rows, rows, n);
    return rows;
  }

  T* put(std::size_t slot, const std::vector<float>& v) {
    T* d = scratch_.get(be_, slot, v.size());
    engine::upload_floats(be_, d, v.data(), std::int64_t(v.size()));
    return d;
  }

  std::int64_t check_chunks(const std::vector<std::int32_t>& ids) const {
    const std::int64_t n = std::int64_t(ids.size()), K = cfg_.patch_size;
    MUNINN_CHECK(n > 0 && n % K == 0, "calm: ", n, " tokens is not a positive multiple of patch_size ", K);
    for (std::size_t i = 0; i < ids.size(); ++i)
      MUNINN_CHECK(ids[i] >= 0 && ids[i] < cfg_.backbone.vocab_size, "calm: token id ", ids[i], " at index ", i,
                   " is out of range for vocab_size ", cfg_.backbone.vocab_size);
    return n / K;
  }

  Backend be_;
  calm_config cfg_;
  backbone_type backbone_;
  compressor_weights<Backend, T> compressor_;
  energy_head_weights<Backend, T> head_;
  chunk_autoencoder<Backend, T> ae_;
  calm_scratch<Backend, T> scratch_;
  typename Backend::template buffer<std::int64_t> positions_;  // the chosen row's chunk position
  typename Backend::template buffer<double> uniforms_;        // a given choice uniform
};

}  // namespace muninn
