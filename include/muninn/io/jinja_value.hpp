#pragma once
/// \file
/// \brief Values of the chat-template interpreter (Python-like: none, bool, int, float, str, list, dict) and
/// the limits that keep a hostile template from hanging or exhausting memory.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/json.hpp"

namespace muninn::io {

/// \brief Caps that make rendering an untrusted chat template terminate with a clear muninn::error.
struct template_limits {
  std::size_t max_output_bytes = std::size_t(16) << 20;  ///< Rendered text and any single string value.
  std::size_t max_iterations = 1'000'000;                ///< Loop iterations over the whole render.
  std::size_t max_depth = 64;                            ///< Nesting of statements and expressions.
};

namespace detail::jinja {

struct value;
/// A list; shared so that, as in Python, two names can see the same list.
using list_t = std::vector<value>;
/// A dict with string keys in insertion order (Python dicts keep it, and tojson/items show it).
using dict_t = std::vector<std::pair<std::string, value>>;

/// One runtime value. `undefined` is Jinja's Undefined: renders empty, is false, fails when used further.
struct value {
  enum class kind { undefined, none, boolean, integer, floating, string, list, dict };
  kind k = kind::undefined;
  bool b = false;
  std::int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::shared_ptr<list_t> items;
  std::shared_ptr<dict_t> members;
  bool is_namespace = false;  // a namespace() object: the only dict whose attributes `set` may assign

  static value none() { value v; v.k = kind::none; return v; }
  static value boolean(bool x) { value v; v.k = kind::boolean; v.b = x; return v; }
  static value integer(std::int64_t x) { value v; v.k = kind::integer; v.i = x; return v; }
  static value floating(double x) { value v; v.k = kind::floating; v.f = x; return v; }
  static value string(std::string x) { value v; v.k = kind::string; v.s = std::move(x); return v; }
  static value list(list_t x = {}) {
    value v; v.k = kind::list; v.items = std::make_shared<list_t>(std::move(x)); return v;
  }
  static value dict(dict_t x = {}) {
    value v; v.k = kind::dict; v.members = std::make_shared<dict_t>(std::move(x)); return v;
  }

  bool is_number() const { return k == kind::integer || k == kind::floating || k == kind::boolean; }
  double as_double() const { return k == kind::floating ? f : k == kind::boolean ? double(b) : double(i); }

