#pragma once
// `muninn forward` and `muninn generate` once a model is loaded, written once over the model type:
// main.cpp runs them on the host model, cuda_commands.cu (built with CUDA) on the CUDA models.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cli_args.hpp"
#include "muninn/io/tokenizer.hpp"
#include "muninn/muninn.hpp"

namespace muninn::cli {

/// \brief "1,2,3".
inline std::string join_ids(const std::vector<std::int32_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

/// \brief 1536 → "1.50 KiB".
inline std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  std::ostringstream os;
  os.precision(u ? 2 : 0);
  os << std::fixed << b << " " << units[u];
  return os.str();
}

/// \brief Where forward/generate run: `--device cpu|cuda`, `--dtype fp32|bf16`.
struct device_choice {
  bool cuda = false;  ///< --device cuda
  bool bf16 = false;  ///< --dtype bf16 (CUDA only)
};

/// \brief Reads --device and --dtype (defaults cpu, fp32) and rejects what this build cannot run.
inline device_choice parse_device(const args& a) {
  const std::string dev = a.get("--device", "cpu"), dt = a.get("--dtype", "fp32");
  MUNINN_CHECK(dev == "cpu" || dev == "cuda", "--device must be cpu or cuda, got '", dev, "'");
  MUNINN_CHECK(dt == "fp32" || dt == "bf16", "--dtype must be fp32 or bf16, got '", dt, "'");
  device_choice c;
  c.cuda = dev == "cuda";
  c.bf16 = dt == "bf16";
  MUNINN_CHECK(c.cuda || !c.bf16, "--dtype bf16 needs --device cuda (the host backend computes in fp32)");
#if !defined(MUNINN_CLI_CUDA)
  MUNINN_CHECK(!c.cuda, "this muninn was built without CUDA (configure with -DMUNINN_ENABLE_CUDA=ON)");
#endif
  return c;
}

/// \brief --steps, --init-state, --seed.
inline run_options run_options_from(const args& a, const model_config& cfg) {
  run_options opt;
  const bool routed = cfg.mor.recursions > 0;
  MUNINN_CHECK(!routed || !a.has("--steps"), "--steps does not apply to a Mixture-of-Recursions model: its routers "
               "choose each token's depth (at most mor.num_recursion = ", cfg.mor.recursions, ")");
  MUNINN_CHECK(routed || !(a.has("--routing") || a.has("--show-depths")),
               a.has("--routing") ? "--routing" : "--show-depths", " applies to Mixture-of-Recursions checkpoints");
  const std::string routing = a.get("--routing", "causal");
  MUNINN_CHECK(routing == "causal" || routing == "scoring", "--routing must be causal or scoring, got '", routing, "'");
  opt.routing = routing == "scoring" ? routing_mode::scoring : routing_mode::causal;
  opt.steps = a.get_int_min("--steps", cfg.mean_recurrence, 0);
  const std::string init = a.get("--init-state", "random");
  if (init == "zero")
    opt.init = state_init::zero{};
  else if (init == "random")
    opt.init = state_init::truncated_normal{};
  else
    fail("--init-state must be zero or random, got '", init, "'");
  opt.seed = std::uint64_t(a.get_int_min("--seed", 0, 0));
  return opt;
}

/// \brief --kv-budget, --kv-fallback and the context size.
inline context_limits context_from(const args& a, const model_config& cfg, std::int64_t tokens, std::int64_t steps) {
  context_limits lim;
  lim.max_tokens = tokens;
  lim.max_steps = steps;
  lim.kv_budget = a.get_int_min("--kv-budget", 0, 0);
  const std::string fb = a.get("--kv-fallback", "latest");
  if (fb == "latest")
    lim.fallback = kv_fallback::latest;
  else if (fb == "none")
    lim.fallback = kv_fallback::none;
  else
    fail("--kv-fallback must be latest or none, got '", fb, "'");
  MUNINN_CHECK(tokens <= cfg.block_size, "prompt + new tokens = ", tokens, " exceeds block_size ", cfg.block_size);
  return lim;
}

/// \brief `muninn forward` on a loaded model: logits of every position (optionally to --output).
template <class Model>
int forward_with(const Model& m, const args& a, const std::vector<std::int32_t>& ids) {
  run_options opt = run_options_from(a, m.config());
  std::vector<std::int32_t> depths;
  opt.depths = &depths;
  const std::vector<float> logits = m.forward(ids, opt);
  const std::int64_t V = m.config().vocab_size;
  if (a.has("--output")) {
    io::write_npy(a.get("--output"), logits.data(), {std::int64_t(ids.size()), V});
    std::cout << "wrote " << a.get("--output") << " [" << ids.size() << ", " << V << "] float32\n";
  }
  std::vector<std::int32_t> top;
  for (std::size_t i = 0; i < ids.size(); ++i) top.push_back(argmax_host(logits.data() + std::int64_t(i) * V, V));
  std::cout << "steps=" << opt.steps << " tokens=" << ids.size() << " vocab=" << V << "\n";
  std::cout << "argmax per position: " << join_ids(top) << "\n";
  if (a.has("--show-depths")) std::cout << "depth per position: " << join_ids(depths) << "\n";
  return 0;
}

/// \brief The sequences of `muninn score --data FILE`: lines of token ids (comma or space
/// separated), or text lines encoded with the checkpoint's tokenizer.json (`add_special`: with
/// its post-processor's special tokens, as transformers' `tokenizer(text)` encodes by default).
/// With `json_lines`, a file whose lines all start with '{' holds JSON objects whose "text"
/// string is the document (the JSON-lines layout of Hugging Face datasets).
inline std::vector<std::vector<std::int32_t>> score_sequences(const std::string& file, const std::string& dir,
                                                              bool add_special = false, bool json_lines = false) {
  std::string text;
  try {
    text = io::read_text_file(file);  // refuses a FIFO or a device before it can block
  } catch (const error& e) {
    fail("--data: ", e.what());
  }
  std::istringstream in(text);
  std::vector<std::string> lines;
  bool ids = true;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ids = ids && line.find_first_not_of("0123456789, \t\r") == std::string::npos;
    lines.push_back(line);
  }
  MUNINN_CHECK(!lines.empty(), "--data: '", file, "' holds no sequence");
  std::vector<std::vector<std::int32_t>> seqs;
  if (ids) {
    for (auto line : lines) {
      std::replace(line.begin(), line.end(), ' ', ',');
      std::string compact;
      for (char c : line) {
        if (c == '\t' || c == '\r') c = ',';
        if (c == ',' && (compact.empty() || compact.back() == ',')) continue;
        compact += c;
      }
      if (!compact.empty() && compact.back() == ',') compact.pop_back();
      seqs.push_back(args::parse_ids(compact, "--data"));
    }
    return seqs;
  }
  if (json_lines && std::all_of(lines.begin(), lines.end(), [](const std::string& l) {
        return l[l.find_first_not_of(" \t\r")] == '{';
      })) {
    for (auto& line : lines) {
      const std::string where = file + ":" + std::to_string(&line - lines.data() + 1);
      const io::json doc = io::parse_json(line, where);
      const io::json* text = doc.is_object() ? doc.find("text") : nullptr;
      MUNINN_CHECK(text && text->is_string(), "--data: ", where, ": a JSON line needs a \"text\" string");
      line = text->as_string();
    }
  }
  const std::string tj = dir + "/tokenizer.json";
  MUNINN_CHECK(std::filesystem::exists(tj), "--data: '", file, "' is text, and ", tj,
               " does not exist to encode it (give token ids instead)");
  const io::tokenizer tok = io::tokenizer::from_file(tj);
  for (const auto& line : lines) seqs.push_back(tok.encode(line, add_special));
  return seqs;
}

