#pragma once
/// \file
/// \brief Read-only ZIP archives over a memory mapping: the container of `torch.save` files.
///
/// Only what torch.save writes is accepted: one disk, STORED (uncompressed) entries, ZIP64 records
/// for archives and entries past 4 GiB. Every offset and size is checked against the file before it
/// is used, so a hostile or truncated archive gives an error, never a read outside the mapping.
/// The bytes of an entry are a pointer into the mapping; nothing is copied.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/mapped_file.hpp"

namespace muninn::io {

/// \brief One file inside a ZIP archive.
struct zip_entry {
  std::string name;                    ///< path inside the archive, as stored
  const std::uint8_t* data = nullptr;  ///< first byte of the (stored) contents, inside the mapping
  std::uint64_t size = 0;              ///< size of the contents in bytes
};

namespace detail {

inline std::uint16_t zip_u16(const std::uint8_t* p) { return std::uint16_t(p[0] | (p[1] << 8)); }
inline std::uint32_t zip_u32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) | (std::uint32_t(p[3]) << 24);
}
inline std::uint64_t zip_u64(const std::uint8_t* p) { return zip_u32(p) | (std::uint64_t(zip_u32(p + 4)) << 32); }

/// True when [offset, offset + length) lies inside [0, limit), without overflowing.
inline bool range_within(std::uint64_t offset, std::uint64_t length, std::uint64_t limit) {
  return offset <= limit && length <= limit - offset;
}

/// An entry name that cannot escape or confuse a path: not empty, no NUL or control bytes,
/// no backslash, not absolute, no "." or ".." component.
inline bool zip_name_valid(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f || c == '\\') return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part == "." || part == "..") return false;
    if (part.empty() && end != name.size()) return false;  // "a//b"; a trailing "/" marks a folder
    start = end + 1;
  }
  return true;
}

}  // namespace detail

/// \brief A ZIP archive read in place from a memory mapping. Move-only (it owns the mapping).
class zip_archive {
 public:
  /// \brief Maps `path` and reads its central directory; throws muninn::error naming the file.
  explicit zip_archive(const std::string& path) : zip_archive(mapped_file(path)) {}

  /// \brief Reads the central directory of an already mapped file.
  explicit zip_archive(mapped_file map) : map_(std::move(map)) {
    const std::uint64_t eocd = find_end_record();
    const std::uint8_t* e = map_.data() + eocd;
    std::uint64_t count = detail::zip_u16(e + 10);
    std::uint64_t cd_size = detail::zip_u32(e + 12);
    std::uint64_t cd_offset = detail::zip_u32(e + 16);
    if (detail::zip_u16(e + 4) != 0 || detail::zip_u16(e + 6) != 0 || detail::zip_u16(e + 8) != count)
      bad("spans several disks, which is not supported");
    if (eocd >= 20 && detail::zip_u32(e - 20) == 0x07064b50u) read_zip64_end(eocd, count, cd_size, cd_offset);
    if (!detail::range_within(cd_offset, cd_size, eocd))
      bad("central directory (offset ", cd_offset, ", ", cd_size, " bytes) lies outside the ", eocd,
          " bytes before its end record (truncated file?)");
    if (count > cd_size / 46) bad("central directory of ", cd_size, " bytes cannot hold ", count, " entries");
    entries_.reserve(std::size_t(count));
    std::uint64_t pos = cd_offset;
    for (std::uint64_t i = 0; i < count; ++i) pos = read_central_entry(pos, cd_offset + cd_size);
  }

