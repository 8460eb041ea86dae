#pragma once
/// \file
/// \brief A small, strict JSON reader for config.json, safetensors headers and index files.

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/mapped_file.hpp"
#include "muninn/io/utf8.hpp"

namespace muninn::io {

namespace detail {
class json_parser;
}  // namespace detail

/// \brief One JSON value: null, boolean, number, string, array or object.
///
/// Objects keep their keys in file order (duplicate keys are a parse error). Numbers keep the
/// double or, when the value is integral and fits, the exact int64: sizes in config files and
/// byte offsets in safetensors headers exceed 2^53 in principle, so they must not go through double.
///
/// A value is 16 bytes and its children sit in one exactly sized array, because files from
/// strangers can be mostly punctuation: `[0,0,0,...]` spends 2 bytes per value, and a tree of
/// large nodes in growing vectors would turn a few tens of MB into gigabytes.
class json {
 public:
  /// \brief The six JSON value kinds.
  enum class kind : std::uint8_t { null, boolean, number, string, array, object };
  /// \brief One object member: key and value.
  using member = std::pair<std::string, json>;
  /// \brief Elements for make_array.
  using array_t = std::vector<json>;
  /// \brief (key, value) pairs in file order, for make_object.
  using object_t = std::vector<member>;

  /// \brief A read-only view of contiguous elements (array elements or object members).
  template <class T>
  class view {
   public:
    /// \brief The `n` elements starting at `first`.
    view(const T* first, std::size_t n) : first_(first), n_(n) {}
    /// \brief First element.
    const T* begin() const { return first_; }
    /// \brief One past the last element.
    const T* end() const { return first_ + n_; }
    /// \brief Number of elements.
    std::size_t size() const { return n_; }
    /// \brief True when there are no elements.
    bool empty() const { return n_ == 0; }
    /// \brief Element `i` (unchecked, like std::vector).
    const T& operator[](std::size_t i) const { return first_[i]; }

   private:
    const T* first_;
    std::size_t n_;
  };

  /// \brief A null value.
  json() noexcept = default;
  /// \brief A deep copy.
  json(const json& o) : kind_(o.kind_), flag_(o.flag_), count_(o.count_), u_(o.u_) {
    if (kind_ == kind::string && o.u_.str) u_.str = new std::string(*o.u_.str);
    if (kind_ == kind::array) u_.items = copy_of(o.u_.items, count_);
    if (kind_ == kind::object) u_.members = copy_of(o.u_.members, count_);
  }
  /// \brief Takes the other value's children; it becomes null.
  json(json&& o) noexcept : kind_(o.kind_), flag_(o.flag_), count_(o.count_), u_(o.u_) { o.reset_to_null(); }
  /// \brief Replaces this value with a deep copy of `o`.
  json& operator=(const json& o) {
    if (this != &o) *this = json(o);
    return *this;
  }
  /// \brief Replaces this value with `o`'s, which becomes null.
  json& operator=(json&& o) noexcept {
    if (this != &o) {
      release();
      kind_ = o.kind_;
      flag_ = o.flag_;
      count_ = o.count_;
      u_ = o.u_;
      o.reset_to_null();
    }
    return *this;
  }
  ~json() { release(); }

  /// \brief A boolean value.
  static json make_bool(bool b) {
    json j;
    j.kind_ = kind::boolean;
    j.flag_ = b;
    return j;
  }
  /// \brief A number; `exact` holds the integer value when the number is integral and fits int64
  /// (then `d` must be that integer as a double).
  static json make_number(double d, bool is_int, std::int64_t exact) {
    json j;
    j.kind_ = kind::number;
    j.flag_ = is_int;
    if (is_int) j.u_.i = exact;
    else j.u_.num = d;
    return j;
  }
  /// \brief A string value (UTF-8).
  static json make_string(std::string s) {
    json j;
    j.kind_ = kind::string;
    j.u_.str = s.empty() ? nullptr : new std::string(std::move(s));  // "" costs no allocation
    return j;
  }
  /// \brief An array value.
  static json make_array(array_t a) {
    json j;
    j.adopt_items(a.data(), a.size());
    return j;
  }
  /// \brief An object value; the caller guarantees unique keys.
  static json make_object(object_t o) {
    json j;
    j.adopt_members(o.data(), o.size());
    return j;
  }

