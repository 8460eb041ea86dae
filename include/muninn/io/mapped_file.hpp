#pragma once
/// \file
/// \brief Read-only memory mapping of a whole file (POSIX mmap), so checkpoints are never copied.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "muninn/core/error.hpp"

namespace muninn::io {

namespace detail {

/// What a file mode says a path is, for the error that refuses it.
inline const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

}  // namespace detail

/// \brief Opens `path` for reading when it is a regular file, else throws one muninn::error naming it
/// ("cannot read 'p': it is a FIFO, not a regular file"); returns the descriptor, owned by the caller,
/// and its size in `size` when given.
///
/// Every reader of Muninn opens files through here (mapped_file, read_text_file): a FIFO blocks an
/// ordinary open() until some writer appears, and a device such as /dev/zero never ends, so the
/// path is checked before it is opened, opened without blocking, and checked again on the
/// descriptor (the path may have been replaced in between).
inline int open_regular_file(const std::string& path, std::size_t* size = nullptr) {
  const auto refuse = [&](mode_t mode) {
    fail("cannot read '", path, "': it is ", detail::file_kind(mode), ", not a regular file");
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail("cannot open '", path, "': ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse(st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) fail("cannot open '", path, "': ", std::strerror(errno));
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int e = errno;
    const mode_t mode = st.st_mode;
    ::close(fd);
    if (S_ISREG(mode)) fail("cannot stat '", path, "': ", std::strerror(e));
    refuse(mode);
  }
  if (size) *size = static_cast<std::size_t>(st.st_size);
  return fd;
}

/// \brief RAII owner of a read-only mapping of one file. Move-only.
///
/// The mapping's address does not change when the object is moved, so pointers into it stay
/// valid for as long as some mapped_file owns it.
class mapped_file {
 public:
  /// \brief An empty object that maps nothing.
  mapped_file() = default;

  /// \brief Maps `path` read-only; throws muninn::error naming the path and the system's reason, or
  /// what the path is when it is not a regular file (see open_regular_file).
  explicit mapped_file(std::string path) : path_(std::move(path)) {
    const int fd = open_regular_file(path_, &size_);
    if (size_ > 0) {  // mmap rejects length 0; an empty file simply maps to nothing
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int e = errno;
        ::close(fd);
        fail("cannot mmap '", path_, "' (", size_, " bytes): ", std::strerror(e));
      }
      data_ = static_cast<const std::uint8_t*>(p);
    }
    ::close(fd);  // the mapping keeps its own reference to the file
  }

  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  /// \brief Takes over the other object's mapping.
  mapped_file(mapped_file&& o) noexcept
      : path_(std::move(o.path_)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  /// \brief Releases the current mapping and takes over the other object's.
  mapped_file& operator=(mapped_file&& o) noexcept {
    if (this != &o) {
      unmap();
      path_ = std::move(o.path_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~mapped_file() { unmap(); }

  /// \brief First byte of the file (nullptr when empty).
  const std::uint8_t* data() const { return data_; }
  /// \brief File size in bytes.
  std::size_t size() const { return size_; }
  /// \brief The bytes as a string_view.
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  /// \brief The path the file was opened with.
  const std::string& path() const { return path_; }

 private:
  void unmap() noexcept {
    if (data_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
  }

  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

/// \brief Drops the pages lying wholly inside [p, p + n) of a read-only file mapping from this
/// process's resident memory; the bytes stay readable (the next access reads them again from the
/// file, normally from the page cache).
///
/// A loader calls it once it has copied a tensor out of a mapped checkpoint: otherwise every page
/// it touched stays resident beside the copy until the checkpoint closes, and loading a model
/// peaks at twice its size. Only the pages entirely inside the range are dropped, since a
/// neighbouring tensor may share the first and last one. `p` must point into a mapping of a file
/// made read-only (as mapped_file does): on anonymous memory this would zero the range.
inline void release_mapped_pages(const void* p, std::size_t n) noexcept {
  static const std::uintptr_t page = std::uintptr_t(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t first = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const std::uintptr_t last = (reinterpret_cast<std::uintptr_t>(p) + n) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);  // advice: failure is harmless
}

}  // namespace muninn::io
