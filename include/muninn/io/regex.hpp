#pragma once
/// \file
/// \brief Regular expressions with the meaning Hugging Face `tokenizers` gives them (Oniguruma, Ruby syntax), run by
/// PCRE2 (8-bit, UTF + UCP, JIT when the library has it). Link libpcre2-8; the CMake target muninn::muninn does.
///
/// A pattern is rewritten where Oniguruma and PCRE2 read the same text differently, then compiled once:
/// - `\s` is Oniguruma's White_Space set (PCRE2's also holds U+180E); `\w` is Alphabetic, marks, decimal digits
///   and connector punctuation (PCRE2's is letters, numbers and '_'), and `\b`, `\B` are boundaries by it; `\h`
///   is a hex digit and `\v` the vertical tab (in PCRE2 they are white-space classes); `\uHHHH` is a code point;
///   `x{,n}` means `x{0,n}`;
/// - `^` and `$` match at line breaks, `.` does not match `\n`, and the option letter `m` means "dot matches `\n`"
///   (PCRE2's `s`);
/// - `\p{L}` and `\p{N}` (also `\p{Letter}`, `\p{Number}`) take in the code points of Oniguruma's newer Unicode
///   tables that the PCRE2 in use does not know yet (unicode_classes.hpp); `\pL` without braces is the letters
///   `pL`, as in Oniguruma;
/// - a class holding `\W`, `\S` or `\H` becomes an alternation, so that they keep Oniguruma's meaning there too;
/// - `[:alpha:]`, `[:alnum:]`, `[:word:]`, `[:space:]`, `[:upper:]`, `[:lower:]`, `[:digit:]` take Oniguruma's
///   Unicode meaning, and long general-category names (`\p{Letter}`, `\p{Uppercase_Letter}`) their short ones.
///
/// What is not rewritten is rejected when PCRE2 would silently read it otherwise (nested classes `[a[b]]`, class
/// intersection `&&`) and otherwise left to PCRE2; the remaining differences are listed in
/// docs/inference.md (Tokenizer). PCRE2 10.34 is the oldest that builds; `\w`, `\b` and the POSIX classes above
/// use the Alphabetic, Uppercase and Lowercase properties, which need 10.40 (older: a load error naming the pattern).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifndef PCRE2_CODE_UNIT_WIDTH
/// \brief PCRE2's 8-bit (UTF-8) API, chosen before pcre2.h is included.
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#if PCRE2_MAJOR < 10 || (PCRE2_MAJOR == 10 && PCRE2_MINOR < 34)
#error "Muninn's tokenizer needs PCRE2 10.34 or newer (PCRE2_MATCH_INVALID_UTF)"
#endif

#include "muninn/core/error.hpp"
#include "muninn/io/unicode_classes.hpp"
#include "muninn/io/utf8.hpp"

