#pragma once
/// \file
/// \brief Puzzles through a TRM / HRM model as `muninn solve` runs them, for every front end: the
/// split a data folder names, the check that a dataset fits the model, batches of puzzles, the
/// halting choice from the options of operation::solve, and the scores (exact puzzles, token
/// accuracy over every label but ignore_label_id, steps per puzzle).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "muninn/frontend/model.hpp"
#include "muninn/frontend/options.hpp"

namespace muninn::io {
class puzzle_dataset;
}

namespace muninn::frontend {

/// \brief The split a data folder names: a split folder (holding dataset.json) or a dataset
/// folder holding test/ (usage errors name `flag`).
std::string solve_split_dir(const std::string& data, const std::string& flag);

/// \brief The dataset must fit the model: same seq_len, tokens and identifiers within its tables
/// (config errors naming dataset.json).
void check_dataset_fits(const io::puzzle_dataset& d, const trm_extras& m);

/// \brief Puzzles [e0, e1) of a set: inputs [n, seq_len], labels (one row per puzzle; empty
/// rows when the set has none), puzzle identifiers [n].
struct puzzle_batch {
  std::vector<std::int32_t> inputs;
  std::vector<std::vector<std::int32_t>> labels;
  std::vector<std::int32_t> ids;
};

/// \brief Examples [e0, e1) of a dataset split.
puzzle_batch read_batch(const io::puzzle_dataset& d, std::int64_t e0, std::int64_t e1);

/// \brief Fixed or learned halting at most `max_steps`, with `halt-threshold` when given.
trm_halt_choice halt_choice(const option_values& o, bool learned, std::int64_t max_steps);

/// \brief One puzzle's prediction against its labels: `correct` of `valid` labels (those that
/// are not `ignore`).
struct puzzle_score {
  std::int64_t correct = 0;
  std::int64_t valid = 0;
  bool exact() const { return correct == valid; }
};
puzzle_score score_puzzle(const std::int32_t* pred, const std::vector<std::int32_t>& labels,
                          const std::optional<std::int64_t>& ignore);

/// \brief A solve as the options of operation::solve ask for it (`max-steps`, `halt`,
/// `halt-threshold`, `limit`, `batch`), checked against the model and the set's size.
struct solve_plan {
  trm_halt_choice halt;
  std::int64_t max_steps = 0;  ///< supervision steps (fixed) or at most (q)
  std::int64_t puzzles = 0;    ///< the first `puzzles` of the set
  std::int64_t batch = 0;      ///< puzzles per model call
  std::string halting;         ///< "fixed, 16 steps" or "q (q_halt > 0), at most 16 steps"
};
solve_plan plan_solve(const trm_extras& m, const option_values& o, std::int64_t available);

/// \brief What a solve produced: totals and, per puzzle, steps, prediction and score.
struct solve_report {
  std::int64_t puzzles = 0, exact = 0, correct_tokens = 0, valid_tokens = 0, steps = 0;
  std::vector<std::int32_t> puzzle_steps;  ///< [puzzles]
  std::vector<std::int32_t> preds;         ///< [puzzles, seq_len]
  std::vector<puzzle_score> scores;        ///< [puzzles]; all zero when the set has no labels
  bool cancelled = false;                  ///< on_batch asked to stop
};

/// \brief Puzzles [e0, e1) of a set.
using batch_source = std::function<puzzle_batch(std::int64_t e0, std::int64_t e1)>;
/// \brief Called after each batch with its first index, the batch and the model's solution;
/// false stops the solve there (report.cancelled).
using solve_batch_fn = std::function<bool(std::int64_t e0, const puzzle_batch& b, const trm_solution& s)>;

/// \brief Called after every supervision step of a batch with the batch's first index and the
/// step's outputs (the taps of a solve).
using solve_step_fn = std::function<void(std::int64_t e0, const trm_step_view& v)>;

/// \brief Runs `plan` over puzzles from `source` (labels equal to `ignore` do not count);
/// `on_step` sees every supervision step when set; `taps` the streams within each step
/// (trm_extras::stream_taps), their tap_event::sequences being each row's puzzle index in the
/// set (the batch's first index added).
solve_report run_solve(trm_extras& m, const solve_plan& plan, const batch_source& source,
                       const std::optional<std::int64_t>& ignore, const solve_batch_fn& on_batch = {},
                       const solve_step_fn& on_step = {}, const tap_options& taps = {});

}  // namespace muninn::frontend
