#pragma once
/// \file
/// \brief The syntax tree of a chat template and the recursive-descent parser that builds it, with Jinja2's
/// operator precedence (filters and tests bind tighter than arithmetic; `~` between `+` and `*`).

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "muninn/io/jinja_lexer.hpp"
#include "muninn/io/jinja_value.hpp"

namespace muninn::io::detail::jinja {

struct expr;
/// An owned expression node.
using expr_ptr = std::unique_ptr<expr>;

/// One expression node. `name` is the variable, attribute, operator, filter, test or callee name.
struct expr {
  enum class kind { literal, name, attr, index, slice, call, filter, test, unary, binary, logic, ternary, list, dict };
  kind k = kind::literal;
  std::size_t pos = 0;
  std::string name;
  value literal;
  std::vector<expr_ptr> args;  // operands, or positional arguments after the callee/subject in args[0]
  std::vector<std::pair<std::string, expr_ptr>> kwargs;
  bool negate = false;     // `is not`, `not in`
  std::size_t height = 1;  // levels of the tree below and including this node
};

/// One statement of the template body.
struct stmt {
  enum class kind { text, output, if_, for_, set, break_, continue_, block };
  kind k = kind::text;
  std::size_t pos = 0;
  std::string text;
  expr_ptr value_expr;                                      // output, set value, for iterable
  std::vector<std::pair<expr_ptr, std::vector<stmt>>> branches;  // if/elif conditions and bodies
  std::vector<std::string> targets;                         // for loop names; set: name or {namespace, attr}
  std::vector<stmt> body, else_body;
};

/// Builds the statement list of a template from its tokens.
class parser {
 public:
  parser(std::vector<token> tokens, const std::string& src, const std::string& origin, std::size_t max_depth)
      : t_(std::move(tokens)), src_(src), origin_(origin), max_depth_(max_depth) {}

  std::vector<stmt> parse_template() {
    std::string end;
    std::vector<stmt> body = parse_body({}, end);
    return body;
  }

 private:
  [[noreturn]] void error_at(std::size_t pos, const std::string& msg) const {
    fail(where(origin_, src_, pos), ": chat template syntax error: ", msg);
  }
  const token& peek(std::size_t ahead = 0) const { return t_[std::min(k_ + ahead, t_.size() - 1)]; }
  const token& next() { const token& t = peek(); if (k_ < t_.size() - 1) ++k_; return t; }
  bool at_op(const char* op) const { return peek().kind == tok::op && peek().text == op; }
  bool at_name(const char* n) const { return peek().kind == tok::name && peek().text == n; }
  bool accept_op(const char* op) { if (!at_op(op)) return false; next(); return true; }
  bool accept_name(const char* n) { if (!at_name(n)) return false; next(); return true; }
  void expect_op(const char* op) {
    if (!accept_op(op)) error_at(peek().pos, std::string("expected '") + op + "', found " + describe(peek()));
  }
  std::string expect_name() {
    if (peek().kind != tok::name) error_at(peek().pos, "expected a name, found " + describe(peek()));
    return next().text;
  }
  void expect(tok kind, const char* what) {
    if (peek().kind != kind) error_at(peek().pos, std::string("expected ") + what + ", found " + describe(peek()));
    next();
  }
  static std::string describe(const token& t) {
    switch (t.kind) {
      case tok::eof: return "the end of the template";
      case tok::var_end: return "'}}'";
      case tok::block_end: return "'%}'";
      case tok::text: return "template text";
      default: return "'" + t.text + "'";
    }
  }

  struct depth_guard {
    depth_guard(parser& p, std::size_t pos) : p_(p) {
      if (++p_.depth_ > p_.max_depth_) p_.error_at(pos, "template nested too deeply");
    }
    ~depth_guard() { --p_.depth_; }
    parser& p_;
  };

  // Statements until a `{% name %}` in `ends` (left unconsumed after its name; `end` receives it).
  std::vector<stmt> parse_body(const std::vector<std::string>& ends, std::string& end) {
    depth_guard guard(*this, peek().pos);
    std::vector<stmt> out;
    for (;;) {
      const token& t = peek();
      if (t.kind == tok::eof) {
        if (!ends.empty()) error_at(t.pos, "unclosed block: expected {% " + ends.back() + " %} before the end");
        return out;
      }
      if (t.kind == tok::text) { out.push_back(text_stmt(next())); continue; }
      if (t.kind == tok::var_begin) { out.push_back(output_stmt()); continue; }
      next();  // block_begin
      const token& kw = peek();
      if (kw.kind != tok::name) error_at(kw.pos, "expected a statement name, found " + describe(kw));
      for (const std::string& e : ends)
        if (kw.text == e) { end = next().text; return out; }
      out.push_back(statement());
    }
  }

