#pragma once
/// \file
/// \brief `muninn::model<Backend, T, Arch>`: weights, sizes and the calls of a model whose
/// structure is the policies of Arch; each call runs Arch's RecurrencePolicy over active rows.

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/config.hpp"
#include "muninn/core/error.hpp"
#include "muninn/model/arch.hpp"
#include "muninn/model/context.hpp"
#include "muninn/model/convert_weights.hpp"
#include "muninn/model/options.hpp"
#include "muninn/model/pass.hpp"
#include "muninn/model/weights.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/detect.hpp"
#include "muninn/policies/family.hpp"

namespace muninn {

namespace detail {
template <class W>
using layer_at_step_t = decltype(std::declval<const W&>().layer_at_step(layer_group::core, std::int64_t(), std::int64_t()));
/// \brief Whether a family's weights keep layers of their own for some steps (see model::layer_at).
template <class W>
inline constexpr bool has_layer_at_step = detected_v<W, layer_at_step_t>;
template <class W>
using recursion_layers_t = decltype(std::declval<W&>().recursion_layers);
/// \brief Whether a family's weights keep extra layers beside the stack (see model::store_weights_as).
template <class W>
inline constexpr bool has_recursion_layers = detected_v<W, recursion_layers_t>;

/// \brief A layer hook's type, for detecting loaders that take one.
template <class Backend, class T>
struct layer_hook_probe {
  void operator()(layer_group, std::size_t, layer_weights<Backend, T>&) const {}
};
template <class F, class Backend, class T, class Block, class = void>
struct loads_layer_by_layer : std::false_type {};
template <class F, class Backend, class T, class Block>
struct loads_layer_by_layer<F, Backend, T, Block,
                            std::void_t<decltype(F::template load_weights<Backend, T, Block>(
                                std::declval<const Backend&>(), std::declval<const io::checkpoint&>(),
                                std::declval<const typename F::config_type&>(),
                                std::declval<layer_hook_probe<Backend, T>&>()))>> : std::true_type {};
}  // namespace detail

/// \brief A (recurrent-depth) language model on a backend.
///
/// \tparam Backend models Backend (`host_backend`, `cuda_backend`): memory and launch.
/// \tparam T       storage and compute type: `float` (host and CUDA) or `bf16` (CUDA).
/// \tparam Arch    an `arch<...>` naming the policies. `families/huginn/arch.hpp` (included by
///                 `muninn/muninn.hpp`) makes `float` and `huginn_arch` the defaults of T and Arch.
///
/// Sizes come from config.json at run time; structure from Arch at compile time. The model owns
/// its weights and is immutable after construction; per-sequence state (KV cache) lives in an
/// `inference_context`, activations in a `workspace`.
template <class Backend, class T, class Arch>
class model {
  static_assert(!std::is_same_v<typename Backend::tag, host_tag> || std::is_same_v<T, float>,
                "muninn::model: host_backend computes in fp32; use model<host_backend, float, Arch>");
  static_assert(std::is_base_of_v<model_weights<Backend, T>,
                                  typename Arch::family_policy::template weights_type<Backend, T>>,
                "muninn::arch: the Family slot needs a FamilyPolicy: weights_type<B, T> must derive from model_weights<B, T>");

 public:
  using backend_type = Backend;  ///< the backend
  using value_type = T;          ///< storage/compute type
  using arch_type = Arch;        ///< the policies
  using block_policy = typename Arch::block_policy;          ///< BlockPolicy
  using injection_policy = typename Arch::injection_policy;  ///< InjectionPolicy
  using sharing_policy = typename Arch::sharing_policy;      ///< SharingPolicy
  using kv_policy = typename Arch::kv_cache_policy;          ///< KvCachePolicy
  using halting_policy = typename Arch::halting_policy;      ///< HaltingPolicy
  using family_policy = typename Arch::family_policy;        ///< FamilyPolicy
  using router_policy = typename Arch::router_policy;        ///< RouterPolicy
  using input_policy = typename Arch::input_policy;          ///< InputPolicy
  using head_policy = typename Arch::head_policy;            ///< HeadPolicy
  using config_type = typename family_policy::config_type;   ///< the family's config (sizes and its own fields)
  /// \brief The family's weights (the layer stack and its own parameters).
  using weights_type = typename family_policy::template weights_type<Backend, T>;
  using context_type = inference_context<Backend, T, kv_policy>;  ///< per-sequence KV cache
  using workspace_type = workspace<Backend, T>;                   ///< activations for a stack of rows