namespace muninn::io {

namespace detail {

/// PCRE2's message for an error code.
inline std::string pcre2_message(int code) {
  PCRE2_UCHAR8 buf[256];
  const int n = pcre2_get_error_message_8(code, buf, sizeof buf);
  if (n < 0) return "PCRE2 error " + std::to_string(code);
  return std::string(reinterpret_cast<const char*>(buf), std::size_t(n));
}

/// Oniguruma's `\s`: White_Space, written as the inside of a character class.
inline constexpr std::string_view onig_space_items =
    R"(\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";
/// Oniguruma's `\w` (Unicode's "word" characters), as the inside of a character class.
inline constexpr std::string_view onig_word_items = R"(\p{Alphabetic}\p{M}\p{Nd}\p{Pc})";
/// What Oniguruma's `\w` (and so `\b`) adds outside a class (its Latin-1 table counts the superscripts and
/// fractions as word characters; `[\w]` does not).
inline constexpr std::string_view onig_latin1_word_items = R"(\x{B2}\x{B3}\x{B9}\x{BC}-\x{BE})";

inline std::string to_hex(std::uint32_t v) {
  static const char digits[] = "0123456789ABCDEF";
  std::string out;
  do {
    out.insert(out.begin(), digits[v & 0xFu]);
    v >>= 4;
  } while (v);
  return out;
}

/// The code points of `ranges` that PCRE2's `\p{cls}` does not match (its Unicode tables are older than
/// Oniguruma's), as the inside of a character class; empty when PCRE2 knows them all.
template <std::size_t N>
inline std::string pcre2_missing_items(const code_point_range (&ranges)[N], const char* cls) {
  std::string all;
  for (const code_point_range& r : ranges)
    for (std::uint32_t cp = r.lo; cp <= r.hi; ++cp) append_utf8(all, cp);
  int err = 0;
  PCRE2_SIZE off = 0;
  const std::string negated = std::string("\\P{") + cls + "}";
  pcre2_code_8* code = pcre2_compile_8(reinterpret_cast<PCRE2_SPTR8>(negated.data()), negated.size(),
                                       PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  MUNINN_CHECK(code, "PCRE2 cannot compile ", negated, ": ", pcre2_message(err));
  pcre2_match_data_8* md = pcre2_match_data_create_8(1, nullptr);
  std::vector<code_point_range> missing;
  std::size_t pos = 0;
  const auto* subject = reinterpret_cast<PCRE2_SPTR8>(all.data());
  // NO_UTF_CHECK: `all` is valid UTF-8, and checking it again on every call would make this quadratic.
  while (pcre2_match_8(code, subject, all.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr) >= 0) {
    const std::size_t s = pcre2_get_ovector_pointer_8(md)[0];
    std::size_t len = 1;
    std::uint32_t cp = static_cast<unsigned char>(all[s]);
    if (cp >= 0xF0) len = 4, cp &= 0x07u;
    else if (cp >= 0xE0) len = 3, cp &= 0x0Fu;
    else if (cp >= 0xC0) len = 2, cp &= 0x1Fu;
    for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(all[s + k]) & 0x3Fu);
    if (!missing.empty() && missing.back().hi + 1 == cp) missing.back().hi = cp;
    else missing.push_back({cp, cp});
    pos = s + len;
  }
  std::string items;
  for (const code_point_range& r : missing) {
    items += "\\x{" + to_hex(r.lo) + "}";
    if (r.hi > r.lo) items += "-\\x{" + to_hex(r.hi) + "}";
  }
  pcre2_match_data_free_8(md);
  pcre2_code_free_8(code);
  return items;
}

/// What `\p{L}` and `\p{N}` need beyond PCRE2's own tables; computed once per process, on first use.
inline const std::string& letter_supplement() {
  static const std::string s = pcre2_missing_items(letter_ranges, "L");
  return s;
}
inline const std::string& number_supplement() {
  static const std::string s = pcre2_missing_items(number_ranges, "N");
  return s;
}

/// Rewrites an Oniguruma pattern (as `tokenizers` compiles it) into a PCRE2 pattern with the same meaning; see the
/// file comment. `origin[k]` is the offset in `pattern` that output byte k came from, for error messages.
class onig_translator {
 public:
  explicit onig_translator(std::string_view pattern) : p_(pattern) {}

  std::string run(std::vector<std::size_t>& origin) {
    while (i_ < p_.size()) {
      if (in_class_) class_item();
      else outer_item();
    }
    MUNINN_CHECK(!in_class_, "missing ']' at the end");
    origin = std::move(origin_);
    return std::move(out_);
  }

 private:
  void emit(std::string_view s, std::size_t from) {
    out_ += s;
    origin_.insert(origin_.end(), s.size(), from);
  }
  void copy(std::size_t n) {
    for (std::size_t k = 0; k < n && i_ < p_.size(); ++k, ++i_) emit(p_.substr(i_, 1), i_);
  }
  char at(std::size_t k) const { return i_ + k < p_.size() ? p_[i_ + k] : '\0'; }
  [[noreturn]] void reject(const char* what) const { fail(what, " at offset ", i_, " is not supported"); }

