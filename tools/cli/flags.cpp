// The command table, the parser and the help printer of the muninn CLI.

#include "flags.hpp"

#include <ostream>

namespace muninn::cli {
namespace fe = muninn::frontend;

namespace {

cli_flag model_flag(const std::string& help = "the model's folder: config.json and weights (TRM: a run folder)") {
  return {"--model", "DIR", help, true};
}

const char* dump_states_notes =
    "--dump-states FILE.npy writes float32 [positions, steps, h]: entry [i, s] is the raw recurrent\n"
    "state (before ln_f) of the token at position i of prompt + generated tokens after recurrence\n"
    "step s (0-based). Only positions the model ran are written: the prompt and every generated\n"
    "token but the last, which is emitted without being fed back, so P prompt and G >= 1 generated\n"
    "tokens give P + G - 1 rows (0 rows when G = 0). `steps` is the deepest recurrence the run\n"
    "allowed: the largest of --steps, --max-steps and --draft-steps. Steps a token did not run\n"
    "(it exited early, or its pass was shallower) are NaN. With --draft-steps a row holds the\n"
    "verification pass of its position.";

std::vector<command> make_commands() {
  using fe::operation;
  return {
      {"demo", "[--model DIR] [flags]",
       "the shipped demo models: test-time scaling (Huginn shell game), routed depth (MoR), supervision steps (TRM)",
       operation::demo,
       {{"--model", "DIR",
         "a demo model folder (default: the shipped examples/models/demo); also examples/models/mor_demo and "
         "examples/models/trm_sudoku",
         true}},
       "The shell-game demo (a Huginn model with demo.json) prints the accuracy at each depth and with KL exit;\n"
       "the MoR demo (a Mixture-of-Recursions folder with heldout.json) per-class accuracy, depth histograms and\n"
       "block passes for MoR (scoring and causal routing) against the fixed-depth and vanilla baselines shipped\n"
       "beside it; the TRM demo (a run folder) exact accuracy after 1, 2, 4, 8 and 16 supervision steps and with\n"
       "learned halting. Shipped models are looked for beside the executable (<prefix>/share/muninn/models)\n"
       "and in the source tree. A progress bar is drawn on stderr when stderr is a terminal."},
      {"info", "--model DIR", "family, structure, parameter count, dtype and memory of a checkpoint", operation::info,
       {model_flag()}, ""},
      {"forward", "--model DIR (--tokens 1,2,3 | --prompt TEXT) [flags]",
       "one forward pass: the argmax of every position's logits (and all logits with --output)", operation::forward,
       {model_flag(), {"--tokens", "1,2,3", "input token ids", true},
        {"--prompt", "TEXT", "input text, encoded with DIR/tokenizer.json", true}},
       "Prints `steps=R tokens=N vocab=V` (steps: recurrent models) and `argmax per position: ...`.\n"
       "CALM: the input is padded to whole chunks and the result is the backbone's normalised hidden\n"
       "state of each chunk (`chunks=N hidden=d`; --output writes them, --dump the backbone's taps)."},
      {"generate", "--model DIR (--tokens 1,2,3 | --prompt TEXT | --chat TEXT) --max-new-tokens N [flags]",
       "decode with the KV cache, greedy or sampled, at fixed depth or with early exit", operation::generate,
       {model_flag(), {"--tokens", "1,2,3", "prompt token ids", true},
        {"--prompt", "TEXT", "prompt text, encoded with DIR/tokenizer.json", true},
        {"--chat", "TEXT", "a user message in the checkpoint's chat template (chat_template.jinja or tokenizer_config.json)",
         true},
        {"--system", "TEXT", "with --chat: a system message before the user's"}},
       std::string("Prints the decoded text (with --prompt or --chat; as it is produced with --stream on), the steps\n"
                   "per token (with --show-steps) and, as the last line, the generated ids, comma-separated.\n"
                   "Decoding is greedy unless a sampling option (--temperature, --top-k, --top-p, --min-p,\n"
                   "--repetition-penalty) is given without --greedy. Generation stops at the model's end-of-sequence\n"
                   "ids (generation_config.json, else config.json) unless --ignore-eos is given.\n\n") +
           dump_states_notes},
      {"score", "--model DIR --data FILE [flags]",
       "mean next-token NLL of sequences (Mixture-of-Recursions: with the depth histogram)", operation::score,
       {model_flag()},
       "A Mixture-of-Recursions model routes by the reference's top-k here (--routing scoring, the default):\n"
       "the numbers its paper reports are scored that way."},
      {"eval", "--model DIR --data FILE --metric brierlm [flags]",
       "BrierLM of a checkpoint on a token stream: teacher-forced blocks, Brier-1..4 and their combination",
       operation::eval,
       {model_flag()},
       "The documents are concatenated with nothing inserted (text is encoded with the tokenizer's\n"
       "special tokens, as transformers' tokenizer(text) does) and cut into blocks of --block-size\n"
       "tokens; the remainder is dropped. Each block runs teacher-forced; per-block Brier-n means are\n"
       "averaged over blocks and combined: BrierLM = 100 * max(b1*b2*b3*b4, 0)^(1/4). The block size\n"
       "changes the figure: compare numbers only at equal block sizes. Prints\n"
       "  metric=brierlm blocks=B block_size=N tokens=T dropped=D seed=S\n"
       "  brier1=... brier2=... brier3=... brier4=...\n"
       "  brierlm=...\n"
       "A Mixture-of-Recursions model routes by the causal rule here. See docs/brierlm.md."},
      {"ae", "--model DIR (--tokens 1,2,3,4 | --prompt TEXT) [flags]",
       "CALM chunk autoencoder round trip: encode each chunk, decode its mean, report token accuracy", operation::ae,
       {model_flag("an autoencoder folder, or a CALM folder (its embedded or --ae autoencoder)"),
        {"--tokens", "1,2,3,4", "token ids", true},
        {"--prompt", "TEXT", "text, encoded with DIR/tokenizer.json", true}},
       "A length that is not a multiple of the chunk size is padded with the pad token, and accuracy\n"
       "counts only the given tokens. Prints the reconstructed ids, then `accuracy=A (n/N tokens)`."},
      {"solve", "--model DIR --data DIR [flags]",
       "a TRM / HRM run on a puzzle dataset: exact and token accuracy, mean supervision steps, time per puzzle",
       operation::solve,
       {model_flag("the run's folder (newest step_N, all_config.yaml) or a step_N file")},
       "Token accuracy counts every label but ignore_label_id; exact: all of a puzzle's counted labels right.\n"
       "A progress bar is drawn on stderr when stderr is a terminal."},
      {"tokenize", "--model DIR --text TEXT [--chat] [flags]",
       "token ids of a text (with --chat: the rendered chat template first), to check tokenizers and templates",
       operation::tokenize,
       {model_flag(), {"--text", "TEXT", "the text (with --chat: the user message)", true},
        {"--chat", "", "render TEXT as a user message with the checkpoint's chat template and the generation prompt",
         true},
        {"--system", "TEXT", "with --chat: a system message before the user's"}},
       "Prints the rendered prompt (with --chat), then `ids: ...` and `tokens: N`. Text is encoded as\n"
       "generate encodes a text prompt (with the special tokens a Llama tokenizer adds), a rendered chat\n"
       "as it is."},
      {"serve", "--model DIR [--host 127.0.0.1] [--port 8080] [flags]",
       "an OpenAI-compatible HTTP server with continuous batching (completions, chat, models, health, metrics)",
       operation::serve,
       {model_flag()},
       "Endpoints: POST /v1/completions and /v1/chat/completions (stream: true sends server-sent events),\n"
       "GET /v1/models, GET /health, GET /metrics (Prometheus). A request's extra fields are the model's\n"
       "generate options spelled with underscores (steps, exit, threshold, routing, top_k, ...). Prints\n"
       "`muninn serve: listening on http://HOST:PORT` when ready; SIGTERM or SIGINT drains (new requests get\n"
       "503, running ones get --grace seconds) and exits 0. See docs/serving.md."},
  };
}

// "  --steps R" padded to the help column.
std::string label(const std::string& name, const std::string& metavar) {
  std::string s = "  " + name + (metavar.empty() ? "" : " " + metavar);
  return s.size() < 29 ? s + std::string(30 - s.size(), ' ') : s + "\n" + std::string(30, ' ');
}

std::string option_help(const fe::option_spec& s) {
  std::string h = s.help;
  const std::string range = fe::range_text(s);
  if (!range.empty()) h += ", " + range;
  const std::string def = fe::default_text(s);
  if (!def.empty()) h += " " + def;
  if (!s.families.empty()) {
    std::string fams;
    for (std::size_t i = 0; i < s.families.size(); ++i) fams += (i ? ", " : "") + s.families[i];
    h += " [" + fams + "]";
  }
  return h;
}

}  // namespace

const std::vector<command>& commands() {
  static const std::vector<command> all = make_commands();
  return all;
}

const command* find_command(const std::string& name) {
  for (const auto& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

std::string parsed::require(const std::string& flag) const {
  if (!has(flag)) fail_as(error_kind::usage, "missing required flag ", flag);
  return get(flag);
}

std::string parsed::one_of(const std::vector<std::string>& flags) const {
  std::string found, all;
  int n = 0;
  for (const auto& f : flags) {
    all += (all.empty() ? "" : f == flags.back() ? " and " : ", ") + f;
    if (has(f)) {
      found = f;
      ++n;
    }
  }
  if (n != 1) fail_as(error_kind::usage, "give exactly one of ", all);
  return found;
}

parsed parse(const command& cmd, int argc, char** argv) {
  parsed p(cmd.op);
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i], v;
    if (a == "--help" || a == "-h") {
      p.help = true;
      return p;
    }
    const auto eq = a.find('=');
    const bool inline_value = a.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    const cli_flag* own = nullptr;
    for (const auto& f : cmd.own)
      if (f.name == a) own = &f;
    const fe::option_spec* opt = a.rfind("--", 0) == 0 ? fe::find_option(cmd.op, a.substr(2)) : nullptr;
    if (!own && !opt) fail_as(error_kind::usage, "unknown flag '", a, "' (see muninn ", cmd.name, " --help)");
    const bool is_switch = own ? own->metavar.empty() : opt->type == fe::value_type::flag;
    if (is_switch) {
      if (inline_value) fail_as(error_kind::usage, "flag ", a, " takes no value");
      v = "1";
    } else if (!inline_value) {
      if (i + 1 >= argc)
        fail_as(error_kind::usage, "flag ", a, " needs a value (", own ? own->metavar : opt->metavar, ")");
      v = argv[++i];
    }
    if (own) {
      if (p.own.count(a)) fail_as(error_kind::usage, "flag ", a, " is given twice");
      p.own[a] = v;
    } else {
      if (p.options.has(opt->name)) fail_as(error_kind::usage, "flag ", a, " is given twice");
      p.options.set(opt->name, v);
    }
  }
  for (const auto& s : fe::options_of(cmd.op))
    if (s.required && !p.options.has(s.name)) fail_as(error_kind::usage, "missing required flag --", s.name);
  return p;
}

void print_help(const command& cmd, std::ostream& os) {
  os << "usage: muninn " << cmd.name << " " << cmd.synopsis << "\n\n" << cmd.summary << "\n\nflags:\n";
  for (const auto& f : cmd.own) os << label(f.name, f.metavar) << f.help << "\n";
  for (const auto& s : fe::options_of(cmd.op)) os << label("--" + s.name, s.metavar) << option_help(s) << "\n";
  os << label("-h, --help", "") << "print this help and exit\n";
  os << "\nA flag marked [family] applies to that family's checkpoints only; given for another family it is\n"
        "an error. Exit status: 0 success, 1 runtime error, 2 usage error.\n";
  if (!cmd.notes.empty()) os << "\n" << cmd.notes << "\n";
}

void print_usage(std::ostream& os) {
  os << "usage: muninn <command> [flags]        muninn <command> --help: the flags of one command\n\ncommands:\n";
  for (const auto& c : commands()) {
    os << "  " << c.name << std::string(10 - c.name.size(), ' ') << c.synopsis << "\n";
    std::string line;
    const auto item = [&](const std::string& name, const std::string& metavar) {
      const std::string it = "[" + name + (metavar.empty() ? "" : " " + metavar) + "]";
      if (!line.empty() && line.size() + it.size() + 1 > 88) {
        os << "            " << line << "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + it;
    };
    for (const auto& f : c.own)
      if (!f.in_synopsis) item(f.name, f.metavar);
    for (const auto& s : fe::options_of(c.op))
      if (!s.required) item("--" + s.name, s.metavar);
    if (!line.empty()) os << "            " << line << "\n";
    os << "            " << c.summary << "\n";
  }
  os << "\n--version prints the version. Exit status: 0 success, 1 runtime error, 2 usage error.\n";
}

}  // namespace muninn::cli
