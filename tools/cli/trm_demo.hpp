#pragma once
// `muninn demo --model DIR` on a TRM run folder (all_config.yaml + step_N, e.g. the shipped
// examples/models/trm_sudoku): exact-puzzle accuracy on the held-out split after S = 1, 2, 4, 8, 16
// supervision steps and with the learned Q-halt, one line each.

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "muninn/families/trm/model.hpp"
#include "muninn/io/puzzle_dataset.hpp"
#include "solve.hpp"

namespace muninn::cli {

/// \brief True for a TRM / HRM run folder: it holds the run's all_config.yaml.
inline bool is_trm_run(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(dir) / "all_config.yaml", ec);
}

namespace detail {

// The run's dataset folder: the YAML's data path found as the loader finds it (from the run
// folder up through its parents).
inline std::string trm_run_dataset(const std::string& dir) {
  const std::vector<std::string> paths = io::trm_data_paths_from_yaml(dir + "/all_config.yaml");
  std::error_code ec;
  for (const auto& c : io::detail::trm_dataset_json_candidates(dir, paths, ""))
    if (std::filesystem::is_regular_file(c, ec)) return c.parent_path().parent_path().string();
  fail(dir, "/all_config.yaml: its dataset (data_paths / data_path) was not found from '", dir, "' up");
}

struct trm_demo_score {
  std::int64_t puzzles = 0, exact = 0, steps = 0;
};

// Every puzzle of `d` (at most `limit`) under `halting`, in batches.
template <class Model, class Halting>
trm_demo_score trm_demo_run(Model& m, const io::puzzle_dataset& d, std::int64_t limit, const Halting& halting) {
  const std::int64_t L = m.config().seq_len, n = std::min(limit, d.num_examples()), batch = 64;
  const auto ignore = d.metadata().ignore_label_id;
  trm_demo_score s;
  for (std::int64_t e0 = 0; e0 < n; e0 += batch) {
    const std::int64_t e1 = std::min(n, e0 + batch);
    std::vector<std::int32_t> inputs, ids;
    for (std::int64_t e = e0; e < e1; ++e) {
      const auto in = d.inputs(e);
      inputs.insert(inputs.end(), in.begin(), in.end());
      ids.push_back(d.puzzle_identifier(e));
    }
    const trm_result r = m.solve(inputs, ids, halting);
    for (std::int64_t b = 0; b < e1 - e0; ++b) {
      const auto lab = d.labels(e0 + b);
      bool all = true;
      for (std::int64_t k = 0; k < L; ++k)
        if (!(ignore && lab[std::size_t(k)] == *ignore)) all = all && r.preds[std::size_t(b * L + k)] == lab[std::size_t(k)];
      s.puzzles += 1;
      s.exact += all;
      s.steps += r.steps[std::size_t(b)];
    }
  }
  return s;
}

}  // namespace detail

/// \brief The TRM demo: prints `steps=S accuracy=A` for S = 1, 2, 4, 8, 16, then
/// `steps=auto accuracy=A mean_steps=M` with the run's Q-halt rule (at most 16 steps).
inline int run_trm_demo(const std::string& dir, const args& a) {
  auto m = trm_model<host_backend, float>::load(dir);
  const io::puzzle_dataset d = io::puzzle_dataset::open(solve_split_dir(detail::trm_run_dataset(dir)));
  check_dataset_fits(d, m.config());
  const std::int64_t limit = a.get_int_min("--problems", d.num_examples(), 1);
  std::cout << "task: " << d.num_examples() << " held-out puzzles of " << d.dir() << " (seq_len " << d.seq_len()
            << "); a puzzle counts when every cell is right\n";
  char line[128];
  for (const std::int64_t steps : {1, 2, 4, 8, 16}) {
    const auto s = detail::trm_demo_run(m, d, limit, trm_halting::fixed{steps});
    std::snprintf(line, sizeof line, "steps=%lld accuracy=%.3f\n", (long long)steps, double(s.exact) / double(s.puzzles));
    std::cout << line << std::flush;
  }
  const auto q = detail::trm_demo_run(m, d, limit, trm_halting::q_halt{16});
  std::snprintf(line, sizeof line, "steps=auto accuracy=%.3f mean_steps=%.2f\n", double(q.exact) / double(q.puzzles),
                double(q.steps) / double(q.puzzles));
  std::cout << line;
  return 0;
}

}  // namespace muninn::cli
