#pragma once
/// \file
/// \brief What a chat template can call: operators, filters, tests, global functions and string/dict
/// methods, each a pure computation on values (no I/O, no clock, no environment).

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "muninn/io/jinja_lexer.hpp"
#include "muninn/io/jinja_value.hpp"
#include "muninn/io/tokenizer.hpp"

namespace muninn::io::detail::jinja {

/// Evaluated call arguments, with the call's position for errors.
struct call_args {
  std::vector<value> positional;
  std::vector<std::pair<std::string, value>> keywords;
  std::size_t pos = 0;
};

/// The built-in operations; a light object made per call, holding what errors need.
struct builtins {
  const std::string& src;
  const std::string& origin;
  const template_limits& limits;

  [[noreturn]] void error_at(std::size_t pos, const std::string& msg) const {
    fail(where(origin, src, pos), ": chat template error: ", msg);
  }

  // Argument `n` (or keyword `key`), or `fallback` when absent.
  static value arg(const call_args& a, std::size_t n, const char* key, value fallback = value()) {
    if (n < a.positional.size()) return a.positional[n];
    for (const auto& [k, v] : a.keywords)
      if (k == key) return v;
    return fallback;
  }
  std::string string_arg(const call_args& a, std::size_t n, const char* key, const char* what) const {
    const value v = arg(a, n, key);
    if (v.k != value::kind::string) error_at(a.pos, std::string(what) + " expects a string argument");
    return v.s;
  }
  value checked(std::string s, std::size_t pos) const {
    if (s.size() > limits.max_output_bytes)
      error_at(pos, "string exceeds " + std::to_string(limits.max_output_bytes) + " bytes");
    return value::string(std::move(s));
  }

  // ---- operators

  value binary(const std::string& op, const value& a, const value& b, bool negate, std::size_t pos) const {
    if (op == "==") return value::boolean(equal(a, b));
    if (op == "!=") return value::boolean(!equal(a, b));
    if (op == "in") return value::boolean(contains(b, a, pos) != negate);
    if (op == "~") return checked(to_str(a) + to_str(b), pos);
    if (op == "<" || op == ">" || op == "<=" || op == ">=") return value::boolean(ordered(op, a, b, pos));
    if (op == "+" && a.k == b.k && a.k == value::kind::string) return checked(a.s + b.s, pos);
    if (op == "+" && a.k == b.k && a.k == value::kind::list) return concat_lists(a, b, pos);
    if (op == "*" && a.k == value::kind::string && b.k == value::kind::integer) return repeat(a.s, b.i, pos);
    if (a.is_number() && b.is_number() && a.k != value::kind::boolean && b.k != value::kind::boolean)
      return arithmetic(op, a, b, pos);
    error_at(pos, "unsupported operand types for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
  }

  bool contains(const value& hay, const value& needle, std::size_t pos) const {
    if (hay.k == value::kind::string && needle.k == value::kind::string) return hay.s.find(needle.s) != std::string::npos;
    if (hay.k == value::kind::list) {
      for (const value& x : *hay.items)
        if (equal(x, needle)) return true;
      return false;
    }
    if (hay.k == value::kind::dict) return needle.k == value::kind::string && hay.find(needle.s) != nullptr;
    error_at(pos, std::string("'in' needs a string, list or dict on its right, not '") + type_name(hay) + "'");
  }

  bool ordered(const std::string& op, const value& a, const value& b, std::size_t pos) const {
    int c = 0;
    if (a.is_number() && b.is_number()) c = a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double() ? 1 : 0;
    else if (a.k == value::kind::string && b.k == value::kind::string) c = a.s.compare(b.s);
    else error_at(pos, "'" + op + "' not supported between '" + type_name(a) + "' and '" + type_name(b) + "'");
    return op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
  }

  value concat_lists(const value& a, const value& b, std::size_t pos) const {
    if (a.items->size() + b.items->size() > limits.max_iterations) error_at(pos, "list grows too large");
    list_t out = *a.items;
    out.insert(out.end(), b.items->begin(), b.items->end());
    return value::list(std::move(out));
  }

  value repeat(const std::string& s, std::int64_t n, std::size_t pos) const {
    if (n <= 0 || s.empty()) return value::string("");
    if (std::uint64_t(n) > limits.max_output_bytes / s.size())
      error_at(pos, "string exceeds " + std::to_string(limits.max_output_bytes) + " bytes");
    std::string out;
    for (std::int64_t k = 0; k < n; ++k) out += s;
    return value::string(std::move(out));
  }

  // Python semantics: `/` is true division, `//` and `%` floor towards negative infinity.
  value arithmetic(const std::string& op, const value& a, const value& b, std::size_t pos) const {
    const bool ints = a.k == value::kind::integer && b.k == value::kind::integer;
    if ((op == "/" || op == "//" || op == "%") && b.as_double() == 0.0) error_at(pos, "division by zero");
    if (ints && op != "/") {
      const std::int64_t x = a.i, y = b.i;
      if (op == "+") return value::integer(x + y);
      if (op == "-") return value::integer(x - y);
      if (op == "*") return value::integer(x * y);
      std::int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) { --q; r += y; }
      return value::integer(op == "//" ? q : r);
    }
    const double x = a.as_double(), y = b.as_double();
    if (op == "+") return value::floating(x + y);
    if (op == "-") return value::floating(x - y);
    if (op == "*") return value::floating(x * y);
    if (op == "/") return value::floating(x / y);
    if (op == "//") return value::floating(std::floor(x / y));
    return value::floating(x - y * std::floor(x / y));
  }

