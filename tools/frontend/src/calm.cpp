// The CALM family in the front-end library: a CALM model (K tokens per step through the energy
// head and the chunk autoencoder) or an autoencoder folder on its own (`muninn ae`).

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <sstream>

#include "lm_adapter.hpp"
#include "muninn/families/calm/model.hpp"
#include "muninn/runtime/calm_brier.hpp"
#include "muninn/runtime/calm_generate.hpp"

namespace muninn::frontend {
namespace {

using calm_host = calm_model<host_backend, float>;
using ae_host = chunk_autoencoder<host_backend, float>;

using detail::str;

// The chunk autoencoder, on the model's own autoencoder or a folder's. Inputs are checked here
// (usage errors) before the autoencoder's own checks could report them as internal errors.
class calm_ae final : public calm_extras {
 public:
  explicit calm_ae(const ae_host* ae) : ae_(ae) {}
  std::int64_t patch_size() const override { return ae_->config().patch_size; }
  std::int64_t latent_size() const override { return ae_->config().latent_size; }
  std::vector<std::int32_t> reconstruct(const std::vector<std::int32_t>& ids) const override {
    check_chunks(ids);
    return ae_->reconstruct(ids);
  }
  std::vector<float> encode(const std::vector<std::int32_t>& ids) const override {
    check_chunks(ids);
    return ae_->encode(ids);
  }
  std::vector<float> decode_logits(const std::vector<float>& z) const override {
    check_latents(z);
    return ae_->decode_logits(z);
  }
  std::vector<std::int32_t> decode(const std::vector<float>& z) const override {
    check_latents(z);
    return ae_->decode(z);
  }
  std::int64_t pad_id() const override { return ae_->config().pad_id; }
  const std::string& autoencoder_source() const override { return ae_->config().source; }

