// The TRM / HRM family in the front-end library: a run folder (all_config.yaml + step_N) that
// solves puzzles under a halting rule; every other operation points at `muninn solve`.

#include <filesystem>
#include <sstream>

#include "common.hpp"
#include "muninn/families/trm/model.hpp"

namespace muninn::frontend {
namespace {

using trm_host = trm_model<host_backend, float>;

using detail::str;

// Learned halting at a threshold of the user's instead of the run's rule (a calibrated q_halt).
struct threshold_halt {
  std::int64_t steps = 0;
  float threshold = 0;
  std::int64_t max_steps(const trm_config& c) const { return steps > 0 ? steps : c.halt_max_steps; }
  q_halt_rule rule(const trm_config&) const { return {q_halt_kind::above, threshold}; }
};

class trm_loaded final : public loaded_model, public trm_extras {
 public:
  trm_loaded(trm_host m, model_info info) : m_(std::move(m)), info_(std::move(info)) {}
  const model_info& info() const override { return info_; }
  trm_extras* trm() override { return this; }

  std::int64_t seq_len() const override { return m_.config().seq_len; }
  std::int64_t vocab_size() const override { return m_.config().vocab_size; }
  std::int64_t puzzle_identifiers() const override { return m_.config().num_puzzle_identifiers; }
  std::int64_t halt_max_steps() const override { return m_.config().halt_max_steps; }
  std::string halt_rule_name() const override { return trm_halt_rule_name(m_.config().halt_rule()); }
  std::string config_source() const override { return m_.config().sizes_source; }
  std::string dataset_dir() const override {
    const std::string dir = std::filesystem::path(m_.step_file()).parent_path().string();
    const std::vector<std::string> paths = io::trm_data_paths_from_yaml(dir + "/all_config.yaml");
    std::error_code ec;
    for (const auto& c : io::detail::trm_dataset_json_candidates(dir, paths, ""))
      if (std::filesystem::is_regular_file(c, ec)) return c.parent_path().parent_path().string();
    fail_as(error_kind::config, dir, "/all_config.yaml: its dataset (data_paths / data_path) was not found from '", dir,
            "' up");
  }
  std::string describe() const override {
    const trm_config& c = m_.config();
    return str(trm_arch_name(c.arch), c.arch == trm_arch::hrm ? "" : c.mlp_t ? " (mlp_t)" : " (attention)", ", ",
               m_.parameter_count(), " parameters, checkpoint ", std::filesystem::path(m_.step_file()).filename().string());
  }

  std::vector<std::string> stream_taps() const override {
    std::vector<std::string> names;
    for (std::int64_t t = 0; t < m_.config().H_cycles; ++t) {
      for (std::int64_t j = 0; j < m_.config().L_cycles; ++j)
        names.push_back(str("z_L.cycle.", t, ".", j));
      names.push_back(str("z_H.cycle.", t));
    }
    return names;
  }

  trm_solution solve(const std::vector<std::int32_t>& inputs, const std::vector<std::int32_t>& ids,
                     const trm_halt_choice& halt, const std::function<void(const trm_step_view&)>& on_step,
                     const tap_options& taps) override {
    const trm_config& c = m_.config();
    if (std::int64_t(inputs.size()) != std::int64_t(ids.size()) * c.seq_len)
      fail_as(error_kind::usage, "trm solve: ", inputs.size(), " input tokens for ", ids.size(), " puzzles of seq_len ",
              c.seq_len);
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] < 0 || inputs[i] >= c.vocab_size)
        fail_as(error_kind::usage, "trm solve: token ", inputs[i], " of puzzle ", i / std::size_t(c.seq_len),
                " (position ", i % std::size_t(c.seq_len), ") is outside the vocabulary [0, ", c.vocab_size, ")");
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || ids[i] >= c.num_puzzle_identifiers)
        fail_as(error_kind::usage, "trm solve: puzzle identifier ", ids[i], " of puzzle ", i,
                " is outside the puzzle table [0, ", c.num_puzzle_identifiers, ")");
    const auto step = [&](std::int64_t s, const std::vector<std::int64_t>& samples, const trm_step_output& o) {
      trm_step_view v;
      v.step = s;
      v.samples = &samples;
      v.logits = &o.logits;
      v.q_halt = &o.q_halt;
      v.q_continue = &o.q_continue;
      on_step(v);
    };
    // Without a step callback only the halt bytes leave the backend until a puzzle stops.
    const auto run = [&](const auto& policy) {
      return on_step ? m_.solve(inputs, ids, policy, step, taps)
                     : m_.solve(inputs, ids, policy, muninn::detail::trm_no_step_callback{}, taps);
    };
    trm_result r;
    if (!halt.learned)
      r = run(trm_halting::fixed{halt.max_steps});
    else if (halt.use_threshold)
      r = run(threshold_halt{halt.max_steps, float(halt.threshold)});
    else
      r = run(trm_halting::q_halt{halt.max_steps});
    return {std::move(r.steps), std::move(r.preds), std::move(r.logits)};
  }

 private:
  trm_host m_;
  model_info info_;
};