  // \p{Name}, \p{^Name}, \P{Name}: the length of the escape, its name and whether it is negated; 0 for \p without
  // a brace, which Oniguruma reads as the letter p.
  std::size_t property(std::string& name, bool& negated) const {
    negated = at(1) == 'P';
    if (at(2) != '{') return 0;
    const std::size_t close = p_.find('}', i_ + 3);
    if (close == std::string_view::npos) return 2;  // PCRE2 reports the malformed escape
    name = std::string(p_.substr(i_ + 3, close - i_ - 3));
    if (!name.empty() && name[0] == '^') {
      negated = !negated;
      name.erase(0, 1);
    }
    name = short_category(name);
    return close + 1 - i_;
  }
  // The short name of a general category written out in full (Oniguruma knows both, PCRE2 only the short one).
  static std::string short_category(const std::string& name) {
    std::string key;  // Oniguruma ignores case, spaces, '_' and '-' in property names
    for (char c : name)
      if (c != ' ' && c != '_' && c != '-') key += char(c >= 'A' && c <= 'Z' ? c + 32 : c);
    static const std::pair<const char*, const char*> names[] = {
        {"letter", "L"}, {"casedletter", "LC"}, {"uppercaseletter", "Lu"}, {"lowercaseletter", "Ll"},
        {"titlecaseletter", "Lt"}, {"modifierletter", "Lm"}, {"otherletter", "Lo"}, {"mark", "M"},
        {"nonspacingmark", "Mn"}, {"spacingmark", "Mc"}, {"enclosingmark", "Me"}, {"number", "N"},
        {"decimalnumber", "Nd"}, {"letternumber", "Nl"}, {"othernumber", "No"}, {"punctuation", "P"},
        {"connectorpunctuation", "Pc"}, {"dashpunctuation", "Pd"}, {"openpunctuation", "Ps"},
        {"closepunctuation", "Pe"}, {"initialpunctuation", "Pi"}, {"finalpunctuation", "Pf"},
        {"otherpunctuation", "Po"}, {"symbol", "S"}, {"mathsymbol", "Sm"}, {"currencysymbol", "Sc"},
        {"modifiersymbol", "Sk"}, {"othersymbol", "So"}, {"separator", "Z"}, {"spaceseparator", "Zs"},
        {"lineseparator", "Zl"}, {"paragraphseparator", "Zp"}, {"other", "C"}, {"control", "Cc"},
        {"format", "Cf"}, {"surrogate", "Cs"}, {"privateuse", "Co"}, {"unassigned", "Cn"}};
    for (const auto& n : names)
      if (key == n.first) return n.second;
    return name;
  }
  // The supplement for a property that unicode_classes.hpp holds in a newer Unicode version, or null.
  static const std::string* supplement(const std::string& name) {
    if (name == "L" || name == "Letter") return &letter_supplement();
    if (name == "N" || name == "Number") return &number_supplement();
    return nullptr;
  }

  // The POSIX classes whose Unicode meaning differs between the two ([:alpha:] is Alphabetic in Oniguruma, \p{L} in
  // PCRE2), as class items; null for the others.
  static const std::string* posix_class(std::string_view name) {
    static const std::string alpha = "\\p{Alphabetic}" + letter_supplement();
    static const std::string alnum = "\\p{Alphabetic}\\p{Nd}" + letter_supplement();
    static const std::string word = std::string(onig_word_items) + letter_supplement();
    static const std::string space(onig_space_items), upper("\\p{Uppercase}"), lower("\\p{Lowercase}"),
        digit("\\p{Nd}");
    if (name == "alpha") return &alpha;
    if (name == "alnum") return &alnum;
    if (name == "word") return &word;
    if (name == "space") return &space;
    if (name == "upper") return &upper;
    if (name == "lower") return &lower;
    if (name == "digit") return &digit;
    return nullptr;
  }

  // \uHHHH (Oniguruma) is \x{HHHH} (PCRE2).
  bool unicode_escape() {
    if (at(1) != 'u') return false;
    for (std::size_t k = 2; k < 6; ++k) {
      const char c = at(k);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
    }
    emit("\\x{" + std::string(p_.substr(i_ + 2, 4)) + "}", i_);
    i_ += 6;
    return true;
  }

