#pragma once
/// \file
/// \brief Byte-level BPE tokenizer that reads Hugging Face `tokenizer.json` files, and the Huginn chat template.
///
/// What is supported (anything else is rejected with a muninn::error naming the file and the field):
/// - model `BPE` with `vocab`, `merges` ("a b" strings or ["a", "b"] pairs), `ignore_merges`, `unk_token`,
///   `fuse_unk`; no dropout, no byte fallback, no subword prefix or suffix;
/// - `added_tokens`, matched verbatim before pre-tokenisation, leftmost-longest, with `lstrip`, `rstrip`,
///   `single_word`, `special` (non-normalised tokens are matched first, then normalised ones, as in `tokenizers`);
/// - normalizer `null` only;
/// - pre_tokenizer `ByteLevel` (`add_prefix_space`, `use_regex`), or a `Sequence` of `Split` (String or Regex
///   pattern; all five behaviours; `invert`), `Digits` (`individual_digits`) and a final `ByteLevel`;
/// - post_processor `null`, `ByteLevel`, `TemplateProcessing` (single sequence), `BertProcessing`,
///   `RobertaProcessing`, `Sequence` of these; decoder `ByteLevel`.
///
/// Split regexes (and ByteLevel's GPT-2 pattern) are Oniguruma patterns in `tokenizers`; here they run on PCRE2
/// after the rewriting described in regex.hpp, compiled once at load: a pattern PCRE2 cannot take is a load error
/// naming the file, the pattern, PCRE2's message and the offset. Matches are iterated as `tokenizers` iterates
/// them, including its treatment of empty matches. Added-token tests (`single_word`, `lstrip`, `rstrip`) and the
/// `Digits` step use the `\p{L}` / `\p{N}` / white-space tables of unicode_classes.hpp.
///
/// Encoding is linear in the input for every option above (BPE on one long pre-token is O(n log n)); a regex that
/// backtracks without end stops with an error naming it: all regex searches of one encode share one budget
/// (regex_budget, a number of PCRE2 match-limit steps per byte of text and regex pass).
/// Token ids may exceed the number of tokens the file lists by at most tokenizer::id_slack, so that the id table
/// stays proportional to the file.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/regex.hpp"
#include "muninn/io/unicode_classes.hpp"
#include "muninn/io/utf8.hpp"

namespace muninn::io {

/// \brief One message of a conversation for tokenizer::apply_chat_template.
struct chat_message {
  std::string role;     ///< "system", "user", "assistant" (rendered as "Huginn"), or any other role name.
  std::string content;  ///< The text; leading and trailing white space is trimmed by the template.
};

/// \brief One entry of tokenizer.json's `added_tokens`.
struct added_token {
  std::int32_t id = -1;      ///< The token id.
  std::string content;       ///< The exact text matched in the input and produced by decode().
  bool special = false;      ///< Skipped by decode() when skip_special_tokens is set.
  bool single_word = false;  ///< Only matches when not preceded or followed by a word character.
  bool lstrip = false;       ///< The match swallows white space to its left.
  bool rstrip = false;       ///< The match swallows white space to its right.
  bool normalized = false;   ///< Matched in a second pass, after the non-normalised tokens.
};

namespace detail {

// Python's str.isspace(), which jinja's `trim` uses: White_Space plus the information separators U+001C..U+001F.
inline bool is_python_space(std::uint32_t cp) { return is_space(cp) || (cp >= 0x1C && cp <= 0x1F); }

// An approximation of the Rust regex crate's \w, which `tokenizers` uses for single_word tokens:
// letters, numbers, '_' and the common combining marks.
inline bool is_word_char(std::uint32_t cp) {
  return is_letter(cp) || is_number(cp) || cp == '_' || (cp >= 0x300 && cp <= 0x36F);
}

/// Decodes the UTF-8 sequence at s[i]: returns its length and sets `cp`, or returns 0 and sets `bad` to the length
/// of the maximal invalid prefix there (>= 1), which is what one U+FFFD replaces in Rust's from_utf8_lossy.
inline std::size_t utf8_decode(std::string_view s, std::size_t i, std::uint32_t& cp, std::size_t& bad) {
  const auto at = [&](std::size_t k) -> unsigned {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0x100u;  // 0x100: past the end
  };
  const unsigned c0 = at(0);
  if (c0 < 0x80) {
    cp = c0;
    return 1;
  }
  std::size_t need = 0;
  unsigned lo = 0x80, hi = 0xBF;
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    need = 1;
    cp = c0 & 0x1Fu;
  } else if (c0 >= 0xE0 && c0 <= 0xEF) {
    need = 2;
    cp = c0 & 0x0Fu;
    if (c0 == 0xE0) lo = 0xA0;  // overlong
    if (c0 == 0xED) hi = 0x9F;  // surrogates
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    need = 3;
    cp = c0 & 0x07u;
    if (c0 == 0xF0) lo = 0x90;  // overlong
    if (c0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    bad = 1;
    return 0;
  }
  for (std::size_t k = 1; k <= need; ++k) {
    const unsigned ck = at(k);
    if (ck < lo || ck > hi) {
      bad = k;
      return 0;
    }
    cp = (cp << 6) | (ck & 0x3Fu);
    lo = 0x80;
    hi = 0xBF;
  }
  return need + 1;
}

/// Rust's String::from_utf8_lossy: each maximal invalid subsequence becomes one U+FFFD.
inline std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    std::uint32_t cp = 0;
    std::size_t bad = 0;
    const std::size_t n = utf8_decode(s, i, cp, bad);
    if (n) {
      out.append(s.data() + i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += bad;
    }
  }
  return out;
}

/// The code points of a UTF-8 string with their byte offsets (offsets has one more entry, the size).
/// Invalid bytes become U+FFFD of length 1 so that every byte belongs to exactly one "character".
struct code_points {
  std::vector<std::uint32_t> cp;
  std::vector<std::size_t> offset;

