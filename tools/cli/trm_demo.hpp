#pragma once
// `muninn demo --model DIR` on a TRM run folder (all_config.yaml + step_N, e.g. the shipped
// examples/models/trm_sudoku): exact-puzzle accuracy on the held-out split after S = 1, 2, 4, 8, 16
// supervision steps and with the learned Q-halt, one line each.

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "muninn/families/trm/model.hpp"
#include "muninn/families/trm/puzzle_dataset.hpp"
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

// True when every counted cell of one sample's logits [L, V] arg-maxes to its label.
inline bool trm_demo_solved(const float* logits, const std::vector<std::int32_t>& labels, std::int64_t V,
                            const std::optional<std::int64_t>& ignore) {
  const std::vector<std::int32_t> pred = trm_argmax(logits, std::int64_t(labels.size()), V);
  for (std::size_t k = 0; k < labels.size(); ++k)
    if (!(ignore && labels[k] == *ignore) && pred[k] != labels[k]) return false;
  return true;
}

// Every puzzle (at most `limit`) in batches: `fixed[i]` scores the predictions after step
// checkpoints[i] of one run of the deepest checkpoint (a step never depends on later ones, so
// that is the run stopped there); `q` scores the run under the Q-halt rule.
template <class Model>
void trm_demo_scores(Model& m, const io::puzzle_dataset& d, std::int64_t limit, const std::vector<std::int64_t>& checkpoints,
                     std::vector<trm_demo_score>& fixed, trm_demo_score& q) {
  const std::int64_t L = m.config().seq_len, V = m.config().vocab_size, n = std::min(limit, d.num_examples());
  const auto ignore = d.metadata().ignore_label_id;
  fixed.assign(checkpoints.size(), {});
  for (std::int64_t e0 = 0; e0 < n; e0 += 64) {
    const std::int64_t e1 = std::min(n, e0 + 64);
    std::vector<std::int32_t> inputs, ids;
    std::vector<std::vector<std::int32_t>> labels;
    for (std::int64_t e = e0; e < e1; ++e) {
      const auto in = d.inputs(e);
      inputs.insert(inputs.end(), in.begin(), in.end());
      ids.push_back(d.puzzle_identifier(e));
      labels.push_back(d.labels(e));
    }
    const auto score = [&](std::int64_t step, const std::vector<std::int64_t>& samples, const trm_step_output& o) {
      for (std::size_t c = 0; c < checkpoints.size(); ++c)
        if (checkpoints[c] == step)
          for (std::size_t i = 0; i < samples.size(); ++i) {
            fixed[c].puzzles += 1;
            fixed[c].exact += trm_demo_solved(o.logits.data() + std::int64_t(i) * L * V,
                                              labels[std::size_t(samples[i])], V, ignore);
          }
    };
    m.solve(inputs, ids, trm_halting::fixed{checkpoints.back()}, score);
    const trm_result r = m.solve(inputs, ids, trm_halting::q_halt{checkpoints.back()});
    for (std::int64_t b = 0; b < e1 - e0; ++b) {
      q.puzzles += 1;
      q.exact += trm_demo_solved(r.logits.data() + b * L * V, labels[std::size_t(b)], V, ignore);
      q.steps += r.steps[std::size_t(b)];
    }
  }
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
  const std::vector<std::int64_t> checkpoints = {1, 2, 4, 8, 16};
  std::vector<detail::trm_demo_score> fixed;
  detail::trm_demo_score q;
  detail::trm_demo_scores(m, d, limit, checkpoints, fixed, q);
  char line[128];
  for (std::size_t c = 0; c < checkpoints.size(); ++c) {
    std::snprintf(line, sizeof line, "steps=%lld accuracy=%.4f\n", (long long)checkpoints[c],
                  double(fixed[c].exact) / double(fixed[c].puzzles));
    std::cout << line;
  }
  std::snprintf(line, sizeof line, "steps=auto accuracy=%.4f mean_steps=%.4f\n", double(q.exact) / double(q.puzzles),
                double(q.steps) / double(q.puzzles));
  std::cout << line;
  return 0;
}

}  // namespace muninn::cli