  static stmt text_stmt(const token& t) {
    stmt s;
    s.k = stmt::kind::text;
    s.pos = t.pos;
    s.text = t.text;
    return s;
  }

  stmt output_stmt() {
    stmt s;
    s.k = stmt::kind::output;
    s.pos = next().pos;
    s.value_expr = expression();
    expect(tok::var_end, "'}}'");
    return s;
  }

  stmt statement() {
    const token kw = next();
    if (kw.text == "if") return if_stmt(kw.pos);
    if (kw.text == "for") return for_stmt(kw.pos);
    if (kw.text == "set") return set_stmt(kw.pos);
    if (kw.text == "break" || kw.text == "continue") {
      stmt s;
      s.k = kw.text == "break" ? stmt::kind::break_ : stmt::kind::continue_;
      s.pos = kw.pos;
      expect(tok::block_end, "'%}'");
      return s;
    }
    if (kw.text == "generation") return generation_stmt(kw.pos);
    error_at(kw.pos, "unsupported statement '{% " + kw.text + " %}'");
  }

  stmt if_stmt(std::size_t pos) {
    stmt s;
    s.k = stmt::kind::if_;
    s.pos = pos;
    std::string end = "elif";
    while (end == "elif") {
      expr_ptr cond = expression();
      expect(tok::block_end, "'%}'");
      std::vector<stmt> body = parse_body({"elif", "else", "endif"}, end);
      s.branches.emplace_back(std::move(cond), std::move(body));
    }
    if (end == "else") {
      expect(tok::block_end, "'%}'");
      s.else_body = parse_body({"endif"}, end);
    }
    expect(tok::block_end, "'%}'");
    return s;
  }

  stmt for_stmt(std::size_t pos) {
    stmt s;
    s.k = stmt::kind::for_;
    s.pos = pos;
    do s.targets.push_back(expect_name());
    while (accept_op(","));
    if (!accept_name("in")) error_at(peek().pos, "expected 'in' in the for statement, found " + describe(peek()));
    s.value_expr = ternary(false);
    if (at_name("if") || at_name("recursive"))
      error_at(peek().pos, "unsupported '" + peek().text + "' in a for statement");
    expect(tok::block_end, "'%}'");
    std::string end;
    s.body = parse_body({"else", "endfor"}, end);
    if (end == "else") {
      expect(tok::block_end, "'%}'");
      s.else_body = parse_body({"endfor"}, end);
    }
    expect(tok::block_end, "'%}'");
    return s;
  }

  stmt set_stmt(std::size_t pos) {
    stmt s;
    s.k = stmt::kind::set;
    s.pos = pos;
    s.targets.push_back(expect_name());
    if (accept_op(".")) s.targets.push_back(expect_name());
    if (!at_op("=")) error_at(peek().pos, "unsupported set statement (only 'set name = ...' and 'set ns.attr = ...')");
    next();
    s.value_expr = expression();
    expect(tok::block_end, "'%}'");
    return s;
  }

  // transformers' {% generation %} marks assistant text; rendering it is rendering its body.
  stmt generation_stmt(std::size_t pos) {
    stmt s;
    s.k = stmt::kind::block;
    s.pos = pos;
    expect(tok::block_end, "'%}'");
    std::string end;
    s.body = parse_body({"endgeneration"}, end);
    expect(tok::block_end, "'%}'");
    return s;
  }

  // ---- expressions, lowest precedence first

  static expr_ptr node(expr::kind k, std::size_t pos, std::string name = {}) {
    auto e = std::make_unique<expr>();
    e->k = k;
    e->pos = pos;
    e->name = std::move(name);
    return e;
  }
  // A node whose children are all in place: its height is checked, so that no chain of operators, filters,
  // attributes or calls builds a tree deeper than max_depth (evaluating or freeing it recurses per level).
  expr_ptr built(expr_ptr e) const {
    for (const expr_ptr& a : e->args)
      if (a) e->height = std::max(e->height, a->height + 1);
    for (const auto& kw : e->kwargs) e->height = std::max(e->height, kw.second->height + 1);
    if (e->height > max_depth_)
      error_at(e->pos, "expression nested too deeply (more than " + std::to_string(max_depth_) +
                           " levels; each operator, filter, attribute, subscript and call of a chain is one)");
    return e;
  }
  expr_ptr binary(expr::kind k, std::size_t pos, std::string op, expr_ptr a, expr_ptr b) const {
    expr_ptr e = node(k, pos, std::move(op));
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return built(std::move(e));
  }

