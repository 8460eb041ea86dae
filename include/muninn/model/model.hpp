#pragma once
/// \file
/// \brief `muninn::model<Backend, T, Arch>`: a prelude / recurrent core / coda model wired from policies.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/config.hpp"
#include "muninn/core/error.hpp"
#include "muninn/io/config_json.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/model/arch.hpp"
#include "muninn/model/blocks.hpp"
#include "muninn/model/context.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/ops/random.hpp"

namespace muninn {

/// \brief How the recurrent state starts, chosen per call.
enum class init_state {
  policy_default,  ///< what the Arch's StateInit policy says
  zero,            ///< all zeros (reproducible; what reference comparisons use)
  random,          ///< seeded truncated normal (Huginn's "like-init")
  given,           ///< `run_options::given_state`
};

/// \brief Per-call options of a forward pass.
struct run_options {
  std::int64_t steps = -1;             ///< recurrence steps; -1 means config.mean_recurrence
  init_state init = init_state::policy_default;
  std::uint64_t seed = 0;              ///< seed of the random state (per position, so chunking does not change it)
  const float* given_state = nullptr;  ///< [n_tokens, h] host memory, used with init_state::given
  std::vector<float>* latents = nullptr;  ///< when set, receives the raw final state [n_tokens, h]
};

/// \brief Which positions get logits.
enum class logits_for {
  all,   ///< every fed token: [n, V]
  last,  ///< only the last fed token: [1, V]
};

/// \brief A recurrent-depth language model on a backend.
///
/// \tparam Backend models Backend (`host_backend`, `cuda_backend`): memory and launch.
/// \tparam T       storage and compute type: `float` (host and CUDA) or `bf16` (CUDA).
/// \tparam Arch    an `arch<...>` naming the policies; `huginn_arch` by default.
///
/// Sizes come from config.json at run time; structure from Arch at compile time. The model owns
/// its weights; per-sequence state (KV cache, workspace) lives in an `inference_context`.
template <class Backend, class T = float, class Arch = huginn_arch>
class model {
  static_assert(!std::is_same_v<typename Backend::tag, host_tag> || std::is_same_v<T, float>,
                "muninn::model: host_backend computes in fp32; use model<host_backend, float, Arch>");

 public:
  using backend_type = Backend;  ///< the backend
  using value_type = T;          ///< storage/compute type
  using arch_type = Arch;        ///< the policies
  using block_policy = typename Arch::block_policy;
  using injection_policy = typename Arch::injection_policy;
  using sharing_policy = typename Arch::sharing_policy;
  using kv_policy = typename Arch::kv_cache_policy;
  using context_type = inference_context<Backend, T>;  ///< per-sequence state

  /// \brief Loads `config.json` and the safetensors weights (single file or sharded) from `dir`.
  static model load(const std::string& dir, Backend be = Backend{}) {
    model_config cfg = io::read_model_config(dir);
    io::checkpoint ck = io::checkpoint::open(dir);
    return model(std::move(be), std::move(cfg), ck);
  }

  /// \brief Builds a model from an opened checkpoint and its config.
  model(Backend be, model_config cfg, const io::checkpoint& ck) : be_(std::move(be)), cfg_(std::move(cfg)) {
    check_config_matches_arch();
    w_ = load_huginn_weights<Backend, T, block_policy>(be_, ck, cfg_);
    init_dims();
  }

  /// \brief Builds a model around weights made elsewhere (random weights for benchmarks, tests).
  model(Backend be, model_config cfg, model_weights<Backend, T> w)
      : be_(std::move(be)), cfg_(std::move(cfg)), w_(std::move(w)) {
    check_config_matches_arch();
    init_dims();
  }

  /// \brief The run-time sizes.
  const model_config& config() const { return cfg_; }
  /// \brief The backend the weights live on.
  const Backend& backend() const { return be_; }
  /// \brief The weights (read-only).
  const model_weights<Backend, T>& weights() const { return w_; }
  /// \brief Unique parameters (a duplicate lm_head is not counted).
  std::int64_t parameter_count() const { return w_.parameter_count; }
  /// \brief Bytes of parameter storage on the backend.
  std::size_t weight_bytes() const { return std::size_t(w_.parameter_count) * sizeof(T); }
  /// \brief Number of KV slots a context for `max_steps` recurrences holds.
  std::int64_t kv_slots(std::int64_t max_steps) const {
    return kv_policy::num_slots(cfg_.n_layers_in_prelude, cfg_.n_layers_in_recurrent_block, cfg_.n_layers_in_coda,
                                sharing_policy::recurrent ? max_steps : 0);
  }