  /// \brief Loads config.json and the weights from `dir` as the Arch's FamilyPolicy reads them.
  static model load(const std::string& dir, Backend be = Backend{}) {
    config_type cfg = family_policy::read_config(dir);
    io::checkpoint ck = family_policy::open_checkpoint(dir, cfg);
    return model(std::move(be), std::move(cfg), ck);
  }

  /// \brief Builds a model from an opened checkpoint and its config.
  model(Backend be, config_type cfg, const io::checkpoint& ck) : be_(std::move(be)), cfg_(std::move(cfg)) {
    check_config_matches_arch();
    w_ = family_policy::template load_weights<Backend, T, block_policy>(be_, ck, cfg_);
    init_dims();
  }

  /// \brief Loads as load(dir, be), with the matrices stored in `format` (store_weights_as).
  static model load(const std::string& dir, Backend be, muninn::weight_format format) {
    config_type cfg = family_policy::read_config(dir);
    io::checkpoint ck = family_policy::open_checkpoint(dir, cfg);
    return model(std::move(be), std::move(cfg), ck, format);
  }

  /// \brief Builds a model from an opened checkpoint with its matrices stored in `format` (bf16 or
  /// q8 on the host; fp32 on any backend), the same weights store_weights_as(format) makes.
  ///
  /// Where the FamilyPolicy shows each layer as it is read (its `load_weights` takes an
  /// `on_layer` hook: Huginn, Llama), each layer is converted before the next is read, so the
  /// load's peak memory is the converted model plus one layer and the fp32 embedding and head,
  /// instead of the whole fp32 model; other families load in fp32 and convert afterwards.
  /// \throws muninn::error as the plain constructor, or when a matrix cannot be quantized
  model(Backend be, config_type cfg, const io::checkpoint& ck, muninn::weight_format format)
      : be_(std::move(be)), cfg_(std::move(cfg)) {
    check_config_matches_arch();
    init_dims();
    if constexpr (std::is_same_v<typename Backend::tag, host_tag> &&
                  detail::loads_layer_by_layer<family_policy, Backend, T, block_policy>::value) {
      if (format != weight_format::f32) {
        detail::weight_converter c(be_, format);
        w_ = family_policy::template load_weights<Backend, T, block_policy>(
            be_, ck, cfg_, [&](layer_group g, std::size_t j, layer_weights<Backend, T>& layer) {
              c.layer(layer, dims_, layer_name(g, j));
            });
        finish_conversion(c, format);
        return;
      }
    }
    w_ = family_policy::template load_weights<Backend, T, block_policy>(be_, ck, cfg_);
    if constexpr (std::is_same_v<typename Backend::tag, host_tag>)
      store_weights_as(format);
    else
      MUNINN_CHECK(format == weight_format::f32, "bf16 / q8 weight formats are a host_backend option (asked for ",
                   weight_format_name(format), ")");
  }

  /// \brief Builds a model around weights made elsewhere (random weights for benchmarks, tests).
  model(Backend be, config_type cfg, weights_type w)
      : be_(std::move(be)), cfg_(std::move(cfg)), w_(std::move(w)) {
    check_config_matches_arch();
    MUNINN_CHECK(cfg_.tie_embeddings || w_.lm_head.size() == std::size_t(cfg_.vocab_size * cfg_.n_embd), cfg_.source,
                 ": the config has an untied head (tie_word_embeddings false) but the weights hold no lm_head of ",
                 cfg_.vocab_size, " x ", cfg_.n_embd);
    init_dims();
  }