  expr_ptr expression() { return ternary(true); }

  expr_ptr ternary(bool allow_if) {
    depth_guard guard(*this, peek().pos);
    expr_ptr a = or_expr();
    while (allow_if && at_name("if")) {
      const std::size_t pos = next().pos;
      expr_ptr cond = or_expr();
      expr_ptr e = node(expr::kind::ternary, pos);
      e->args.push_back(std::move(cond));
      e->args.push_back(std::move(a));
      e->args.push_back(accept_name("else") ? ternary(true) : nullptr);
      a = built(std::move(e));
    }
    return a;
  }

  expr_ptr or_expr() {
    expr_ptr a = and_expr();
    while (at_name("or")) { const std::size_t p = next().pos; a = binary(expr::kind::logic, p, "or", std::move(a), and_expr()); }
    return a;
  }
  expr_ptr and_expr() {
    expr_ptr a = not_expr();
    while (at_name("and")) { const std::size_t p = next().pos; a = binary(expr::kind::logic, p, "and", std::move(a), not_expr()); }
    return a;
  }
  expr_ptr not_expr() {
    if (!at_name("not")) return compare();
    depth_guard guard(*this, peek().pos);
    expr_ptr e = node(expr::kind::unary, next().pos, "not");
    e->args.push_back(not_expr());
    return built(std::move(e));
  }

  expr_ptr compare() {
    expr_ptr a = math1();
    for (;;) {
      const std::size_t p = peek().pos;
      if (peek().kind == tok::op && (at_op("==") || at_op("!=") || at_op("<") || at_op(">") || at_op("<=") || at_op(">="))) {
        const std::string op = next().text;
        a = binary(expr::kind::binary, p, op, std::move(a), math1());
      } else if (at_name("in")) {
        next();
        a = binary(expr::kind::binary, p, "in", std::move(a), math1());
      } else if (at_name("not") && peek(1).kind == tok::name && peek(1).text == "in") {
        next();
        next();
        a = binary(expr::kind::binary, p, "in", std::move(a), math1());
        a->negate = true;
      } else {
        return a;
      }
    }
  }

  expr_ptr math1() {
    expr_ptr a = concat();
    while (at_op("+") || at_op("-")) { const token& t = next(); a = binary(expr::kind::binary, t.pos, t.text, std::move(a), concat()); }
    return a;
  }
  expr_ptr concat() {
    expr_ptr a = math2();
    while (at_op("~")) { const std::size_t p = next().pos; a = binary(expr::kind::binary, p, "~", std::move(a), math2()); }
    return a;
  }
  expr_ptr math2() {
    expr_ptr a = unary();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const token& t = next();
      a = binary(expr::kind::binary, t.pos, t.text, std::move(a), unary());
    }
    if (at_op("**")) error_at(peek().pos, "unsupported operator '**'");
    return a;
  }
  expr_ptr unary() {
    if (at_op("-") || at_op("+")) {
      depth_guard guard(*this, peek().pos);
      const token& t = next();
      expr_ptr e = node(expr::kind::unary, t.pos, t.text);
      e->args.push_back(unary());
      return built(std::move(e));
    }
    return filters(postfix(primary()));
  }

  void call_args(expr& e) {
    if (accept_op(")")) return;
    do {
      if (peek().kind == tok::name && peek(1).kind == tok::op && peek(1).text == "=") {
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(std::move(key), expression());
      } else {
        if (!e.kwargs.empty()) error_at(peek().pos, "positional argument after a keyword argument");
        e.args.push_back(expression());
      }
    } while (accept_op(",") && !at_op(")"));
    expect_op(")");
  }

  expr_ptr postfix(expr_ptr a) {
    for (;;) {
      const std::size_t p = peek().pos;
      if (accept_op(".")) {
        if (peek().kind == tok::integer) {  // `a.0` is Jinja's item access by index
          expr_ptr i = node(expr::kind::literal, p);
          i->literal = value::integer(integer_literal(next()));
          a = binary(expr::kind::index, p, "", std::move(a), std::move(i));
          continue;
        }
        expr_ptr e = node(expr::kind::attr, p, expect_name());
        e->args.push_back(std::move(a));
        a = built(std::move(e));
      } else if (accept_op("[")) {
        a = subscript(std::move(a), p);
      } else if (accept_op("(")) {
        expr_ptr e = node(expr::kind::call, p);
        e->args.push_back(std::move(a));
        call_args(*e);
        a = built(std::move(e));
      } else {
        return a;
      }
    }
  }

