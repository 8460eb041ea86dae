#pragma once
// `muninn demo`: test-time scaling on the embedded model. Evaluates held-out problems at several
// recurrence depths and with the KL exit criterion, then draws a text bar chart.

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli_args.hpp"
#include "muninn/io/json.hpp"
#include "muninn/muninn.hpp"
#include "specs.hpp"
#include "trm_demo.hpp"

namespace muninn::cli {

/// \brief One held-out problem of the demo set.
struct demo_problem {
  std::vector<std::int32_t> prompt;
  std::vector<std::int32_t> answer;
};

/// \brief Where the demo model is: --model, else ./examples/models/demo, else the source tree's, else the install's.
inline std::string find_demo_model(const args& a) {
  if (a.has("--model")) return a.get("--model");
  std::vector<std::string> candidates = {"examples/models/demo"};
#ifdef MUNINN_SOURCE_DIR
  candidates.push_back(std::string(MUNINN_SOURCE_DIR) + "/examples/models/demo");
#endif
#ifdef MUNINN_INSTALL_DATADIR
  candidates.push_back(std::string(MUNINN_INSTALL_DATADIR) + "/models/demo");
#endif
  for (const auto& c : candidates)
    if (std::filesystem::exists(c + "/demo.json")) return c;
  fail("demo model not found (looked in examples/models/demo); pass --model DIR");
}

/// \brief demo.json's "task" (what the problems are), or a generic line for a model that has none.
inline std::string read_demo_task(const std::string& dir) {
  const io::json doc = io::read_json_file(dir + "/demo.json");
  if (doc.contains("task")) return doc.at("task").as_string();
  return "held-out problems of " + dir + "/demo.json";
}

inline std::vector<demo_problem> read_demo_problems(const std::string& dir) {
  const io::json doc = io::read_json_file(dir + "/demo.json");
  std::vector<demo_problem> out;
  auto ids = [](const io::json& arr) {
    std::vector<std::int32_t> v;
    for (const auto& x : arr.as_array()) v.push_back(std::int32_t(x.as_int()));
    return v;
  };
  for (const auto& p : doc.at("problems").as_array()) out.push_back({ids(p.at("prompt")), ids(p.at("answer"))});
  MUNINN_CHECK(!out.empty(), dir, "/demo.json has no problems");
  return out;
}

/// \brief Accuracy and mean steps of greedy answers at one setting, in batches.
template <class Model>
std::pair<double, double> evaluate_demo(const Model& m, const std::vector<demo_problem>& probs, generate_options g,
                                        bool progress, const std::string& label) {
  const std::size_t batch = 64;
  std::size_t correct = 0;
  double steps = 0, tokens = 0;
  for (std::size_t b0 = 0; b0 < probs.size(); b0 += batch) {
    const std::size_t b1 = std::min(probs.size(), b0 + batch);
    std::vector<std::vector<std::int32_t>> prompts;
    std::size_t answer_len = 0;
    for (std::size_t i = b0; i < b1; ++i) {
      prompts.push_back(probs[i].prompt);
      answer_len = std::max(answer_len, probs[i].answer.size());
    }
    g.max_new_tokens = std::int64_t(answer_len);
    const auto res = generate_batch(m, prompts, g);
    for (std::size_t i = b0; i < b1; ++i) {
      const auto& r = res[i - b0];
      const auto& want = probs[i].answer;
      correct += r.tokens.size() >= want.size() && std::equal(want.begin(), want.end(), r.tokens.begin());
      for (std::size_t t = 0; t < std::min(r.steps.size(), want.size()); ++t) steps += r.steps[t];
      tokens += double(std::min(r.steps.size(), want.size()));
    }
    if (progress) {
      const int width = 30, done = int(width * b1 / probs.size());
      std::fprintf(stderr, "\r%-6s [%s%s] %zu/%zu", label.c_str(), std::string(std::size_t(done), '#').c_str(),
                   std::string(std::size_t(width - done), '.').c_str(), b1, probs.size());
      if (b1 == probs.size()) std::fprintf(stderr, "\n");
    }
  }
  return {double(correct) / double(probs.size()), tokens > 0 ? steps / tokens : 0.0};
}

/// \brief The progress bar goes to stderr only on a terminal: its `\r` redraws would garble a
/// pipe or a log file.
inline bool demo_progress_wanted() { return isatty(STDERR_FILENO) == 1; }

/// \brief The demo's flags, checked before the model is loaded.
struct demo_settings {
  std::int64_t problems = 200;
  std::vector<std::int32_t> depths;
  std::int64_t max_steps = 32;
  double threshold = 1e-6;
  std::uint64_t seed = 0;
};

inline demo_settings demo_settings_from(const args& a) {
  demo_settings s;
  s.problems = a.get_int_min("--problems", 200, 1);
  s.depths = args::parse_ids(a.get("--depths", "1,2,4,8,16,32"), "--depths");
  for (auto r : s.depths) MUNINN_CHECK(r >= 0, "--depths: negative depth ", r);
  s.max_steps = a.get_int_min("--max-steps", 32, 1);
  // 1e-6, not the paper's 5e-4: with an 18-token vocabulary the next-token distribution barely
  // moves between steps long before the answer is computed (docs/demo.md has the sweep).
  s.threshold = a.get_double_min("--exit-threshold", 1e-6, 0);
  s.seed = std::uint64_t(a.get_int_min("--seed", 0, 0));
  return s;
}

/// \brief A row of the demo's result: its label, accuracy and mean steps per answer token.
using demo_row = std::pair<std::string, std::pair<double, double>>;

/// \brief The closing text bar chart of accuracy per setting.
inline void print_demo_chart(const std::vector<demo_row>& rows, const demo_settings& s) {
  std::printf("\naccuracy by recurrence depth (r=auto: KL exit < %g, at most %lld steps)\n", s.threshold,
              (long long)s.max_steps);
  for (const auto& [label, v] : rows) {
    const int width = 40, bar = int(v.first * width + 0.5);
    std::printf("%-7s |%s%s| %5.1f%%\n", label.c_str(), std::string(std::size_t(bar), '#').c_str(),
                std::string(std::size_t(width - bar), ' ').c_str(), 100.0 * v.first);
  }
}

/// \brief Evaluates every fixed depth, then the KL exit; prints one result line per setting.
template <class Model>
std::vector<demo_row> run_demo_settings(const Model& m, const std::vector<demo_problem>& probs, const demo_settings& s) {
  const bool progress = demo_progress_wanted();
  generate_options g;
  g.run.init = state_init::zero{};
  g.run.seed = s.seed;
  std::vector<demo_row> rows;
  auto run = [&](const std::string& label) {
    const auto res = evaluate_demo(m, probs, g, progress, label);
    std::printf("%s accuracy=%.3f mean_steps=%.2f\n", label.c_str(), res.first, res.second);
    std::fflush(stdout);
    rows.push_back({label, res});
  };
  g.run.halt.criterion = halt_criterion::none;
  for (auto r : s.depths) {
    g.run.steps = r;
    run("r=" + std::to_string(r));
  }
  g.run.steps = s.max_steps;
  g.run.halt.criterion = halt_criterion::kl;
  g.run.halt.threshold = s.threshold;
  g.run.halt.max_steps = s.max_steps;
  run("r=auto");
  return rows;
}

/// \brief `muninn demo`: flags in demo_spec().
template <class Model>
int run_demo(int argc, char** argv) {
  const command_spec spec = demo_spec();
  const args a(argc, argv, 2, spec);
  if (a.help()) {
    print_command_help(spec, std::cout);
    return 0;
  }
  const std::string dir = find_demo_model(a);
  if (is_trm_run(dir)) return run_trm_demo(dir, a);  // the second demo: a tiny recursive reasoner
  const demo_settings s = demo_settings_from(a);
  const Model m = Model::load(dir);
  auto probs = read_demo_problems(dir);
  if (std::int64_t(probs.size()) > s.problems) probs.resize(std::size_t(s.problems));
  // The task first: the accuracy lines mean nothing without knowing what was asked.
  std::cout << "task: " << read_demo_task(dir) << "\n"
            << "muninn demo: " << probs.size() << " held-out problems, model " << dir << " (" << m.parameter_count()
            << " parameters, trained at mean depth " << m.config().mean_recurrence << ")\n";
  print_demo_chart(run_demo_settings(m, probs, s), s);
  return 0;
}

}  // namespace muninn::cli
