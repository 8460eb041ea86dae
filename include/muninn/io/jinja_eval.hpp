#pragma once
/// \file
/// \brief The interpreter of a parsed chat template: scopes, statements and expressions. It only computes
/// with values; nothing it runs can reach files, the environment or the host program.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "muninn/io/jinja_builtins.hpp"
#include "muninn/io/jinja_parser.hpp"

namespace muninn::io::detail::jinja {

/// Renders one template once; holds the output, the scopes and the budget counters.
class evaluator {
 public:
  evaluator(const std::string& src, const std::string& origin, const template_limits& limits)
      : src_(src), origin_(origin), limits_(limits) {}

  /// Renders `body` with `globals` as the outermost scope.
  std::string render(const std::vector<stmt>& body, std::map<std::string, value> globals) {
    scopes_.push_back(std::move(globals));
    run(body);
    return std::move(out_);
  }

 private:
  enum class flow { normal, break_, continue_ };

  [[noreturn]] void error_at(std::size_t pos, const std::string& msg) const {
    fail(where(origin_, src_, pos), ": chat template error: ", msg);
  }

  struct depth_guard {
    depth_guard(evaluator& e, std::size_t pos) : e_(e) {
      if (++e_.depth_ > e_.limits_.max_depth) e_.error_at(pos, "evaluation nested too deeply");
    }
    ~depth_guard() { --e_.depth_; }
    evaluator& e_;
  };

  void emit(const std::string& s, std::size_t pos) {
    if (out_.size() + s.size() > limits_.max_output_bytes)
      error_at(pos, "output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
    out_ += s;
  }

  flow run(const std::vector<stmt>& body) {
    for (const stmt& s : body) {
      const flow f = exec(s);
      if (f != flow::normal) return f;
    }
    return flow::normal;
  }

  flow exec(const stmt& s) {
    depth_guard guard(*this, s.pos);
    switch (s.k) {
      case stmt::kind::text: emit(s.text, s.pos); return flow::normal;
      case stmt::kind::output: emit(to_str(eval(*s.value_expr)), s.pos); return flow::normal;
      case stmt::kind::if_:
        for (const auto& [cond, body] : s.branches)
          if (truthy(eval(*cond))) return run(body);
        return run(s.else_body);
      case stmt::kind::for_: return exec_for(s);
      case stmt::kind::set: exec_set(s); return flow::normal;
      case stmt::kind::break_: return flow::break_;
      case stmt::kind::continue_: return flow::continue_;
      case stmt::kind::block: return run(s.body);
    }
    return flow::normal;
  }

  void exec_set(const stmt& s) {
    value v = eval(*s.value_expr);
    if (s.targets.size() == 1) { scopes_.back()[s.targets[0]] = std::move(v); return; }
    value ns = lookup(s.targets[0]);
    if (ns.k != value::kind::dict || !ns.is_namespace)
      error_at(s.pos, "'" + s.targets[0] + "' is not a namespace: only namespace attributes can be set");
    ns.set(s.targets[1], std::move(v));
  }

  // The sequence a for loop walks: list items, dict keys or string characters (bytes here).
  std::vector<value> iterable(const value& v, std::size_t pos) const {
    switch (v.k) {
      case value::kind::list: return *v.items;
      case value::kind::dict: {
        std::vector<value> keys;
        for (const auto& m : *v.members) keys.push_back(value::string(m.first));
        return keys;
      }
      case value::kind::string: {
        std::vector<value> chars;
        for (char c : v.s) chars.push_back(value::string(std::string(1, c)));
        return chars;
      }
      case value::kind::undefined: return {};
      default: error_at(pos, std::string("'") + type_name(v) + "' object is not iterable");
    }
  }

  static value loop_object(std::size_t n, std::size_t len) {
    const auto i = std::int64_t(n);
    const auto l = std::int64_t(len);
    return value::dict({{"index", value::integer(i + 1)}, {"index0", value::integer(i)},
                        {"revindex", value::integer(l - i)}, {"revindex0", value::integer(l - i - 1)},
                        {"first", value::boolean(n == 0)}, {"last", value::boolean(n + 1 == len)},
                        {"length", value::integer(l)}});
  }

  void bind_targets(const stmt& s, std::map<std::string, value>& scope, const value& item) {
    if (s.targets.size() == 1) { scope[s.targets[0]] = item; return; }
    if (item.k != value::kind::list || item.items->size() != s.targets.size())
      error_at(s.pos, "cannot unpack " + std::string(type_name(item)) + " into " +
                          std::to_string(s.targets.size()) + " loop variables");
    for (std::size_t n = 0; n < s.targets.size(); ++n) scope[s.targets[n]] = (*item.items)[n];
  }

  // Each iteration gets its own scope: `set` inside a loop does not leak out, as in Jinja.
  flow exec_for(const stmt& s) {
    const std::vector<value> seq = iterable(eval(*s.value_expr), s.pos);
    if (seq.empty()) return run(s.else_body);
    for (std::size_t n = 0; n < seq.size(); ++n) {
      if (++iterations_ > limits_.max_iterations)
        error_at(s.pos, "more than " + std::to_string(limits_.max_iterations) + " loop iterations");
      scopes_.emplace_back();
      scopes_.back()["loop"] = loop_object(n, seq.size());
      bind_targets(s, scopes_.back(), seq[n]);
      const flow f = run(s.body);
      scopes_.pop_back();
      if (f == flow::break_) break;
    }
    return flow::normal;
  }

  value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      const auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return value();
  }

