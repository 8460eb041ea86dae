#pragma once
/// \file
/// \brief Attention on the CUDA backend (causal by row index, causal by explicit positions, or
/// unmasked): a tiled prefill kernel and a split-KV decode path.
///
/// Both use the online (flash-style) softmax in fp32 and exp2 with log2(e) folded into the
/// query scale. Scores and products run on CUDA cores in fp32: attention is a few percent of a
/// recurrent-depth model's work, and this form is easy to check. Head dims 64, 96 and 128 have
/// tuned kernels; any other head dim up to 256 (small models) takes one generic kernel. Lane l
/// of a warp owns output columns l, l+32, ... of a head.

#include <algorithm>
#include <cstdint>

#include "muninn/ops/attention_mask.hpp"
#include "muninn/ops/cuda/common.cuh"

namespace muninn {
namespace detail {
namespace gpu {

inline constexpr float log2e = 1.4426950408889634f;

/// \brief Queries per prefill block (one warp each) and keys per shared-memory tile.
inline constexpr int attn_prefill_warps = 8;
inline constexpr int attn_tile_keys = 32;

/// \brief Prefill: block = (8 consecutive queries, one head); K/V tiles of 32 keys staged in
/// shared memory as fp32 and reused by the 8 query warps.
///
/// Lane l scores key j0 + l against the warp's query (K rows padded to D + 1 floats, so the 32
/// lanes reading column d hit 32 different banks), the warp max/sum update the running state,
/// then each lane accumulates its output columns over the tile's keys. Query i sees keys
/// [0, vis.end(i)) (for the default causal mask j <= nkv - nq + i), filtered by vis(i, j) when
/// Vis::ragged; a tile with no visible key for one warp (but needed by another) is skipped by
/// that warp, so exp never sees (-inf) - (-inf), and a query that sees no key writes zeros.
template <class T, int D, class Vis>
__global__ void __launch_bounds__(attn_prefill_warps * 32)
    attn_prefill_kernel(const T* q, std::int64_t ldq, const T* k, const T* v, std::int64_t ldkv, T* out,
                        std::int64_t ldo, std::int64_t nq, std::int64_t nkv, int group, float scale_log2, Vis vis) {
  constexpr int C = D / 32, BK = attn_tile_keys, BQ = attn_prefill_warps, NT = BQ * 32;
  __shared__ float ks[BK][D + 1];
  __shared__ float vs[BK][D];
  __shared__ float qs[BQ][D];

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int h = blockIdx.y, g = h / group;
  const std::int64_t q0 = std::int64_t(blockIdx.x) * BQ, qi = q0 + warp;
  const bool active = qi < nq;

  if (active) {
    const T* qr = q + qi * ldq + std::int64_t(h) * D;
#pragma unroll
    for (int c = 0; c < C; ++c) qs[warp][lane + 32 * c] = load(qr + lane + 32 * c) * scale_log2;
  }
  const std::int64_t last_q = min64(q0 + BQ, nq) - 1;
  const std::int64_t kend = vis.end(last_q);  // keys the block needs: [0, kend) (end() grows with i)
  const std::int64_t limit = vis.end(qi) - 1;  // this warp's last candidate key (< nkv when active)
  const T* kb = k + std::int64_t(g) * D;
  const T* vb = v + std::int64_t(g) * D;

  float m = -INFINITY, l = 0.0f, acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;

  for (std::int64_t j0 = 0; j0 < kend; j0 += BK) {
    __syncthreads();  // the previous tile has been consumed (and qs is written before the first)
    for (int e = threadIdx.x; e < BK * D; e += NT) {
      const int r = e / D, c = e - r * D;
      const std::int64_t j = j0 + r;
      float kv = 0.0f, vv = 0.0f;
      if (j < nkv) {
        kv = load(kb + j * ldkv + c);
        vv = load(vb + j * ldkv + c);
      }
      ks[r][c] = kv;
      vs[r][c] = vv;
    }
    __syncthreads();
    if (!active || j0 > limit) continue;  // warp-uniform

    float s = 0.0f;
#pragma unroll 8
    for (int d = 0; d < D; ++d) s = fmaf(qs[warp][d], ks[lane][d], s);
    if constexpr (Vis::ragged) {
      if (j0 + lane > limit || !vis(qi, j0 + lane)) s = -INFINITY;
    } else {
      if (j0 + lane > limit) s = -INFINITY;
    }
    const float tmax = warp_max(s);  // finite unless ragged: key j0 <= limit is visible
    if constexpr (Vis::ragged) {
      if (tmax == -INFINITY) continue;  // warp-uniform: no visible key in this tile
    }
    const float mn = fmaxf(m, tmax);
    const float corr = exp2f(m - mn);  // m = -inf on the first tile: 0
    const float p = exp2f(s - mn);
    l = l * corr + warp_sum(p);
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] *= corr;
    const int cnt = int(min64(BK, limit - j0 + 1));
#pragma unroll 4
    for (int jj = 0; jj < cnt; ++jj) {
      const float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
      for (int c = 0; c < C; ++c) acc[c] = fmaf(pj, vs[jj][lane + 32 * c], acc[c]);
    }
    m = mn;
  }
  if (active) {
    float inv = 1.0f / l;
    if constexpr (Vis::ragged) inv = l > 0.0f ? inv : 0.0f;  // no visible key: zeros
    T* orow = out + qi * ldo + std::int64_t(h) * D;
#pragma unroll
    for (int c = 0; c < C; ++c) store(orow + lane + 32 * c, acc[c] * inv);
  }
}

/// \brief Warps per decode block; each warp handles one split of the keys.
inline constexpr int attn_decode_warps = 4;

/// \brief Dot product of the (pre-scaled, shared-memory) query with one key row read straight
/// from global memory, 16 bytes at a time when `vec`.
template <class T, int D>
__device__ MUNINN_INLINE float dot_row(const float* qs, const T* row, bool vec) {
  float s = 0.0f;
  if (vec) {
    constexpr int P = pack_v<T>;
#pragma unroll
    for (int c = 0; c < D / P; ++c) {
      float f[P];
      load_pack(row + c * P, f);
#pragma unroll
      for (int i = 0; i < P; ++i) s = fmaf(qs[c * P + i], f[i], s);
    }
  } else {
#pragma unroll 8
    for (int d = 0; d < D; ++d) s = fmaf(qs[d], load(row + d), s);
  }
  return s;
}

/// \brief Decode, pass 1: grid (splits / 4, heads, queries); warp w of block x handles keys
/// [split·chunk, (split+1)·chunk) ∩ visible keys, split = 4x + w, and writes its partial state
/// {m, l, acc[D]} (unnormalised, base-2 exponent) to `part`.
///
/// Lane l scores key j0 + l (a whole K row per lane: the warp reads 32 full rows), then the
/// warp accumulates V rows one key at a time with coalesced loads. Splits past the query's
/// last visible key, or (ragged masks) without a visible key, write the empty state
/// (m = -inf, l = 0, acc = 0).
template <class T, int D, class Vis>
__global__ void __launch_bounds__(attn_decode_warps * 32)
    attn_decode_partial_kernel(const T* q, std::int64_t ldq, const T* k, const T* v, std::int64_t ldkv,
                               std::int64_t nq, std::int64_t nkv, int group, float scale_log2, std::int64_t chunk,
                               int nsplit, float* part, bool kvec, Vis vis) {
  constexpr int C = D / 32;
  __shared__ float qs[D];
  const int h = blockIdx.y, g = h / group, n_heads = gridDim.y;
  const std::int64_t qi = blockIdx.z;
  const T* qr = q + qi * ldq + std::int64_t(h) * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) qs[d] = load(qr + d) * scale_log2;
  __syncthreads();

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int split = int(blockIdx.x) * attn_decode_warps + warp;
  if (split >= nsplit) return;  // no barrier follows
  const std::int64_t limit = vis.end(qi) - 1;
  const std::int64_t jb = std::int64_t(split) * chunk, je = min64(jb + chunk, limit + 1);
  const T* kb = k + std::int64_t(g) * D;
  const T* vb = v + std::int64_t(g) * D;