  /// \brief Allocates a KV cache and workspace for one sequence. `max_tokens` ≤ block_size.
  context_type make_context(context_limits lim) const {
    if (lim.max_steps < 0) lim.max_steps = cfg_.mean_recurrence;
    MUNINN_CHECK(lim.max_tokens > 0, "context: max_tokens must be positive, got ", lim.max_tokens);
    MUNINN_CHECK(lim.max_tokens <= cfg_.block_size, "context: max_tokens ", lim.max_tokens,
                 " exceeds the model's block_size ", cfg_.block_size, " (", cfg_.source, ")");
    MUNINN_CHECK(lim.max_chunk > 0, "context: max_chunk must be positive, got ", lim.max_chunk);
    if (lim.max_chunk > lim.max_tokens) lim.max_chunk = lim.max_tokens;
    const std::int64_t inj = std::is_same_v<injection_policy, injection::concat_linear> ? dims_.h : 0;
    return context_type(be_, dims_, kv_slots(lim.max_steps), cfg_.vocab_size, std::max<std::int64_t>(inj, 1) * 2, lim);
  }
  /// \brief A context for `max_tokens` tokens and up to `max_steps` recurrences.
  context_type make_context(std::int64_t max_tokens, std::int64_t max_steps = -1) const {
    context_limits lim;
    lim.max_tokens = max_tokens;
    lim.max_steps = max_steps;
    return make_context(lim);
  }

  /// \brief Feeds `ids` after what `ctx` already holds and returns logits as float on the host:
  /// [ids.size(), V] for `logits_for::all`, [1, V] for `logits_for::last`.
  ///
  /// Long inputs are processed in chunks of `max_chunk` tokens; each chunk attends to the cache
  /// with a bottom-right causal mask, so chunked prefill equals a single pass.
  std::vector<float> forward(context_type& ctx, const std::vector<std::int32_t>& ids, const run_options& opt = {},
                             logits_for which = logits_for::all) const {
    const std::int64_t steps = resolve_steps(ctx, opt);
    check_tokens(ctx, ids);
    const std::int64_t total = std::int64_t(ids.size());
    const std::int64_t V = cfg_.vocab_size;
    std::vector<float> out(std::size_t(which == logits_for::all ? total * V : V));
    if (opt.latents) opt.latents->assign(std::size_t(total * dims_.h), 0.0f);
    for (std::int64_t c0 = 0; c0 < total; c0 += ctx.limits_.max_chunk) {
      const std::int64_t n = std::min(ctx.limits_.max_chunk, total - c0);
      const bool last_chunk = c0 + n == total;
      float* dst = nullptr;
      std::int64_t rows = 0;
      if (which == logits_for::all) {
        dst = out.data() + c0 * V;
        rows = n;
      } else if (last_chunk) {
        dst = out.data();
        rows = 1;
      }
      run_chunk(ctx, ids.data() + c0, n, c0, steps, opt, dst, rows);
    }
    return out;
  }

  /// \brief Full-sequence forward on a fresh context: logits [ids.size(), V].
  std::vector<float> forward(const std::vector<std::int32_t>& ids, const run_options& opt = {}) const {
    MUNINN_CHECK(!ids.empty(), "forward: no tokens given");
    context_limits lim;
    lim.max_tokens = std::int64_t(ids.size());
    lim.max_steps = opt.steps < 0 ? cfg_.mean_recurrence : opt.steps;
    MUNINN_CHECK(lim.max_tokens <= cfg_.block_size, "sequence of ", lim.max_tokens, " tokens exceeds block_size ",
                 cfg_.block_size, " (", cfg_.source, ")");
    auto ctx = make_context(lim);
    return forward(ctx, ids, opt, logits_for::all);
  }

