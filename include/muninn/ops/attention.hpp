#pragma once
/// \file
/// \brief Scaled-dot-product attention on the host against a K/V buffer (cache): causal by row
/// index, causal by explicit positions, or unmasked.
///
/// One query row and a chunk of consecutive heads at a time, with an online (flash-style) softmax
/// over blocks of keys, so no score matrix is materialised and nothing is allocated. Head dims 64, 96 and 128
/// get compiled loop bounds; other head dims (up to 512) take a generic path.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/attention_mask.hpp"
#include "muninn/ops/simd.hpp"

namespace muninn {
namespace detail {
inline namespace MUNINN_SIMD_ABI {

/// \brief Largest head dim the attention op supports (its per-thread buffers live on the stack).
inline constexpr std::int64_t attention_max_head_dim = 512;

/// \brief Most floats (heads x head dim) of one chunk of query heads processed together.
///
/// Heads of a chunk share each K/V row access, which is then one contiguous run instead of a
/// few cache lines per key at a stride of a whole row; that stride defeats the hardware
/// prefetcher and leaves decode latency-bound.
inline constexpr std::int64_t attention_max_chunk_floats = 6144;
/// \brief Most heads in one chunk (bounds the per-thread score buffer).
inline constexpr std::int64_t attention_max_chunk_heads = 64;
/// \brief Bytes of K and V one chunk may keep in cache across the queries of a prefill.
inline constexpr std::int64_t attention_prefill_cache_bytes = 512 * 1024;
/// \brief Keys per online-softmax block.
inline constexpr int attention_block = 64;

/// \brief q·k over D floats, with D fixed at compile time when `D` > 0.
template <int D>
MUNINN_INLINE float attention_dot(const float* q, const float* k, std::int64_t d_rt) {
  constexpr int W = simd_width;
  const std::int64_t d = D > 0 ? D : d_rt;
  const std::int64_t dv = d - d % W;
  // Two accumulators halve the FMA dependency chain of one dot product.
  vfloat a0{}, a1{};
  std::int64_t t = 0;
  for (; t + 2 * W <= dv; t += 2 * W) {
    a0 += vload(q + t) * vload(k + t);
    a1 += vload(q + t + W) * vload(k + t + W);
  }
  for (; t < dv; t += W) a0 += vload(q + t) * vload(k + t);
  float r = hsum(a0 + a1);
  for (; t < d; ++t) r += q[t] * k[t];
  return r;
}

/// \brief Attention for one query row and `hc` consecutive heads [h0, h0 + hc) over keys
/// [0, nkeys), with an online softmax per head.
///
/// `D` > 0 fixes the head dim at compile time (`d_rt` must equal it); `D` == 0 uses `d_rt`.
/// When `Vis::ragged`, `vis(qi, j)` hides individual keys: a block with no visible key is
/// skipped (its scores would all be −inf), hidden keys get probability exactly 0, and a query
/// that sees no key at all outputs zeros. Otherwise every key in [0, nkeys) is visible and the
/// code is the unmasked kernel.
template <int D, class Vis = attn_keys_prefix>
void attend_chunk(const float* q, const float* k, const float* v, std::int64_t ldkv, std::int64_t nkeys,
                  std::int64_t h0, std::int64_t hc, std::int64_t group, std::int64_t d_rt, float scale, float* out,
                  const Vis& vis = {}, std::int64_t qi = 0) {
  constexpr int W = simd_width;
  constexpr int BJ = attention_block;
  constexpr std::int64_t CH = attention_max_chunk_floats;
  constexpr std::int64_t HC = attention_max_chunk_heads;
  const std::int64_t d = D > 0 ? D : d_rt;
  const std::int64_t dv = d - d % W;

  alignas(64) float qs[CH];      // scaled queries of the chunk, [hc][d]
  alignas(64) float o[CH];       // unnormalised outputs, [hc][d]
  alignas(64) float s[HC * BJ];  // scores, then probabilities, [hc][BJ]
  alignas(64) float keep[BJ];    // ragged masks: 1 for a visible key of the block, 0 for a hidden one
  float m[HC], l[HC];            // running maximum and sum per head
  std::int64_t koff[HC];         // column of each head's kv head in a K/V row
  for (std::int64_t c = 0; c < hc; ++c) {
    for (std::int64_t t = 0; t < d; ++t) {
      qs[c * d + t] = q[c * d + t] * scale;
      o[c * d + t] = 0.0f;
    }
    m[c] = -std::numeric_limits<float>::infinity();
    l[c] = 0.0f;
    koff[c] = ((h0 + c) / group) * d;
  }

  for (std::int64_t j0 = 0; j0 < nkeys; j0 += BJ) {
    const int jb = int(std::min<std::int64_t>(BJ, nkeys - j0));
    if constexpr (Vis::ragged) {
      int visible = 0;
      for (int j = 0; j < jb; ++j) visible += int(keep[j] = vis(qi, j0 + j) ? 1.0f : 0.0f);
      if (visible == 0) continue;  // nothing to add, and exp(−inf − (−inf)) would be NaN
    }
    for (int j = 0; j < jb; ++j) {
      const float* kr = k + (j0 + j) * ldkv;
      if constexpr (Vis::ragged) {
        if (keep[j] == 0.0f) {
          for (std::int64_t c = 0; c < hc; ++c) s[c * BJ + j] = -std::numeric_limits<float>::infinity();
          continue;
        }
      }
      for (std::int64_t c = 0; c < hc; ++c) s[c * BJ + j] = attention_dot<D>(qs + c * d, kr + koff[c], d);
    }
    for (std::int64_t c = 0; c < hc; ++c) {
      float* sc = s + c * BJ;
      float bm = sc[0];
      for (int j = 1; j < jb; ++j) bm = std::max(bm, sc[j]);
      if (bm > m[c]) {
        // Rescale what was accumulated under the old maximum (exp(-inf) = 0 on the first block).
        const float corr = std::exp(m[c] - bm);
        l[c] *= corr;
        for (std::int64_t t = 0; t < d; ++t) o[c * d + t] *= corr;
        m[c] = bm;
      }
      int j = 0;
      vfloat acc{};
      for (; j + W <= jb; j += W) {
        vfloat p = vexp(vload(sc + j) - m[c]);
        // vexp clamps −inf to e^−87.3, not 0: hidden keys are zeroed explicitly.
        if constexpr (Vis::ragged) p = p * vload(keep + j);
        vstore(sc + j, p);
        acc += p;
      }
      float sum = hsum(acc);
      for (; j < jb; ++j) {
        float p = sexp(sc[j] - m[c]);
        if constexpr (Vis::ragged) p *= keep[j];
        sum += (sc[j] = p);
      }
      l[c] += sum;
    }
    for (int j = 0; j < jb; ++j) {
      if constexpr (Vis::ragged) {
        if (keep[j] == 0.0f) continue;  // p = 0 (and a hidden V row may hold anything)
      }
      const float* vr = v + (j0 + j) * ldkv;
      for (std::int64_t c = 0; c < hc; ++c) {
        const float p = s[c * BJ + j];
        const float* vj = vr + koff[c];
        float* oc = o + c * d;
        std::int64_t t = 0;
        for (; t < dv; t += W) vstore(oc + t, vload(oc + t) + p * vload(vj + t));
        for (; t < d; ++t) oc[t] += p * vj[t];
      }
    }
  }
  for (std::int64_t c = 0; c < hc; ++c) {
    float inv = 1.0f / l[c];
    if constexpr (Vis::ragged) inv = l[c] > 0.0f ? inv : 0.0f;  // no visible key: zeros
    for (std::int64_t t = 0; t < d; ++t) out[c * d + t] = o[c * d + t] * inv;
  }
}

/// \brief Runs attend_chunk over every (query, chunk of heads) item; `vis` says which keys each
/// query may see (keys [0, vis.end(i)), filtered by vis(i, j) when ragged).
template <class Vis>
void attention_rows(const host_backend& be, const float* q, std::int64_t ldq, const float* k, const float* v,
                    std::int64_t ldkv, float* out, std::int64_t ldo, std::int64_t nq, std::int64_t nkv,
                    std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t head_dim, float scale,
                    const Vis& vis) {
  const std::int64_t group = n_heads / n_kv_heads;
  // Decode (few queries): big chunks, one per thread, so each thread streams long contiguous
  // runs of every K/V row. Prefill: chunks small enough that their K/V stay in L2 while all
  // the queries pass (items are chunk-major).
  std::int64_t hc;
  if (nq <= 4) {
    hc = (n_heads + be.threads() - 1) / be.threads();
  } else {
    hc = attention_prefill_cache_bytes / (8 * nkv * head_dim);
  }
  hc = std::max<std::int64_t>(1, std::min({hc, n_heads, attention_max_chunk_heads,
                                           attention_max_chunk_floats / head_dim}));
  const std::int64_t nchunks = (n_heads + hc - 1) / hc;
  const std::int64_t items = nq * nchunks;
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / (nkv * hc * head_dim));
  be.parallel_for(items, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t it = b; it < e; ++it) {
      // Chunk-major order keeps a chunk's keys hot in cache across consecutive queries (prefill).
      const std::int64_t ci = it / nq, i = it % nq;
      const std::int64_t h0 = ci * hc, nh = std::min(hc, n_heads - h0);
      const std::int64_t nkeys = vis.end(i);
      const float* qp = q + i * ldq + h0 * head_dim;
      float* op = out + i * ldo + h0 * head_dim;
      switch (head_dim) {
        case 64: attend_chunk<64>(qp, k, v, ldkv, nkeys, h0, nh, group, head_dim, scale, op, vis, i); break;
        case 96: attend_chunk<96>(qp, k, v, ldkv, nkeys, h0, nh, group, head_dim, scale, op, vis, i); break;
        case 128: attend_chunk<128>(qp, k, v, ldkv, nkeys, h0, nh, group, head_dim, scale, op, vis, i); break;
        default: attend_chunk<0>(qp, k, v, ldkv, nkeys, h0, nh, group, head_dim, scale, op, vis, i); break;
      }
    }
  });
}

}  // namespace MUNINN_SIMD_ABI