  float m = -INFINITY, l = 0.0f, acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;

  for (std::int64_t j0 = jb; j0 < je; j0 += 32) {
    const std::int64_t j = j0 + lane;
    const bool seen = j < je && (!Vis::ragged || vis(qi, j));
    const float s = seen ? dot_row<T, D>(qs, kb + j * ldkv, kvec) : -INFINITY;
    const float tmax = warp_max(s);  // finite unless ragged: key j0 < je is visible
    if constexpr (Vis::ragged) {
      if (tmax == -INFINITY) continue;  // warp-uniform: no visible key in these 32
    }
    const float mn = fmaxf(m, tmax);
    const float corr = exp2f(m - mn);
    const float p = exp2f(s - mn);
    l = l * corr + warp_sum(p);
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] *= corr;
    const int cnt = int(min64(32, je - j0));
#pragma unroll 4
    for (int jj = 0; jj < cnt; ++jj) {
      const float pj = __shfl_sync(0xffffffffu, p, jj);
      const T* vr = vb + (j0 + jj) * ldkv;
#pragma unroll
      for (int c = 0; c < C; ++c) acc[c] = fmaf(pj, load(vr + lane + 32 * c), acc[c]);
    }
    m = mn;
  }
  float* pp = part + ((qi * n_heads + h) * nsplit + split) * std::int64_t(D + 2);
  if (lane == 0) {
    pp[0] = m;
    pp[1] = l;
  }
#pragma unroll
  for (int c = 0; c < C; ++c) pp[2 + lane + 32 * c] = acc[c];
}

