#pragma once
// What `muninn solve` and the TRM demo share: the split a --data folder names, the check that it
// fits the model, batches of puzzles and the halting choice.

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/frontend/model.hpp"
#include "muninn/families/trm/puzzle_dataset.hpp"

namespace muninn::cli {

/// \brief The split a data folder names: a split folder (holding dataset.json) or a dataset
/// folder holding test/ (usage errors name `flag`).
std::string solve_split_dir(const std::string& data, const std::string& flag);

/// \brief The dataset must fit the model: same seq_len, tokens and identifiers within its tables.
void check_dataset_fits(const io::puzzle_dataset& d, const frontend::trm_extras& m);

/// \brief Examples [e0, e1) of a split: inputs [n, seq_len], labels, puzzle identifiers.
struct puzzle_batch {
  std::vector<std::int32_t> inputs;
  std::vector<std::vector<std::int32_t>> labels;
  std::vector<std::int32_t> ids;
};
puzzle_batch read_batch(const io::puzzle_dataset& d, std::int64_t e0, std::int64_t e1);

/// \brief Fixed or learned halting at most `max_steps`, with --halt-threshold when given.
frontend::trm_halt_choice halt_choice(const frontend::option_values& o, bool learned, std::int64_t max_steps);

}  // namespace muninn::cli
