#pragma once
/// \file
/// \brief What a chat template can call: operators, filters, tests, global functions and string/dict
/// methods, each a pure computation on values (no I/O, no clock, no environment). Each charges what it
/// costs — steps, bytes built, list items — to the render's budget before it does the work.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
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

/// Finds a needle in a text in time linear in both (a template may search megabytes for megabytes):
/// std::string_view::find for short needles (at most 16 comparisons per byte), Knuth–Morris–Pratt for long ones.
class text_finder {
 public:
  explicit text_finder(std::string_view needle) : n_(needle) {
    if (n_.size() <= short_needle) return;
    fail_.assign(n_.size(), 0);
    for (std::size_t k = 1, j = 0; k < n_.size(); ++k) {
      while (j > 0 && n_[k] != n_[j]) j = fail_[j - 1];
      if (n_[k] == n_[j]) ++j;
      fail_[k] = j;
    }
  }
  /// The first occurrence at or after `from`, or npos.
  std::size_t find(std::string_view hay, std::size_t from) const {
    if (n_.size() <= short_needle) return hay.find(n_, from);
    for (std::size_t k = from, j = 0; k < hay.size(); ++k) {
      while (j > 0 && hay[k] != n_[j]) j = fail_[j - 1];
      if (hay[k] == n_[j]) ++j;
      if (j == n_.size()) return k + 1 - j;
    }
    return std::string_view::npos;
  }

 private:
  static constexpr std::size_t short_needle = 16;
  std::string_view n_;
  std::vector<std::size_t> fail_;
};

/// The UTF-8 characters of a string one at a time (an invalid byte is one character), without a table of them.
struct char_cursor {
  std::string_view s;
  std::size_t at = 0;
  bool done() const { return at >= s.size(); }
  std::string_view next() {
    std::uint32_t cp = 0;
    std::size_t bad = 0;
    std::size_t n = utf8_decode(s, at, cp, bad);
    if (!n) n = 1;
    const std::string_view c = s.substr(at, n);
    at += n;
    return c;
  }
};

/// The number of characters of a string (Python's len).
inline std::size_t char_count(std::string_view s) {
  std::size_t n = 0;
  for (char_cursor c{s}; !c.done(); c.next()) ++n;
  return n;
}

/// The built-in operations; a light object made per call, holding the render's budget.
struct builtins {
  budget& costs;

