#pragma once
/// \file
/// \brief Hugging Face chat templates: a restricted, safe Jinja2 interpreter for the `chat_template` of
/// `tokenizer_config.json`, rendering as transformers' `apply_chat_template` does.
///
/// Supported: text, `{{ }}`, `{% %}`, `{# #}` with `-`/`+` whitespace control and transformers' settings
/// (trim_blocks, lstrip_blocks, final newline dropped); `for` (several targets, `loop.*`, `else`, `break`,
/// `continue`), `if/elif/else`, `set name = ...`, `set ns.attr = ...`, `generation`; literals, lists,
/// dicts, attribute/item access, slices, arithmetic, `~`, comparisons, `and/or/not`, `in`, `is` tests,
/// ternaries; filters trim, length, count, upper, lower, tojson, default, first, last, join, replace,
/// string, capitalize, items, list, safe; functions raise_exception, namespace, dict, range; str and dict
/// methods (strip, split, startswith, items, get, ...). Anything else is a muninn::error naming the origin,
/// line, column and construct.
///
/// A template is untrusted input (it ships with every checkpoint). Rendering is bounded by template_limits, each
/// charged before the work or bytes it pays for; integers are 64-bit and an overflow is an error naming the
/// operation; expression trees, statement nesting and the values printed or compared are depth-limited, and
/// values are freed without recursion; a namespace cannot be made to contain itself. Every failure is a
/// muninn::error.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "muninn/io/jinja_eval.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/tokenizer.hpp"

namespace muninn::io {

/// \brief Extra string variables of a render: `bos_token`, `eos_token` and any other the template reads.
using chat_variables = std::map<std::string, std::string>;

/// \brief A parsed chat template, rendered any number of times (rendering is const and thread-safe).
class chat_template {
 public:
  /// \brief Parses `source`; `origin` (usually a file path) is named in every error.
  /// \throws muninn::error "origin:line:column: chat template syntax error: ..." on unsupported syntax
  static chat_template parse(std::string source, std::string origin, template_limits limits = {}) {
    chat_template t;
    t.origin_ = std::move(origin);
    t.source_ = detail::jinja::normalise_source(source);
    t.limits_ = limits;
    detail::jinja::lexer lex(t.source_, t.origin_);
    t.body_ = detail::jinja::parser(lex.run(), t.source_, t.origin_, limits.max_depth).parse_template();
    return t;
  }

  /// \brief The template of a parsed tokenizer_config.json: `chat_template` as a string, or the entry named
  /// "default" of a list of `{"name", "template"}` objects.
  /// \throws muninn::error when the config has no usable chat template
  static chat_template from_config(const json& config, const std::string& origin, template_limits limits = {}) {
    const json* t = config.is_object() ? config.find("chat_template") : nullptr;
    if (!t) fail(origin, ": no \"chat_template\" in the tokenizer config");
    if (t->is_string()) return parse(t->as_string(), origin, limits);
    if (t->is_array())
      for (const json& entry : t->as_array())
        if (entry.is_object() && entry.contains("name") && entry.at("name").is_string() &&
            entry.at("name").as_string() == "default" && entry.contains("template"))
          return parse(entry.at("template").as_string(), origin, limits);
    fail(origin, ": \"chat_template\" is neither a string nor a list with a \"default\" entry");
  }

  /// \brief Reads `tokenizer_config.json` at `path` and parses its chat template.
  static chat_template from_tokenizer_config(const std::string& path, template_limits limits = {}) {
    return from_config(read_json_file(path), path, limits);
  }

  /// \brief `bos_token`, `eos_token` (and the other special tokens that are set) of a tokenizer config:
  /// each a string or an object with "content".
  static chat_variables special_tokens(const json& config) {
    chat_variables vars;
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
      const json* v = config.is_object() ? config.find(key) : nullptr;
      if (v && v->is_string()) vars[key] = v->as_string();
      else if (v && v->is_object() && v->contains("content") && v->at("content").is_string())
        vars[key] = v->at("content").as_string();
    }
    return vars;
  }

  /// \brief Renders `messages` as transformers' apply_chat_template(tokenize=False) does; `extra` adds string
  /// variables (bos_token, eos_token, ...). `tools` and `documents` are none.
  /// \throws muninn::error for a runtime error, a raise_exception() call or an exceeded limit
  std::string render(const std::vector<chat_message>& messages, bool add_generation_prompt,
                     const chat_variables& extra = {}) const {
    using detail::jinja::value;
    std::map<std::string, value> globals;
    for (const auto& [k, v] : extra) globals[k] = value::string(v);
    detail::jinja::list_t list;
    for (const chat_message& m : messages)
      list.push_back(value::dict({{"role", value::string(m.role)}, {"content", value::string(m.content)}}));
    globals["messages"] = value::list(std::move(list));
    globals["add_generation_prompt"] = value::boolean(add_generation_prompt);
    globals["tools"] = value::none();
    globals["documents"] = value::none();
    return detail::jinja::evaluator(source_, origin_, limits_).render(body_, std::move(globals));
  }

  /// \brief The origin named in errors.
  const std::string& origin() const { return origin_; }

 private:
  chat_template() = default;
  std::string origin_;
  std::string source_;
  template_limits limits_;
  std::vector<detail::jinja::stmt> body_;
};

}  // namespace muninn::io