  // ---- global functions

  value function(const std::string& name, const call_args& a, std::size_t& iterations) const {
    if (name == "raise_exception") fail(where(origin, src, a.pos), ": chat template raised an exception: ", to_str(arg(a, 0, "message")));
    if (name == "namespace" || name == "dict") {
      if (!a.positional.empty()) error_at(a.pos, name + "() takes keyword arguments only");
      value d = value::dict();
      d.is_namespace = name == "namespace";
      for (const auto& [k, v] : a.keywords) d.set(k, v);
      return d;
    }
    if (name == "range") return range(a, iterations);
    error_at(a.pos, "unknown function '" + name + "'");
  }

  value range(const call_args& a, std::size_t& iterations) const {
    std::int64_t b[3] = {0, 0, 1};
    if (a.positional.empty() || a.positional.size() > 3) error_at(a.pos, "range() takes 1 to 3 integers");
    for (std::size_t n = 0; n < a.positional.size(); ++n) {
      if (a.positional[n].k != value::kind::integer) error_at(a.pos, "range() takes integers");
      b[a.positional.size() == 1 ? 1 : n] = a.positional[n].i;
    }
    if (b[2] == 0) error_at(a.pos, "range() step cannot be zero");
    list_t out;
    for (std::int64_t x = b[0]; b[2] > 0 ? x < b[1] : x > b[1]; x += b[2]) {
      if (++iterations > limits.max_iterations) error_at(a.pos, "range() goes past the limit of " + std::to_string(limits.max_iterations) + " loop iterations");
      out.push_back(value::integer(x));
    }
    return value::list(std::move(out));
  }

  // ---- filters

  value filter(const std::string& name, const value& v, const call_args& a) const {
    if (name == "trim") return value::string(std::string(python_strip(text_of(v, a, name))));
    if (name == "upper" || name == "lower") return value::string(change_case(text_of(v, a, name), name == "upper"));
    if (name == "string") return checked(to_str(v), a.pos);
    if (name == "length" || name == "count") return value::integer(std::int64_t(length(v, a.pos)));
    if (name == "tojson") return checked(to_json(v, a), a.pos);
    if (name == "default" || name == "d") {
      const bool use = truthy(arg(a, 1, "boolean", value::boolean(false))) ? !truthy(v) : v.k == value::kind::undefined;
      return use ? arg(a, 0, "default_value", value::string("")) : v;
    }
    if (name == "first" || name == "last") return first_last(v, name == "first", a.pos);
    if (name == "join") return join(v, a);
    if (name == "replace") return replace(text_of(v, a, name), a);
    if (name == "capitalize") return value::string(capitalize(text_of(v, a, name)));
    if (name == "items") return items(v, a.pos);
    if (name == "list") return value::list(list_of(v, a.pos));
    if (name == "safe") return v;
    error_at(a.pos, "unknown filter '" + name + "'");
  }