  void outer_item() {
    const char c = p_[i_];
    if (c == '\\') {
      if (unicode_escape()) return;
      const std::size_t at0 = i_;
      switch (at(1)) {
        case 's': emit("[" + std::string(onig_space_items) + "]", at0); i_ += 2; return;
        case 'S': emit("[^" + std::string(onig_space_items) + "]", at0); i_ += 2; return;
        case 'w':
        case 'W':
          emit(std::string(at(1) == 'w' ? "[" : "[^") + std::string(onig_word_items) + letter_supplement() +
                   std::string(onig_latin1_word_items) + "]",
               at0);
          i_ += 2;
          return;
        case 'h': emit("[0-9A-Fa-f]", at0); i_ += 2; return;
        case 'H': emit("[^0-9A-Fa-f]", at0); i_ += 2; return;
        case 'b':
        case 'B': {
          // A word boundary by Oniguruma's \w: a word character on exactly one side (\b) or on neither or both (\B).
          const std::string w =
              "[" + std::string(onig_word_items) + letter_supplement() + std::string(onig_latin1_word_items) + "]";
          emit(at(1) == 'b' ? "(?:(?<=" + w + ")(?!" + w + ")|(?<!" + w + ")(?=" + w + "))"
                            : "(?:(?<=" + w + ")(?=" + w + ")|(?<!" + w + ")(?!" + w + "))",
               at0);
          i_ += 2;
          return;
        }
        case 'v': emit("\\x{0B}", at0); i_ += 2; return;
        case 'p':
        case 'P': {
          std::string name;
          bool negated = false;
          const std::size_t len = property(name, negated);
          if (len == 0) {
            emit(p_.substr(i_ + 1, 1), at0);
            i_ += 2;
            return;
          }
          const std::string* sup = supplement(name);
          if (sup && !sup->empty()) emit(std::string(negated ? "[^" : "[") + "\\p{" + name + "}" + *sup + "]", at0);
          else emit(std::string(negated ? "\\P{" : "\\p{") + name + "}", at0);
          i_ += len;
          return;
        }
        default: copy(2); return;
      }
    }
    if (c == '[') {
      in_class_ = true;
      class_start_ = out_.size();
      class_negated_ = at(1) == '^';
      complements_.clear();
      copy(1);
      if (at(0) == '^') copy(1);
      if (at(0) == ']') copy(1);  // a ']' first in a class is a literal in both
      return;
    }
    if (c == '(' && at(1) == '?' && option_group()) return;
    if (c == '{' && at(1) == ',') {
      std::size_t k = 2;
      while (at(k) >= '0' && at(k) <= '9') ++k;
      if (k > 2 && at(k) == '}') {
        emit("{0", i_);
        ++i_;
        return;
      }
    }
    copy(1);
  }

  // (?imx-imx) and (?imx-imx:...): Oniguruma's m is PCRE2's s.
  bool option_group() {
    std::size_t k = 2;
    while (at(k) == 'i' || at(k) == 'm' || at(k) == 'x' || at(k) == '-') ++k;
    if (k == 2 || (at(k) != ')' && at(k) != ':')) return false;
    for (std::size_t j = 0; j < k; ++j) emit(p_[i_ + j] == 'm' ? "s" : p_.substr(i_ + j, 1), i_ + j);
    i_ += k;
    return true;
  }

  void class_item() {
    const char c = p_[i_];
    if (c == ']') {
      in_class_ = false;
      if (complements_.empty()) {
        copy(1);
      } else {
        close_class_with_complements();
        ++i_;
      }
      return;
    }
    if (c == '[') {
      if (at(1) != ':') reject("a nested character class");
      const std::size_t close = p_.find(":]", i_ + 2);
      if (close == std::string_view::npos) {
        copy(1);
        return;
      }
      const std::string* items = posix_class(p_.substr(i_ + 2, close - i_ - 2));
      if (items) emit(*items, i_);
      else copy(close + 2 - i_);
      i_ = close + 2;
      return;
    }
    if (c == '&' && at(1) == '&') reject("a character class intersection (&&)");
    if (c != '\\') {
      copy(1);
      return;
    }
    if (unicode_escape()) return;
    const std::size_t at0 = i_;
    switch (at(1)) {
      case 's': emit(onig_space_items, at0); i_ += 2; return;
      case 'w': emit(std::string(onig_word_items) + letter_supplement(), at0); i_ += 2; return;
      case 'h': emit("0-9A-Fa-f", at0); i_ += 2; return;
      case 'S': complements_.emplace_back(onig_space_items); i_ += 2; return;
      case 'W': complements_.push_back(std::string(onig_word_items) + letter_supplement()); i_ += 2; return;
      case 'H': complements_.emplace_back("0-9A-Fa-f"); i_ += 2; return;
      case 'v': emit("\\x{0B}", at0); i_ += 2; return;
      case 'p':
      case 'P': {
        std::string name;
        bool negated = false;
        const std::size_t len = property(name, negated);
        if (len == 0) {
          emit(p_.substr(i_ + 1, 1), at0);
          i_ += 2;
          return;
        }
        const std::string* sup = negated ? nullptr : supplement(name);
        emit(std::string(negated ? "\\P{" : "\\p{") + name + "}", at0);
        if (sup) emit(*sup, at0);
        i_ += len;
        return;
      }
      default: copy(2); return;
    }
  }

