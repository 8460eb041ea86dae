// Tests of muninn::io::chat_template: real chat templates rendered as transformers' apply_chat_template renders
// them (expected.json, written by tests/data/chat_templates/make_expected.py), and the errors of bad or hostile
// templates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "muninn/io/chat_template.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/tokenizer.hpp"
#include "test_io_util.hpp"

#ifndef MUNINN_TEST_DATA_DIR
#define MUNINN_TEST_DATA_DIR "tests/data"
#endif

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_chat_template {

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

// A hostile template renders in a child process (limited to 2 GiB and 30 s), so that a crash, a hang or a
// runaway allocation fails the test instead of the suite. Returns "rendered: <text>" or the error message.
std::string hostile(const std::string& src, const muninn::io::template_limits& limits = {}) {
  return muninn_test::outcome_in_child(
      [&] {
        const std::string out = chat_template::parse(src, "evil", limits).render({{"user", "hi"}}, true);
        muninn::fail("rendered: ", out);
      },
      30, std::size_t(2) << 30);
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int k = 0; k < n; ++k) out += s;
  return out;
}

TEST(ChatTemplate, IntegerArithmeticIsChecked) {
  const std::string min = "{% set m = -9223372036854775807 - 1 %}";
  EXPECT_EQ(hostile("{{ 9223372036854775807 + 1 }}"),
            "evil:1:24: chat template error: integer overflow: 9223372036854775807 + 1 does not fit in 64 bits");
  EXPECT_THAT(hostile("{{ -9223372036854775807 - 2 }}"), testing::HasSubstr("integer overflow: -9223372036854775807 - 2"));
  EXPECT_THAT(hostile("{{ 4611686018427387904 * 2 }}"), testing::HasSubstr("integer overflow: 4611686018427387904 * 2"));
  EXPECT_THAT(hostile(min + "{{ -m }}"), testing::HasSubstr("integer overflow: -(-9223372036854775808)"));
  EXPECT_THAT(hostile(min + "{{ m // -1 }}"), testing::HasSubstr("integer overflow: -9223372036854775808 // -1"));
  EXPECT_EQ(hostile(min + "{{ m % -1 }} {{ m // 1 }} {{ 7 // -1 }}"), "rendered: 0 -9223372036854775808 -7");
  // range() and slices step without overflowing past the end (Python's results)
  EXPECT_EQ(hostile("{{ range(9223372036854775806, 9223372036854775807, 10) | list }}"), "rendered: [9223372036854775806]");
  EXPECT_EQ(hostile("{{ range(-9223372036854775807, 9223372036854775807, 4611686018427387904) | list }}"),
            "rendered: [-9223372036854775807, -4611686018427387903, 1, 4611686018427387905]");
  EXPECT_EQ(hostile("{{ [1, 2, 3][1::9223372036854775807] }} {{ [1, 2, 3][::-9223372036854775807 - 1] }} "
                    "{{ 'abc'[-9223372036854775807 - 1:] }}"),
            "rendered: [2] [3] abc");
  // literals that do not fit: errors, not std::out_of_range
  EXPECT_EQ(hostile("{{ messages.99999999999999999999 }}"),
            "evil:1:13: chat template syntax error: integer literal 99999999999999999999 is out of range");
  EXPECT_THAT(hostile("{{ 1" + std::string(400, '0') + ".5 }}"), testing::HasSubstr("float literal 1000"));
}

