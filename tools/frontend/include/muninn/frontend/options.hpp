#pragma once
/// \file
/// \brief The options every front end passes to a loaded model, in one table: each option's name,
/// value, default, range or choices and the families it applies to. The CLI parses its flags and
/// prints its `--help` from this table, a Python module takes its keyword arguments from it and a
/// server its extra request fields, so the three cannot drift apart and all reject the same input
/// with the same words (spelled as the caller typed them: `--max-new-tokens` or `max_new_tokens`).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"

namespace muninn::frontend {

/// \brief What a front end asks of a model: one entry per CLI command, and `load`: what a front
/// end that keeps a model open (a Python module, a server) gives once when it loads one (device,
/// dtype, the extra config files of a family); every family accepts it. `serve`: the server's own settings.
enum class operation { info, forward, generate, score, eval, demo, solve, ae, tokenize, load, serve };

/// \brief The CLI name of an operation ("generate").
const char* operation_name(operation op);

/// \brief The type of an option's value.
enum class value_type {
  flag,     ///< a switch: present or not
  integer,  ///< a 64-bit integer within [lo, hi]
  number,   ///< a finite double within [lo, hi]
  choice,   ///< one of `choices`
  text,     ///< any string (a path, a text)
  ids,      ///< comma-separated token ids
};

/// \brief One option: everything parsing, validation and help need to know about it.
struct option_spec {
  std::string name;        ///< "max-new-tokens" (the CLI adds "--", Python uses "max_new_tokens")
  std::string metavar;     ///< "N"; empty for a flag
  std::string help;        ///< one line, without the default
  value_type type = value_type::text;
  std::string default_value;  ///< the literal default the code uses (parsed like a given value); may be empty
  std::string default_note;   ///< a default that depends on the model, said in words ("the config's mean_recurrence")
  double lo = 0, hi = 0;      ///< inclusive range of integer and number options
  std::vector<std::string> choices;   ///< the values of a choice option
  std::vector<std::string> families;  ///< the families it applies to ("huginn", ...); empty: every family
  bool required = false;      ///< the operation cannot run without it
  bool model_free = false;    ///< read by the front end itself (paths, texts), never by a family
  bool cli_only = false;      ///< how the CLI prints or writes its result; a front end that returns the data
                              ///< itself (Python, a server) does not take it
};

/// \brief The options of `op`, in help order. The CLI adds its own (`--model`, `--tokens`, ...).
const std::vector<option_spec>& options_of(operation op);

/// \brief The option of `op` named `name`, or nullptr.
const option_spec* find_option(operation op, const std::string& name);

/// \brief The options a front end that loads a model once takes per call of `op`: the table of
/// `op` without the load-time options (those of operation::load) and without the CLI's own
/// output options (cli_only). The names a Python method accepts as keyword arguments.
std::vector<const option_spec*> call_options(operation op);

/// \brief "(default 1)", "(default: the config's mean_recurrence)" or "".
std::string default_text(const option_spec& s);

/// \brief "0..1024" for a range, "a|b|c" for choices, "" otherwise.
std::string range_text(const option_spec& s);

/// \brief The options given to one operation, checked against its table as they are read.
///
/// Values are kept as the caller gave them (strings): each getter parses and range-checks on
/// read and names the option in the caller's spelling, so an error reads `--steps must be an
/// integer in 0..1024, got 100000000` from the CLI and `steps must be ...` from Python. Every
/// error thrown here is error_kind::usage. A getter without a fallback uses the table's literal
/// default; one with a fallback is for options whose default depends on the model (the table says
/// so in words), and using it on an option that has a literal default is a programming error.
class option_values {
 public:
  /// \brief Options of `op`; `prefix` and `dash` say how a name is spelled in messages
  /// ("--" and '-' for the CLI, "" and '_' for Python keyword arguments).
  explicit option_values(operation op, std::string prefix = "--", char dash = '-');

  /// \brief Sets `name` (an option of the table, or the front end's own) to `value`; a name the
  /// operation does not take and a name given twice are usage errors.
  void set(const std::string& name, std::string value);
  /// \brief Sets an option the front end knows but the table does not (the CLI's --tokens).
  void set_extra(const std::string& name, std::string value);

  operation op() const { return op_; }
  /// \brief Whether the caller gave `name`.
  bool has(const std::string& name) const { return given_.count(name) != 0; }
  /// \brief Every given option, by name.
  const std::map<std::string, std::string>& given() const { return given_; }
  /// \brief `name` as the caller spells it: "--max-new-tokens" or "max_new_tokens".
  std::string spelled(const std::string& name) const;

  /// \brief The raw value, or the table's default.
  std::string text(const std::string& name) const;
  /// \brief The raw value, or `fallback` (an option without a literal default).
  std::string text(const std::string& name, const std::string& fallback) const;
  /// \brief A switch.
  bool flag(const std::string& name) const { return has(name); }
  /// \brief An integer option, range-checked.
  std::int64_t integer(const std::string& name) const;
  /// \brief An integer option whose default depends on the model.
  std::int64_t integer(const std::string& name, std::int64_t fallback) const;
  /// \brief A number option, finite and range-checked.
  double number(const std::string& name) const;
  /// \brief A number option whose default depends on the model.
  double number(const std::string& name, double fallback) const;
  /// \brief A choice option, checked against its choices.
  std::string choice(const std::string& name) const;
  /// \brief A choice option whose default depends on the model.
  std::string choice(const std::string& name, const std::string& fallback) const;
  /// \brief Comma-separated token ids ("1,2,3"); ids.size() is at least 1.
  std::vector<std::int32_t> ids(const std::string& name) const;

  /// \brief Checks every given value against its table entry (type, range, choices), so that a
  /// wrong value is reported before any file is read or memory allocated.
  void validate() const;

  /// \brief Throws the usage error "<spelled name> <what>".
  [[noreturn]] void reject(const std::string& name, const std::string& what) const;

 private:
  const option_spec& spec(const std::string& name) const;
  std::int64_t parse_integer(const option_spec& s, const std::string& v) const;
  double parse_number(const option_spec& s, const std::string& v) const;

  operation op_;
  std::string prefix_;
  char dash_;
  std::map<std::string, std::string> given_;
};

/// \brief "1,2,3" → {1, 2, 3}; `what` names the option in errors (usage errors).
std::vector<std::int32_t> parse_id_list(const std::string& s, const std::string& what);

}  // namespace muninn::frontend
