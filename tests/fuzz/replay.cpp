// Replays the committed corpus of one fuzz target (tests/fuzz/corpus/<target>/) as a plain test,
// so CI keeps every hostile input fixed without clang or libFuzzer:
//   fuzz_replay <target> <corpus dir>   each file must be accepted or rejected with muninn::error;
//                                       <file>.expect holds a substring the error must contain
//                                       ("accept": no error); parse memory must stay bounded
//   fuzz_replay --memory                parses generated worst-case JSON of a few MB and checks
//                                       that the parse never needs more than 24 bytes per input byte
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_targets.hpp"

// ---- every heap allocation counted, so a test can see the peak a parse needs
namespace {
std::atomic<std::size_t> live_bytes{0}, peak_bytes{0};

void* counted_alloc(std::size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  const std::size_t now = live_bytes += malloc_usable_size(p);
  std::size_t peak = peak_bytes.load();
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
  }
  return p;
}
void counted_free(void* p) noexcept {
  if (!p) return;
  live_bytes -= malloc_usable_size(p);
  std::free(p);
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
// The nothrow forms too (std::stable_sort's temporary buffer uses them): a nothrow new left to the
// sanitizer's allocator and freed by the delete above is a mismatch AddressSanitizer aborts on.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }

namespace {

namespace fs = std::filesystem;

// Bytes allocated at the peak of `f` beyond what was live before it.
template <class F>
std::size_t peak_of(F&& f) {
  const std::size_t before = live_bytes.load();
  peak_bytes = before;
  f();
  return peak_bytes.load() - before;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A JSON parse needs at most this many bytes per input byte (each target states its own bound).
constexpr std::size_t bytes_per_input_byte = 24;

int replay(const std::string& name, const fs::path& dir) {
  const muninn_fuzz::target* target = nullptr;
  for (const auto& t : muninn_fuzz::targets)
    if (name == t.name) target = &t;
  if (!target) {
    std::fprintf(stderr, "unknown target '%s'\n", name.c_str());
    return 2;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() != ".expect") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "no corpus files in %s\n", dir.c_str());
    return 2;
  }
  int failures = 0;
  for (const fs::path& f : files) {
    const std::string bytes = read_all(f);
    const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
    std::string message;
    try {
      const std::size_t peak = peak_of([&] { message = target->fn(data, bytes.size()); });
      if (peak > target->bytes_per_input_byte * bytes.size() + target->fixed_allowance) {
        std::printf("FAIL %s: needed %zu bytes of heap for %zu input bytes\n", f.filename().c_str(), peak, bytes.size());
        ++failures;
        continue;
      }
    } catch (const std::exception& e) {
      std::printf("FAIL %s: escaped as %s\n", f.filename().c_str(), e.what());
      ++failures;
      continue;
    }
    fs::path expect_path = f;
    expect_path += ".expect";
    std::string expect = fs::exists(expect_path) ? read_all(expect_path) : std::string();
    while (!expect.empty() && (expect.back() == '\n' || expect.back() == '\r')) expect.pop_back();
    const bool ok = expect.empty() || (expect == "accept" ? message.empty() : message.find(expect) != std::string::npos);
    std::printf("%s %s: %s\n", ok ? "ok  " : "FAIL", f.filename().c_str(), message.empty() ? "accepted" : message.c_str());
    if (!ok) {
      std::printf("     expected %s\n", expect == "accept" ? "no error" : ("an error containing '" + expect + "'").c_str());
      ++failures;
    }
  }
  std::printf("%zu inputs, %d failures\n", files.size(), failures);
  return failures ? 1 : 0;
}

// Worst cases for the parse tree: values of 2-4 input bytes each, empty containers, long keys,
// deep nesting repeated.
int memory() {
  constexpr std::size_t n = 1 << 20;
  const auto repeat = [](const std::string& open, const std::string& item, const std::string& close) {
    std::string s = open;
    s.reserve(n * (item.size() + 1) + 2);
    for (std::size_t i = 0; i < n; ++i) s += (i ? "," : "") + item;
    return s + close;
  };
  std::string keys = "{";
  for (std::size_t i = 0; i < n / 4; ++i) keys += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
  keys += "}";
  std::string deep;
  for (int k = 0; k < 4096; ++k) deep += (k ? "," : "[") + std::string(200, '[') + std::string(200, ']');
  deep += "]";
  const std::vector<std::pair<const char*, std::string>> docs = {
      {"numbers", repeat("[", "0", "]")},     {"strings", repeat("[", "\"a\"", "]")},
      {"empty strings", repeat("[", "\"\"", "]")}, {"arrays", repeat("[", "[]", "]")},
      {"objects", repeat("[", "{}", "]")},     {"nested", repeat("[", "[0]", "]")},
      {"keys", keys},                          {"deep", deep},
      {"true", repeat("[", "true", "]")},      {"long strings", repeat("[", "\"" + std::string(40, 'x') + "\"", "]")},
  };
  int failures = 0;
  for (const auto& [what, doc] : docs) {
    std::size_t peak = 0;
    try {
      peak = peak_of([&] { (void)muninn::io::parse_json(doc, what); });
    } catch (const std::exception& e) {
      std::printf("FAIL %s: %s\n", what, e.what());
      ++failures;
      continue;
    }
    const double ratio = double(peak) / double(doc.size());
    const bool ok = peak <= bytes_per_input_byte * doc.size();
    std::printf("%s %-14s %9zu input bytes, peak %10zu heap bytes (%.1f per input byte)\n", ok ? "ok  " : "FAIL", what,
                doc.size(), peak, ratio);
    failures += !ok;
  }
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  int rc = 2;
  if (argc == 2 && std::string(argv[1]) == "--memory") rc = memory();
  else if (argc == 3) rc = replay(argv[1], argv[2]);
  else std::fprintf(stderr, "usage: fuzz_replay <target> <corpus dir> | fuzz_replay --memory\n");
  std::error_code ec;
  fs::remove_all(muninn_fuzz::scratch(), ec);
  return rc;
}