  /// The member named `key`, or nullptr.
  const value* find(std::string_view key) const {
    if (k != kind::dict) return nullptr;
    for (const auto& [name, v] : *members)
      if (name == key) return &v;
    return nullptr;
  }
  /// Sets (or adds, at the end) the member `key`.
  void set(const std::string& key, value v) {
    for (auto& [name, old] : *members)
      if (name == key) { old = std::move(v); return; }
    members->emplace_back(key, std::move(v));
  }
};

/// The Python type name, for error messages.
inline const char* type_name(const value& v) {
  static const char* names[] = {"undefined", "NoneType", "bool", "int", "float", "str", "list", "dict"};
  return names[static_cast<int>(v.k)];
}

/// Python truthiness (Undefined is false).
inline bool truthy(const value& v) {
  switch (v.k) {
    case value::kind::boolean: return v.b;
    case value::kind::integer: return v.i != 0;
    case value::kind::floating: return v.f != 0.0;
    case value::kind::string: return !v.s.empty();
    case value::kind::list: return !v.items->empty();
    case value::kind::dict: return !v.members->empty();
    default: return false;
  }
}

/// Python's repr of a float: the shortest text that reads back, with ".0" when it would look like an int.
inline std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

/// Python's repr of a str: single quotes unless the text holds one and no double quote.
inline void append_repr_string(std::string& out, const std::string& s) {
  const char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  out += q;
  for (char c : s) {
    if (c == q || c == '\\') { out += '\\'; out += c; }
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  out += q;
}

void append_repr(std::string& out, const value& v);

/// What `{{ v }}` prints: str(v) in Python, "" for Undefined.
inline void append_str(std::string& out, const value& v) {
  switch (v.k) {
    case value::kind::undefined: return;
    case value::kind::none: out += "None"; return;
    case value::kind::boolean: out += v.b ? "True" : "False"; return;
    case value::kind::integer: out += std::to_string(v.i); return;
    case value::kind::floating: out += float_repr(v.f); return;
    case value::kind::string: out += v.s; return;
    default: append_repr(out, v);
  }
}

/// Python's repr, used for lists and dicts (and the strings inside them).
inline void append_repr(std::string& out, const value& v) {
  if (v.k == value::kind::string) return append_repr_string(out, v.s);
  if (v.k == value::kind::list) {
    out += '[';
    for (std::size_t n = 0; n < v.items->size(); ++n) {
      if (n) out += ", ";
      append_repr(out, (*v.items)[n]);
    }
    out += ']';
    return;
  }
  if (v.k == value::kind::dict) {
    out += v.is_namespace ? "<Namespace {" : "{";
    bool first = true;
    for (const auto& [key, x] : *v.members) {
      if (!first) out += ", ";
      first = false;
      append_repr_string(out, key);
      out += ": ";
      append_repr(out, x);
    }
    out += v.is_namespace ? "}>" : "}";
    return;
  }
  append_str(out, v);
}

/// str(v) as a new string.
inline std::string to_str(const value& v) {
  std::string out;
  append_str(out, v);
  return out;
}


/// json.dumps(v, indent=indent) with Python's separators (", "/": " without indent, ","/": " with one);
/// indent < 0 means none.
inline void append_json(std::string& out, const value& v, int indent, int level = 0) {
  const auto newline = [&](int lvl) {
    if (indent < 0) return;
    out += '\n';
    out.append(std::size_t(indent) * std::size_t(lvl), ' ');
  };
  const char* sep = indent < 0 ? ", " : ",";
  switch (v.k) {
    case value::kind::undefined: fail("tojson: an undefined value is not JSON serializable");
    case value::kind::none: out += "null"; return;
    case value::kind::boolean: out += v.b ? "true" : "false"; return;
    case value::kind::string: append_json_string(out, v.s); return;
    case value::kind::list:
      if (v.items->empty()) { out += "[]"; return; }
      out += '[';
      for (std::size_t n = 0; n < v.items->size(); ++n) {
        if (n) out += sep;
        newline(level + 1);
        append_json(out, (*v.items)[n], indent, level + 1);
      }
      newline(level);
      out += ']';
      return;
    case value::kind::dict: {
      if (v.members->empty()) { out += "{}"; return; }
      out += '{';
      bool first = true;
      for (const auto& [key, x] : *v.members) {
        if (!first) out += sep;
        first = false;
        newline(level + 1);
        append_json_string(out, key);
        out += ": ";
        append_json(out, x, indent, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default: append_str(out, v);
  }
}

/// Python `==` (1 == 1.0, lists and dicts element-wise, Undefined equals only Undefined).
inline bool equal(const value& a, const value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.k == value::kind::floating || b.k == value::kind::floating) return a.as_double() == b.as_double();
    return a.as_double() == b.as_double() && (a.k == value::kind::boolean ? std::int64_t(a.b) : a.i) ==
                                                 (b.k == value::kind::boolean ? std::int64_t(b.b) : b.i);
  }
  if (a.k != b.k) return false;
  switch (a.k) {
    case value::kind::string: return a.s == b.s;
    case value::kind::list:
      if (a.items->size() != b.items->size()) return false;
      for (std::size_t n = 0; n < a.items->size(); ++n)
        if (!equal((*a.items)[n], (*b.items)[n])) return false;
      return true;
    case value::kind::dict:
      if (a.members->size() != b.members->size()) return false;
      for (const auto& [key, x] : *a.members) {
        const value* y = b.find(key);
        if (!y || !equal(x, *y)) return false;
      }
      return true;
    default: return true;  // undefined, none
  }
}

}  // namespace detail::jinja
}  // namespace muninn::io
