#pragma once
/// \file
/// \brief Values of the chat-template interpreter (Python-like: none, bool, int, float, str, list, dict), the
/// limits that keep a hostile template from hanging or exhausting memory, and the budget that enforces them.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/jinja_lexer.hpp"
#include "muninn/io/json.hpp"

namespace muninn::io {

/// \brief Caps that make rendering an untrusted chat template terminate with a clear muninn::error.
///
/// Every cap is charged before the work or the bytes it pays for: a template cannot build a string, a list or a
/// nesting past its cap and be stopped only afterwards.
struct template_limits {
  std::size_t max_output_bytes = std::size_t(16) << 20;     ///< Rendered text, and any single string built.
  std::size_t max_produced_bytes = std::size_t(256) << 20;  ///< All string bytes one render builds, together.
  std::size_t max_iterations = 1'000'000;  ///< Loop iterations and list items built (range, split, +...), together.
  std::size_t max_work = 20'000'000;  ///< Statements run, expressions evaluated, values compared or copied, 64-byte
                                      ///< blocks of string searched or compared.
  std::size_t max_depth = 64;              ///< Nesting of statements, expressions and values printed or compared.
  std::size_t max_indent = 64;             ///< The largest `indent` of tojson.
};

namespace detail::jinja {

struct value;
/// A list.
using list_t = std::vector<value>;
/// A dict with string keys in insertion order (Python dicts keep it, and tojson/items show it).
using dict_t = std::vector<std::pair<std::string, value>>;

/// Frees lists and dicts without recursion. A template can nest a list in itself as deep as its loops allow;
/// freeing the outermost would recurse once per level. Each container is deleted through here instead: one freed
/// while another is being freed is queued, and the outermost call frees the queue in a loop.
class reaper {
 public:
  template <class T>
  static void reap(T* p) noexcept {
    reaper& r = of_thread();
    r.queue_.push_back({p, [](void* q) { delete static_cast<T*>(q); }});
    if (r.draining_) return;
    r.draining_ = true;
    while (!r.queue_.empty()) {
      const entry e = r.queue_.back();
      r.queue_.pop_back();
      e.del(e.p);  // its children's containers join the queue instead of being freed inside this call
    }
    r.draining_ = false;
  }

 private:
  struct entry {
    void* p;
    void (*del)(void*);
  };
  static reaper& of_thread() {
    thread_local reaper r;
    return r;
  }
  std::vector<entry> queue_;
  bool draining_ = false;
};

/// One runtime value. `undefined` is Jinja's Undefined: renders empty, is false, fails when used further.
/// Strings, lists and dicts are shared, so copying a value never copies its contents; only namespace() dicts
/// are ever changed after they are made.
struct value {
  enum class kind { undefined, none, boolean, integer, floating, string, list, dict };
  kind k = kind::undefined;
  bool b = false;
  std::int64_t i = 0;
  double f = 0.0;
  std::shared_ptr<const std::string> text;
  std::shared_ptr<list_t> items;
  std::shared_ptr<dict_t> members;
  bool is_namespace = false;    // a namespace() object: the only dict whose attributes `set` may assign
  bool holds_namespace = false;  // a list or dict with a namespace somewhere inside (fixed when it is made)

  static value none() { value v; v.k = kind::none; return v; }
  static value boolean(bool x) { value v; v.k = kind::boolean; v.b = x; return v; }
  static value integer(std::int64_t x) { value v; v.k = kind::integer; v.i = x; return v; }
  static value floating(double x) { value v; v.k = kind::floating; v.f = x; return v; }
  static value string(std::string x) {
    value v;
    v.k = kind::string;
    v.text = std::make_shared<const std::string>(std::move(x));
    return v;
  }
  static value list(list_t x = {}) {
    value v;
    v.k = kind::list;
    for (const value& e : x) v.holds_namespace = v.holds_namespace || e.is_namespace || e.holds_namespace;
    v.items = std::shared_ptr<list_t>(new list_t(std::move(x)), reaper::reap<list_t>);
    return v;
  }
  static value dict(dict_t x = {}) {
    value v;
    v.k = kind::dict;
    for (const auto& m : x) v.holds_namespace = v.holds_namespace || m.second.is_namespace || m.second.holds_namespace;
    v.members = std::shared_ptr<dict_t>(new dict_t(std::move(x)), reaper::reap<dict_t>);
    return v;
  }