  /// \brief The run-time sizes.
  const config_type& config() const { return cfg_; }
  /// \brief The backend the weights live on.
  const Backend& backend() const { return be_; }
  /// \brief The weights (read-only).
  const weights_type& weights() const { return w_; }
  /// \brief Unique parameters (a duplicate lm_head is not counted).
  std::int64_t parameter_count() const { return w_.parameter_count; }
  /// \brief Bytes of parameter storage on the backend (after store_weights_as: fp32 parameters
  /// left, plus the converted matrices, a tied head's converted copy included).
  std::size_t weight_bytes() const {
    return std::size_t(w_.parameter_count) * sizeof(T) - converted_freed_ + converted_added_;
  }
  /// \brief The format of the layers' projection matrices and the output matrix (fp32 unless
  /// store_weights_as changed it).
  muninn::weight_format weight_format() const { return format_; }
  /// \brief Host only: stores every layer's projection matrices (q/k/v, o, gate/up, down) and the
  /// output matrix in `format` (bf16 or q8), freeing their fp32 copies; norms, biases and the
  /// embedding table stay fp32 (a tied head gets a converted copy beside it). The GEMMs then
  /// widen the weights in registers and accumulate in fp32. Call once, before any context is
  /// made; fp32 does nothing.
  /// \throws muninn::error when the model is already converted or a weight cannot be quantized
  void store_weights_as(muninn::weight_format format) {
    static_assert(std::is_same_v<typename Backend::tag, host_tag>,
                  "store_weights_as: bf16 / q8 weight formats are a host_backend option");
    if (format == weight_format::f32) return;
    MUNINN_CHECK(format_ == weight_format::f32, "store_weights_as: the weights are already ", weight_format_name(format_));
    detail::weight_converter c(be_, format);
    for (layer_group g : {layer_group::prelude, layer_group::core, layer_group::coda}) {
      std::vector<layer_weights<Backend, T>>& group = g == layer_group::prelude ? w_.prelude
                                                     : g == layer_group::core   ? w_.core
                                                                                : w_.coda;
      for (std::size_t j = 0; j < group.size(); ++j) c.layer(group[j], dims_, layer_name(g, j));
    }
    finish_conversion(c, format);
  }
  /// \brief Host: the converted output matrix the head reads, or null (fp32).
  const host_weight* output_converted() const { return w_.head_converted.get(); }
  /// \brief Layer sizes.
  const layer_dims& dims() const { return dims_; }
  /// \brief The stored layers of one group (a plain stack keeps all of them in the prelude).
  const std::vector<layer_weights<Backend, T>>& layers(layer_group g) const {
    return g == layer_group::prelude ? w_.prelude : g == layer_group::core ? w_.core : w_.coda;
  }
  /// \brief The stored layer that runs as layer j of group g at recurrence step `step`: the
  /// family's own layer for that step when its weights keep one (`layer_at_step`, e.g. a
  /// Mixture-of-Recursions recursion whose stored copy differs), else the SharingPolicy's choice
  /// (j < layers(g).size()).
  const layer_weights<Backend, T>& layer_at(layer_group g, std::int64_t step, std::int64_t j) const {
    if constexpr (detail::has_layer_at_step<weights_type>)
      if (const auto* own = w_.layer_at_step(g, step, j)) return *own;
    return layers(g)[std::size_t(sharing_policy::layer(sharing_, g, step, j))];
  }
  /// \brief The stored layer that runs as layer j of group g for `rows` rows that are at different
  /// recurrence steps (row i at step_of(i)) in one layer call, as depth-wise and exit batching
  /// run them: one GEMM serves them all, so the SharingPolicy must give every row the same layer
  /// (the cycle strategies do).
  /// \throws muninn::error naming the strategy when it does not
  template <class StepOf>
  const layer_weights<Backend, T>& layer_at_steps(layer_group g, std::size_t rows, StepOf&& step_of,
                                                  std::int64_t j) const {
    const auto& first = layer_at(g, rows ? step_of(std::size_t(0)) : 0, j);
    for (std::size_t i = 1; i < rows; ++i)
      MUNINN_CHECK(&layer_at(g, step_of(i), j) == &first, "rows of different recursions run in one layer call, which sharing::",
                   sharing_policy::name, " gives different layers");
    return first;
  }
  /// \brief The layer groups as the SharingPolicy sees them.
  const sharing_layout& sharing() const { return sharing_; }
  /// \brief Width of one output row: the vocabulary size, or what the HeadPolicy says
  /// (`head::final_norm`: the hidden size).
  std::int64_t output_width() const { return head_output_width<typename Arch::head_policy>(cfg_); }
  /// \brief Token ids one position takes: K under a chunk input (`input::chunk_compress`), else 1.
  /// Calls take ids K per position; contexts count positions.
  std::int64_t tokens_per_position() const { return input_tokens_per_position<typename Arch::input_policy>(cfg_); }
  /// \brief Tokens one emission of the head holds: K for a chunk head (`head::energy`), else 1.
  std::int64_t tokens_per_emission() const { return head_tokens_per_row<typename Arch::head_policy>(cfg_); }
  /// \brief The output matrix [V, h]: the embedding when tied (null when an untied head is
  /// stored converted: see output_converted).
  const T* output_weight() const { return cfg_.tie_embeddings ? w_.wte.data() : w_.lm_head.data(); }
  /// \brief Number of KV slots per token for `max_steps` recurrences and a budget (0: none).
  std::int64_t kv_slots(std::int64_t max_steps, std::int64_t budget = 0) const {
    context_limits lim;
    lim.max_steps = sharing_policy::recurrent ? max_steps : 0;
    lim.kv_budget = budget;
    return kv_policy::num_slots(kv_shape(), lim);
  }

