#pragma once
/// \file
/// \brief The energy head's sampler: hidden state → latent samples (the generator) → K tokens
/// each (the autoencoder's decoder) → one chunk at temperature T (one head sample at T = 1, the
/// batch approximation or the exact sampler below it), on the backend.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/families/calm/autoencoder.hpp"
#include "muninn/families/calm/config.hpp"
#include "muninn/families/calm/energy_head.hpp"
#include "muninn/ops/chunk_choice.hpp"
#include "muninn/model/taps.hpp"
#include "muninn/ops/chunk_exact.hpp"
#include "muninn/policies/head.hpp"

namespace muninn {

/// \brief The sampler rule and the given draws' fit to it, checked before any work.
/// \throws muninn::error for T outside (0, 1], a batch-approximation T whose 1/T is not an
///         integer, given noise or uniforms the sampler does not draw, or noise of the wrong shape
inline void check_chunk_sampling(const chunk_sampling_options& o, std::int64_t noise_size) {
  if (o.sampler == chunk_sampler::approximate)
    batch_temperature_n(o.temperature);
  else
    split_temperature(o.temperature);
  const bool batch = o.temperature != 1.0 && o.sampler == chunk_sampler::approximate;
  MUNINN_CHECK(o.noise.empty() || o.temperature == 1.0 || batch,
               "calm generate: given noise needs T = 1 or the batch approximation (the exact sampler draws a "
               "random number of head samples)");
  MUNINN_CHECK(!batch || o.num_samples >= 1, "calm generate: num_samples must be >= 1, got ", o.num_samples);
  const std::int64_t S = batch ? o.num_samples : 1;
  MUNINN_CHECK(o.noise.size() % std::size_t(S * noise_size) == 0, "calm generate: the given noise holds ",
               o.noise.size(), " values, not a whole number of steps of ", S, " samples x noise_size ", noise_size);
  for (std::size_t i = 0; i < o.noise.size(); ++i)
    MUNINN_CHECK(std::isfinite(o.noise[i]), "calm generate: given noise value ", i, " is ", o.noise[i]);
  MUNINN_CHECK(o.uniforms.empty() || batch,
               "calm generate: given choice uniforms need the batch approximation below T = 1 (nothing else draws "
               "them)");
  detail::check_choice_uniforms("calm generate: given uniforms", o.uniforms.data(), std::int64_t(o.uniforms.size()));
}

/// \brief Draws chunks from hidden states with the energy head and the autoencoder of a model's
/// weights (which it reads, never owns); its scratch is its own, so one sampler serves one
/// generation at a time.
template <class Backend, class T>
class calm_chunk_sampler {
 public:
  /// \brief A sampler over the head's weights, the autoencoder and the settings of `cfg`.
  calm_chunk_sampler(const Backend& be, const energy_head_weights<Backend, T>& head,
                     const chunk_autoencoder<Backend, T>& ae, const calm_config& cfg)
      : be_(be), head_(&head), ae_(&ae), cfg_(&cfg) {}

  /// \brief Throws unless `o` fits this head (check_chunk_sampling): called once before a generation.
  void check(const chunk_sampling_options& o) const { check_chunk_sampling(o, cfg_->noise_size); }

  /// \brief One chunk (K ids) from the output row `row` [d] of chunk position `p`, the `step`-th
  /// chunk of a generation (it picks the slice of given draws); `draws` receives the head samples used.
  ///
  /// `taps`, when its callback is set, receives the step's head taps with `tap_event::step` =
  /// `step`: `head.samples` [S, l] (every latent the head drew for this chunk, in draw order),
  /// `head.latent` [1, l] (the first of them that decodes to the chosen chunk; its position is
  /// its index among the samples) and `ae.logits` [K, V] (the decoder's logits for that latent,
  /// whose arg-max per row is the chunk; positions: the chunk's token positions, (p+1)·K …).
  /// Taps never change the chunk drawn.
  std::vector<std::int32_t> next(const float* row, std::int64_t p, std::int64_t step,
                                 const chunk_sampling_options& o, std::int64_t& draws,
                                 const tap_options* taps = nullptr) {
    const bool tapped = taps && (taps->wants("head.samples") || taps->wants("head.latent") ||
                                 taps->wants("ae.logits"));
    if (!tapped) return draw(row, p, step, o, draws);
    recorded_latents_.clear();
    recorded_ids_.clear();
    recording_ = true;
    std::vector<std::int32_t> chunk;
    try {
      chunk = draw(row, p, step, o, draws);
    } catch (...) {
      recording_ = false;
      throw;
    }
    recording_ = false;
    emit_taps(*taps, chunk, p, step, draws);
    return chunk;
  }

