#pragma once
/// \file
/// \brief CALM generation: K tokens per step from the energy head, at temperature 1 (one head
/// sample) or below it by the batch approximation or the exact likelihood-free sampler.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/calm/model.hpp"
#include "muninn/runtime/chunk_sampling.hpp"

namespace muninn {

/// \brief How the next chunk is drawn below temperature 1.
enum class calm_sampler {
  approximate,  ///< the reference's: N head samples, chunks seen at least m times weighted by C(count, m)
  exact,        ///< the paper's Algorithm 1: exact P^{1/T} for any T in (0, 1], a random number of draws
};

/// \brief Settings of one CALM generation.
struct calm_generate_options {
  std::int64_t max_length = 2048;  ///< stop once prompt (padded) + generated tokens reach this
  double temperature = 0.5;        ///< T in (0, 1]; the reference's default is 1/2
  calm_sampler sampler = calm_sampler::approximate;  ///< used when T < 1
  std::int64_t num_samples = 200;  ///< N, head samples per step of the batch approximation
  std::int64_t max_draws = std::int64_t(1) << 20;  ///< bound of the exact sampler's head samples per step
  std::int64_t draw_batch = 64;    ///< head samples the exact sampler asks for at once (no effect on results)
  std::uint64_t seed = 0;          ///< the run's seed: every random number is a counter-based draw of it
  /// How the batch approximation lists its candidates before the choice: by key (the default:
  /// a choice reproducible from (seed, position), identical on host and device) or by first
  /// appearance among the samples (the reference's order: with its uniforms, its picks).
  chunk_order order = chunk_order::key;
  /// Given head noise instead of the kind-1 stream, e.g. a reference run's: [steps, S, noise_size]
  /// row-major, step s feeding the s-th generated chunk, S = 1 at T = 1 and num_samples below it
  /// (batch approximation only). Empty: calm_noise. A generation needing more steps than given is
  /// an error.
  std::vector<float> noise;
  /// Given choice uniforms in [0, 1) instead of the kind-2 stream, one per step below T = 1 (batch
  /// approximation only), e.g. the reference's `random.random()` draws. Empty: chunk_choice_uniform.
  std::vector<double> uniforms;
  /// Called with each generated chunk (K ids, [PAD] included) as soon as it is drawn; returning
  /// false ends the generation after it (cancellation, streaming). Empty: no call.
  std::function<bool(const std::vector<std::int32_t>& chunk)> on_chunk;
};

/// \brief What a CALM generation produced.
struct calm_generation {
  std::vector<std::int32_t> ids;         ///< prompt + generated tokens with every [PAD] removed (as the reference)
  std::vector<std::int32_t> padded;      ///< prompt, its padding, then the generated chunks, as fed
  std::vector<std::int64_t> draws;       ///< head samples drawn at each step
  bool stopped_at_eos = false;           ///< a generated chunk held the EOS id
};

namespace detail {

// Step `step`'s slice [S, noise_size] of the given noise.
template <class Backend, class T>
std::vector<float> given_noise(const calm_model<Backend, T>& m, const calm_generate_options& o, std::int64_t step,
                               std::int64_t S) {
  const std::size_t per = std::size_t(S * m.config().noise_size);
  MUNINN_CHECK(o.noise.size() >= (std::size_t(step) + 1) * per, "calm generate: the given noise holds ",
               o.noise.size() / per, " steps of ", S, " samples x noise_size ", m.config().noise_size, "; step ",
               step + 1, " needs one more");
  return std::vector<float>(o.noise.begin() + std::ptrdiff_t(std::size_t(step) * per),
                            o.noise.begin() + std::ptrdiff_t((std::size_t(step) + 1) * per));
}

// The next chunk from the hidden state of chunk position p; `draws` receives the head samples used.
// `step` (0-based: chunks generated before this one) picks the slice of given draws.
template <class Backend, class T>
std::vector<std::int32_t> next_calm_chunk(calm_model<Backend, T>& m, const std::vector<float>& h, std::int64_t p,
                                          const calm_generate_options& o, std::int64_t& draws, std::int64_t step = 0) {
  const std::int64_t K = m.patch_size();
  std::vector<std::int32_t> chunk(std::size_t(K), 0);
  if (o.temperature == 1.0) {  // one head sample, whichever sampler (both reduce to it)
    draws = 1;
    if (!o.noise.empty()) return m.sample_chunks_with_noise(h, given_noise(m, o, step, 1), 1);
    return m.sample_chunks(h, p, o.seed, 0, 1);
  }
  if (o.sampler == calm_sampler::approximate) {
    draws = o.num_samples;
    const std::vector<float> noise = o.noise.empty() ? std::vector<float>{} : given_noise(m, o, step, o.num_samples);
    const double* uniform = nullptr;
    if (!o.uniforms.empty()) {
      MUNINN_CHECK(step < std::int64_t(o.uniforms.size()), "calm generate: the given uniforms hold ", o.uniforms.size(),
                   " steps; step ", step + 1, " needs one more");
      uniform = &o.uniforms[std::size_t(step)];
    }
    return m.choose_by_count(h, p, o.seed, o.num_samples, o.temperature, o.order, noise, uniform);
  }
  const auto source = [&](std::int64_t first, std::int64_t count, std::int32_t* ids) {
    const std::vector<std::int32_t> got = m.sample_chunks(h, p, o.seed, first, count);
    std::copy(got.begin(), got.end(), ids);
  };
  exact_chunk_options eo;
  eo.max_draws = o.max_draws;
  eo.batch = o.draw_batch;
  draws = sample_chunk_exact(source, K, o.temperature, o.seed, p, chunk.data(), eo).draws;
  return chunk;
}

// The sampler's temperature rule and the given draws' fit to it, checked before any work.
inline void check_calm_options(const calm_generate_options& o, std::int64_t noise_size) {
  if (o.sampler == calm_sampler::approximate)
    batch_temperature_n(o.temperature);
  else
    split_temperature(o.temperature);
  const bool batch = o.temperature != 1.0 && o.sampler == calm_sampler::approximate;
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

}  // namespace detail

/// \brief Generates from `prompt` as the reference's `CALM.generate` does for one sequence: a
/// prompt that is not a whole number of chunks is right-padded with [PAD]; the first pass runs
/// every prompt chunk, then each step feeds the chunk just drawn; a chunk holding EOS anywhere
/// ends the generation (the chunk is kept whole); at least one chunk is drawn; every [PAD] is
/// removed from the result. Randomness is counter-based (see calm_noise): the same seed gives the
/// same tokens on every backend and whatever the batch of head samples; o.noise and o.uniforms
/// replace those draws by given ones (a reference run's), and o.order chooses the candidate order.
/// \throws muninn::error for T outside (0, 1], a batch-approximation T whose 1/T is not an
///         integer, a prompt that needs padding without a pad id, max_length beyond the context, or
///         given noise / uniforms that do not fit the sampler or run out
template <class Backend, class T>
calm_generation generate_calm(calm_model<Backend, T>& m, const std::vector<std::int32_t>& prompt,
                              const calm_generate_options& o) {
  const calm_config& c = m.config();
  const std::int64_t K = c.patch_size;
  detail::check_calm_options(o, c.noise_size);
  MUNINN_CHECK(!prompt.empty(), "calm generate: empty prompt");
  calm_generation g;
  g.padded = prompt;
  if (prompt.size() % std::size_t(K) != 0) {
    MUNINN_CHECK(c.pad_id >= 0, c.source, ": the prompt of ", prompt.size(), " tokens needs padding to a multiple of ",
                 K, " but the config has no pad_token_id");
    g.padded.resize((prompt.size() / std::size_t(K) + 1) * std::size_t(K), std::int32_t(c.pad_id));
  }
  const std::int64_t max_chunks = std::max<std::int64_t>(std::int64_t(g.padded.size()) / K + 1, (o.max_length + K - 1) / K);
  auto ctx = m.make_context(max_chunks, std::int64_t(g.padded.size()) / K);
  std::vector<float> h = m.hidden(ctx, g.padded, logits_for::last);
  for (;;) {
    const std::int64_t p = std::int64_t(g.padded.size()) / K - 1;  // the position h belongs to
    std::int64_t draws = 0;
    const std::vector<std::int32_t> chunk = detail::next_calm_chunk(m, h, p, o, draws, std::int64_t(g.draws.size()));
    g.draws.push_back(draws);
    g.padded.insert(g.padded.end(), chunk.begin(), chunk.end());
    g.stopped_at_eos = c.eos_id >= 0 && std::find(chunk.begin(), chunk.end(), std::int32_t(c.eos_id)) != chunk.end();
    const bool go_on = !o.on_chunk || o.on_chunk(chunk);
    if (!go_on || g.stopped_at_eos || std::int64_t(g.padded.size()) >= o.max_length) break;
    h = m.hidden(ctx, chunk, logits_for::last);
  }
  for (std::int32_t t : g.padded)
    if (t != c.pad_id) g.ids.push_back(t);
  return g;
}

}  // namespace muninn