/// \brief Decode, pass 2: grid (heads, queries), D threads; merges the splits' states.
/// Without a ragged mask split 0 always holds key 0, so the merged maximum is finite and empty
/// splits weigh 0; with one, every split may be empty, and then the query writes zeros.
template <class T, int D, bool Ragged>
__global__ void __launch_bounds__(D) attn_decode_combine_kernel(const float* part, int nsplit, T* out,
                                                                std::int64_t ldo) {
  const int h = blockIdx.x, n_heads = gridDim.x, d = threadIdx.x;
  const std::int64_t qi = blockIdx.y;
  const float* pp = part + (qi * n_heads + h) * nsplit * std::int64_t(D + 2);
  float mx = -INFINITY;
  for (int s = 0; s < nsplit; ++s) mx = fmaxf(mx, pp[std::int64_t(s) * (D + 2)]);
  if constexpr (Ragged) {
    if (mx == -INFINITY) {  // no visible key at all
      store(out + qi * ldo + std::int64_t(h) * D + d, 0.0f);
      return;
    }
  }
  float l = 0.0f, a = 0.0f;
  for (int s = 0; s < nsplit; ++s) {
    const float* ps = pp + std::int64_t(s) * (D + 2);
    const float w = exp2f(ps[0] - mx);
    l = fmaf(ps[1], w, l);
    a = fmaf(ps[2 + d], w, a);
  }
  store(out + qi * ldo + std::int64_t(h) * D + d, a / l);
}

/// \brief Largest head dim of the generic kernel (lane l owns columns l, l+32, ..., 8 of them).
inline constexpr int attn_generic_max_dim = 256;
/// \brief Warps per generic block; each warp handles one (query, head) pair.
inline constexpr int attn_generic_warps = 4;

