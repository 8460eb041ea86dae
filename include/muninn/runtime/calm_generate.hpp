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

namespace muninn {

/// \brief How the next chunk is drawn below temperature 1 (the chunk head's sampler rule).
using calm_sampler = chunk_sampler;

/// \brief Settings of one CALM generation: the energy head's sampler settings, the length and a
/// chunk callback.
struct calm_generate_options : chunk_sampling_options {
  std::int64_t max_length = 2048;  ///< stop once prompt (padded) + generated tokens reach this
  /// Called with each generated chunk (K ids, [PAD] included) as soon as it is drawn; returning
  /// false ends the generation after it (cancellation, streaming). Empty: no call.
  std::function<bool(const std::vector<std::int32_t>& chunk)> on_chunk;
  /// Run options of every backbone call (the prompt's, then one per generated chunk); their
  /// `taps` also receive each generated chunk's head taps (`head.samples`, `head.latent`,
  /// `ae.logits`, with `tap_event::step` the chunk's index: calm_chunk_sampler::next).
  run_options run;
};

/// \brief What a CALM generation produced.
struct calm_generation {
  std::vector<std::int32_t> ids;         ///< prompt + generated tokens with every [PAD] removed (as the reference)
  std::vector<std::int32_t> padded;      ///< prompt, its padding, then the generated chunks, as fed
  std::vector<std::int64_t> draws;       ///< head samples drawn at each step
  bool stopped_at_eos = false;           ///< a generated chunk held the EOS id
};

namespace detail {

// The next chunk from the hidden state h of chunk position p, by the energy head's sampler;
// `draws` receives the head samples used, `step` (chunks generated before this one) picks the
// slice of given draws.
template <class Backend, class T>
std::vector<std::int32_t> next_calm_chunk(calm_model<Backend, T>& m, const std::vector<float>& h, std::int64_t p,
                                          const calm_generate_options& o, std::int64_t& draws, std::int64_t step = 0) {
  return m.sampler().next(h.data(), p, step, o, draws, &o.run.taps);
}

// The sampler's temperature rule and the given draws' fit to it, checked before any work.
inline void check_calm_options(const calm_generate_options& o, std::int64_t noise_size) {
  check_chunk_sampling(o, noise_size);
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
  std::vector<float> h = m.hidden(ctx, g.padded, o.run, logits_for::last);
  for (;;) {
    const std::int64_t p = std::int64_t(g.padded.size()) / K - 1;  // the position h belongs to
    std::int64_t draws = 0;
    const std::vector<std::int32_t> chunk = detail::next_calm_chunk(m, h, p, o, draws, std::int64_t(g.draws.size()));
    g.draws.push_back(draws);
    g.padded.insert(g.padded.end(), chunk.begin(), chunk.end());
    g.stopped_at_eos = c.eos_id >= 0 && std::find(chunk.begin(), chunk.end(), std::int32_t(c.eos_id)) != chunk.end();
    const bool go_on = !o.on_chunk || o.on_chunk(chunk);
    if (!go_on || g.stopped_at_eos || std::int64_t(g.padded.size()) >= o.max_length) break;
    h = m.hidden(ctx, chunk, o.run, logits_for::last);
  }
  for (std::int32_t t : g.padded)
    if (t != c.pad_id) g.ids.push_back(t);
  return g;
}

}  // namespace muninn