  /// \brief The kind of this value.
  kind type() const { return kind_; }
  /// \brief "null", "boolean", "number", "string", "array" or "object", for error messages.
  const char* type_name() const {
    switch (kind_) {
      case kind::null: return "null";
      case kind::boolean: return "boolean";
      case kind::number: return "number";
      case kind::string: return "string";
      case kind::array: return "array";
      case kind::object: return "object";
    }
    return "?";
  }
  /// \brief True for null.
  bool is_null() const { return kind_ == kind::null; }
  /// \brief True for true/false.
  bool is_bool() const { return kind_ == kind::boolean; }
  /// \brief True for any number.
  bool is_number() const { return kind_ == kind::number; }
  /// \brief True for a number that is integral and fits int64.
  bool is_int() const { return kind_ == kind::number && flag_; }
  /// \brief True for a string.
  bool is_string() const { return kind_ == kind::string; }
  /// \brief True for an array.
  bool is_array() const { return kind_ == kind::array; }
  /// \brief True for an object.
  bool is_object() const { return kind_ == kind::object; }

  /// \brief The boolean; throws unless is_bool().
  bool as_bool() const {
    expect(kind::boolean, "a boolean");
    return flag_;
  }
  /// \brief The exact integer; throws unless is_int() (so 1.5 and 1e30 are rejected).
  std::int64_t as_int() const {
    expect(kind::number, "an integer");
    MUNINN_CHECK(flag_, "expected an integer but found the number ", u_.num);
    return u_.i;
  }
  /// \brief The number as double; throws unless is_number().
  double as_double() const {
    expect(kind::number, "a number");
    return flag_ ? static_cast<double>(u_.i) : u_.num;
  }
  /// \brief The string; throws unless is_string().
  const std::string& as_string() const {
    expect(kind::string, "a string");
    static const std::string empty;
    return u_.str ? *u_.str : empty;
  }
  /// \brief The elements; throws unless is_array().
  view<json> as_array() const {
    expect(kind::array, "an array");
    return {u_.items, count_};
  }
  /// \brief The (key, value) pairs in file order; throws unless is_object().
  view<member> as_object() const {
    expect(kind::object, "an object");
    return {u_.members, count_};
  }

  /// \brief Number of elements (array) or members (object); 0 for scalars.
  std::size_t size() const { return kind_ == kind::array || kind_ == kind::object ? count_ : 0; }
  /// \brief Array element `i`; throws when out of range or not an array.
  const json& operator[](std::size_t i) const {
    const view<json> a = as_array();
    MUNINN_CHECK(i < a.size(), "array index ", i, " out of range (size ", a.size(), ")");
    return a[i];
  }
  /// \brief The member named `key`, or nullptr when absent; throws unless is_object().
  const json* find(std::string_view key) const {
    for (const auto& kv : as_object())
      if (kv.first == key) return &kv.second;
    return nullptr;
  }
  /// \brief True when the object has a member named `key`.
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  /// \brief The member named `key`; throws when absent.
  const json& at(std::string_view key) const {
    const json* v = find(key);
    MUNINN_CHECK(v, "missing key '", key, "'");
    return *v;
  }

 private:
  friend class detail::json_parser;

  void expect(kind k, const char* what) const {
    MUNINN_CHECK(kind_ == k, "expected ", what, " but found ", type_name());
  }
  // The count is the stored 32-bit one: with a size_t, GCC sees a path where new[]'s size overflows
  // and warns (-Walloc-size-larger-than) when the whole program is optimised at the link.
  template <class T>
  static T* copy_of(const T* src, std::uint32_t n) {
    if (n == 0) return nullptr;
    T* out = new T[n];
    try {
      std::copy(src, src + n, out);
    } catch (...) {
      delete[] out;
      throw;
    }
    return out;
  }
  template <class T>
  static T* moved_from(T* src, std::size_t n) {
    if (n == 0) return nullptr;
    T* out = new T[n];
    std::move(src, src + n, out);
    return out;
  }
  static std::uint32_t checked_count(std::size_t n) {
    MUNINN_CHECK(n <= UINT32_MAX, "JSON array or object with ", n, " elements is too large");
    return static_cast<std::uint32_t>(n);
  }
  // Moves n values out of `src` into a new exactly sized array owned by this (null) value.
  void adopt_items(json* src, std::size_t n) {
    count_ = checked_count(n);
    u_.items = moved_from(src, n);
    kind_ = kind::array;
  }
  void adopt_members(member* src, std::size_t n) {
    count_ = checked_count(n);
    u_.members = moved_from(src, n);
    kind_ = kind::object;
  }
  void release() noexcept {
    if (kind_ == kind::string) delete u_.str;
    if (kind_ == kind::array) delete[] u_.items;
    if (kind_ == kind::object) delete[] u_.members;
  }
  void reset_to_null() noexcept {
    kind_ = kind::null;
    flag_ = false;
    count_ = 0;
    u_.num = 0.0;
  }