  /// The characters of a string value.
  const std::string& str() const { return *text; }
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
    holds_namespace = holds_namespace || v.is_namespace || v.holds_namespace;
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
    case value::kind::string: return !v.str().empty();
    case value::kind::list: return !v.items->empty();
    case value::kind::dict: return !v.members->empty();
    default: return false;
  }
}

/// The counters of one render, charged against its template_limits before the work or bytes they pay for.
class budget {
 public:
  budget(const template_limits& limits, const std::string& src, const std::string& origin)
      : limits(limits), src_(src), origin_(origin) {}

  /// A render error at byte `pos` of the template: "origin:line:column: chat template error: msg".
  [[noreturn]] void error_at(std::size_t pos, const std::string& msg) const {
    fail(location(pos), ": chat template error: ", msg);
  }
  /// "origin:line:column" of byte `pos` of the template.
  std::string location(std::size_t pos) const { return where(origin_, src_, pos); }
  /// Statements run, expressions evaluated, values visited.
  void work(std::size_t n, std::size_t pos) {
    if ((work_ += n) > limits.max_work)
      error_at(pos, "more than " + std::to_string(limits.max_work) +
                        " steps of work (statements, expressions and values compared or copied)");
  }
  /// Bytes of string read by a search, a comparison or a count: one step of work per 64.
  void scan(std::size_t bytes, std::size_t pos) { work(bytes / 64 + 1, pos); }
  /// Bytes of string built, anywhere.
  void produce(std::size_t n, std::size_t pos) {
    if ((produced_ += n) > limits.max_produced_bytes)
      error_at(pos, "builds more than " + std::to_string(limits.max_produced_bytes) + " bytes of strings in all");
  }
  /// Loop iterations and list items built.
  void items(std::size_t n, std::size_t pos) {
    if ((items_ += n) > limits.max_iterations)
      error_at(pos, "more than " + std::to_string(limits.max_iterations) + " loop iterations and list items");
  }
  /// A value `level` containers deep is printed, compared or serialised.
  void nest(std::size_t level, std::size_t pos) const {
    if (level > limits.max_depth)
      error_at(pos, "a value nested more than " + std::to_string(limits.max_depth) + " levels deep");
  }

  const template_limits& limits;

 private:
  const std::string& src_;
  const std::string& origin_;
  std::size_t work_ = 0, produced_ = 0, items_ = 0;
};

/// Appends to a string under the limits: each piece is charged to the budget, and the string's size checked,
/// before it is appended. `what` names the string in the error ("output", "string").
class writer {
 public:
  writer(std::string& out, budget& b, std::size_t pos, const char* what = "string")
      : out_(out), b_(b), pos_(pos), what_(what) {}

  /// Charges `n` bytes, then lets `fill` append exactly those bytes to the string.
  template <class Fill>
  void emit(std::size_t n, Fill&& fill) {
    b_.produce(n, pos_);
    if (n > b_.limits.max_output_bytes - out_.size())
      b_.error_at(pos_, std::string(what_) + " exceeds " + std::to_string(b_.limits.max_output_bytes) + " bytes");
    fill(out_);
  }
  void put(std::string_view s) { emit(s.size(), [&](std::string& o) { o.append(s); }); }
  void put(char c) { emit(1, [&](std::string& o) { o += c; }); }
  void spaces(std::size_t n) { emit(n, [&](std::string& o) { o.append(n, ' '); }); }

  budget& costs() const { return b_; }
  std::size_t pos() const { return pos_; }