  explicit code_points(std::string_view s) {
    cp.reserve(s.size());
    offset.reserve(s.size() + 1);
    std::size_t i = 0;
    while (i < s.size()) {
      std::uint32_t c = 0;
      std::size_t bad = 0;
      std::size_t n = utf8_decode(s, i, c, bad);
      if (!n) {
        c = 0xFFFD;
        n = 1;
      }
      cp.push_back(c);
      offset.push_back(i);
      i += n;
    }
    offset.push_back(s.size());
  }
  std::size_t size() const { return cp.size(); }
};

/// The pattern of the ByteLevel pre-tokenizer's `use_regex` (GPT-2's), compiled once per process.
inline const regex& byte_level_regex() {
  static const regex re(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  return re;
}

/// The matches of `re` in `text` as byte spans, paid from `budget`.
inline std::vector<std::pair<std::size_t, std::size_t>> find_all(const regex& re, std::string_view text,
                                                                 regex_budget& budget) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  re.find_all(text, spans, budget);
  return spans;
}
/// The matches of `re` in `text` as byte spans.
inline std::vector<std::pair<std::size_t, std::size_t>> find_all(const regex& re, std::string_view text) {
  regex_budget budget(text.size());
  return find_all(re, text, budget);
}

/// How a Split treats the delimiters it finds (tokenizers' SplitDelimiterBehavior).
enum class split_behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

/// Turns delimiter spans found in `piece` into pieces, the way tokenizers' NormalizedString::split does:
/// `spans` are the pattern's matches (sorted, non-overlapping); with `invert` the gaps are the delimiters.
inline void split_by_spans(std::string_view piece, const std::vector<std::pair<std::size_t, std::size_t>>& spans,
                           split_behavior behavior, bool invert, std::vector<std::string>& out) {
  struct part {
    std::size_t b, e;
    bool delim;
  };
  std::vector<part> parts;
  std::size_t at = 0;
  for (const auto& s : spans) {
    if (s.first > at) parts.push_back({at, s.first, invert});
    parts.push_back({s.first, s.second, !invert});  // an empty match still separates, as in `tokenizers`
    at = s.second;
  }
  if (at < piece.size()) parts.push_back({at, piece.size(), invert});

  std::vector<std::pair<std::size_t, std::size_t>> res;
  bool prev_delim = false;
  switch (behavior) {
    case split_behavior::removed:
      for (const part& p : parts)
        if (!p.delim) res.emplace_back(p.b, p.e);
      break;
    case split_behavior::isolated:
      for (const part& p : parts) res.emplace_back(p.b, p.e);
      break;
    case split_behavior::merged_with_previous:
      for (const part& p : parts) {
        if (p.delim && !prev_delim && !res.empty()) res.back().second = p.e;
        else res.emplace_back(p.b, p.e);
        prev_delim = p.delim;
      }
      break;
    case split_behavior::merged_with_next:
      for (std::size_t k = parts.size(); k-- > 0;) {
        const part& p = parts[k];
        if (p.delim && !prev_delim && !res.empty()) res.back().first = p.b;
        else res.emplace_back(p.b, p.e);
        prev_delim = p.delim;
      }
      std::reverse(res.begin(), res.end());
      break;
    case split_behavior::contiguous:
      for (std::size_t k = 0; k < parts.size(); ++k) {
        const part& p = parts[k];
        if (k > 0 && p.delim == prev_delim) res.back().second = p.e;
        else res.emplace_back(p.b, p.e);
        prev_delim = p.delim;
      }
      break;
  }
  for (const auto& r : res)
    if (r.second > r.first) out.emplace_back(piece.substr(r.first, r.second - r.first));
}

/// One step of the pre-tokenizer chain.
struct pre_step {
  enum class kind { split_regex, split_string, digits, byte_level } type = kind::byte_level;
  std::shared_ptr<const regex> re;                    ///< split_regex, compiled once at load
  std::string literal;                                ///< split_string
  split_behavior behavior = split_behavior::isolated;  ///< split_*
  bool invert = false;                                ///< split_*
  bool individual_digits = false;                     ///< digits
  bool add_prefix_space = false;                      ///< byte_level
  bool use_regex = true;                              ///< byte_level
};

/// Whether a step runs a regex over the text (what the encode's regex budget is sized by).
inline bool runs_regex(const pre_step& st) {
  return st.type == pre_step::kind::split_regex || (st.type == pre_step::kind::byte_level && st.use_regex);
}

/// Applies one pre-tokenizer step to every piece; its regex searches are paid from `budget`.
inline std::vector<std::string> apply_pre_step(const pre_step& st, const std::vector<std::string>& pieces,
                                               regex_budget& budget) {
  std::vector<std::string> out;
  for (const std::string& piece : pieces) {
    switch (st.type) {
      case pre_step::kind::split_regex:
        split_by_spans(piece, find_all(*st.re, piece, budget), st.behavior, st.invert, out);
        break;
      case pre_step::kind::split_string: {
        std::vector<std::pair<std::size_t, std::size_t>> spans;
        for (std::size_t at = piece.find(st.literal); at != std::string::npos;
             at = piece.find(st.literal, at + st.literal.size()))
          spans.emplace_back(at, at + st.literal.size());
        split_by_spans(piece, spans, st.behavior, st.invert, out);
        break;
      }
      case pre_step::kind::digits: {
        const code_points cps(piece);
        std::vector<std::pair<std::size_t, std::size_t>> spans;
        for (std::size_t k = 0; k < cps.size(); ++k)
          if (is_number(cps.cp[k])) spans.emplace_back(cps.offset[k], cps.offset[k + 1]);
        split_by_spans(piece, spans,
                       st.individual_digits ? split_behavior::isolated : split_behavior::contiguous, false, out);
        break;
      }
      case pre_step::kind::byte_level: {
        // tokenizers adds the prefix space to every piece the earlier steps produced, not only the first.
        std::string p = (st.add_prefix_space && (piece.empty() || piece[0] != ' ')) ? " " + piece : piece;
        if (st.use_regex)
          split_by_spans(p, find_all(byte_level_regex(), p, budget), split_behavior::isolated, false, out);
        else out.push_back(std::move(p));
        break;
      }
    }
  }
  return out;
}
/// Applies one pre-tokenizer step to every piece, with a regex budget for those pieces alone.
inline std::vector<std::string> apply_pre_step(const pre_step& st, const std::vector<std::string>& pieces) {
  std::size_t bytes = 0;
  for (const std::string& p : pieces) bytes += p.size();
  regex_budget budget(bytes);
  return apply_pre_step(st, pieces, budget);
}

/// GPT-2's table from bytes to printable code points: printable Latin-1 bytes map to themselves, the other 68
/// bytes to U+0100 upwards, in byte order.
inline std::uint32_t byte_to_code_point(unsigned b) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    std::uint32_t next = 256;
    for (unsigned x = 0; x < 256; ++x) {
      const bool printable = (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE;
      t[x] = printable ? x : next++;
    }
    return t;
  }();
  return table[b & 0xFFu];
}