  kind kind_ = kind::null;
  bool flag_ = false;         // the boolean, or "number holds an exact int64"
  std::uint32_t count_ = 0;   // array elements or object members
  union payload {
    double num;
    std::int64_t i;
    std::string* str;  // nullptr for ""
    json* items;
    member* members;
  };
  payload u_{0.0};
};

/// \brief The number of bytes append_json_string appends for `s`.
inline std::size_t json_string_size(std::string_view s) {
  std::size_t n = 2;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    n += (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f') ? 2 : u < 0x20 ? 6 : 1;
  }
  return n;
}

/// \brief Appends `s` to `out` as a quoted JSON string (escaping quotes, backslashes, controls),
/// byte for byte as Python's `json.dumps(ensure_ascii=False)` writes it (chat templates' `tojson`).
inline void append_json_string(std::string& out, std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out += hex[u >> 4];
          out += hex[u & 15];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

namespace detail {

/// Recursive-descent parser over a string_view; errors carry source:line:column.
class json_parser {
 public:
  json_parser(std::string_view text, const std::string& source) : s_(text), src_(source) {}

  json parse_document() {
    // A UTF-8 byte order mark is not JSON, but editors write one; accepting it costs nothing.
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    skip_ws();
    if (pos_ >= s_.size()) error_at(pos_, "empty document");
    json v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) error_at(pos_, "unexpected trailing characters after the JSON value");
    return v;
  }

 private:
  // Guards the recursion against hostile inputs like "[[[[...".
  static constexpr int max_depth = 256;

  [[noreturn]] void error_at(std::size_t at, const std::string& msg) const {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    fail(src_, ":", line, ":", col, ": JSON parse error: ", msg);
  }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  // Skips white space, then consumes `c` if it comes next.
  bool consume(char c) {
    skip_ws();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  // After an object member or array item: true at ',' (another one follows), false at `close` (the
  // container ends); either is consumed.
  bool another_element(char close, const char* container) {
    if (consume(',')) return true;
    if (consume(close)) return false;
    error_at(pos_, std::string("expected ',' or '") + close + "' in " + container);
  }

  void expect_literal(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) error_at(pos_, "invalid literal (expected a value)");
    pos_ += lit.size();
  }

  json parse_value(int depth) {
    if (depth > max_depth) error_at(pos_, "nesting deeper than 256 levels");
    if (pos_ >= s_.size()) error_at(pos_, "unexpected end of input, expected a value");
    switch (s_[pos_]) {
      case '{': return parse_object(depth);
      case '[': return parse_array(depth);
      case '"': return json::make_string(parse_string());
      case 't': expect_literal("true"); return json::make_bool(true);
      case 'f': expect_literal("false"); return json::make_bool(false);
      case 'n': expect_literal("null"); return json();
      default:
        if (s_[pos_] == '-' || (s_[pos_] >= '0' && s_[pos_] <= '9')) return parse_number();
        error_at(pos_, std::string("unexpected character '") + s_[pos_] + "', expected a value");
    }
  }

  // Children are gathered on one stack per kind shared by every level, then moved into an
  // exactly sized array when their container closes: no per-container growth slack survives.
  json parse_object(int depth) {
    ++pos_;  // '{'
    const std::size_t base = members_.size();
    if (!consume('}')) {
      do {
        skip_ws();
        if (peek() != '"') error_at(pos_, "expected a string key in object");
        const std::size_t key_pos = pos_;
        std::string key = parse_string();
        skip_ws();
        if (peek() != ':') error_at(pos_, "expected ':' after object key");
        ++pos_;
        skip_ws();
        json value = parse_value(depth + 1);
        members_.emplace_back(std::move(key), std::move(value));
        key_pos_.push_back(key_pos);
      } while (another_element('}', "object"));
    }
    check_unique_keys(base);
    json out;
    out.adopt_members(members_.data() + base, members_.size() - base);
    members_.erase(members_.begin() + std::ptrdiff_t(base), members_.end());
    key_pos_.erase(key_pos_.begin() + std::ptrdiff_t(base), key_pos_.end());
    return out;
  }

  // Sorting indices makes duplicate detection O(n log n) for headers with thousands of tensors,
  // at 4 bytes per member.
  void check_unique_keys(std::size_t base) {
    const std::size_t n = members_.size() - base;
    if (n < 2) return;
    std::vector<std::uint32_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
    const json::member* m = members_.data() + base;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return m[a].first != m[b].first ? m[a].first < m[b].first : a < b;
    });
    for (std::size_t i = 1; i < n; ++i)
      if (m[order[i]].first == m[order[i - 1]].first)
        error_at(key_pos_[base + order[i]], "duplicate key \"" + m[order[i]].first + "\" in object");
  }

