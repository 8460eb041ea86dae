#pragma once
/// \file
/// \brief BrierLM for a loaded calm_model: the estimator of runtime/sampled_brier.hpp (two head
/// samples per position, chunk-aligned n-grams, a rollout of the collision term when K < 4), which
/// serves any arch with an energy head, applied to the CALM model and its head's sampler.

#include <cstdint>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/calm/model.hpp"
#include "muninn/runtime/sampled_brier.hpp"

namespace muninn {

/// \brief Stream kind whose sub-streams seed BrierLM's head samples (sampled_brier_stream_kind).
inline constexpr std::uint64_t calm_brier_stream_kind = sampled_brier_stream_kind;

/// \brief Brier-n estimates of one teacher-forced block for CALM (`block`: a whole number of
/// chunks, at least two): sampled_brier_block on the model and its head's sampler.
template <class Backend, class T>
brier_accumulator calm_brier_block(calm_model<Backend, T>& m, const std::vector<std::int32_t>& block,
                                   const brier_draws& d) {
  return sampled_brier_block(m.arch_model(), m.sampler(), block, d);
}

/// \brief BrierLM of a token stream for CALM: evaluate_brierlm of the model (sampled_brier.hpp),
/// with the limits said in CALM's terms (chunks).
template <class Backend, class T>
brierlm_result evaluate_calm_brierlm(calm_model<Backend, T>& m, const std::vector<std::int32_t>& stream,
                                     const brierlm_options& o) {
  MUNINN_CHECK(o.block_size % m.patch_size() == 0, "brierlm: block_size ", o.block_size,
               " is not a multiple of the patch size ", m.patch_size());
  MUNINN_CHECK(o.block_size / m.patch_size() <= m.config().backbone.block_size, "brierlm: block_size ", o.block_size,
               " exceeds the model's context of ", m.config().backbone.block_size, " chunks");
  return evaluate_brierlm(stream, o, [&](const std::vector<std::int32_t>& block, const brier_draws& d) {
    return calm_brier_block(m, block, d);
  });
}

}  // namespace muninn
