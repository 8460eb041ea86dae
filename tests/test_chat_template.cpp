// Tests of muninn::io::chat_template: real chat templates rendered as transformers' apply_chat_template renders
// them (expected.json, written by tests/data/chat_templates/make_expected.py), and the errors of bad or hostile
// templates.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "muninn/io/chat_template.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/tokenizer.hpp"

#ifndef MUNINN_TEST_DATA_DIR
#define MUNINN_TEST_DATA_DIR "tests/data"
#endif

namespace {

using muninn::io::chat_message;
using muninn::io::chat_template;
using muninn::io::chat_variables;
using muninn::io::json;

const std::string dir = std::string(MUNINN_TEST_DATA_DIR) + "/chat_templates/";

std::vector<chat_message> messages_of(const json& a) {
  std::vector<chat_message> out;
  for (const json& m : a.as_array()) out.push_back({m.at("role").as_string(), m.at("content").as_string()});
  return out;
}

chat_variables vars_of(const json& o) {
  chat_variables v;
  for (const auto& [k, x] : o.as_object()) v[k] = x.as_string();
  return v;
}

chat_template load(const std::string& name) {
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") return chat_template::from_tokenizer_config(dir + name);
  return chat_template::parse(muninn::io::read_text_file(dir + name), name);
}

// The error message of `f`, or "" when it does not throw.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const muninn::error& e) {
    return e.what();
  }
  return "";
}

TEST(ChatTemplate, MatchesTransformers) {
  const json cases = muninn::io::read_json_file(dir + "expected.json");
  ASSERT_GE(cases.size(), 30u);
  for (const json& c : cases.as_array()) {
    const std::string name = c.at("template").as_string();
    SCOPED_TRACE(name + " add_generation_prompt=" + (c.at("add_generation_prompt").as_bool() ? "true" : "false"));
    const chat_template t = load(name);
    const auto render = [&] {
      return t.render(messages_of(c.at("messages")), c.at("add_generation_prompt").as_bool(), vars_of(c.at("vars")));
    };
    if (c.contains("text")) {
      EXPECT_EQ(render(), c.at("text").as_string());
    } else {
      const std::string err = error_of(render);
      EXPECT_NE(err.find("raised an exception: " + c.at("error").as_string()), std::string::npos) << err;
      EXPECT_NE(err.find(name + ":1:"), std::string::npos) << err;
    }
  }
}

TEST(ChatTemplate, HuginnTemplateMatchesTheTokenizer) {
  const chat_template t = load("huginn.jinja");
  const std::vector<std::vector<chat_message>> convs = {
      {{"system", "s"}, {"user", "  u  "}, {"assistant", "a"}, {"Huginn", "h"}, {"tool", "t\n"}}, {}, {{"user", "x"}}};
  for (const auto& m : convs)
    for (bool gen : {true, false}) EXPECT_EQ(t.render(m, gen), muninn::io::tokenizer::apply_chat_template(m, gen));
}

TEST(ChatTemplate, TinyLlamaConfigMatchesItsFixture) {
  const std::string cfg_path = std::string(MUNINN_TEST_DATA_DIR) + "/llama/tiny_text/tokenizer_config.json";
  const json expected = muninn::io::read_json_file(std::string(MUNINN_TEST_DATA_DIR) + "/llama/tiny_text/expected.json");
  const json& chat = expected.at("chat");
  const chat_template t = chat_template::from_tokenizer_config(cfg_path);
  const chat_variables vars = chat_template::special_tokens(muninn::io::read_json_file(cfg_path));
  EXPECT_EQ(t.render(messages_of(chat.at("messages")), chat.at("add_generation_prompt").as_bool(), vars),
            chat.at("text").as_string());
}

TEST(ChatTemplate, ConfigForms) {
  const json list = muninn::io::parse_json(
      R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D{{ eos_token }}"}],
          "eos_token": {"content": "</s>", "lstrip": false}})", "cfg");
  EXPECT_EQ(chat_template::from_config(list, "cfg").render({}, false, chat_template::special_tokens(list)), "D</s>");
  const json none = muninn::io::parse_json(R"({"bos_token": "<s>"})", "cfg");
  EXPECT_NE(error_of([&] { chat_template::from_config(none, "cfg"); }).find("no \"chat_template\""), std::string::npos);
}

TEST(ChatTemplate, ErrorsNameOriginLineAndConstruct) {
  const auto parse_error = [](const std::string& src) { return error_of([&] { chat_template::parse(src, "t.jinja"); }); };
  const auto render_error = [](const std::string& src) {
    return error_of([&] { chat_template::parse(src, "t.jinja").render({{"user", "x"}}, true); });
  };
  EXPECT_NE(render_error("a\n  {{ messages | frobnicate }}").find("t.jinja:2:17: chat template error: unknown filter 'frobnicate'"),
            std::string::npos) << render_error("a\n  {{ messages | frobnicate }}");
  EXPECT_NE(parse_error("{% if true %}x").find("t.jinja:1:15: chat template syntax error: unclosed block"), std::string::npos)
      << parse_error("{% if true %}x");
  EXPECT_NE(parse_error("x {{ 1 + ").find("t.jinja:1:3: chat template syntax error: unclosed tag '{{'"), std::string::npos)
      << parse_error("x {{ 1 + ");
  EXPECT_NE(parse_error("{% macro m() %}{% endmacro %}").find("unsupported statement '{% macro %}'"), std::string::npos);
  EXPECT_NE(parse_error("{# open").find("unclosed comment"), std::string::npos);
  EXPECT_NE(render_error("{{ nope(1) }}").find("unknown function 'nope'"), std::string::npos);
  EXPECT_NE(render_error("{{ raise_exception('bad role: ' ~ messages[0].role) }}").find(
                "t.jinja:1:19: chat template raised an exception: bad role: user"), std::string::npos)
      << render_error("{{ raise_exception('bad role: ' ~ messages[0].role) }}");
  EXPECT_NE(render_error("{{ x.y }}").find("'y' of an undefined value"), std::string::npos);
  EXPECT_NE(render_error("{% set x = 1 %}{% set x.y = 2 %}").find("not a namespace"), std::string::npos);
}

TEST(ChatTemplate, HostileTemplatesStopAtTheLimits) {
  const auto render_error = [](const std::string& src, muninn::io::template_limits lim = {}) {
    return error_of([&] { chat_template::parse(src, "evil", lim).render({}, false); });
  };
  EXPECT_NE(render_error("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}").find("output exceeds 16777216 bytes"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 'x' * 100000000000 }}").find("string exceeds"), std::string::npos);
  EXPECT_NE(render_error("{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}").find(
                "loop iterations"), std::string::npos);
  EXPECT_NE(render_error("{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}").find("too deeply"), std::string::npos);
  muninn::io::template_limits small;
  small.max_output_bytes = 10;
  EXPECT_NE(render_error("{{ 'abcdef' }}{{ 'ghijkl' }}", small).find("evil:1:15: chat template error: output exceeds 10"),
            std::string::npos) << render_error("{{ 'abcdef' }}{{ 'ghijkl' }}", small);
}

}  // namespace
