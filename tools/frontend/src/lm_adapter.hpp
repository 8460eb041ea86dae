#pragma once
// The loaded_model of the families that run on model<Backend, T, Arch> with a softmax head
// (Huginn, Llama, Mixture-of-Recursions), written once over the model type. Included by each of
// those families' translation units (and by cuda.cu for the CUDA models); never by a front end.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"
#include "muninn/frontend/model.hpp"
#include "muninn/frontend/registry.hpp"
#include "muninn/io/npy.hpp"
#include "muninn/io/tokenizer.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/brier.hpp"
#include "muninn/frontend/tap_dump.hpp"

namespace muninn::frontend::detail {

/// \brief --steps, --init-state, --seed, --routing of `o` (the family check has run before).
template <class Model>
run_options run_options_from(const Model& m, const option_values& o) {
  run_options run;
  const model_config& cfg = m.config();
  if (find_option(o.op(), "steps")) run.steps = o.integer("steps", cfg.mean_recurrence);
  if (find_option(o.op(), "init-state"))
    run.init = o.choice("init-state") == "zero" ? state_init_choice{state_init::zero{}}
                                                 : state_init_choice{state_init::truncated_normal{}};
  run.seed = std::uint64_t(o.integer("seed"));
  if (find_option(o.op(), "routing"))
    run.routing = o.choice("routing") == "scoring" ? routing_mode::scoring : routing_mode::causal;
  return run;
}

/// \brief The token ids must be inside the vocabulary (a usage error naming the index).
inline void check_ids(const std::vector<std::int32_t>& ids, std::int64_t vocab, const std::string& what) {
  if (ids.empty()) fail_as(error_kind::usage, what, " is empty");
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      fail_as(error_kind::usage, what, ": token id ", ids[i], " at index ", i, " is out of range for vocab_size ", vocab);
}

/// \brief The early-exit options.
inline halting_options halting_from(const option_values& o, std::int64_t steps) {
  halting_options h;
  h.criterion = parse_halt_criterion(o.choice("exit"));
  h.threshold = o.number("exit-threshold", -1.0);  // -1: the criterion's default
  h.max_steps = o.integer("max-steps", steps);
  h.min_steps = o.integer("min-steps");
  if (h.min_steps > h.max_steps)
    fail_as(error_kind::usage, o.spelled("min-steps"), " ", h.min_steps, " exceeds ", o.spelled("max-steps"), " ",
            h.max_steps, o.has("max-steps") ? "" : " (its default, the " + o.spelled("steps") + " depth)");
  h.check_every = o.integer("check-every");
  if (o.choice("exit-parity") == "reference") h.reference_parity();
  if (o.has("prefill-exit")) h.prefill = parse_prefill_exit(o.choice("prefill-exit"));
  if (h.criterion == halt_criterion::none)
    for (const char* f : {"exit-parity", "prefill-exit", "exit-threshold", "min-steps", "max-steps", "check-every"})
      if (o.has(f)) fail_as(error_kind::usage, o.spelled(f), " needs an ", o.spelled("exit"), " criterion");
  return h;
}

/// \brief Greedy unless a sampling option is given without --greedy.
inline sampling_params sampling_from(const option_values& o, std::uint64_t seed) {
  sampling_params s;
  s.greedy = o.flag("greedy") || !(o.has("temperature") || o.has("top-k") || o.has("top-p") || o.has("min-p") ||
                                   o.has("repetition-penalty"));
  s.temperature = float(o.number("temperature"));
  s.top_k = int(o.integer("top-k"));
  s.top_p = float(o.number("top-p"));
  if (!(s.top_p > 0)) o.reject("top-p", "must be in (0, 1], got " + o.text("top-p"));
  s.min_p = float(o.number("min-p"));
  s.repetition_penalty = float(o.number("repetition-penalty"));
  if (!(s.repetition_penalty > 0)) o.reject("repetition-penalty", "must be > 0, got " + o.text("repetition-penalty"));
  s.seed = seed;
  return s;
}

/// \brief Every generate option that model<> families share, validated.
template <class Model>
generate_options generate_options_from(const Model& m, const option_values& o, const std::vector<std::int32_t>& stops) {
  generate_options g;
  g.run = run_options_from(m, o);
  g.max_new_tokens = o.integer("max-new-tokens");
  g.run.halt = halting_from(o, g.run.steps);
  if (g.run.halt.criterion != halt_criterion::none) g.run.steps = g.run.halt.max_steps;
  const std::string warm = o.choice("warm-start");
  g.run.warm = warm == "raw" ? warm_start::raw : warm == "normalized" ? warm_start::normalized : warm_start::none;
  g.sampling = sampling_from(o, g.run.seed);
  if (o.has("lookahead") && !o.has("draft-steps"))
    fail_as(error_kind::usage, o.spelled("lookahead"), " needs ", o.spelled("draft-steps"));
  if (o.has("draft-steps")) {
    g.draft_steps = o.integer("draft-steps", 0);
    g.lookahead = o.integer("lookahead");
    if (!g.sampling.greedy)
      fail_as(error_kind::usage, o.spelled("draft-steps"), " verifies by argmax: drop the sampling options or add ",
              o.spelled("greedy"));
    if (g.run.warm != warm_start::none)
      fail_as(error_kind::usage, o.spelled("draft-steps"), " does not combine with ", o.spelled("warm-start"));
  }
  g.stop_ids = stops;
  for (auto id : g.stop_ids)
    if (id < 0 || id >= m.config().vocab_size)
      fail_as(error_kind::usage, o.spelled("stop"), ": token id ", id, " is out of range for vocab_size ",
              m.config().vocab_size);
  return g;
}

/// \brief The KV budget a --cache-lookup name stands for ("full": 0, "[latest-m4-]compress-s<N>":
/// N core-layer slots = N / core layers recurrences, the reference's names).
inline std::int64_t kv_budget_of_lookup(const option_values& o, const model_config& cfg) {
  const std::string name = o.text("cache-lookup", "");
  if (name == "full") return 0;
  const std::string tag = "compress-s";
  const auto at = name.find(tag);
  if (at == std::string::npos || !(at == 0 || name.substr(0, at) == "latest-m4-"))
    o.reject("cache-lookup", ": unknown strategy '" + name + "' (full, latest-m4-compress-s<N>)");
  const std::string digits = name.substr(at + tag.size());
  const std::int64_t n = digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos
                             ? -1
                             : std::stoll(digits);
  const std::int64_t core = cfg.n_layers_in_recurrent_block;
  if (!(n >= 1 && core >= 1 && n % core == 0))
    fail_as(error_kind::usage, o.spelled("cache-lookup"), " ", name, ": ", digits, " slots is not a whole number of ",
            "recurrences of the ", core, "-layer core");
  return n / core;
}

/// \brief The parallel sampler's options; its knobs without `--sampler parallel` are errors.
inline bool wants_parallel(const option_values& o) {
  const std::string s = o.choice("sampler", "plain");
  if (s == "approx" || s == "exact")
    fail_as(error_kind::usage, o.spelled("sampler"), " ", s, " applies to CALM checkpoints; this model samples tokens "
            "from logits (plain or parallel)");
  if (s == "parallel") {
    for (const char* f : {"exit", "warm-start", "draft-steps", "kv-budget", "kv-fallback", "dump-states", "dump"})
      if (o.has(f)) fail_as(error_kind::usage, o.spelled(f), " does not apply to ", o.spelled("sampler"), " parallel");
    return true;
  }
  for (const char* f : {"inner-recurrence", "headway", "max-wavefront", "ema-embeds", "state-noise-mixing",
                        "constant-noise", "sqrt-mixer", "freeze", "freeze-threshold", "continuous-compute", "cache-lookup"})
    if (o.has(f)) fail_as(error_kind::usage, o.spelled(f), " needs ", o.spelled("sampler"), " parallel");
  return false;
}

inline parallel_options parallel_from(const option_values& o, const model_config& cfg) {
  parallel_options p;
  p.inner_recurrence = o.integer("inner-recurrence");
  p.headway = o.integer("headway");
  p.max_wavefront = o.integer("max-wavefront");
  p.ema_embeds = float(o.number("ema-embeds"));
  p.state_noise_mixing = float(o.number("state-noise-mixing"));
  p.dampened_state_mixer = !o.flag("constant-noise");
  p.sqrt_mixer = o.flag("sqrt-mixer");
  p.freeze = parse_freeze_rule(o.choice("freeze"));
  p.freeze_threshold = o.number("freeze-threshold");
  p.continuous_compute = o.flag("continuous-compute");
  if (o.has("cache-lookup")) p.kv_budget = kv_budget_of_lookup(o, cfg);
  return p;
}

/// \brief `--dump-states`: the latent trajectory of every position the run fed through the model,
/// float32 [rows, S, h], S = the deepest recurrence the run allows, NaN at steps not run (the
/// layout the generate help and docs/inference.md state). A pass over a position clears its row
/// first, so a row holds the last pass (with --draft-steps: the verification); P prompt + G new
/// tokens give P + G - 1 rows (the last token is never fed back).
class state_dump {
 public:
  state_dump(std::int64_t max_positions, std::int64_t max_steps, std::int64_t h)
      : P_(max_positions), S_(max_steps), h_(h),
        states_(std::size_t(max_positions * max_steps * h), std::numeric_limits<float>::quiet_NaN()) {}
  step_hook hook() {
    return [this](std::int64_t pos, std::int64_t step, const float* x) { record(pos, step, x); };
  }
  /// \brief The first `rows` positions as a tap (the states leave this dump).
  tap_value take(std::int64_t rows) {
    states_.resize(std::size_t(rows * S_ * h_));
    return tap_value{{rows, S_, h_}, std::move(states_), {}};
  }
  std::string write(const std::string& path, std::int64_t prompt, std::int64_t generated) const {
    const std::int64_t rows = std::min(ran_, generated > 0 ? prompt + generated - 1 : prompt);
    io::write_npy(path, states_.data(), {rows, S_, h_});
    return "wrote " + path + " [" + std::to_string(rows) + ", " + std::to_string(S_) + ", " + std::to_string(h_) +
           "] float32 (positions, steps, hidden)";
  }

