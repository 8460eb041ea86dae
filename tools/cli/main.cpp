// The `muninn` command-line tool: one command per operation, every family behind the front-end
// library's registry. Exit status: 0 success, 1 runtime error, 2 usage error.

#include <unistd.h>

#include <iostream>
#include <regex>
#include <string>

#include "cli_common.hpp"
#include "muninn/core/error.hpp"
#include "muninn/frontend/registry.hpp"
#include "muninn/frontend/text.hpp"
#include "muninn/io/npy.hpp"
#if !defined(MUNINN_CLI_WITHOUT_SERVER)
#include "muninn/server/server.hpp"
#endif

#ifndef MUNINN_VERSION
#define MUNINN_VERSION "unknown"
#endif

namespace muninn::cli {
namespace fe = muninn::frontend;

std::string join_ids(const std::vector<std::int32_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

std::unique_ptr<fe::loaded_model> open_model(const parsed& p) { return fe::open_model(p.require("--model"), p.options); }

std::vector<std::int32_t> input_ids(const parsed& p, const fe::loaded_model& m) {
  const std::string which = p.one_of({"--tokens", "--prompt"});
  if (which == "--tokens") return fe::parse_id_list(p.get("--tokens"), "--tokens");
  return fe::encode_prompt(m, m.info().path, p.get("--prompt"), "--prompt");
}

int cmd_info(const parsed& p) {
  const auto m = open_model(p);
  for (const auto& f : m->info().fields) {
    const std::string label = f.label + ":";
    std::cout << label << std::string(label.size() < 18 ? 18 - label.size() : 1, ' ') << f.value << "\n";
  }
  return 0;
}

int cmd_forward(const parsed& p) {
  const auto m = open_model(p);
  const std::vector<std::int32_t> ids = input_ids(p, *m);
  const fe::forward_result r = m->forward(ids, p.options);
  for (const auto& note : r.notes) std::cerr << "muninn: " << note << "\n";
  if (p.options.has("output")) {
    const std::string out = p.options.text("output");
    io::write_npy(out, r.logits.data(), {r.rows, r.vocab});
    std::cout << "wrote " << out << " [" << r.rows << ", " << r.vocab << "] float32\n";
  }
  if (m->calm()) {  // CALM's backbone ends in a final norm: its rows are hidden states, not logits
    std::cout << "chunks=" << r.rows << " hidden=" << r.vocab
              << " (normalised hidden states: the energy head's input, one per chunk)\n";
    return 0;
  }
  std::vector<std::int32_t> top;
  for (std::int64_t i = 0; i < r.rows; ++i) {
    const float* row = r.logits.data() + i * r.vocab;
    std::int32_t best = 0;
    for (std::int64_t v = 1; v < r.vocab; ++v)
      if (row[v] > row[best]) best = std::int32_t(v);
    top.push_back(best);
  }
  if (r.steps >= 0) std::cout << "steps=" << r.steps << " ";
  std::cout << "tokens=" << r.rows << " vocab=" << r.vocab << "\n";
  std::cout << "argmax per position: " << join_ids(top) << "\n";
  if (p.options.flag("show-depths")) std::cout << "depth per position: " << join_ids(r.depths) << "\n";
  return 0;
}

namespace {

std::vector<fe::chat_turn> chat_messages(const parsed& p, const std::string& user_flag) {
  if (p.has("--system") && !p.has(user_flag) && user_flag == "--chat")
    fail_as(error_kind::usage, "--system needs --chat");
  std::vector<fe::chat_turn> messages;
  if (p.has("--system")) messages.push_back({"system", p.get("--system")});
  messages.push_back({"user", p.get(user_flag)});
  return messages;
}

// Prints tokens as they come: text when the prompt was text (holding back a trailing
// replacement character, the start of a multi-byte character still being generated), else ids.
class token_printer {
 public:
  token_printer(const fe::loaded_model& m, bool text) : m_(m), text_(text) {}
  void add(const std::vector<std::int32_t>& tokens) {
    for (auto t : tokens) {
      if (!text_) std::cout << (ids_.empty() ? "" : ",") << t;
      ids_.push_back(t);
    }
    if (text_) flush_text(false);
    std::cout << std::flush;
  }
  void finish() {
    if (text_) flush_text(true);
    std::cout << "\n";
  }

 private:
  void flush_text(bool last) {
    std::string now = fe::decode(m_, ids_);
    if (!last && now.size() >= 3 && now.compare(now.size() - 3, 3, "\xEF\xBF\xBD") == 0) now.resize(now.size() - 3);
    if (now.size() > printed_.size() && now.compare(0, printed_.size(), printed_) == 0) {
      std::cout << now.substr(printed_.size());
      printed_ = now;
    }
  }
  const fe::loaded_model& m_;
  bool text_;
  std::vector<std::int32_t> ids_;
  std::string printed_;
};

}  // namespace

int cmd_generate(const parsed& p) {
  const std::string which = p.one_of({"--tokens", "--prompt", "--chat"});
  if (p.has("--system") && which != "--chat") fail_as(error_kind::usage, "--system needs --chat");
  const auto m = open_model(p);
  std::vector<std::int32_t> prompt;
  if (which == "--tokens")
    prompt = fe::parse_id_list(p.get("--tokens"), "--tokens");
  else if (which == "--prompt")
    prompt = fe::encode_prompt(*m, m->info().path, p.get("--prompt"), "--prompt");
  else
    prompt = fe::encode_rendered(*m, m->info().path, fe::render_chat(m->info().path, chat_messages(p, "--chat"), "--chat"),
                                 "--chat");
  const std::vector<std::int32_t> stops = fe::stop_ids(*m, p.options);
  const std::string stream = p.options.choice("stream");
  const bool text = which != "--tokens" && m->tokenizer();
  const bool streaming = stream == "on" || (stream == "auto" && isatty(STDOUT_FILENO) == 1);
  token_printer printer(*m, text);
  fe::generate_callbacks cb;
  if (streaming) cb.on_tokens = [&](const std::vector<std::int32_t>& t) { printer.add(t); };
  const fe::generation g = m->generate(prompt, p.options, stops, cb);
  if (streaming && text) printer.finish();
  for (const auto& note : g.notes) std::cerr << "muninn: " << note << "\n";
  if (!streaming && text) std::cout << fe::decode(*m, g.tokens) << "\n";
  if (p.options.flag("show-steps"))
    std::cout << (m->calm() ? "head samples per step: " : "") << join_ids(g.steps) << "\n";
  if (p.options.flag("show-depths")) std::cout << "depth per position: " << join_ids(g.depths) << "\n";
  if (streaming && !text)
    printer.finish();
  else
    std::cout << join_ids(g.tokens) << "\n";
  return 0;
}

int cmd_tokenize(const parsed& p) {
  const auto m = open_model(p);
  const std::string text = p.require("--text");
  std::vector<std::int32_t> ids;
  if (p.has("--chat")) {
    const std::string rendered = fe::render_chat(m->info().path, chat_messages(p, "--text"), "--chat");
    std::cout << rendered << (rendered.empty() || rendered.back() != '\n' ? "\n" : "");
    ids = fe::encode_rendered(*m, m->info().path, rendered, "--chat");
  } else {
    if (p.has("--system")) fail_as(error_kind::usage, "--system needs --chat");
    ids = fe::encode_prompt(*m, m->info().path, text, "--text");
  }
  std::cout << "ids: " << join_ids(ids) << "\ntokens: " << ids.size() << "\n";
  return 0;
}

int cmd_serve(const parsed& p) {
#if defined(MUNINN_CLI_WITHOUT_SERVER)
  (void)p;
  fail_as(error_kind::usage, "this muninn was built without the server (configure with -DMUNINN_BUILD_SERVER=ON)");
#else
  muninn::server::take_signals();  // before any thread starts: the server alone takes SIGTERM
  const auto m = open_model(p);
  const muninn::server::settings s = muninn::server::settings::from(p.options, *m);
  return muninn::server::serve(*m, s, std::cout);
#endif
}

namespace {

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

/// One line on stderr: "muninn: error: <message>"; exit status 2 for usage errors, else 1.
int report(const std::exception& e) {
  std::string msg = with_flag_names(e.what());
  for (auto& c : msg)
    if (c == '\n') c = ' ';
  std::cerr << "muninn: error: " << msg << "\n";
  const auto* me = dynamic_cast<const error*>(&e);
  return me && me->kind() == error_kind::usage ? 2 : 1;
}

int dispatch(const command& cmd, const parsed& p) {
  using fe::operation;
  switch (cmd.op) {
    case operation::info: return cmd_info(p);
    case operation::forward: return cmd_forward(p);
    case operation::generate: return cmd_generate(p);
    case operation::score: return cmd_score(p);
    case operation::eval: return cmd_eval(p);
    case operation::demo: return cmd_demo(p);
    case operation::solve: return cmd_solve(p);
    case operation::ae: return cmd_ae(p);
    case operation::tokenize: return cmd_tokenize(p);
    case operation::serve: return cmd_serve(p);
    case operation::load: break;  // the load-time option table, not a command
  }
  return 1;
}

}  // namespace
}  // namespace muninn::cli

int main(int argc, char** argv) {
  using namespace muninn::cli;
  if (argc < 2) {
    std::cerr << "muninn: error: no command given; muninn --help lists the commands\n";
    return 2;
  }
  const std::string name = argv[1];
  try {
    if (name == "--help" || name == "-h" || name == "help") {
      print_usage(std::cout);
      return 0;
    }
    if (name == "--version") {
      std::cout << "muninn " << MUNINN_VERSION << "\n";
      return 0;
    }
    const command* cmd = find_command(name);
    if (!cmd) {
      std::string names;
      for (const auto& c : commands()) names += (names.empty() ? "" : ", ") + c.name;
      muninn::fail_as(muninn::error_kind::usage, "unknown command '", name, "' (commands: ", names, ")");
    }
    const parsed p = parse(*cmd, argc, argv);
    if (p.help) {
      print_help(*cmd, std::cout);
      return 0;
    }
    return dispatch(*cmd, p);
  } catch (const std::exception& e) {
    return report(e);
  }
}