  expr_ptr subscript(expr_ptr a, std::size_t p) {
    expr_ptr parts[3];
    bool is_slice = false;
    for (int n = 0; n < 3; ++n) {
      if (!at_op(":") && !at_op("]")) parts[n] = expression();
      if (n < 2 && accept_op(":")) { is_slice = true; continue; }
      break;
    }
    expect_op("]");
    if (!is_slice && !parts[0]) error_at(p, "empty subscript '[]'");
    if (!is_slice) return binary(expr::kind::index, p, "", std::move(a), std::move(parts[0]));
    expr_ptr e = node(expr::kind::slice, p);
    e->args.push_back(std::move(a));
    for (auto& part : parts) e->args.push_back(std::move(part));
    return built(std::move(e));
  }

  expr_ptr filters(expr_ptr a) {
    for (;;) {
      if (accept_op("|")) {
        const std::size_t p = peek().pos;
        expr_ptr e = node(expr::kind::filter, p, expect_name());
        e->args.push_back(std::move(a));
        if (accept_op("(")) call_args(*e);
        a = built(std::move(e));
      } else if (at_name("is")) {
        const std::size_t p = next().pos;
        const bool neg = accept_name("not");
        expr_ptr e = node(expr::kind::test, p, expect_name());
        e->negate = neg;
        e->args.push_back(std::move(a));
        if (accept_op("(")) call_args(*e);
        else if (peek().kind == tok::string || peek().kind == tok::integer || peek().kind == tok::floating)
          e->args.push_back(primary());  // `is equalto 3`, `is divisibleby 2`
        a = built(std::move(e));
      } else {
        return a;
      }
    }
  }

  expr_ptr primary() {
    const token t = next();
    expr_ptr e = node(expr::kind::literal, t.pos);
    switch (t.kind) {
      case tok::string: {
        std::string s = t.text;
        while (peek().kind == tok::string) s += next().text;  // adjacent literals concatenate, as in Python
        e->literal = value::string(std::move(s));
        return e;
      }
      case tok::integer: e->literal = value::integer(integer_literal(t)); return e;
      case tok::floating: e->literal = value::floating(float_literal(t)); return e;
      case tok::name: return name_or_constant(t, std::move(e));
      case tok::op:
        if (t.text == "(") return parenthesised(t.pos);
        if (t.text == "[") return list_literal(t.pos);
        if (t.text == "{") return dict_literal(t.pos);
        break;
      default: break;
    }
    error_at(t.pos, "unexpected " + describe(t) + " in an expression");
  }

  // The lexer gives digits only (underscores dropped); the value must fit int64 / be a finite double.
  std::int64_t integer_literal(const token& t) const {
    std::int64_t v = 0;
    const auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
      error_at(t.pos, "integer literal " + t.text.substr(0, 40) + " is out of range");
    return v;
  }
  double float_literal(const token& t) const {
    double v = 0;
    const auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size() || !std::isfinite(v))
      error_at(t.pos, "float literal " + t.text.substr(0, 40) + " is out of range");
    return v;
  }

  static expr_ptr name_or_constant(const token& t, expr_ptr e) {
    if (t.text == "true" || t.text == "True") e->literal = value::boolean(true);
    else if (t.text == "false" || t.text == "False") e->literal = value::boolean(false);
    else if (t.text == "none" || t.text == "None") e->literal = value::none();
    else { e->k = expr::kind::name; e->name = t.text; }
    return e;
  }

  expr_ptr parenthesised(std::size_t pos) {
    expr_ptr a = expression();
    if (at_op(",")) error_at(pos, "unsupported tuple expression");
    expect_op(")");
    return a;
  }

  expr_ptr list_literal(std::size_t pos) {
    expr_ptr e = node(expr::kind::list, pos);
    if (accept_op("]")) return e;
    do e->args.push_back(expression());
    while (accept_op(",") && !at_op("]"));
    expect_op("]");
    return built(std::move(e));
  }

  expr_ptr dict_literal(std::size_t pos) {
    expr_ptr e = node(expr::kind::dict, pos);
    if (accept_op("}")) return e;
    do {
      e->args.push_back(expression());
      expect_op(":");
      e->args.push_back(expression());
    } while (accept_op(",") && !at_op("}"));
    expect_op("}");
    return built(std::move(e));
  }

  std::vector<token> t_;
  const std::string& src_;
  const std::string& origin_;
  std::size_t max_depth_;
  std::size_t depth_ = 0;
  std::size_t k_ = 0;
};

}  // namespace muninn::io::detail::jinja