 private:
  void record(std::int64_t pos, std::int64_t step, const float* x) {
    if (pos >= P_ || step >= S_) return;  // positions of rejected lookahead drafts past the end
    float* row = states_.data() + pos * S_ * h_;
    if (step == 0) std::fill(row, row + S_ * h_, std::numeric_limits<float>::quiet_NaN());
    std::copy(x, x + h_, row + step * h_);
    ran_ = std::max(ran_, pos + 1);
  }
  std::int64_t P_, S_, h_, ran_ = 0;
  std::vector<float> states_;
};

/// \brief --block-size, --max-blocks, --seed; the block must fit the model's `context` positions
/// (BrierLM depends on the block size, so it is never clamped).
inline brierlm_options brier_options_from(const option_values& o, std::int64_t context) {
  brierlm_options b;
  b.block_size = o.integer("block-size");
  if (b.block_size > context)
    fail_as(error_kind::usage, o.spelled("block-size"), " ", b.block_size, o.has("block-size") ? "" : " (the default)",
            " exceeds the model's context of ", context, " positions: give ", o.spelled("block-size"), " ", context,
            " or less (BrierLM depends on the block size, so it is not clamped)");
  b.max_blocks = o.integer("max-blocks", 0);
  b.seed = std::uint64_t(o.integer("seed"));
  return b;
}

/// \brief The BrierLM protocol over `stream` with a family's block estimator.
template <class Estimator>
brier_report run_brier(const std::vector<std::int32_t>& stream, const option_values& o, brierlm_options b,
                       const brier_block_fn& on_block, std::int64_t vocab, Estimator&& estimate) {
  for (std::size_t i = 0; i < stream.size(); ++i)
    if (stream[i] < 0 || stream[i] >= vocab)
      fail_as(error_kind::usage, o.spelled("data"), ": token id ", stream[i], " (token ", i,
              " of the stream) is out of range for vocab_size ", vocab);
  const std::int64_t nb = brier_block_count(std::int64_t(stream.size()), b.block_size, b.max_blocks);
  if (nb <= 0)
    fail_as(error_kind::usage, o.spelled("data"), " holds ", stream.size(), " tokens, fewer than one block of ",
            o.spelled("block-size"), " ", b.block_size, " (the remainder after the last whole block is dropped)");
  if (on_block)
    b.on_block = [&](std::int64_t block, const brier_values& m) { on_block(block, nb, {m[0], m[1], m[2], m[3]}); };
  const brierlm_result r = evaluate_brierlm(stream, b, std::forward<Estimator>(estimate));
  brier_report rep;
  rep.block_size = b.block_size;
  rep.blocks = nb;
  rep.tokens = std::int64_t(stream.size());
  rep.seed = b.seed;
  rep.brier = {r.brier[0], r.brier[1], r.brier[2], r.brier[3]};
  rep.brierlm = r.brierlm;
  return rep;
}

template <class S>
using used_bytes_t = decltype(std::declval<const S&>().used_bytes());

/// \brief Makes the batch engine of a model<> (a family may pass its own to lm_model).
template <class Model>
using batch_maker = std::unique_ptr<batch_engine> (*)(const Model&, const batch_limits&);

/// \brief The forward_batch engine every model<> family can use (lm_batch.hpp).
template <class Model>
std::unique_ptr<batch_engine> make_rows_batch(const Model& m, const batch_limits& lim);

/// \brief The loaded_model of a model<Backend, T, Arch>.
template <class Model>
class lm_model final : public loaded_model {
 public:
  lm_model(Model m, lm_extras x, batch_maker<Model> make_batch = &make_rows_batch<Model>)
      : m_(std::move(m)), x_(std::move(x)), make_batch_(make_batch) {}

