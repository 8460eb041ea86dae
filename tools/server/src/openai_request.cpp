// Reading OpenAI request bodies: the API's fields, the model's extra fields, nothing else.

#include "openai_request.hpp"

#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <regex>
#include <utility>

#include "muninn/core/error.hpp"
#include "muninn/frontend/registry.hpp"
#include "muninn/frontend/text.hpp"
#include "muninn/io/json_writer.hpp"
#include "muninn/server/server.hpp"

namespace muninn::server {
namespace {

namespace fe = muninn::frontend;
using io::json;

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  fail_as(error_kind::usage, "'", field, "' ", what);
}

std::string field_string(const json& v, const std::string& field) {
  if (!v.is_string()) bad(field, "must be a string, got " + std::string(v.type_name()));
  return v.as_string();
}

bool field_bool(const json& v, const std::string& field) {
  if (!v.is_bool()) bad(field, "must be a boolean, got " + std::string(v.type_name()));
  return v.as_bool();
}

std::int64_t field_int(const json& v, const std::string& field) {
  if (!v.is_int()) bad(field, "must be an integer, got " + (v.is_number() ? "a fraction" : std::string(v.type_name())));
  return v.as_int();
}

double field_number(const json& v, const std::string& field) {
  if (!v.is_number()) bad(field, "must be a number, got " + std::string(v.type_name()));
  return v.as_double();
}

std::string number_text(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

// The model's own options a request may give, by field name: every generate option a batch can
// honour (speculative decoding, the parallel sampler and file dumps are single-sequence). The
// issue's short name `threshold` is the exit threshold.
const std::vector<std::pair<std::string, std::string>>& extra_fields() {
  static const std::vector<std::pair<std::string, std::string>> f = {
      {"steps", "steps"},           {"init_state", "init-state"},   {"routing", "routing"},
      {"exit", "exit"},             {"threshold", "exit-threshold"}, {"exit_threshold", "exit-threshold"},
      {"min_steps", "min-steps"},   {"max_steps", "max-steps"},     {"check_every", "check-every"},
      {"prefill_exit", "prefill-exit"}, {"exit_parity", "exit-parity"}, {"warm_start", "warm-start"},
      {"kv_budget", "kv-budget"},   {"kv_fallback", "kv-fallback"}, {"top_k", "top-k"},
      {"min_p", "min-p"},           {"repetition_penalty", "repetition-penalty"}, {"sampler", "sampler"},
      {"num_samples", "num-samples"}, {"max_draws", "max-draws"}};
  return f;
}

// Sets option `name` from field `field`, typed as the option table says.
void set_option(parsed_request& r, const std::string& field, const std::string& name, const json& v) {
  const fe::option_spec* s = fe::find_option(fe::operation::generate, name);
  if (!s) bad(field, "is not an option of this build");
  if (r.options.has(name)) bad(field, "is given twice (under another name)");
  switch (s->type) {
    case fe::value_type::integer: r.options.set(name, std::to_string(field_int(v, field))); break;
    case fe::value_type::number: r.options.set(name, number_text(field_number(v, field))); break;
    case fe::value_type::flag:
      if (field_bool(v, field)) r.options.set(name, "1");
      return;
    default: r.options.set(name, field_string(v, field)); break;
  }
  r.echo.emplace_back(field, v);
}

std::vector<std::string> stop_strings(const json& v) {
  if (v.is_string()) return {v.as_string()};
  if (!v.is_array()) bad("stop", "must be a string or an array of strings");
  if (v.size() > 4) bad("stop", "holds " + std::to_string(v.size()) + " strings; at most 4 are allowed");
  std::vector<std::string> out;
  for (const auto& s : v.as_array()) out.push_back(field_string(s, "stop"));
  return out;
}

std::vector<std::int32_t> id_list(const json& v, const std::string& field) {
  std::vector<std::int32_t> ids;
  for (const auto& t : v.as_array()) {
    const std::int64_t id = field_int(t, field);
    if (id < 0 || id > INT32_MAX) bad(field, "holds the token id " + std::to_string(id) + ", outside [0, 2^31)");
    ids.push_back(std::int32_t(id));
  }
  return ids;
}

std::vector<std::int32_t> completion_prompt(const json& v, const fe::loaded_model& m) {
  const std::string& dir = m.info().path;
  if (v.is_string()) return fe::encode_prompt(m, dir, v.as_string(), "prompt");
  if (!v.is_array()) bad("prompt", "must be a string, an array of token ids, or an array holding one of those");
  if (v.size() == 1 && (v[0].is_string() || v[0].is_array())) {
    if (v[0].is_string()) return fe::encode_prompt(m, dir, v[0].as_string(), "prompt");
    return id_list(v[0], "prompt");
  }
  if (v.size() > 0 && (v[0].is_string() || v[0].is_array()))
    bad("prompt", "holds " + std::to_string(v.size()) + " prompts; this server takes one per request");
  return id_list(v, "prompt");
}

std::string message_content(const json& c, std::size_t i) {
  const std::string field = "messages[" + std::to_string(i) + "].content";
  if (c.is_null()) return "";
  if (c.is_string()) return c.as_string();
  if (!c.is_array()) bad(field, "must be a string or an array of text parts");
  std::string text;
  for (const auto& part : c.as_array()) {
    if (!part.is_object() || !part.contains("type") || !part.at("type").is_string() ||
        part.at("type").as_string() != "text" || !part.contains("text"))
      bad(field, "may only hold parts of type \"text\" with a \"text\" string");
    text += field_string(part.at("text"), field + ".text");
  }
  return text;
}

std::vector<std::int32_t> chat_prompt(const json& v, const fe::loaded_model& m) {
  if (!v.is_array() || v.size() == 0) bad("messages", "must be a non-empty array of messages");
  std::vector<fe::chat_turn> turns;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& msg = v[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) bad(field, "must be an object with a role and a content");
    for (const auto& [key, val] : msg.as_object())
      if (key != "role" && key != "content" && key != "name") bad(field + "." + key, "is not supported");
    if (!msg.contains("role")) bad(field, "has no role");
    const std::string role = field_string(msg.at("role"), field + ".role");
    if (role != "system" && role != "user" && role != "assistant" && role != "developer")
      bad(field + ".role", "must be system, developer, user or assistant, got '" + role + "'");
    turns.push_back({role == "developer" ? "system" : role, msg.contains("content") ? message_content(msg.at("content"), i) : ""});
  }
  const std::string& dir = m.info().path;
  return fe::encode_rendered(m, dir, fe::render_chat(dir, turns, "messages"), "messages");
}

std::uint64_t random_seed() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> l(mu);
  return rng() & ((std::uint64_t(1) << 53) - 1);  // the option table's range: integers a double holds
}

