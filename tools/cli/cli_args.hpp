#pragma once
// `--flag value` parser for the muninn CLI. Each subcommand declares its flags once, in a
// command_spec: the parser accepts exactly those and `--help` prints exactly those, so the help
// cannot drift from what the command takes.

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"

namespace muninn::cli {

/// \brief One flag of a subcommand: its name, its value's placeholder (empty for a switch) and
/// one line of help.
struct flag_spec {
  std::string name;        ///< "--steps"
  std::string metavar;     ///< "R"; empty: a switch that takes no value
  std::string help;        ///< one line for `--help`
  bool in_synopsis = false;  ///< already spelled out in the synopsis (required or one-of flags)
};

/// \brief A subcommand: what `muninn <name> --help` prints and what its parser accepts.
struct command_spec {
  std::string name;      ///< "generate"
  std::string synopsis;  ///< the flags a call cannot do without, e.g. "--model DIR --tokens 1,2,3"
  std::string summary;   ///< what the command does, one line
  std::vector<flag_spec> flags;
  std::string notes;  ///< printed after the flag list (defaults, output format); may be empty

  /// \brief The spec of `name`, or nullptr.
  const flag_spec* find(const std::string& name) const {
    for (const auto& f : flags)
      if (f.name == name) return &f;
    return nullptr;
  }
};

/// \brief Parsed flags of one subcommand.
class args {
 public:
  /// \brief Parses argv[first..] against `spec`. `--help` / `-h` stops parsing and sets help().
  /// Unknown flags, a missing value, a value given to a switch and a flag given twice are errors.
  args(int argc, char** argv, int first, const command_spec& spec) {
    for (int i = first; i < argc; ++i) {
      std::string a = argv[i], v;
      if (a == "--help" || a == "-h") {
        help_ = true;
        return;
      }
      const bool has_inline = split_inline(a, v);
      const flag_spec* f = spec.find(a);
      if (!f) fail("unknown flag '", a, "' (see muninn ", spec.name, " --help)");
      MUNINN_CHECK(!flags_.count(a), "flag ", a, " is given twice");
      if (f->metavar.empty()) {
        MUNINN_CHECK(!has_inline, "flag ", a, " takes no value");
        v = "1";
      } else if (!has_inline) {
        MUNINN_CHECK(i + 1 < argc, "flag ", a, " needs a value (", f->metavar, ")");
        v = argv[++i];
      }
      flags_[a] = v;
    }
  }
  /// \brief True when --help or -h was given.
  bool help() const { return help_; }
  bool has(const std::string& f) const { return flags_.count(f) != 0; }
  std::string get(const std::string& f, const std::string& def = "") const {
    auto it = flags_.find(f);
    return it == flags_.end() ? def : it->second;
  }
  std::string require(const std::string& f) const {
    MUNINN_CHECK(has(f), "missing required flag ", f);
    return get(f);
  }
  std::int64_t get_int(const std::string& f, std::int64_t def) const { return has(f) ? parse_int(get(f), f) : def; }
  /// \brief get_int that rejects values below `lo` (the message names the flag).
  std::int64_t get_int_min(const std::string& f, std::int64_t def, std::int64_t lo) const {
    const std::int64_t v = get_int(f, def);
    MUNINN_CHECK(v >= lo, f, " must be >= ", lo, ", got ", v);
    return v;
  }
  double get_double(const std::string& f, double def) const { return has(f) ? parse_double(get(f), f) : def; }
  /// \brief get_double that rejects NaN, infinities and values below `lo`.
  double get_double_min(const std::string& f, double def, double lo) const {
    const double v = get_double(f, def);
    MUNINN_CHECK(std::isfinite(v) && v >= lo, f, " must be a number >= ", lo, ", got ", get(f));
    return v;
  }
  /// \brief get_double that rejects NaN, infinities and values outside [lo, hi].
  double get_double_in(const std::string& f, double def, double lo, double hi) const {
    const double v = get_double(f, def);
    MUNINN_CHECK(std::isfinite(v) && v >= lo && v <= hi, f, " must be in [", lo, ", ", hi, "], got ", get(f));
    return v;
  }
  static double parse_double(const std::string& s, const std::string& what) {
    try {
      std::size_t pos = 0;
      double v = std::stod(s, &pos);
      if (pos == s.size()) return v;
    } catch (...) {
    }
    fail(what, " expects a number, got '", s, "'");
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
  /// "--flag=value" → a = "--flag", v = "value"; true when there was an '='.
  static bool split_inline(std::string& a, std::string& v) {
    const auto eq = a.find('=');
    if (a.rfind("--", 0) != 0 || eq == std::string::npos) return false;
    v = a.substr(eq + 1);
    a = a.substr(0, eq);
    return true;
  }

  std::map<std::string, std::string> flags_;
  bool help_ = false;
};

}  // namespace muninn::cli