 private:
  void check_chunks(const std::vector<std::int32_t>& ids) const {
    const std::int64_t K = patch_size(), V = ae_->config().vocab_size;
    if (ids.empty() || std::int64_t(ids.size()) % K != 0)
      fail_as(error_kind::usage, "the autoencoder's input: ", ids.size(), " tokens is not a positive multiple of the "
              "chunk size ", K);
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || ids[i] >= V)
        fail_as(error_kind::usage, "the autoencoder's input: token id ", ids[i], " at index ", i,
                " is out of range for vocab_size ", V);
  }
  void check_latents(const std::vector<float>& z) const {
    const std::int64_t l = latent_size();
    if (z.empty() || std::int64_t(z.size()) % l != 0)
      fail_as(error_kind::usage, "the latents: ", z.size(), " values is not a positive multiple of the latent size ", l);
    for (std::size_t i = 0; i < z.size(); ++i)
      if (!std::isfinite(z[i])) fail_as(error_kind::usage, "the latents: value ", i, " is ", z[i]);
  }
  const ae_host* ae_;
};

void check_prompt(const std::vector<std::int32_t>& ids, std::int64_t vocab) {
  if (ids.empty()) fail_as(error_kind::usage, "the prompt is empty");
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      fail_as(error_kind::usage, "the prompt: token id ", ids[i], " at index ", i, " is out of range for vocab_size ", vocab);
}

// The ids right-padded with [PAD] to whole chunks, as the reference pads a prompt.
std::vector<std::int32_t> padded_prompt(std::vector<std::int32_t> ids, const calm_config& c, const char* what) {
  const std::size_t K = std::size_t(c.patch_size);
  if (ids.size() % K == 0) return ids;
  if (c.pad_id < 0)
    fail_as(error_kind::usage, what, " of ", ids.size(), " tokens needs padding to a multiple of ", K,
            " but the config has no pad_token_id");
  ids.resize((ids.size() / K + 1) * K, std::int32_t(c.pad_id));
  return ids;
}

// --noise FILE.npy: float32 [steps, S, noise_size], step s feeding the s-th generated chunk.
std::vector<float> read_given_noise(const std::string& path, std::int64_t S, std::int64_t noise_size, bool used,
                                    const std::string& flag) {
  io::npy_array<float> a = as_kind(error_kind::usage, [&] { return io::read_npy_f32(path); });
  if (used && (a.shape.size() != 3 || a.shape[0] < 1 || a.shape[1] != S || a.shape[2] != noise_size))
    fail_as(error_kind::usage, flag, " ", path, ": shape ", io::detail::shape_text(a.shape), ", expected (steps, ", S,
            ", ", noise_size, "): steps >= 1, ", S == 1 ? "1 head sample per step at T = 1" : "--num-samples per step",
            ", the model's noise_size");
  return std::move(a.data);
}

// --uniforms FILE.npy: float64 [steps], each in [0, 1).
std::vector<double> read_given_uniforms(const std::string& path, const std::string& flag) {
  io::npy_array<double> a = as_kind(error_kind::usage, [&] { return io::read_npy_f64(path); });
  if (a.shape.size() != 1 || a.shape[0] < 1)
    fail_as(error_kind::usage, flag, " ", path, ": shape ", io::detail::shape_text(a.shape), ", expected (steps,)");
  for (std::size_t i = 0; i < a.data.size(); ++i)
    if (!(a.data[i] >= 0.0 && a.data[i] < 1.0))
      fail_as(error_kind::usage, flag, " ", path, ": value ", i, " is ", a.data[i], ", outside [0, 1)");
  return std::move(a.data);
}

// The generate options of a CALM request, checked before any work (the sampler's temperature rule).
calm_generate_options calm_options_from(const calm_host& m, const std::vector<std::int32_t>& prompt,
                                        const option_values& o) {
  calm_generate_options g;
  const std::int64_t K = m.patch_size();
  const std::int64_t padded = (std::int64_t(prompt.size()) + K - 1) / K * K;
  g.max_length = padded + o.integer("max-new-tokens");
  g.temperature = o.number("temperature");
  const std::string sampler = o.choice("sampler", "approx");
  if (sampler != "approx" && sampler != "exact")
    fail_as(error_kind::usage, o.spelled("sampler"), " ", sampler, " applies to Huginn checkpoints; CALM samples "
            "chunks with approx or exact");
  g.sampler = sampler == "exact" ? calm_sampler::exact : calm_sampler::approximate;
  g.num_samples = o.integer("num-samples");
  g.max_draws = o.integer("max-draws");
  g.seed = std::uint64_t(o.integer("seed"));
  g.order = o.choice("chunk-order") == "reference" ? chunk_order::reference : chunk_order::key;
  const bool batch = g.temperature != 1.0 && g.sampler == calm_sampler::approximate;
  if (o.has("noise"))  // the exact sampler takes none: check_calm_options below says so
    g.noise = read_given_noise(o.text("noise"), batch ? g.num_samples : 1, m.config().noise_size,
                               batch || g.temperature == 1.0, o.spelled("noise"));
  if (o.has("uniforms")) g.uniforms = read_given_uniforms(o.text("uniforms"), o.spelled("uniforms"));
  as_kind(error_kind::usage, [&] {
    muninn::detail::check_calm_options(g, m.config().noise_size);
    return 0;
  });
  return g;
}

// CALM's batch engine: each request keeps its own backbone context and draws its chunks as
// generate_calm does; a step advances every request by one chunk (the first step of a request
// reads its whole padded prompt).
class calm_batch final : public batch_engine {
 public:
  calm_batch(calm_host& m, const batch_limits& lim) : m_(m), lim_(lim) {}

  void check(const std::vector<std::int32_t>& prompt, const option_values& o) const override {
    (void)plan(prompt, o);
  }

  std::int64_t add(const std::vector<std::int32_t>& prompt, const option_values& o,
                   const std::vector<std::int32_t>&) override {
    request r = plan(prompt, o);
    r.id = next_id_;
    r.ctx = std::make_unique<calm_host::context_type>(m_.make_context(r.chunks, std::int64_t(r.padded.size()) / r.K));
    reqs_.push_back(std::move(r));
    return next_id_++;
  }

