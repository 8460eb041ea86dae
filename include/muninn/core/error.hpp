#pragma once
/// \file
/// \brief The single exception type of Muninn and the checks that throw it.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace muninn {

/// \brief Every error Muninn reports: bad files, bad configs, bad arguments, backend failures.
///
/// The message is meant for a person: it names the file, tensor or value that was wrong,
/// so that a CLI can print it as is.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

/// \brief Throws muninn::error with the streamed arguments as its message.
template <class... Args>
[[noreturn]] void fail(Args&&... args) {
  throw error(detail::concat(std::forward<Args>(args)...));
}

}  // namespace muninn

/// \brief Throws muninn::error built from the remaining arguments when `cond` is false.
#define MUNINN_CHECK(cond, ...)                 \
  do {                                          \
    if (!(cond)) ::muninn::fail(__VA_ARGS__);   \
  } while (0)
