#pragma once
/// \file
/// \brief The interpreter of a parsed chat template: scopes, statements and expressions. It only computes
/// with values; nothing it runs can reach files, the environment or the host program.

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "muninn/io/jinja_builtins.hpp"
#include "muninn/io/jinja_parser.hpp"

namespace muninn::io::detail::jinja {

/// Renders one template once; holds the output, the scopes and the budget.
class evaluator {
 public:
  evaluator(const std::string& src, const std::string& origin, const template_limits& limits)
      : costs_(limits, src, origin) {}

  /// Renders `body` with `globals` as the outermost scope.
  std::string render(const std::vector<stmt>& body, std::map<std::string, value> globals) {
    scopes_.push_back(std::move(globals));
    run(body);
    return std::move(out_);
  }

 private:
  enum class flow { normal, break_, continue_ };

  [[noreturn]] void error_at(std::size_t pos, const std::string& msg) const { costs_.error_at(pos, msg); }

  // Statements and expressions nest no deeper than max_depth: the parser bounds each tree, and this bounds
  // what they add up to.
  struct depth_guard {
    depth_guard(evaluator& e, std::size_t pos) : e_(e) {
      if (++e_.depth_ > e_.costs_.limits.max_depth) e_.error_at(pos, "evaluation nested too deeply");
    }
    ~depth_guard() { --e_.depth_; }
    evaluator& e_;
  };

  builtins calls() { return builtins{costs_}; }

  flow run(const std::vector<stmt>& body) {
    for (const stmt& s : body) {
      const flow f = exec(s);
      if (f != flow::normal) return f;
    }
    return flow::normal;
  }

