#pragma once
/// \file
/// \brief RoPE frequency tables: Huginn's default and Hugging Face's linear and Llama-3 scalings.
///
/// Every table has the layout [max_pos][head_dim/2][2] = {cos, sin} of angle p · inv_freq[i];
/// both rope_interleaved and rope_half read it (they differ in which elements form pair i).

#include <cmath>
#include <cstdint>
#include <vector>

#include "muninn/core/error.hpp"

namespace muninn {

/// \brief How the RoPE frequencies are rescaled for a longer context (Hugging Face's
/// `rope_scaling` config entry).
struct rope_scaling {
  /// \brief The `rope_type` of the config.
  enum class kind {
    none,    ///< "default": inv_freq[i] = 1 / base^(2i/D)
    linear,  ///< "linear": inv_freq / factor (positions divided by factor)
    llama3   ///< "llama3": long wavelengths / factor, short ones kept, a smooth ramp between
  };
  kind type = kind::none;       ///< which scaling
  float factor = 1;             ///< `factor`
  float low_freq_factor = 1;    ///< `low_freq_factor` (llama3)
  float high_freq_factor = 4;   ///< `high_freq_factor` (llama3)
  std::int64_t original_max_position_embeddings = 8192;  ///< `original_max_position_embeddings` (llama3)
};

/// \brief The RoPE inverse frequencies [head_dim/2] in fp32, step by step as Hugging Face
/// transformers computes them for Llama.
///
/// Default: inv_freq[i] = 1 / base^(float(2i)/D). Linear: inv_freq / factor. Llama-3, with
/// wavelen = 2π / inv_freq and old = original_max_position_embeddings: wavelen > old / low →
/// inv_freq / factor; wavelen < old / high → inv_freq; otherwise, with smooth =
/// (old / wavelen − low) / (high − low), (1 − smooth) · inv_freq / factor + smooth · inv_freq.
/// Every step is one fp32 operation in PyTorch's order (`x / t` for a tensor t is PyTorch's
/// `t.reciprocal() * x`), so the result matches transformers up to the ulp of its pow.
/// \param head_dim D, positive and even
/// \param base     rope_theta
/// \param s        the scaling
/// \throws muninn::error for a bad head_dim, base or scaling parameter
inline std::vector<float> rope_inv_freq(std::int64_t head_dim, float base, const rope_scaling& s) {
  MUNINN_CHECK(head_dim > 0 && head_dim % 2 == 0, "rope_inv_freq: head_dim must be positive and even, got ",
               head_dim);
  MUNINN_CHECK(base > 0.0f, "rope_inv_freq: base must be positive, got ", base);
  MUNINN_CHECK(s.type == rope_scaling::kind::none || s.factor > 0.0f, "rope_inv_freq: factor must be positive, got ",
               s.factor);
  const std::int64_t half = head_dim / 2;
  std::vector<float> inv(static_cast<std::size_t>(half));
  for (std::int64_t i = 0; i < half; ++i) inv[std::size_t(i)] = 1.0f / std::pow(base, float(2 * i) / float(head_dim));
  if (s.type == rope_scaling::kind::linear) {
    for (auto& f : inv) f = f / s.factor;
  } else if (s.type == rope_scaling::kind::llama3) {
    MUNINN_CHECK(s.high_freq_factor > s.low_freq_factor && s.low_freq_factor > 0.0f &&
                     s.original_max_position_embeddings > 0,
                 "rope_inv_freq: llama3 needs 0 < low_freq_factor < high_freq_factor and a positive "
                 "original_max_position_embeddings");
    // Python computes these scalars in double; PyTorch then uses them as fp32 operands.
    const double old = double(s.original_max_position_embeddings);
    const float low_wavelen = float(old / double(s.low_freq_factor));
    const float high_wavelen = float(old / double(s.high_freq_factor));
    const float ramp = float(double(s.high_freq_factor) - double(s.low_freq_factor));
    const float two_pi = float(2.0 * 3.14159265358979323846);
    for (auto& f : inv) {
      const float wavelen = (1.0f / f) * two_pi;
      const float scaled = wavelen > low_wavelen ? f / s.factor : f;
      const float smooth = ((1.0f / wavelen) * float(old) - s.low_freq_factor) / ramp;
      const float smoothed = (1.0f - smooth) * scaled / s.factor + smooth * scaled;
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      f = medium ? smoothed : scaled;
    }
  }
  return inv;
}

/// \brief Builds the RoPE table [max_pos][head_dim/2][2] = {cos, sin} in fp32 with a scaling.
///
/// angle = float(p) · inv_freq[i] in fp32 (Hugging Face's `inv_freq @ position_ids` in fp32),
/// then cos and sin from the C library (they may differ from torch's in the last ulp). The
/// attention scaling of these rope types is 1, so the table holds plain cos and sin.
/// \param head_dim D, positive and even
/// \param max_pos  number of positions
/// \param base     rope_theta
/// \param s        the scaling (rope_scaling{} for none)
inline std::vector<float> make_rope_table(std::int64_t head_dim, std::int64_t max_pos, float base,
                                          const rope_scaling& s) {
  MUNINN_CHECK(max_pos >= 0, "make_rope_table: negative max_pos ", max_pos);
  const std::vector<float> inv = rope_inv_freq(head_dim, base, s);
  const std::int64_t half = head_dim / 2;
  std::vector<float> table(static_cast<std::size_t>(max_pos * half * 2));
  for (std::int64_t p = 0; p < max_pos; ++p)
    for (std::int64_t i = 0; i < half; ++i) {
      const float angle = float(p) * inv[std::size_t(i)];
      table[std::size_t((p * half + i) * 2)] = std::cos(angle);
      table[std::size_t((p * half + i) * 2 + 1)] = std::sin(angle);
    }
  return table;
}

/// \brief Builds the RoPE table [max_pos][head_dim/2][2] = {cos, sin} in fp32 (no scaling).
///
/// Follows Huginn's precompute_freqs_cis step by step in fp32: inv_freq[i] =
/// 1 / base^(float(2i)/D), angle = float(p) · inv_freq[i]. cos/sin come from the C library
/// (they may differ from torch's in the last ulp; load the checkpoint's table to be exact).
/// \param head_dim D, even
/// \param max_pos  number of positions (Huginn: block_size 4096)
/// \param base     rope base (Huginn: 50000)
inline std::vector<float> make_rope_table(std::int64_t head_dim, std::int64_t max_pos, float base) {
  MUNINN_CHECK(head_dim > 0 && head_dim % 2 == 0, "make_rope_table: head_dim must be positive and even, got ",
               head_dim);
  MUNINN_CHECK(max_pos >= 0, "make_rope_table: negative max_pos ", max_pos);
  MUNINN_CHECK(base > 0.0f, "make_rope_table: base must be positive, got ", base);
  return make_rope_table(head_dim, max_pos, base, rope_scaling{});
}

}  // namespace muninn