  const std::string& text_of(const value& v, const call_args& a, const std::string& what) const {
    if (v.k != value::kind::string) error_at(a.pos, what + " expects a string, got '" + type_name(v) + "'");
    return v.s;
  }

  static std::string change_case(std::string s, bool upper) {
    for (char& c : s)
      if (static_cast<unsigned char>(c) < 0x80) c = char(upper ? std::toupper(c) : std::tolower(c));
    return s;
  }
  static std::string capitalize(const std::string& s) {
    std::string out = change_case(s, false);
    if (!out.empty()) out[0] = char(std::toupper(static_cast<unsigned char>(out[0])));
    return out;
  }

  std::size_t length(const value& v, std::size_t pos) const {
    if (v.k == value::kind::string) return code_points(v.s).size();
    if (v.k == value::kind::list) return v.items->size();
    if (v.k == value::kind::dict) return v.members->size();
    if (v.k == value::kind::undefined) return 0;
    error_at(pos, std::string("object of type '") + type_name(v) + "' has no len()");
  }

  std::string to_json(const value& v, const call_args& a) const {
    const value indent = arg(a, 0, "indent", value::none());
    if (indent.k != value::kind::none && indent.k != value::kind::integer) error_at(a.pos, "tojson indent must be an integer");
    std::string out;
    append_json(out, v, indent.k == value::kind::integer ? int(indent.i) : -1);
    return out;
  }

  value first_last(const value& v, bool first, std::size_t pos) const {
    const list_t seq = list_of(v, pos);
    if (seq.empty()) return value();
    return first ? seq.front() : seq.back();
  }

  list_t list_of(const value& v, std::size_t pos) const {
    if (v.k == value::kind::list) return *v.items;
    if (v.k == value::kind::dict) {
      list_t keys;
      for (const auto& m : *v.members) keys.push_back(value::string(m.first));
      return keys;
    }
    if (v.k == value::kind::string) {
      list_t chars;
      const code_points cps(v.s);
      for (std::size_t k = 0; k < cps.size(); ++k)
        chars.push_back(value::string(v.s.substr(cps.offset[k], cps.offset[k + 1] - cps.offset[k])));
      return chars;
    }
    error_at(pos, std::string("'") + type_name(v) + "' object is not iterable");
  }

  value join(const value& v, const call_args& a) const {
    const value sep = arg(a, 0, "d", value::string(""));
    std::string out;
    bool first = true;
    for (const value& x : list_of(v, a.pos)) {
      if (!first) out += to_str(sep);
      first = false;
      append_str(out, x);
      if (out.size() > limits.max_output_bytes) break;
    }
    return checked(std::move(out), a.pos);
  }

  value replace(const std::string& s, const call_args& a) const {
    const std::string from = string_arg(a, 0, "old", "replace");
    const std::string to = string_arg(a, 1, "new", "replace");
    if (from.empty()) error_at(a.pos, "replace with an empty search string is not supported");
    std::string out;
    std::size_t k = 0;
    for (std::size_t hit; (hit = s.find(from, k)) != std::string::npos; k = hit + from.size()) {
      out.append(s, k, hit - k);
      out += to;
      if (out.size() > limits.max_output_bytes) break;
    }
    out.append(s, std::min(k, s.size()), std::string::npos);
    return checked(std::move(out), a.pos);
  }

  value items(const value& v, std::size_t pos) const {
    if (v.k != value::kind::dict) error_at(pos, std::string("items() needs a dict, not '") + type_name(v) + "'");
    list_t out;
    for (const auto& [k, x] : *v.members) out.push_back(value::list({value::string(k), x}));
    return value::list(std::move(out));
  }

  // ---- tests (`x is name`)

  bool test(const std::string& name, const value& v, const call_args& a) const {
    using K = value::kind;
    if (name == "defined") return v.k != K::undefined;
    if (name == "undefined") return v.k == K::undefined;
    if (name == "none") return v.k == K::none;
    if (name == "string") return v.k == K::string;
    if (name == "number") return v.k == K::integer || v.k == K::floating;
    if (name == "integer") return v.k == K::integer;
    if (name == "float") return v.k == K::floating;
    if (name == "boolean") return v.k == K::boolean;
    if (name == "true" || name == "false") return v.k == K::boolean && v.b == (name == "true");
    if (name == "mapping") return v.k == K::dict;
    if (name == "sequence" || name == "iterable") return v.k == K::list || v.k == K::string || v.k == K::dict;
    if (name == "eq" || name == "equalto" || name == "sameas") return equal(v, arg(a, 0, "other"));
    if (name == "even" || name == "odd") {
      if (v.k != K::integer) error_at(a.pos, "'" + name + "' test needs an integer");
      return (v.i % 2 == 0) == (name == "even");
    }
    error_at(a.pos, "unknown test '" + name + "'");
  }

