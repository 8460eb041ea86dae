// The `muninn` command-line tool: inspect a checkpoint, run a forward pass, generate tokens, score and evaluate.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <iostream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "calm_commands.hpp"
#include "cli_args.hpp"
#include "commands.hpp"
#include "demo.hpp"
#include "eval.hpp"
#include "solve.hpp"
#include "families.hpp"
#include "specs.hpp"
#include "muninn/io/chat_template.hpp"
#include "muninn/io/tokenizer.hpp"
#include "muninn/muninn.hpp"

namespace {

using namespace muninn;
/// The demo's model: Huginn with early exit compiled in.
using cli_model = model<host_backend, float, cli::huginn_cli_arch>;

int print_help(const cli::command_spec& spec) {
  cli::print_command_help(spec, std::cout);
  return 0;
}

std::string require_model_dir(const cli::args& a) {
  const std::string dir = a.require("--model");
  MUNINN_CHECK(std::filesystem::exists(dir), "model directory '", dir, "' does not exist");
  return dir;
}

// The tensors a checkpoint of `kind` holds for `cfg` (validated on open).
std::vector<io::tensor_spec> tensor_specs_of(cli::model_kind kind, const model_config& cfg) {
  if (cli::is_mor(kind)) return io::mor_tensor_specs(cfg);
  return kind == cli::model_kind::llama ? io::llama_tensor_specs(cfg) : io::huginn_tensor_specs(cfg);
}

// The checkpoint of `kind` at `dir`, validated against `cfg`.
io::checkpoint open_checkpoint_of(cli::model_kind kind, const std::string& dir, const model_config& cfg) {
  if (cli::is_mor(kind)) return family::mor::open_checkpoint(dir, cfg);
  return kind == cli::model_kind::llama ? family::llama::open_checkpoint(dir, cfg)
                                        : family::huginn::open_checkpoint(dir, cfg);
}

// A MoR checkpoint stores the shared block once per recursion: the copies of recursions >= 1.
bool is_recursion_copy(const std::string& name, const model_config& cfg) {
  if (cfg.mor.recursions == 0) return false;
  const io::mor_names n(cfg);
  for (std::int64_t r = 1; r < cfg.mor.recursions; ++r)
    for (std::int64_t l = 0; l < cfg.n_layers_in_recurrent_block; ++l)
      if (name.rfind(n.block(r, l) + ".", 0) == 0) return true;
  return false;
}

// Unique parameters from the name map: RoPE buffers and a duplicate lm_head of a tied model excluded.
std::int64_t count_parameters(const io::checkpoint& ck, const std::vector<io::tensor_spec>& specs,
                              const model_config& cfg) {
  std::int64_t params = 0;
  for (const auto& spec : specs) {
    const bool rope = spec.name == "freqs_cis" || spec.name.find("inv_freq") != std::string::npos;
    if (rope || (cfg.tie_embeddings && spec.name == "lm_head.weight") || !ck.has(spec.name) ||
        is_recursion_copy(spec.name, cfg))
      continue;
    std::int64_t n = 1;
    for (auto d : spec.shape) n *= d;
    params += n;
  }
  return params;
}

// What `muninn info` says of the structure: family, block, injection, RoPE, head.
void print_structure(std::ostream& os, cli::model_kind kind, const model_config& cfg) {
  const bool llama = kind == cli::model_kind::llama || cli::is_mor(kind);
  os << "family:           " << cli::family_name(kind) << " (model_type " << cfg.model_type << ")\n"
     << "block:            " << cfg.block_type << "\n"
     << "injection:        " << (llama ? "none (no recurrence)" : cfg.injection_type) << "\n"
     << "rope:             " << (llama ? "rotate-half" : "interleaved") << ", theta " << cfg.rope_base;
  if (cfg.rope_type != "default") os << ", " << cfg.rope_type << " scaling x" << cfg.rope_factor;
  os << "\n"
     << "head:             " << (cfg.tie_embeddings ? "tied to the embedding" : "untied lm_head") << "\n";
  if (!cli::is_mor(kind)) return;
  const mor_settings& m = cfg.mor;
  os << "routing:          " << m.type << "-choice, " << m.router_type << " router, " << m.router_func << ", alpha "
     << m.alpha;
  if (m.type == "expert") {
    os << ", capacity";
    for (std::int64_t r = 0; r < m.recursions; ++r) os << (r ? "/" : " ") << router::expert_choice::capacity(m, r);
  }
  os << "\nsharing:          " << m.sharing << ", " << m.recursions << " recursions of a " << cfg.n_layers_in_recurrent_block
     << "-layer block" << (m.kv_sharing ? ", recursive KV sharing" : "") << "\n";
}

int cmd_info(int argc, char** argv) {
  const cli::command_spec spec = cli::info_spec();
  const cli::args a(argc, argv, 2, spec);
  if (a.help()) return print_help(spec);
  const std::string dir = require_model_dir(a);
  if (cli::calm_kind_of(dir) == cli::calm_dir_kind::model) return cli::calm_info(dir, a.get("--ae", ""));
  const std::string yaml = a.get("--config", "");
  const cli::model_kind kind = cli::detect_model(dir, yaml);
  const bool llama = kind == cli::model_kind::llama;
  const model_config cfg = cli::read_config_of(kind, dir, yaml);
  const io::checkpoint ck = open_checkpoint_of(kind, dir, cfg);
  std::set<std::string> dtypes;
  double file_bytes = 0;
  for (const auto& name : ck.names()) {
    dtypes.insert(dtype_name(ck.get(name).type));
    file_bytes += double(ck.get(name).nbytes);
  }
  const std::int64_t params = count_parameters(ck, tensor_specs_of(kind, cfg), cfg);
  const std::int64_t r = cfg.mean_recurrence;
  const std::int64_t slots = cfg.n_layers_in_prelude + cfg.n_layers_in_recurrent_block * r + cfg.n_layers_in_coda;
  const std::int64_t kv_dim = (cfg.n_kv_heads > 0 ? cfg.n_kv_heads : cfg.n_heads) * cfg.head_dim;
  std::string dt;
  for (const auto& d : dtypes) dt += (dt.empty() ? "" : ",") + d;
  std::cout << "model:            " << dir << "\n";
  print_structure(std::cout, kind, cfg);
  std::cout << "hidden:           " << cfg.n_embd << "\n"
            << "heads:            " << cfg.n_heads << " (kv " << (cfg.n_kv_heads > 0 ? cfg.n_kv_heads : cfg.n_heads)
            << ", head_dim " << cfg.head_dim << ")\n"
            << "mlp:              " << cfg.intermediate_size << "\n"
            << "vocab:            " << cfg.vocab_size << "\n";
  if (llama)
    std::cout << "layers:           " << cfg.n_layers_in_prelude << "\n";
  else if (cli::is_mor(kind))
    std::cout << "layers:           first " << cfg.n_layers_in_prelude << ", shared block " << cfg.n_layers_in_recurrent_block
              << " x " << r << " recursions, last " << cfg.n_layers_in_coda << "\n";
  else
    std::cout << "layers:           prelude " << cfg.n_layers_in_prelude << ", core " << cfg.n_layers_in_recurrent_block
              << ", coda " << cfg.n_layers_in_coda << "\n"
              << "mean_recurrence:  " << r << "\n";
  std::cout << "max positions:    " << cfg.block_size << "\n"
            << "parameters:       " << params << " unique (" << (ck.has("lm_head.weight") && cfg.tie_embeddings
                                                                 ? "checkpoint also stores a duplicate lm_head"
                                                                 : "as stored")
            << ")\n"
            << "dtype:            " << dt << " (" << ck.names().size() << " tensors)\n"
            << "file size:        " << cli::human_bytes(file_bytes) << "\n"
            << "memory fp32:      " << cli::human_bytes(double(params) * 4) << " (host backend)\n"
            << "memory bf16:      " << cli::human_bytes(double(params) * 2) << "\n"
            << "kv cache fp32:    " << cli::human_bytes(double(slots * 2 * kv_dim * 4)) << " per token"
            << (llama ? "" : cli::is_mor(kind) ? " at most (tokens that run every recursion)" : " at r=" + std::to_string(r))
            << " (" << slots << " slots)\n";
  return 0;
}

int cmd_forward(int argc, char** argv) {
  const cli::command_spec spec = cli::forward_spec();
  const cli::args a(argc, argv, 2, spec);
  if (a.help()) return print_help(spec);
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
  const std::string yaml = a.get("--config", "");
  return cli::with_model<host_backend, float>(
      cli::detect_model(dir, yaml), dir, host_backend{}, [&](const auto& m) { return cli::forward_with(m, a, ids); },
      yaml);
}

int cmd_score(int argc, char** argv) {
  const cli::command_spec spec = cli::score_spec();
  const cli::args a(argc, argv, 2, spec);
  if (a.help()) return print_help(spec);
  const std::string dir = require_model_dir(a);
  const std::string yaml = a.get("--config", "");
  return cli::with_model<host_backend, float>(
      cli::detect_model(dir, yaml), dir, host_backend{}, [&](const auto& m) { return cli::score_with(m, a, dir); },
      yaml);
}

int cmd_eval(int argc, char** argv) {
  const cli::command_spec spec = cli::eval_spec();
  const cli::args a(argc, argv, 2, spec);
  if (a.help()) return print_help(spec);
  const std::string dir = require_model_dir(a);
  if (cli::calm_kind_of(dir) == cli::calm_dir_kind::model) return cli::calm_eval(dir, a);
  const std::string yaml = a.get("--config", "");
  // One estimator per family: the softmax families share eval_with (runtime/brier.hpp's
  // model_brier_block); a family without next-token probabilities runs cli::run_brierlm with its own.
  return cli::with_model<host_backend, float>(
      cli::detect_model(dir, yaml), dir, host_backend{}, [&](const auto& m) { return cli::eval_with(m, a, dir); },
      yaml);
}

// The conversation of --chat (and --system) rendered with the checkpoint's chat template, from
// tokenizer_config.json when it has one (Huginn's own template otherwise), as token ids. The
// template writes any BOS itself, so the text is encoded without the post-processor.
std::vector<std::int32_t> chat_ids(const cli::args& a, const std::string& dir, cli::model_kind kind,
                                   const io::tokenizer& tok) {
  std::vector<io::chat_message> messages;
  if (a.has("--system")) messages.push_back({"system", a.get("--system")});
  messages.push_back({"user", a.get("--chat")});
  const std::string cfg_path = dir + "/tokenizer_config.json";
  if (std::filesystem::exists(cfg_path)) {
    const io::json cfg = io::read_json_file(cfg_path);
    if (cfg.find("chat_template"))
      return tok.encode(io::chat_template::from_config(cfg, cfg_path).render(messages, true,
                                                                             io::chat_template::special_tokens(cfg)),
                        false);
  }
  MUNINN_CHECK(kind != cli::model_kind::llama, "--chat needs a chat template: ", cfg_path,
               " has no \"chat_template\"");
  return tok.encode_chat(messages, true);
}

std::vector<std::int32_t> prompt_ids(const cli::args& a, const std::string& dir, cli::model_kind kind,
                                     std::optional<io::tokenizer>& tok) {
  MUNINN_CHECK(int(a.has("--tokens")) + int(a.has("--prompt")) + int(a.has("--chat")) == 1,
               "give exactly one of --tokens, --prompt and --chat");
  MUNINN_CHECK(!a.has("--system") || a.has("--chat"), "--system needs --chat");
  if (a.has("--tokens")) return cli::args::parse_ids(a.get("--tokens"), "--tokens");
  const std::string path = dir + "/tokenizer.json";
  MUNINN_CHECK(std::filesystem::exists(path), a.has("--chat") ? "--chat" : "--prompt",
               " needs a tokenizer: ", path, " does not exist");
  tok.emplace(io::tokenizer::from_file(path));
  if (a.has("--chat")) return chat_ids(a, dir, kind, *tok);
  // Llama tokenizers put BOS in front through their post-processor, as transformers does by
  // default; Huginn's post-processor appends an end-of-text token, which a prompt must not get.
  const bool add_special = kind == cli::model_kind::llama;
  auto ids = tok->encode(a.get("--prompt"), add_special);
  MUNINN_CHECK(!ids.empty(), "--prompt encodes to no tokens");
  return ids;
}

int cmd_generate(int argc, char** argv) {
  const cli::command_spec spec = cli::generate_spec();
  const cli::args a(argc, argv, 2, spec);
  if (a.help()) return print_help(spec);
  const cli::device_choice dev = cli::parse_device(a);
#if defined(MUNINN_CLI_CUDA)
  if (dev.cuda) cli::cuda_require_device();
#endif
  const std::string dir = require_model_dir(a);
  if (cli::calm_kind_of(dir) == cli::calm_dir_kind::model) {
    MUNINN_CHECK(!dev.cuda, "a CALM model runs on the host in this CLI (--device cpu); the library runs it on CUDA");
    a.require("--max-new-tokens");
    return cli::calm_generate(dir, a);
  }
  const std::string yaml = a.get("--config", "");
  const cli::model_kind kind = cli::detect_model(dir, yaml);  // config.json is read once per command
  std::optional<io::tokenizer> tok;
  const auto ids = prompt_ids(a, dir, kind, tok);
  a.require("--max-new-tokens");
  const std::int64_t max_new = a.get_int_min("--max-new-tokens", 0, 0);
  const io::tokenizer* tp = tok ? &*tok : nullptr;
#if defined(MUNINN_CLI_CUDA)
  if (dev.cuda) return cli::cuda_generate(dir, dev.bf16, a, ids, tp, max_new);
#endif
  (void)dev;
  return cli::with_model<host_backend, float>(
      kind, dir, host_backend{}, [&](const auto& m) { return cli::generate_with(m, a, ids, tp, max_new); }, yaml);
}

/// Library messages name option fields (`draft_steps`, `generate_options::lookahead`); a CLI
/// user typed flags. Any message that reaches the user this way gets the flag's name instead.
std::string with_flag_names(std::string msg) {
  static const std::pair<const char*, const char*> names[] = {
      {"max_new_tokens", "--max-new-tokens"}, {"draft_steps", "--draft-steps"}, {"lookahead", "--lookahead"},
      {"min_steps", "--min-steps"},           {"max_steps", "--max-steps"},     {"check_every", "--check-every"},
      {"kv_budget", "--kv-budget"},           {"kv_fallback", "--kv-fallback"}, {"warm_start", "--warm-start"},
      {"init_state", "--init-state"},         {"stop_ids", "--stop"},           {"top_k", "--top-k"},
      {"top_p", "--top-p"},                   {"min_p", "--min-p"},             {"temperature", "--temperature"},
      {"repetition_penalty", "--repetition-penalty"}, {"inner_recurrence", "--inner-recurrence"},
      {"headway", "--headway"},               {"max_wavefront", "--max-wavefront"}, {"ema_embeds", "--ema-embeds"},
      {"state_noise_mixing", "--state-noise-mixing"}, {"freeze_threshold", "--freeze-threshold"}};
  for (const auto& [field, flag] : names) {
    // The field as a whole word, with any `struct::` or `struct.` qualifiers; not part of a flag,
    // a path or a quoted value the user gave.
    const std::regex word(std::string("(^|[^A-Za-z0-9_:.'\"/\\\\-])(?:[A-Za-z_][A-Za-z0-9_]*(?:\\.|::))*") + field +
                          "(?![A-Za-z0-9_:])");
    msg = std::regex_replace(msg, word, std::string("$1") + flag);
  }
  return msg;
}

/// One line on stderr: "muninn: error: <message>".
int report(const std::exception& e) {
  std::string msg = with_flag_names(e.what());
  for (auto& c : msg)
    if (c == '\n') c = ' ';
  std::cerr << "muninn: error: " << msg << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    muninn::cli::print_usage(std::cerr);
    return 2;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      muninn::cli::print_usage(std::cout);
      return 0;
    }
    if (cmd == "--version") {
      std::cout << "muninn " << MUNINN_VERSION_MAJOR << "." << MUNINN_VERSION_MINOR << "." << MUNINN_VERSION_PATCH << "\n";
      return 0;
    }
    if (cmd == "info") return cmd_info(argc, argv);
    if (cmd == "forward") return cmd_forward(argc, argv);
    if (cmd == "generate") return cmd_generate(argc, argv);
    if (cmd == "score") return cmd_score(argc, argv);
    if (cmd == "eval") return cmd_eval(argc, argv);
    if (cmd == "ae") {
      const cli::command_spec spec = cli::ae_spec();
      const cli::args a(argc, argv, 2, spec);
      return a.help() ? print_help(spec) : cli::run_ae(a);
    }
    if (cmd == "solve") {
      const cli::command_spec spec = cli::solve_spec();
      const cli::args a(argc, argv, 2, spec);
      if (a.help()) return print_help(spec);
      trm_load_options o;
      o.data_dir = a.require("--data");
      auto m = trm_model<host_backend, float>::load(a.require("--model"), o);
      return cli::run_solve(m, a);
    }
    if (cmd == "demo") return muninn::cli::run_demo<cli_model>(argc, argv);
    muninn::fail("unknown command '", cmd, "' (commands: info, forward, generate, score, eval, ae, demo, solve)");
  } catch (const std::exception& e) {
    return report(e);
  }
}