model_info trm_info(const model_folder& f, const trm_host& m) {
  const trm_config& c = m.config();
  model_info info;
  info.family = trm_family::name;
  info.display = trm_family::display;
  info.path = f.path;
  info.vocab_size = c.vocab_size;
  info.context = c.seq_len;
  info.parameters = m.parameter_count();
  detail::add_field(info, "model", f.path);
  detail::add_field(info, "family", str(trm_arch_name(c.arch), " (run folder: all_config.yaml, checkpoint ",
                                        std::filesystem::path(m.step_file()).filename().string(), ")"));
  detail::add_field(info, "block", "post_norm (weightless RMSNorm)");
  detail::add_field(info, "mixer", c.mlp_t ? "token-mixing MLP" : "bidirectional attention");
  detail::add_field(info, "recursion", str("H_cycles ", c.H_cycles, ", L_cycles ", c.L_cycles, ", up to ",
                                           c.halt_max_steps, " supervision steps, halting ",
                                           trm_halt_rule_name(c.halt_rule())));
  detail::add_field(info, "hidden", str(c.hidden_size));
  detail::add_field(info, "heads", str(c.num_heads));
  detail::add_field(info, "vocab", str(c.vocab_size));
  detail::add_field(info, "max positions", str(c.seq_len, " puzzle tokens + ", c.prefix_len(), " prefix"));
  detail::add_field(info, "parameters", str(m.parameter_count()));
  detail::add_field(info, "memory fp32", detail::human_bytes(double(m.parameter_count()) * 4) + " (host backend)");
  detail::add_field(info, "kv cache fp32", "none (no KV cache: every step runs the whole puzzle)");
  return info;
}

}  // namespace

bool trm_family::recognizes(const model_folder& f) { return f.trm_run; }

std::string trm_family::redirect(operation op) {
  switch (op) {
    case operation::info:
    case operation::load:
    case operation::solve:
    case operation::demo: return "";
    default:
      return "a TRM / HRM run folder: use muninn solve --model DIR --data DIR (muninn demo --model DIR when the run "
             "ships its test split)";
  }
}

std::unique_ptr<loaded_model> trm_family::load(const model_folder& f, const option_values& o) {
  trm_load_options lo;
  if (o.op() == operation::solve) lo.data_dir = o.text("data");
  const weight_format weights = detail::device_of(o).weights;  // no --device for this family: the host
  trm_host m = as_kind(error_kind::checkpoint,
                       [&] { return trm_host::load(f.step_file.empty() ? f.dir : f.step_file, lo); });
  as_kind(error_kind::checkpoint, [&] { m.store_weights_as(weights); });
  model_info info = trm_info(f, m);
  detail::add_weights_field(info, weights, m.weight_bytes(), "projections and output matrix",
                            "token-mixing MLP, Q head, embeddings, initial states");
  return std::make_unique<trm_loaded>(std::move(m), std::move(info));
}

}  // namespace muninn::frontend
