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

/// \brief RAII owner of a read-only mapping of one file. Move-only.
///
/// The mapping's address does not change when the object is moved, so pointers into it stay
/// valid for as long as some mapped_file owns it.
class mapped_file {
 public:
  /// \brief An empty object that maps nothing.
  mapped_file() = default;

  /// \brief Maps `path` read-only; throws muninn::error naming the path and the system's reason.
  explicit mapped_file(std::string path) : path_(std::move(path)) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open '", path_, "': ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int e = errno;
      ::close(fd);
      fail("cannot stat '", path_, "': ", std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      fail("cannot map '", path_, "': not a regular file");
    }
    size_ = static_cast<std::size_t>(st.st_size);
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

}  // namespace muninn::io