  // A class holding \W, \S or \H (complements PCRE2 would take with its own meaning) becomes an alternation:
  // [a\W] is (?:[a]|[^word]) and [^a\W] is (?:(?![a])[word]).
  void close_class_with_complements() {
    const std::size_t origin = origin_[class_start_];
    std::string rest = out_.substr(class_start_ + (class_negated_ ? 2 : 1));
    if (!rest.empty() && rest[0] == '^') rest.insert(0, "\\");
    out_.resize(class_start_);
    origin_.resize(class_start_);
    std::string alt;
    if (!class_negated_) {
      alt = "(?:";
      if (!rest.empty()) alt += "[" + rest + "]|";
      for (std::size_t k = 0; k < complements_.size(); ++k) alt += (k ? "|[^" : "[^") + complements_[k] + "]";
      alt += ")";
    } else {
      alt = "(?:";  // one atom, for the quantifier that may follow
      if (!rest.empty()) alt += "(?![" + rest + "])";
      for (std::size_t k = 0; k + 1 < complements_.size(); ++k) alt += "(?=[" + complements_[k] + "])";
      alt += "[" + complements_.back() + "])";
    }
    emit(alt, origin);
  }

  std::string_view p_;
  std::size_t i_ = 0;
  bool in_class_ = false;
  bool class_negated_ = false;
  std::size_t class_start_ = 0;
  std::vector<std::string> complements_;
  std::string out_;
  std::vector<std::size_t> origin_;
};

/// What each thread needs to run a match: a one-pair match data block (only the whole match is read), a match
/// context carrying the limits, and a JIT stack larger than PCRE2's 32 KiB default.
struct pcre2_thread_state {
  pcre2_match_data_8* data = pcre2_match_data_create_8(1, nullptr);
  pcre2_match_context_8* context = pcre2_match_context_create_8(nullptr);
  pcre2_jit_stack_8* stack = pcre2_jit_stack_create_8(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_thread_state() {
    MUNINN_CHECK(data && context && stack, "out of memory for PCRE2's match state");
    pcre2_jit_stack_assign_8(context, nullptr, stack);
  }
  ~pcre2_thread_state() {
    pcre2_jit_stack_free_8(stack);
    pcre2_match_context_free_8(context);
    pcre2_match_data_free_8(data);
  }
  pcre2_thread_state(const pcre2_thread_state&) = delete;
  pcre2_thread_state& operator=(const pcre2_thread_state&) = delete;
};

inline pcre2_thread_state& pcre2_state() {
  thread_local pcre2_thread_state state;
  return state;
}

}  // namespace detail

/// \brief The matching work one encode may do: all searches of every pattern over every piece of one text
/// together.
///
/// PCRE2's match limit bounds one search; a pattern that needs a little less than that at every position (of
/// the `(a+)+b|.` kind) would still run for minutes over a long text. Each search therefore starts with a small
/// limit, and only a search that reaches it is run again with four times as much, each try paid from this
/// budget; an ordinary search pays a few steps, and the budget ends the runaway one with an error naming the
/// pattern. A search is charged at most about five times the steps it takes.
class regex_budget {
 public:
  /// \brief Steps of PCRE2's match limit allowed per byte of text and regex pass (ordinary tokenizer patterns
  /// take about one; see docs/inference.md).
  static constexpr std::size_t steps_per_byte = 64;
  /// \brief The budget of a short text.
  static constexpr std::size_t min_steps = std::size_t(1) << 20;
  /// \brief The first limit of each search.
  static constexpr std::size_t first_try = 16;

  /// \brief The budget of `passes` regex passes over `bytes` bytes of text.
  explicit regex_budget(std::size_t bytes, std::size_t passes = 1)
      : total_(std::max(min_steps, steps_per_byte * bytes * std::max<std::size_t>(passes, 1))), left_(total_),
        bytes_(bytes) {}

  /// \brief Steps not yet spent.
  std::size_t left() const { return left_; }
  /// \brief All the steps the budget holds.
  std::size_t total() const { return total_; }
  /// \brief The text the budget was made for, in bytes.
  std::size_t text_bytes() const { return bytes_; }
  /// \brief Pays `n` steps (at most left()).
  void spend(std::size_t n) { left_ -= std::min(n, left_); }

