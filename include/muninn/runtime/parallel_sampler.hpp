#pragma once
/// \file
/// \brief The parallel (diffusion-style) sampler of recurrent-depth models: a wavefront of future
/// positions recurs a few steps at a time while earlier positions are still converging, and a
/// position's token is frozen once its state stops moving (Geiping et al. 2025, "Efficient
/// Parallel Samplers for Recurrent-Depth Models"; the reference's `generate_diffusion_style`).
///
/// Behaviour follows the reference implementation step for step, quirks included (docs/inference.md
/// lists them); the random numbers come from Muninn's counter-based generator, in streams
/// described at `parallel_stream_seed`.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/core/random.hpp"
#include "muninn/runtime/generate.hpp"

namespace muninn {

/// \brief When the parallel sampler freezes the tokens of its wavefront.
enum class freeze_rule {
  latent_diff,      ///< up to the last position whose state moved less than the threshold (relative L2) in a step
  fixed,            ///< after num_steps / inner_recurrence steps, `headway` tokens per step
  token_stability,  ///< up to the last position whose token stayed the same more than num_steps / inner_recurrence times
};

/// \brief Parses the CLI spelling: latent-diff, fixed, token-stability.
inline freeze_rule parse_freeze_rule(const std::string& s) {
  if (s == "latent-diff") return freeze_rule::latent_diff;
  if (s == "fixed") return freeze_rule::fixed;
  if (s == "token-stability") return freeze_rule::token_stability;
  fail("unknown freeze rule '", s, "' (latent-diff, fixed, token-stability)");
}

/// \brief The CLI spelling of a freeze rule.
inline const char* freeze_name(freeze_rule f) {
  return f == freeze_rule::latent_diff ? "latent-diff" : f == freeze_rule::fixed ? "fixed" : "token-stability";
}

/// \brief The parallel sampler's knobs; the defaults are the reference's.
struct parallel_options {
  std::int64_t inner_recurrence = 4;   ///< recurrence steps the wavefront runs per sampler step
  std::int64_t headway = 1;            ///< new positions the wavefront grows by per step
  std::int64_t max_wavefront = 128;    ///< positions recurring at once at most (0: unbounded)
  float ema_embeds = 0.1f;             ///< weight of the previous step's input embeddings (0: off)
  float state_noise_mixing = 0.5f;     ///< share of fresh noise mixed into the states before each step (0: off)
  bool dampened_state_mixer = true;    ///< divide that share by 1 + the recurrences the position ran so far
  bool sqrt_mixer = false;             ///< mix as x·√(1−n) + √n·noise instead of x·(1−n) + n·noise
  freeze_rule freeze = freeze_rule::latent_diff;  ///< when tokens freeze
  double freeze_threshold = 0.03;      ///< latent-diff threshold (the reference's exit_t)
  bool continuous_compute = false;     ///< new positions start from the wave's last states instead of noise
  std::int64_t max_diffusion_steps = 4096;  ///< hard stop for badly configured runs
  std::int64_t kv_budget = 1;          ///< KV slots per core layer of a fresh context: 1 is the reference's
                                       ///< "latest-m4-compress-s4", 0 its "full" (one slot per recurrence)
};

/// \brief What a parallel generation produced, with the reference's counters.
struct parallel_result : generate_result {
  std::int64_t diffusion_steps = 0;   ///< sampler steps run
  std::int64_t core_passes = 0;       ///< recurrences of the core block (the prefill's counts once)
  std::int64_t tokens_forward = 0;    ///< positions × recurrences run (prompt included)
  std::int64_t cache_clears = 0;      ///< KV entries dropped again for recomputation
  std::int64_t standing_waves = 0;    ///< steps in which the wavefront was at max_wavefront and did not grow
  std::vector<std::int32_t> recurrences;  ///< recurrences each position of prompt + new tokens ran
};

/// \brief Seed of one of the sampler's random streams: `kind` 1 = the state of a position the
/// wave grows by (`n` = 0 before the first step, t + 1 in step t), 2 = the noise mixed in at
/// step `n`, 3 = the random token guesses of step `n` (headway > 1). Element i of position p's
/// state is `truncated_normal_at(stream, p·h + i)`; guess j is `counter_bits(stream, j, 0) mod
/// min(65510, V)` (the reference draws torch.randint(0, 65510)).
inline std::uint64_t parallel_stream_seed(std::uint64_t seed, std::uint64_t kind, std::uint64_t n) {
  return stream_seed(seed, kind, n);
}

namespace detail {

// Rows [p0, p0 + rows) of Huginn's random state drawn from `stream` (host floats).
inline void draw_states(std::uint64_t stream, std::int64_t p0, std::int64_t rows, std::int64_t h, double sd,
                        float* out) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < h; ++i)
      out[r * h + i] = truncated_normal_at(stream, std::uint64_t((p0 + r) * h + i), float(sd));
}