 private:
  void check_config_matches_arch() const {
    const bool want_linear = std::is_same_v<injection_policy, injection::concat_linear>;
    MUNINN_CHECK(!sharing_policy::recurrent || (cfg_.injection_type == "linear") == want_linear, cfg_.source,
                 ": config injection_type \"", cfg_.injection_type, "\" does not match the compiled injection policy ",
                 injection_policy::name, " (\"linear\" ↔ injection::concat_linear, \"add\" ↔ injection::add)");
    MUNINN_CHECK(cfg_.block_type == block_policy::name, cfg_.source, ": config block_type \"", cfg_.block_type,
                 "\" does not match the compiled block policy block::", block_policy::name);
    MUNINN_CHECK(sharing_policy::recurrent || cfg_.n_layers_in_recurrent_block == 0, cfg_.source,
                 ": sharing::none needs n_layers_in_recurrent_block = 0, config has ", cfg_.n_layers_in_recurrent_block);
    MUNINN_CHECK(!cfg_.bias, cfg_.source, ": Linear biases (\"bias\": true) are not supported by the Huginn layout");
  }

  void init_dims() {
    dims_.h = cfg_.n_embd;
    dims_.n_heads = cfg_.n_heads;
    dims_.n_kv_heads = cfg_.n_kv_heads > 0 ? cfg_.n_kv_heads : cfg_.n_heads;
    dims_.head_dim = cfg_.head_dim > 0 ? cfg_.head_dim : cfg_.n_embd / cfg_.n_heads;
    dims_.inter = cfg_.intermediate_size;
    dims_.eps = cfg_.norm_eps;
  }

  std::int64_t resolve_steps(const context_type& ctx, const run_options& opt) const {
    const std::int64_t steps = opt.steps < 0 ? cfg_.mean_recurrence : opt.steps;
    if (!sharing_policy::recurrent) return 0;
    MUNINN_CHECK(steps <= ctx.limits_.max_steps, "requested ", steps,
                 " recurrence steps but the context was made for at most ", ctx.limits_.max_steps);
    return steps;
  }

  void check_tokens(const context_type& ctx, const std::vector<std::int32_t>& ids) const {
    const std::int64_t end = ctx.length_ + std::int64_t(ids.size());
    MUNINN_CHECK(end <= ctx.limits_.max_tokens, "sequence of ", end, " tokens exceeds the context capacity of ",
                 ctx.limits_.max_tokens, " tokens");
    MUNINN_CHECK(end <= cfg_.block_size, "sequence of ", end, " tokens exceeds block_size ", cfg_.block_size);
    for (std::size_t i = 0; i < ids.size(); ++i)
      MUNINN_CHECK(ids[i] >= 0 && ids[i] < cfg_.vocab_size, "token id ", ids[i], " at index ", i,
                   " is out of range for vocab_size ", cfg_.vocab_size);
  }

  const T* head_weight() const { return cfg_.tie_embeddings ? w_.wte.data() : w_.lm_head.data(); }

  void init_recurrent_state(context_type& ctx, T* x, std::int64_t n, std::int64_t pos0, std::int64_t offset,
                            const run_options& opt) const {
    init_state kind = opt.init;
    if (kind == init_state::policy_default) {
      using SI = typename Arch::state_init_policy;
      kind = std::is_same_v<SI, state_init::zero>    ? init_state::zero
             : std::is_same_v<SI, state_init::given> ? init_state::given
                                                     : init_state::random;
    }
    const std::int64_t h = dims_.h;
    switch (kind) {
      case init_state::zero:
        be_.template fill_zero<T>(x, std::size_t(n * h));
        break;
      case init_state::random: {
        // std √(2/(5h))·init_scale, then ·√h (reference/huginn.md §2.6); counter = position·h + i.
        const double std_ = std::sqrt(2.0 / (5.0 * double(h))) * double(cfg_.init_scale) * std::sqrt(double(h));
        if (std_ > 0)
          fill_truncated_normal(be_, x, n * h, opt.seed, std::uint64_t(pos0 * h), float(std_));
        else
          be_.template fill_zero<T>(x, std::size_t(n * h));
        break;
      }
      case init_state::given: {
        MUNINN_CHECK(opt.given_state != nullptr, "init_state::given needs run_options::given_state");
        const float* src = opt.given_state + offset * h;
        if constexpr (std::is_same_v<T, float>) {
          be_.upload(x, src, std::size_t(n * h));
        } else {
          std::vector<T> staging(std::size_t(n * h));
          for (std::size_t i = 0; i < staging.size(); ++i) staging[i] = from_float<T>(src[i]);
          be_.upload(x, staging.data(), staging.size());
        }
        break;
      }
      case init_state::policy_default:
        break;
    }
    (void)ctx;
  }

