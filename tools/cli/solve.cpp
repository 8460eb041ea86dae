// `muninn solve`: a TRM / HRM run on a puzzle dataset's test split, with the reference's fixed
// number of supervision steps or learned (Q) halting; exact and token accuracy, mean steps and
// time per puzzle, and with --show the grids before and after.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli_common.hpp"
#include "muninn/families/trm/puzzle_dataset.hpp"
#include "progress.hpp"
#include "solve.hpp"

namespace muninn::cli {
namespace fe = muninn::frontend;

std::string solve_split_dir(const std::string& data, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(data, ec);
  if (!fs::exists(st)) fail_as(error_kind::usage, flag, ": '", data, "' does not exist");
  if (!fs::is_directory(st))
    fail_as(error_kind::usage, flag, ": '", data, "' is a file; give the dataset's folder (holding test/) or a split folder");
  if (fs::exists(fs::path(data) / "dataset.json", ec)) return data;
  const fs::path test = fs::path(data) / "test";
  if (!fs::exists(test / "dataset.json", ec))
    fail_as(error_kind::usage, flag, ": '", data,
            "' is neither a split folder (with dataset.json) nor a dataset folder with test/dataset.json");
  return test.string();
}

void check_dataset_fits(const io::puzzle_dataset& d, const fe::trm_extras& m) {
  const std::string f = d.dir() + "/dataset.json";
  const io::puzzle_metadata& md = d.metadata();
  if (md.seq_len != m.seq_len())
    fail_as(error_kind::config, f, ": seq_len ", md.seq_len, " but the model's puzzles have seq_len ", m.seq_len(), " (",
            m.config_source(), ")");
  if (md.vocab_size > m.vocab_size())
    fail_as(error_kind::config, f, ": vocab_size ", md.vocab_size, " exceeds the model's vocabulary of ", m.vocab_size(),
            " tokens (", m.config_source(), ")");
  if (md.num_puzzle_identifiers > m.puzzle_identifiers())
    fail_as(error_kind::config, f, ": num_puzzle_identifiers ", md.num_puzzle_identifiers,
            " exceeds the model's puzzle table of ", m.puzzle_identifiers(), " rows (", m.config_source(), ")");
}

puzzle_batch read_batch(const io::puzzle_dataset& d, std::int64_t e0, std::int64_t e1) {
  puzzle_batch b;
  for (std::int64_t e = e0; e < e1; ++e) {
    const auto in = d.inputs(e);
    b.inputs.insert(b.inputs.end(), in.begin(), in.end());
    b.labels.push_back(d.labels(e));
    b.ids.push_back(d.puzzle_identifier(e));
  }
  return b;
}

namespace {

// One cell of a grid: Sudoku digits ('.' blank), maze characters, else the token in base 36.
char solve_cell(std::int32_t t, std::int64_t side, std::int64_t vocab) {
  if (t < 0) return ' ';
  if (vocab == side + 2 && side <= 9) return t == 0 ? ' ' : t == 1 ? '.' : char('0' + t - 1);  // Sudoku
  if (vocab == 6 && side > 9) return "?# SGo"[t % 6];                                              // maze
  return "0123456789abcdefghijklmnopqrstuvwxyz"[t % 36];
}

// Input, prediction and label grids side by side (a row of tokens when seq_len is not square).
void show_grids(std::ostream& os, const std::vector<std::int32_t>& in, const std::int32_t* pred,
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

struct solve_totals {
  std::int64_t puzzles = 0, exact = 0, correct_tokens = 0, valid_tokens = 0, steps = 0;
};

}  // namespace

fe::trm_halt_choice halt_choice(const frontend::option_values& o, bool learned, std::int64_t max_steps) {
  fe::trm_halt_choice h;
  h.learned = learned;
  h.max_steps = max_steps;
  if (o.has("halt-threshold")) {
    h.use_threshold = true;
    h.threshold = o.number("halt-threshold", 0.0);
  }
  return h;
}

int cmd_solve(const parsed& p) {
  const auto model = open_model(p);
  fe::trm_extras& m = *model->trm();
  const io::puzzle_dataset d = io::puzzle_dataset::open(solve_split_dir(p.options.text("data"), "--data"));
  check_dataset_fits(d, m);
  const fe::option_values& o = p.options;
  const bool q = o.choice("halt") == "q";
  if (o.has("halt-threshold") && !q)
    fail_as(error_kind::usage, "--halt-threshold needs --halt q (fixed halting runs every step)");
  const std::int64_t max_steps = o.integer("max-steps", m.halt_max_steps());
  const std::int64_t n = std::min(d.num_examples(), o.integer("limit", d.num_examples()));
  const std::int64_t batch = o.integer("batch");
  const bool show = o.flag("show");
  const std::int64_t L = m.seq_len();
  const std::optional<std::int64_t> ignore = d.metadata().ignore_label_id;
  const fe::trm_halt_choice halt = halt_choice(o, q, max_steps);
  std::cout << "model: " << m.describe() << "\nhalting: "
            << (q ? std::string("q (") +
                        (halt.use_threshold ? "q_halt > " + o.text("halt-threshold", "") : m.halt_rule_name()) +
                        "), at most "
                  : std::string("fixed, "))
            << max_steps << " steps\n";
  solve_totals t;
  const progress_bar bar("solve");
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t e0 = 0; e0 < n; e0 += batch) {
    const std::int64_t e1 = std::min(n, e0 + batch);
    const puzzle_batch pb = read_batch(d, e0, e1);
    const fe::trm_solution r = m.solve(pb.inputs, pb.ids, halt);
    for (std::int64_t b = 0; b < e1 - e0; ++b) {
      std::int64_t correct = 0, valid = 0;
      for (std::int64_t k = 0; k < L; ++k) {
        const std::int32_t lab = pb.labels[std::size_t(b)][std::size_t(k)];
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
        const std::vector<std::int32_t> in(pb.inputs.begin() + b * L, pb.inputs.begin() + (b + 1) * L);
        std::vector<std::int32_t> lab = pb.labels[std::size_t(b)];
        if (ignore)
          for (auto& v : lab) v = v == *ignore ? -1 : v;
        show_grids(std::cout, in, r.preds.data() + b * L, lab, m.vocab_size());
      }
    }
    bar.update(e1, n);
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
