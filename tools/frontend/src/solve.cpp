// Puzzles through a TRM / HRM model: data folders, batches, the halting choice and the scores.

#include "muninn/frontend/solve.hpp"

#include <algorithm>
#include <filesystem>

#include "muninn/families/trm/puzzle_dataset.hpp"

namespace muninn::frontend {

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

void check_dataset_fits(const io::puzzle_dataset& d, const trm_extras& m) {
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

trm_halt_choice halt_choice(const option_values& o, bool learned, std::int64_t max_steps) {
  trm_halt_choice h;
  h.learned = learned;
  h.max_steps = max_steps;
  if (o.has("halt-threshold")) {
    h.use_threshold = true;
    h.threshold = o.number("halt-threshold", 0.0);
  }
  return h;
}

puzzle_score score_puzzle(const std::int32_t* pred, const std::vector<std::int32_t>& labels,
                          const std::optional<std::int64_t>& ignore) {
  puzzle_score s;
  for (std::size_t k = 0; k < labels.size(); ++k) {
    if (ignore && labels[k] == *ignore) continue;
    ++s.valid;
    s.correct += pred[k] == labels[k];
  }
  return s;
}

solve_plan plan_solve(const trm_extras& m, const option_values& o, std::int64_t available) {
  solve_plan p;
  const bool q = o.choice("halt") == "q";
  if (o.has("halt-threshold") && !q)
    fail_as(error_kind::usage, o.spelled("halt-threshold"), " needs ", o.spelled("halt"),
            " q (fixed halting runs every step)");
  p.max_steps = o.integer("max-steps", m.halt_max_steps());
  p.puzzles = std::min(available, o.integer("limit", available));
  p.batch = o.integer("batch");
  p.halt = halt_choice(o, q, p.max_steps);
  p.halting = q ? "q (" + (p.halt.use_threshold ? "q_halt > " + o.text("halt-threshold", "") : m.halt_rule_name()) +
                      "), at most " + std::to_string(p.max_steps) + " steps"
                : "fixed, " + std::to_string(p.max_steps) + " steps";
  return p;
}

solve_report run_solve(trm_extras& m, const solve_plan& plan, const batch_source& source,
                       const std::optional<std::int64_t>& ignore, const solve_batch_fn& on_batch,
                       const solve_step_fn& on_step, const tap_options& taps) {
  solve_report r;
  const std::int64_t L = m.seq_len();
  for (std::int64_t e0 = 0; e0 < plan.puzzles; e0 += plan.batch) {
    const std::int64_t e1 = std::min(plan.puzzles, e0 + plan.batch);
    const puzzle_batch b = source(e0, e1);
    std::function<void(const trm_step_view&)> step;
    if (on_step) step = [&](const trm_step_view& v) { on_step(e0, v); };
    tap_options batch_taps;
    if (taps.on_tap) {  // batch indices → indices in the set
      batch_taps.names = taps.names;
      batch_taps.on_tap = [&](const tap_event& e) {
        std::vector<std::int64_t> seq(std::size_t(e.rows));
        for (std::int64_t i = 0; i < e.rows; ++i) seq[std::size_t(i)] = e0 + (e.sequences ? e.sequences[i] : 0);
        tap_event moved = e;
        moved.sequences = seq.data();
        taps.on_tap(moved);
      };
    }
    const trm_solution s = m.solve(b.inputs, b.ids, plan.halt, step, batch_taps);
    for (std::int64_t i = 0; i < e1 - e0; ++i) {
      const std::int32_t* pred = s.preds.data() + i * L;
      const puzzle_score score = score_puzzle(pred, b.labels[std::size_t(i)], ignore);
      r.puzzles += 1;
      r.exact += !b.labels[std::size_t(i)].empty() && score.exact();
      r.correct_tokens += score.correct;
      r.valid_tokens += score.valid;
      r.steps += s.steps[std::size_t(i)];
      r.puzzle_steps.push_back(s.steps[std::size_t(i)]);
      r.preds.insert(r.preds.end(), pred, pred + L);
      r.scores.push_back(score);
    }
    if (on_batch && !on_batch(e0, b, s)) {
      r.cancelled = true;
      break;
    }
  }
  return r;
}

}  // namespace muninn::frontend