/// The inverse of byte_to_code_point: the byte, or -1 for a code point outside the table's image.
inline int code_point_to_byte(std::uint32_t cp) {
  static const std::vector<int> inverse = [] {
    std::vector<int> inv(324, -1);
    for (unsigned b = 0; b < 256; ++b) inv[byte_to_code_point(b)] = int(b);
    return inv;
  }();
  return cp < inverse.size() ? inverse[cp] : -1;
}

/// Maps raw bytes to the byte-level string the vocabulary is written in.
inline std::string bytes_to_token_string(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) append_utf8(out, byte_to_code_point(b));
  return out;
}

/// What the ByteLevel decoder makes of one token string: its bytes when every character is in the byte table,
/// otherwise the string itself (tokenizers does the same for e.g. added tokens containing a plain space).
inline std::string token_string_to_bytes(std::string_view tok) {
  std::string out;
  std::size_t i = 0;
  while (i < tok.size()) {
    std::uint32_t cp = 0;
    std::size_t bad = 0;
    const std::size_t n = utf8_decode(tok, i, cp, bad);
    const int b = n ? code_point_to_byte(cp) : -1;
    if (b < 0) return std::string(tok);
    out += char(b);
    i += n;
  }
  return out;
}

/// Trims Python white space (what jinja's `trim` filter removes) from both ends of a UTF-8 string; invalid bytes
/// are not white space. Decodes only the characters it removes and the two it stops at.
inline std::string_view python_strip(std::string_view s) {
  std::size_t b = 0, e = s.size();
  std::uint32_t cp = 0;
  std::size_t bad = 0;
  while (b < e) {
    const std::size_t n = utf8_decode(s, b, cp, bad);
    if (!n || !is_python_space(cp)) break;
    b += n;
  }
  while (e > b) {
    std::size_t k = e - 1;  // the lead byte of the character that ends at e, if it is one
    while (k > b && e - k < 4 && (static_cast<unsigned char>(s[k]) & 0xC0u) == 0x80u) --k;
    if (utf8_decode(s, k, cp, bad) != e - k || !is_python_space(cp)) break;
    e = k;
  }
  return s.substr(b, e - b);
}

}  // namespace detail

/// \brief A byte-level BPE tokenizer loaded from a Hugging Face `tokenizer.json` (see the file comment for what
/// it supports), with the Huginn chat template.
///
/// encode() and decode() are const and safe to call from several threads; the BPE cache they share is locked.
class tokenizer {
 public:
  /// \brief Reads and checks a tokenizer.json file.
  /// \throws muninn::error naming the file for a missing file, bad JSON or an unsupported component
  static tokenizer from_file(const std::string& path) {
    const json root = read_json_file(path);
    return from_json(root, path);
  }

  /// \brief Builds a tokenizer from tokenizer.json text; `source_name` is named in error messages.
  static tokenizer from_string(std::string_view text, const std::string& source_name = "<tokenizer.json>") {
    return from_json(parse_json(text, source_name), source_name);
  }