  /// \brief One chunk: embed → prelude → r × (inject → core) → ln_f → coda → ln_f → head.
  void run_chunk(context_type& ctx, const std::int32_t* ids, std::int64_t n, std::int64_t offset, std::int64_t steps,
                 const run_options& opt, float* logits_out, std::int64_t logit_rows) const {
    const std::int64_t h = dims_.h, V = cfg_.vocab_size;
    const std::int64_t P = cfg_.n_layers_in_prelude, C = cfg_.n_layers_in_recurrent_block, D = cfg_.n_layers_in_coda;
    const std::int64_t pos0 = ctx.length_;
    const float* rope = w_.rope.data();
    const auto scratch = ctx.scratch();

    be_.upload(ctx.ids_.data(), ids, std::size_t(n));
    T* e = ctx.e_.data();
    embedding(be_, w_.wte.data(), V, h, ctx.ids_.data(), n, float(std::sqrt(double(h))), e);
    for (std::int64_t i = 0; i < P; ++i)
      layer_forward(block_policy{}, be_, w_.prelude[std::size_t(i)], dims_, e, n, pos0, ctx.slot(kv_policy::prelude_slot(i)),
                    rope, scratch);

    T* x = ctx.x_.data();
    if constexpr (sharing_policy::recurrent) {
      init_recurrent_state(ctx, x, n, pos0, offset, opt);
      T* alt = ctx.inj_.data();        // second state buffer: the adapter GEMM cannot run in place
      T* e_part = alt + n * h;         // e·W_eᵀ is the same at every step: computed once per chunk
      if constexpr (std::is_same_v<injection_policy, injection::concat_linear>)
        gemm_nt(be_, n, h, h, 1.0f, e, h, w_.adapter.data() + h, 2 * h, 0.0f, e_part, h);
      for (std::int64_t s = 0; s < steps; ++s) {
        if constexpr (std::is_same_v<injection_policy, injection::concat_linear>) {
          be_.copy(alt, e_part, std::size_t(n * h));
          gemm_nt(be_, n, h, h, 1.0f, x, h, w_.adapter.data(), 2 * h, 1.0f, alt, h);
          std::swap(x, alt);
        } else {
          add(be_, x, e, x, n * h);
        }
        for (std::int64_t j = 0; j < C; ++j)
          layer_forward(block_policy{}, be_, w_.core[std::size_t(j)], dims_, x, n, pos0,
                        ctx.slot(kv_policy::core_slot(P, C, s, j)), rope, scratch);
      }
    } else {
      be_.copy(x, e, std::size_t(n * h));
    }
    if (opt.latents) download_as_float(x, n * h, opt.latents->data() + offset * h);

    rmsnorm(be_, x, w_.ln_f.data(), x, n, h, dims_.eps);
    const std::int64_t max_steps = sharing_policy::recurrent ? ctx.limits_.max_steps : 0;
    for (std::int64_t c = 0; c < D; ++c)
      layer_forward(block_policy{}, be_, w_.coda[std::size_t(c)], dims_, x, n, pos0,
                    ctx.slot(kv_policy::coda_slot(P, C, max_steps, c)), rope, scratch);
    if (logit_rows > 0) {
      const T* xin = x + (n - logit_rows) * h;
      T* lg = ctx.logits_.data();
      rmsnorm(be_, xin, w_.ln_f.data(), scratch.normed, logit_rows, h, dims_.eps);
      gemm_nt(be_, logit_rows, V, h, 1.0f, scratch.normed, h, head_weight(), h, 0.0f, lg, V);
      download_as_float(lg, logit_rows * V, logits_out);
    }
    ctx.length_ += n;
    ctx.tokens_.insert(ctx.tokens_.end(), ids, ids + n);
  }

  void download_as_float(const T* src, std::int64_t n, float* dst) const {
    if constexpr (std::is_same_v<T, float>) {
      be_.download(dst, src, std::size_t(n));
    } else {
      std::vector<T> staging(static_cast<std::size_t>(n));
      be_.download(staging.data(), src, std::size_t(n));
      for (std::size_t i = 0; i < staging.size(); ++i) dst[i] = to_float(staging[i]);
    }
    be_.synchronize();
  }

  Backend be_;
  model_config cfg_;
  model_weights<Backend, T> w_;
  layer_dims dims_;
};

}  // namespace muninn