/// \brief `muninn score`: mean next-token NLL over every sequence of --data (scoring-mode
/// routing for a Mixture-of-Recursions model unless --routing causal), and how many
/// recursions the tokens ran.
template <class Model>
int score_with(const Model& m, const args& a, const std::string& dir) {
  const auto seqs = score_sequences(a.require("--data"), dir);
  run_options opt = run_options_from(a, m.config());
  if (m.config().mor.recursions > 0 && !a.has("--routing")) opt.routing = routing_mode::scoring;
  const std::int64_t V = m.config().vocab_size;
  double nll = 0;
  std::int64_t predicted = 0, tokens = 0;
  std::vector<std::int64_t> hist;
  for (const auto& ids : seqs) {
    MUNINN_CHECK(ids.size() >= 2, "--data: a sequence of ", ids.size(), " token has nothing to predict");
    std::vector<std::int32_t> depths;
    opt.depths = &depths;
    const std::vector<float> logits = m.forward(ids, opt);
    for (std::size_t t = 0; t + 1 < ids.size(); ++t) {
      const float* row = logits.data() + std::int64_t(t) * V;
      double mx = row[0], sum = 0;
      for (std::int64_t v = 1; v < V; ++v) mx = std::max(mx, double(row[v]));
      for (std::int64_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - mx);
      nll += mx + std::log(sum) - double(row[ids[t + 1]]);
      ++predicted;
    }
    for (auto d : depths) {
      if (hist.size() <= std::size_t(d)) hist.resize(std::size_t(d) + 1, 0);
      ++hist[std::size_t(d)];
    }
    tokens += std::int64_t(ids.size());
  }
  std::cout << "sequences=" << seqs.size() << " tokens=" << tokens << " predicted=" << predicted << "\n";
  std::cout << "nll=" << std::fixed << std::setprecision(6) << nll / double(predicted)
            << " ppl=" << std::exp(nll / double(predicted)) << "\n";
  if (m.config().mor.recursions > 0) {
    std::cout << "depth histogram (" << (opt.routing == routing_mode::scoring ? "scoring" : "causal") << " routing):";
    for (std::size_t d = 1; d < hist.size(); ++d)
      std::cout << " " << d << ":" << hist[d] << " (" << std::setprecision(1) << 100.0 * double(hist[d]) / double(tokens)
                << "%)";
    std::cout << "\n";
  }
  return 0;
}