// The sampler's bookkeeping: the sequence, what is frozen, the wave's states and the previous
// step's states and embeddings (and where the reference believes they start).
struct wave_state {
  std::vector<std::int32_t> seq;      // frozen tokens, then the wave's current guesses
  std::int64_t frozen = 0;            // tokens frozen (prompt included)
  std::vector<float> states;          // [S, h] states of positions [c, c + S), c = cached length
  std::vector<float> prev_states;     // the states kept at the end of the previous step
  std::vector<float> prev_embeds;     // the blended embeddings of the previous step's wave
  std::int64_t old_c = 0;             // cached length at the previous step: the origin both are read from
  std::vector<std::int64_t> recurrences, stable;  // per position
  std::int64_t k = 0, old_k = 0;      // freeze bounds of this and the previous step (stop-token window)
};

inline std::int64_t rows_of(const std::vector<float>& v, std::int64_t h) { return std::int64_t(v.size()) / h; }

// Noise mixing before a step (reference: `state_noise_mixing`, dampened by 1 + recurrences so far).
inline void mix_noise(wave_state& w, const parallel_options& o, std::int64_t c, std::int64_t h, double sd,
                      std::uint64_t stream) {
  const std::int64_t S = rows_of(w.states, h);
  std::vector<float> noise(std::size_t(S * h));
  draw_states(stream, c, S, h, sd, noise.data());
  for (std::int64_t r = 0; r < S; ++r) {
    const float n = o.dampened_state_mixer ? o.state_noise_mixing / float(1 + w.recurrences[std::size_t(c + r)])
                                           : o.state_noise_mixing;
    float* x = w.states.data() + r * h;
    const float* z = noise.data() + r * h;
    if (o.sqrt_mixer) {
      const float a = std::sqrt(std::max(1.0f - n, 0.0f)), b = std::sqrt(n);
      for (std::int64_t i = 0; i < h; ++i) x[i] = x[i] * a + b * z[i];
    } else {
      for (std::int64_t i = 0; i < h; ++i) x[i] = x[i] * (1.0f - n) + n * z[i];
    }
  }
}

// Latent-diff freeze test: the last wave row (index into the current states) whose relative
// change since the previous step is below the threshold, or -1. The previous states are read
// from offset c − old_c, as the reference does (after a freeze they start elsewhere: see docs).
inline std::int64_t last_settled_row(const wave_state& w, std::int64_t c, std::int64_t h, double threshold) {
  const std::int64_t off = c - w.old_c, prev_rows = rows_of(w.prev_states, h);
  const std::int64_t m = std::min(std::max<std::int64_t>(prev_rows - off, 0), rows_of(w.states, h));
  std::int64_t last = -1;
  for (std::int64_t r = 0; r < m; ++r) {
    const float* x = w.states.data() + r * h;
    const float* p = w.prev_states.data() + (off + r) * h;
    double d2 = 0, x2 = 0;
    for (std::int64_t i = 0; i < h; ++i) {
      const double d = double(x[i]) - double(p[i]);
      d2 += d * d;
      x2 += double(x[i]) * double(x[i]);
    }
    if (std::sqrt(d2) / std::sqrt(x2) < threshold) last = r;
  }
  return last;
}

inline void drop_front_rows(std::vector<float>& v, std::int64_t rows, std::int64_t h) {
  v.erase(v.begin(), v.begin() + rows * h);
}

// What a step's freeze rule decided: KV entries to drop from the end of the cache, and wave rows
// to drop from the front (the frozen ones).
struct freeze_plan {
  std::int64_t clear = 0;
  std::int64_t drop = 0;
};

