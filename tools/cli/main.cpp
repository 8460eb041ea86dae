// The `muninn` command-line tool: inspect a checkpoint, run a forward pass, generate tokens.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "muninn/io/tokenizer.hpp"
#include "muninn/muninn.hpp"

namespace {

using namespace muninn;
/// The CLI compiles early exit in; without --exit it runs exactly like huginn_arch.
using cli_model = model<host_backend, float, huginn_adaptive_arch>;

const char* usage_text =
    "usage: muninn <command> [flags]\n"
    "\n"
    "commands:\n"
    "  info      --model DIR\n"
    "            config, parameter count, dtype and memory of a checkpoint\n"
    "  forward   --model DIR --tokens 1,2,3 [--steps R] [--init-state zero|random] [--seed N]\n"
    "            [--output FILE.npy]\n"
    "            logits of every position, float32 [n_tokens, vocab]\n"
    "  generate  --model DIR (--tokens 1,2,3 | --prompt TEXT) --max-new-tokens N [--steps R]\n"
    "            [--init-state zero|random] [--seed N] [--greedy] [--stop ID,ID]\n"
    "            [--exit none|kl|entropy-diff|latent-diff|argmax-stable|cosine] [--exit-threshold X]\n"
    "            [--min-steps N] [--max-steps N] [--check-every N]\n"
    "            [--kv-budget K] [--kv-fallback latest|none] [--warm-start raw|normalized]\n"
    "            [--draft-steps N --lookahead L]\n"
    "            [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R]\n"
    "            [--dump-states FILE.npy] [--show-steps]\n"
    "            prints the decoded text (with --prompt), the steps per token (with --show-steps)\n"
    "            and the generated ids, comma-separated, as the last line\n"
    "\n"
    "--steps defaults to the config's mean_recurrence; --init-state defaults to random (seed 0).\n"
    "Decoding is greedy unless a sampling flag (--temperature, --top-k, --top-p, --min-p,\n"
    "--repetition-penalty) is given without --greedy.\n";

std::string join_ids(const std::vector<std::int32_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

std::string human_bytes(double b) {
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

std::string require_model_dir(const cli::args& a) {
  const std::string dir = a.require("--model");
  MUNINN_CHECK(std::filesystem::exists(dir), "model directory '", dir, "' does not exist");
  return dir;
}

run_options run_options_from(const cli::args& a, const model_config& cfg) {
  run_options opt;
  opt.steps = a.get_int("--steps", cfg.mean_recurrence);
  MUNINN_CHECK(opt.steps >= 0, "--steps must be >= 0, got ", opt.steps);
  const std::string init = a.get("--init-state", "random");
  if (init == "zero")
    opt.init = init_state::zero;
  else if (init == "random")
    opt.init = init_state::random;
  else
    fail("--init-state must be zero or random, got '", init, "'");
  const std::int64_t seed = a.get_int("--seed", 0);
  MUNINN_CHECK(seed >= 0, "--seed must be >= 0, got ", seed);
  opt.seed = std::uint64_t(seed);
  return opt;
}

int cmd_info(int argc, char** argv) {
  cli::args a(argc, argv, 2, {"--model"}, {});
  const std::string dir = require_model_dir(a);
  const model_config cfg = io::read_model_config(dir);
  const io::checkpoint ck = io::checkpoint::open(dir);
  io::validate_huginn_checkpoint(ck, cfg);
  std::set<std::string> dtypes;
  double file_bytes = 0;
  for (const auto& name : ck.names()) {
    const auto& t = ck.get(name);
    dtypes.insert(dtype_name(t.type));
    file_bytes += double(t.nbytes);
  }
  // Count unique parameters from the name map (the duplicate lm_head of tied models excluded).
  std::int64_t params = 0;
  for (const auto& spec : io::huginn_tensor_specs(cfg)) {
    if (spec.name == "freqs_cis" || (cfg.tie_embeddings && spec.name == "lm_head.weight")) continue;
    if (!ck.has(spec.name)) continue;
    std::int64_t n = 1;
    for (auto d : spec.shape) n *= d;
    params += n;
  }
  const std::int64_t r = cfg.mean_recurrence;
  const std::int64_t slots = cfg.n_layers_in_prelude + cfg.n_layers_in_recurrent_block * r + cfg.n_layers_in_coda;
  const std::int64_t kv_dim = (cfg.n_kv_heads > 0 ? cfg.n_kv_heads : cfg.n_heads) * cfg.head_dim;
  std::string dt;
  for (const auto& d : dtypes) dt += (dt.empty() ? "" : ",") + d;
  std::cout << "model:            " << dir << "\n"
            << "model_type:       " << cfg.model_type << "\n"
            << "hidden (n_embd):  " << cfg.n_embd << "\n"
            << "heads:            " << cfg.n_heads << " (kv " << (cfg.n_kv_heads > 0 ? cfg.n_kv_heads : cfg.n_heads)
            << ", head_dim " << cfg.head_dim << ")\n"
            << "mlp:              " << cfg.intermediate_size << "\n"
            << "vocab:            " << cfg.vocab_size << "\n"
            << "layers:           prelude " << cfg.n_layers_in_prelude << ", core " << cfg.n_layers_in_recurrent_block
            << ", coda " << cfg.n_layers_in_coda << "\n"
            << "mean_recurrence:  " << r << "\n"
            << "block_size:       " << cfg.block_size << "\n"
            << "injection:        " << cfg.injection_type << "\n"
            << "rope_base:        " << cfg.rope_base << "\n"
            << "parameters:       " << params << " unique (" << (ck.has("lm_head.weight") && cfg.tie_embeddings
                                                                 ? "checkpoint also stores a duplicate lm_head"
                                                                 : "as stored")
            << ")\n"
            << "dtype:            " << dt << " (" << ck.names().size() << " tensors)\n"
            << "file size:        " << human_bytes(file_bytes) << "\n"
            << "memory fp32:      " << human_bytes(double(params) * 4) << " (host backend)\n"
            << "memory bf16:      " << human_bytes(double(params) * 2) << "\n"
            << "kv cache fp32:    " << human_bytes(double(slots * 2 * kv_dim * 4)) << " per token at r=" << r << " ("
            << slots << " slots)\n";
  return 0;
}

int cmd_forward(int argc, char** argv) {
  cli::args a(argc, argv, 2, {"--model", "--tokens", "--steps", "--init-state", "--seed", "--output"}, {});
  const std::string dir = require_model_dir(a);
  const auto ids = cli::args::parse_ids(a.require("--tokens"), "--tokens");
  const cli_model m = cli_model::load(dir);
  const run_options opt = run_options_from(a, m.config());
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
  return 0;
}

context_limits context_from(const cli::args& a, const model_config& cfg, std::int64_t tokens, std::int64_t steps) {
  context_limits lim;
  lim.max_tokens = tokens;
  lim.max_steps = steps;
  lim.kv_budget = a.get_int("--kv-budget", 0);
  MUNINN_CHECK(lim.kv_budget >= 0, "--kv-budget must be >= 0, got ", lim.kv_budget);
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

std::vector<std::int32_t> prompt_ids(const cli::args& a, const std::string& dir, std::optional<io::tokenizer>& tok) {
  MUNINN_CHECK(a.has("--tokens") != a.has("--prompt"), "give exactly one of --tokens and --prompt");
  if (a.has("--tokens")) return cli::args::parse_ids(a.get("--tokens"), "--tokens");
  const std::string path = dir + "/tokenizer.json";
  MUNINN_CHECK(std::filesystem::exists(path), "--prompt needs a tokenizer: ", path, " does not exist");
  tok.emplace(io::tokenizer::from_file(path));
  auto ids = tok->encode(a.get("--prompt"), false);
  MUNINN_CHECK(!ids.empty(), "--prompt encodes to no tokens");
  return ids;
}

int cmd_generate(int argc, char** argv) {
  cli::args a(argc, argv, 2,
              {"--model", "--tokens", "--prompt", "--max-new-tokens", "--steps", "--init-state", "--seed", "--exit",
               "--exit-threshold", "--min-steps", "--max-steps", "--check-every", "--kv-budget", "--kv-fallback",
               "--warm-start", "--draft-steps", "--lookahead", "--temperature", "--top-k", "--top-p", "--min-p",
               "--repetition-penalty", "--dump-states", "--stop"},
              {"--greedy", "--show-steps"});
  const std::string dir = require_model_dir(a);
  std::optional<io::tokenizer> tok;
  const auto ids = prompt_ids(a, dir, tok);
  const std::int64_t max_new = cli::args::parse_int(a.require("--max-new-tokens"), "--max-new-tokens");
  MUNINN_CHECK(max_new >= 0, "--max-new-tokens must be >= 0, got ", max_new);
  const cli_model m = cli_model::load(dir);
  const model_config& cfg = m.config();

  generate_options g;
  g.run = run_options_from(a, cfg);
  g.max_new_tokens = max_new;
  g.run.halt.criterion = parse_halt_criterion(a.get("--exit", "none"));
  g.run.halt.threshold = a.get_double("--exit-threshold", -1);
  g.run.halt.min_steps = a.get_int("--min-steps", 0);
  g.run.halt.max_steps = a.get_int("--max-steps", g.run.steps);
  g.run.halt.check_every = a.get_int("--check-every", 1);
  if (g.run.halt.criterion != halt_criterion::none) g.run.steps = g.run.halt.max_steps;
  const std::string warm = a.get("--warm-start", "none");
  if (warm == "raw")
    g.run.warm = warm_start::raw;
  else if (warm == "normalized")
    g.run.warm = warm_start::normalized;
  else if (warm != "none")
    fail("--warm-start must be raw or normalized, got '", warm, "'");
  g.draft_steps = a.get_int("--draft-steps", 0);
  g.lookahead = a.get_int("--lookahead", a.has("--draft-steps") ? 8 : 0);
  const bool sampled = !a.has("--greedy") && (a.has("--temperature") || a.has("--top-k") || a.has("--top-p") ||
                                               a.has("--min-p") || a.has("--repetition-penalty"));
  g.sampling.greedy = !sampled;
  g.sampling.temperature = float(a.get_double("--temperature", 1.0));
  g.sampling.top_k = int(a.get_int("--top-k", 0));
  g.sampling.top_p = float(a.get_double("--top-p", 1.0));
  g.sampling.min_p = float(a.get_double("--min-p", 0.0));
  g.sampling.repetition_penalty = float(a.get_double("--repetition-penalty", 1.0));
  g.sampling.seed = g.run.seed;
  if (a.has("--stop")) g.stop_ids = cli::args::parse_ids(a.get("--stop"), "--stop");

  const std::int64_t total = std::int64_t(ids.size()) + max_new;
  MUNINN_CHECK(total <= cfg.block_size, "prompt of ", ids.size(), " tokens + ", max_new, " new tokens = ", total,
               " exceeds block_size ", cfg.block_size);
  const std::int64_t max_steps = std::max({g.run.steps, g.run.halt.max_steps, g.draft_steps});
  auto ctx = m.make_context(context_from(a, cfg, std::min(total + g.lookahead, cfg.block_size), max_steps));

  // Latent trajectories: state of every position at every step (NaN where a token had exited).
  std::vector<float> states;
  const std::int64_t h = cfg.n_embd;
  if (a.has("--dump-states")) {
    states.assign(std::size_t(total * max_steps * h), std::numeric_limits<float>::quiet_NaN());
    g.run.on_step = [&](std::int64_t pos, std::int64_t step, const float* x) {
      if (pos < total && step < max_steps) std::copy(x, x + h, states.begin() + (pos * max_steps + step) * h);
    };
  }
  const generate_result r = generate(m, ctx, ids, g);
  if (a.has("--dump-states")) {
    io::write_npy(a.get("--dump-states"), states.data(), {total, max_steps, h});
    std::cerr << "muninn: wrote " << a.get("--dump-states") << " [" << total << ", " << max_steps << ", " << h
              << "] (positions, steps, hidden)\n";
  }
  if (g.draft_steps > 0)
    std::cerr << "muninn: speculative: drafted " << r.drafted << ", accepted " << r.accepted << ", " << r.forward_calls
              << " model calls\n";
  std::cerr << "muninn: kv cache " << human_bytes(double(ctx.kv_bytes_per_token())) << "/token, "
            << human_bytes(double(ctx.kv_bytes())) << " reserved\n";
  if (tok) std::cout << tok->decode(r.tokens) << "\n";
  if (a.has("--show-steps")) std::cout << join_ids(r.steps) << "\n";
  std::cout << join_ids(r.tokens) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << usage_text;
    return 2;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::cout << usage_text;
      return 0;
    }
    if (cmd == "--version") {
      std::cout << "muninn " << MUNINN_VERSION_MAJOR << "." << MUNINN_VERSION_MINOR << "." << MUNINN_VERSION_PATCH << "\n";
      return 0;
    }
    if (cmd == "info") return cmd_info(argc, argv);
    if (cmd == "forward") return cmd_forward(argc, argv);
    if (cmd == "generate") return cmd_generate(argc, argv);
    muninn::fail("unknown command '", cmd, "' (commands: info, forward, generate)");
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (auto& c : msg)
      if (c == '\n') c = ' ';
    std::cerr << "muninn: error: " << msg << "\n";
    return 1;
  }
}