  std::vector<batch_output> step() override {
    stats_ = {};
    std::vector<batch_output> out;
    const calm_config& c = m_.config();
    for (request& r : reqs_) {
      const bool first = r.fed == 0;
      const std::vector<std::int32_t> feed =
          first ? r.padded : std::vector<std::int32_t>(r.padded.end() - r.K, r.padded.end());
      const std::vector<float> h = m_.hidden(*r.ctx, feed, logits_for::last);
      r.fed += std::int64_t(feed.size());
      stats_.rows += std::int64_t(feed.size()) / r.K;
      if (first) stats_.prefill_tokens += std::int64_t(feed.size());
      ++stats_.requests;
      const std::int64_t p = std::int64_t(r.padded.size()) / r.K - 1;
      std::int64_t draws = 0;
      const std::vector<std::int32_t> chunk = muninn::detail::next_calm_chunk(m_, h, p, r.g, draws, r.drawn++);
      r.padded.insert(r.padded.end(), chunk.begin(), chunk.end());
      batch_output o;
      o.id = r.id;
      for (auto t : chunk)
        if (t != c.pad_id) o.tokens.push_back(t);
      o.steps.assign(o.tokens.size(), std::int32_t(draws));
      const bool eos = c.eos_id >= 0 && std::find(chunk.begin(), chunk.end(), std::int32_t(c.eos_id)) != chunk.end();
      if (eos || std::int64_t(r.padded.size()) >= r.g.max_length) {
        r.done = true;
        o.finished = true;
        o.stop_reason = eos ? "stop" : "length";
      }
      out.push_back(std::move(o));
    }
    reqs_.erase(std::remove_if(reqs_.begin(), reqs_.end(), [](const request& r) { return r.done; }), reqs_.end());
    return out;
  }

  void remove(std::int64_t id) override {
    reqs_.erase(std::remove_if(reqs_.begin(), reqs_.end(), [&](const request& r) { return r.id == id; }), reqs_.end());
  }
  std::int64_t size() const override { return std::int64_t(reqs_.size()); }
  const batch_step_stats& last_step() const override { return stats_; }

 private:
  struct request {
    std::int64_t id = 0;
    calm_generate_options g;
    std::int64_t K = 1;
    std::vector<std::int32_t> padded;  // the prompt, its padding, then the chunks drawn
    std::int64_t chunks = 0;           // chunk positions the context holds
    std::unique_ptr<calm_host::context_type> ctx;
    std::int64_t fed = 0;
    std::int64_t drawn = 0;            // chunks drawn so far (the step index of given draws)
    bool done = false;
  };

  // The request's options, its padded prompt and the chunk positions it needs, checked.
  request plan(const std::vector<std::int32_t>& prompt, const option_values& o) const {
    const calm_config& c = m_.config();
    check_prompt(prompt, c.backbone.vocab_size);
    for (const char* f : {"draft-steps", "lookahead", "dump-states", "dump", "taps"})
      if (o.has(f)) fail_as(error_kind::usage, o.spelled(f), " does not apply to CALM checkpoints");
    request r;
    r.g = calm_options_from(m_, prompt, o);
    r.K = c.patch_size;
    r.padded = prompt;
    if (prompt.size() % std::size_t(r.K) != 0) {
      if (c.pad_id < 0)
        fail_as(error_kind::usage, "the prompt of ", prompt.size(), " tokens needs padding to a multiple of ", r.K,
                " but the config has no pad_token_id");
      r.padded.resize((prompt.size() / std::size_t(r.K) + 1) * std::size_t(r.K), std::int32_t(c.pad_id));
    }
    const std::int64_t P = std::int64_t(r.padded.size()) / r.K;
    r.chunks = std::max<std::int64_t>(P + 1, (r.g.max_length + r.K - 1) / r.K);
    const std::int64_t limit = lim_.context > 0 ? std::min(lim_.context, c.backbone.block_size * r.K)
                                                : c.backbone.block_size * r.K;
    if (r.chunks * r.K > limit)
      fail_as(error_kind::usage, "the prompt of ", prompt.size(), " tokens (", P, " chunks of ", r.K, ") + ",
              o.spelled("max-new-tokens"), " ", o.integer("max-new-tokens"), " needs ", r.chunks * r.K,
              " positions; the context holds ", limit);
    return r;
  }

  calm_host& m_;
  batch_limits lim_;
  std::vector<request> reqs_;
  std::int64_t next_id_ = 1;
  batch_step_stats stats_;
};

// A CALM model: generate, BrierLM, the autoencoder.
class calm_loaded final : public loaded_model {
 public:
  calm_loaded(calm_host m, detail::lm_extras x) : m_(std::move(m)), x_(std::move(x)), ae_(&m_.autoencoder()) {}