  /// \brief Builds a tokenizer from a parsed tokenizer.json document; `source_name` is named in error messages.
  static tokenizer from_json(const json& root, const std::string& source_name) {
    tokenizer t;
    try {
      t.load(root);
    } catch (const error& e) {
      fail("tokenizer '", source_name, "': ", e.what());
    }
    return t;
  }

  /// \brief Encodes UTF-8 text to token ids.
  /// \param text the input; added tokens such as `<|end_turn|>` written in it become their ids
  /// \param add_special_tokens apply the file's post-processor (Huginn's appends `<|end_text|>`); off by default
  ///        because prompts must not end in EOS
  /// \throws muninn::error naming the pattern when the regex searches of this text spend their budget (regex_budget)
  std::vector<std::int32_t> encode(std::string_view text, bool add_special_tokens = false) const {
    std::vector<std::int32_t> ids;
    regex_budget budget = regex_budget_for(text);
    for (const segment& seg : split_added(text)) {
      if (seg.id >= 0) {
        ids.push_back(seg.id);
        continue;
      }
      for (const std::string& piece : pre_tokenize(text.substr(seg.begin, seg.end - seg.begin), budget))
        bpe(piece, ids);
    }
    if (add_special_tokens) {
      std::vector<std::int32_t> out;
      for (const template_item& it : template_) {
        if (it.is_sequence) out.insert(out.end(), ids.begin(), ids.end());
        else out.insert(out.end(), it.ids.begin(), it.ids.end());
      }
      if (!template_.empty()) return out;
    }
    return ids;
  }

  /// \brief Decodes ids to UTF-8 text; invalid UTF-8 (a multi-byte character cut between ids) becomes U+FFFD.
  /// \param ids the tokens; ids that are not in the vocabulary are skipped, as `tokenizers` does
  /// \param n number of ids
  /// \param skip_special_tokens leave out added tokens marked special
  std::string decode(const std::int32_t* ids, std::size_t n, bool skip_special_tokens = false) const {
    std::string bytes;
    for (std::size_t k = 0; k < n; ++k) {
      const std::int32_t id = ids[k];
      if (id < 0 || std::size_t(id) >= tokens_.size() || !tokens_[id].assigned) continue;
      if (skip_special_tokens && tokens_[id].special) continue;
      bytes += tokens_[id].bytes;
    }
    return detail::utf8_lossy(bytes);
  }

