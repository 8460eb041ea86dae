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
#include "commands.hpp"
#include "demo.hpp"
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
    "  demo      [--model DIR] [--problems N] [--depths 1,2,4,...] [--exit-threshold X] [--max-steps N]\n"
    "            accuracy of the embedded model at several recurrence depths and with KL exit\n"
    "  info      --model DIR\n"
    "            config, parameter count, dtype and memory of a checkpoint\n"
    "  forward   --model DIR --tokens 1,2,3 [--steps R] [--init-state zero|random] [--seed N]\n"
    "            [--output FILE.npy] [--device cpu|cuda] [--dtype fp32|bf16]\n"
    "            logits of every position, float32 [n_tokens, vocab]\n"
    "  generate  --model DIR (--tokens 1,2,3 | --prompt TEXT) --max-new-tokens N [--steps R]\n"
    "            [--init-state zero|random] [--seed N] [--greedy] [--stop ID,ID]\n"
    "            [--exit none|kl|entropy-diff|latent-diff|argmax-stable|cosine] [--exit-threshold X]\n"
    "            [--min-steps N] [--max-steps N] [--check-every N]\n"
    "            [--kv-budget K] [--kv-fallback latest|none] [--warm-start raw|normalized]\n"
    "            [--draft-steps N --lookahead L]\n"
    "            [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R]\n"
    "            [--dump-states FILE.npy] [--show-steps] [--device cpu|cuda] [--dtype fp32|bf16]\n"
    "            prints the decoded text (with --prompt), the steps per token (with --show-steps)\n"
    "            and the generated ids, comma-separated, as the last line\n"
    "\n"
    "--steps defaults to the config's mean_recurrence; --init-state defaults to random (seed 0).\n"
    "--device defaults to cpu (fp32); --device cuda runs on GPU 0 in fp32 or, with --dtype bf16,\n"
    "in bf16 with fp32 accumulation (builds configured with -DMUNINN_ENABLE_CUDA=ON).\n"
    "Decoding is greedy unless a sampling flag (--temperature, --top-k, --top-p, --min-p,\n"
    "--repetition-penalty) is given without --greedy.\n";

std::string require_model_dir(const cli::args& a) {
  const std::string dir = a.require("--model");
  MUNINN_CHECK(std::filesystem::exists(dir), "model directory '", dir, "' does not exist");
  return dir;
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
            << "file size:        " << cli::human_bytes(file_bytes) << "\n"
            << "memory fp32:      " << cli::human_bytes(double(params) * 4) << " (host backend)\n"
            << "memory bf16:      " << cli::human_bytes(double(params) * 2) << "\n"
            << "kv cache fp32:    " << cli::human_bytes(double(slots * 2 * kv_dim * 4)) << " per token at r=" << r << " ("
            << slots << " slots)\n";
  return 0;
}

int cmd_forward(int argc, char** argv) {
  cli::args a(argc, argv, 2,
              {"--model", "--tokens", "--steps", "--init-state", "--seed", "--output", "--device", "--dtype"}, {});
  const cli::device_choice dev = cli::parse_device(a);
#if defined(MUNINN_CLI_CUDA)
  if (dev.cuda) cli::cuda_require_device();
#endif
  const std::string dir = require_model_dir(a);
  const auto ids = cli::args::parse_ids(a.require("--tokens"), "--tokens");
#if defined(MUNINN_CLI_CUDA)
  if (dev.cuda) return cli::cuda_forward(dir, dev.bf16, a, ids);
#endif
  (void)dev;
  const cli_model m = cli_model::load(dir);
  return cli::forward_with(m, a, ids);
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
               "--repetition-penalty", "--dump-states", "--stop", "--device", "--dtype"},
              {"--greedy", "--show-steps"});
  const cli::device_choice dev = cli::parse_device(a);
#if defined(MUNINN_CLI_CUDA)
  if (dev.cuda) cli::cuda_require_device();
#endif
  const std::string dir = require_model_dir(a);
  std::optional<io::tokenizer> tok;
  const auto ids = prompt_ids(a, dir, tok);
  const std::int64_t max_new = cli::args::parse_int(a.require("--max-new-tokens"), "--max-new-tokens");
  MUNINN_CHECK(max_new >= 0, "--max-new-tokens must be >= 0, got ", max_new);
  const io::tokenizer* tp = tok ? &*tok : nullptr;
#if defined(MUNINN_CLI_CUDA)
  if (dev.cuda) return cli::cuda_generate(dir, dev.bf16, a, ids, tp, max_new);
#endif
  (void)dev;
  const cli_model m = cli_model::load(dir);
  return cli::generate_with(m, a, ids, tp, max_new);
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
    if (cmd == "demo") return muninn::cli::run_demo<cli_model>(argc, argv);
    muninn::fail("unknown command '", cmd, "' (commands: info, forward, generate, demo)");
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (auto& c : msg)
      if (c == '\n') c = ' ';
    std::cerr << "muninn: error: " << msg << "\n";
    return 1;
  }
}
