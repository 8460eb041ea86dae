#pragma once
// A progress bar on stderr, drawn only when stderr is a terminal: its `\r` redraws would garble a
// pipe or a log file, so a piped run prints nothing extra.

#include <cstdint>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace muninn::cli {

/// \brief "label [#####.....] done/total", redrawn in place; a newline when done == total.
class progress_bar {
 public:
  explicit progress_bar(std::string label) : label_(std::move(label)), on_(isatty(STDERR_FILENO) == 1) {}
  /// \brief Whether a bar is drawn at all (stderr is a terminal).
  bool on() const { return on_; }
  void update(std::int64_t done, std::int64_t total) const {
    if (!on_ || total <= 0) return;
    const int width = 30, filled = int(width * done / total);
    std::fprintf(stderr, "\r%s [%s%s] %lld/%lld", label_.c_str(), std::string(std::size_t(filled), '#').c_str(),
                 std::string(std::size_t(width - filled), '.').c_str(), (long long)done, (long long)total);
    if (done >= total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  std::string label_;
  bool on_;
};

}  // namespace muninn::cli
