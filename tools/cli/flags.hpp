#pragma once
// The flags of every muninn command, in one table per command: the CLI's own flags (--model,
// --tokens, ...) plus the front-end library's options of the command's operation. The parser
// accepts exactly these and `--help` prints exactly these, with the defaults and ranges the code
// uses (the option table is the one the code reads its defaults from).

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "muninn/frontend/options.hpp"

namespace muninn::cli {

/// \brief A flag of the CLI itself, not a model option: where the input comes from.
struct cli_flag {
  std::string name;        ///< "--tokens"
  std::string metavar;     ///< "1,2,3"; empty: a switch
  std::string help;        ///< one line
  bool in_synopsis = false;  ///< spelled out in the synopsis (required or one-of)
};

/// \brief A command: its usage, its own flags and the operation whose options it takes.
struct command {
  std::string name;       ///< "generate"
  std::string synopsis;   ///< "--model DIR (--tokens 1,2,3 | --prompt TEXT) [flags]"
  std::string summary;    ///< one line
  frontend::operation op;
  std::vector<cli_flag> own;
  std::string notes;      ///< after the flag list; may be empty
};

/// \brief Every command, in the order `muninn --help` lists them.
const std::vector<command>& commands();
/// \brief The command named `name`, or nullptr.
const command* find_command(const std::string& name);

/// \brief A parsed command line: the CLI's own flags and the model options.
struct parsed {
  explicit parsed(frontend::operation op) : options(op) {}
  frontend::option_values options;
  std::map<std::string, std::string> own;  ///< "--tokens" → "1,2,3"
  bool help = false;

  bool has(const std::string& flag) const { return own.count(flag) != 0; }
  std::string get(const std::string& flag, const std::string& def = "") const {
    const auto it = own.find(flag);
    return it == own.end() ? def : it->second;
  }
  /// \brief A flag the command cannot do without (usage error when missing).
  std::string require(const std::string& flag) const;
  /// \brief Exactly one of `flags` (usage error otherwise); returns it.
  std::string one_of(const std::vector<std::string>& flags) const;
};

/// \brief Parses argv[2..] against `cmd`: unknown flags, a missing value, a value given to a
/// switch and a flag given twice are usage errors; --help / -h stops parsing.
parsed parse(const command& cmd, int argc, char** argv);

/// \brief `muninn <command> --help`.
void print_help(const command& cmd, std::ostream& os);
/// \brief `muninn --help`.
void print_usage(std::ostream& os);

}  // namespace muninn::cli