// Applies the freeze rule after step t to `w` (w.frozen, w.k) and says what to drop. `every` is
// num_steps / inner_recurrence; the wave has grown by `headway_now` this step.
inline freeze_plan freeze(wave_state& w, const parallel_options& p, std::int64_t c, std::int64_t h,
                          std::int64_t headway_now, std::int64_t n_new, std::int64_t t, std::int64_t every) {
  const std::int64_t len = std::int64_t(w.seq.size()), rows = rows_of(w.states, h);
  std::int64_t clear = rows - headway_now, keep_from = 0;
  const auto freeze_through = [&](std::int64_t k) {  // tokens [0, k) freeze; position k − 1 recurs again
    w.k = k;
    clear = len - headway_now - k + 1;
    keep_from = k - c - 1;
    w.frozen = std::min(k, len);
  };
  if (p.freeze == freeze_rule::latent_diff) {
    const std::int64_t r = last_settled_row(w, c, h, p.freeze_threshold);
    if (r >= 0) freeze_through(c + r + 1);
  } else if (p.freeze == freeze_rule::token_stability) {
    std::int64_t last = -1;
    for (std::int64_t i = 0; i < std::int64_t(w.stable.size()); ++i)
      if (w.stable[std::size_t(i)] > every) last = i;
    w.k = 0;
    if (last >= 0) freeze_through(last + 1);
  } else if (t > every) {  // fixed
    clear = rows - p.headway - headway_now;
    keep_from = headway_now;
    w.frozen += std::min(headway_now, n_new);
  }
  // Rows from keep_from on stay, sliced as Python slices (the reference does; token-stability can
  // freeze before the wave, which makes keep_from negative: then the last −keep_from rows stay).
  const std::int64_t drop = keep_from < 0 ? std::max<std::int64_t>(rows + keep_from, 0) : std::min(keep_from, rows);
  return {clear, drop};
}

// Whether this step froze a stop token: latent-diff looks at the tokens it froze now
// ([old_k, k)), the other rules at the last `headway` frozen tokens.
inline bool froze_a_stop_token(const wave_state& w, const parallel_options& p, const generate_options& g) {
  const bool latent = p.freeze == freeze_rule::latent_diff;
  const std::int64_t b = latent ? w.old_k : std::max<std::int64_t>(w.frozen - p.headway, 0);
  const std::int64_t e = std::min(latent ? w.k : w.frozen, w.frozen);
  for (std::int64_t i = b; i < e; ++i)
    if (is_stop(g, w.seq[std::size_t(i)])) return true;
  return false;
}

}  // namespace detail