  value eval(const expr& e) {
    depth_guard guard(*this, e.pos);
    switch (e.k) {
      case expr::kind::literal: return e.literal;
      case expr::kind::name: return lookup(e.name);
      case expr::kind::attr: return attribute(eval(*e.args[0]), e.name, e.pos);
      case expr::kind::index: return item(eval(*e.args[0]), eval(*e.args[1]), e.pos);
      case expr::kind::slice: return slice_of(e);
      case expr::kind::call: return call(e);
      case expr::kind::filter: return filter(e);
      case expr::kind::test: return value::boolean(test(e) != e.negate);
      case expr::kind::unary: return unary(e);
      case expr::kind::binary: return binary_op(e);
      case expr::kind::logic: {
        value a = eval(*e.args[0]);
        if (truthy(a) == (e.name == "or")) return a;
        return eval(*e.args[1]);
      }
      case expr::kind::ternary:
        if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
        return e.args[2] ? eval(*e.args[2]) : value();
      case expr::kind::list: {
        list_t items;
        for (const auto& a : e.args) items.push_back(eval(*a));
        return value::list(std::move(items));
      }
      case expr::kind::dict: return dict_literal(e);
    }
    return value();
  }

  value dict_literal(const expr& e) {
    value d = value::dict();
    for (std::size_t n = 0; n + 1 < e.args.size(); n += 2) {
      const value key = eval(*e.args[n]);
      if (key.k != value::kind::string) error_at(e.args[n]->pos, "dict keys must be strings");
      d.set(key.s, eval(*e.args[n + 1]));
    }
    return d;
  }

  value attribute(const value& obj, const std::string& name, std::size_t pos) const {
    if (obj.k == value::kind::undefined) error_at(pos, "'" + name + "' of an undefined value");
    if (const value* m = obj.find(name)) return *m;
    return value();
  }

  value item(const value& obj, const value& key, std::size_t pos) const {
    if (obj.k == value::kind::undefined) error_at(pos, "subscript of an undefined value");
    if (obj.k == value::kind::dict) {
      if (key.k != value::kind::string) return value();
      const value* m = obj.find(key.s);
      return m ? *m : value();
    }
    if ((obj.k == value::kind::list || obj.k == value::kind::string) && key.k == value::kind::integer) {
      const std::int64_t len = obj.k == value::kind::list ? std::int64_t(obj.items->size()) : std::int64_t(obj.s.size());
      const std::int64_t i = key.i < 0 ? key.i + len : key.i;
      if (i < 0 || i >= len) return value();
      return obj.k == value::kind::list ? (*obj.items)[std::size_t(i)] : value::string(std::string(1, obj.s[std::size_t(i)]));
    }
    error_at(pos, std::string("cannot index a ") + type_name(obj) + " with a " + type_name(key));
  }