  /// \brief Allocates a KV cache (and a default workspace) for one sequence.
  context_type make_context(context_limits lim) const {
    if (lim.max_steps < 0) lim.max_steps = cfg_.mean_recurrence;
    if (!sharing_policy::recurrent) lim.max_steps = 0;
    MUNINN_CHECK(lim.max_tokens > 0, "context: max_tokens must be positive, got ", lim.max_tokens);
    MUNINN_CHECK(lim.max_tokens <= cfg_.block_size, "context: max_tokens ", lim.max_tokens,
                 " exceeds the model's block_size ", cfg_.block_size, " (", cfg_.source, ")");
    MUNINN_CHECK(lim.max_chunk > 0, "context: max_chunk must be positive, got ", lim.max_chunk);
    MUNINN_CHECK(lim.kv_budget >= 0, "context: kv_budget must be >= 0, got ", lim.kv_budget);
    lim.max_chunk = std::min(lim.max_chunk, lim.max_tokens);
    family_configure<family_policy>(cfg_, lim);
    return context_type(be_, dims_, kv_shape(), output_width(), lim, tokens_per_position());
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
    return workspace_type(be_, dims_, output_width(), rows);
  }

  /// \brief Feeds `ids` after what `ctx` already holds; returns logits as float on the host:
  /// [ids.size(), V] for `logits_for::all`, [1, V] for `logits_for::last`.
  ///
  /// With fixed depth, long inputs are processed in chunks of `max_chunk` tokens; each attends to
  /// the cache with a bottom-right causal mask, so chunked prefill equals a single pass. With an
  /// exit criterion, tokens run one at a time so that each exits at its own step — or, with
  /// `prefill_exit::prompt`, all in one pass that exits at one step (the reference's prefill).
  std::vector<float> forward(context_type& ctx, const std::vector<std::int32_t>& ids, const run_options& opt = {},
                             logits_for which = logits_for::all) const {
    MUNINN_CHECK(!ids.empty(), "forward: no tokens given");
    check_tokens(ctx, ids);
    const std::int64_t total = std::int64_t(ids.size()) / tokens_per_position(), V = output_width();
    std::vector<float> out(std::size_t(which == logits_for::all ? total * V : V));
    if (opt.latents) opt.latents->assign(std::size_t(total * dims_.h), 0.0f);
    if (opt.blend.mixed) opt.blend.mixed->assign(std::size_t(total * dims_.h), 0.0f);
    if (opt.steps_used) opt.steps_used->assign(std::size_t(total), 0);
    if (opt.depths) opt.depths->assign(std::size_t(total), 0);
    // A router sees the whole call at once (its capacity is a share of the call's tokens).
    const std::int64_t chunk = router_policy::routes                   ? total
                               : !exits_early(opt)                     ? ctx.limits().max_chunk
                               : exits_together(opt)                   ? total
                                                                       : 1;
    MUNINN_CHECK(chunk <= ctx.limits().max_chunk, router_policy::routes ? "a routed model" : "prefill_exit::prompt",
                 " runs the ", total,
                 " tokens of a call in one pass; the context's max_chunk is ", ctx.limits().max_chunk,
                 " (make the context with max_chunk >= ", total, ")");
    for (std::int64_t c0 = 0; c0 < total; c0 += chunk) {
      std::vector<piece> pieces{make_piece(ctx, ids, c0, std::min(chunk, total - c0), out, which, tokens_per_position())};
      forward_pass<model>(*this, ctx.ws_, pieces, opt).run();
    }
    return out;
  }