/// \brief The argument checks shared by both attention overloads (the nkv/nq relation is the
/// caller's: it depends on the mask).
inline void attention_check(std::int64_t ldq, std::int64_t ldkv, std::int64_t ldo, std::int64_t nq, std::int64_t nkv,
                            std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t head_dim) {
  MUNINN_CHECK(n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads == 0, "attention: n_heads=", n_heads,
               " is not a multiple of n_kv_heads=", n_kv_heads);
  MUNINN_CHECK(head_dim > 0 && head_dim <= attention_max_head_dim, "attention: head_dim=", head_dim,
               " outside [1, ", attention_max_head_dim, "]");
  MUNINN_CHECK(nq >= 0 && nkv >= 0, "attention: negative nq=", nq, " or nkv=", nkv);
  MUNINN_CHECK(ldq >= n_heads * head_dim && ldo >= n_heads * head_dim && ldkv >= n_kv_heads * head_dim,
               "attention: row strides too small (ldq=", ldq, ", ldkv=", ldkv, ", ldo=", ldo, ") for ", n_heads,
               " heads, ", n_kv_heads, " kv heads of dim ", head_dim);
}

}  // namespace detail

/// \brief Causal attention of queries q against a K/V buffer, softmax in fp32.
///
/// The causal mask is bottom-right aligned: query i attends key j iff j <= (nkv − nq) + i.
/// That is the usual causal mask when nq == nkv, chunked prefill against a cache when
/// nq < nkv, and no mask for a single decode query. Grouped-query attention: query head h reads
/// kv head h / (n_heads / n_kv_heads).
/// \param be         the host backend
/// \param q          queries [nq, ldq]; head h at columns [h·D, (h+1)·D)
/// \param ldq        row stride of q
/// \param k          keys [nkv, ldkv]; kv head g at columns [g·D, (g+1)·D)
/// \param v          values, same layout as k
/// \param ldkv       row stride of k and v
/// \param out        output [nq, ldo]; head h at columns [h·D, (h+1)·D); must not overlap q, k, v
/// \param ldo        row stride of out
/// \param nq         query rows (the last nq positions of the buffer)
/// \param nkv        key/value rows, >= nq
/// \param n_heads    query heads
/// \param n_kv_heads key/value heads, divides n_heads
/// \param head_dim   D, at most 512
/// \param scale      score scale, usually 1/sqrt(D)
inline void attention(const host_backend& be, const float* q, std::int64_t ldq, const float* k, const float* v,
                      std::int64_t ldkv, float* out, std::int64_t ldo, std::int64_t nq, std::int64_t nkv,
                      std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t head_dim, float scale) {
  detail::attention_check(ldq, ldkv, ldo, nq, nkv, n_heads, n_kv_heads, head_dim);
  MUNINN_CHECK(nkv >= nq, "attention: nkv=", nkv, " must be >= nq=", nq);
  if (nq == 0) return;
  detail::attention_rows(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim, scale,
                         detail::attn_keys_prefix{nkv - nq});
}