/// \brief --exit, named as the flag (the library's message would not say which flag was wrong).
inline halt_criterion exit_criterion_from(const args& a) {
  const std::string s = a.get("--exit", "none");
  try {
    return parse_halt_criterion(s);
  } catch (const error&) {
    fail("--exit must be none, kl, entropy-diff, latent-diff, argmax-stable or cosine, got '", s, "'");
  }
}

/// \brief --exit, --exit-threshold, --min-steps, --max-steps, --check-every; `steps` is --steps.
inline halting_options halting_from(const args& a, std::int64_t steps) {
  halting_options h;
  h.criterion = exit_criterion_from(a);
  // Unset keeps -1, the library's "the criterion's default threshold".
  h.threshold = a.has("--exit-threshold") ? a.get_double_min("--exit-threshold", 0, 0) : -1;
  h.max_steps = a.get_int_min("--max-steps", steps, 0);
  h.min_steps = a.get_int_min("--min-steps", 0, 0);
  MUNINN_CHECK(h.min_steps <= h.max_steps, "--min-steps ", h.min_steps, " exceeds --max-steps ", h.max_steps,
               a.has("--max-steps") ? "" : " (its default, the --steps depth)");
  h.check_every = a.get_int_min("--check-every", 1, 1);
  const std::string parity = a.get("--exit-parity", "muninn");
  MUNINN_CHECK(parity == "muninn" || parity == "reference", "--exit-parity must be muninn or reference, got '",
               parity, "'");
  if (parity == "reference") h.reference_parity();
  if (a.has("--prefill-exit")) h.prefill = parse_prefill_exit(a.get("--prefill-exit"));
  MUNINN_CHECK(h.criterion != halt_criterion::none || !(a.has("--exit-parity") || a.has("--prefill-exit")),
               a.has("--exit-parity") ? "--exit-parity" : "--prefill-exit", " needs an --exit criterion");
  return h;
}

/// \brief --warm-start.
inline warm_start warm_start_from(const args& a) {
  const std::string warm = a.get("--warm-start", "none");
  if (warm == "raw") return warm_start::raw;
  if (warm == "normalized") return warm_start::normalized;
  MUNINN_CHECK(warm == "none", "--warm-start must be raw or normalized, got '", warm, "'");
  return warm_start::none;
}