  /// \brief Full-sequence forward on a fresh context: logits [ids.size(), V].
  std::vector<float> forward(const std::vector<std::int32_t>& ids, const run_options& opt = {}) const {
    MUNINN_CHECK(!ids.empty(), "forward: no tokens given");
    context_limits lim;
    lim.max_tokens = std::int64_t(ids.size()) / tokens_per_position();
    lim.max_steps = std::max(resolve_steps(opt), opt.halt.max_steps);
    if (router_policy::routes || exits_together(opt)) lim.max_chunk = lim.max_tokens;  // one pass
    MUNINN_CHECK(lim.max_tokens <= cfg_.block_size, "sequence of ", lim.max_tokens, " tokens exceeds block_size ",
                 cfg_.block_size, " (", cfg_.source, ")");
    auto ctx = make_context(lim);
    return forward(ctx, ids, opt, logits_for::all);
  }

  /// \brief Feeds one list of tokens to each of several sequences at once; returns each row's logits
  /// ([n_r, V] or [1, V]). Rows may have different lengths and positions: the GEMMs run on all rows
  /// stacked (each weight is read once per call), attention runs per row on its own cache, so each
  /// row gets exactly what it would get alone. `latents`, `given_state` and `blend` are not used here.
  /// Taps carry each row's index r in `ctxs` as `tap_event::sequences`.
  std::vector<std::vector<float>> forward_batch(workspace_type& ws, const std::vector<context_type*>& ctxs,
                                                const std::vector<std::vector<std::int32_t>>& ids,
                                                const run_options& opt = {}, logits_for which = logits_for::last) const {
    MUNINN_CHECK(ctxs.size() == ids.size(), "forward_batch: ", ctxs.size(), " contexts but ", ids.size(), " rows");
    MUNINN_CHECK(opt.latents == nullptr && opt.given_state == nullptr && opt.blend.weight == 0.0f &&
                     opt.blend.mixed == nullptr && opt.input_rows == nullptr,
                 "forward_batch: latents, given_state, blend and input_rows are single-sequence options");
    std::vector<std::vector<float>> out(ids.size());
    std::int64_t longest = 0;
    for (std::size_t r = 0; r < ids.size(); ++r) {
      for (std::size_t q = 0; q < r; ++q)
        MUNINN_CHECK(ctxs[q] != ctxs[r], "forward_batch: rows ", q, " and ", r, " share a context");
      check_tokens(*ctxs[r], ids[r]);
      const std::int64_t n = std::int64_t(ids[r].size()) / tokens_per_position();
      out[r].assign(std::size_t(which == logits_for::all ? n * output_width() : (n ? output_width() : 0)), 0.0f);
      longest = std::max(longest, n);
    }
    // Fixed depth or prefill_exit::prompt: every row's tokens in one stack. Adaptive per token:
    // token t of every row, then t + 1, ...
    const std::int64_t chunk = exits_early(opt) && !exits_together(opt) ? 1 : longest;
    for (std::int64_t c0 = 0; c0 < longest; c0 += chunk) {
      std::vector<piece> pieces;
      for (std::size_t r = 0; r < ids.size(); ++r) {
        const std::int64_t n_r = std::int64_t(ids[r].size()) / tokens_per_position();
        if (c0 < n_r)
          pieces.push_back(make_piece(*ctxs[r], ids[r], c0, std::min(chunk, n_r - c0), out[r], which,
                                      tokens_per_position(), std::int64_t(r)));
      }
      forward_pass<model>(*this, ws, pieces, opt).run();
    }
    return out;
  }

  /// \brief The call's halting options with the HaltingPolicy's defaults filled in.
  halting_options resolve_halting(const run_options& opt) const {
    const halting_options h = halting_policy::resolve(opt.halt);
    MUNINN_CHECK(!halting_policy::exits(h) || (halting_policy::early_exit && sharing_policy::recurrent),
                 "this model was compiled with halting::", halting_policy::name,
                 ", which has no early exit; use halting::adaptive (e.g. huginn_adaptive_arch)");
    return h;
  }
  /// \brief Recurrence steps of a call: `opt.steps`, or the config's mean_recurrence.
  std::int64_t resolve_steps(const run_options& opt) const { return opt.steps < 0 ? cfg_.mean_recurrence : opt.steps; }

 private:
  using piece = pass_piece<context_type>;  // = forward_pass<model>::piece

  // Positions c0 … c0+n−1 of `ids` (K ids each) as one piece; its logits go to the matching rows of `out`.
  static piece make_piece(context_type& ctx, const std::vector<std::int32_t>& ids, std::int64_t c0, std::int64_t n,
                          std::vector<float>& out, logits_for which, std::int64_t K, std::int64_t sequence = -1) {
    const std::int64_t positions = std::int64_t(ids.size()) / K;
    const std::int64_t V = std::int64_t(out.size()) / (which == logits_for::all ? positions : 1);
    piece p;
    p.ctx = &ctx;
    p.ids = ids.data() + c0 * K;
    p.n = n;
    p.offset = c0;
    p.first_of_call = c0 == 0;
    p.sequence = sequence;
    if (which == logits_for::all) {
      p.out = out.data() + c0 * V;
      p.out_rows = n;
    } else if (c0 + n == positions) {
      p.out = out.data();
      p.out_rows = 1;
    }
    return p;
  }