  const model_info& info() const override { return x_.info; }
  const io::tokenizer* tokenizer() const override { return x_.tokenizer.get(); }
  bool prompt_adds_special_tokens() const override { return true; }
  std::vector<std::int32_t> eos_ids() const override { return x_.eos; }
  const calm_extras* calm() const override { return &ae_; }
  std::unique_ptr<batch_engine> batch(const batch_limits& limits) const override {
    return std::make_unique<calm_batch>(m_, limits);
  }

  // The backbone's taps (forward() hands them back by name; --dump writes them) and, for a
  // generation, each chunk's head taps.
  std::vector<tap_spec> taps() const override {
    std::vector<tap_spec> t = {{"embeddings", "the chunk compressor's output (the backbone's input), float32 [chunks, hidden]"}};
    for (std::int64_t j = 0; j < m_.config().backbone.n_layers_in_prelude; ++j)
      t.push_back({std::string(layer_group_name(layer_group::prelude)) + ".layer." + std::to_string(j),
                   "the output of backbone layer " + std::to_string(j) + ", float32 [chunks, hidden]"});
    t.push_back({"head.input", "the backbone's last hidden states before the final norm, float32 [chunks, hidden]"});
    t.push_back({"logits", "the normalised hidden states that feed the energy head (the result), float32 [chunks, hidden]"});
    return t;
  }

  forward_result forward(const std::vector<std::int32_t>& ids, const option_values& o,
                         const std::vector<std::string>& taps) const override {
    check_taps(taps);
    const calm_config& c = m_.config();
    detail::check_ids(ids, c.backbone.vocab_size, "the input");
    const std::vector<std::int32_t> padded = padded_prompt(ids, c, "the input");
    const std::int64_t n = std::int64_t(padded.size()) / c.patch_size, d = c.backbone.n_embd;
    if (n > c.backbone.block_size)
      fail_as(error_kind::usage, "the input of ", ids.size(), " tokens is ", n, " chunks of ", c.patch_size,
              "; the model's context holds ", c.backbone.block_size);
    forward_result r;
    std::optional<tap_dump> dump;
    if (wants_dump(o)) dump.emplace(o, pass_taps(false));
    // The dump takes what --taps selects; the caller's taps come back in the result.
    const tap_options to_dump = dump ? dump->options() : tap_options{};
    run_options run;
    if (dump || !taps.empty()) {
      if (!dump || !to_dump.names.empty()) {
        run.taps.names = taps;
        run.taps.names.insert(run.taps.names.end(), to_dump.names.begin(), to_dump.names.end());
      }
      run.taps.on_tap = [&](const tap_event& e) {
        if (to_dump.wants(e.name)) to_dump.on_tap(e);
        if (std::find(taps.begin(), taps.end(), e.name) != taps.end())
          r.taps[std::string(e.name)] = tap_value{{e.rows, e.cols}, std::vector<float>(e.data, e.data + e.rows * e.cols), {}};
      };
    }
    auto ctx = m_.make_context(n, n);
    r.logits = m_.hidden(ctx, padded, run, logits_for::all);
    if (dump) r.notes.push_back(dump->finish());
    r.rows = n;
    r.vocab = d;
    return r;
  }

  generation generate(const std::vector<std::int32_t>& prompt, const option_values& o,
                      const std::vector<std::int32_t>&, const generate_callbacks& cb) const override {
    check_prompt(prompt, m_.config().backbone.vocab_size);
    calm_generate_options g = calm_options_from(m_, prompt, o);
    std::optional<tap_dump> dump;
    if (wants_dump(o)) g.run.taps = dump.emplace(o, pass_taps(true)).options();
    const std::int64_t pad = m_.config().pad_id;
    bool cancelled = false;
    g.on_chunk = [&](const std::vector<std::int32_t>& chunk) {
      if (cb.on_tokens) {
        std::vector<std::int32_t> kept;
        for (auto t : chunk)
          if (t != pad) kept.push_back(t);
        cb.on_tokens(kept);
      }
      cancelled = cb.cancelled && cb.cancelled();
      return !cancelled;
    };
    const calm_generation r = generate_calm(m_, prompt, g);
    generation out;
    out.tokens.assign(r.ids.begin() + std::ptrdiff_t(std::min(prompt.size(), r.ids.size())), r.ids.end());
    out.steps.assign(r.draws.begin(), r.draws.end());
    out.stop_reason = cancelled ? "cancelled" : r.stopped_at_eos ? "eos" : "length";
    if (dump) out.notes.push_back(dump->finish());
    return out;
  }

