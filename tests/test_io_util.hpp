#pragma once
// Helpers of the file-reading tests (test_io.cpp, test_llama_io.cpp): a fresh temporary
// directory per test, byte writers, and the message of an expected muninn::error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "muninn/core/error.hpp"

namespace muninn_test {

/// The message of the muninn::error `f` throws; a test failure when it throws nothing.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const muninn::error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a muninn::error";
  return "<no error>";
}

/// Runs `f` in a child process killed after `seconds` and limited to `max_bytes` of address space, so that a
/// reader or interpreter that hangs, crashes or allocates without end fails its test instead of taking the
/// suite down (the memory limit is not set under AddressSanitizer). Returns the muninn::error message `f` threw, "accepted" when it returned, or how it ended
/// ("hung (killed after N s)", "crashed with signal N", "escaped as another exception: ...").
inline std::string outcome_in_child(const std::function<void()>& f, unsigned seconds = 10,
                                    std::size_t max_bytes = std::size_t(4) << 30) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(seconds);
#if !defined(__SANITIZE_ADDRESS__)  // AddressSanitizer reserves terabytes of address space for its shadow
    const rlimit mem{max_bytes, max_bytes};
    ::setrlimit(RLIMIT_AS, &mem);
#endif
    std::string msg = "accepted";
    int rc = 0;
    try {
      f();
    } catch (const muninn::error& e) {
      msg = e.what();
    } catch (const std::exception& e) {
      msg = std::string("escaped as another exception: ") + e.what();
      rc = 1;
    }
    const ssize_t n = ::write(fds[1], msg.data(), msg.size());
    (void)n;
    ::_exit(rc);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, std::size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    return WTERMSIG(status) == SIGALRM ? "hung (killed after " + std::to_string(seconds) + " s)"
                                       : "crashed with signal " + std::to_string(WTERMSIG(status));
  return msg;
}

/// Writes `bytes` to `p`, replacing it.
inline void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

/// A test fixture that gets its own directory under the system temp dir, removed afterwards.
class temp_dir_test : public ::testing::Test {
 protected:
  /// `prefix` names the directories of one test binary.
  explicit temp_dir_test(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  /// A file name inside the test's directory.
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string prefix_;
  std::filesystem::path dir_;
};

}  // namespace muninn_test