/// \brief --greedy and the sampling flags, checked here so that errors name the flag.
inline sampling_params sampling_from(const args& a, std::uint64_t seed) {
  sampling_params s;
  s.greedy = a.has("--greedy") || !(a.has("--temperature") || a.has("--top-k") || a.has("--top-p") ||
                                     a.has("--min-p") || a.has("--repetition-penalty"));
  s.temperature = float(a.get_double_min("--temperature", 1.0, 0));
  s.top_k = int(a.get_int_min("--top-k", 0, 0));
  s.top_p = float(a.get_double("--top-p", 1.0));
  MUNINN_CHECK(s.top_p > 0 && s.top_p <= 1, "--top-p must be in (0, 1], got ", a.get("--top-p"));
  s.min_p = float(a.get_double_in("--min-p", 0.0, 0, 1));
  s.repetition_penalty = float(a.get_double("--repetition-penalty", 1.0));
  MUNINN_CHECK(std::isfinite(s.repetition_penalty) && s.repetition_penalty > 0,
               "--repetition-penalty must be a number > 0, got ", a.get("--repetition-penalty"));
  s.seed = seed;
  return s;
}

/// \brief --draft-steps and --lookahead, with the combinations speculative decoding rules out.
inline void speculative_from(const args& a, generate_options& g) {
  MUNINN_CHECK(!a.has("--lookahead") || a.has("--draft-steps"), "--lookahead needs --draft-steps");
  if (!a.has("--draft-steps")) return;
  g.draft_steps = a.get_int_min("--draft-steps", 0, 1);
  g.lookahead = a.get_int_min("--lookahead", 8, 1);
  MUNINN_CHECK(g.sampling.greedy, "--draft-steps verifies by argmax: drop the sampling flags or add --greedy");
  MUNINN_CHECK(g.run.warm == warm_start::none, "--draft-steps does not combine with --warm-start");
}

/// \brief --stop, each id inside the vocabulary.
inline std::vector<std::int32_t> stop_ids_from(const args& a, std::int64_t vocab) {
  if (!a.has("--stop")) return {};
  const auto ids = args::parse_ids(a.get("--stop"), "--stop");
  for (auto id : ids)
    MUNINN_CHECK(id >= 0 && id < vocab, "--stop: token id ", id, " is out of range for vocab_size ", vocab);
  return ids;
}

/// \brief Every generate flag but the prompt, the device and --dump-states, validated.
inline generate_options generate_options_from(const args& a, const model_config& cfg, std::int64_t max_new) {
  generate_options g;
  g.run = run_options_from(a, cfg);
  g.max_new_tokens = max_new;
  g.run.halt = halting_from(a, g.run.steps);
  if (g.run.halt.criterion != halt_criterion::none) g.run.steps = g.run.halt.max_steps;
  g.run.warm = warm_start_from(a);
  g.sampling = sampling_from(a, g.run.seed);
  speculative_from(a, g);
  g.stop_ids = stop_ids_from(a, cfg.vocab_size);
  return g;
}

/// \brief `--dump-states`: the latent trajectory of every position the run fed through the model.
///
/// The layout (generate --help and docs/inference.md say the same): float32 [rows, S, h] with
/// S = the deepest recurrence the run allows. A pass over a position starts at step 0 and clears
/// that row first, so a row holds the last pass over its position (with --draft-steps: the
/// verification), NaN at steps it did not run. The last generated token is never fed back, so
/// P prompt + G new tokens give P + G - 1 rows; a rejected draft may have run at position
/// P + G - 1 with another token, which is why the rows are cut there and not at the last run.
class state_dump {
 public:
  state_dump(std::int64_t max_positions, std::int64_t max_steps, std::int64_t h)
      : P_(max_positions), S_(max_steps), h_(h),
        states_(std::size_t(max_positions * max_steps * h), std::numeric_limits<float>::quiet_NaN()) {}

