#pragma once
/// \file
/// \brief Splits a Jinja2 chat template into tokens, applying whitespace control exactly as transformers'
/// environment does (trim_blocks and lstrip_blocks on, `-` and `+` modifiers, one trailing newline dropped).

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "muninn/core/error.hpp"

namespace muninn::io::detail::jinja {

/// Token kinds: template text, tag delimiters, and the tokens inside tags.
enum class tok { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };

/// One token; `pos` is its byte offset in the (newline-normalised) source, for error positions.
struct token {
  tok kind = tok::eof;
  std::string text;  // the text, name, operator, or the unescaped string literal
  std::size_t pos = 0;
};

/// Where an error happened: "origin:line:column".
inline std::string where(const std::string& origin, std::string_view src, std::size_t pos) {
  std::size_t line = 1, col = 1;
  for (std::size_t k = 0; k < pos && k < src.size(); ++k) {
    if (src[k] == '\n') { ++line; col = 1; } else { ++col; }
  }
  return muninn::detail::concat(origin, ":", line, ":", col);
}

/// Jinja reads the source line by line: "\r\n" and "\r" become "\n" and one final newline is dropped
/// (keep_trailing_newline is off).
inline std::string normalise_source(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (in[k] == '\r') {
      out += '\n';
      if (k + 1 < in.size() && in[k + 1] == '\n') ++k;
    } else {
      out += in[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/// The tokenizer of one template.
class lexer {
 public:
  lexer(const std::string& src, const std::string& origin) : s_(src), origin_(origin) {}

  std::vector<token> run() {
    while (pos_ < s_.size()) {
      const std::size_t open = find_open(pos_);
      if (open == std::string::npos) {
        push_text(s_.substr(pos_), pos_);
        break;
      }
      lex_tag(open);
    }
    out_.push_back({tok::eof, "", s_.size()});
    return std::move(out_);
  }

 private:
  [[noreturn]] void error_at(std::size_t pos, const std::string& msg) const {
    fail(where(origin_, s_, pos), ": chat template syntax error: ", msg);
  }

  std::size_t find_open(std::size_t from) const {
    for (std::size_t k = from; k + 1 < s_.size(); ++k)
      if (s_[k] == '{' && (s_[k + 1] == '{' || s_[k + 1] == '%' || s_[k + 1] == '#')) return k;
    return std::string::npos;
  }

  void push_text(std::string text, std::size_t pos) {
    if (!text.empty()) out_.push_back({tok::text, std::move(text), pos});
  }

  // The text before a tag, less what `-` or lstrip_blocks removes.
  std::string left_text(std::size_t open, char kind, char sign) const {
    std::string text = s_.substr(pos_, open - pos_);
    if (sign == '-') {
      std::size_t e = text.size();
      while (e > 0 && is_space(text[e - 1])) --e;
      return text.substr(0, e);
    }
    if (kind == '{' || sign == '+') return text;
    const std::size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    if (line_start == 0 && !line_starting_) return text;
    for (std::size_t k = line_start; k < text.size(); ++k)
      if (!is_space(text[k])) return text;
    return text.substr(0, line_start);
  }

  void lex_tag(std::size_t open) {
    const char kind = s_[open + 1];
    const char sign = open + 2 < s_.size() && (s_[open + 2] == '-' || s_[open + 2] == '+') ? s_[open + 2] : 0;
    push_text(left_text(open, kind, sign), pos_);
    std::size_t p = open + 2 + (sign ? 1 : 0);
    char right = 0;
    if (kind == '#') {
      const std::size_t close = s_.find("#}", p);
      if (close == std::string::npos) error_at(open, "unclosed comment '{#'");
      right = close > p && (s_[close - 1] == '-' || s_[close - 1] == '+') ? s_[close - 1] : 0;
      p = close + 2;
    } else {
      out_.push_back({kind == '{' ? tok::var_begin : tok::block_begin, "", open});
      p = lex_inside(p, kind == '{' ? '}' : '%', right, open);
      out_.push_back({kind == '{' ? tok::var_end : tok::block_end, "", p});
    }
    pos_ = right_skip(p, kind, right);
  }

  // After a tag: `-` eats all white space, trim_blocks one newline after block and comment tags.
  std::size_t right_skip(std::size_t p, char kind, char right) {
    const std::size_t start = p;
    if (right == '-') {
      while (p < s_.size() && is_space(s_[p])) ++p;
    } else if (kind != '{' && right != '+' && p < s_.size() && s_[p] == '\n') {
      ++p;
    }
    line_starting_ = p > start && s_[p - 1] == '\n';
    return p;
  }

  // Tokens up to the closing delimiter ("}}" or "%}"); returns the offset just past it.
  std::size_t lex_inside(std::size_t p, char close, char& right, std::size_t open) {
    for (;;) {
      while (p < s_.size() && is_space(s_[p])) ++p;
      if (p >= s_.size()) error_at(open, std::string("unclosed tag '") + s_.substr(open, 2) + "'");
      if ((s_[p] == '-' || s_[p] == '+') && s_.compare(p + 1, 2, std::string{close, '}'}) == 0) {
        right = s_[p];
        return p + 3;
      }
      if (s_.compare(p, 2, std::string{close, '}'}) == 0) return p + 2;
      p = lex_one(p);
    }
  }

  std::size_t lex_one(std::size_t p) {
    const char c = s_[p];
    if (c == '\'' || c == '"') return lex_string(p);
    if (c >= '0' && c <= '9') return lex_number(p);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t e = p;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
      out_.push_back({tok::name, s_.substr(p, e - p), p});
      return e;
    }
    static const char* two[] = {"==", "!=", "<=", ">=", "//", "**"};
    for (const char* op : two)
      if (s_.compare(p, 2, op) == 0) {
        out_.push_back({tok::op, op, p});
        return p + 2;
      }
    if (std::string_view("+-*/%~<>=()[]{}.,:|").find(c) == std::string_view::npos)
      error_at(p, std::string("unexpected character '") + c + "'");
    out_.push_back({tok::op, std::string(1, c), p});
    return p + 1;
  }

  std::size_t lex_number(std::size_t p) {
    std::size_t e = p;
    while (e < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
      is_float = true;
      ++e;
      while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) ++e;
    }
    std::string digits;
    for (std::size_t k = p; k < e; ++k)
      if (s_[k] != '_') digits += s_[k];
    out_.push_back({is_float ? tok::floating : tok::integer, digits, p});
    return e;
  }

  std::size_t lex_string(std::size_t p) {
    const char q = s_[p];
    std::string v;
    std::size_t k = p + 1;
    for (; k < s_.size() && s_[k] != q; ++k) {
      if (s_[k] != '\\') { v += s_[k]; continue; }
      if (++k >= s_.size()) break;
      v += unescape(s_[k], k);
    }
    if (k >= s_.size()) error_at(p, "unterminated string literal");
    out_.push_back({tok::string, std::move(v), p});
    return k + 1;
  }

  // Python string escapes that templates use; others are kept as written, as Python does.
  std::string unescape(char c, std::size_t at) const {
    switch (c) {
      case 'n': return "\n";
      case 't': return "\t";
      case 'r': return "\r";
      case '0': return std::string(1, '\0');
      case '\\': case '\'': case '"': return std::string(1, c);
      case '\n': return "";
      case 'x': case 'u': case 'U': case 'N':
        error_at(at, std::string("unsupported string escape '\\") + c + "'");
      default: return std::string("\\") + c;
    }
  }

  const std::string& s_;
  const std::string& origin_;
  std::size_t pos_ = 0;
  bool line_starting_ = true;  // Jinja's lstrip_blocks also strips a tag's indent at the very start
  std::vector<token> out_;
};

}  // namespace muninn::io::detail::jinja
