#pragma once
// Helpers of the file-reading tests (test_io.cpp, test_llama_io.cpp): a fresh temporary
// directory per test, byte writers, and the message of an expected muninn::error.
#include <gtest/gtest.h>
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