 private:
  // next() without taps.
  std::vector<std::int32_t> draw(const float* row, std::int64_t p, std::int64_t step, const chunk_sampling_options& o,
                                 std::int64_t& draws) {
    const std::vector<float> h(row, row + cfg_->backbone.n_embd);
    const std::int64_t K = cfg_->patch_size;
    if (o.temperature == 1.0) {  // one head sample, whichever sampler (both reduce to it)
      draws = 1;
      if (!o.noise.empty()) return sample_chunks_with_noise(h, given_noise(o, step, 1), 1);
      return sample_chunks(h, p, o.seed, 0, 1);
    }
    if (o.sampler == chunk_sampler::approximate) {
      draws = o.num_samples;
      const std::vector<float> noise = o.noise.empty() ? std::vector<float>{} : given_noise(o, step, o.num_samples);
      const double* uniform = nullptr;
      if (!o.uniforms.empty()) {
        MUNINN_CHECK(step < std::int64_t(o.uniforms.size()), "calm generate: the given uniforms hold ",
                     o.uniforms.size(), " steps; step ", step + 1, " needs one more");
        uniform = &o.uniforms[std::size_t(step)];
      }
      return choose_by_count(h, p, o.seed, o.num_samples, o.temperature, o.order, noise, uniform);
    }
    std::vector<std::int32_t> chunk(std::size_t(K), 0);
    const auto source = [&](std::int64_t first, std::int64_t count, std::int32_t* ids) {
      const std::vector<std::int32_t> got = sample_chunks(h, p, o.seed, first, count);
      std::copy(got.begin(), got.end(), ids);
    };
    exact_chunk_options eo;
    eo.max_draws = o.max_draws;
    eo.batch = o.draw_batch;
    draws = sample_chunk_exact(source, K, o.temperature, o.seed, p, chunk.data(), eo).draws;
    return chunk;
  }

  // The head taps of one generated chunk from what decoded_samples recorded while it was drawn.
  // Only the first `draws` samples count (the exact sampler's last batch may hold unused ones).
  void emit_taps(const tap_options& taps, const std::vector<std::int32_t>& chunk, std::int64_t p, std::int64_t step,
                 std::int64_t draws) {
    const std::int64_t K = cfg_->patch_size, l = cfg_->latent_size;
    const std::int64_t S = std::min<std::int64_t>(draws, std::int64_t(recorded_latents_.size()) / l);
    if (taps.wants("head.samples")) {
      tap_event e;
      e.name = "head.samples";
      e.step = step;
      e.rows = S;
      e.cols = l;
      e.data = recorded_latents_.data();
      taps.on_tap(e);
    }
    if (!taps.wants("head.latent") && !taps.wants("ae.logits")) return;
    std::int64_t j = 0;
    while (j < S && !std::equal(chunk.begin(), chunk.end(), recorded_ids_.begin() + std::ptrdiff_t(j * K))) ++j;
    MUNINN_CHECK(j < S, "calm: the chosen chunk is none of the ", S, " head samples drawn for it");
    const std::vector<float> z(recorded_latents_.begin() + std::ptrdiff_t(j * l),
                               recorded_latents_.begin() + std::ptrdiff_t((j + 1) * l));
    if (taps.wants("head.latent")) {
      tap_event e;
      e.name = "head.latent";
      e.step = step;
      e.rows = 1;
      e.cols = l;
      e.data = z.data();
      e.positions = &j;
      taps.on_tap(e);
    }
    if (taps.wants("ae.logits")) {
      const std::vector<float> logits = ae_->decode_logits(z);
      std::vector<std::int64_t> pos(static_cast<std::size_t>(K));
      for (std::int64_t t = 0; t < K; ++t) pos[std::size_t(t)] = (p + 1) * K + t;
      tap_event e;
      e.name = "ae.logits";
      e.step = step;
      e.rows = K;
      e.cols = std::int64_t(logits.size()) / K;
      e.data = logits.data();
      e.positions = pos.data();
      taps.on_tap(e);
    }
  }