  const model_info& info() const override { return x_.info; }
  const io::tokenizer* tokenizer() const override { return x_.tokenizer.get(); }
  bool prompt_adds_special_tokens() const override { return x_.add_special; }
  std::vector<std::int32_t> eos_ids() const override { return x_.eos; }
  const Model& model() const { return m_; }

  std::vector<tap_spec> taps() const override {
    std::vector<tap_spec> t;
    if (recurrent()) {
      t.push_back({"trajectory", "the raw recurrent state after every step, float32 [positions, steps, hidden]"});
      t.push_back({"latents", "the raw recurrent state after the last step (the coda's input), float32 "
                              "[positions, hidden]"});
    }
    if (routed) t.push_back({"depths", "the recursions each position ran, int32 [positions]"});
    return t;
  }

  /// \brief The names of the pass's taps (run_options::taps) this model reaches.
  std::vector<std::string> pass_taps() const {
    std::vector<std::string> t = {"embeddings"};
    for (layer_group g : {layer_group::prelude, layer_group::core, layer_group::coda}) {
      for (std::size_t j = 0; j < m_.layers(g).size(); ++j)
        t.push_back(std::string(layer_group_name(g)) + ".layer." + std::to_string(j));
      if (g == layer_group::core && recurrent()) t.push_back("state");

      if (g == layer_group::core && routed) {
        const bool token = std::string(Model::router_policy::name) == "token_choice";
        for (const char* r : token ? std::vector<const char*>{"router.logits", "router.probs", "router.gates", "router.depths"}
                                   : std::vector<const char*>{"router.logits", "router.gates", "router.selected"})
          t.push_back(r);
      }
    }
    t.push_back("head.input");
    t.push_back("logits");
    if (recurrent() && Model::halting_policy::early_exit) {  // at the steps an exit criterion checks
      t.push_back("halt.value");
      t.push_back("halt.exited");
    }
    return t;
  }