/// \brief Any head dim in [1, 256] (models with small heads): one warp per (query, head), the
/// whole visible key range in tiles of 32 keys, online softmax, no shared K/V tiles.
///
/// The same scheme as the decode split kernel without the split: lane l scores key j0 + l
/// against the (pre-scaled, shared-memory) query, the warp updates the running max and sum,
/// then accumulates V rows one key at a time, lane l owning columns l + 32c. Slower than the
/// compiled head dims (a K row per lane is read column by column), correct for every D. Keys
/// and masking follow `vis` as in the prefill kernel.
template <class T, class Vis>
__global__ void __launch_bounds__(attn_generic_warps * 32)
    attn_generic_kernel(const T* q, std::int64_t ldq, const T* k, const T* v, std::int64_t ldkv, T* out,
                        std::int64_t ldo, std::int64_t nq, std::int64_t nkv, int n_heads, int group, int D,
                        float scale_log2, Vis vis) {
  constexpr int C = attn_generic_max_dim / 32;
  __shared__ float qs[attn_generic_warps][attn_generic_max_dim];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const std::int64_t item = std::int64_t(blockIdx.x) * attn_generic_warps + warp;
  if (item >= nq * n_heads) return;  // warp-uniform; only __syncwarp below
  const std::int64_t qi = item / n_heads;
  const int h = int(item - qi * n_heads), g = h / group;
  const T* qr = q + qi * ldq + std::int64_t(h) * D;
  for (int d = lane; d < D; d += 32) qs[warp][d] = load(qr + d) * scale_log2;
  __syncwarp();
  const float* qw = qs[warp];
  const std::int64_t limit = vis.end(qi) - 1;  // last candidate key
  const T* kb = k + std::int64_t(g) * D;
  const T* vb = v + std::int64_t(g) * D;

  float m = -INFINITY, l = 0.0f, acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;

  for (std::int64_t j0 = 0; j0 <= limit; j0 += 32) {
    const std::int64_t j = j0 + lane;
    float s = -INFINITY;
    if (j <= limit && (!Vis::ragged || vis(qi, j))) {
      const T* kr = kb + j * ldkv;
      s = 0.0f;
      for (int d = 0; d < D; ++d) s = fmaf(qw[d], load(kr + d), s);
    }
    const float tmax = warp_max(s);  // finite unless ragged: key j0 <= limit is visible
    if constexpr (Vis::ragged) {
      if (tmax == -INFINITY) continue;  // warp-uniform: no visible key in these 32
    }
    const float mn = fmaxf(m, tmax);
    const float corr = exp2f(m - mn);  // m = -inf on the first tile: 0
    const float p = exp2f(s - mn);     // masked lanes: exp2(-inf) = 0
    l = l * corr + warp_sum(p);
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] *= corr;
    const int cnt = int(min64(32, limit - j0 + 1));
    for (int jj = 0; jj < cnt; ++jj) {
      const float pj = __shfl_sync(0xffffffffu, p, jj);
      const T* vr = vb + (j0 + jj) * ldkv;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int d = lane + 32 * c;
        if (d < D) acc[c] = fmaf(pj, load(vr + d), acc[c]);
      }
    }
    m = mn;
  }
  float inv = 1.0f / l;
  if constexpr (Vis::ragged) inv = l > 0.0f ? inv : 0.0f;  // no visible key: zeros
  T* orow = out + qi * ldo + std::int64_t(h) * D;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int d = lane + 32 * c;
    if (d < D) store(orow + d, acc[c] * inv);
  }
}

template <class T, class Vis>
void attention_generic_launch(const cuda_backend& be, const T* q, std::int64_t ldq, const T* k, const T* v,
                              std::int64_t ldkv, T* out, std::int64_t ldo, std::int64_t nq, std::int64_t nkv,
                              std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t head_dim, float scale,
                              Vis vis) {
  const std::int64_t blocks = (nq * n_heads + attn_generic_warps - 1) / attn_generic_warps;
  MUNINN_CHECK(blocks <= INT_MAX, "attention: ", nq, " queries x ", n_heads, " heads exceed the grid limit");
  attn_generic_kernel<T, Vis><<<unsigned(blocks), attn_generic_warps * 32, 0, be.stream()>>>(
      q, ldq, k, v, ldkv, out, ldo, nq, nkv, int(n_heads), int(n_heads / n_kv_heads), int(head_dim),
      scale * log2e, vis);
  MUNINN_CUDA_CHECK_LAUNCH("attn_generic_kernel");
}

/// \brief Which attention kernels to use; `automatic` picks decode for short query blocks.
enum class attention_path { automatic, prefill, decode };

/// \brief Query rows up to which the split-KV decode path is used.
inline constexpr std::int64_t attention_decode_max_nq = 16;