 public:

  /// \brief Latent samples from the head with the noise given: `hidden` [n, d], `noise`
  /// [n·S, noise_size] (row i·S + s is sample s of row i); returns [n·S, l].
  std::vector<float> sample_latents(const std::vector<float>& hidden, const std::vector<float>& noise, std::int64_t S) {
    const std::int64_t n = hidden_rows(hidden);
    MUNINN_CHECK(S > 0 && std::int64_t(noise.size()) == n * S * cfg_->noise_size, "calm: noise holds ", noise.size(),
                 " values; ", n, " rows x ", S, " samples x noise_size ", cfg_->noise_size, " expected");
    const T* z = head_samples(hidden, noise, n, S);
    std::vector<float> out(std::size_t(n * S * cfg_->latent_size));
    engine::download_floats(be_, z, std::int64_t(out.size()), out.data());
    return out;
  }

  /// \brief Samples j0 … j0+S−1 at chunk position `p` from one hidden state [d] with the
  /// counter-based noise of `seed` (calm_noise), decoded to tokens: [S, K] ids.
  std::vector<std::int32_t> sample_chunks(const std::vector<float>& hidden, std::int64_t p, std::uint64_t seed,
                                          std::int64_t j0, std::int64_t S) {
    check_one_row(hidden);
    return download_ids(decoded_samples(hidden, calm_noise(seed, p, j0, S, cfg_->noise_size), 1, S),
                        S * cfg_->patch_size);
  }

  /// \brief S samples from one hidden state [d] with the noise given ([S, noise_size]), decoded: [S, K] ids.
  std::vector<std::int32_t> sample_chunks_with_noise(const std::vector<float>& hidden, const std::vector<float>& noise,
                                                     std::int64_t S) {
    check_one_row(hidden);
    check_noise(noise, S);
    return download_ids(decoded_samples(hidden, noise, 1, S), S * cfg_->patch_size);
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
                                            std::int64_t N, double temperature, chunk_order order = chunk_order::key,
                                            const std::vector<float>& noise = {}, const double* uniform = nullptr) {
    check_one_row(hidden);
    const std::int64_t K = cfg_->patch_size;
    if (!noise.empty()) check_noise(noise, N);
    const std::int32_t* ids =
        decoded_samples(hidden, noise.empty() ? calm_noise(seed, p, 0, N, cfg_->noise_size) : noise, 1, N);
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
    noise.reserve(std::size_t(n * S * cfg_->noise_size));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::vector<float> u = calm_noise(seed, p0 + i, 0, S, cfg_->noise_size);
      noise.insert(noise.end(), u.begin(), u.end());
    }
    return download_ids(decoded_samples(hidden, noise, n, S), n * S * cfg_->patch_size);
  }

 private:
  // Step `step`'s slice [S, noise_size] of the given noise.
  std::vector<float> given_noise(const chunk_sampling_options& o, std::int64_t step, std::int64_t S) const {
    const std::size_t per = std::size_t(S * cfg_->noise_size);
    MUNINN_CHECK(o.noise.size() >= (std::size_t(step) + 1) * per, "calm generate: the given noise holds ",
                 o.noise.size() / per, " steps of ", S, " samples x noise_size ", cfg_->noise_size, "; step ", step + 1,
                 " needs one more");
    return std::vector<float>(o.noise.begin() + std::ptrdiff_t(std::size_t(step) * per),
                              o.noise.begin() + std::ptrdiff_t((std::size_t(step) + 1) * per));
  }