  brier_report brierlm(const std::vector<std::int32_t>& stream, const option_values& o,
                       const brier_block_fn& on_block) const override {
    const std::int64_t K = m_.patch_size();
    brierlm_options b = detail::brier_options_from(o, m_.config().backbone.block_size * K);
    if (b.block_size % K != 0)
      fail_as(error_kind::usage, o.spelled("block-size"), " ", b.block_size, " is not a multiple of the chunk size ", K);
    return detail::run_brier(stream, o, b, on_block, m_.config().backbone.vocab_size,
                             [&](const std::vector<std::int32_t>& block, const brier_draws& d) {
                               return calm_brier_block(m_, block, d);
                             });
  }

 private:
  // The names --dump knows: the backbone's taps, and for a generation the head's per chunk.
  std::vector<std::string> pass_taps(bool generation) const {
    std::vector<std::string> t;
    for (const tap_spec& s : taps()) t.push_back(s.name);
    if (generation)
      for (const char* h : {"head.samples", "head.latent", "ae.logits"}) t.push_back(h);
    return t;
  }

  mutable calm_host m_;  // its scratch buffers change on every call; calls on one model do not overlap
  detail::lm_extras x_;
  calm_ae ae_;
};

// An autoencoder folder on its own: only `muninn ae` runs it.
class ae_loaded final : public loaded_model {
 public:
  ae_loaded(ae_host ae, detail::lm_extras x) : ae_(std::move(ae)), x_(std::move(x)), extras_(&ae_) {}
  const model_info& info() const override { return x_.info; }
  const io::tokenizer* tokenizer() const override { return x_.tokenizer.get(); }
  bool prompt_adds_special_tokens() const override { return true; }
  const calm_extras* calm() const override { return &extras_; }

 private:
  ae_host ae_;
  detail::lm_extras x_;
  calm_ae extras_;
};

bool is_autoencoder_folder(const model_folder& f) { return f.config && io::is_autoencoder_config(*f.config); }

model_info calm_info(const model_folder& f, calm_host& m) {
  const calm_config& c = m.config();
  const model_config& b = c.backbone;
  const autoencoder_config& a = m.autoencoder().config();
  model_info info;
  info.family = calm_family::name;
  info.display = calm_family::display;
  info.path = f.path;
  info.vocab_size = b.vocab_size;
  info.context = b.block_size * c.patch_size;
  info.parameters = m.parameter_count();
  const std::int64_t kv = b.n_layers_in_prelude * 2 * (b.n_kv_heads > 0 ? b.n_kv_heads : b.n_heads) * b.head_dim * 4;
  detail::add_field(info, "model", f.path);
  detail::add_field(info, "family", "calm (energy head; config.json has no model_type)");
  detail::add_field(info, "chunk", str(c.patch_size, " tokens per step, latent ", c.latent_size));
  detail::add_field(info, "block", "pre_norm (Llama backbone over chunk positions)");
  detail::add_field(info, "head", str("energy head, ", c.mlp_blocks, " blocks, noise ", c.noise_size));
  detail::add_field(info, "autoencoder", str("hidden ", a.hidden_size, ", layers ", a.encoder_layers, "+",
                                             a.decoder_layers, " (", a.source, ")"));
  detail::add_field(info, "hidden", str(b.n_embd));
  detail::add_field(info, "heads", str(b.n_heads, " (kv ", b.n_kv_heads, ", head_dim ", b.head_dim, ")"));
  detail::add_field(info, "mlp", str(b.intermediate_size));
  detail::add_field(info, "vocab", str(b.vocab_size, " (pad ", c.pad_id, ", eos ", c.eos_id, ")"));
  detail::add_field(info, "layers", str(b.n_layers_in_prelude));
  detail::add_field(info, "max positions", str(b.block_size, " chunks (", b.block_size * c.patch_size, " tokens)"));
  detail::add_field(info, "parameters", str(m.parameter_count(), " (autoencoder ", m.autoencoder().parameter_count(),
                                            " apart)"));
  detail::add_field(info, "memory fp32",
                    detail::human_bytes(double(m.parameter_count() + m.autoencoder().parameter_count()) * 4) +
                        " (host backend)");
  detail::add_field(info, "kv cache fp32", str(detail::human_bytes(double(kv)), " per chunk of ", c.patch_size,
                                               " tokens (", b.n_layers_in_prelude, " slots)"));
  return info;
}

}  // namespace