template <class T, int D, class Vis>
void attention_launch(const cuda_backend& be, const T* q, std::int64_t ldq, const T* k, const T* v, std::int64_t ldkv,
                      T* out, std::int64_t ldo, std::int64_t nq, std::int64_t nkv, std::int64_t n_heads,
                      std::int64_t n_kv_heads, float scale, attention_path path, Vis vis) {
  const int group = int(n_heads / n_kv_heads);
  const float scale_log2 = scale * log2e;
  if (path == attention_path::automatic)
    path = nq <= attention_decode_max_nq ? attention_path::decode : attention_path::prefill;
  if (path == attention_path::prefill) {
    const std::int64_t qblocks = (nq + attn_prefill_warps - 1) / attn_prefill_warps;
    MUNINN_CHECK(qblocks <= INT_MAX, "attention: ", nq, " queries exceed the grid limit");
    const dim3 grid{unsigned(qblocks), unsigned(n_heads), 1u};
    attn_prefill_kernel<T, D, Vis><<<grid, attn_prefill_warps * 32, 0, be.stream()>>>(q, ldq, k, v, ldkv, out, ldo,
                                                                                     nq, nkv, group, scale_log2, vis);
    MUNINN_CUDA_CHECK_LAUNCH("attn_prefill_kernel");
    return;
  }
  MUNINN_CHECK(nq <= 65535, "attention: the decode path takes at most 65535 queries, got ", nq);
  // Enough warps to fill the device (8 blocks of 4 warps per SM), keys in multiples of 32.
  const std::int64_t rows = nq * n_heads;
  const std::int64_t target_warps = std::int64_t(be.sm_count()) * 8 * attn_decode_warps;
  const std::int64_t want = std::max<std::int64_t>(1, (target_warps + rows - 1) / rows);
  std::int64_t chunk = (nkv + want - 1) / want;
  chunk = std::max<std::int64_t>(64, (chunk + 31) / 32 * 32);
  const std::int64_t nsplit = (nkv + chunk - 1) / chunk;
  MUNINN_CHECK(nsplit <= INT_MAX, "attention: too many key splits");
  float* part = static_cast<float*>(be.workspace(std::size_t(rows * nsplit * (D + 2)) * sizeof(float)));
  const bool kvec = aligned16(k) && ld_aligned16<T>(ldkv);  // D·sizeof(T) is a multiple of 16
  const dim3 grid1{unsigned((nsplit + attn_decode_warps - 1) / attn_decode_warps), unsigned(n_heads), unsigned(nq)};
  attn_decode_partial_kernel<T, D, Vis><<<grid1, attn_decode_warps * 32, 0, be.stream()>>>(
      q, ldq, k, v, ldkv, nq, nkv, group, scale_log2, chunk, int(nsplit), part, kvec, vis);
  MUNINN_CUDA_CHECK_LAUNCH("attn_decode_partial_kernel");
  const dim3 grid2{unsigned(n_heads), unsigned(nq), 1u};
  attn_decode_combine_kernel<T, D, Vis::ragged><<<grid2, D, 0, be.stream()>>>(part, int(nsplit), out, ldo);
  MUNINN_CUDA_CHECK_LAUNCH("attn_decode_combine_kernel");
}

/// \brief The argument checks shared by both attention overloads (the nkv/nq relation is the
/// caller's: it depends on the mask).
inline void attention_check(std::int64_t ldq, std::int64_t ldkv, std::int64_t ldo, std::int64_t nq, std::int64_t nkv,
                            std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t head_dim) {
  MUNINN_CHECK(n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads == 0, "attention: n_heads=", n_heads,
               " is not a multiple of n_kv_heads=", n_kv_heads);
  MUNINN_CHECK(n_heads <= 65535, "attention: n_heads=", n_heads, " exceeds the grid limit 65535");
  MUNINN_CHECK(head_dim > 0 && head_dim <= attn_generic_max_dim, "attention (CUDA): head_dim=", head_dim,
               " outside [1, ", attn_generic_max_dim, "] (64, 96 and 128 have tuned kernels)");
  MUNINN_CHECK(nq >= 0 && nkv >= 0, "attention: negative nq=", nq, " or nkv=", nkv);
  MUNINN_CHECK(ldq >= n_heads * head_dim && ldo >= n_heads * head_dim && ldkv >= n_kv_heads * head_dim,
               "attention: row strides too small (ldq=", ldq, ", ldkv=", ldkv, ", ldo=", ldo, ") for ", n_heads,
               " heads, ", n_kv_heads, " kv heads of dim ", head_dim);
}