  json parse_array(int depth) {
    ++pos_;  // '['
    const std::size_t base = items_.size();
    if (!consume(']')) {
      do {
        skip_ws();
        json v = parse_value(depth + 1);  // may grow items_ itself; push afterwards
        items_.push_back(std::move(v));
      } while (another_element(']', "array"));
    }
    json out;
    out.adopt_items(items_.data() + base, items_.size() - base);
    items_.erase(items_.begin() + std::ptrdiff_t(base), items_.end());
    return out;
  }

  unsigned parse_hex4() {
    if (pos_ + 4 > s_.size()) error_at(pos_, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_ + i];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else error_at(pos_ + i, "invalid hex digit in \\u escape");
    }
    pos_ += 4;
    return v;
  }

  // Length of the valid UTF-8 sequence starting at pos_, or 0 (overlongs and surrogates rejected).
  std::size_t utf8_sequence_length() const {
    const auto b = [&](std::size_t i) { return pos_ + i < s_.size() ? static_cast<unsigned char>(s_[pos_ + i]) : 0u; };
    const unsigned c0 = b(0);
    const auto cont = [&](std::size_t i) { return (b(i) & 0xC0u) == 0x80u; };
    if (c0 >= 0xC2 && c0 <= 0xDF) return cont(1) ? 2 : 0;
    if (c0 >= 0xE0 && c0 <= 0xEF) {
      if (!cont(1) || !cont(2)) return 0;
      if (c0 == 0xE0 && b(1) < 0xA0) return 0;   // overlong
      if (c0 == 0xED && b(1) >= 0xA0) return 0;  // UTF-16 surrogate
      return 3;
    }
    if (c0 >= 0xF0 && c0 <= 0xF4) {
      if (!cont(1) || !cont(2) || !cont(3)) return 0;
      if (c0 == 0xF0 && b(1) < 0x90) return 0;   // overlong
      if (c0 == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
      return 4;
    }
    return 0;
  }

  // Bytes up to the closing quote, escapes included: the decoded string is never longer, so one
  // reservation makes it exactly as large as needed at most.
  std::size_t raw_string_length() const {
    std::size_t i = pos_;
    while (i < s_.size() && s_[i] != '"') i += s_[i] == '\\' ? 2 : 1;
    return std::min(i, s_.size()) - pos_;
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    out.reserve(raw_string_length());
    for (;;) {
      if (pos_ >= s_.size()) error_at(pos_, "unterminated string");
      const char c = s_[pos_];
      const auto u = static_cast<unsigned char>(c);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (u < 0x20) error_at(pos_, "control character in string (must be escaped)");
      if (u >= 0x80) {
        const std::size_t n = utf8_sequence_length();
        if (n == 0) error_at(pos_, "invalid UTF-8 in string");
        out.append(s_.data() + pos_, n);
        pos_ += n;
        continue;
      }
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      const std::size_t esc_pos = pos_;
      ++pos_;
      if (pos_ >= s_.size()) error_at(pos_, "unterminated escape in string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = parse_hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) error_at(esc_pos, "lone low surrogate in \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(pos_, 2) != "\\u") error_at(esc_pos, "high surrogate not followed by a low surrogate");
            pos_ += 2;
            const unsigned lo = parse_hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) error_at(esc_pos, "high surrogate not followed by a low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: error_at(esc_pos, std::string("invalid escape '\\") + e + "' in string");
      }
    }
  }

  // floor(log10(|x|)) of a grammar-checked nonzero number, roughly (exponent saturated at
  // +-10^9): only its sign is used, to tell overflow from underflow.
  static long long decimal_magnitude(const char* p, const char* last) {
    if (*p == '-') ++p;
    long long int_digits = 0, lead = -1, pos = 0;  // lead: first nonzero digit's index among all digits
    bool in_fraction = false;
    for (; p != last && *p != 'e' && *p != 'E'; ++p) {
      if (*p == '.') {
        in_fraction = true;
        continue;
      }
      if (!in_fraction) ++int_digits;
      if (lead < 0 && *p != '0') lead = pos;
      ++pos;
    }
    long long exp = 0;
    if (p != last) {
      ++p;
      const bool neg = *p == '-';
      if (*p == '-' || *p == '+') ++p;
      for (; p != last; ++p) exp = std::min(exp * 10 + (*p - '0'), 1000000000LL);
      if (neg) exp = -exp;
    }
    return int_digits - lead - 1 + exp;
  }

  json parse_number() {
    const std::size_t start = pos_;
    bool integral = true;
    if (peek() == '-') ++pos_;
    const auto digit = [&] { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; };
    if (!digit()) error_at(pos_, "expected a digit");
    if (s_[pos_] == '0') {
      ++pos_;
      if (digit()) error_at(pos_, "leading zeros are not allowed in numbers");
    } else {
      while (digit()) ++pos_;
    }
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!digit()) error_at(pos_, "expected a digit after the decimal point");
      while (digit()) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!digit()) error_at(pos_, "expected a digit in the exponent");
      while (digit()) ++pos_;
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + pos_;
    // from_chars does not accept a leading '+', which the grammar above already excludes;
    // unlike strtod it ignores the C locale's decimal separator.
    double d = 0.0;
    const auto rd = std::from_chars(first, last, d);
    if (rd.ec == std::errc::result_out_of_range) {
      // Too small for a double is still a valid number: it becomes (signed) zero, as in Python's
      // json; the caller's range check on the field decides. Too large has no such answer.
      if (decimal_magnitude(first, last) >= 0) error_at(start, "number out of the range of double");
      return json::make_number(*first == '-' ? -0.0 : 0.0, false, 0);  // not the integer 0: 1e-400 is not integral
    } else if (rd.ec != std::errc() || rd.ptr != last) {
      error_at(start, "malformed number");
    }
    if (integral) {
      std::int64_t i = 0;
      const auto ri = std::from_chars(first, last, i);
      if (ri.ec == std::errc() && ri.ptr == last) return json::make_number(d, true, i);
    }
    // 1e3 or 5280.0 are integral too; accept them as integers while the double is exact.
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) <= 9007199254740992.0)
      return json::make_number(d, true, static_cast<std::int64_t>(d));
    return json::make_number(d, false, 0);
  }

  std::string_view s_;
  const std::string& src_;
  std::size_t pos_ = 0;
  std::vector<json> items_;             // elements of the arrays being parsed, innermost last
  std::vector<json::member> members_;   // members of the objects being parsed, innermost last
  std::vector<std::size_t> key_pos_;    // where each member's key starts, for error messages
};

}  // namespace detail

/// \brief Parses a complete JSON document.
/// \param text the document (UTF-8)
/// \param source_name named in error messages, usually the file path
/// \throws muninn::error "<source>:<line>:<column>: JSON parse error: ..." on malformed input
inline json parse_json(std::string_view text, const std::string& source_name) {
  return detail::json_parser(text, source_name).parse_document();
}

/// \brief Reads a whole regular file into a string; errors name the path and the system's reason, a
/// path that is not a regular file (FIFO, device, directory, socket) is refused before it is opened
/// (open_regular_file), and a file of more than `max_bytes` is refused before it is read.
inline std::string read_text_file(const std::string& path,
                                  std::size_t max_bytes = std::numeric_limits<std::size_t>::max()) {
  const mapped_file f(path);
  if (f.size() > max_bytes) fail(path, ": a file of ", f.size(), " bytes (at most ", max_bytes, " are read)");
  return std::string(f.view());
}

/// \brief Reads and parses a JSON file; parse errors name the path, line and column.
///
/// Parses straight from a read-only mapping of the file, so the text is never copied.
inline json read_json_file(const std::string& path) {
  const mapped_file f(path);
  return parse_json(f.view(), path);
}

}  // namespace muninn::io