// Fields of the OpenAI API that this server accepts only at their neutral value.
void neutral_only(const std::string& key, const json& v) {
  const auto zero = [&] { return v.is_number() && v.as_double() == 0.0; };
  const auto one = [&] { return v.is_int() && v.as_int() == 1; };
  if (key == "n" || key == "best_of") {
    if (!one()) bad(key, "must be 1 (one choice per request)");
  } else if (key == "presence_penalty" || key == "frequency_penalty") {
    if (!zero()) bad(key, "is not supported (use repetition_penalty)");
  } else if (key == "logprobs" || key == "echo" || key == "top_logprobs") {
    if (!(zero() || (v.is_bool() && !v.as_bool()))) bad(key, "is not supported");
  } else if (key == "logit_bias") {
    if (!(v.is_object() && v.size() == 0)) bad(key, "is not supported");
  } else if (key == "response_format") {
    if (!(v.is_object() && v.contains("type") && v.at("type").is_string() && v.at("type").as_string() == "text"))
      bad(key, "supports only {\"type\": \"text\"}");
  } else if (key == "user") {
    (void)field_string(v, key);
  } else if (key == "suffix") {
    bad(key, "is not supported");
  } else {
    bad(key, "is not a field of this endpoint");
  }
}

}  // namespace

std::string with_field_names(std::string msg) {
  static const std::regex max_new("max_new_tokens");
  return std::regex_replace(msg, max_new, "max_tokens");
}