  value slice_of(const expr& e) {
    const value obj = eval(*e.args[0]);
    std::int64_t bounds[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int n = 0; n < 3; ++n) {
      if (!e.args[std::size_t(n) + 1]) continue;
      const value b = eval(*e.args[std::size_t(n) + 1]);
      if (b.k == value::kind::none) continue;
      if (b.k != value::kind::integer) error_at(e.pos, "slice bounds must be integers");
      bounds[n] = b.i;
      given[n] = true;
    }
    if (bounds[2] == 0) error_at(e.pos, "slice step cannot be zero");
    return python_slice(obj, bounds, given, e.pos);
  }

  value python_slice(const value& obj, const std::int64_t* b, const bool* given, std::size_t pos) const {
    if (obj.k != value::kind::list && obj.k != value::kind::string)
      error_at(pos, std::string("cannot slice a ") + type_name(obj));
    const std::int64_t len = obj.k == value::kind::list ? std::int64_t(obj.items->size()) : std::int64_t(obj.s.size());
    const std::int64_t step = b[2];
    const auto clamp = [&](std::int64_t x, std::int64_t lo, std::int64_t hi) {
      if (x < 0) x += len;
      return x < lo ? lo : x > hi ? hi : x;
    };
    std::int64_t start = given[0] ? clamp(b[0], step > 0 ? 0 : -1, step > 0 ? len : len - 1) : (step > 0 ? 0 : len - 1);
    const std::int64_t stop = given[1] ? clamp(b[1], step > 0 ? 0 : -1, step > 0 ? len : len - 1) : (step > 0 ? len : -1);
    list_t items;
    std::string text;
    for (; step > 0 ? start < stop : start > stop; start += step) {
      if (obj.k == value::kind::list) items.push_back((*obj.items)[std::size_t(start)]);
      else text += obj.s[std::size_t(start)];
    }
    return obj.k == value::kind::list ? value::list(std::move(items)) : value::string(std::move(text));
  }

  call_args evaluate_args(const expr& e) {
    call_args a;
    a.pos = e.pos;
    for (std::size_t n = 1; n < e.args.size(); ++n) a.positional.push_back(eval(*e.args[n]));
    for (const auto& [key, x] : e.kwargs) a.keywords.emplace_back(key, eval(*x));
    return a;
  }

  value call(const expr& e) {
    const expr& callee = *e.args[0];
    call_args a = evaluate_args(e);
    builtins b{src_, origin_, limits_};
    if (callee.k == expr::kind::attr) return b.method(eval(*callee.args[0]), callee.name, a);
    if (callee.k != expr::kind::name) error_at(e.pos, "only functions and methods can be called");
    return b.function(callee.name, a, iterations_);
  }

  value filter(const expr& e) {
    value subject = eval(*e.args[0]);
    call_args a = evaluate_args(e);
    return builtins{src_, origin_, limits_}.filter(e.name, subject, a);
  }

  bool test(const expr& e) {
    value subject = eval(*e.args[0]);
    call_args a = evaluate_args(e);
    return builtins{src_, origin_, limits_}.test(e.name, subject, a);
  }

  value unary(const expr& e) {
    const value a = eval(*e.args[0]);
    if (e.name == "not") return value::boolean(!truthy(a));
    if (a.k == value::kind::integer) return value::integer(e.name == "-" ? -a.i : a.i);
    if (a.k == value::kind::floating) return value::floating(e.name == "-" ? -a.f : a.f);
    error_at(e.pos, "bad operand type for unary " + e.name + ": '" + type_name(a) + "'");
  }

  value binary_op(const expr& e) {
    const value a = eval(*e.args[0]);
    const value b = eval(*e.args[1]);
    return builtins{src_, origin_, limits_}.binary(e.name, a, b, e.negate, e.pos);
  }

  const std::string& src_;
  const std::string& origin_;
  const template_limits& limits_;
  std::vector<std::map<std::string, value>> scopes_;
  std::string out_;
  std::size_t depth_ = 0;
  std::size_t iterations_ = 0;
};

}  // namespace muninn::io::detail::jinja