 private:
  std::string& out_;
  budget& b_;
  std::size_t pos_;
  const char* what_;
};

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
inline void append_repr_string(writer& w, const std::string& s) {
  const char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  const auto escaped = [q](char c) { return c == q || c == '\\' || c == '\n' || c == '\r' || c == '\t'; };
  std::size_t n = 2;
  for (char c : s) n += escaped(c) ? 2 : 1;
  w.emit(n, [&](std::string& out) {
    out += q;
    for (char c : s) {
      if (!escaped(c)) { out += c; continue; }
      out += '\\';
      out += c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : c;
    }
    out += q;
  });
}

void append_repr(writer& w, const value& v, std::size_t level);

/// What `{{ v }}` prints: str(v) in Python, "" for Undefined.
inline void append_str(writer& w, const value& v, std::size_t level = 0) {
  switch (v.k) {
    case value::kind::undefined: return;
    case value::kind::none: w.put("None"); return;
    case value::kind::boolean: w.put(v.b ? "True" : "False"); return;
    case value::kind::integer: w.put(std::to_string(v.i)); return;
    case value::kind::floating: w.put(float_repr(v.f)); return;
    case value::kind::string: w.put(v.str()); return;
    default: append_repr(w, v, level);
  }
}

/// Python's repr, used for lists and dicts (and the strings inside them); `level` is the nesting so far.
inline void append_repr(writer& w, const value& v, std::size_t level) {
  w.costs().work(1, w.pos());
  if (v.k == value::kind::undefined) return w.put("Undefined");
  if (v.k == value::kind::string) return append_repr_string(w, v.str());
  if (v.k != value::kind::list && v.k != value::kind::dict) return append_str(w, v, level);
  w.costs().nest(level + 1, w.pos());
  if (v.k == value::kind::list) {
    w.put('[');
    for (std::size_t n = 0; n < v.items->size(); ++n) {
      if (n) w.put(", ");
      append_repr(w, (*v.items)[n], level + 1);
    }
    return w.put(']');
  }
  w.put(v.is_namespace ? "<Namespace {" : "{");
  bool first = true;
  for (const auto& [key, x] : *v.members) {
    if (!first) w.put(", ");
    first = false;
    append_repr_string(w, key);
    w.put(": ");
    append_repr(w, x, level + 1);
  }
  w.put(v.is_namespace ? "}>" : "}");
}

/// json.dumps(v, indent=indent) with Python's separators (", "/": " without indent, ","/": " with one);
/// indent < 0 means none.
inline void append_json(writer& w, const value& v, int indent, std::size_t level = 0) {
  w.costs().work(1, w.pos());
  const auto newline = [&](std::size_t lvl) {
    if (indent < 0) return;
    w.put('\n');
    w.spaces(std::size_t(indent) * lvl);
  };
  const char* sep = indent < 0 ? ", " : ",";
  switch (v.k) {
    case value::kind::undefined: w.costs().error_at(w.pos(), "tojson: an undefined value is not JSON serializable");
    case value::kind::none: w.put("null"); return;
    case value::kind::boolean: w.put(v.b ? "true" : "false"); return;
    case value::kind::string:
      return w.emit(json_string_size(v.str()), [&](std::string& out) { append_json_string(out, v.str()); });
    case value::kind::list:
      if (v.items->empty()) return w.put("[]");
      w.costs().nest(level + 1, w.pos());
      w.put('[');
      for (std::size_t n = 0; n < v.items->size(); ++n) {
        if (n) w.put(sep);
        newline(level + 1);
        append_json(w, (*v.items)[n], indent, level + 1);
      }
      newline(level);
      return w.put(']');
    case value::kind::dict: {
      if (v.members->empty()) return w.put("{}");
      w.costs().nest(level + 1, w.pos());
      w.put('{');
      bool first = true;
      for (const auto& member : *v.members) {
        if (!first) w.put(sep);
        first = false;
        newline(level + 1);
        const std::string& key = member.first;  // (a lambda cannot capture a structured binding in C++17)
        w.emit(json_string_size(key), [&](std::string& out) { append_json_string(out, key); });
        w.put(": ");
        append_json(w, member.second, indent, level + 1);
      }
      newline(level);
      return w.put('}');
    }
    default: append_str(w, v, level);
  }
}

/// Python `==` (1 == 1.0, lists and dicts element-wise, a container equal to itself, Undefined equals only
/// Undefined); each value visited is charged as work.
inline bool equal(const value& a, const value& b, budget& costs, std::size_t pos, std::size_t level = 0) {
  costs.work(1, pos);
  if (a.is_number() && b.is_number()) {
    if (a.k == value::kind::floating || b.k == value::kind::floating) return a.as_double() == b.as_double();
    return (a.k == value::kind::boolean ? std::int64_t(a.b) : a.i) == (b.k == value::kind::boolean ? std::int64_t(b.b) : b.i);
  }
  if (a.k != b.k) return false;
  switch (a.k) {
    case value::kind::string:
      if (a.text == b.text) return true;
      costs.scan(std::min(a.str().size(), b.str().size()), pos);
      return a.str() == b.str();
    case value::kind::list:
      if (a.items == b.items) return true;
      if (a.items->size() != b.items->size()) return false;
      costs.nest(level + 1, pos);
      for (std::size_t n = 0; n < a.items->size(); ++n)
        if (!equal((*a.items)[n], (*b.items)[n], costs, pos, level + 1)) return false;
      return true;
    case value::kind::dict:
      if (a.members == b.members) return true;
      if (a.members->size() != b.members->size()) return false;
      costs.nest(level + 1, pos);
      for (const auto& [key, x] : *a.members) {
        const value* y = b.find(key);
        costs.work(a.members->size(), pos);  // the search for the key
        if (!y || !equal(x, *y, costs, pos, level + 1)) return false;
      }
      return true;
    default: return true;  // undefined, none
  }
}

}  // namespace detail::jinja
}  // namespace muninn::io
