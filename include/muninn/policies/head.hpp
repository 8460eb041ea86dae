#pragma once
/// \file
/// \brief HeadPolicy (the "head" slot): final rows → an emission.
///
/// A head turns each final row into an emission: one token from logits (`head::softmax`), or K
/// tokens from a latent (CALM's `head::energy`, families/calm/energy_head.hpp, which owns the
/// generator and the autoencoder's decoder). The pass computes the head's output rows; drawing
/// the tokens from them is the head's sampler, which generation calls.
///
/// Concept HeadPolicy: `slot` = slot::head, `name`, and `template <class Backend, class T> static
/// void logits(const head_args<Backend, T>&)`: the output rows (logits, or what the head's sampler
/// reads). Optional:
/// - `static std::int64_t output_width(const Config&)`: the width of each output row (the
///   vocabulary size when absent);
/// - `static std::int64_t tokens_per_row(const Config&)`: tokens one emission holds (1 when absent);
/// - `template <class Model> static auto make_sampler(const Model&)`: the head's sampler, an object
///   with `void check(const chunk_sampling_options&)` (throws on settings it cannot follow) and
///   `std::vector<std::int32_t> next(const float* row, std::int64_t position, std::int64_t step,
///   const chunk_sampling_options&, std::int64_t& draws)`: one emission from the output row of
///   `position`, the `step`-th of a generation, drawn on the backend; `draws` receives the head
///   samples it took. Without it an emission is one token drawn from the logits by
///   runtime/sampling.hpp;
/// - `static constexpr bool reads_output_matrix`: false for a head that never multiplies by the
///   output matrix (its rows are the normalised hidden states), so that model::store_weights_as
///   leaves that matrix alone; true when absent.

#include <cstdint>
#include <type_traits>
#include <utility>

#include <vector>

#include "muninn/core/config.hpp"
#include "muninn/backend/host.hpp"
#include "muninn/ops/chunk_choice.hpp"
#include "muninn/ops/gemm_weight.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/ops/weight.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {

/// \brief Rows a head turns into logits.
template <class Backend, class T>
struct head_args {
  const Backend& be;   ///< the backend
  T* x;                ///< rows [rows, h], normalised in place
  std::int64_t rows;   ///< rows
  std::int64_t h;      ///< hidden size
  std::int64_t vocab;  ///< V: the width of an output row (head_output_width)
  const T* norm;       ///< final norm weight [h]
  float eps;           ///< its epsilon
  const T* weight;     ///< output matrix [V, h] (the embedding when tied)
  T* logits;           ///< [rows, V]
  /// \brief Host only: the output matrix in a bf16 or q8 format, which the head's GEMM reads
  /// instead of `weight` (null: read `weight`; an untied head's fp32 `weight` is then null).
  const host_weight* converted;
};

/// \brief logits = x · Wᵀ for a head's rows: the converted output matrix when it has one.
template <class Backend, class T>
void output_gemm(const head_args<Backend, T>& a) {
  if constexpr (std::is_same_v<typename Backend::tag, host_tag>) {
    if (a.converted) {
      gemm_nt(a.be, a.rows, a.vocab, a.h, 1.0f, a.x, a.h, a.converted->view(), 0.0f, a.logits, a.vocab);
      return;
    }
  }
  gemm_nt(a.be, a.rows, a.vocab, a.h, 1.0f, a.x, a.h, a.weight, a.h, 0.0f, a.logits, a.vocab);
}

namespace detail {
template <class P, class Config>
using head_output_width_member = decltype(P::output_width(std::declval<const Config&>()));
template <class Config>
struct head_output_width_bound {
  template <class P>
  using op = head_output_width_member<P, Config>;
};
template <class P, class Config>
using head_tokens_member = decltype(P::tokens_per_row(std::declval<const Config&>()));
template <class Config>
struct head_tokens_bound {
  template <class P>
  using op = head_tokens_member<P, Config>;
};
template <class P, class Model>
using head_sampler_member = decltype(P::make_sampler(std::declval<const Model&>()));
template <class Model>
struct head_sampler_bound {
  template <class P>
  using op = head_sampler_member<P, Model>;
};
/// \brief Whether Head draws its emissions with a sampler of its own (`make_sampler(model)`).
template <class Head, class Model>
inline constexpr bool has_head_sampler = detected_v<Head, head_sampler_bound<Model>::template op>;
}  // namespace detail

