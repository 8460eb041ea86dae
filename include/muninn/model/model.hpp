#pragma once
/// \file
/// \brief `muninn::model<Backend, T, Arch>`: a prelude / recurrent core / coda model wired from policies.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/config.hpp"
#include "muninn/core/error.hpp"
#include "muninn/io/config_json.hpp"
#include "muninn/io/huginn_names.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/model/arch.hpp"
#include "muninn/model/blocks.hpp"
#include "muninn/model/context.hpp"
#include "muninn/model/halting.hpp"
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

/// \brief Continuous chain-of-thought (reference/huginn.md §6.1): start a token from the previous
/// token's final state instead of a fresh one.
enum class warm_start {
  none,        ///< every token starts from `init`
  raw,         ///< the previous token's final raw state (`generate_with_adaptive_compute`)
  normalized,  ///< the previous token's final state after ln_f (`generate_minimal`'s `latent_states`)
};

/// \brief Called after every recurrence step with a token's position in its sequence, the step
/// (0-based) and its raw state [h] (host memory).
using step_hook = std::function<void(std::int64_t token, std::int64_t step, const float* state)>;

/// \brief Per-call options of a forward pass.
struct run_options {
  std::int64_t steps = -1;             ///< recurrence steps; -1 means config.mean_recurrence
  init_state init = init_state::policy_default;  ///< initial state of each token
  std::uint64_t seed = 0;              ///< seed of the random state (drawn per position: chunking does not change it)
  const float* given_state = nullptr;  ///< [n_tokens, h] host memory, used with init_state::given
  warm_start warm = warm_start::none;  ///< start each token from the previous token's final state
  halting_options halt;                ///< per-token early exit (needs an adaptive HaltingPolicy)
  std::vector<float>* latents = nullptr;         ///< receives the raw final state [n_tokens, h] when set
  std::vector<std::int32_t>* steps_used = nullptr;  ///< receives the steps each token ran when set
  step_hook on_step;                   ///< latent trajectory hook (downloads states each step: slow, for analysis)
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
/// its weights and is immutable after construction; per-sequence state (KV cache) lives in an
/// `inference_context`, activations in a `workspace`.
template <class Backend, class T = float, class Arch = huginn_arch>
class model {
  static_assert(!std::is_same_v<typename Backend::tag, host_tag> || std::is_same_v<T, float>,
                "muninn::model: host_backend computes in fp32; use model<host_backend, float, Arch>");

 public:
  using backend_type = Backend;  ///< the backend
  using value_type = T;          ///< storage/compute type
  using arch_type = Arch;        ///< the policies
  using block_policy = typename Arch::block_policy;          ///< BlockPolicy
  using injection_policy = typename Arch::injection_policy;  ///< InjectionPolicy
  using sharing_policy = typename Arch::sharing_policy;      ///< SharingPolicy
  using kv_policy = typename Arch::kv_cache_policy;          ///< KvCachePolicy
  using halting_policy = typename Arch::halting_policy;      ///< HaltingPolicy
  using context_type = inference_context<Backend, T>;        ///< per-sequence KV cache
  using workspace_type = workspace<Backend, T>;              ///< activations for a stack of rows

