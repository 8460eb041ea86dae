#pragma once
/// \file
/// \brief Generation loops on top of `model::forward`: prefill once, then one token at a time.

#include <cstdint>
#include <vector>

#include "muninn/model/model.hpp"

namespace muninn {

/// \brief Options of a generation loop.
struct generate_options {
  std::int64_t max_new_tokens = 16;     ///< tokens to produce at most
  run_options run;                      ///< steps, initial state, seed (random states are drawn per position)
  std::vector<std::int32_t> stop_ids;   ///< generation ends after producing one of these
};

/// \brief Index of the largest value (the first one on ties), on the host.
inline std::int32_t argmax_host(const float* x, std::int64_t n) {
  std::int64_t best = 0;
  for (std::int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return std::int32_t(best);
}

/// \brief Greedy decoding with the KV cache: the prompt is prefilled in one call, then each new
/// token is fed alone and attends to every cached slot. Returns only the new tokens.
template <class Model>
std::vector<std::int32_t> generate_greedy(const Model& m, typename Model::context_type& ctx,
                                          const std::vector<std::int32_t>& prompt, const generate_options& opt) {
  MUNINN_CHECK(!prompt.empty(), "generate: the prompt is empty");
  std::vector<std::int32_t> out;
  if (opt.max_new_tokens <= 0) return out;
  run_options run = opt.run;
  std::vector<float> logits = m.forward(ctx, prompt, run, logits_for::last);
  const std::int64_t V = m.config().vocab_size;
  for (std::int64_t t = 0; t < opt.max_new_tokens; ++t) {
    const std::int32_t next = argmax_host(logits.data(), V);
    out.push_back(next);
    bool stop = false;
    for (auto s : opt.stop_ids) stop |= (s == next);
    if (stop || t + 1 == opt.max_new_tokens) break;
    logits = m.forward(ctx, {next}, run, logits_for::last);
  }
  return out;
}

/// \brief Greedy decoding on a fresh context sized for prompt + new tokens.
template <class Model>
std::vector<std::int32_t> generate_greedy(const Model& m, const std::vector<std::int32_t>& prompt,
                                          const generate_options& opt) {
  const std::int64_t steps = opt.run.steps < 0 ? m.config().mean_recurrence : opt.run.steps;
  auto ctx = m.make_context(std::int64_t(prompt.size()) + std::max<std::int64_t>(opt.max_new_tokens, 0), steps);
  return generate_greedy(m, ctx, prompt, opt);
}

}  // namespace muninn