  // The head's latents [n·S, l] on the backend for `hidden` [n, d] and `noise` [n·S, noise_size].
  const T* head_samples(const std::vector<float>& hidden, const std::vector<float>& noise, std::int64_t n,
                        std::int64_t S) {
    T* z = scratch_.get(be_, 22, std::size_t(n * S * cfg_->latent_size));
    energy_generator::sample(be_, *head_, put(20, hidden), n, put(21, noise), S, z, scratch_);
    return z;
  }

  // head_samples decoded by the autoencoder: [n·S, K] ids on the backend.
  const std::int32_t* decoded_samples(const std::vector<float>& hidden, const std::vector<float>& noise, std::int64_t n,
                                      std::int64_t S) {
    const T* z = head_samples(hidden, noise, n, S);
    std::int32_t* ids = scratch_.ids(be_, 1, std::size_t(n * S * cfg_->patch_size));
    ae_->decode_argmax(z, n * S, ids);
    if (recording_) {  // next() with head taps: the samples and their chunks, in draw order
      const std::size_t nl = std::size_t(n * S * cfg_->latent_size), nk = std::size_t(n * S * cfg_->patch_size);
      recorded_latents_.resize(recorded_latents_.size() + nl);
      engine::download_floats(be_, z, std::int64_t(nl), recorded_latents_.data() + recorded_latents_.size() - nl);
      recorded_ids_.resize(recorded_ids_.size() + nk);
      be_.download(recorded_ids_.data() + recorded_ids_.size() - nk, ids, nk);
    }
    return ids;
  }

  std::vector<std::int32_t> download_ids(const std::int32_t* ids, std::int64_t count) const {
    std::vector<std::int32_t> out(static_cast<std::size_t>(count));
    be_.download(out.data(), ids, out.size());
    return out;
  }

  // Rows of a [n, d] hidden-state buffer; a size that is not a positive multiple of d is an error.
  std::int64_t hidden_rows(const std::vector<float>& hidden) const {
    const std::int64_t d = cfg_->backbone.n_embd, n = std::int64_t(hidden.size()) / d;
    MUNINN_CHECK(n > 0 && n * d == std::int64_t(hidden.size()), "calm: hidden holds ", hidden.size(),
                 " values, not a positive multiple of hidden_size ", d);
    return n;
  }
  void check_noise(const std::vector<float>& noise, std::int64_t S) const {
    MUNINN_CHECK(std::int64_t(noise.size()) == S * cfg_->noise_size, "calm: the given noise holds ", noise.size(),
                 " values; ", S, " samples x noise_size ", cfg_->noise_size, " expected");
  }
  void check_one_row(const std::vector<float>& hidden) const {
    MUNINN_CHECK(std::int64_t(hidden.size()) == cfg_->backbone.n_embd, "calm: one hidden row of ",
                 cfg_->backbone.n_embd, " values expected, got ", hidden.size());
  }

  T* put(std::size_t slot, const std::vector<float>& v) {
    T* d = scratch_.get(be_, slot, v.size());
    engine::upload_floats(be_, d, v.data(), std::int64_t(v.size()));
    return d;
  }

  Backend be_;
  const energy_head_weights<Backend, T>* head_;
  const chunk_autoencoder<Backend, T>* ae_;
  const calm_config* cfg_;
  calm_scratch<Backend, T> scratch_;
  bool recording_ = false;                  // next() with head taps is drawing
  std::vector<float> recorded_latents_;     // its head samples [draws, l], in draw order
  std::vector<std::int32_t> recorded_ids_;  // their decoded chunks [draws, K]
  typename Backend::template buffer<std::int64_t> positions_;  // the chosen row's chunk position
  typename Backend::template buffer<double> uniforms_;        // a given choice uniform
};

}  // namespace muninn