/// \brief Launches the kernels of one head dim for the key visibility `vis` (nq >= 1, nkv >= 1).
template <class T, class Vis>
void attention_run(const cuda_backend& be, const T* q, std::int64_t ldq, const T* k, const T* v, std::int64_t ldkv,
                   T* out, std::int64_t ldo, std::int64_t nq, std::int64_t nkv, std::int64_t n_heads,
                   std::int64_t n_kv_heads, std::int64_t head_dim, float scale, attention_path path, Vis vis) {
  switch (head_dim) {
    default:  // any other head dim: one generic kernel whatever `path` says
      attention_generic_launch<T>(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim, scale,
                                  vis);
      break;
    case 64:
      attention_launch<T, 64>(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, scale, path, vis);
      break;
    case 96:
      attention_launch<T, 96>(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, scale, path, vis);
      break;
    case 128:
      attention_launch<T, 128>(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, scale, path, vis);
      break;
  }
}

/// \brief attention() with the kernel path chosen by the caller (tests force each path).
template <class T>
void attention_dispatch(const cuda_backend& be, const T* q, std::int64_t ldq, const T* k, const T* v,
                        std::int64_t ldkv, T* out, std::int64_t ldo, std::int64_t nq, std::int64_t nkv,
                        std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t head_dim, float scale,
                        attention_path path) {
  static_assert(is_storage_v<T>, "attention (CUDA): T must be float or muninn::bf16");
  attention_check(ldq, ldkv, ldo, nq, nkv, n_heads, n_kv_heads, head_dim);
  MUNINN_CHECK(nkv >= nq, "attention: nkv=", nkv, " must be >= nq=", nq);
  if (nq == 0) return;
  attention_run(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim, scale, path,
                attn_keys_prefix{nkv - nq});
}

/// \brief The mask overload of attention() with the kernel path chosen by the caller.
template <class T>
void attention_dispatch_masked(const cuda_backend& be, const T* q, std::int64_t ldq, const T* k, const T* v,
                               std::int64_t ldkv, T* out, std::int64_t ldo, std::int64_t nq, std::int64_t nkv,
                               std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t head_dim, float scale,
                               attn_mask mask, const std::int32_t* q_pos, const std::int32_t* k_pos,
                               attention_path path) {
  static_assert(is_storage_v<T>, "attention (CUDA): T must be float or muninn::bf16");
  attention_check(ldq, ldkv, ldo, nq, nkv, n_heads, n_kv_heads, head_dim);
  MUNINN_CHECK((q_pos == nullptr) == (k_pos == nullptr), "attention: give both q_pos and k_pos, or neither");
  const bool by_position = mask == attn_mask::causal && q_pos != nullptr;
  MUNINN_CHECK(mask != attn_mask::causal || by_position || nkv >= nq, "attention: nkv=", nkv,
               " must be >= nq=", nq, " for a causal mask without positions");
  if (nq == 0) return;
  if (nkv == 0) {  // nothing to attend to: zeros
    MUNINN_CUDA_CHECK(cudaMemset2DAsync(out, std::size_t(ldo) * sizeof(T), 0,
                                        std::size_t(n_heads * head_dim) * sizeof(T), std::size_t(nq), be.stream()));
    return;
  }
  if (mask == attn_mask::full) {
    attention_run(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim, scale, path,
                  attn_keys_all{nkv});
  } else if (by_position) {
    attention_run(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim, scale, path,
                  attn_keys_by_position{q_pos, k_pos, nkv});
  } else {
    attention_run(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim, scale, path,
                  attn_keys_prefix{nkv - nq});
  }
}

}  // namespace gpu
}  // namespace detail