TEST(ChatTemplate, NothingRecursesInProportionToTheTemplateOrItsData) {
  // chains the parser reads in a loop build trees as deep as they are long
  for (const char* link : {"+1", " ~ 'a'", "|string", ".a", "[0]", "()", " is defined", " or 1", " * 1"}) {
    SCOPED_TRACE(link);
    EXPECT_THAT(hostile("{{ 1" + repeat(link, 20000) + " }}"),
                testing::HasSubstr("chat template syntax error: expression nested too deeply (more than 64 levels"));
  }
  EXPECT_EQ(hostile("{{ 1" + repeat("+1", 50) + " }}"), "rendered: 51");
  // a list nested in itself 200000 times is freed without recursion; printing, serialising and comparing a
  // list nested deeper than the limit stop there
  EXPECT_EQ(hostile("{% set ns = namespace(a=[]) %}{% for i in range(200000) %}{% set ns.a = [ns.a] %}{% endfor %}"
                    "{{ ns.a | length }}"),
            "rendered: 1");
  const std::string deep = "{% set ns = namespace(a=[], b=[]) %}{% for i in range(100) %}"
                           "{% set ns.a = [ns.a] %}{% set ns.b = [ns.b] %}{% endfor %}";
  for (const char* use : {"{{ ns.a }}", "{{ ns.a | tojson }}", "{{ ns.a == ns.b }}", "{{ ns.a in [ns.b] }}",
                                 "{{ ns.a | string }}", "{{ ns }}"}) {
    SCOPED_TRACE(use);
    EXPECT_THAT(hostile(deep + use), testing::HasSubstr("a value nested more than 64 levels deep"));
  }
  // a namespace cannot be made to hold itself (printing or freeing a cycle would never end)
  EXPECT_EQ(hostile("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"),
            "evil:1:30: chat template error: 'ns.me' would hold the namespace itself; a value that contains itself is "
            "not supported");
  EXPECT_THAT(hostile("{% set ns = namespace(l=[]) %}{% set ns.l = [1, {'x': [ns]}] %}"),
              testing::HasSubstr("would hold the namespace itself"));
}

TEST(ChatTemplate, WorkAndBytesAreChargedAsTheyAreProduced) {
  // Smaller limits than the defaults keep this quick under the sanitizers; the defaults are charged the same way.
  muninn::io::template_limits small;
  small.max_output_bytes = 1 << 20;
  small.max_produced_bytes = 8 << 20;
  small.max_work = 1'000'000;
  // a structure doubled 56 times (2^56 leaves in 57 shared nodes) is printed only until a limit says stop
  const std::string doubled = "{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(56) %}"
                              "{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}";
  EXPECT_THAT(hostile(doubled + "{{ ns.a }}", small), testing::HasSubstr("output exceeds 1048576 bytes"));
  EXPECT_THAT(hostile(doubled + "{{ ns.a | tojson(indent=2) }}", small), testing::HasSubstr("string exceeds 1048576 bytes"));
  EXPECT_THAT(hostile(doubled + "{{ ns.a ~ 'x' }}", small), testing::HasSubstr("string exceeds 1048576 bytes"));
  EXPECT_THAT(hostile(doubled + "{{ ns.a == ns.b }}", small), testing::HasSubstr("more than 1000000 steps of work"));
  EXPECT_THAT(hostile(doubled + "{{ ns.a in [ns.b] }}", small), testing::HasSubstr("more than 1000000 steps of work"));
  EXPECT_EQ(hostile(doubled + "{{ ns.a == ns.a }}"), "rendered: True");  // the same list, as Python's identity check
  // quadratic growth: every intermediate string and list counts
  EXPECT_THAT(hostile("{% set ns = namespace(s='') %}{% for i in range(500000) %}"
                      "{% set ns.s = ns.s ~ 'xxxxxxxxxxxxxxxx' %}{% endfor %}{{ ns.s | length }}", small),
              testing::HasSubstr("builds more than 8388608 bytes of strings in all"));
  EXPECT_THAT(hostile("{% set ns = namespace(l=[]) %}{% for i in range(300000) %}{% set ns.l = ns.l + [i] %}"
                      "{% endfor %}{{ ns.l | length }}"),
              testing::HasSubstr("more than 1000000 loop iterations and list items"));
  // size arguments are bounded before anything is built
  EXPECT_EQ(hostile("{{ [[1]] | tojson(indent=1000000000) }}"),
            "evil:1:12: chat template error: tojson indent 1000000000 is outside [0, 64]");
  EXPECT_EQ(hostile("{{ [[1]] | tojson(indent=2) }}"), "rendered: [\n  [\n    1\n  ]\n]");
  // a long string is walked, not copied into a list of characters, and a long list is not copied per loop
  EXPECT_EQ(hostile("{% set s = 'x' * 16000000 %}{% for c in s %}{% if loop.index > 2 %}{% break %}{% endif %}{{ c }}"
                    "{% endfor %}{% set r = range(900000) %}{% for i in range(40) %}{% for x in r %}{% break %}"
                    "{% endfor %}{% endfor %}"),
            "rendered: xx");
}

}  // namespace

}  // namespace test_chat_template
