#pragma once
/// \file
/// \brief NumPy `.npy` files (format 1.0 when writing; 1.0-3.0 when reading) for comparing arrays with Python.

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/checked.hpp"
#include "muninn/io/mapped_file.hpp"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "muninn/io/npy.hpp writes and reads little-endian data directly and needs a little-endian host"
#endif

namespace muninn::io {

/// \brief An array read from a .npy file: C-order values and their shape.
template <class T>
struct npy_array {
  std::vector<std::int64_t> shape;  ///< extents (empty for a 0-d array)
  std::vector<T> data;              ///< row-major values

  /// \brief Number of elements (1 for a 0-d array); a zero extent anywhere makes it 0.
  std::int64_t numel() const { return checked::numel(shape); }
};

namespace detail {

// The exact header numpy >= 1.24 writes: the dict repr, spare spaces that let the first axis grow
// in place (numpy's GROWTH_AXIS_MAX_DIGITS = 21), space padding to a 64-byte boundary, '\n'.
inline std::string npy_header(const char* descr, const std::vector<std::int64_t>& shape, const std::string& path) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) fail(path, ": negative extent ", shape[i], " in .npy shape");
    dict += (i ? ", " : "") + std::to_string(shape[i]);
  }
  dict += shape.size() == 1 ? ",), }" : "), }";
  if (!shape.empty()) dict.append(21 - std::min<std::size_t>(21, std::to_string(shape[0]).size()), ' ');
  constexpr std::size_t prefix = 10;  // magic (6) + version (2) + uint16 length (2)
  const std::size_t hlen = dict.size() + 1;
  const std::size_t pad = 64 - (prefix + hlen) % 64;  // 1..64, as numpy computes it
  const std::size_t total = hlen + pad;
  if (total > 0xffff) fail(path, ": .npy header of ", total, " bytes does not fit format 1.0");
  std::string h("\x93NUMPY\x01\x00", 8);
  h += char(total & 0xff);
  h += char(total >> 8);
  h += dict;
  h.append(pad, ' ');
  h += '\n';
  return h;
}

template <class T>
void write_npy_impl(const std::string& path, const char* descr, const T* data, const std::vector<std::int64_t>& shape) {
  const std::string header = npy_header(descr, shape, path);
  std::size_t n = 1;
  for (auto d : shape) n *= std::size_t(d);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail("cannot create '", path, "': ", std::strerror(errno));
  out.write(header.data(), std::streamsize(header.size()));
  out.write(reinterpret_cast<const char*>(data), std::streamsize(n * sizeof(T)));
  out.close();
  if (!out) fail("error writing '", path, "'");
}

// Reads the Python-literal header dict numpy writes: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct npy_header_info {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  std::size_t data_offset = 0;
};

class npy_dict_parser {
 public:
  npy_dict_parser(std::string_view s, const std::string& path) : s_(s), path_(path) {}

  void parse(npy_header_info& info) {
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    for (;;) {
      ws();
      if (peek() == '}') break;
      const std::string key = str();
      expect(':');
      ws();
      if (key == "descr") {
        info.descr = str();
        has_descr = true;
      } else if (key == "fortran_order") {
        info.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        info.shape = tuple();
        has_shape = true;
      } else {
        bad("unexpected key '" + key + "'");
      }
      ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      ws();
      if (peek() != '}') bad("expected ',' or '}'");
    }
    if (!has_descr || !has_order || !has_shape) bad("needs the keys 'descr', 'fortran_order' and 'shape'");
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(path_, ": malformed .npy header (", what, " at byte ", pos_, " of \"", s_, "\")");
  }
  void ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void expect(char c) {
    ws();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string str() {
    ws();
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    const std::size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    bad("expected True or False");
  }
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> out;
    expect('(');
    for (;;) {
      ws();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') bad("expected a non-negative integer in the shape");
      std::int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (INT64_MAX - 9) / 10) bad("shape extent too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      out.push_back(v);
      ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') bad("expected ',' or ')' in the shape");
    }
    ++pos_;
    return out;
  }

  std::string_view s_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