  forward_result forward(const std::vector<std::int32_t>& ids, const option_values& o,
                         const std::vector<std::string>& taps) const override {
    check_taps(taps);
    check_ids(ids, m_.config().vocab_size, "the input");
    const auto wants = [&](const char* name) { return std::find(taps.begin(), taps.end(), name) != taps.end(); };
    const std::int64_t n = std::int64_t(ids.size()), h = m_.config().n_embd;
    run_options run = run_options_from(m_, o);
    forward_result r;
    if (routed) run.depths = &r.depths;
    if (recurrent()) run.steps_used = &r.depths;
    std::optional<state_dump> trajectory;
    if (wants("trajectory")) {
      trajectory.emplace(n, m_.resolve_steps(run), h);
      run.on_step = trajectory->hook();
    }
    std::vector<float> latents;
    if (wants("latents")) run.latents = &latents;
    std::optional<tap_dump> dump;
    if (wants_dump(o)) run.taps = dump.emplace(o, pass_taps()).options();
    r.logits = m_.forward(ids, run);
    if (dump) r.notes.push_back(dump->finish());
    r.rows = n;
    r.vocab = m_.config().vocab_size;
    r.steps = recurrent() ? run.steps : -1;
    if (trajectory) r.taps["trajectory"] = trajectory->take(n);
    if (wants("latents")) r.taps["latents"] = tap_value{{n, h}, std::move(latents), {}};
    if (wants("depths")) r.taps["depths"] = tap_value{{n}, {}, r.depths};
    return r;
  }

