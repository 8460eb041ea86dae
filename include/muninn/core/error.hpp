#pragma once
/// \file
/// \brief The single exception type of Muninn and the checks that throw it.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace muninn {

/// \brief What an error is about, so that a front end can map it: a CLI to its exit code (2 for
/// usage), a Python module to an exception class, a server to an HTTP status.
enum class error_kind {
  runtime,     ///< anything else: a backend failure, an allocation, a numerical limit
  checkpoint,  ///< a weight file: missing, truncated, wrong names, shapes or dtypes
  config,      ///< a config file (config.json, YAML, tokenizer, dataset metadata) that cannot be used
  usage,       ///< an argument, flag or option the caller gave
};

/// \brief Every error Muninn reports: bad files, bad configs, bad arguments, backend failures.
///
/// The message is meant for a person: it names the file, tensor or value that was wrong,
/// so that a CLI can print it as is. kind() says which sort of input was wrong; the library's
/// own checks throw error_kind::runtime unless they know better, and front ends re-tag errors by
/// the phase they happened in (see muninn/frontend).
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  /// \brief An error of the given kind.
  error(const std::string& what, error_kind kind) : std::runtime_error(what), kind_(kind) {}
  /// \brief What the error is about.
  error_kind kind() const noexcept { return kind_; }

 private:
  error_kind kind_ = error_kind::runtime;
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

/// \brief Throws muninn::error of `kind` with the streamed arguments as its message.
template <class... Args>
[[noreturn]] void fail_as(error_kind kind, Args&&... args) {
  throw error(detail::concat(std::forward<Args>(args)...), kind);
}

}  // namespace muninn

/// \brief Throws muninn::error built from the remaining arguments when `cond` is false.
#define MUNINN_CHECK(cond, ...)                 \
  do {                                          \
    if (!(cond)) ::muninn::fail(__VA_ARGS__);   \
  } while (0)
