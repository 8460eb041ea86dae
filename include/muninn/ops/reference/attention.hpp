#pragma once
/// \file
/// \brief Reference attention: the score matrix row by row in double, any mask.

#include <cmath>
#include <cstdint>
#include <vector>

#include "muninn/ops/attention_mask.hpp"

namespace muninn {
namespace ref {

/// \brief Whether query i sees key j: full → always; causal with positions → k_pos[j] <=
/// q_pos[i]; causal without → j <= nkv − nq + i.
/// \param mask  the mask kind
/// \param q_pos query positions or nullptr
/// \param k_pos key positions or nullptr
/// \param nq    query rows
/// \param nkv   key rows
/// \param i     query row
/// \param j     key row
inline bool attn_sees(attn_mask mask, const std::int32_t* q_pos, const std::int32_t* k_pos, std::int64_t nq,
                      std::int64_t nkv, std::int64_t i, std::int64_t j) {
  if (mask == attn_mask::full) return true;
  if (q_pos) return k_pos[j] <= q_pos[i];
  return j <= nkv - nq + i;
}

/// \brief out[i, head h] = Σ_j softmax_j(scale · q_i·k_j) v_j over the keys query i sees, in
/// double; zeros when it sees none. Query head h reads kv head h / (n_heads / n_kv_heads).
/// \param q          [nq, ldq]
/// \param ldq        row stride of q
/// \param k          [nkv, ldkv]
/// \param v          [nkv, ldkv]
/// \param ldkv       row stride of k and v
/// \param out        [nq, ldo]; only the n_heads · D head columns are written
/// \param ldo        row stride of out
/// \param nq         query rows
/// \param nkv        key rows
/// \param n_heads    query heads
/// \param n_kv_heads kv heads
/// \param head_dim   D
/// \param scale      score scale
/// \param mask       mask kind (default causal)
/// \param q_pos      query positions or nullptr
/// \param k_pos      key positions or nullptr
inline void attention(const float* q, std::int64_t ldq, const float* k, const float* v, std::int64_t ldkv, float* out,
                      std::int64_t ldo, std::int64_t nq, std::int64_t nkv, std::int64_t n_heads,
                      std::int64_t n_kv_heads, std::int64_t head_dim, float scale, attn_mask mask = attn_mask::causal,
                      const std::int32_t* q_pos = nullptr, const std::int32_t* k_pos = nullptr) {
  const std::int64_t group = n_heads / n_kv_heads, D = head_dim;
  std::vector<double> w(static_cast<std::size_t>(nkv));
  for (std::int64_t i = 0; i < nq; ++i)
    for (std::int64_t h = 0; h < n_heads; ++h) {
      const std::int64_t g = h / group;
      double mx = -INFINITY;
      for (std::int64_t j = 0; j < nkv; ++j) {
        w[std::size_t(j)] = -INFINITY;
        if (!attn_sees(mask, q_pos, k_pos, nq, nkv, i, j)) continue;
        double d = 0.0;
        for (std::int64_t t = 0; t < D; ++t) d += double(q[i * ldq + h * D + t]) * double(k[j * ldkv + g * D + t]);
        w[std::size_t(j)] = d * scale;
        mx = std::fmax(mx, w[std::size_t(j)]);
      }
      double sum = 0.0;
      for (std::int64_t j = 0; j < nkv; ++j) sum += (w[std::size_t(j)] = mx == -INFINITY ? 0.0 : std::exp(w[std::size_t(j)] - mx));
      for (std::int64_t t = 0; t < D; ++t) {
        double o = 0.0;
        for (std::int64_t j = 0; j < nkv; ++j) o += w[std::size_t(j)] * double(v[j * ldkv + g * D + t]);
        out[i * ldo + h * D + t] = float(sum > 0.0 ? o / sum : 0.0);
      }
    }
}

}  // namespace ref
}  // namespace muninn
