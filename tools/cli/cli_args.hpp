#pragma once
// Minimal `--flag value` parser for the muninn CLI: every flag is declared, unknown ones are errors.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"

namespace muninn::cli {

/// \brief Parsed flags of one subcommand.
class args {
 public:
  /// \brief Parses argv[first..] against the allowed value flags and switches.
  args(int argc, char** argv, int first, const std::set<std::string>& value_flags, const std::set<std::string>& switches) {
    for (int i = first; i < argc; ++i) {
      std::string a = argv[i];
      std::string v;
      bool has_inline = false;
      if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
        v = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_inline = true;
      }
      if (switches.count(a)) {
        MUNINN_CHECK(!has_inline, "flag ", a, " takes no value");
        flags_[a] = "1";
      } else if (value_flags.count(a)) {
        if (!has_inline) {
          MUNINN_CHECK(i + 1 < argc, "flag ", a, " needs a value");
          v = argv[++i];
        }
        flags_[a] = v;
      } else {
        fail("unknown flag '", a, "' (see muninn --help)");
      }
    }
  }
  bool has(const std::string& f) const { return flags_.count(f) != 0; }
  std::string get(const std::string& f, const std::string& def = "") const {
    auto it = flags_.find(f);
    return it == flags_.end() ? def : it->second;
  }
  std::string require(const std::string& f) const {
    MUNINN_CHECK(has(f), "missing required flag ", f);
    return get(f);
  }
  std::int64_t get_int(const std::string& f, std::int64_t def) const {
    if (!has(f)) return def;
    return parse_int(get(f), f);
  }
  double get_double(const std::string& f, double def) const {
    if (!has(f)) return def;
    const std::string s = get(f);
    try {
      std::size_t pos = 0;
      double v = std::stod(s, &pos);
      if (pos == s.size()) return v;
    } catch (...) {
    }
    fail("flag ", f, " expects a number, got '", s, "'");
  }
  static std::int64_t parse_int(const std::string& s, const std::string& what) {
    try {
      std::size_t pos = 0;
      long long v = std::stoll(s, &pos);
      if (pos == s.size()) return v;
    } catch (...) {
    }
    fail(what, " expects an integer, got '", s, "'");
  }
  /// \brief "1,2,3" → {1, 2, 3}; rejects empty items and non-integers.
  static std::vector<std::int32_t> parse_ids(const std::string& s, const std::string& what) {
    std::vector<std::int32_t> out;
    std::size_t start = 0;
    MUNINN_CHECK(!s.empty(), what, " is empty");
    while (start <= s.size()) {
      std::size_t comma = s.find(',', start);
      if (comma == std::string::npos) comma = s.size();
      const std::int64_t v = parse_int(s.substr(start, comma - start), what);
      MUNINN_CHECK(v >= INT32_MIN && v <= INT32_MAX, what, ": token id ", v, " does not fit in 32 bits");
      out.push_back(std::int32_t(v));
      start = comma + 1;
    }
    return out;
  }

 private:
  std::map<std::string, std::string> flags_;
};

}  // namespace muninn::cli