  /// \brief The run_options::on_step hook that records into this dump.
  step_hook hook() {
    return [this](std::int64_t pos, std::int64_t step, const float* x) { record(pos, step, x); };
  }
  /// \brief Writes the rows of the positions fed with their final token: the prompt and all
  /// generated tokens but the last.
  void write(const std::string& path, std::int64_t prompt, std::int64_t generated) const {
    const std::int64_t rows = std::min(ran_, generated > 0 ? prompt + generated - 1 : prompt);
    io::write_npy(path, states_.data(), {rows, S_, h_});
    std::cerr << "muninn: wrote " << path << " [" << rows << ", " << S_ << ", " << h_
              << "] float32 (positions, steps, hidden)\n";
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

/// \brief The KV budget a --cache-lookup name stands for: "full" keeps every recurrence (0);
/// "[latest-m4-]compress-s<N>" keeps N layer slots of the core, i.e. N / core layers recurrences
/// (the reference's names; its "s4" is one recurrence of Huginn-0125's 4-layer core).
inline std::int64_t kv_budget_of_lookup(const std::string& name, const model_config& cfg) {
  if (name == "full") return 0;
  const std::string tag = "compress-s";
  const auto at = name.find(tag);
  MUNINN_CHECK(at != std::string::npos && (at == 0 || name.substr(0, at) == "latest-m4-"),
               "--cache-lookup: unknown strategy '", name, "' (full, latest-m4-compress-s<N>)");
  const std::int64_t n = args::parse_int(name.substr(at + tag.size()), "--cache-lookup");
  const std::int64_t core = cfg.n_layers_in_recurrent_block;
  MUNINN_CHECK(n >= 1 && core >= 1 && n % core == 0, "--cache-lookup ", name, ": ", n,
               " slots is not a whole number of recurrences of the ", core, "-layer core");
  return n / core;
}

/// \brief --sampler parallel and its knobs, with the combinations it rules out.
inline parallel_options parallel_from(const args& a, const model_config& cfg) {
  parallel_options p;
  p.inner_recurrence = a.get_int_min("--inner-recurrence", p.inner_recurrence, 1);
  p.headway = a.get_int_min("--headway", p.headway, 1);
  p.max_wavefront = a.get_int_min("--max-wavefront", p.max_wavefront, 0);
  p.ema_embeds = float(a.get_double_in("--ema-embeds", p.ema_embeds, 0, 1));
  p.state_noise_mixing = float(a.get_double_in("--state-noise-mixing", p.state_noise_mixing, 0, 1));
  p.dampened_state_mixer = !a.has("--constant-noise");
  p.sqrt_mixer = a.has("--sqrt-mixer");
  if (a.has("--freeze")) p.freeze = parse_freeze_rule(a.get("--freeze"));
  p.freeze_threshold = a.get_double_min("--freeze-threshold", p.freeze_threshold, 0);
  p.continuous_compute = a.has("--continuous-compute");
  if (a.has("--cache-lookup")) p.kv_budget = kv_budget_of_lookup(a.get("--cache-lookup"), cfg);
  for (const char* f : {"--exit", "--warm-start", "--draft-steps", "--kv-budget", "--kv-fallback", "--dump-states"})
    MUNINN_CHECK(!a.has(f), f, " does not apply to --sampler parallel");
  return p;
}

/// \brief Whether --sampler asks for the parallel sampler (and no parallel flag is given without it).
inline bool wants_parallel(const args& a) {
  const std::string s = a.has("--sampler") ? a.get("--sampler") : "plain";
  MUNINN_CHECK(s == "plain" || s == "parallel", "--sampler: unknown sampler '", s, "' (plain, parallel)");
  if (s == "parallel") return true;
  for (const char* f : {"--inner-recurrence", "--headway", "--max-wavefront", "--ema-embeds", "--state-noise-mixing",
                        "--constant-noise", "--sqrt-mixer", "--freeze", "--freeze-threshold", "--continuous-compute",
                        "--cache-lookup"})
    MUNINN_CHECK(!a.has(f), f, " needs --sampler parallel");
  return false;
}

/// \brief `muninn generate --sampler parallel` on a loaded model.
template <class Model>
int generate_parallel_with(const Model& m, const args& a, const std::vector<std::int32_t>& ids,
                           const io::tokenizer* tok, const generate_options& g) {
  const parallel_options p = parallel_from(a, m.config());
  const parallel_result r = generate_parallel(m, ids, g, p);
  std::cerr << "muninn: parallel sampler: " << r.diffusion_steps << " steps, " << r.core_passes
            << " core passes, " << r.tokens_forward << " token-recurrences, " << r.cache_clears << " KV entries recomputed, "
            << r.standing_waves << " standing waves\n";
  if (tok) std::cout << tok->decode(r.tokens) << "\n";
  if (a.has("--show-steps")) std::cout << join_ids(r.steps) << "\n";
  std::cout << join_ids(r.tokens) << "\n";
  return 0;
}

template <class S>
using used_bytes_t = decltype(std::declval<const S&>().used_bytes());
/// \brief Whether a KV storage reports the bytes its held rows take (ragged caches).
template <class S>
inline constexpr bool has_used_bytes = muninn::detail::detected_v<S, used_bytes_t>;

/// \brief `muninn generate` on a loaded model; `tok` decodes the output when the prompt was text.
template <class Model>
int generate_with(const Model& m, const args& a, const std::vector<std::int32_t>& ids, const io::tokenizer* tok,
                  std::int64_t max_new) {
  const model_config& cfg = m.config();
  generate_options g = generate_options_from(a, cfg, max_new);
  if (wants_parallel(a)) return generate_parallel_with(m, a, ids, tok, g);
  const std::int64_t total = std::int64_t(ids.size()) + max_new;
  MUNINN_CHECK(total <= cfg.block_size, "prompt of ", ids.size(), " tokens + ", max_new, " new tokens = ", total,
               " exceeds block_size ", cfg.block_size);
  const std::int64_t max_steps = max_steps_needed(m, g);
  context_limits lim = context_from(a, cfg, std::min(total + g.lookahead, cfg.block_size), max_steps);
  if (g.run.halt.prefill == prefill_exit::prompt || Model::router_policy::routes)  // the prompt runs as one pass
    lim.max_chunk = std::max<std::int64_t>(lim.max_chunk, std::int64_t(ids.size()));
  auto ctx = m.make_context(lim);
  std::optional<state_dump> dump;
  if (a.has("--dump-states")) {
    dump.emplace(total, max_steps, cfg.n_embd);
    g.run.on_step = dump->hook();
  }
  const generate_result r = generate(m, ctx, ids, g);
  if (dump) dump->write(a.get("--dump-states"), std::int64_t(ids.size()), std::int64_t(r.tokens.size()));
  if (g.draft_steps > 0)
    std::cerr << "muninn: speculative: drafted " << r.drafted << ", accepted " << r.accepted << ", " << r.forward_calls
              << " model calls\n";
  std::cerr << "muninn: kv cache " << human_bytes(double(ctx.kv_bytes_per_token())) << "/token, "
            << human_bytes(double(ctx.kv_bytes())) << " reserved";
  if constexpr (has_used_bytes<std::decay_t<decltype(ctx.kv_storage())>>) {
    // Recursion-wise caching: a token keeps keys and values only for the recursions it ran.
    const double used = double(ctx.kv_storage().used_bytes());
    std::cerr << ", " << human_bytes(used) << " held (" << human_bytes(ctx.length() ? used / double(ctx.length()) : 0.0)
              << "/token)";
  }
  std::cerr << "\n";
  if (tok) std::cout << tok->decode(r.tokens) << "\n";
  if (a.has("--show-steps")) std::cout << join_ids(r.steps) << "\n";
  if (a.has("--show-depths")) std::cout << "depth per position: " << join_ids(ctx.steps_used()) << "\n";
  std::cout << join_ids(r.tokens) << "\n";
  return 0;
}

#if defined(MUNINN_CLI_CUDA)
// Defined in cuda_commands.cu, the CLI's only nvcc translation unit.

/// \brief Throws "no CUDA device: <reason>" unless a CUDA device can be used.
void cuda_require_device();
/// \brief forward_with on the CUDA model (float|bf16) that `dir`'s config.json calls for.
int cuda_forward(const std::string& dir, bool use_bf16, const args& a, const std::vector<std::int32_t>& ids);
/// \brief generate_with on the CUDA model (float|bf16) that `dir`'s config.json calls for.
int cuda_generate(const std::string& dir, bool use_bf16, const args& a, const std::vector<std::int32_t>& ids,
                  const io::tokenizer* tok, std::int64_t max_new);
#endif

}  // namespace muninn::cli