  // ---- methods

  value method(const value& obj, const std::string& name, const call_args& a) const {
    if (obj.k == value::kind::string) return string_method(obj.s, name, a);
    if (obj.k == value::kind::dict && !obj.is_namespace) return dict_method(obj, name, a);
    error_at(a.pos, std::string("unknown method '") + type_name(obj) + "." + name + "'");
  }

  value string_method(const std::string& s, const std::string& name, const call_args& a) const {
    if (name == "strip" || name == "lstrip" || name == "rstrip") return value::string(strip(s, name, a));
    if (name == "upper" || name == "lower") return value::string(change_case(s, name == "upper"));
    if (name == "capitalize") return value::string(capitalize(s));
    if (name == "startswith" || name == "endswith") {
      const std::string x = string_arg(a, 0, "prefix", name.c_str());
      const bool start = name == "startswith";
      return value::boolean(s.size() >= x.size() && s.compare(start ? 0 : s.size() - x.size(), x.size(), x) == 0);
    }
    if (name == "split") return split(s, a);
    if (name == "replace") return replace(s, a);
    error_at(a.pos, "unknown method 'str." + name + "'");
  }

  // Python's str.strip family: white space by default, else any of the given (ASCII) characters.
  std::string strip(const std::string& s, const std::string& name, const call_args& a) const {
    const value chars = arg(a, 0, "chars", value::none());
    if (chars.k == value::kind::none) {
      const std::string_view t = python_strip(s);
      const std::size_t b = name == "rstrip" ? 0 : std::size_t(t.data() - s.data());
      const std::size_t e = name == "lstrip" ? s.size() : std::size_t(t.data() - s.data()) + t.size();
      return s.substr(b, e - b);
    }
    if (chars.k != value::kind::string) error_at(a.pos, name + " expects a string argument");
    std::size_t b = 0, e = s.size();
    if (name != "rstrip") while (b < e && chars.s.find(s[b]) != std::string::npos) ++b;
    if (name != "lstrip") while (e > b && chars.s.find(s[e - 1]) != std::string::npos) --e;
    return s.substr(b, e - b);
  }

  value split(const std::string& s, const call_args& a) const {
    const value sep = arg(a, 0, "sep", value::none());
    list_t out;
    if (sep.k == value::kind::none) {  // runs of white space, no empty parts
      std::size_t k = 0;
      while (k < s.size()) {
        while (k < s.size() && is_space(s[k])) ++k;
        const std::size_t b = k;
        while (k < s.size() && !is_space(s[k])) ++k;
        if (k > b) out.push_back(value::string(s.substr(b, k - b)));
      }
      return value::list(std::move(out));
    }
    if (sep.k != value::kind::string || sep.s.empty()) error_at(a.pos, "split expects a non-empty string separator");
    std::size_t k = 0;
    for (std::size_t hit; (hit = s.find(sep.s, k)) != std::string::npos; k = hit + sep.s.size())
      out.push_back(value::string(s.substr(k, hit - k)));
    out.push_back(value::string(s.substr(k)));
    return value::list(std::move(out));
  }

  value dict_method(const value& d, const std::string& name, const call_args& a) const {
    if (name == "items") return items(d, a.pos);
    if (name == "keys" || name == "values") {
      list_t out;
      for (const auto& [k, x] : *d.members) out.push_back(name == "keys" ? value::string(k) : x);
      return value::list(std::move(out));
    }
    if (name == "get") {
      const value key = arg(a, 0, "key");
      const value* m = key.k == value::kind::string ? d.find(key.s) : nullptr;
      return m ? *m : arg(a, 1, "default", value::none());
    }
    error_at(a.pos, "unknown method 'dict." + name + "'");
  }
};

}  // namespace muninn::io::detail::jinja
