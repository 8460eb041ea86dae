#pragma once
/// \file
/// \brief Generation loops on top of `model::forward`: greedy and sampled decoding, self-speculative
/// decoding, and batched generation of rows with different lengths.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "muninn/model/model.hpp"
#include "muninn/ops/softmax.hpp"
#include "muninn/runtime/sampling.hpp"

namespace muninn {

/// \brief Options of a generation loop.
struct generate_options {
  std::int64_t max_new_tokens = 16;    ///< tokens to produce at most
  run_options run;                     ///< steps, initial state, exit criterion, warm start, hooks
  sampling_params sampling{1.0f, 0, 1.0f, 0.0f, 1.0f, true, 0};  ///< greedy unless changed
  std::vector<std::int32_t> stop_ids;  ///< generation ends after producing one of these
  std::int64_t draft_steps = 0;        ///< self-speculative decoding: recurrences of the draft (0: off)
  std::int64_t lookahead = 0;          ///< self-speculative decoding: tokens drafted per verification
  /// The sampler settings of a head that emits K-token chunks (CALM's `head::energy`): temperature,
  /// batch approximation or exact sampler, seed, given draws. A one-token head uses `sampling`.
  chunk_sampling_options chunks;
  /// Called with each new token as soon as it is final, and the recurrence steps that chose it;
  /// returning false ends the generation after that token (a front end's cancellation or a
  /// streaming client that went away). Empty: no call.
  std::function<bool(std::int32_t token, std::int32_t steps)> on_token;
};

/// \brief What a generation produced.
struct generate_result {
  std::vector<std::int32_t> tokens;  ///< the new tokens
  std::vector<std::int32_t> steps;   ///< recurrence steps of the forward pass that chose each token
  std::int64_t forward_calls = 0;    ///< model calls made (prefill included)
  std::int64_t drafted = 0;          ///< speculative decoding: tokens drafted
  std::int64_t accepted = 0;         ///< speculative decoding: drafted tokens the verifier agreed with
  std::vector<float> last_logits;    ///< logits that chose the last token (not kept by speculative decoding)
};

/// \brief Index of the largest value (the first one on ties) of host logits: the host `argmax` op.
inline std::int32_t argmax_host(const float* x, std::int64_t n) { return std::int32_t(argmax(host_backend{}, x, n)); }

namespace detail {
inline bool is_stop(const generate_options& o, std::int32_t t) {
  return std::find(o.stop_ids.begin(), o.stop_ids.end(), t) != o.stop_ids.end();
}
}  // namespace detail

/// \brief The deepest recurrence a generation with `o` runs (verify, exit bound or draft): what
/// its context's `max_steps` must be.
template <class Model>
std::int64_t max_steps_needed(const Model& m, const generate_options& o) {
  const std::int64_t steps = o.run.steps < 0 ? m.config().mean_recurrence : o.run.steps;
  return std::max({steps, o.run.halt.max_steps, o.draft_steps});
}

namespace detail {

/// \brief generate for a head with a sampler of its own (`make_sampler`): each step the head's
/// sampler turns the last output row into one emission (K tokens for a chunk head), which is fed
/// back whole. Stops after an emission that holds a stop id, once max_new_tokens tokens are out
/// (whole emissions: up to K − 1 more), or when the context is full.
template <class Model>
generate_result generate_emissions(const Model& m, typename Model::context_type& ctx,
                                   const std::vector<std::int32_t>& prompt, const generate_options& opt) {
  MUNINN_CHECK(opt.draft_steps == 0 && opt.lookahead == 0, "generate: speculative decoding needs a one-token head; ",
               Model::head_policy::name, " emits ", m.tokens_per_emission(), " tokens at a time");
  generate_result res;
  if (opt.max_new_tokens == 0) return res;
  auto smp = Model::head_policy::make_sampler(m);
  smp.check(opt.chunks);
  run_options run = opt.run;
  std::vector<std::int32_t> used;
  run.steps_used = &used;
  std::vector<float> row = m.forward(ctx, prompt, run, logits_for::last);
  for (std::int64_t step = 0;; ++step) {
    ++res.forward_calls;
    std::int64_t draws = 0;
    const std::vector<std::int32_t> out = smp.next(row.data(), ctx.length() - 1, step, opt.chunks, draws, &run.taps);
    res.last_logits = row;
    bool stop = false;
    for (std::int32_t t : out) {
      res.tokens.push_back(t);
      res.steps.push_back(used.back());
      if (opt.on_token && !opt.on_token(t, used.back())) stop = true;
      stop = stop || is_stop(opt, t);
    }
    if (stop || std::int64_t(res.tokens.size()) >= opt.max_new_tokens || ctx.length() >= ctx.limits().max_tokens)
      return res;
    row = m.forward(ctx, out, run, logits_for::last);
  }
}

template <class Model>
inline constexpr bool emits_by_sampler = has_head_sampler<typename Model::head_policy, Model>;

}  // namespace detail

/// \brief Decodes with the KV cache: the prompt is prefilled in one call, then each new token is
/// fed alone. Greedy or sampled as `opt.sampling` says; self-speculative when draft_steps and
/// lookahead are set. Returns only the new tokens. A head with a sampler of its own (CALM's
/// `head::energy`) draws each emission with it (`opt.chunks`) and feeds the whole emission back;
/// its prompt is K tokens per position.
template <class Model>
generate_result generate(const Model& m, typename Model::context_type& ctx, const std::vector<std::int32_t>& prompt,
                         const generate_options& opt) {
  MUNINN_CHECK(!prompt.empty(), "generate: the prompt is empty");
  MUNINN_CHECK(opt.max_new_tokens >= 0, "generate: max_new_tokens must be >= 0, got ", opt.max_new_tokens);
  if constexpr (detail::emits_by_sampler<Model>) return detail::generate_emissions(m, ctx, prompt, opt);
  const bool speculative = opt.draft_steps > 0 || opt.lookahead > 0;
  generate_result res;
  if (opt.max_new_tokens == 0) return res;
  sampler smp(opt.sampling);
  const std::int64_t V = m.config().vocab_size;
  run_options run = opt.run;
  std::vector<std::int32_t> used;
  run.steps_used = &used;
  std::vector<float> logits = m.forward(ctx, prompt, run, logits_for::last);
  ++res.forward_calls;
  std::int32_t last_steps = used.back();
  if (speculative) {
    MUNINN_CHECK(opt.draft_steps > 0 && opt.lookahead > 0, "speculative decoding needs draft_steps > 0 and lookahead > 0");
    MUNINN_CHECK(smp.is_greedy(), "speculative decoding verifies by argmax: use greedy sampling");
    MUNINN_CHECK(opt.run.warm == warm_start::none, "speculative decoding does not combine with a warm start");
  }
  std::int32_t next = smp.sample(logits.data(), V, ctx.tokens());
  auto emit = [&](std::int32_t t, std::int32_t steps) {
    if (!speculative) res.last_logits = logits;
    res.tokens.push_back(t);
    res.steps.push_back(steps);
    const bool go_on = !opt.on_token || opt.on_token(t, steps);
    return !go_on || detail::is_stop(opt, t) || std::int64_t(res.tokens.size()) >= opt.max_new_tokens;
  };
  if (emit(next, last_steps)) return res;
  while (true) {
    if (!speculative) {
      logits = m.forward(ctx, {next}, run, logits_for::last);
      ++res.forward_calls;
      next = smp.sample(logits.data(), V, ctx.tokens());
      if (emit(next, used.back())) return res;
      continue;
    }
    // Self-speculative step (as the reference's `generate_speculative`): draft with few recurrences, verify all
    // drafts in one pass with many, keep the longest agreeing prefix plus the verifier's token.
    const std::int64_t L = ctx.length();
    const std::int64_t room = std::min(ctx.limits().max_tokens - L, opt.max_new_tokens - std::int64_t(res.tokens.size()));
    const std::int64_t k = std::max<std::int64_t>(1, std::min(opt.lookahead, room));
    run_options draft = run;
    draft.steps = opt.draft_steps;
    draft.halt = halting_options{};
    draft.halt.criterion = halt_criterion::none;
    std::vector<std::int32_t> fed{next}, drafts;
    for (std::int64_t i = 0; i < k; ++i) {
      if (i > 0) fed.push_back(drafts.back());
      const auto dl = m.forward(ctx, {fed.back()}, draft, logits_for::last);
      ++res.forward_calls;
      drafts.push_back(argmax_host(dl.data(), V));
      if (detail::is_stop(opt, drafts.back())) break;
    }
    ctx.truncate(L);
    const auto vl = m.forward(ctx, fed, run, logits_for::all);  // fed = [next, d1, ..., d_{k-1}]
    ++res.forward_calls;
    const std::int64_t kk = std::int64_t(drafts.size());
    res.drafted += kk;
    std::int64_t agree = 0;
    while (agree < kk && argmax_host(vl.data() + agree * V, V) == drafts[std::size_t(agree)]) ++agree;
    res.accepted += agree;
    // Tokens d1..d_agree are confirmed; cache rows fed[0..agree] are valid (fed has kk rows).
    for (std::int64_t i = 0; i < agree; ++i)
      if (emit(drafts[std::size_t(i)], used[std::size_t(i)])) {
        ctx.truncate(std::min(ctx.length(), L + i + 1));
        return res;
      }
    if (agree < kk) {
      ctx.truncate(L + agree + 1);
      next = argmax_host(vl.data() + agree * V, V);
      if (emit(next, used[std::size_t(agree)])) return res;
    } else {
      next = drafts.back();  // every draft confirmed: the last one is not in the cache yet
    }
  }
}

/// \brief `generate` on a fresh context sized for prompt + new tokens.
template <class Model>
generate_result generate(const Model& m, const std::vector<std::int32_t>& prompt, const generate_options& opt) {
  context_limits lim;
  const std::int64_t per_in = m.tokens_per_position(), per_out = m.tokens_per_emission();  // 1, 1 but for chunk slots
  lim.max_tokens = std::int64_t(prompt.size()) / per_in +
                   (std::max<std::int64_t>(opt.max_new_tokens, 0) + per_out - 1) / per_out + opt.lookahead;
  lim.max_tokens = std::min(lim.max_tokens, m.config().block_size);
  lim.max_steps = max_steps_needed(m, opt);
  if (opt.run.halt.prefill == prefill_exit::prompt || Model::router_policy::routes)  // the prompt runs as one pass
    lim.max_chunk = std::max<std::int64_t>(lim.max_chunk, std::int64_t(prompt.size()) / per_in);
  auto ctx = m.make_context(lim);
  return generate(m, ctx, prompt, opt);
}

/// \brief Greedy decoding: the new tokens only.
template <class Model>
std::vector<std::int32_t> generate_greedy(const Model& m, typename Model::context_type& ctx,
                                          const std::vector<std::int32_t>& prompt, generate_options opt) {
  opt.sampling.greedy = true;
  return generate(m, ctx, prompt, opt).tokens;
}

/// \brief Greedy decoding on a fresh context: the new tokens only.
template <class Model>
std::vector<std::int32_t> generate_greedy(const Model& m, const std::vector<std::int32_t>& prompt, generate_options opt) {
  opt.sampling.greedy = true;
  return generate(m, prompt, opt).tokens;
}

/// \brief Generates for several prompts of different lengths at once. Every decode step stacks the
/// live rows into one model call (weights read once for the whole batch); each row keeps its own
/// KV cache and sampler, so each row produces exactly what `generate` produces for it alone.
/// Self-speculative decoding is single-sequence only. Taps (`opt.run.taps`) carry each row's
/// prompt index as `tap_event::sequences`.
template <class Model>
std::vector<generate_result> generate_batch(const Model& m, const std::vector<std::vector<std::int32_t>>& prompts,
                                            const generate_options& opt) {
  static_assert(!detail::emits_by_sampler<Model>,
                "generate_batch samples one token per row from logits; a head with its own sampler (head::energy) "
                "runs with generate, one sequence at a time");
  MUNINN_CHECK(opt.draft_steps == 0 && opt.lookahead == 0, "generate_batch: speculative decoding is single-sequence");
  const std::size_t B = prompts.size();
  std::vector<generate_result> res(B);
  if (B == 0 || opt.max_new_tokens <= 0) return res;
  const std::int64_t V = m.config().vocab_size;
  std::vector<typename Model::context_type> ctxs;
  std::vector<sampler> samplers;
  std::int64_t total_prompt = 0;
  for (const auto& p : prompts) {
    MUNINN_CHECK(!p.empty(), "generate_batch: an empty prompt");
    context_limits lim;
    lim.max_tokens = std::min(std::int64_t(p.size()) + opt.max_new_tokens, m.config().block_size);
    lim.max_steps = max_steps_needed(m, opt);
    lim.max_chunk = 1;  // the batch workspace below does the work; keep the per-row one small
    ctxs.push_back(m.make_context(lim));
    samplers.emplace_back(opt.sampling);
    total_prompt += std::int64_t(p.size());
  }
  auto ws = m.make_workspace(std::max<std::int64_t>(total_prompt, std::int64_t(B)));
  std::vector<typename Model::context_type*> live;
  std::vector<std::size_t> live_idx;
  for (std::size_t r = 0; r < B; ++r) {
    live.push_back(&ctxs[r]);
    live_idx.push_back(r);
  }
  std::vector<std::vector<std::int32_t>> feed = prompts;
  std::vector<std::int32_t> used;
  run_options run = opt.run;
  run.steps_used = nullptr;
  if (opt.run.taps.on_tap) {
    // forward_batch numbers the rows of each call; the caller's taps name the prompts instead.
    run.taps.on_tap = [&live_idx, &user = opt.run.taps.on_tap](const tap_event& e) {
      if (!e.sequences) return user(e);
      std::vector<std::int64_t> seq(std::size_t(e.rows));
      for (std::int64_t i = 0; i < e.rows; ++i) seq[std::size_t(i)] = std::int64_t(live_idx[std::size_t(e.sequences[i])]);
      tap_event mapped = e;
      mapped.sequences = seq.data();
      user(mapped);
    };
  }
  while (!live.empty()) {
    const auto logits = m.forward_batch(ws, live, feed, run, logits_for::last);
    std::vector<typename Model::context_type*> next_live;
    std::vector<std::size_t> next_idx;
    std::vector<std::vector<std::int32_t>> next_feed;
    for (std::size_t i = 0; i < live.size(); ++i) {
      const std::size_t r = live_idx[i];
      auto& ctx = *live[i];
      const std::int32_t t = samplers[r].sample(logits[i].data(), V, ctx.tokens());
      res[r].tokens.push_back(t);
      res[r].steps.push_back(ctx.steps_used().back());
      ++res[r].forward_calls;
      const bool done = detail::is_stop(opt, t) || std::int64_t(res[r].tokens.size()) >= opt.max_new_tokens ||
                        ctx.length() >= ctx.limits().max_tokens;
      if (!done) {
        next_live.push_back(live[i]);
        next_idx.push_back(r);
        next_feed.push_back({t});
      }
    }
    live = std::move(next_live);
    live_idx = std::move(next_idx);
    feed = std::move(next_feed);
  }
  return res;
}

/// \brief `generate_batch` on a padded [B, S] token matrix with a mask (1 = token, 0 = padding;
/// left or right padding): each row's prompt is its unmasked tokens in order.
template <class Model>
std::vector<generate_result> generate_batch_padded(const Model& m, const std::vector<std::int32_t>& tokens,
                                                   const std::vector<std::uint8_t>& mask, std::int64_t batch,
                                                   std::int64_t seq, const generate_options& opt) {
  MUNINN_CHECK(std::int64_t(tokens.size()) == batch * seq && std::int64_t(mask.size()) == batch * seq,
               "generate_batch_padded: tokens and mask must both hold batch*seq = ", batch * seq, " values");
  std::vector<std::vector<std::int32_t>> prompts(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t s = 0; s < seq; ++s)
      if (mask[std::size_t(b * seq + s)]) prompts[std::size_t(b)].push_back(tokens[std::size_t(b * seq + s)]);
  return generate_batch(m, prompts, opt);
}

}  // namespace muninn