/// \brief Attention with a chosen mask and, for a causal mask, optional explicit positions.
///
/// Same layouts, grouped-query rule and softmax as the causal overload (which equals this one
/// with attn_mask::causal and null positions). The mask (see attn_mask):
/// - `full`: every query sees all nkv keys; positions are ignored; any nq, nkv.
/// - `causal`, null positions: query i sees keys j <= nkv − nq + i; needs nkv >= nq.
/// - `causal` with positions: query i sees key j iff k_pos[j] <= q_pos[i]; any nq, nkv, and the
///   positions may be ragged, unsorted and non-contiguous (mixture-of-recursions).
///
/// A query that sees no key (no keys at all, or none at or before its position) outputs zeros.
/// \param be         the host backend
/// \param q          queries [nq, ldq]; head h at columns [h·D, (h+1)·D)
/// \param ldq        row stride of q
/// \param k          keys [nkv, ldkv]; kv head g at columns [g·D, (g+1)·D)
/// \param v          values, same layout as k
/// \param ldkv       row stride of k and v
/// \param out        output [nq, ldo]; must not overlap q, k, v
/// \param ldo        row stride of out
/// \param nq         query rows
/// \param nkv        key/value rows
/// \param n_heads    query heads
/// \param n_kv_heads key/value heads, divides n_heads
/// \param head_dim   D, at most 512
/// \param scale      score scale, usually 1/sqrt(D)
/// \param mask       attn_mask::causal or attn_mask::full
/// \param q_pos      nullptr, or the position of each query row [nq]
/// \param k_pos      nullptr, or the position of each key row [nkv]; null exactly when q_pos is
inline void attention(const host_backend& be, const float* q, std::int64_t ldq, const float* k, const float* v,
                      std::int64_t ldkv, float* out, std::int64_t ldo, std::int64_t nq, std::int64_t nkv,
                      std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t head_dim, float scale,
                      attn_mask mask, const std::int32_t* q_pos, const std::int32_t* k_pos) {
  detail::attention_check(ldq, ldkv, ldo, nq, nkv, n_heads, n_kv_heads, head_dim);
  MUNINN_CHECK((q_pos == nullptr) == (k_pos == nullptr), "attention: give both q_pos and k_pos, or neither");
  const bool by_position = mask == attn_mask::causal && q_pos != nullptr;
  MUNINN_CHECK(mask != attn_mask::causal || by_position || nkv >= nq, "attention: nkv=", nkv,
               " must be >= nq=", nq, " for a causal mask without positions");
  if (nq == 0) return;
  if (nkv == 0) {
    for (std::int64_t i = 0; i < nq; ++i) std::fill(out + i * ldo, out + i * ldo + n_heads * head_dim, 0.0f);
    return;
  }
  if (mask == attn_mask::full) {
    detail::attention_rows(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim, scale,
                           detail::attn_keys_all{nkv});
  } else if (by_position) {
    detail::attention_rows(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim, scale,
                           detail::attn_keys_by_position{q_pos, k_pos, nkv});
  } else {
    detail::attention_rows(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim, scale,
                           detail::attn_keys_prefix{nkv - nq});
  }
}

}  // namespace muninn