  [[noreturn]] void error_at(std::size_t pos, const std::string& msg) const { costs.error_at(pos, msg); }

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
    return v.str();
  }

  // str(v) as a new string (a string value as it is), built under the limits.
  value str_of(const value& v, std::size_t pos) const {
    if (v.k == value::kind::string) return v;
    std::string out;
    writer w(out, costs, pos);
    append_str(w, v);
    return value::string(std::move(out));
  }
  // A dict key as a string value (a copy, charged).
  value key_of(const std::string& key, std::size_t pos) const {
    costs.produce(key.size(), pos);
    return value::string(key);
  }
  // A string of `n` bytes that `fill` appends, charged before it is built.
  template <class Fill>
  value built_string(std::size_t n, std::size_t pos, Fill&& fill) const {
    std::string out;
    writer(out, costs, pos).emit(n, [&](std::string& o) {
      o.reserve(n);
      fill(o);
    });
    return value::string(std::move(out));
  }
  // A list of `n` items that `fill` appends, charged before it is built.
  template <class Fill>
  value built_list(std::size_t n, std::size_t pos, Fill&& fill) const {
    costs.items(n, pos);
    costs.work(n, pos);
    list_t out;
    out.reserve(n);
    fill(out);
    return value::list(std::move(out));
  }

  // ---- operators

  value binary(const std::string& op, const value& a, const value& b, bool negate, std::size_t pos) const {
    if (op == "==") return value::boolean(equal(a, b, costs, pos));
    if (op == "!=") return value::boolean(!equal(a, b, costs, pos));
    if (op == "in") return value::boolean(contains(b, a, pos) != negate);
    if (op == "~") {
      std::string out;
      writer w(out, costs, pos);
      append_str(w, a);
      append_str(w, b);
      return value::string(std::move(out));
    }
    if (op == "<" || op == ">" || op == "<=" || op == ">=") return value::boolean(ordered(op, a, b, pos));
    if (op == "+" && a.k == b.k && a.k == value::kind::string)
      return built_string(a.str().size() + b.str().size(), pos, [&](std::string& o) { o.append(a.str()).append(b.str()); });
    if (op == "+" && a.k == b.k && a.k == value::kind::list) return concat_lists(a, b, pos);
    if (op == "*" && a.k == value::kind::string && b.k == value::kind::integer) return repeat(a.str(), b.i, pos);
    if (op == "*" && a.k == value::kind::integer && b.k == value::kind::string) return repeat(b.str(), a.i, pos);
    if (a.is_number() && b.is_number() && a.k != value::kind::boolean && b.k != value::kind::boolean)
      return arithmetic(op, a, b, pos);
    error_at(pos, "unsupported operand types for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
  }

  bool contains(const value& hay, const value& needle, std::size_t pos) const {
    if (hay.k == value::kind::string && needle.k == value::kind::string) {
      costs.scan(hay.str().size() + needle.str().size(), pos);
      return text_finder(needle.str()).find(hay.str(), 0) != std::string::npos;
    }
    if (hay.k == value::kind::list) {
      for (const value& x : *hay.items)
        if (equal(x, needle, costs, pos)) return true;
      return false;
    }
    if (hay.k == value::kind::dict) {
      costs.work(hay.members->size(), pos);
      return needle.k == value::kind::string && hay.find(needle.str()) != nullptr;
    }
    error_at(pos, std::string("'in' needs a string, list or dict on its right, not '") + type_name(hay) + "'");
  }

  bool ordered(const std::string& op, const value& a, const value& b, std::size_t pos) const {
    int c = 0;
    if (a.k == value::kind::integer && b.k == value::kind::integer) {
      c = a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
    } else if (a.is_number() && b.is_number()) {
      c = a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double() ? 1 : 0;
    } else if (a.k == value::kind::string && b.k == value::kind::string) {
      costs.scan(std::min(a.str().size(), b.str().size()), pos);
      c = a.str().compare(b.str());
    } else {
      error_at(pos, "'" + op + "' not supported between '" + type_name(a) + "' and '" + type_name(b) + "'");
    }
    return op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
  }

  value concat_lists(const value& a, const value& b, std::size_t pos) const {
    return built_list(a.items->size() + b.items->size(), pos, [&](list_t& out) {
      out.insert(out.end(), a.items->begin(), a.items->end());
      out.insert(out.end(), b.items->begin(), b.items->end());
    });
  }

  value repeat(const std::string& s, std::int64_t n, std::size_t pos) const {
    if (n <= 0 || s.empty()) return value::string("");
    if (std::uint64_t(n) > costs.limits.max_output_bytes / s.size())
      error_at(pos, "string exceeds " + std::to_string(costs.limits.max_output_bytes) + " bytes");
    return built_string(s.size() * std::size_t(n), pos, [&](std::string& o) {
      for (std::int64_t k = 0; k < n; ++k) o += s;
    });
  }

  [[noreturn]] void overflow(std::int64_t x, const std::string& op, std::int64_t y, std::size_t pos) const {
    error_at(pos, "integer overflow: " + std::to_string(x) + " " + op + " " + std::to_string(y) +
                      " does not fit in 64 bits");
  }

  // Python semantics: `/` is true division, `//` and `%` floor towards negative infinity. Integers are 64-bit
  // here (Python's are unbounded): a result that does not fit is an error naming the operation.
  value arithmetic(const std::string& op, const value& a, const value& b, std::size_t pos) const {
    const bool ints = a.k == value::kind::integer && b.k == value::kind::integer;
    if ((op == "/" || op == "//" || op == "%") && b.as_double() == 0.0) error_at(pos, "division by zero");
    if (ints && op != "/") {
      const std::int64_t x = a.i, y = b.i;
      std::int64_t r = 0;
      if (op == "+" || op == "-" || op == "*") {
        const bool over = op == "+"   ? __builtin_add_overflow(x, y, &r)
                          : op == "-" ? __builtin_sub_overflow(x, y, &r)
                                      : __builtin_mul_overflow(x, y, &r);
        if (over) overflow(x, op, y, pos);
        return value::integer(r);
      }
      if (y == -1) {  // the one case where C++'s / and % overflow: INT64_MIN / -1
        if (op == "%") return value::integer(0);
        if (x == std::numeric_limits<std::int64_t>::min()) overflow(x, op, y, pos);
        return value::integer(-x);
      }
      std::int64_t q = x / y;
      r = x % y;
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

  /// -x for an integer or float.
  value negate(const value& a, std::size_t pos) const {
    if (a.k == value::kind::integer) {
      if (a.i == std::numeric_limits<std::int64_t>::min())
        error_at(pos, "integer overflow: -(" + std::to_string(a.i) + ") does not fit in 64 bits");
      return value::integer(-a.i);
    }
    return value::floating(-a.f);
  }

  // ---- global functions

  value function(const std::string& name, const call_args& a) const {
    if (name == "raise_exception")
      fail(costs.location(a.pos), ": chat template raised an exception: ", str_of(arg(a, 0, "message"), a.pos).str());
    if (name == "namespace" || name == "dict") {
      if (!a.positional.empty()) error_at(a.pos, name + "() takes keyword arguments only");
      value d = value::dict();
      d.is_namespace = name == "namespace";
      for (const auto& [k, v] : a.keywords) d.set(k, v);
      return d;
    }
    if (name == "range") return range(a);
    error_at(a.pos, "unknown function '" + name + "'");
  }

  // The number of steps from `start` towards `stop` by `step` (Python's len(range(...))), without overflow.
  static std::uint64_t steps_between(std::int64_t start, std::int64_t stop, std::int64_t step) {
    if (step > 0)
      return start < stop ? (std::uint64_t(stop) - std::uint64_t(start) - 1) / std::uint64_t(step) + 1 : 0;
    return start > stop ? (std::uint64_t(start) - std::uint64_t(stop) - 1) / (0 - std::uint64_t(step)) + 1 : 0;
  }

  value range(const call_args& a) const {
    std::int64_t b[3] = {0, 0, 1};
    if (a.positional.empty() || a.positional.size() > 3) error_at(a.pos, "range() takes 1 to 3 integers");
    for (std::size_t n = 0; n < a.positional.size(); ++n) {
      if (a.positional[n].k != value::kind::integer) error_at(a.pos, "range() takes integers");
      b[a.positional.size() == 1 ? 1 : n] = a.positional[n].i;
    }
    if (b[2] == 0) error_at(a.pos, "range() step cannot be zero");
    const std::uint64_t n = steps_between(b[0], b[1], b[2]);
    if (n > costs.limits.max_iterations)
      error_at(a.pos, "range() of " + std::to_string(n) + " items goes past the limit of " +
                          std::to_string(costs.limits.max_iterations) + " loop iterations and list items");
    return built_list(std::size_t(n), a.pos, [&](list_t& out) {
      for (std::uint64_t k = 0; k < n; ++k)  // start + k·step lies between start and stop: it fits
        out.push_back(value::integer(std::int64_t(std::uint64_t(b[0]) + k * std::uint64_t(b[2]))));
    });
  }

  // ---- filters

  value filter(const std::string& name, const value& v, const call_args& a) const {
    if (name == "trim") {
      const std::string_view t = python_strip(text_of(v, a, name));
      costs.scan(v.str().size(), a.pos);
      return t.size() == v.str().size() ? v : built_string(t.size(), a.pos, [&](std::string& o) { o.append(t); });
    }
    if (name == "upper" || name == "lower") return change_case(text_of(v, a, name), name == "upper", a.pos);
    if (name == "string") return str_of(v, a.pos);
    if (name == "length" || name == "count") return value::integer(std::int64_t(length(v, a.pos)));
    if (name == "tojson") return to_json(v, a);
    if (name == "default" || name == "d") {
      const bool use = truthy(arg(a, 1, "boolean", value::boolean(false))) ? !truthy(v) : v.k == value::kind::undefined;
      return use ? arg(a, 0, "default_value", value::string("")) : v;
    }
    if (name == "first" || name == "last") return first_last(v, name == "first", a.pos);
    if (name == "join") return join(v, a);
    if (name == "replace") return replace(text_of(v, a, name), a);
    if (name == "capitalize") return capitalize(text_of(v, a, name), a.pos);
    if (name == "items") return items(v, a.pos);
    if (name == "list") return list_of(v, a.pos);
    if (name == "safe") return v;
    error_at(a.pos, "unknown filter '" + name + "'");
  }

  const std::string& text_of(const value& v, const call_args& a, const std::string& what) const {
    if (v.k != value::kind::string) error_at(a.pos, what + " expects a string, got '" + type_name(v) + "'");
    return v.str();
  }

  value change_case(const std::string& s, bool upper, std::size_t pos) const {
    return built_string(s.size(), pos, [&](std::string& o) {
      for (char c : s)
        o += static_cast<unsigned char>(c) < 0x80 ? char(upper ? std::toupper(c) : std::tolower(c)) : c;
    });
  }
  value capitalize(const std::string& s, std::size_t pos) const {
    return built_string(s.size(), pos, [&](std::string& o) {
      for (char c : s) o += static_cast<unsigned char>(c) < 0x80 ? char(std::tolower(c)) : c;
      if (!o.empty()) o[0] = char(std::toupper(static_cast<unsigned char>(o[0])));
    });
  }

  std::size_t length(const value& v, std::size_t pos) const {
    if (v.k == value::kind::string) {
      costs.scan(v.str().size(), pos);
      return char_count(v.str());
    }
    if (v.k == value::kind::list) return v.items->size();
    if (v.k == value::kind::dict) return v.members->size();
    if (v.k == value::kind::undefined) return 0;
    error_at(pos, std::string("object of type '") + type_name(v) + "' has no len()");
  }

  value to_json(const value& v, const call_args& a) const {
    const value indent = arg(a, 0, "indent", value::none());
    if (indent.k != value::kind::none && indent.k != value::kind::integer) error_at(a.pos, "tojson indent must be an integer");
    if (indent.k == value::kind::integer && (indent.i < 0 || std::uint64_t(indent.i) > costs.limits.max_indent))
      error_at(a.pos, "tojson indent " + std::to_string(indent.i) + " is outside [0, " +
                          std::to_string(costs.limits.max_indent) + "]");
    std::string out;
    writer w(out, costs, a.pos);
    append_json(w, v, indent.k == value::kind::integer ? int(indent.i) : -1);
    return value::string(std::move(out));
  }

  value first_last(const value& v, bool first, std::size_t pos) const {
    if (v.k == value::kind::string) {
      if (v.str().empty()) return value();
      const std::string& s = v.str();
      if (first) return value::string(std::string(char_cursor{s}.next()));
      std::size_t k = s.size() - 1;  // back to the lead byte of the last character, if it is one
      while (k > 0 && s.size() - k < 4 && (static_cast<unsigned char>(s[k]) & 0xC0u) == 0x80u) --k;
      char_cursor c{s, k};
      const std::string_view ch = c.next();
      return value::string(std::string(c.done() ? ch : std::string_view(s).substr(s.size() - 1)));
    }
    const value seq = list_of(v, pos);
    if (seq.items->empty()) return value();
    return first ? seq.items->front() : seq.items->back();
  }

  // list(v): a list as it is (lists are never changed in place), a dict's keys, a string's characters.
  value list_of(const value& v, std::size_t pos) const {
    if (v.k == value::kind::list) return v;
    if (v.k == value::kind::dict)
      return built_list(v.members->size(), pos, [&](list_t& out) {
        for (const auto& m : *v.members) out.push_back(key_of(m.first, pos));
      });
    if (v.k == value::kind::string) {
      costs.scan(v.str().size(), pos);
      costs.produce(v.str().size(), pos);
      return built_list(char_count(v.str()), pos, [&](list_t& out) {
        for (char_cursor c{v.str()}; !c.done();) out.push_back(value::string(std::string(c.next())));
      });
    }
    error_at(pos, std::string("'") + type_name(v) + "' object is not iterable");
  }

  value join(const value& v, const call_args& a) const {
    const value sep = str_of(arg(a, 0, "d", value::string("")), a.pos);
    const value seq = list_of(v, a.pos);
    std::string out;
    writer w(out, costs, a.pos);
    for (std::size_t n = 0; n < seq.items->size(); ++n) {
      if (n) w.put(sep.str());
      append_str(w, (*seq.items)[n]);
    }
    return value::string(std::move(out));
  }

  value replace(const std::string& s, const call_args& a) const {
    const std::string from = string_arg(a, 0, "old", "replace");
    const std::string to = string_arg(a, 1, "new", "replace");
    if (from.empty()) error_at(a.pos, "replace with an empty search string is not supported");
    costs.scan(s.size() + from.size(), a.pos);
    const text_finder finder(from);
    std::string out;
    writer w(out, costs, a.pos);
    std::size_t k = 0;
    for (std::size_t hit; (hit = finder.find(s, k)) != std::string::npos; k = hit + from.size()) {
      w.put(std::string_view(s).substr(k, hit - k));
      w.put(to);
    }
    w.put(std::string_view(s).substr(k));
    return value::string(std::move(out));
  }

  value items(const value& v, std::size_t pos) const {
    if (v.k != value::kind::dict) error_at(pos, std::string("items() needs a dict, not '") + type_name(v) + "'");
    return built_list(v.members->size() * 3, pos, [&](list_t& out) {  // a pair is a list of two
      for (const auto& [k, x] : *v.members) out.push_back(value::list({key_of(k, pos), x}));
    });
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
    if (name == "eq" || name == "equalto" || name == "sameas") return equal(v, arg(a, 0, "other"), costs, a.pos);
    if (name == "even" || name == "odd") {
      if (v.k != K::integer) error_at(a.pos, "'" + name + "' test needs an integer");
      return (v.i % 2 == 0) == (name == "even");
    }
    error_at(a.pos, "unknown test '" + name + "'");
  }

  // ---- methods

  value method(const value& obj, const std::string& name, const call_args& a) const {
    if (obj.k == value::kind::string) return string_method(obj, name, a);
    if (obj.k == value::kind::dict && !obj.is_namespace) return dict_method(obj, name, a);
    error_at(a.pos, std::string("unknown method '") + type_name(obj) + "." + name + "'");
  }

  value string_method(const value& obj, const std::string& name, const call_args& a) const {
    const std::string& s = obj.str();
    if (name == "strip" || name == "lstrip" || name == "rstrip") return strip(obj, name, a);
    if (name == "upper" || name == "lower") return change_case(s, name == "upper", a.pos);
    if (name == "capitalize") return capitalize(s, a.pos);
    if (name == "startswith" || name == "endswith") {
      const std::string x = string_arg(a, 0, "prefix", name.c_str());
      costs.scan(x.size(), a.pos);
      const bool start = name == "startswith";
      return value::boolean(s.size() >= x.size() && s.compare(start ? 0 : s.size() - x.size(), x.size(), x) == 0);
    }
    if (name == "split") return split(s, a);
    if (name == "replace") return replace(s, a);
    error_at(a.pos, "unknown method 'str." + name + "'");
  }

  // Python's str.strip family: white space by default, else any of the given (ASCII) characters.
  value strip(const value& obj, const std::string& name, const call_args& a) const {
    const std::string& s = obj.str();
    const value chars = arg(a, 0, "chars", value::none());
    costs.scan(s.size(), a.pos);
    std::size_t b = 0, e = s.size();
    if (chars.k == value::kind::none) {
      const std::string_view t = python_strip(s);
      if (name != "rstrip") b = std::size_t(t.data() - s.data());
      if (name != "lstrip") e = std::size_t(t.data() - s.data()) + t.size();
    } else {
      if (chars.k != value::kind::string) error_at(a.pos, name + " expects a string argument");
      bool strip_byte[256] = {};
      for (char c : chars.str()) strip_byte[static_cast<unsigned char>(c)] = true;
      if (name != "rstrip") while (b < e && strip_byte[static_cast<unsigned char>(s[b])]) ++b;
      if (name != "lstrip") while (e > b && strip_byte[static_cast<unsigned char>(s[e - 1])]) --e;
    }
    if (b == 0 && e == s.size()) return obj;
    return built_string(e - b, a.pos, [&](std::string& o) { o.append(s, b, e - b); });
  }

  value split(const std::string& s, const call_args& a) const {
    const value sep = arg(a, 0, "sep", value::none());
    costs.scan(s.size(), a.pos);
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    if (sep.k == value::kind::none) {  // runs of white space, no empty parts
      std::size_t k = 0;
      while (k < s.size()) {
        while (k < s.size() && is_space(s[k])) ++k;
        const std::size_t b = k;
        while (k < s.size() && !is_space(s[k])) ++k;
        if (k > b) parts.emplace_back(b, k);
        if (parts.size() > costs.limits.max_iterations) break;  // the charge below fails
      }
    } else {
      if (sep.k != value::kind::string || sep.str().empty()) error_at(a.pos, "split expects a non-empty string separator");
      const text_finder finder(sep.str());
      std::size_t k = 0;
      for (std::size_t hit; (hit = finder.find(s, k)) != std::string::npos; k = hit + sep.str().size()) {
        parts.emplace_back(k, hit);
        if (parts.size() > costs.limits.max_iterations) break;  // the charge below fails
      }
      parts.emplace_back(k, s.size());
    }
    costs.produce(s.size(), a.pos);
    return built_list(parts.size(), a.pos, [&](list_t& out) {
      for (const auto& [b, e] : parts) out.push_back(value::string(s.substr(b, e - b)));
    });
  }

  value dict_method(const value& d, const std::string& name, const call_args& a) const {
    if (name == "items") return items(d, a.pos);
    if (name == "keys" || name == "values")
      return built_list(d.members->size(), a.pos, [&](list_t& out) {
        for (const auto& [k, x] : *d.members) out.push_back(name == "keys" ? key_of(k, a.pos) : x);
      });
    if (name == "get") {
      const value key = arg(a, 0, "key");
      costs.work(d.members->size(), a.pos);
      const value* m = key.k == value::kind::string ? d.find(key.str()) : nullptr;
      return m ? *m : arg(a, 1, "default", value::none());
    }
    error_at(a.pos, "unknown method 'dict." + name + "'");
  }
};

}  // namespace muninn::io::detail::jinja