  /// \brief Decodes a vector of ids; see the pointer overload.
  std::string decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens = false) const {
    return decode(ids.data(), ids.size(), skip_special_tokens);
  }

  /// \brief The raw bytes a token stands for (may be part of a UTF-8 character); for streaming output.
  /// \throws muninn::error when the id is not in the vocabulary
  const std::string& token_bytes(std::int32_t id) const { return entry(id).bytes; }

  /// \brief The id of a vocabulary string (byte-level form, e.g. "Ġthe") or of an added token's content.
  std::optional<std::int32_t> token_to_id(std::string_view token) const {
    auto it = added_by_content_.find(std::string(token));
    if (it != added_by_content_.end()) return it->second;
    auto jt = vocab_.find(std::string(token));
    if (jt != vocab_.end()) return jt->second;
    return std::nullopt;
  }

  /// \brief The vocabulary string of an id (added tokens give their content).
  /// \throws muninn::error when the id is not in the vocabulary
  const std::string& id_to_token(std::int32_t id) const { return entry(id).text; }

  /// \brief One past the largest id of the vocabulary and the added tokens (the embedding rows needed).
  std::int64_t vocab_size() const { return std::int64_t(tokens_.size()); }

  /// \brief True when `id` is an added token marked special.
  bool is_special(std::int32_t id) const {
    return id >= 0 && std::size_t(id) < tokens_.size() && tokens_[id].assigned && tokens_[id].special;
  }

  /// \brief The added tokens, in file order.
  const std::vector<added_token>& added_tokens() const { return added_; }

  /// \brief The pre-tokenizer's pieces of `text` (no added-token matching), as raw bytes; for tests and debugging.
  std::vector<std::string> pre_tokenize(std::string_view text) const {
    regex_budget budget = regex_budget_for(text);
    return pre_tokenize(text, budget);
  }

  /// \brief Renders a conversation with the Huginn chat template (as in the checkpoint's tokenizer_config.json).
  ///
  /// `<|begin_text|>` before the first message only; each message is
  /// `<|begin_header|>{role}<|end_header|>\n\n{content, trimmed}<|end_turn|>`, where "assistant" and "Huginn"
  /// are written as "Huginn"; then `<|begin_header|>Huginn<|end_header|>\n\n` with `add_generation_prompt`,
  /// else `<|end_text|>`.
  static std::string apply_chat_template(const std::vector<chat_message>& messages, bool add_generation_prompt) {
    std::string out;
    for (std::size_t k = 0; k < messages.size(); ++k) {
      const chat_message& m = messages[k];
      if (k == 0) out += "<|begin_text|>";
      out += "<|begin_header|>";
      out += (m.role == "assistant" || m.role == "Huginn") ? std::string("Huginn") : m.role;
      out += "<|end_header|>\n\n";
      out += detail::python_strip(m.content);
      out += "<|end_turn|>";
    }
    out += add_generation_prompt ? "<|begin_header|>Huginn<|end_header|>\n\n" : "<|end_text|>";
    return out;
  }

  /// \brief Token ids of apply_chat_template(messages, add_generation_prompt), without post-processing.
  std::vector<std::int32_t> encode_chat(const std::vector<chat_message>& messages, bool add_generation_prompt) const {
    return encode(apply_chat_template(messages, add_generation_prompt), false);
  }

 private:
  struct token_entry {
    std::string text;   // vocabulary string or added-token content
    std::string bytes;  // what decode() emits
    bool assigned = false;
    bool special = false;
  };
  struct segment {
    std::size_t begin, end;
    std::int32_t id;  // added token, or -1 for text to pre-tokenize
  };
  struct merge_info {
    std::int32_t rank;
    std::int32_t id;
  };
  struct template_item {
    bool is_sequence = false;
    std::vector<std::int32_t> ids;
  };
  struct bpe_cache {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<std::int32_t>> map;
  };

  static constexpr std::size_t cache_capacity = 1 << 16;

 public:
  /// \brief How far token ids may go beyond the number of tokens the file lists (vocabulary plus added tokens):
  /// room for gaps, while a file naming id 1 000 000 000 is refused instead of allocating an id table that long.
  static constexpr std::int64_t id_slack = 1 << 16;

 private:
  static constexpr std::size_t cache_max_piece = 256;

  tokenizer() : cache_(std::make_shared<bpe_cache>()) {}

  // The regex budget of one text: every regex step searches all of it (a prefix space adds a byte per piece,
  // which the budget's floor covers for short texts and the per-byte allowance for long ones).
  regex_budget regex_budget_for(std::string_view text) const {
    std::size_t passes = 0;
    for (const detail::pre_step& st : steps_) passes += detail::runs_regex(st);
    return regex_budget(text.size(), passes);
  }

  std::vector<std::string> pre_tokenize(std::string_view text, regex_budget& budget) const {
    if (text.empty()) return {};  // tokenizers has no piece to add a prefix space to
    std::vector<std::string> pieces{std::string(text)};
    for (const detail::pre_step& st : steps_) pieces = detail::apply_pre_step(st, pieces, budget);
    return pieces;
  }

  const token_entry& entry(std::int32_t id) const {
    MUNINN_CHECK(id >= 0 && std::size_t(id) < tokens_.size() && tokens_[id].assigned, "token id ", id,
                 " is not in the vocabulary (size ", tokens_.size(), ")");
    return tokens_[id];
  }

  static bool flag(const json& obj, std::string_view key, bool dflt) {
    const json* v = obj.find(key);
    return (v && !v->is_null()) ? v->as_bool() : dflt;
  }

  static std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
    return (std::uint64_t(std::uint32_t(a)) << 32) | std::uint32_t(b);
  }

  void set_token(std::int32_t id, const std::string& text, std::string bytes, bool special) {
    MUNINN_CHECK(id >= 0 && id < (1 << 30), "token id ", id, " of '", text, "' is out of range");
    // The id table is as long as the largest id: bounding ids by what the file lists keeps a small file from
    // asking for gigabytes.
    MUNINN_CHECK(std::int64_t(id) < id_limit_, "token id ", id, " of '", text, "' is out of range: the file lists ",
                 listed_, " tokens, and ids must stay below ", id_limit_, " (that count plus ", id_slack, ")");
    if (std::size_t(id) >= tokens_.size()) tokens_.resize(std::size_t(id) + 1);
    token_entry& e = tokens_[id];
    e.text = text;
    e.bytes = std::move(bytes);
    e.assigned = true;
    e.special = special;
  }

  void load(const json& root) {
    MUNINN_CHECK(root.is_object(), "the document is not a JSON object");
    const json& model = root.at("model");
    const json* vocab = model.is_object() ? model.find("vocab") : nullptr;
    const json* added = root.find("added_tokens");
    listed_ = (vocab && vocab->is_object() ? std::int64_t(vocab->size()) : 0) +
              (added && added->is_array() ? std::int64_t(added->size()) : 0);
    id_limit_ = listed_ + id_slack;
    load_model(root.at("model"));
    load_added(root);
    load_normalizer(root);
    load_pre_tokenizer(root);
    load_decoder(root);
    if (const json* pp = root.find("post_processor")) load_post_processor(*pp);
  }

  void load_model(const json& model) {
    if (const json* type = model.find("type"))
      MUNINN_CHECK(type->as_string() == "BPE", "unsupported model type '", type->as_string(),
                   "' (only byte-level BPE is supported)");
    if (const json* d = model.find("dropout"))
      MUNINN_CHECK(d->is_null() || d->as_double() == 0.0, "BPE dropout is not supported");
    MUNINN_CHECK(!flag(model, "byte_fallback", false), "BPE byte_fallback is not supported (not a byte-level BPE)");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      const json* v = model.find(key);
      MUNINN_CHECK(!v || v->is_null() || v->as_string().empty(), "BPE ", key, " is not supported");
    }
    ignore_merges_ = flag(model, "ignore_merges", false);
    fuse_unk_ = flag(model, "fuse_unk", false);

    const json& vocab = model.at("vocab");
    vocab_.reserve(vocab.size());
    for (const auto& kv : vocab.as_object()) {
      const std::int64_t id = kv.second.as_int();
      MUNINN_CHECK(id >= 0 && id < (1 << 30), "vocab id ", id, " of '", kv.first, "' is out of range");
      vocab_.emplace(kv.first, std::int32_t(id));
      set_token(std::int32_t(id), kv.first, detail::token_string_to_bytes(kv.first), false);
    }
    for (unsigned b = 0; b < 256; ++b) {
      std::string s;
      append_utf8(s, detail::byte_to_code_point(b));
      auto it = vocab_.find(s);
      byte_id_[b] = it == vocab_.end() ? -1 : it->second;
    }
    if (const json* unk = model.find("unk_token"); unk && !unk->is_null()) {
      auto it = vocab_.find(unk->as_string());
      MUNINN_CHECK(it != vocab_.end(), "unk_token '", unk->as_string(), "' is not in the vocabulary");
      unk_id_ = it->second;
    }

    const json& merges = model.at("merges");
    merges_.reserve(merges.size());
    std::int32_t rank = 0;
    for (const json& m : merges.as_array()) {
      std::string a, b;
      if (m.is_string()) {
        const std::string& s = m.as_string();
        const std::size_t sp = s.find(' ');
        MUNINN_CHECK(sp != std::string::npos && s.find(' ', sp + 1) == std::string::npos, "merge ", rank, " '", s,
                     "' is not two tokens separated by one space");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else {
        MUNINN_CHECK(m.is_array() && m.size() == 2, "merge ", rank, " is neither \"a b\" nor [\"a\", \"b\"]");
        a = m[0].as_string();
        b = m[1].as_string();
      }
      const auto ia = vocab_.find(a), ib = vocab_.find(b), iab = vocab_.find(a + b);
      MUNINN_CHECK(ia != vocab_.end() && ib != vocab_.end() && iab != vocab_.end(), "merge ", rank, " ('", a,
                   "', '", b, "') uses a token that is not in the vocabulary");
      merges_.emplace(pair_key(ia->second, ib->second), merge_info{rank, iab->second});
      ++rank;
    }
  }

  void load_added(const json& root) {
    const json* added = root.find("added_tokens");
    if (!added || added->is_null()) return;
    for (const json& t : added->as_array()) {
      added_token a;
      const std::int64_t id = t.at("id").as_int();
      MUNINN_CHECK(id >= 0 && id < (1 << 30), "added token id ", id, " is out of range");
      a.id = std::int32_t(id);
      a.content = t.at("content").as_string();
      MUNINN_CHECK(!a.content.empty(), "added token ", id, " has empty content");
      a.special = flag(t, "special", false);
      a.single_word = flag(t, "single_word", false);
      a.lstrip = flag(t, "lstrip", false);
      a.rstrip = flag(t, "rstrip", false);
      a.normalized = flag(t, "normalized", !a.special);
      set_token(a.id, a.content, detail::token_string_to_bytes(a.content), a.special);
      added_by_content_[a.content] = a.id;
      added_.push_back(a);
    }
    // Per pass, candidates bucketed by first byte and sorted longest first give leftmost-longest matching.
    for (std::size_t k = 0; k < added_.size(); ++k) {
      const added_token& a = added_[k];
      matchers_[a.normalized ? 1 : 0][static_cast<unsigned char>(a.content[0])].push_back(k);
    }
    for (auto& pass : matchers_)
      for (auto& bucket : pass)
        std::stable_sort(bucket.begin(), bucket.end(), [&](std::size_t x, std::size_t y) {
          return added_[x].content.size() > added_[y].content.size();
        });
  }

  static void load_normalizer(const json& root) {
    const json* n = root.find("normalizer");
    if (!n || n->is_null()) return;
    const std::string type = n->is_object() && n->contains("type") ? n->at("type").as_string() : std::string("?");
    fail("normalizer '", type, "' is not supported (only null)");
  }

  static detail::split_behavior parse_behavior(const std::string& s) {
    if (s == "Removed") return detail::split_behavior::removed;
    if (s == "Isolated") return detail::split_behavior::isolated;
    if (s == "MergedWithPrevious") return detail::split_behavior::merged_with_previous;
    if (s == "MergedWithNext") return detail::split_behavior::merged_with_next;
    if (s == "Contiguous") return detail::split_behavior::contiguous;
    fail("unsupported Split behavior '", s, "'");
  }

  void add_pre_step(const json& p) {
    const std::string& type = p.at("type").as_string();
    detail::pre_step st;
    if (type == "Sequence") {
      for (const json& q : p.at("pretokenizers").as_array()) add_pre_step(q);
      return;
    }
    MUNINN_CHECK(steps_.empty() || steps_.back().type != detail::pre_step::kind::byte_level,
                 "pre_tokenizer '", type, "' after ByteLevel is not supported (ByteLevel must come last)");
    if (type == "ByteLevel") {
      st.type = detail::pre_step::kind::byte_level;
      st.add_prefix_space = flag(p, "add_prefix_space", false);
      st.use_regex = flag(p, "use_regex", true);
    } else if (type == "Split") {
      const json& pat = p.at("pattern");
      if (const json* re = pat.find("Regex")) {
        st.type = detail::pre_step::kind::split_regex;
        st.re = std::make_shared<const regex>(re->as_string());
      } else {
        st.type = detail::pre_step::kind::split_string;
        st.literal = pat.at("String").as_string();
        MUNINN_CHECK(!st.literal.empty(), "Split with an empty String pattern");
      }
      st.behavior = parse_behavior(p.at("behavior").as_string());
      st.invert = flag(p, "invert", false);
    } else if (type == "Digits") {
      st.type = detail::pre_step::kind::digits;
      st.individual_digits = flag(p, "individual_digits", false);
    } else {
      fail("unsupported pre_tokenizer type '", type, "'");
    }
    steps_.push_back(st);
  }

  void load_pre_tokenizer(const json& root) {
    const json* p = root.find("pre_tokenizer");
    MUNINN_CHECK(p && !p->is_null(), "pre_tokenizer is null (only byte-level BPE is supported)");
    add_pre_step(*p);
    MUNINN_CHECK(!steps_.empty() && steps_.back().type == detail::pre_step::kind::byte_level,
                 "pre_tokenizer has no ByteLevel step (only byte-level BPE is supported)");
  }

  static void load_decoder(const json& root) {
    const json* d = root.find("decoder");
    MUNINN_CHECK(d && !d->is_null(), "decoder is null (expected ByteLevel)");
    const std::string& type = d->at("type").as_string();
    MUNINN_CHECK(type == "ByteLevel", "unsupported decoder type '", type, "' (expected ByteLevel)");
  }

  std::int32_t special_id(const std::string& name) const {
    const auto id = token_to_id(name);
    MUNINN_CHECK(id.has_value(), "post_processor token '", name, "' is not in the vocabulary");
    return *id;
  }

  void load_post_processor(const json& p) {
    if (p.is_null()) return;
    const std::string& type = p.at("type").as_string();
    if (type == "Sequence") {
      for (const json& q : p.at("processors").as_array()) load_post_processor(q);
    } else if (type == "ByteLevel") {
      // Only adjusts offsets; ids are unchanged.
    } else if (type == "TemplateProcessing") {
      MUNINN_CHECK(template_.empty(), "more than one template post-processor");
      const json& specials = p.at("special_tokens");
      for (const json& item : p.at("single").as_array()) {
        template_item it;
        if (const json* seq = item.find("Sequence")) {
          MUNINN_CHECK(seq->at("id").as_string() == "A", "template sequence '", seq->at("id").as_string(),
                       "' in 'single' (expected A)");
          it.is_sequence = true;
        } else {
          const std::string& name = item.at("SpecialToken").at("id").as_string();
          const json* sp = specials.find(name);
          MUNINN_CHECK(sp, "template special token '", name, "' is missing from special_tokens");
          for (const json& id : sp->at("ids").as_array()) it.ids.push_back(std::int32_t(id.as_int()));
        }
        template_.push_back(std::move(it));
      }
    } else if (type == "BertProcessing" || type == "RobertaProcessing") {
      MUNINN_CHECK(template_.empty(), "more than one template post-processor");
      const json& cls = p.at("cls");
      const json& sep = p.at("sep");
      template_.push_back({false, {std::int32_t(cls[1].as_int())}});
      template_.push_back({true, {}});
      template_.push_back({false, {std::int32_t(sep[1].as_int())}});
    } else {
      fail("unsupported post_processor type '", type, "'");
    }
  }

  // Splits the input on added tokens: non-normalised tokens first, then normalised ones in the remaining text.
  std::vector<segment> split_added(std::string_view text) const {
    std::vector<segment> segs{{0, text.size(), -1}};
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<segment> next;
      for (const segment& s : segs) {
        if (s.id >= 0) next.push_back(s);
        else match_added(text, s.begin, s.end, pass, next);
      }
      segs.swap(next);
    }
    return segs;
  }

  void match_added(std::string_view text, std::size_t begin, std::size_t end, int pass,
                   std::vector<segment>& out) const {
    const auto& buckets = matchers_[pass];
    std::size_t start_offset = begin;  // end of what has been emitted
    std::size_t p = begin;
    const std::string_view s = text.substr(0, end);
    while (p < end) {
      const auto& bucket = buckets[static_cast<unsigned char>(s[p])];
      const added_token* hit = nullptr;
      for (std::size_t k : bucket) {
        const std::string& c = added_[k].content;
        if (c.size() <= end - p && s.compare(p, c.size(), c) == 0) {
          hit = &added_[k];
          break;
        }
      }
      if (!hit) {
        ++p;
        continue;
      }
      std::size_t mb = p, me = p + hit->content.size();
      p = me;  // a discarded match still consumes its text, as in aho-corasick's non-overlapping iteration
      if (hit->single_word) {
        const bool left_ok = mb == begin || !detail::is_word_char(code_point_before(s, begin, mb).first);
        const bool right_ok = me == end || !starts_with_word(s.substr(me, end - me));
        if (!left_ok || !right_ok) continue;
      }
      // Only back to the end of what was emitted: looking further would make many lstrip tokens quadratic.
      if (hit->lstrip) mb = space_start(s, start_offset, mb);
      if (hit->rstrip) {
        me = space_end(s, me, end);
        p = me;
      }
      if (mb > start_offset) out.push_back({start_offset, mb, -1});
      out.push_back({mb, me, hit->id});
      start_offset = me;
    }
    if (start_offset < end) out.push_back({start_offset, end, -1});
  }

  // The code point that ends at `at` (not starting before `begin`) and its length; U+FFFD for invalid UTF-8.
  static std::pair<std::uint32_t, std::size_t> code_point_before(std::string_view s, std::size_t begin,
                                                                 std::size_t at) {
    std::size_t k = at - 1;
    while (k > begin && at - k < 4 && (static_cast<unsigned char>(s[k]) & 0xC0u) == 0x80u) --k;
    std::uint32_t cp = 0;
    std::size_t bad = 0;
    if (detail::utf8_decode(s, k, cp, bad) == at - k) return {cp, at - k};
    return {0xFFFDu, 1};
  }
  static bool starts_with_word(std::string_view s) {
    if (s.empty()) return false;
    std::uint32_t cp = 0;
    std::size_t bad = 0;
    return detail::utf8_decode(s, 0, cp, bad) && detail::is_word_char(cp);
  }
  // Start of the white-space run that ends at `at` (not before `begin`).
  static std::size_t space_start(std::string_view s, std::size_t begin, std::size_t at) {
    while (at > begin) {
      const auto [cp, len] = code_point_before(s, begin, at);
      if (!detail::is_space(cp)) break;
      at -= len;
    }
    return at;
  }
  // End of the white-space run that starts at `at` (not after `end`).
  static std::size_t space_end(std::string_view s, std::size_t at, std::size_t end) {
    while (at < end) {
      std::uint32_t cp = 0;
      std::size_t bad = 0;
      const std::size_t n = detail::utf8_decode(s, at, cp, bad);
      if (!n || !detail::is_space(cp)) break;
      at += n;
    }
    return at;
  }

  // Byte-pair encodes one pre-tokenized piece (raw bytes) and appends its ids.
  void bpe(const std::string& piece, std::vector<std::int32_t>& out) const {
    if (piece.empty()) return;
    if (ignore_merges_) {
      auto it = vocab_.find(detail::bytes_to_token_string(piece));
      if (it != vocab_.end()) {
        out.push_back(it->second);
        return;
      }
    }
    const bool cacheable = piece.size() <= cache_max_piece;
    if (cacheable) {
      std::lock_guard<std::mutex> lock(cache_->mu);
      auto it = cache_->map.find(piece);
      if (it != cache_->map.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    std::vector<std::int32_t> ids = merge_word(piece);
    if (cacheable) {
      std::lock_guard<std::mutex> lock(cache_->mu);
      if (cache_->map.size() >= cache_capacity) cache_->map.clear();
      cache_->map.emplace(piece, ids);
    }
    out.insert(out.end(), ids.begin(), ids.end());
  }

  // tokenizers' Word::merge_all: repeatedly merge the adjacent pair with the lowest rank, leftmost first.
  std::vector<std::int32_t> merge_word(const std::string& piece) const {
    struct symbol {
      std::int32_t id;
      std::int32_t prev, next;
      bool alive;
    };
    std::vector<symbol> sym;
    sym.reserve(piece.size());
    for (unsigned char b : piece) {
      std::int32_t id = byte_id_[b];
      if (id < 0) {
        // tokenizers drops a character missing from the vocabulary unless there is an unk token.
        if (unk_id_ < 0) continue;
        if (fuse_unk_ && !sym.empty() && sym.back().id == unk_id_) continue;
        id = unk_id_;
      }
      const std::int32_t k = std::int32_t(sym.size());
      sym.push_back({id, k - 1, k + 1, true});
    }
    if (sym.empty()) return {};
    sym.back().next = -1;

    struct candidate {
      std::int32_t rank, pos, id;
      bool operator>(const candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<candidate, std::vector<candidate>, std::greater<candidate>> queue;
    const auto push = [&](std::int32_t pos) {
      const std::int32_t nx = sym[pos].next;
      if (nx < 0) return;
      auto it = merges_.find(pair_key(sym[pos].id, sym[nx].id));
      if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.id});
    };
    for (std::int32_t k = 0; k + 1 < std::int32_t(sym.size()); ++k) push(k);
    while (!queue.empty()) {
      const candidate top = queue.top();
      queue.pop();
      symbol& left = sym[top.pos];
      if (!left.alive || left.next < 0) continue;
      symbol& right = sym[left.next];
      auto it = merges_.find(pair_key(left.id, right.id));
      if (it == merges_.end() || it->second.id != top.id) continue;  // stale entry
      left.id = top.id;
      right.alive = false;
      left.next = right.next;
      if (left.next >= 0) sym[left.next].prev = top.pos;
      if (left.prev >= 0) push(left.prev);
      push(top.pos);
    }
    std::vector<std::int32_t> ids;
    for (std::int32_t k = 0; k >= 0; k = sym[k].next) ids.push_back(sym[k].id);
    return ids;
  }

  std::unordered_map<std::string, std::int32_t> vocab_;
  std::unordered_map<std::string, std::int32_t> added_by_content_;
  std::unordered_map<std::uint64_t, merge_info> merges_;
  std::vector<token_entry> tokens_;
  std::vector<added_token> added_;
  std::vector<std::size_t> matchers_[2][256];
  std::vector<detail::pre_step> steps_;
  std::vector<template_item> template_;
  std::int32_t byte_id_[256] = {};
  std::int32_t unk_id_ = -1;
  std::int64_t listed_ = 0;    // tokens the file lists (vocabulary and added tokens)
  std::int64_t id_limit_ = 0;  // ids must stay below this
  bool ignore_merges_ = false;
  bool fuse_unk_ = false;
  std::shared_ptr<bpe_cache> cache_;
};

}  // namespace muninn::io