inline npy_header_info parse_npy_header(const mapped_file& f) {
  const std::string& path = f.path();
  const std::uint8_t* p = f.data();
  if (f.size() < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0) fail(path, ": not a .npy file (missing \\x93NUMPY magic)");
  const int major = p[6];
  std::size_t hlen = 0, prefix = 0;
  if (major == 1) {
    hlen = std::size_t(p[8]) | std::size_t(p[9]) << 8;
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (f.size() < 12) fail(path, ": truncated .npy header");
    hlen = std::size_t(p[8]) | std::size_t(p[9]) << 8 | std::size_t(p[10]) << 16 | std::size_t(p[11]) << 24;
    prefix = 12;
  } else {
    fail(path, ": unsupported .npy format version ", major, ".", int(p[7]));
  }
  if (hlen > f.size() - prefix) fail(path, ": .npy header length ", hlen, " exceeds the file size ", f.size());
  npy_header_info info;
  npy_dict_parser(std::string_view(reinterpret_cast<const char*>(p) + prefix, hlen), path).parse(info);
  info.data_offset = prefix + hlen;
  if (info.fortran_order) fail(path, ": Fortran-order .npy arrays are not supported (save with C order)");
  return info;
}

inline std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

template <class T, class Stored>
npy_array<T> read_npy_as(const mapped_file& f, const npy_header_info& h) {
  npy_array<T> out;
  out.shape = h.shape;
  // Checked in int64, the type numel() and every caller use: a product between 2^63 and 2^64 would
  // pass an unsigned check and then overflow there.
  const std::int64_t bytes = checked::nbytes(h.shape, std::int64_t(sizeof(Stored)));
  if (bytes < 0) fail(f.path(), ": .npy shape ", shape_text(h.shape), " overflows 64 bits");
  const std::uint64_t n = std::uint64_t(bytes) / sizeof(Stored);
  const std::uint64_t have = f.size() - h.data_offset;
  if (have != std::uint64_t(bytes))
    fail(f.path(), ": .npy data is ", have, " bytes but shape and dtype '", h.descr, "' need ", n, " x ",
         sizeof(Stored), " bytes");
  out.data.resize(std::size_t(n));
  const std::uint8_t* src = f.data() + h.data_offset;
  for (std::size_t i = 0; i < out.data.size(); ++i) {
    Stored v;
    std::memcpy(&v, src + i * sizeof(Stored), sizeof(Stored));  // data may be unaligned in v2/v3 files
    out.data[i] = static_cast<T>(v);
  }
  return out;
}

}  // namespace detail

/// \brief Writes a float32 C-order array as .npy 1.0 ('<f4'), byte-identical to numpy.save.
/// \param path file to create or overwrite
/// \param data numel(shape) values, row-major
/// \param shape extents (empty for a 0-d array)
inline void write_npy(const std::string& path, const float* data, const std::vector<std::int64_t>& shape) {
  detail::write_npy_impl(path, "<f4", data, shape);
}
/// \brief Writes an int32 C-order array as .npy 1.0 ('<i4').
/// \param path file to create or overwrite
/// \param data numel(shape) values, row-major
/// \param shape extents (empty for a 0-d array)
inline void write_npy(const std::string& path, const std::int32_t* data, const std::vector<std::int64_t>& shape) {
  detail::write_npy_impl(path, "<i4", data, shape);
}

/// \brief Reads a '<f4' C-order .npy file; errors name the file and what was wrong.
inline npy_array<float> read_npy_f32(const std::string& path) {
  const mapped_file f(path);
  const detail::npy_header_info h = detail::parse_npy_header(f);
  if (h.descr != "<f4") fail(path, ": .npy dtype '", h.descr, "' is not supported here (expected '<f4')");
  return detail::read_npy_as<float, float>(f, h);
}

/// \brief Reads a '<f8' C-order .npy file (e.g. Python's random() draws, kept bit for bit).
inline npy_array<double> read_npy_f64(const std::string& path) {
  const mapped_file f(path);
  const detail::npy_header_info h = detail::parse_npy_header(f);
  if (h.descr != "<f8") fail(path, ": .npy dtype '", h.descr, "' is not supported here (expected '<f8')");
  return detail::read_npy_as<double, double>(f, h);
}

/// \brief Reads a '<i4' or '<i8' C-order .npy file as int64 (token ids, positions).
inline npy_array<std::int64_t> read_npy_i64(const std::string& path) {
  const mapped_file f(path);
  const detail::npy_header_info h = detail::parse_npy_header(f);
  if (h.descr == "<i4") return detail::read_npy_as<std::int64_t, std::int32_t>(f, h);
  if (h.descr == "<i8") return detail::read_npy_as<std::int64_t, std::int64_t>(f, h);
  fail(path, ": .npy dtype '", h.descr, "' is not supported here (expected '<i4' or '<i8')");
}

}  // namespace muninn::io
