#pragma once
// `muninn solve`: a TRM / HRM run on a puzzle dataset's test split, with the reference's fixed
// number of supervision steps or learned (Q) halting; exact and token accuracy, mean steps and
// time per puzzle, and with --show the grids before and after.

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "muninn/families/trm/model.hpp"
#include "muninn/families/trm/puzzle_dataset.hpp"

namespace muninn::cli {

/// \brief The split `--data` names: a split folder (holding dataset.json) or a dataset folder
/// holding `test/`.
inline std::string solve_split_dir(const std::string& data) {
  namespace fs = std::filesystem;
  std::error_code ec;
  MUNINN_CHECK(fs::exists(data, ec), "data directory '", data, "' does not exist");
  if (fs::exists(fs::path(data) / "dataset.json", ec)) return data;
  const fs::path test = fs::path(data) / "test";
  MUNINN_CHECK(fs::exists(test / "dataset.json", ec), "'", data,
               "' is neither a split folder (with dataset.json) nor a dataset folder with test/dataset.json");
  return test.string();
}

/// \brief The dataset must fit the model: same seq_len, tokens and identifiers within its tables.
inline void check_dataset_fits(const io::puzzle_dataset& d, const trm_config& c) {
  const std::string f = d.dir() + "/dataset.json";
  const io::puzzle_metadata& m = d.metadata();
  MUNINN_CHECK(m.seq_len == c.seq_len, f, ": seq_len ", m.seq_len, " but the model's puzzles have seq_len ", c.seq_len,
               " (", c.sizes_source, ")");
  MUNINN_CHECK(m.vocab_size <= c.vocab_size, f, ": vocab_size ", m.vocab_size, " exceeds the model's vocabulary of ",
               c.vocab_size, " tokens (", c.sizes_source, ")");
  MUNINN_CHECK(m.num_puzzle_identifiers <= c.num_puzzle_identifiers, f, ": num_puzzle_identifiers ",
               m.num_puzzle_identifiers, " exceeds the model's puzzle table of ", c.num_puzzle_identifiers, " rows (",
               c.sizes_source, ")");
}

/// \brief One cell of a grid: Sudoku digits ('.' blank), maze characters, else the token in hex.
inline char solve_cell(std::int32_t t, std::int64_t side, std::int64_t vocab) {
  if (t < 0) return ' ';
  if (vocab == side + 2 && side <= 9) return t == 0 ? ' ' : t == 1 ? '.' : char('0' + t - 1);  // Sudoku
  if (vocab == 6 && side > 9) return "?# SGo"[t % 6];                                              // maze
  return "0123456789abcdefghijklmnopqrstuvwxyz"[t % 36];
}

/// \brief Input, prediction and label grids side by side (a row of tokens when seq_len is not square).
inline void show_grids(std::ostream& os, const std::vector<std::int32_t>& in, const std::int32_t* pred,
                       const std::vector<std::int32_t>& label, std::int64_t vocab) {
  const auto L = std::int64_t(in.size());
  auto side = std::int64_t(std::llround(std::sqrt(double(L))));
  if (side * side != L) side = L;
  const std::int64_t rows = L / side;
  const std::string pad(std::size_t(std::max<std::int64_t>(0, side - 5)), ' ');
  os << "input" << pad << "   prediction" << std::string(std::size_t(std::max<std::int64_t>(0, side - 10)), ' ')
     << "   label\n";
  for (std::int64_t r = 0; r < rows; ++r) {
    std::string line;
    for (const std::int32_t* g : {in.data(), pred, label.data()}) {
      for (std::int64_t k = 0; k < side; ++k) line += solve_cell(g[r * side + k], side, vocab);
      line += "   ";
    }
    os << line.substr(0, line.size() - 3) << "\n";
  }
}

/// \brief Counts of a solve run.
struct solve_totals {
  std::int64_t puzzles = 0, exact = 0, correct_tokens = 0, valid_tokens = 0, steps = 0;
};

template <class Model>
int run_solve(Model& m, const args& a) {
  const trm_config& c = m.config();
  const io::puzzle_dataset d = io::puzzle_dataset::open(solve_split_dir(a.require("--data")));
  check_dataset_fits(d, c);
  const std::string halt = a.get("--halt", "fixed");
  MUNINN_CHECK(halt == "fixed" || halt == "q", "--halt must be q or fixed, got '", halt, "'");
  const std::int64_t max_steps = a.get_int_min("--max-steps", c.halt_max_steps, 1);
  const std::int64_t n = std::min(d.num_examples(), a.get_int_min("--limit", d.num_examples(), 1));
  const std::int64_t batch = a.get_int_min("--batch", 64, 1);
  const bool show = a.has("--show"), progress = isatty(STDERR_FILENO) == 1;
  const std::int64_t L = c.seq_len;
  std::optional<std::int64_t> ignore = d.metadata().ignore_label_id;

  std::cout << "model: " << trm_arch_name(c.arch) << (c.arch == trm_arch::hrm ? "" : c.mlp_t ? " (mlp_t)" : " (attention)")
            << ", " << m.parameter_count() << " parameters, checkpoint " << std::filesystem::path(m.step_file()).filename().string()
            << "\nhalting: " << (halt == "q" ? std::string("q (") + trm_halt_rule_name(c.halt_rule()) + "), at most " : "fixed, ")
            << max_steps << " steps\n";
  solve_totals t;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t e0 = 0; e0 < n; e0 += batch) {
    const std::int64_t e1 = std::min(n, e0 + batch);
    std::vector<std::int32_t> inputs, ids;
    std::vector<std::vector<std::int32_t>> labels;
    for (std::int64_t e = e0; e < e1; ++e) {
      const auto in = d.inputs(e);
      inputs.insert(inputs.end(), in.begin(), in.end());
      labels.push_back(d.labels(e));
      ids.push_back(d.puzzle_identifier(e));
    }
    const trm_result r = halt == "q" ? m.solve(inputs, ids, trm_halting::q_halt{max_steps})
                                     : m.solve(inputs, ids, trm_halting::fixed{max_steps});
    for (std::int64_t b = 0; b < e1 - e0; ++b) {
      std::int64_t correct = 0, valid = 0;
      for (std::int64_t k = 0; k < L; ++k) {
        const std::int32_t lab = labels[std::size_t(b)][std::size_t(k)];
        if (ignore && lab == *ignore) continue;
        ++valid;
        correct += r.preds[std::size_t(b * L + k)] == lab;
      }
      t.puzzles += 1;
      t.exact += correct == valid;
      t.correct_tokens += correct;
      t.valid_tokens += valid;
      t.steps += r.steps[std::size_t(b)];
      if (show) {
        std::cout << "\npuzzle " << e0 + b << ": " << r.steps[std::size_t(b)] << " steps, "
                  << (correct == valid ? "solved" : "not solved") << " (" << correct << "/" << valid << " tokens)\n";
        const std::vector<std::int32_t> in(inputs.begin() + b * L, inputs.begin() + (b + 1) * L);
        std::vector<std::int32_t> lab = labels[std::size_t(b)];
        if (ignore)
          for (auto& v : lab) v = v == *ignore ? -1 : v;
        show_grids(std::cout, in, r.preds.data() + b * L, lab, c.vocab_size);
      }
    }
    if (progress) {
      const int width = 30, done = int(width * e1 / n);
      std::fprintf(stderr, "\rsolve [%s%s] %lld/%lld", std::string(std::size_t(done), '#').c_str(),
                   std::string(std::size_t(width - done), '.').c_str(), (long long)e1, (long long)n);
      if (e1 == n) std::fprintf(stderr, "\n");
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char line[256];
  std::snprintf(line, sizeof line, "puzzles=%lld exact_accuracy=%.4f token_accuracy=%.4f (%lld/%lld tokens) mean_steps=%.2f\n",
                (long long)t.puzzles, double(t.exact) / double(t.puzzles),
                t.valid_tokens ? double(t.correct_tokens) / double(t.valid_tokens) : 0.0, (long long)t.correct_tokens,
                (long long)t.valid_tokens, double(t.steps) / double(t.puzzles));
  std::cout << (show ? "\n" : "") << line;
  std::snprintf(line, sizeof line, "time: %.3f ms per puzzle (%.3f s in all)\n", 1e3 * secs / double(t.puzzles), secs);
  std::cout << line;
  return 0;
}

}  // namespace muninn::cli