  /// \brief Loads `config.json` and the safetensors weights (single file or sharded) from `dir`.
  static model load(const std::string& dir, Backend be = Backend{}) {
    model_config cfg = io::read_model_config(dir);
    io::checkpoint ck = io::open_huginn_checkpoint(dir, cfg);
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
  /// \brief Layer sizes.
  const layer_dims& dims() const { return dims_; }
  /// \brief Number of KV slots per token for `max_steps` recurrences and a budget (0: none).
  std::int64_t kv_slots(std::int64_t max_steps, std::int64_t budget = 0) const {
    return kv_policy::num_slots(cfg_.n_layers_in_prelude, cfg_.n_layers_in_recurrent_block, cfg_.n_layers_in_coda,
                                sharing_policy::recurrent ? max_steps : 0, budget);
  }

  /// \brief Allocates a KV cache (and a default workspace) for one sequence.
  context_type make_context(context_limits lim) const {
    if (lim.max_steps < 0) lim.max_steps = cfg_.mean_recurrence;
    MUNINN_CHECK(lim.max_tokens > 0, "context: max_tokens must be positive, got ", lim.max_tokens);
    MUNINN_CHECK(lim.max_tokens <= cfg_.block_size, "context: max_tokens ", lim.max_tokens,
                 " exceeds the model's block_size ", cfg_.block_size, " (", cfg_.source, ")");
    MUNINN_CHECK(lim.max_chunk > 0, "context: max_chunk must be positive, got ", lim.max_chunk);
    MUNINN_CHECK(lim.kv_budget >= 0, "context: kv_budget must be >= 0, got ", lim.kv_budget);
    lim.max_chunk = std::min(lim.max_chunk, lim.max_tokens);
    return context_type(be_, dims_, kv_slots(lim.max_steps, lim.kv_budget), cfg_.vocab_size, lim);
  }
  /// \brief A context for `max_tokens` tokens and up to `max_steps` recurrences (-1: mean_recurrence).
  context_type make_context(std::int64_t max_tokens, std::int64_t max_steps = -1) const {
    context_limits lim;
    lim.max_tokens = max_tokens;
    lim.max_steps = max_steps;
    return make_context(lim);
  }
  /// \brief Activation memory for batched calls stacking up to `rows` tokens.
  workspace_type make_workspace(std::int64_t rows) const {
    MUNINN_CHECK(rows > 0, "workspace: rows must be positive, got ", rows);
    return workspace_type(be_, dims_, cfg_.vocab_size, rows);
  }

  /// \brief Feeds `ids` after what `ctx` already holds; returns logits as float on the host:
  /// [ids.size(), V] for `logits_for::all`, [1, V] for `logits_for::last`.
  ///
  /// With fixed depth, long inputs are processed in chunks of `max_chunk` tokens; each attends to
  /// the cache with a bottom-right causal mask, so chunked prefill equals a single pass. With an
  /// exit criterion, tokens run one at a time so that each exits at its own step.
  std::vector<float> forward(context_type& ctx, const std::vector<std::int32_t>& ids, const run_options& opt = {},
                             logits_for which = logits_for::all) const {
    MUNINN_CHECK(!ids.empty(), "forward: no tokens given");
    check_tokens(ctx, ids);
    const std::int64_t total = std::int64_t(ids.size()), V = cfg_.vocab_size;
    std::vector<float> out(std::size_t(which == logits_for::all ? total * V : V));
    if (opt.latents) opt.latents->assign(std::size_t(total * dims_.h), 0.0f);
    if (opt.steps_used) opt.steps_used->assign(std::size_t(total), 0);
    const std::int64_t chunk = adaptive(opt) ? 1 : ctx.limits_.max_chunk;
    for (std::int64_t c0 = 0; c0 < total; c0 += chunk) {
      const std::int64_t n = std::min(chunk, total - c0);
      segment s;
      s.ctx = &ctx;
      s.ids = ids.data() + c0;
      s.n = n;
      s.offset = c0;
      if (which == logits_for::all) {
        s.out = out.data() + c0 * V;
        s.out_rows = n;
      } else if (c0 + n == total) {
        s.out = out.data();
        s.out_rows = 1;
      }
      std::vector<segment> segs{s};
      run(ctx.ws_, segs, opt);
    }
    return out;
  }

  /// \brief Full-sequence forward on a fresh context: logits [ids.size(), V].
  std::vector<float> forward(const std::vector<std::int32_t>& ids, const run_options& opt = {}) const {
    MUNINN_CHECK(!ids.empty(), "forward: no tokens given");
    context_limits lim;
    lim.max_tokens = std::int64_t(ids.size());
    lim.max_steps = std::max(resolve_steps(opt), opt.halt.max_steps);
    MUNINN_CHECK(lim.max_tokens <= cfg_.block_size, "sequence of ", lim.max_tokens, " tokens exceeds block_size ",
                 cfg_.block_size, " (", cfg_.source, ")");
    auto ctx = make_context(lim);
    return forward(ctx, ids, opt, logits_for::all);
  }

  /// \brief Feeds one list of tokens to each of several sequences at once; returns each row's logits
  /// ([n_r, V] or [1, V]). Rows may have different lengths and positions: the GEMMs run on all rows
  /// stacked (each weight is read once per call), attention runs per row on its own cache, so each
  /// row gets exactly what it would get alone. `latents` and `given_state` are not used here.
  std::vector<std::vector<float>> forward_batch(workspace_type& ws, const std::vector<context_type*>& ctxs,
                                                const std::vector<std::vector<std::int32_t>>& ids,
                                                const run_options& opt = {}, logits_for which = logits_for::last) const {
    MUNINN_CHECK(ctxs.size() == ids.size(), "forward_batch: ", ctxs.size(), " contexts but ", ids.size(), " rows");
    MUNINN_CHECK(opt.latents == nullptr && opt.given_state == nullptr,
                 "forward_batch: latents and given_state are single-sequence options");
    const std::int64_t V = cfg_.vocab_size;
    std::vector<std::vector<float>> out(ids.size());
    std::int64_t longest = 0;
    for (std::size_t r = 0; r < ids.size(); ++r) {
      for (std::size_t q = 0; q < r; ++q)
        MUNINN_CHECK(ctxs[q] != ctxs[r], "forward_batch: rows ", q, " and ", r, " share a context");
      check_tokens(*ctxs[r], ids[r]);
      const std::int64_t n = std::int64_t(ids[r].size());
      out[r].assign(std::size_t(which == logits_for::all ? n * V : (n ? V : 0)), 0.0f);
      longest = std::max(longest, n);
    }
    // Fixed depth: every row's tokens in one stack. Adaptive: token t of every row, then t + 1, ...
    const std::int64_t chunk = adaptive(opt) ? 1 : longest;
    for (std::int64_t c0 = 0; c0 < longest; c0 += chunk) {
      std::vector<segment> segs;
      for (std::size_t r = 0; r < ids.size(); ++r) {
        const std::int64_t n_r = std::int64_t(ids[r].size());
        if (c0 >= n_r) continue;
        segment s;
        s.ctx = ctxs[r];
        s.ids = ids[r].data() + c0;
        s.n = std::min(chunk, n_r - c0);
        s.offset = c0;
        if (which == logits_for::all) {
          s.out = out[r].data() + c0 * V;
          s.out_rows = s.n;
        } else if (c0 + s.n == n_r) {
          s.out = out[r].data();
          s.out_rows = 1;
        }
        segs.push_back(s);
      }
      run(ws, segs, opt);
    }
    return out;
  }

 private:
  /// \brief A run of tokens of one sequence inside a stacked call.
  struct segment {
    context_type* ctx = nullptr;
    const std::int32_t* ids = nullptr;
    std::int64_t n = 0;
    std::int64_t offset = 0;  ///< index of ids[0] in the caller's list (given_state, latents, steps_used rows)
    float* out = nullptr;     ///< host destination of the last `out_rows` logit rows
    std::int64_t out_rows = 0;
    std::int64_t pos0 = 0, row0 = 0, steps_done = 0;
    std::optional<halt_tracker> tracker;
  };

  void check_config_matches_arch() const {
    const bool want_linear = std::is_same_v<injection_policy, injection::concat_linear>;
    MUNINN_CHECK(!sharing_policy::recurrent || (cfg_.injection_type == "linear") == want_linear, cfg_.source,
                 ": config injection_type \"", cfg_.injection_type, "\" does not match the compiled injection policy ",
                 injection_policy::name, " (\"linear\" <-> injection::concat_linear, \"add\" <-> injection::add)");
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

  halt_criterion criterion(const run_options& opt) const {
    const halt_criterion c =
        opt.halt.criterion == halt_criterion::policy_default ? halting_policy::default_criterion : opt.halt.criterion;
    MUNINN_CHECK(c == halt_criterion::none || (halting_policy::early_exit && sharing_policy::recurrent),
                 "this model was compiled with halting::", halting_policy::name,
                 ", which has no early exit; use halting::adaptive (e.g. huginn_adaptive_arch)");
    return c;
  }
  bool adaptive(const run_options& opt) const { return criterion(opt) != halt_criterion::none; }

  std::int64_t resolve_steps(const run_options& opt) const {
    return opt.steps < 0 ? cfg_.mean_recurrence : opt.steps;
  }

  void check_tokens(const context_type& ctx, const std::vector<std::int32_t>& ids) const {
    const std::int64_t end = ctx.length_ + std::int64_t(ids.size());
    MUNINN_CHECK(end <= cfg_.block_size, "sequence of ", end, " tokens exceeds block_size ", cfg_.block_size);
    MUNINN_CHECK(end <= ctx.limits_.max_tokens, "sequence of ", end, " tokens exceeds the context capacity of ",
                 ctx.limits_.max_tokens, " tokens");
    for (std::size_t i = 0; i < ids.size(); ++i)
      MUNINN_CHECK(ids[i] >= 0 && ids[i] < cfg_.vocab_size, "token id ", ids[i], " at index ", i,
                   " is out of range for vocab_size ", cfg_.vocab_size);
  }

  const T* head_weight() const { return cfg_.tie_embeddings ? w_.wte.data() : w_.lm_head.data(); }

  /// \brief The state before the first step, rows [n, h] of a segment at x.
  void init_recurrent_state(segment& sg, T* x, const run_options& opt) const {
    const std::int64_t h = dims_.h;
    std::int64_t first = 0;
    context_type& ctx = *sg.ctx;
    if (opt.warm != warm_start::none && ctx.has_last_state_) {
      // Continuous CoT: the new token continues the previous token's thought.
      if (opt.warm == warm_start::raw)
        be_.copy(x, ctx.last_state_.data(), std::size_t(h));
      else
        rmsnorm(be_, ctx.last_state_.data(), w_.ln_f.data(), x, 1, h, dims_.eps);
      first = 1;
    }
    if (first == sg.n) return;
    T* xr = x + first * h;
    const std::int64_t n = sg.n - first;
    init_state kind = opt.init;
    if (kind == init_state::policy_default) {
      using SI = typename Arch::state_init_policy;
      kind = std::is_same_v<SI, state_init::zero>    ? init_state::zero
             : std::is_same_v<SI, state_init::given> ? init_state::given
                                                     : init_state::random;
    }
    switch (kind) {
      case init_state::random: {
        // std √(2/(5h))·init_scale, times √h (reference/huginn.md §2.6); counter = position·h + i.
        const double base = cfg_.init_std > 0 ? double(cfg_.init_std) : std::sqrt(2.0 / (5.0 * double(h)));
        const double sd = base * double(cfg_.init_scale) * std::sqrt(double(h));
        if (sd > 0) {
          fill_truncated_normal(be_, xr, n * h, opt.seed, std::uint64_t((sg.pos0 + first) * h), float(sd));
          break;
        }
        [[fallthrough]];
      }
      case init_state::zero:
      case init_state::policy_default:
        be_.template fill_zero<T>(xr, std::size_t(n * h));
        break;
      case init_state::given: {
        MUNINN_CHECK(opt.given_state != nullptr, "init_state::given needs run_options::given_state");
        upload_from_float(xr, opt.given_state + (sg.offset + first) * h, n * h);
        break;
      }
    }
  }

  void upload_from_float(T* dst, const float* src, std::int64_t n) const {
    if constexpr (std::is_same_v<T, float>) {
      be_.upload(dst, src, std::size_t(n));
    } else {
      std::vector<T> staging(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < staging.size(); ++i) staging[i] = from_float<T>(src[i]);
      be_.upload(dst, staging.data(), staging.size());
    }
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

  static std::vector<segment_rows<T>> stack_rows(std::vector<segment*>& act) {
    std::vector<segment_rows<T>> rows(act.size());
    std::int64_t r = 0;
    for (std::size_t i = 0; i < act.size(); ++i) {
      act[i]->row0 = r;
      rows[i].row0 = r;
      rows[i].n = act[i]->n;
      rows[i].pos0 = act[i]->pos0;
      r += act[i]->n;
    }
    return rows;
  }

  std::int64_t core_steps_owned(const context_type& ctx) const {
    return kv_policy::core_steps(ctx.limits_.max_steps, ctx.limits_.kv_budget);
  }

  /// \brief Runs one layer group over the active stack, slot chosen per segment by `slot_of(ctx)`.
  template <class SlotOf, class Reader = read_own_slot>
  void run_layer(const layer_weights<Backend, T>& w, T* x, std::vector<segment*>& act,
                 std::vector<segment_rows<T>>& rows, workspace_type& ws, SlotOf&& slot_of, Reader&& reader = {}) const {
    std::int64_t n = 0;
    for (std::size_t i = 0; i < act.size(); ++i) {
      rows[i].kv = act[i]->ctx->slot(slot_of(*act[i]->ctx));
      n += act[i]->n;
    }
    layer_forward(block_policy{}, be_, w, dims_, x, n, rows.data(), std::int64_t(rows.size()), w_.rope.data(),
                  ws.scratch(), reader);
  }

  /// \brief Reader for core step s under kv_fallback::none: tokens that never ran step s are left out.
  auto core_reader(std::int64_t s, std::vector<segment*>& act) const {
    return [this, s, &act](std::int64_t i, const segment_rows<T>& g) -> kv_read<T> {
      context_type& ctx = *act[std::size_t(i)]->ctx;
      const std::int64_t need = ctx.limits_.kv_budget > 0 ? s % ctx.limits_.kv_budget : s;
      bool gaps = false;
      for (std::int64_t p = 0; p < g.pos0 && !gaps; ++p) gaps = ctx.steps_used_[std::size_t(p)] <= need;
      if (ctx.limits_.fallback != kv_fallback::none || !gaps) return kv_read<T>{g.kv.k, g.kv.v, g.pos0 + g.n};
      const std::int64_t kvd = dims_.kv_dim();
      std::int64_t m = 0;
      for (std::int64_t p = 0; p < g.pos0 + g.n; ++p) {
        if (p < g.pos0 && ctx.steps_used_[std::size_t(p)] <= need) continue;
        be_.copy(ctx.k_gather_.data() + m * kvd, g.kv.k + p * kvd, std::size_t(kvd));
        be_.copy(ctx.v_gather_.data() + m * kvd, g.kv.v + p * kvd, std::size_t(kvd));
        ++m;
      }
      return kv_read<T>{ctx.k_gather_.data(), ctx.v_gather_.data(), m};
    };
  }

  /// \brief ln_f → coda → ln_f → head for the active stack x (left intact); logits of each segment's
  /// last `rows_of(seg)` rows go to `dst(seg)` (host float, [rows, V]).
  template <class RowsOf, class DstOf>
  void run_head(workspace_type& ws, const T* x, std::vector<segment*>& act, RowsOf&& rows_of, DstOf&& dst_of) const {
    const std::int64_t h = dims_.h, V = cfg_.vocab_size;
    const std::int64_t P = cfg_.n_layers_in_prelude, C = cfg_.n_layers_in_recurrent_block;
    auto rows = stack_rows(act);
    std::int64_t n = 0;
    for (auto* s : act) n += s->n;
    T* y = ws.head_.data();
    be_.copy(y, x, std::size_t(n * h));
    rmsnorm(be_, y, w_.ln_f.data(), y, n, h, dims_.eps);
    for (std::int64_t c = 0; c < cfg_.n_layers_in_coda; ++c)
      run_layer(w_.coda[std::size_t(c)], y, act, rows, ws, [&](const context_type& ctx) {
        const std::int64_t ms = sharing_policy::recurrent ? ctx.limits_.max_steps : 0;
        return kv_policy::coda_slot(P, C, ms, c, ctx.limits_.kv_budget);
      });
    // Gather the rows that need logits, then one GEMM against the (tied) head.
    T* g = ws.normed_.data();
    std::int64_t m = 0;
    for (auto* s : act) {
      const std::int64_t r = rows_of(*s);
      if (r <= 0) continue;
      rmsnorm(be_, y + (s->row0 + s->n - r) * h, w_.ln_f.data(), g + m * h, r, h, dims_.eps);
      m += r;
    }
    if (m == 0) return;
    T* lg = ws.logits_.data();
    gemm_nt(be_, m, V, h, 1.0f, g, h, head_weight(), h, 0.0f, lg, V);
    std::int64_t off = 0;
    for (auto* s : act) {
      const std::int64_t r = rows_of(*s);
      if (r <= 0) continue;
      download_as_float(lg + off * V, r * V, dst_of(*s));
      off += r;
    }
  }

  /// \brief A segment is done: record its final state and steps; fill deeper KV slots it never wrote.
  void finish_segment(segment& sg, const T* x, const run_options& opt) const {
    const std::int64_t h = dims_.h;
    context_type& ctx = *sg.ctx;
    const T* xs = x + sg.row0 * h;
    if (opt.latents) download_as_float(xs, sg.n * h, opt.latents->data() + sg.offset * h);
    be_.copy(ctx.last_state_.data(), xs + (sg.n - 1) * h, std::size_t(h));
    ctx.has_last_state_ = true;
    // Latest-available-depth fallback: a token that ran e steps exposes its step e-1 keys/values
    // at every deeper step it skipped, so later tokens attend to its deepest thought.
    const std::int64_t e = sg.steps_done, owned = core_steps_owned(ctx);
    if (ctx.limits_.fallback == kv_fallback::latest && e > 0 && e < owned) {
      const std::int64_t P = cfg_.n_layers_in_prelude, C = cfg_.n_layers_in_recurrent_block, kvd = dims_.kv_dim();
      const std::int64_t b = ctx.limits_.kv_budget;
      for (std::int64_t j = 0; j < C; ++j) {
        const kv_slot<T> src = ctx.slot(kv_policy::core_slot(P, C, e - 1, j, b));
        for (std::int64_t t = e; t < owned; ++t) {
          const kv_slot<T> dst = ctx.slot(kv_policy::core_slot(P, C, t, j, b));
          be_.copy(dst.k + sg.pos0 * kvd, src.k + sg.pos0 * kvd, std::size_t(sg.n * kvd));
          be_.copy(dst.v + sg.pos0 * kvd, src.v + sg.pos0 * kvd, std::size_t(sg.n * kvd));
        }
      }
    }
  }

  /// \brief Moves the rows of the segments in `keep` (in order) to the front of each buffer.
  void compact(workspace_type& ws, const std::vector<segment*>& keep, std::initializer_list<T*> bufs) const {
    const std::int64_t h = dims_.h;
    T* tmp = ws.head_.data();
    for (T* b : bufs) {
      std::int64_t r = 0;
      for (auto* s : keep) {
        be_.copy(tmp + r * h, b + s->row0 * h, std::size_t(s->n * h));
        r += s->n;
      }
      be_.copy(b, tmp, std::size_t(r * h));
    }
  }

  /// \brief The engine: embed → prelude → r × (inject → core) with per-segment exit → head.
  void run(workspace_type& ws, std::vector<segment>& segs, const run_options& opt) const {
    const std::int64_t h = dims_.h, V = cfg_.vocab_size;
    const std::int64_t P = cfg_.n_layers_in_prelude, C = cfg_.n_layers_in_recurrent_block;
    const halt_criterion crit = criterion(opt);
    const bool adapt = crit != halt_criterion::none;
    const std::int64_t steps = sharing_policy::recurrent ? resolve_steps(opt) : 0;
    const std::int64_t max_steps = adapt && opt.halt.max_steps >= 0 ? opt.halt.max_steps : steps;
    MUNINN_CHECK(steps >= 0, "recurrence steps must be >= 0, got ", steps);
    MUNINN_CHECK(opt.halt.check_every >= 1, "check_every must be >= 1, got ", opt.halt.check_every);

    std::vector<segment*> act;
    std::int64_t N = 0;
    for (auto& s : segs) {
      MUNINN_CHECK(!sharing_policy::recurrent || max_steps <= s.ctx->limits_.max_steps, "requested ", max_steps,
                   " recurrence steps but the context was made for at most ", s.ctx->limits_.max_steps);
      s.pos0 = s.ctx->length_;
      act.push_back(&s);
      N += s.n;
    }
    MUNINN_CHECK(N <= ws.rows_, "a call of ", N, " tokens exceeds the workspace of ", ws.rows_, " rows");
    auto rows = stack_rows(act);
    for (auto* s : act) std::copy(s->ids, s->ids + s->n, ws.host_ids_.begin() + s->row0);

    be_.upload(ws.ids_.data(), ws.host_ids_.data(), std::size_t(N));
    T* e = ws.e_.data();
    embedding(be_, w_.wte.data(), V, h, ws.ids_.data(), N, float(std::sqrt(double(h))), e);
    for (std::int64_t i = 0; i < P; ++i)
      run_layer(w_.prelude[std::size_t(i)], e, act, rows, ws,
                [&](const context_type&) { return kv_policy::prelude_slot(i); });

    T* x = ws.x_.data();
    T* alt = ws.alt_.data();
    T* e_part = ws.e_part_.data();
    std::vector<float> host_logits;  // exit tests: [active segments, V]
    if constexpr (sharing_policy::recurrent) {
      for (auto* s : act) init_recurrent_state(*s, x + s->row0 * h, opt);
      constexpr bool concat = std::is_same_v<injection_policy, injection::concat_linear>;
      if constexpr (concat)  // e·W_eᵀ is the same at every step: once per call
        gemm_nt(be_, N, h, h, 1.0f, e, h, w_.adapter.data() + h, 2 * h, 0.0f, e_part, h);
      const bool want_states = crit == halt_criterion::latent_diff || crit == halt_criterion::cosine;
      if (adapt) {
        if (want_states) download_as_float(x, N * h, ws.host_rows_.data());
        for (auto* s : act)
          s->tracker.emplace(crit, opt.halt.effective_threshold(), ws.host_rows_.data() + (s->row0 + s->n - 1) * h, h, V);
      }
      for (std::int64_t s = 0; s < max_steps && !act.empty(); ++s) {
        std::int64_t A = 0;
        for (auto* g : act) A += g->n;
        if constexpr (concat) {
          be_.copy(alt, e_part, std::size_t(A * h));
          gemm_nt(be_, A, h, h, 1.0f, x, h, w_.adapter.data(), 2 * h, 1.0f, alt, h);
          std::swap(x, alt);
        } else {
          add(be_, x, e, x, A * h);
        }
        for (std::int64_t j = 0; j < C; ++j)
          run_layer(w_.core[std::size_t(j)], x, act, rows, ws,
                    [&](const context_type& ctx) { return kv_policy::core_slot(P, C, s, j, ctx.limits_.kv_budget); },
                    core_reader(s, act));
        for (auto* g : act) g->steps_done = s + 1;
        const bool check = adapt && s + 1 < max_steps && s >= opt.halt.min_steps &&
                           (s - opt.halt.min_steps) % opt.halt.check_every == 0;
        if (opt.on_step || (check && want_states)) {
          download_as_float(x, A * h, ws.host_rows_.data());
          if (opt.on_step)
            for (auto* g : act)
              for (std::int64_t t = 0; t < g->n; ++t)
                opt.on_step(g->pos0 + t, s, ws.host_rows_.data() + (g->row0 + t) * h);
        }
        if (!check) continue;
        // Exit test per segment, on its last token (segments are single tokens in adaptive mode).
        if (needs_logits(crit)) {
          host_logits.resize(act.size() * std::size_t(V));
          std::size_t k = 0;
          std::vector<float*> dsts;
          for (std::size_t i = 0; i < act.size(); ++i) dsts.push_back(host_logits.data() + i * std::size_t(V));
          run_head(
              ws, x, act, [](const segment&) { return std::int64_t(1); },
              [&](const segment&) { return dsts[k++]; });
        }
        std::vector<segment*> keep, done;
        for (std::size_t i = 0; i < act.size(); ++i) {
          segment* g = act[i];
          const float* xs = ws.host_rows_.data() + (g->row0 + g->n - 1) * h;
          const float* lg = needs_logits(crit) ? host_logits.data() + i * std::size_t(V) : nullptr;
          (g->tracker->update(xs, h, lg) ? done : keep).push_back(g);
        }
        if (done.empty()) continue;
        if (needs_logits(crit)) {
          for (std::size_t i = 0; i < act.size(); ++i)
            if (act[i]->out_rows > 0 && std::find(done.begin(), done.end(), act[i]) != done.end())
              std::copy(host_logits.begin() + std::ptrdiff_t(i) * V, host_logits.begin() + std::ptrdiff_t(i + 1) * V,
                        act[i]->out);
        } else {
          // Exits decided on the state alone: the head runs now and keeps the exiting tokens' logits.
          // (The coda also runs for the others; their coda slots are rewritten when they exit.)
          run_head(
              ws, x, act,
              [&](const segment& g) {
                return std::find(done.begin(), done.end(), &g) != done.end() ? g.out_rows : std::int64_t(0);
              },
              [](const segment& g) { return g.out; });
        }
        for (auto* g : done) finish_segment(*g, x, opt);
        compact(ws, keep, {x, e, e_part});
        act = keep;
        rows = stack_rows(act);
      }
    } else {
      be_.copy(x, e, std::size_t(N * h));
    }
    if (!act.empty()) {
      run_head(ws, x, act, [](const segment& g) { return g.out_rows; }, [](const segment& g) { return g.out; });
      for (auto* g : act) finish_segment(*g, x, opt);
    }
    for (auto& s : segs) {
      context_type& ctx = *s.ctx;
      ctx.length_ += s.n;
      ctx.tokens_.insert(ctx.tokens_.end(), s.ids, s.ids + s.n);
      ctx.steps_used_.insert(ctx.steps_used_.end(), std::size_t(s.n), std::int32_t(s.steps_done));
      if (opt.steps_used)
        std::fill(opt.steps_used->begin() + s.offset, opt.steps_used->begin() + s.offset + s.n, std::int32_t(s.steps_done));
    }
  }

  Backend be_;
  model_config cfg_;
  model_weights<Backend, T> w_;
  layer_dims dims_;
};

}  // namespace muninn