 private:
  std::size_t total_, left_, bytes_;
};

/// \brief A pattern compiled once with Oniguruma's meaning (see the file comment); find_all() is const and may be
/// called from several threads.
class regex {
 public:
  /// \brief Translates and compiles `pattern`.
  /// \throws muninn::error naming the pattern, with PCRE2's message and the offset in `pattern` it points at
  explicit regex(std::string pattern) : pattern_(std::move(pattern)) {
    std::vector<std::size_t> origin;
    std::string translated;
    try {
      translated = detail::onig_translator(pattern_).run(origin);
    } catch (const error& e) {
      fail("regex '", pattern_, "': ", e.what());
    }
    int err = 0;
    PCRE2_SIZE off = 0;
    pcre2_compile_context_8* cc = pcre2_compile_context_create_8(nullptr);
    pcre2_set_newline_8(cc, PCRE2_NEWLINE_LF);
    pcre2_code_8* code = pcre2_compile_8(reinterpret_cast<PCRE2_SPTR8>(translated.data()), translated.size(),
                                         PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE | PCRE2_MATCH_INVALID_UTF, &err,
                                         &off, cc);
    pcre2_compile_context_free_8(cc);
    if (!code) {
      const std::size_t at = off < origin.size() ? origin[off] : pattern_.size();
      fail("regex '", pattern_, "' does not compile: ", detail::pcre2_message(err), " at offset ", at);
    }
    code_.reset(code, pcre2_code_free_8);
    pcre2_jit_compile_8(code, PCRE2_JIT_COMPLETE);  // no JIT (an unsupported CPU): the interpreter runs it
  }

  /// \brief The pattern as given.
  const std::string& pattern() const { return pattern_; }

  /// \brief Appends the byte spans of the matches in `text` to `out`, in order, the way Oniguruma's iteration in
  /// `tokenizers` finds them: each search starts where the last match ended, and an empty match right at the end of
  /// the previous match is skipped by moving on one character. The searches are paid from `budget`.
  /// \throws muninn::error naming the pattern when the budget is spent or PCRE2 gives up (JIT stack, heap)
  void find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& out,
                regex_budget& budget) const {
    detail::pcre2_thread_state& st = detail::pcre2_state();
    // Depth and heap only bind the interpreter (no JIT on this CPU); the heap grows with the subject (KiB).
    pcre2_set_heap_limit_8(st.context, std::uint32_t(std::min<std::size_t>(
                                           std::max<std::size_t>(20 * 1024, text.size() / 2), 0xFFFFFFFFu)));
    const auto* subject = reinterpret_cast<PCRE2_SPTR8>(text.empty() ? "" : text.data());
    const std::size_t n = text.size();
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer_8(st.data);
    std::size_t pos = 0, last_end = std::size_t(-1);
    while (pos <= n) {
      const int rc = search(subject, n, pos, st, budget);
      if (rc == PCRE2_ERROR_NOMATCH) return;
      if (rc < 0)
        fail("regex '", pattern_, "' failed on a piece of ", n, " bytes: ", detail::pcre2_message(rc));
      const std::size_t s = ov[0], e = ov[1];
      if (e < s) fail("regex '", pattern_, "' reported a match that ends before it starts (\\K in a lookahead)");
      if (s == e && e == last_end) {
        ++pos;
        while (pos < n && (static_cast<unsigned char>(text[pos]) & 0xC0u) == 0x80u) ++pos;
        continue;
      }
      out.emplace_back(s, e);
      pos = last_end = e;
    }
  }

  /// \brief find_all() with a budget of its own, for one text searched once.
  void find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& out) const {
    regex_budget budget(text.size());
    find_all(text, out, budget);
  }

 private:
  // One search from `pos`: tries with a limit that starts at regex_budget::first_try and grows fourfold while
  // the search reaches it, each try paid from the budget.
  int search(PCRE2_SPTR8 subject, std::size_t n, std::size_t pos, detail::pcre2_thread_state& st,
             regex_budget& budget) const {
    for (std::size_t limit = regex_budget::first_try;; limit *= 4) {
      const std::size_t allowed = std::min({limit, budget.left(), std::size_t(0xFFFFFFFFu)});
      pcre2_set_match_limit_8(st.context, std::uint32_t(allowed));
      pcre2_set_depth_limit_8(st.context, std::uint32_t(allowed));
      const int rc = pcre2_match_8(code_.get(), subject, n, pos, 0, st.data, st.context);
      budget.spend(allowed);
      const bool over = rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT;
      if (!over) return rc;
      if (budget.left() == 0)
        fail("regex '", pattern_, "' ran past the match limit of one encode: ", budget.total(), " steps for ",
             budget.text_bytes(), " bytes of text (", regex_budget::steps_per_byte,
             " per byte and pass); the pattern backtracks too much");
    }
  }

  std::string pattern_;
  std::shared_ptr<pcre2_code_8> code_;
};

}  // namespace muninn::io