  std::vector<forward_result> forward_batch(const std::vector<std::vector<std::int32_t>>& seqs, const option_values& o,
                                            const std::vector<std::string>& taps) const override {
    // A router's choice depends on the whole call, and taps follow one sequence: those run alone.
    if (routed || !taps.empty() || seqs.size() < 2) return loaded_model::forward_batch(seqs, o, taps);
    const model_config& cfg = m_.config();
    const run_options run = run_options_from(m_, o);
    std::vector<typename Model::context_type> ctxs;
    ctxs.reserve(seqs.size());
    std::int64_t total = 0;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      check_ids(seqs[i], cfg.vocab_size, "sequence " + std::to_string(i));
      context_limits lim;
      lim.max_tokens = std::int64_t(seqs[i].size());
      if (lim.max_tokens > cfg.block_size)
        fail_as(error_kind::usage, "sequence ", i, " of ", lim.max_tokens, " tokens exceeds the model's context "
                "(block_size ", cfg.block_size, ")");
      lim.max_steps = m_.resolve_steps(run);
      lim.max_chunk = 1;  // the batch workspace below does the work
      ctxs.push_back(m_.make_context(lim));
      total += lim.max_tokens;
    }
    std::vector<typename Model::context_type*> live;
    for (auto& c : ctxs) live.push_back(&c);
    auto ws = m_.make_workspace(total);
    std::vector<std::vector<float>> logits = m_.forward_batch(ws, live, seqs, run, logits_for::all);
    std::vector<forward_result> out(seqs.size());
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      out[i].logits = std::move(logits[i]);
      out[i].rows = std::int64_t(seqs[i].size());
      out[i].vocab = cfg.vocab_size;
      out[i].steps = recurrent() ? m_.resolve_steps(run) : -1;
      if (recurrent()) out[i].depths = ctxs[i].steps_used();
    }
    return out;
  }

  generation generate(const std::vector<std::int32_t>& prompt, const option_values& o,
                      const std::vector<std::int32_t>& stops, const generate_callbacks& cb) const override {
    const model_config& cfg = m_.config();
    check_ids(prompt, cfg.vocab_size, "the prompt");
    generate_options g = generate_options_from(m_, o, stops);
    g.on_token = [&](std::int32_t t, std::int32_t) {
      if (cb.on_tokens) cb.on_tokens({t});
      return !(cb.cancelled && cb.cancelled());
    };
    if (wants_parallel(o)) return generate_parallel_(prompt, o, g, cb);
    const std::int64_t total = std::int64_t(prompt.size()) + g.max_new_tokens;
    if (total > cfg.block_size)
      fail_as(error_kind::usage, "the prompt of ", prompt.size(), " tokens + ", g.max_new_tokens, " new tokens = ", total,
              " exceeds the model's context (block_size ", cfg.block_size, ")");
    const std::int64_t max_steps = max_steps_needed(m_, g);
    context_limits lim;
    lim.max_tokens = std::min(total + g.lookahead, cfg.block_size);
    lim.max_steps = max_steps;
    lim.kv_budget = o.integer("kv-budget");
    lim.fallback = o.choice("kv-fallback") == "none" ? kv_fallback::none : kv_fallback::latest;
    if (g.run.halt.prefill == prefill_exit::prompt || routed)  // the prompt runs as one pass
      lim.max_chunk = std::max<std::int64_t>(lim.max_chunk, std::int64_t(prompt.size()));
    auto ctx = m_.make_context(lim);
    std::optional<tap_dump> taps;
    if (wants_dump(o)) g.run.taps = taps.emplace(o, pass_taps()).options();
    std::optional<state_dump> dump;
    if (o.has("dump-states")) {
      dump.emplace(total, max_steps, cfg.n_embd);
      g.run.on_step = dump->hook();
    }
    const generate_result r = muninn::generate(m_, ctx, prompt, g);
    generation out;
    out.tokens = r.tokens;
    out.steps = r.steps;
    out.stop_reason = stop_reason(r.tokens, g, cb, stops);
    if (taps) out.notes.push_back(taps->finish());
    if (dump) out.notes.push_back(dump->write(o.text("dump-states", ""), std::int64_t(prompt.size()),
                                              std::int64_t(r.tokens.size())));
    if (g.draft_steps > 0)
      out.notes.push_back("speculative: drafted " + std::to_string(r.drafted) + ", accepted " +
                          std::to_string(r.accepted) + ", " + std::to_string(r.forward_calls) + " model calls");
    std::string kv = "kv cache " + human_bytes(double(ctx.kv_bytes_per_token())) + "/token, " +
                     human_bytes(double(ctx.kv_bytes())) + " reserved";
    if constexpr (muninn::detail::detected_v<std::decay_t<decltype(ctx.kv_storage())>, used_bytes_t>) {
      const double used = double(ctx.kv_storage().used_bytes());  // recursion-wise: only what tokens ran
      kv += ", " + human_bytes(used) + " held (" + human_bytes(ctx.length() ? used / double(ctx.length()) : 0.0) +
            "/token)";
    }
    out.notes.push_back(kv);
    if (routed) out.depths = ctx.steps_used();
    return out;
  }

  std::vector<generation> generate_batch(const std::vector<std::vector<std::int32_t>>& prompts, const option_values& o,
                                         const std::vector<std::int32_t>& stops) const override {
    // What the batched decoder does not run (speculative, the parallel sampler, state dumps) runs one at a time.
    if (o.has("draft-steps") || wants_parallel(o) || o.has("dump-states") || o.has("dump"))
      return loaded_model::generate_batch(prompts, o, stops);
    for (std::size_t i = 0; i < prompts.size(); ++i)
      check_ids(prompts[i], m_.config().vocab_size, "prompt " + std::to_string(i));
    const generate_options g = generate_options_from(m_, o, stops);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      const std::int64_t total = std::int64_t(prompts[i].size()) + g.max_new_tokens;
      if (total > m_.config().block_size)
        fail_as(error_kind::usage, "prompt ", i, " of ", prompts[i].size(), " tokens + ", g.max_new_tokens,
                " new tokens = ", total, " exceeds the model's context (block_size ", m_.config().block_size, ")");
    }
    std::vector<generation> out;
    for (auto& r : muninn::generate_batch(m_, prompts, g)) {
      generation x;
      x.tokens = std::move(r.tokens);
      x.steps = std::move(r.steps);
      x.stop_reason = !x.tokens.empty() && std::find(stops.begin(), stops.end(), x.tokens.back()) != stops.end()
                          ? "stop"
                          : "length";
      out.push_back(std::move(x));
    }
    return out;
  }

  std::unique_ptr<batch_engine> batch(const batch_limits& limits) const override { return make_batch_(m_, limits); }

  score_result score(const std::vector<std::vector<std::int32_t>>& seqs, const option_values& o,
                     const progress_fn& progress) const override {
    run_options run = run_options_from(m_, o);
    const std::int64_t V = m_.config().vocab_size;
    score_result s;
    if (routed) s.routing = run.routing == routing_mode::scoring ? "scoring" : "causal";
    double nll = 0;
    for (const auto& ids : seqs) {
      check_ids(ids, V, o.spelled("data"));
      if (ids.size() < 2) fail_as(error_kind::usage, o.spelled("data"), ": a sequence of 1 token has nothing to predict");
      std::vector<std::int32_t> depths;
      run.depths = &depths;
      const std::vector<float> logits = m_.forward(ids, run);
      for (std::size_t t = 0; t + 1 < ids.size(); ++t) {
        const float* row = logits.data() + std::int64_t(t) * V;
        double mx = row[0], sum = 0;
        for (std::int64_t v = 1; v < V; ++v) mx = std::max(mx, double(row[v]));
        for (std::int64_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - mx);
        nll += mx + std::log(sum) - double(row[ids[t + 1]]);
        ++s.predicted;
      }
      if (routed)
        for (auto d : depths) {
          if (s.depth_counts.size() <= std::size_t(d)) s.depth_counts.resize(std::size_t(d) + 1, 0);
          ++s.depth_counts[std::size_t(d)];
        }
      s.tokens += std::int64_t(ids.size());
      ++s.sequences;
      if (progress) progress(s.sequences, std::int64_t(seqs.size()));
    }
    s.nll = nll / double(s.predicted);
    return s;
  }

  brier_report brierlm(const std::vector<std::int32_t>& stream, const option_values& o,
                       const brier_block_fn& on_block) const override {
    brierlm_options b = brier_options_from(o, m_.config().block_size);
    run_options run = run_options_from(m_, o);
    run.routing = routing_mode::causal;  // rollouts decode: only the causal rule is the same model teacher-forced
    return run_brier(stream, o, b, on_block, m_.config().vocab_size,
                     [&](const std::vector<std::int32_t>& block, const brier_draws& d) {
                       return model_brier_block(m_, block, run, d);
                     });
  }

 private:
  static constexpr bool routed = Model::router_policy::routes;
  bool recurrent() const { return !routed && m_.config().n_layers_in_recurrent_block > 0; }

  static std::string stop_reason(const std::vector<std::int32_t>& tokens, const generate_options& g,
                                 const generate_callbacks& cb, const std::vector<std::int32_t>& stops) {
    if (!tokens.empty() && std::find(stops.begin(), stops.end(), tokens.back()) != stops.end()) return "stop";
    if (std::int64_t(tokens.size()) < g.max_new_tokens && cb.cancelled && cb.cancelled()) return "cancelled";
    return "length";
  }

  generation generate_parallel_(const std::vector<std::int32_t>& prompt, const option_values& o,
                                const generate_options& g, const generate_callbacks& cb) const {
    const parallel_options p = parallel_from(o, m_.config());
    const parallel_result r = generate_parallel(m_, prompt, g, p);
    generation out;
    out.tokens = r.tokens;
    out.steps = r.steps;
    out.stop_reason = "length";
    out.notes.push_back("parallel sampler: " + std::to_string(r.diffusion_steps) + " steps, " +
                        std::to_string(r.core_passes) + " core passes, " + std::to_string(r.tokens_forward) +
                        " token-recurrences, " + std::to_string(r.cache_clears) + " KV entries recomputed, " +
                        std::to_string(r.standing_waves) + " standing waves");
    if (cb.on_tokens) cb.on_tokens(r.tokens);  // the wave finalises tokens out of order: all at the end
    return out;
  }

  Model m_;
  lm_extras x_;
  batch_maker<Model> make_batch_;
};

}  // namespace muninn::frontend::detail