std::vector<std::int32_t> calm_extras::padded(std::vector<std::int32_t> ids) const {
  const std::size_t K = std::size_t(patch_size());
  if (ids.size() % K == 0) return ids;
  if (pad_id() < 0)
    fail_as(error_kind::usage, autoencoder_source(), ": ", ids.size(), " tokens need padding to a multiple of ", K,
            " but the config has no pad_token_id");
  ids.resize((ids.size() / K + 1) * K, std::int32_t(pad_id()));
  return ids;
}

bool calm_family::recognizes(const model_folder& f) {
  return f.config && (io::is_calm_config(*f.config) || io::is_autoencoder_config(*f.config));
}

std::string calm_family::redirect(operation op) {
  switch (op) {
    case operation::score:
      return "a CALM checkpoint has no next-token logits (its energy head samples whole chunks): use muninn generate, "
             "muninn eval --metric brierlm or muninn ae";
    case operation::demo:
      return "a CALM checkpoint has no demo: muninn demo runs the shipped demo models (examples/models/demo, mor_demo, "
             "trm_sudoku); try muninn generate --model DIR --tokens IDS --max-new-tokens N";
    case operation::solve:
      return "a CALM checkpoint: muninn solve runs TRM / HRM run folders; use muninn generate";
    default: return "";
  }
}

std::unique_ptr<loaded_model> calm_family::load(const model_folder& f, const option_values& o) {
  const detail::device_choice dev = detail::device_of(o);  // no --device for this family: the host
  const weight_format weights = dev.weights;
  if (is_autoencoder_folder(f)) {
    if (weights != weight_format::f32)
      fail_as(error_kind::usage, "'", f.dir, "' is a CALM autoencoder on its own, which runs in fp32; ",
              weight_format_name(weights), " applies to a CALM model's backbone");
    if (o.op() != operation::ae && o.op() != operation::info && o.op() != operation::load)
      fail_as(error_kind::usage, "'", f.dir, "' is a CALM autoencoder on its own: muninn ae runs it; give the CALM "
              "model's folder (with --ae ", f.dir, ") to ", operation_name(o.op()));
    ae_host ae = as_kind(error_kind::checkpoint, [&] { return ae_host::load(f.dir); });
    detail::lm_extras x;
    model_info& info = x.info;
    info.family = calm_family::name;
    info.display = "CALM autoencoder";
    info.path = f.path;
    info.vocab_size = ae.config().vocab_size;
    info.parameters = ae.parameter_count();
    detail::add_field(info, "model", f.path);
    detail::add_field(info, "family", "calm autoencoder (no backbone: muninn ae runs it)");
    detail::add_field(info, "chunk", str(ae.config().patch_size, " tokens per latent of ", ae.config().latent_size));
    detail::add_field(info, "vocab", str(ae.config().vocab_size));
    detail::add_field(info, "parameters", str(ae.parameter_count()));
    detail::read_text_files(f, x);
    return std::make_unique<ae_loaded>(std::move(ae), std::move(x));
  }
  const std::string ae_dir = find_option(o.op(), "ae") && o.has("ae") ? o.text("ae", "") : "";
  calm_host m =
      as_kind(error_kind::checkpoint, [&] { return calm_host::load(f.dir, ae_dir, detail::host_backend_of(dev)); });
  as_kind(error_kind::checkpoint, [&] { m.store_weights_as(weights); });
  detail::lm_extras x;
  x.info = calm_info(f, m);
  const std::size_t ae_bytes = std::size_t(m.autoencoder().parameter_count()) * sizeof(float);
  detail::add_weights_field(x.info, weights, m.weight_bytes() + ae_bytes, "backbone projections",
                            "compressor, energy head, autoencoder, norms, embedding");
  detail::read_text_files(f, x);
  return std::make_unique<calm_loaded>(std::move(m), std::move(x));
}

}  // namespace muninn::frontend