/// \brief Generates with the parallel sampler on an empty context (batch 1, like the reference).
///
/// The prompt is prefilled at `g.run.steps` recurrences (default mean_recurrence) and its next
/// token sampled; then each step feeds the wavefront — the positions from the last frozen one on
/// — as one call of `p.inner_recurrence` recurrences from the states the previous step left
/// (mixed with fresh noise), samples every wave position's next token, grows the wave by
/// `p.headway` positions and freezes tokens by `p.freeze`. Tokens are chosen as `g.sampling` says
/// (greedy by default). `g.stop_ids` end generation only after num_steps sampler steps, as in the
/// reference. Returns every frozen new token, which may be more than `g.max_new_tokens` (the
/// last step can freeze several).
template <class Model>
parallel_result generate_parallel(const Model& m, typename Model::context_type& ctx,
                                  const std::vector<std::int32_t>& prompt, const generate_options& g,
                                  const parallel_options& p) {
  MUNINN_CHECK(!prompt.empty(), "generate_parallel: the prompt is empty");
  MUNINN_CHECK(ctx.length() == 0, "generate_parallel: needs an empty context, this one holds ", ctx.length(), " tokens");
  MUNINN_CHECK(p.inner_recurrence >= 1, "parallel sampler: inner_recurrence must be >= 1, got ", p.inner_recurrence);
  MUNINN_CHECK(p.headway >= 1, "parallel sampler: headway must be >= 1, got ", p.headway);
  MUNINN_CHECK(p.max_wavefront >= 0, "parallel sampler: max_wavefront must be >= 0, got ", p.max_wavefront);
  MUNINN_CHECK(p.max_wavefront == 0 || p.max_wavefront > p.headway, "parallel sampler: max_wavefront ",
               p.max_wavefront, " must exceed headway ", p.headway);
  MUNINN_CHECK(p.ema_embeds >= 0.0f && p.ema_embeds <= 1.0f, "parallel sampler: ema_embeds must be in [0, 1], got ",
               p.ema_embeds);
  MUNINN_CHECK(p.state_noise_mixing >= 0.0f && p.state_noise_mixing <= 1.0f,
               "parallel sampler: state_noise_mixing must be in [0, 1], got ", p.state_noise_mixing);
  MUNINN_CHECK(p.freeze_threshold >= 0.0, "parallel sampler: freeze_threshold must be >= 0, got ", p.freeze_threshold);
  MUNINN_CHECK(p.max_diffusion_steps >= 0, "parallel sampler: max_diffusion_steps must be >= 0, got ",
               p.max_diffusion_steps);
  MUNINN_CHECK(g.max_new_tokens >= 0, "generate_parallel: max_new_tokens must be >= 0, got ", g.max_new_tokens);
  MUNINN_CHECK(g.draft_steps == 0 && g.lookahead == 0, "the parallel sampler does not combine with speculative decoding");
  MUNINN_CHECK(g.run.warm == warm_start::none, "the parallel sampler does not take warm_start (see continuous_compute)");
  MUNINN_CHECK(m.resolve_halting(g.run).criterion == halt_criterion::none,
               "the parallel sampler freezes tokens by its own rule; do not set an exit criterion");
  parallel_result res;
  if (g.max_new_tokens == 0) return res;

  const std::int64_t h = m.config().n_embd, V = m.config().vocab_size, P = std::int64_t(prompt.size());
  const std::int64_t num_steps = m.resolve_steps(g.run), cap = ctx.limits().max_tokens;
  MUNINN_CHECK(ctx.limits().max_chunk >= std::min(p.max_wavefront > 0 ? p.max_wavefront : cap, cap),
               "generate_parallel: the context's max_chunk ", ctx.limits().max_chunk,
               " is smaller than the wavefront (make it with max_chunk >= max_wavefront)");
  const double sd = random_state_stddev(m.config(), h);
  const std::uint64_t seed = g.run.seed;
  sampler smp(g.sampling);
  detail::wave_state w;
  w.recurrences.assign(std::size_t(cap + p.headway + 1), 0);
  w.stable.assign(w.recurrences.size(), 0);

  // Prefill, then the first token; the new position starts from noise (not from the prompt's state).
  run_options prefill = g.run;
  prefill.steps = num_steps;
  std::vector<float> logits = m.forward(ctx, prompt, prefill, logits_for::last);
  ++res.forward_calls;
  ++res.core_passes;
  res.tokens_forward += P;
  w.seq = prompt;
  w.seq.push_back(smp.sample(logits.data(), V, w.seq));
  w.frozen = P + 1;
  for (std::int64_t i = 0; i < w.frozen; ++i) w.recurrences[std::size_t(i)] += num_steps;
  w.states.resize(std::size_t(h));
  detail::draw_states(parallel_stream_seed(seed, 1, 0), P, 1, h, sd, w.states.data());
  w.prev_states = w.states;

  std::vector<float> latents, mixed;
  std::int64_t t = 0;
  while (w.frozen - P < g.max_new_tokens && std::int64_t(w.seq.size()) <= cap) {
    const std::int64_t c = ctx.length(), S = detail::rows_of(w.states, h);
    MUNINN_CHECK(c + S <= cap, "generate_parallel: the wavefront reaches position ", c + S,
                 " beyond the context capacity of ", cap, " tokens");
    // Inputs: the wave's tokens; embeddings blended with the previous step's (the first step's only
    // row would blend with itself, so it is left alone); states mixed with fresh noise.
    run_options run = g.run;
    run.steps = p.inner_recurrence;
    run.init = state_init::given{};
    run.latents = &latents;
    if (p.ema_embeds > 0.0f) {
      run.blend.mixed = &mixed;
      if (t > 0) {
        const std::int64_t off = c - w.old_c;
        run.blend.weight = p.ema_embeds;
        run.blend.rows = std::min(std::max<std::int64_t>(detail::rows_of(w.prev_embeds, h) - off, 0), S);
        run.blend.previous = w.prev_embeds.data() + std::min<std::int64_t>(off, detail::rows_of(w.prev_embeds, h)) * h;
      }
    }
    if (p.state_noise_mixing > 0.0f) detail::mix_noise(w, p, c, h, sd, parallel_stream_seed(seed, 2, std::uint64_t(t)));
    run.given_state = w.states.data();
    const std::vector<std::int32_t> wave(w.seq.begin() + c, w.seq.begin() + c + S);
    logits = m.forward(ctx, wave, run, logits_for::all);
    ++res.forward_calls;
    for (std::int64_t r = 0; r < S; ++r) w.recurrences[std::size_t(c + r)] += p.inner_recurrence;
    res.core_passes += p.inner_recurrence;
    res.tokens_forward += p.inner_recurrence * S;
    w.states = latents;
    if (p.ema_embeds > 0.0f) w.prev_embeds = mixed;

    // Every wave position from the last frozen one on proposes the next token.
    const std::vector<std::int32_t> frozen_tokens(w.seq.begin(), w.seq.begin() + w.frozen);
    const std::int64_t first = std::max<std::int64_t>(w.frozen - 1 - c, 0);
    std::vector<std::int32_t> proposed;
    for (std::int64_t r = first; r < S; ++r) proposed.push_back(smp.sample(logits.data() + r * V, V, frozen_tokens));
    const std::int64_t n_new = std::int64_t(proposed.size());
    MUNINN_CHECK(w.frozen + n_new - 1 == std::int64_t(w.seq.size()), "generate_parallel: internal: sequence of ",
                 w.seq.size(), " tokens, frozen ", w.frozen, ", proposals ", n_new);
    for (std::int64_t i = 0; i < std::int64_t(w.seq.size()); ++i) {
      const std::int32_t now = i < w.frozen ? frozen_tokens[std::size_t(i)] : proposed[std::size_t(i - w.frozen)];
      w.stable[std::size_t(i)] += w.seq[std::size_t(i)] == now;
    }
    w.seq = frozen_tokens;
    w.seq.insert(w.seq.end(), proposed.begin(), proposed.end());
    const std::uint64_t guesses = parallel_stream_seed(seed, 3, std::uint64_t(t));
    const std::uint64_t bound = std::uint64_t(std::min<std::int64_t>(65510, V));
    for (std::int64_t j = 0; j + 1 < p.headway; ++j)
      w.seq.push_back(std::int32_t(counter_bits(guesses, std::uint64_t(j), 0) % bound));

    // The wave grows by `headway` positions; at max_wavefront it stands.
    std::vector<float> grown(std::size_t(p.headway * h));
    if (p.continuous_compute && S >= p.headway)
      std::copy(w.states.end() - p.headway * h, w.states.end(), grown.begin());
    else
      detail::draw_states(parallel_stream_seed(seed, 1, std::uint64_t(t + 1)), c + S, p.headway, h, sd, grown.data());
    w.states.insert(w.states.end(), grown.begin(), grown.end());
    std::int64_t headway_now = p.headway;
    if (p.max_wavefront > 0 && detail::rows_of(w.states, h) > p.max_wavefront) {
      headway_now = p.max_wavefront - (detail::rows_of(w.states, h) - p.headway);
      w.states.resize(std::size_t(p.max_wavefront * h));
      w.seq.resize(std::size_t(c + p.max_wavefront));
      ++res.standing_waves;
    }

    // Freeze, then drop the KV of every position the next step recomputes.
    const detail::freeze_plan f = detail::freeze(w, p, c, h, headway_now, n_new, t, num_steps / p.inner_recurrence);
    MUNINN_CHECK(f.clear >= 0 && f.clear <= ctx.length(), "generate_parallel: the ", freeze_name(p.freeze),
                 " rule froze position ", w.k, " outside the cached ", ctx.length(), " tokens");
    ctx.truncate(ctx.length() - f.clear);
    res.cache_clears += f.clear;
    detail::drop_front_rows(w.states, f.drop, h);
    const bool stop = t > num_steps && detail::froze_a_stop_token(w, p, g);  // the reference's rule
    if (stop || t > p.max_diffusion_steps) break;  // the reference leaves its step count as it is
    w.prev_states = w.states;
    w.old_c = c;
    ++t;
    w.old_k = w.k;
  }
  res.diffusion_steps = t;
  res.tokens.assign(w.seq.begin() + P, w.seq.begin() + w.frozen);
  res.recurrences.assign(w.recurrences.begin(), w.recurrences.begin() + w.frozen);
  for (std::int64_t i = 0; i < std::int64_t(res.tokens.size()); ++i)
    res.steps.push_back(std::int32_t(res.recurrences[std::size_t(P + i - 1)]));
  return res;
}

/// \brief `generate_parallel` on a fresh context sized for the prompt, the new tokens and the
/// wavefront, with `p.kv_budget` KV slots per core layer.
template <class Model>
parallel_result generate_parallel(const Model& m, const std::vector<std::int32_t>& prompt, const generate_options& g,
                                  const parallel_options& p = {}) {
  const std::int64_t wave = p.max_wavefront > 0 ? p.max_wavefront : m.config().block_size;
  context_limits lim;
  lim.max_tokens = std::min(std::int64_t(prompt.size()) + std::max<std::int64_t>(g.max_new_tokens, 0) + wave +
                                p.headway + 1,
                            m.config().block_size);
  lim.max_steps = std::max(m.resolve_steps(g.run), p.inner_recurrence);
  lim.kv_budget = p.kv_budget;
  lim.max_chunk = std::max<std::int64_t>({lim.max_tokens, std::int64_t(prompt.size())});
  auto ctx = m.make_context(lim);
  return generate_parallel(m, ctx, prompt, g, p);
}

}  // namespace muninn
