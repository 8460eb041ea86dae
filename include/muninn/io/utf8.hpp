#pragma once
/// \file
/// \brief UTF-8 encoding of one Unicode code point (shared by the JSON reader and the tokenizer).

#include <cstdint>
#include <string>

namespace muninn::io {

/// \brief Appends the UTF-8 encoding of code point `cp` (1 to 4 bytes) to `out`.
///
/// `cp` must be a Unicode scalar value (at most U+10FFFF, not a surrogate): it is not checked, the
/// callers have validated it already (JSON unicode escapes, the byte-level BPE alphabet).
inline void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

}  // namespace muninn::io