parsed_request parse_request(endpoint kind, const std::string& body, const fe::loaded_model& m, const settings& s) {
  const json root = fe::as_kind(error_kind::usage, [&] { return io::parse_json(body, "request body"); });
  if (!root.is_object()) fail_as(error_kind::usage, "the request body must be a JSON object, got ", root.type_name());
  parsed_request r;
  r.kind = kind;
  bool have_prompt = false, seed_given = false, ignore_eos = false;
  std::int64_t max_tokens = -1;
  const bool chat = kind == endpoint::chat;
  for (const auto& [key, v] : root.as_object()) {
    if (key == (chat ? "messages" : "prompt")) {
      r.prompt = chat ? chat_prompt(v, m) : completion_prompt(v, m);
      have_prompt = true;
      continue;
    }
    if (v.is_null()) continue;  // the API's way of leaving an optional field out
    if (key == "model") {
      (void)field_string(v, key);
    } else if (key == "stream") {
      r.stream = field_bool(v, key);
    } else if (key == "stream_options") {
      if (!v.is_object()) bad(key, "must be an object");
      for (const auto& [k, x] : v.as_object()) {
        if (k != "include_usage") bad("stream_options." + k, "is not supported");
        r.include_usage = field_bool(x, "stream_options.include_usage");
      }
    } else if (key == "max_tokens" || (chat && key == "max_completion_tokens")) {
      if (max_tokens >= 0) bad(key, "is given twice (max_tokens and max_completion_tokens)");
      max_tokens = field_int(v, key);
      if (max_tokens < 1) bad(key, "must be at least 1, got " + std::to_string(max_tokens));
      if (max_tokens > (1 << 20)) bad(key, "must be at most 1048576, got " + std::to_string(max_tokens));
    } else if (key == "temperature" || key == "top_p") {
      set_option(r, key, key == "top_p" ? "top-p" : "temperature", v);
    } else if (key == "seed") {
      set_option(r, key, "seed", v);
      seed_given = true;
    } else if (key == "stop") {
      r.stop = stop_strings(v);
    } else if (key == "ignore_eos") {
      ignore_eos = field_bool(v, key);
    } else {
      bool extra = false;
      for (const auto& [field, name] : extra_fields())
        if (field == key) {
          set_option(r, key, name, v);
          extra = true;
        }
      if (!extra) neutral_only(key, v);
    }
  }
  if (!have_prompt) fail_as(error_kind::usage, "'", chat ? "messages" : "prompt", "' is required");
  if (r.include_usage && !r.stream) bad("stream_options", "is only allowed with stream: true");
  if (!r.options.has("temperature")) r.options.set("temperature", "1");  // the API's default: sampling at T = 1
  if (seed_given) {
    r.seed = std::uint64_t(r.options.integer("seed"));
  } else {
    r.seed = random_seed();
    r.options.set("seed", std::to_string(r.seed));
  }
  if (max_tokens < 0) {  // the API's defaults: 16 for a completion, the rest of the context for a chat
    const std::int64_t ctx = s.context > 0 ? s.context : m.info().context;
    max_tokens = chat ? std::max<std::int64_t>(1, ctx - std::int64_t(r.prompt.size())) : 16;
  }
  r.options.set("max-new-tokens", std::to_string(max_tokens));
  if (!ignore_eos) r.stop_ids = m.eos_ids();
  r.options.validate();
  for (const auto& e : fe::family_table())
    if (e.name == m.info().family) fe::check_applicable(e, r.options);
  return r;
}

}  // namespace muninn::server
