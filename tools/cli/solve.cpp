// `muninn solve`: a TRM / HRM run on a puzzle dataset's test split, with the reference's fixed
// number of supervision steps or learned (Q) halting; exact and token accuracy, mean steps and
// time per puzzle, and with --show the grids before and after.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli_common.hpp"
#include "muninn/families/trm/puzzle_dataset.hpp"
#include "muninn/frontend/solve.hpp"
#include "muninn/frontend/tap_dump.hpp"
#include "progress.hpp"

namespace muninn::cli {
namespace fe = muninn::frontend;

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

}  // namespace

int cmd_solve(const parsed& p) {
  const auto model = open_model(p);
  fe::trm_extras& m = *model->trm();
  const io::puzzle_dataset d = io::puzzle_dataset::open(fe::solve_split_dir(p.options.text("data"), "--data"));
  fe::check_dataset_fits(d, m);
  const fe::solve_plan plan = fe::plan_solve(m, p.options, d.num_examples());
  const bool show = p.options.flag("show");
  const std::int64_t L = m.seq_len();
  const std::optional<std::int64_t> ignore = d.metadata().ignore_label_id;
  std::cout << "model: " << m.describe() << "\nhalting: " << plan.halting << "\n";
  // --dump: each supervision step's logits [rows, seq_len, vocab], q_halt and q_continue [rows], rows being
  // the puzzles still running (their indices are the files' positions), and the streams after each
  // update within the step, z_L.cycle.T.J and z_H.cycle.T [rows, prefix + seq_len, hidden].
  std::optional<fe::tap_dump> dump;
  fe::solve_step_fn on_step;
  tap_options stream_taps;
  if (fe::wants_dump(p.options)) {
    std::vector<std::string> available{"logits", "q_halt", "q_continue"};
    const std::vector<std::string> streams = m.stream_taps();
    available.insert(available.end(), streams.begin(), streams.end());
    dump.emplace(p.options, available);
    const std::vector<std::string> names = fe::tap_selection(p.options, available);
    const auto wanted = [names](const char* n) { return names.empty() || std::find(names.begin(), names.end(), n) != names.end(); };
    // The stream taps go to the model's callback only when some are selected: "z_L", "z_H.cycle.1", ...
    std::vector<std::string> stream_names;
    for (const auto& n : names)
      if (n.compare(0, 2, "z_") == 0) stream_names.push_back(n);
    if (names.empty() || !stream_names.empty()) {
      stream_taps.names = stream_names;
      stream_taps.on_tap = [&](const tap_event& e) {
        // Rows b·S + p of the event are position p of puzzle sequences[b·S]: one [rows, S, D] array.
        std::int64_t S = 0;
        for (std::int64_t i = 0; i < e.rows; ++i) S = std::max(S, e.positions[i] + 1);
        std::vector<std::int64_t> idx;
        for (std::int64_t r = 0; r < e.rows; r += S) idx.push_back(e.sequences[r]);
        dump->write(std::string(e.name), e.step, {std::int64_t(idx.size()), S, e.cols}, e.data, idx.data());
      };
    }
    on_step = [&, wanted](std::int64_t e0, const fe::trm_step_view& v) {
      const std::int64_t rows = std::int64_t(v.samples->size());
      std::vector<std::int64_t> idx;
      for (std::int64_t s : *v.samples) idx.push_back(e0 + s);
      if (wanted("logits")) dump->write("logits", v.step - 1, {rows, L, m.vocab_size()}, v.logits->data(), idx.data());
      if (wanted("q_halt")) dump->write("q_halt", v.step - 1, {rows}, v.q_halt->data(), idx.data());
      if (wanted("q_continue") && v.q_continue && !v.q_continue->empty())
        dump->write("q_continue", v.step - 1, {rows}, v.q_continue->data(), idx.data());
    };
  }
  const progress_bar bar("solve");
  const auto t0 = std::chrono::steady_clock::now();
  const fe::solve_report t = fe::run_solve(
      m, plan, [&](std::int64_t e0, std::int64_t e1) { return fe::read_batch(d, e0, e1); }, ignore,
      [&](std::int64_t e0, const fe::puzzle_batch& pb, const fe::trm_solution& r) {
        for (std::size_t b = 0; show && b < pb.ids.size(); ++b) {
          const fe::puzzle_score s = fe::score_puzzle(r.preds.data() + std::int64_t(b) * L, pb.labels[b], ignore);
          std::cout << "\npuzzle " << e0 + std::int64_t(b) << ": " << r.steps[b] << " steps, "
                    << (s.exact() ? "solved" : "not solved") << " (" << s.correct << "/" << s.valid << " tokens)\n";
          const std::vector<std::int32_t> in(pb.inputs.begin() + std::int64_t(b) * L,
                                             pb.inputs.begin() + std::int64_t(b + 1) * L);
          std::vector<std::int32_t> lab = pb.labels[b];
          if (ignore)
            for (auto& v : lab) v = v == *ignore ? -1 : v;
          show_grids(std::cout, in, r.preds.data() + std::int64_t(b) * L, lab, m.vocab_size());
        }
        bar.update(e0 + std::int64_t(pb.ids.size()), plan.puzzles);
        return true;
      },
      on_step, stream_taps);
  if (dump) std::cerr << "muninn: " << dump->finish() << "\n";
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