  bool exits_early(const run_options& opt) const { return halting_policy::exits(resolve_halting(opt)); }
  bool exits_together(const run_options& opt) const { return opt.halt.prefill == prefill_exit::prompt; }

  kv_layout kv_shape() const {
    return kv_layout{cfg_.n_layers_in_prelude, cfg_.n_layers_in_recurrent_block, cfg_.n_layers_in_coda,
                     dims_.kv_dim()};
  }

  // The layer groups as the SharingPolicy sees them, checked against it; then the family's own
  // check that the config fits the compiled slots.
  void check_config_matches_arch() {
    sharing_ = sharing_layout{cfg_.n_layers_in_prelude, cfg_.n_layers_in_recurrent_block, cfg_.n_layers_in_coda,
                              cfg_.mean_recurrence};
    sharing_policy::check(sharing_, cfg_.source.empty() ? "config" : cfg_.source);
    family_check<family_policy, Arch>(cfg_);
  }

  /// The name a converted layer's matrices carry in errors ("core layer 2 qkv").
  static std::string layer_name(layer_group g, std::size_t j) {
    return std::string(layer_group_name(g)) + " layer " + std::to_string(j);
  }

  /// After the stack's layers went through `c`: the family's extra layers and the output matrix
  /// converted, and the memory counts and format recorded.
  void finish_conversion(detail::weight_converter& c, muninn::weight_format format) {
    if constexpr (detail::has_recursion_layers<weights_type>)
      for (std::size_t j = 0; j < w_.recursion_layers.size(); ++j)
        c.layer(w_.recursion_layers[j], dims_, "recursion layer " + std::to_string(j));
    if constexpr (head_reads_output_matrix<head_policy>()) {
      const std::int64_t V = cfg_.vocab_size, h = cfg_.n_embd;
      w_.head_converted = cfg_.tie_embeddings ? c.copy(w_.wte.data(), V, h, "output matrix (tied embedding)")
                                              : c.take(w_.lm_head, h, "lm_head");
    }
    converted_freed_ = c.freed();
    converted_added_ = c.added();
    format_ = format;
  }

  void init_dims() {
    dims_.h = cfg_.n_embd;
    dims_.n_heads = cfg_.n_heads;
    dims_.n_kv_heads = cfg_.n_kv_heads > 0 ? cfg_.n_kv_heads : cfg_.n_heads;
    dims_.head_dim = cfg_.head_dim > 0 ? cfg_.head_dim : cfg_.n_embd / cfg_.n_heads;
    dims_.inter = cfg_.intermediate_size;
    dims_.eps = cfg_.norm_eps;
  }

  void check_tokens(const context_type& ctx, const std::vector<std::int32_t>& ids) const {
    const std::int64_t K = tokens_per_position();
    MUNINN_CHECK(std::int64_t(ids.size()) % K == 0, ids.size(), " tokens is not a whole number of positions of ", K,
                 " tokens (", input_policy::name, " input)");
    const std::int64_t end = ctx.length() + std::int64_t(ids.size()) / K;
    MUNINN_CHECK(end <= cfg_.block_size, "sequence of ", end, " tokens exceeds block_size ", cfg_.block_size);
    MUNINN_CHECK(end <= ctx.limits().max_tokens, "sequence of ", end, " tokens exceeds the context capacity of ",
                 ctx.limits().max_tokens, " tokens");
    for (std::size_t i = 0; i < ids.size(); ++i)
      MUNINN_CHECK(ids[i] >= 0 && ids[i] < cfg_.vocab_size, "token id ", ids[i], " at index ", i,
                   " is out of range for vocab_size ", cfg_.vocab_size);
  }

  Backend be_;
  config_type cfg_;
  weights_type w_;
  muninn::weight_format format_ = weight_format::f32;
  std::size_t converted_freed_ = 0, converted_added_ = 0;  // bytes store_weights_as freed / made
  layer_dims dims_;
  sharing_layout sharing_;
};

}  // namespace muninn