/// \brief Causal attention of queries q against a K/V buffer (cache) on the GPU, softmax in fp32.
///
/// The causal mask is bottom-right aligned: query i attends key j iff j <= (nkv − nq) + i.
/// Grouped-query attention: query head h reads kv head h / (n_heads / n_kv_heads). Head dims
/// 64, 96 and 128 have tuned kernels: up to 16 query rows take the split-KV decode path
/// (partial states in the backend workspace, then a merge kernel); more take the tiled prefill
/// kernel. Other head dims up to 256 take a generic kernel (one warp per query and head).
/// Asynchronous on the backend's stream.
/// \tparam T         float or bf16
/// \param be         the CUDA backend
/// \param q          device queries [nq, ldq]; head h at columns [h·D, (h+1)·D)
/// \param ldq        row stride of q
/// \param k          device keys [nkv, ldkv]; kv head g at columns [g·D, (g+1)·D)
/// \param v          device values, same layout as k
/// \param ldkv       row stride of k and v
/// \param out        device output [nq, ldo]; must not overlap q, k, v
/// \param ldo        row stride of out
/// \param nq         query rows (the last nq positions of the buffer)
/// \param nkv        key/value rows, >= nq
/// \param n_heads    query heads
/// \param n_kv_heads key/value heads, divides n_heads
/// \param head_dim   D in [1, 256]; 64, 96 and 128 are the fast ones
/// \param scale      score scale, usually 1/sqrt(D)
template <class T>
void attention(const cuda_backend& be, const T* q, std::int64_t ldq, const T* k, const T* v, std::int64_t ldkv, T* out,
               std::int64_t ldo, std::int64_t nq, std::int64_t nkv, std::int64_t n_heads, std::int64_t n_kv_heads,
               std::int64_t head_dim, float scale) {
  detail::gpu::attention_dispatch(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim, scale,
                                  detail::gpu::attention_path::automatic);
}

/// \brief Attention with a chosen mask and, for a causal mask, optional device positions.
///
/// Same layouts, grouped-query rule, kernels and fp32 softmax as the causal overload (which
/// equals this one with attn_mask::causal and null positions). The mask (see attn_mask):
/// - `full`: every query sees all nkv keys; positions are ignored; any nq, nkv.
/// - `causal`, null positions: query i sees keys j <= nkv − nq + i; needs nkv >= nq.
/// - `causal` with positions: query i sees key j iff k_pos[j] <= q_pos[i]; any nq, nkv, and the
///   positions may be ragged, unsorted and non-contiguous (mixture-of-recursions). Every key is
///   scored against the positions, so a long cache costs its full length per query.
///
/// A query that sees no key (no keys at all, or none at or before its position) outputs zeros.
/// Asynchronous on the backend's stream.
/// \tparam T         float or bf16
/// \param be         the CUDA backend
/// \param q          device queries [nq, ldq]; head h at columns [h·D, (h+1)·D)
/// \param ldq        row stride of q
/// \param k          device keys [nkv, ldkv]; kv head g at columns [g·D, (g+1)·D)
/// \param v          device values, same layout as k
/// \param ldkv       row stride of k and v
/// \param out        device output [nq, ldo]; must not overlap q, k, v
/// \param ldo        row stride of out
/// \param nq         query rows
/// \param nkv        key/value rows
/// \param n_heads    query heads
/// \param n_kv_heads key/value heads, divides n_heads
/// \param head_dim   D in [1, 256]; 64, 96 and 128 are the fast ones
/// \param scale      score scale, usually 1/sqrt(D)
/// \param mask       attn_mask::causal or attn_mask::full
/// \param q_pos      device nullptr, or the position of each query row [nq]
/// \param k_pos      device nullptr, or the position of each key row [nkv]; null exactly when q_pos is
template <class T>
void attention(const cuda_backend& be, const T* q, std::int64_t ldq, const T* k, const T* v, std::int64_t ldkv, T* out,
               std::int64_t ldo, std::int64_t nq, std::int64_t nkv, std::int64_t n_heads, std::int64_t n_kv_heads,
               std::int64_t head_dim, float scale, attn_mask mask, const std::int32_t* q_pos,
               const std::int32_t* k_pos) {
  detail::gpu::attention_dispatch_masked(be, q, ldq, k, v, ldkv, out, ldo, nq, nkv, n_heads, n_kv_heads, head_dim,
                                         scale, mask, q_pos, k_pos, detail::gpu::attention_path::automatic);
}

}  // namespace muninn
