// Prompts, chat templates, end-of-sequence ids and the small formatting helpers the adapters share.

#include "muninn/frontend/text.hpp"

#include <filesystem>
#include <sstream>

#include "common.hpp"
#include "muninn/io/chat_template.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/tokenizer.hpp"

namespace muninn::frontend {
namespace fs = std::filesystem;

namespace {

const io::tokenizer& require_tokenizer(const loaded_model& m, const std::string& dir, const std::string& flag) {
  if (!m.tokenizer())
    fail_as(error_kind::usage, flag, " needs a tokenizer: ", dir, "/tokenizer.json does not exist (give token ids)");
  return *m.tokenizer();
}

std::vector<std::int32_t> eos_field(const io::json& cfg, const std::string& path, std::int64_t vocab) {
  std::vector<std::int32_t> ids;
  const io::json* v = cfg.is_object() ? cfg.find("eos_token_id") : nullptr;
  if (!v || v->is_null()) return ids;
  const auto add = [&](const io::json& x) {
    if (!x.is_int() || x.as_int() < 0 || x.as_int() >= vocab)
      fail_as(error_kind::config, path, ": eos_token_id must hold token ids in [0, ", vocab, ")");
    ids.push_back(std::int32_t(x.as_int()));
  };
  if (v->is_array())
    for (const auto& x : v->as_array()) add(x);
  else
    add(*v);
  return ids;
}

}  // namespace

std::string render_chat(const std::string& dir, const std::vector<chat_turn>& messages, const std::string& flag) {
  const std::string jinja = dir + "/chat_template.jinja", cfg_path = dir + "/tokenizer_config.json";
  std::error_code ec;
  io::json cfg;
  const bool has_cfg = fs::is_regular_file(cfg_path, ec);
  if (has_cfg) cfg = as_kind(error_kind::config, [&] { return io::read_json_file(cfg_path); });
  std::vector<io::chat_message> msgs;
  for (const auto& [role, content] : messages) msgs.push_back({role, content});
  const auto vars = has_cfg ? io::chat_template::special_tokens(cfg) : io::chat_variables{};
  return as_kind(error_kind::config, [&] {
    if (fs::is_regular_file(jinja, ec))  // read_text_file checks again on the descriptor
      return io::chat_template::parse(io::read_text_file(jinja), jinja).render(msgs, true, vars);
    if (!has_cfg || !cfg.find("chat_template"))
      fail_as(error_kind::usage, flag, " needs a chat template: ", dir, " has no chat_template.jinja and ",
              has_cfg ? cfg_path + " has no \"chat_template\"" : "no tokenizer_config.json");
    return io::chat_template::from_config(cfg, cfg_path).render(msgs, true, vars);
  });
}

std::vector<std::int32_t> encode_prompt(const loaded_model& m, const std::string& dir, const std::string& text,
                                        const std::string& flag) {
  const io::tokenizer& tok = require_tokenizer(m, dir, flag);
  auto ids = tok.encode(text, m.prompt_adds_special_tokens());
  if (ids.empty()) fail_as(error_kind::usage, flag, " encodes to no tokens");
  return ids;
}

std::vector<std::int32_t> encode_rendered(const loaded_model& m, const std::string& dir, const std::string& rendered,
                                          const std::string& flag) {
  auto ids = require_tokenizer(m, dir, flag).encode(rendered, false);
  if (ids.empty()) fail_as(error_kind::usage, flag, " encodes to no tokens");
  return ids;
}

std::vector<std::int32_t> encode_text(const loaded_model& m, const std::string& text, bool add_special) {
  if (!m.tokenizer()) fail("encode_text: ", m.info().path, " has no tokenizer");
  return m.tokenizer()->encode(text, add_special);
}

std::string decode(const loaded_model& m, const std::vector<std::int32_t>& ids) {
  return m.tokenizer() ? m.tokenizer()->decode(ids) : std::string();
}

std::vector<std::int32_t> read_eos_ids(const std::string& dir, std::int64_t vocab) {
  std::error_code ec;
  for (const char* name : {"generation_config.json", "config.json"}) {
    const std::string path = dir + "/" + name;
    if (!fs::is_regular_file(path, ec)) continue;
    const io::json cfg = as_kind(error_kind::config, [&] { return io::read_json_file(path); });
    if (cfg.is_object() && cfg.find("eos_token_id")) return eos_field(cfg, path, vocab);
  }
  return {};
}

namespace detail {

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

std::string join_ids(const std::vector<std::int32_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

void read_text_files(const model_folder& f, lm_extras& x) {
  std::error_code ec;
  const std::string tj = f.dir + "/tokenizer.json";
  if (fs::is_regular_file(tj, ec))
    x.tokenizer = std::make_shared<const io::tokenizer>(
        as_kind(error_kind::config, [&] { return io::tokenizer::from_file(tj); }));
  x.eos = read_eos_ids(f.dir, x.info.vocab_size);
}

}  // namespace detail
}  // namespace muninn::frontend
