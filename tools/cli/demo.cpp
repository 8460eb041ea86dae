// `muninn demo`: the three shipped demo models. The shell game (a Huginn model with demo.json):
// accuracy at several recurrence depths and with KL exit. The MoR demo (a Mixture-of-Recursions
// folder with heldout.json): per-class accuracy, depth histograms and block passes against the
// fixed-depth and vanilla baselines shipped beside it. The TRM demo (a run folder): exact-puzzle
// accuracy after 1, 2, 4, 8, 16 supervision steps and with learned halting.

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli_common.hpp"
#include "muninn/families/trm/puzzle_dataset.hpp"
#include "muninn/frontend/registry.hpp"
#include "muninn/frontend/solve.hpp"
#include "muninn/io/json.hpp"
#include "progress.hpp"

namespace muninn::cli {
namespace fe = muninn::frontend;
namespace fs = std::filesystem;

namespace {

// The folder of the running executable (/proc/self/exe), or "" when it cannot be read.
fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// Where a shipped demo model is: beside the executable as installed (<prefix>/bin/muninn →
// <prefix>/share/muninn/models/<name>), else in the source tree this build came from, else under
// the working directory.
std::string find_shipped_model(const std::string& name) {
  std::vector<fs::path> candidates;
  const fs::path exe = executable_dir();
  if (!exe.empty()) candidates.push_back(exe.parent_path() / "share" / "muninn" / "models" / name);
#ifdef MUNINN_SOURCE_DIR
  candidates.push_back(fs::path(MUNINN_SOURCE_DIR) / "examples" / "models" / name);
#endif
  candidates.push_back(fs::path("examples") / "models" / name);
  std::error_code ec;
  std::string looked;
  for (const auto& c : candidates) {
    if (fs::exists(c / "demo.json", ec)) return c.string();
    looked += (looked.empty() ? "" : ", ") + c.string();
  }
  fail_as(error_kind::usage, "the demo model was not found (looked in ", looked, "); pass --model DIR");
}

io::json read_json(const std::string& path) { return fe::as_kind(error_kind::config, [&] { return io::read_json_file(path); }); }

// ---- the shell game (Huginn)

struct demo_problem {
  std::vector<std::int32_t> prompt, answer;
};

std::vector<std::int32_t> json_ids(const io::json& arr) {
  std::vector<std::int32_t> v;
  for (const auto& x : arr.as_array()) v.push_back(std::int32_t(x.as_int()));
  return v;
}

struct demo_row {
  std::string label;
  double accuracy = 0, mean_steps = 0;
};

// Accuracy and mean steps per answer token of greedy answers under generate options `o`, in batches of 64.
demo_row evaluate(const fe::loaded_model& m, const std::vector<demo_problem>& probs, fe::option_values o,
                  const std::string& label) {
  const progress_bar bar(label);
  std::size_t correct = 0;
  double steps = 0, tokens = 0;
  std::size_t answer_len = 0;
  for (const auto& p : probs) answer_len = std::max(answer_len, p.answer.size());
  o.set("max-new-tokens", std::to_string(answer_len));
  for (std::size_t b0 = 0; b0 < probs.size(); b0 += 64) {
    const std::size_t b1 = std::min(probs.size(), b0 + 64);
    std::vector<std::vector<std::int32_t>> prompts;
    for (std::size_t i = b0; i < b1; ++i) prompts.push_back(probs[i].prompt);
    const auto res = m.generate_batch(prompts, o);
    for (std::size_t i = b0; i < b1; ++i) {
      const auto& r = res[i - b0];
      const auto& want = probs[i].answer;
      correct += r.tokens.size() >= want.size() && std::equal(want.begin(), want.end(), r.tokens.begin());
      for (std::size_t t = 0; t < std::min(r.steps.size(), want.size()); ++t) steps += r.steps[t];
      tokens += double(std::min(r.steps.size(), want.size()));
    }
    bar.update(std::int64_t(b1), std::int64_t(probs.size()));
  }
  return {label, double(correct) / double(probs.size()), tokens > 0 ? steps / tokens : 0.0};
}

int shell_demo(const std::string& dir, const parsed& p) {
  const fe::option_values& o = p.options;
  const std::int64_t problems = o.integer("problems", 200);
  std::vector<std::int32_t> depths = fe::parse_id_list(o.text("depths"), "--depths");
  for (auto r : depths)
    if (r < 1 || r > 1024) fail_as(error_kind::usage, "--depths: depth ", r, " must be in 1..1024");
  const std::int64_t max_steps = o.integer("max-steps");
  // 1e-6, not the paper's 5e-4: with an 18-token vocabulary the next-token distribution barely
  // moves between steps long before the answer is computed (docs/demo.md has the sweep).
  const double threshold = o.number("exit-threshold");
  const std::string seed = std::to_string(o.integer("seed"));
  const auto m = fe::open_model(dir, o);
  const io::json doc = read_json(dir + "/demo.json");
  std::vector<demo_problem> probs;
  for (const auto& x : doc.at("problems").as_array()) probs.push_back({json_ids(x.at("prompt")), json_ids(x.at("answer"))});
  if (probs.empty()) fail_as(error_kind::config, dir, "/demo.json has no problems");
  if (std::int64_t(probs.size()) > problems) probs.resize(std::size_t(problems));
  std::string mean_depth = "?";
  for (const auto& f : m->info().fields)
    if (f.label == "mean_recurrence") mean_depth = f.value;
  // The task first: the accuracy lines mean nothing without knowing what was asked.
  std::cout << "task: " << (doc.contains("task") ? doc.at("task").as_string() : "held-out problems of " + dir) << "\n"
            << "muninn demo: " << probs.size() << " held-out problems, model " << dir << " ("
            << m->info().parameters << " parameters, trained at mean depth " << mean_depth << ")\n";
  std::vector<demo_row> rows;
  const auto run = [&](const fe::option_values& g, const std::string& label) {
    rows.push_back(evaluate(*m, probs, g, label));
    std::printf("%s accuracy=%.3f mean_steps=%.2f\n", label.c_str(), rows.back().accuracy, rows.back().mean_steps);
    std::fflush(stdout);
  };
  for (auto r : depths) {
    fe::option_values g(fe::operation::generate);
    g.set("steps", std::to_string(r));
    g.set("init-state", "zero");
    g.set("seed", seed);
    run(g, "r=" + std::to_string(r));
  }
  fe::option_values g(fe::operation::generate);
  g.set("steps", std::to_string(max_steps));
  g.set("init-state", "zero");
  g.set("seed", seed);
  g.set("exit", "kl");
  char thr[32];
  std::snprintf(thr, sizeof thr, "%.17g", threshold);
  g.set("exit-threshold", thr);
  run(g, "r=auto");
  std::printf("\naccuracy by recurrence depth (r=auto: KL exit < %g, at most %lld steps)\n", threshold,
              (long long)max_steps);
  for (const auto& r : rows) {
    const int width = 40, bar = int(r.accuracy * width + 0.5);
    std::printf("%-7s |%s%s| %5.1f%%\n", r.label.c_str(), std::string(std::size_t(bar), '#').c_str(),
                std::string(std::size_t(width - bar), ' ').c_str(), 100.0 * r.accuracy);
  }
  return 0;
}

// ---- the MoR demo

struct mor_sequence {
  std::vector<std::int32_t> ids, targets, cls, pred_scoring, pred_causal, depth_scoring, depth_causal;
};

struct mor_tally {
  std::int64_t right[3] = {0, 0, 0}, count[3] = {0, 0, 0};
  std::vector<std::int64_t> hist[3];  // [class][depth]
  std::int64_t depth_sum = 0, positions = 0, pred_agree = 0, depth_agree = 0;
  bool has_depths = false;
};

mor_tally run_mor(const std::string& dir, const std::vector<mor_sequence>& seqs, const std::string& routing,
                  const parsed& p, const std::string& label, bool compare) {
  fe::option_values o(fe::operation::forward);
  o.set("routing", routing);
  const auto m = fe::open_model(dir, o);
  mor_tally t;
  const progress_bar bar(label);
  for (const auto& s : seqs) {
    const fe::forward_result r = m->forward(s.ids, o);
    for (std::size_t i = 0; i < s.ids.size(); ++i) {
      const float* row = r.logits.data() + std::int64_t(i) * r.vocab;
      std::int32_t best = 0;
      for (std::int64_t v = 1; v < r.vocab; ++v)
        if (row[v] > row[best]) best = std::int32_t(v);
      const int c = s.cls[i];
      if (c < 0 || c > 2) fail_as(error_kind::config, dir, "/heldout.json: class ", c, " is not 0, 1 or 2");
      if (s.targets[i] >= 0 && c > 0) {
        t.right[c] += best == s.targets[i];
        t.count[c] += 1;
      }
      if (!r.depths.empty()) {
        t.has_depths = true;
        const std::int32_t d = r.depths[i];
        if (std::size_t(d) >= t.hist[c].size()) t.hist[c].resize(std::size_t(d) + 1, 0);
        t.hist[c][std::size_t(d)] += 1;
        t.depth_sum += d;
        if (compare) t.depth_agree += d == (routing == "scoring" ? s.depth_scoring[i] : s.depth_causal[i]);
      }
      if (compare) t.pred_agree += best == (routing == "scoring" ? s.pred_scoring[i] : s.pred_causal[i]);
      t.positions += 1;
    }
    bar.update(&s - seqs.data() + 1, std::int64_t(seqs.size()));
  }
  (void)p;
  return t;
}

std::string histogram(const std::vector<std::int64_t>& h, std::int64_t depths) {
  std::string s;
  for (std::int64_t d = 1; d <= depths; ++d)
    s += (d > 1 ? "/" : "") + std::to_string(std::size_t(d) < h.size() ? h[std::size_t(d)] : 0);
  return s;
}

double mean_depth(const std::vector<std::int64_t>& h) {
  double n = 0, sum = 0;
  for (std::size_t d = 0; d < h.size(); ++d) {
    n += double(h[d]);
    sum += double(d) * double(h[d]);
  }
  return n > 0 ? sum / n : 0;
}

void print_mor_row(const std::string& name, const mor_tally& t, std::int64_t recursions, bool compare) {
  std::printf("%s: easy_acc=%.3f hard_acc=%.3f", name.c_str(), double(t.right[1]) / double(t.count[1]),
              double(t.right[2]) / double(t.count[2]));
  if (t.has_depths) {
    std::printf(" depth_easy=%s depth_hard=%s depth_free=%s mean_depth=%.2f/%.2f/%.2f block_passes=%.3f",
                histogram(t.hist[1], recursions).c_str(), histogram(t.hist[2], recursions).c_str(),
                histogram(t.hist[0], recursions).c_str(), mean_depth(t.hist[1]), mean_depth(t.hist[2]),
                mean_depth(t.hist[0]), double(t.depth_sum) / double(t.positions * recursions));
  }
  std::printf("\n");
  if (compare)
    std::printf("  agrees with the reference: predictions %lld/%lld, depths %lld/%lld\n", (long long)t.pred_agree,
                (long long)t.positions, (long long)t.depth_agree, (long long)t.positions);
}

int mor_demo(const std::string& dir, const parsed& p) {
  const io::json doc = read_json(dir + "/heldout.json");
  std::vector<mor_sequence> seqs;
  for (const auto& x : doc.at("sequences").as_array())
    seqs.push_back({json_ids(x.at("ids")), json_ids(x.at("targets")), json_ids(x.at("cls")), json_ids(x.at("pred_scoring")),
                    json_ids(x.at("pred_causal")), json_ids(x.at("depth_scoring")), json_ids(x.at("depth_causal"))});
  if (seqs.empty()) fail_as(error_kind::config, dir, "/heldout.json has no sequences");
  const std::int64_t limit = p.options.integer("problems", std::int64_t(seqs.size()));
  if (std::int64_t(seqs.size()) > limit) seqs.resize(std::size_t(limit));
  const std::int64_t recursions = doc.at("num_recursion").as_int();
  const std::string task = read_json(dir + "/demo.json").at("task").as_string();
  std::error_code ec;
  std::cout << "task: " << task << "\n"
            << "muninn demo: " << seqs.size() << " held-out sequences of " << seqs[0].ids.size()
            << " tokens, model " << dir << " (Mixture-of-Recursions, " << recursions << " recursions)\n"
            << "accuracy: teacher-forced next-token argmax by class of the predicted token; depth histograms: "
               "tokens with 1/2/3 recursions; block_passes: shared-block passes / (positions x "
            << recursions << ")\n";
  print_mor_row("mor_scoring", run_mor(dir, seqs, "scoring", p, "scoring", true), recursions, true);
  print_mor_row("mor_causal", run_mor(dir, seqs, "causal", p, "causal", true), recursions, true);
  if (fs::exists(fs::path(dir) / "fixed" / "config.json", ec))
    print_mor_row("fixed_depth3", run_mor(dir + "/fixed", seqs, "scoring", p, "fixed", false), recursions, false);
  // The vanilla baseline is a plain 3-layer stack saved in the MoR layout without routers; the
  // MoR family runs every stored model with its router gates, so its row is the reference's.
  const io::json results = read_json(dir + "/demo.json").at("results");
  if (const io::json* v = results.find("vanilla"))
    std::printf("vanilla (the reference's measurement; not run here): easy_acc=%.3f hard_acc=%.3f\n",
                v->at("accuracy").at("easy").as_double(), v->at("accuracy").at("hard").as_double());
  return 0;
}

// ---- the TRM demo

struct trm_score {
  std::int64_t puzzles = 0, exact = 0, steps = 0;
};

bool solved(const float* logits, const std::vector<std::int32_t>& labels, std::int64_t V,
            const std::optional<std::int64_t>& ignore) {
  for (std::size_t k = 0; k < labels.size(); ++k) {
    if (ignore && labels[k] == *ignore) continue;
    const float* row = logits + std::int64_t(k) * V;
    std::int64_t best = 0;
    for (std::int64_t v = 1; v < V; ++v)
      if (row[v] > row[best]) best = v;
    if (best != labels[k]) return false;
  }
  return true;
}

// The learned-halting row: every puzzle of [0, n) under `halt`.
trm_score score_halting(fe::trm_extras& m, const io::puzzle_dataset& d, std::int64_t n, const fe::trm_halt_choice& halt,
                        const progress_bar& bar, std::int64_t& done, std::int64_t total) {
  trm_score s;
  const std::int64_t L = m.seq_len(), V = m.vocab_size();
  for (std::int64_t e0 = 0; e0 < n; e0 += 64) {
    const std::int64_t e1 = std::min(n, e0 + 64);
    const fe::puzzle_batch b = fe::read_batch(d, e0, e1);
    const fe::trm_solution r = m.solve(b.inputs, b.ids, halt);
    for (std::int64_t i = 0; i < e1 - e0; ++i) {
      s.puzzles += 1;
      s.exact += solved(r.logits.data() + i * L * V, b.labels[std::size_t(i)], V, d.metadata().ignore_label_id);
      s.steps += r.steps[std::size_t(i)];
    }
    done += e1 - e0;
    bar.update(done, total);
  }
  return s;
}

int trm_demo(const std::string& dir, const parsed& p) {
  const fe::option_values& o = p.options;
  const auto model = fe::open_model(dir, o);
  fe::trm_extras& m = *model->trm();
  const io::puzzle_dataset d = io::puzzle_dataset::open(fe::solve_split_dir(m.dataset_dir(), dir + "/all_config.yaml data"));
  fe::check_dataset_fits(d, m);
  const std::int64_t n = std::min(d.num_examples(), o.integer("problems", d.num_examples()));
  // The calibrated threshold: --halt-threshold, else the one the run's expected.json records.
  std::optional<double> threshold;
  std::string threshold_from;
  if (o.has("halt-threshold")) {
    threshold = o.number("halt-threshold", 0.0);
    threshold_from = "--halt-threshold";
  } else if (fs::exists(fs::path(dir) / "expected.json")) {
    const io::json e = read_json(dir + "/expected.json");
    if (const io::json* t = e.find("halt_threshold"); t && t->is_number()) {
      threshold = t->as_double();
      threshold_from = "calibrated on the validation split (expected.json)";
    }
  }
  std::cout << "task: " << n << " held-out puzzles of " << d.dir() << " (seq_len " << d.seq_len()
            << "); a puzzle counts when every cell is right\n";
  const std::vector<std::int64_t> checkpoints = {1, 2, 4, 8, 16};
  std::vector<trm_score> fixed(checkpoints.size());
  const std::int64_t L = m.seq_len(), V = m.vocab_size();
  const auto ignore = d.metadata().ignore_label_id;
  const progress_bar bar("trm demo");
  const std::int64_t total = n * (threshold ? 3 : 2);
  std::int64_t done = 0;
  // One 16-step run scored after each checkpoint step (a step never depends on later ones).
  for (std::int64_t e0 = 0; e0 < n; e0 += 64) {
    const std::int64_t e1 = std::min(n, e0 + 64);
    const fe::puzzle_batch b = fe::read_batch(d, e0, e1);
    m.solve(b.inputs, b.ids, fe::halt_choice(fe::option_values(fe::operation::solve), false, checkpoints.back()),
            [&](const fe::trm_step_view& v) {
              for (std::size_t c = 0; c < checkpoints.size(); ++c)
                if (checkpoints[c] == v.step)
                  for (std::size_t i = 0; i < v.samples->size(); ++i) {
                    fixed[c].puzzles += 1;
                    fixed[c].exact += solved(v.logits->data() + std::int64_t(i) * L * V,
                                             b.labels[std::size_t((*v.samples)[i])], V, ignore);
                  }
            });
    done += e1 - e0;
    bar.update(done, total);
  }
  fe::trm_halt_choice rule;
  rule.learned = true;
  rule.max_steps = checkpoints.back();
  const trm_score q = score_halting(m, d, n, rule, bar, done, total);
  std::optional<trm_score> qt;
  if (threshold) {
    fe::trm_halt_choice at = rule;
    at.use_threshold = true;
    at.threshold = *threshold;
    qt = score_halting(m, d, n, at, bar, done, total);
  }
  char line[160];
  for (std::size_t c = 0; c < checkpoints.size(); ++c) {
    std::snprintf(line, sizeof line, "steps=%lld accuracy=%.4f\n", (long long)checkpoints[c],
                  double(fixed[c].exact) / double(fixed[c].puzzles));
    std::cout << line;
  }
  std::snprintf(line, sizeof line, "steps=auto accuracy=%.4f mean_steps=%.4f\n", double(q.exact) / double(q.puzzles),
                double(q.steps) / double(q.puzzles));
  std::cout << line;
  if (qt) {
    std::snprintf(line, sizeof line, "steps=auto(q_halt>%g) accuracy=%.4f mean_steps=%.4f\n", *threshold,
                  double(qt->exact) / double(qt->puzzles), double(qt->steps) / double(qt->puzzles));
    std::cout << line << "(steps=auto: the run's rule, " << m.halt_rule_name() << "; q_halt>" << *threshold << ": "
              << threshold_from << ")\n";
  }
  return 0;
}

}  // namespace

int cmd_demo(const parsed& p) {
  p.options.validate();
  const std::string dir = p.has("--model") ? p.get("--model") : find_shipped_model("demo");
  const fe::model_folder f = fe::model_folder::open(dir, "--model");
  const fe::family_entry& family = fe::identify(f);
  fe::check_applicable(family, p.options);
  // Which demo: by the files the folder ships (a run folder, held-out sequences, problems).
  std::error_code ec;
  if (f.trm_run) return trm_demo(f.dir, p);
  if (fs::exists(fs::path(f.dir) / "heldout.json", ec)) return mor_demo(f.dir, p);
  if (fs::exists(fs::path(f.dir) / "demo.json", ec)) return shell_demo(f.dir, p);
  fail_as(error_kind::usage, "'", f.dir, "' is ", family.what, " without demo files (demo.json or heldout.json): ",
          "muninn demo runs the shipped demo models (examples/models/demo, mor_demo, trm_sudoku)");
}

}  // namespace muninn::cli