/// \brief Width of one output row of Head for a config: `Head::output_width(cfg)` when the policy
/// declares it, else the vocabulary size.
template <class Head, class Config>
std::int64_t head_output_width(const Config& cfg) {
  if constexpr (detail::detected_v<Head, detail::head_output_width_bound<Config>::template op>)
    return Head::output_width(cfg);
  else
    return cfg.vocab_size;
}

/// \brief Tokens of one emission of Head for a config: `Head::tokens_per_row(cfg)` when the policy
/// declares it, else 1.
template <class Head, class Config>
std::int64_t head_tokens_per_row(const Config& cfg) {
  if constexpr (detail::detected_v<Head, detail::head_tokens_bound<Config>::template op>)
    return Head::tokens_per_row(cfg);
  else
    return 1;
}

/// \brief How a head that emits K-token chunks draws them below temperature 1.
enum class chunk_sampler {
  approximate,  ///< the batch approximation: N head samples, chunks seen at least m times weighted by C(count, m)
  exact,        ///< the exact likelihood-free sampler (Algorithm 1): P^{1/T} for any T in (0, 1]
};

/// \brief Settings of a chunk-emitting head's sampler (CALM's energy head); a one-token head
/// ignores them.
struct chunk_sampling_options {
  double temperature = 0.5;  ///< T in (0, 1]; the CALM reference's default is 1/2
  chunk_sampler sampler = chunk_sampler::approximate;  ///< used when T < 1
  std::int64_t num_samples = 200;  ///< N, head samples per step of the batch approximation
  std::int64_t max_draws = std::int64_t(1) << 20;  ///< bound of the exact sampler's head samples per step
  std::int64_t draw_batch = 64;    ///< head samples the exact sampler asks for at once (no effect on results)
  std::uint64_t seed = 0;          ///< the run's seed: every random number is a counter-based draw of it
  /// How the batch approximation lists its candidates before the choice: by key (the default: a
  /// choice reproducible from (seed, position), identical on host and device) or by first
  /// appearance among the samples (the reference's order: with its uniforms, its picks).
  chunk_order order = chunk_order::key;
  /// Given head noise instead of the counter stream, e.g. a reference run's: [steps, S, noise_size]
  /// row-major, step s feeding the s-th generated chunk, S = 1 at T = 1 and num_samples below it
  /// (batch approximation only). Empty: the counter stream. A generation needing more steps than
  /// given is an error.
  std::vector<float> noise;
  /// Given choice uniforms in [0, 1) instead of the counter stream, one per step below T = 1
  /// (batch approximation only), e.g. the reference's `random.random()` draws. Empty: the counter stream.
  std::vector<double> uniforms;
};

namespace detail {
template <class H>
using reads_output_matrix_t = decltype(H::reads_output_matrix);
}  // namespace detail

/// \brief Whether head policy `Head` computes its rows with the output matrix [V, h] (see the
/// concept's `reads_output_matrix`).
template <class Head>
constexpr bool head_reads_output_matrix() {
  if constexpr (detail::detected_v<Head, detail::reads_output_matrix_t>)
    return Head::reads_output_matrix;
  else
    return true;
}

namespace head {
/// \brief `logits = RMSNorm(x) · Wᵀ`, W the embedding when tied.
struct softmax {
  using slot = muninn::slot::head;                ///< fills the Head slot
  static constexpr const char* name = "softmax";  ///< spelling used in messages
  /// \brief Final norm, then one GEMM against the output matrix.
  template <class Backend, class T>
  static void logits(const head_args<Backend, T>& a) {
    rmsnorm(a.be, a.x, a.norm, a.x, a.rows, a.h, a.eps);
    output_gemm(a);
  }
};

/// \brief The final RMSNorm and nothing else: each output row is the normalised hidden state
/// [h]. A backbone whose output is not a token distribution (CALM feeds its energy head with it)
/// uses this head.
struct final_norm {
  using slot = muninn::slot::head;                   ///< fills the Head slot
  static constexpr const char* name = "final_norm";  ///< spelling used in messages
  static constexpr bool reads_output_matrix = false;  ///< rows are hidden states, no GEMM
  /// \brief Output rows are hidden states: width h.
  static std::int64_t output_width(const model_config& cfg) { return cfg.n_embd; }
  /// \brief logits = RMSNorm(x) (the weight matrix is not read).
  template <class Backend, class T>
  static void logits(const head_args<Backend, T>& a) {
    rmsnorm(a.be, a.x, a.norm, a.logits, a.rows, a.h, a.eps);
  }
};
}  // namespace head

}  // namespace muninn