  flow exec(const stmt& s) {
    depth_guard guard(*this, s.pos);
    costs_.work(1, s.pos);
    switch (s.k) {
      case stmt::kind::text: writer(out_, costs_, s.pos, "output").put(s.text); return flow::normal;
      case stmt::kind::output: {
        writer w(out_, costs_, s.pos, "output");
        append_str(w, eval(*s.value_expr));
        return flow::normal;
      }
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
    if (reaches(v, ns.members.get(), s.pos))
      error_at(s.pos, "'" + s.targets[0] + "." + s.targets[1] + "' would hold the namespace itself; "
                      "a value that contains itself is not supported");
    ns.set(s.targets[1], std::move(v));
  }

  // Whether `v` is, or holds at any depth, the dict `target`. A namespace is the only container changed after
  // it is made, so refusing this keeps every value a finite tree (shared, never cyclic). Only namespaces and
  // containers made with one inside are searched.
  bool reaches(const value& v, const dict_t* target, std::size_t pos) {
    std::vector<const value*> todo{&v};
    std::unordered_set<const void*> seen;
    while (!todo.empty()) {
      const value& x = *todo.back();
      todo.pop_back();
      if (!x.is_namespace && !x.holds_namespace) continue;
      costs_.work(1, pos);
      if (x.k == value::kind::dict) {
        if (x.members.get() == target) return true;
        if (seen.insert(x.members.get()).second)
          for (const auto& m : *x.members) todo.push_back(&m.second);
      } else if (x.k == value::kind::list && seen.insert(x.items.get()).second) {
        for (const value& y : *x.items) todo.push_back(&y);
      }
    }
    return false;
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

  // A for loop walks list items, dict keys or a string's characters, one at a time (nothing is copied whole).
  // Each iteration gets its own scope: `set` inside a loop does not leak out, as in Jinja.
  flow exec_for(const stmt& s) {
    const value seq = eval(*s.value_expr);
    std::size_t len = 0;
    switch (seq.k) {
      case value::kind::list: len = seq.items->size(); break;
      case value::kind::dict: len = seq.members->size(); break;
      case value::kind::string:
        costs_.scan(seq.str().size(), s.pos);
        len = char_count(seq.str());
        break;
      case value::kind::undefined: break;
      default: error_at(s.pos, std::string("'") + type_name(seq) + "' object is not iterable");
    }
    if (len == 0) return run(s.else_body);
    char_cursor chars{seq.k == value::kind::string ? std::string_view(seq.str()) : std::string_view()};
    for (std::size_t n = 0; n < len; ++n) {
      costs_.items(1, s.pos);
      value item;
      if (seq.k == value::kind::list) item = (*seq.items)[n];
      else if (seq.k == value::kind::dict) item = calls().key_of((*seq.members)[n].first, s.pos);
      else item = value::string(std::string(chars.next()));
      scopes_.emplace_back();
      scopes_.back()["loop"] = loop_object(n, len);
      bind_targets(s, scopes_.back(), item);
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
    costs_.work(1, e.pos);
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
      costs_.produce(key.str().size(), e.pos);
      costs_.work(d.members->size(), e.pos);
      d.set(key.str(), eval(*e.args[n + 1]));
    }
    return d;
  }

  value attribute(const value& obj, const std::string& name, std::size_t pos) {
    if (obj.k == value::kind::undefined) error_at(pos, "'" + name + "' of an undefined value");
    if (obj.k == value::kind::dict) costs_.work(obj.members->size(), pos);
    if (const value* m = obj.find(name)) return *m;
    return value();
  }

  value item(const value& obj, const value& key, std::size_t pos) {
    if (obj.k == value::kind::undefined) error_at(pos, "subscript of an undefined value");
    if (obj.k == value::kind::dict) {
      if (key.k != value::kind::string) return value();
      costs_.work(obj.members->size(), pos);
      const value* m = obj.find(key.str());
      return m ? *m : value();
    }
    if ((obj.k == value::kind::list || obj.k == value::kind::string) && key.k == value::kind::integer) {
      const std::int64_t len = obj.k == value::kind::list ? std::int64_t(obj.items->size()) : std::int64_t(obj.str().size());
      const std::int64_t i = key.i < 0 ? key.i + len : key.i;
      if (i < 0 || i >= len) return value();
      return obj.k == value::kind::list ? (*obj.items)[std::size_t(i)]
                                        : value::string(std::string(1, obj.str()[std::size_t(i)]));
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

  // Python's obj[start:stop:step]. The bounds are clamped into [-1, len], so the item count is computed
  // without overflow, charged, and the items taken at start + k·step.
  value python_slice(const value& obj, const std::int64_t* b, const bool* given, std::size_t pos) {
    if (obj.k != value::kind::list && obj.k != value::kind::string)
      error_at(pos, std::string("cannot slice a ") + type_name(obj));
    const std::int64_t len = obj.k == value::kind::list ? std::int64_t(obj.items->size()) : std::int64_t(obj.str().size());
    const std::int64_t step = b[2];
    const auto clamp = [&](std::int64_t x, std::int64_t lo, std::int64_t hi) {
      if (x < 0) x += len;
      return x < lo ? lo : x > hi ? hi : x;
    };
    const std::int64_t start = given[0] ? clamp(b[0], step > 0 ? 0 : -1, step > 0 ? len : len - 1) : (step > 0 ? 0 : len - 1);
    const std::int64_t stop = given[1] ? clamp(b[1], step > 0 ? 0 : -1, step > 0 ? len : len - 1) : (step > 0 ? len : -1);
    const std::size_t n = std::size_t(builtins::steps_between(start, stop, step));
    const auto at = [&](std::size_t k) { return std::size_t(std::uint64_t(start) + k * std::uint64_t(step)); };
    if (obj.k == value::kind::string)
      return calls().built_string(n, pos, [&](std::string& o) {
        for (std::size_t k = 0; k < n; ++k) o += obj.str()[at(k)];
      });
    return calls().built_list(n, pos, [&](list_t& out) {
      for (std::size_t k = 0; k < n; ++k) out.push_back((*obj.items)[at(k)]);
    });
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
    if (callee.k == expr::kind::attr) return calls().method(eval(*callee.args[0]), callee.name, a);
    if (callee.k != expr::kind::name) error_at(e.pos, "only functions and methods can be called");
    return calls().function(callee.name, a);
  }

  value filter(const expr& e) {
    value subject = eval(*e.args[0]);
    call_args a = evaluate_args(e);
    return calls().filter(e.name, subject, a);
  }

  bool test(const expr& e) {
    value subject = eval(*e.args[0]);
    call_args a = evaluate_args(e);
    return calls().test(e.name, subject, a);
  }

  value unary(const expr& e) {
    const value a = eval(*e.args[0]);
    if (e.name == "not") return value::boolean(!truthy(a));
    if (a.k == value::kind::integer || a.k == value::kind::floating)
      return e.name == "-" ? calls().negate(a, e.pos) : a;
    error_at(e.pos, "bad operand type for unary " + e.name + ": '" + type_name(a) + "'");
  }

  value binary_op(const expr& e) {
    const value a = eval(*e.args[0]);
    const value b = eval(*e.args[1]);
    return calls().binary(e.name, a, b, e.negate, e.pos);
  }

  budget costs_;
  std::vector<std::map<std::string, value>> scopes_;
  std::string out_;
  std::size_t depth_ = 0;
};

}  // namespace muninn::io::detail::jinja
