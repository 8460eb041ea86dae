#pragma once
/// \file
/// \brief CALM's energy head: one evaluation turns a hidden state and uniform noise into a latent
/// sample (no iterative solver), and the counter-based noise it is fed.

#include <cstdint>
#include <vector>

#include "muninn/core/random.hpp"
#include "muninn/families/calm/layers.hpp"
#include "muninn/families/calm/weights.hpp"
#include "muninn/nn/norm.hpp"
#include "muninn/nn/swiglu.hpp"
#include "muninn/ops/ops.hpp"

namespace muninn {

/// \brief Stream kind of the head's noise (see stream_seed). The samplers' choice and Bernoulli
/// streams are kinds 2 and 3 (ops/chunk_choice.hpp, ops/chunk_exact.hpp), BrierLM's head samples kind 4
/// (runtime/calm_brier.hpp).
inline constexpr std::uint64_t calm_noise_stream_kind = 1;

/// \brief Uniform noise in [-0.5, 0.5) for samples j0 … j0+count−1 at chunk position `p`:
/// element k of sample j is `float(uniform01_at(stream_seed(seed, 1, p), j·noise + k) − 0.5)`
/// (subtraction in double, one rounding to fp32). The reference draws `rand − 0.5` from torch's
/// generator; ours is counter-based so any sample can be regenerated alone.
inline std::vector<float> calm_noise(std::uint64_t seed, std::int64_t p, std::int64_t j0, std::int64_t count,
                                     std::int64_t noise) {
  const std::uint64_t s = stream_seed(seed, calm_noise_stream_kind, std::uint64_t(p));
  std::vector<float> u(std::size_t(count * noise));
  for (std::int64_t j = 0; j < count; ++j)
    for (std::int64_t k = 0; k < noise; ++k)
      u[std::size_t(j * noise + k)] = float(uniform01_at(s, std::uint64_t((j0 + j) * noise + k)) - 0.5);
  return u;
}

/// \brief The energy head's generator (the reference's `MLPGenerator.sample`), S samples per
/// hidden row. The HeadPolicy that owns it is `head::energy` (families/calm/energy_policy.hpp).
///
/// c = LN_h(Linear(h)) once per row; e = LN_u(Linear(u)) per sample; each block
/// e += down(silu(g) · v) with [g; v] = L4(silu(L2(silu(L0([LN_in(e); c]))))); z = F2(silu(F0(LN(e)))).
/// L0 over the concatenation is computed as two GEMMs: the c half once per row (shared by all S
/// samples of that row), the e half per sample, summed — the same sum the reference's one GEMM makes.
struct energy_generator {

  /// \brief Samples latents.
  /// \param be      the backend
  /// \param w       the head's weights
  /// \param hidden  backbone output [n, d] (backend)
  /// \param n       hidden rows
  /// \param noise   [n·S, noise] (backend), row i·S + s is sample s of row i
  /// \param S       samples per row
  /// \param z       output [n·S, l] (backend)
  /// \param scratch activations, grown as needed
  template <class Backend, class T>
  static void sample(const Backend& be, const energy_head_weights<Backend, T>& w, const T* hidden, std::int64_t n,
                     const T* noise, std::int64_t S, T* z, calm_scratch<Backend, T>& scratch) {
    const std::int64_t d = w.hidden_embd.out, rows = n * S;
    T* c = scratch.get(be, 10, std::size_t(n * d));
    linear_forward(be, w.hidden_embd, hidden, n, c);
    norm(w.norm_hidden, d)(be, c, c, n);
    T* e = scratch.get(be, 11, std::size_t(rows * d));
    linear_forward(be, w.noise_embd, noise, rows, e);
    norm(w.norm_noise, d)(be, e, e, rows);
    std::int32_t* owner = row_owners(be, n, S, scratch);
    for (const auto& b : w.blocks) block(be, b, e, c, owner, n, S, d, scratch);
    T* t = scratch.get(be, 12, std::size_t(rows * d));
    T* u = scratch.get(be, 13, std::size_t(rows * d));
    norm(w.final_ln, d)(be, e, t, rows);
    linear_forward(be, w.final0, t, rows, u);
    silu(be, u, rows * d);
    linear_forward(be, w.final2, u, rows, z);
  }

 private:
  // The head's LayerNorms: weight and bias, epsilon 1e-6 (the reference's nn.LayerNorm(eps=1e-6)).
  template <class Backend, class T>
  static nn::layer_norm<T> norm(const layernorm_weights<Backend, T>& w, std::int64_t d) {
    return nn::layer_norm<T>{w.w.data(), w.b.data(), d, 1e-6f};
  }

  // owner[i·S + s] = i: which hidden row each sample belongs to (for the gather of the c half).
  template <class Backend, class T>
  static std::int32_t* row_owners(const Backend& be, std::int64_t n, std::int64_t S, calm_scratch<Backend, T>& scratch) {
    std::vector<std::int32_t> host(std::size_t(n * S));
    for (std::int64_t r = 0; r < n * S; ++r) host[std::size_t(r)] = std::int32_t(r / S);
    std::int32_t* owner = scratch.ids(be, 0, host.size());
    be.upload(owner, host.data(), host.size());
    return owner;
  }

  template <class Backend, class T>
  static void block(const Backend& be, const energy_block_weights<Backend, T>& b, T* e, const T* c,
                    const std::int32_t* owner, std::int64_t n, std::int64_t S, std::int64_t d,
                    calm_scratch<Backend, T>& scratch) {
    const std::int64_t rows = n * S;
    // c half of L0 (+ its bias) per row, then spread to that row's samples.
    T* cw = scratch.get(be, 14, std::size_t(n * d));
    gemm_nt(be, n, d, d, 1.0f, c, d, b.l0.w.data() + d, 2 * d, 0.0f, cw, d);
    add_bias_rows(be, cw, d, b.l0.b.data(), n, d);
    T* a = scratch.get(be, 15, std::size_t(rows * d));
    gather_rows(be, cw, d, owner, rows, d, a, d);
    // e half of L0 accumulated on top.
    T* t = scratch.get(be, 12, std::size_t(rows * d));
    norm(b.in_ln, d)(be, e, t, rows);
    gemm_nt(be, rows, d, d, 1.0f, t, d, b.l0.w.data(), 2 * d, 1.0f, a, d);
    silu(be, a, rows * d);
    linear_forward(be, b.l2, a, rows, t);
    silu(be, t, rows * d);
    T* gv = scratch.get(be, 16, std::size_t(rows * 2 * d));
    const nn::swiglu<T> mlp{b.l4.w.data(), b.down.w.data(), d, d, b.l4.b.data(), b.down.b.data()};
    mlp(be, t, rows, e, nn::residual::add, gv, a);  // e += down(silu(gate(t)) · up(t))
  }
};

}  // namespace muninn