  /// \brief The path of the archive.
  const std::string& path() const { return map_.path(); }
  /// \brief The mapping the entries point into.
  const mapped_file& mapping() const { return map_; }
  /// \brief All entries in central-directory order.
  const std::vector<zip_entry>& entries() const { return entries_; }
  /// \brief The entry named `name`, or nullptr.
  const zip_entry* find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &entries_[it->second];
  }

 private:
  template <class... Args>
  [[noreturn]] void bad(Args&&... args) const {
    fail(map_.path(), ": not a readable ZIP archive: ", std::forward<Args>(args)...);
  }

  // The end-of-central-directory record: the last signature within the final 22 + 65535 bytes
  // (the record plus the longest comment) whose comment ends exactly at the end of the file.
  std::uint64_t find_end_record() const {
    const std::uint64_t size = map_.size();
    if (size < 22) bad("the file is ", size, " bytes, shorter than an end-of-central-directory record");
    const std::uint64_t lowest = size - 22 > 0xffff ? size - 22 - 0xffff : 0;
    for (std::uint64_t at = size - 22 + 1; at-- > lowest;) {
      const std::uint8_t* p = map_.data() + at;
      if (detail::zip_u32(p) == 0x06054b50u && at + 22 + detail::zip_u16(p + 20) == size) return at;
    }
    bad("no end-of-central-directory record (truncated file?)");
  }

  // ZIP64: the locator just before the end record points at the 64-bit end record.
  void read_zip64_end(std::uint64_t eocd, std::uint64_t& count, std::uint64_t& cd_size, std::uint64_t& cd_offset) const {
    const std::uint8_t* loc = map_.data() + eocd - 20;
    const std::uint64_t at = detail::zip_u64(loc + 8);
    if (detail::zip_u32(loc + 4) != 0 || detail::zip_u32(loc + 16) > 1) bad("ZIP64 archive spans several disks");
    if (!detail::range_within(at, 56, eocd - 20)) bad("ZIP64 end record offset ", at, " lies outside the file");
    const std::uint8_t* z = map_.data() + at;
    if (detail::zip_u32(z) != 0x06064b50u) bad("no ZIP64 end record at offset ", at);
    if (detail::zip_u32(z + 16) != 0 || detail::zip_u32(z + 20) != 0 || detail::zip_u64(z + 24) != detail::zip_u64(z + 32))
      bad("ZIP64 archive spans several disks");
    count = detail::zip_u64(z + 32);
    cd_size = detail::zip_u64(z + 40);
    cd_offset = detail::zip_u64(z + 48);
  }

  // One central-directory record at `pos` (which must end by `cd_end`); returns the next position.
  std::uint64_t read_central_entry(std::uint64_t pos, std::uint64_t cd_end) {
    if (!detail::range_within(pos, 46, cd_end)) bad("central directory ends inside an entry record");
    const std::uint8_t* c = map_.data() + pos;
    if (detail::zip_u32(c) != 0x02014b50u) bad("central directory entry at offset ", pos, " has a bad signature");
    const std::uint16_t flags = detail::zip_u16(c + 8), method = detail::zip_u16(c + 10);
    std::uint64_t csize = detail::zip_u32(c + 20), usize = detail::zip_u32(c + 24);
    const std::uint16_t name_len = detail::zip_u16(c + 28), extra_len = detail::zip_u16(c + 30);
    const std::uint16_t comment_len = detail::zip_u16(c + 32);
    std::uint64_t disk = detail::zip_u16(c + 34), local = detail::zip_u32(c + 42);
    const std::uint64_t rec_len = 46ull + name_len + extra_len + comment_len;
    if (!detail::range_within(pos, rec_len, cd_end)) bad("central directory ends inside an entry record");
    std::string name(reinterpret_cast<const char*>(c + 46), name_len);
    if (!detail::zip_name_valid(name)) bad("entry name '", printable(name), "' is not a plain relative path");
    read_zip64_extra(name, c + 46 + name_len, extra_len, usize, csize, local, disk);
    if (disk != 0) bad("entry '", name, "' lies on another disk");
    if (flags & 1u) bad("entry '", name, "' is encrypted");
    if (method != 0)
      fail(map_.path(), ": entry '", name, "' is compressed (method ", method,
           "); torch.save writes stored entries, and Muninn reads only those");
    if (csize != usize) bad("stored entry '", name, "' has ", csize, " bytes in the archive but ", usize, " unpacked");

    // The local header repeats the name; its extra field (alignment padding) may differ.
    if (!detail::range_within(local, 30, map_.size())) bad("entry '", name, "' has its local header outside the file");
    const std::uint8_t* l = map_.data() + local;
    if (detail::zip_u32(l) != 0x04034b50u) bad("entry '", name, "' has no local header at offset ", local);
    if (detail::zip_u16(l + 8) != 0) bad("local header of entry '", name, "' disagrees with the central directory on compression");
    const std::uint64_t lname = detail::zip_u16(l + 26), lextra = detail::zip_u16(l + 28);
    if (lname != name_len || !detail::range_within(local + 30, lname, map_.size()) ||
        std::string_view(reinterpret_cast<const char*>(l + 30), lname) != name)
      bad("local header of entry '", name, "' names another entry");
    const std::uint64_t data = local + 30 + lname + lextra;
    if (!detail::range_within(data, usize, map_.size()))
      bad("entry '", name, "' (", usize, " bytes at offset ", data, ") reaches past the end of the ", map_.size(),
          "-byte file (truncated file?)");

    if (!index_.emplace(name, entries_.size()).second) bad("entry '", name, "' appears twice");
    entries_.push_back({std::move(name), map_.data() + data, usize});
    return pos + rec_len;
  }

  // The ZIP64 extra field (id 1) holds, in this order, the fields whose 32-bit slot is saturated.
  void read_zip64_extra(const std::string& name, const std::uint8_t* x, std::uint64_t len, std::uint64_t& usize,
                        std::uint64_t& csize, std::uint64_t& local, std::uint64_t& disk) const {
    while (len >= 4) {
      const std::uint16_t id = detail::zip_u16(x), n = detail::zip_u16(x + 2);
      if (n > len - 4) bad("entry '", name, "' has a malformed extra field");
      if (id == 1) {
        std::uint64_t at = 0;
        auto take = [&](std::uint64_t& v, std::uint64_t saturated, std::uint64_t bytes) {
          if (v != saturated) return;
          if (at + bytes > n) bad("entry '", name, "' has a ZIP64 extra field too short for its saturated sizes");
          v = bytes == 8 ? detail::zip_u64(x + 4 + at) : detail::zip_u32(x + 4 + at);
          at += bytes;
        };
        take(usize, 0xffffffffu, 8);
        take(csize, 0xffffffffu, 8);
        take(local, 0xffffffffu, 8);
        take(disk, 0xffffu, 4);
      }
      x += 4 + n;
      len -= 4 + n;
    }
  }

  static std::string printable(const std::string& s) {
    std::string out;
    for (unsigned char c : s) out += (c < 0x20 || c == 0x7f) ? '?' : char(c);
    return out;
  }

  mapped_file map_;
  std::vector<zip_entry> entries_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace muninn::io
