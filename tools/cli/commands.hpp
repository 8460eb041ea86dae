#pragma once
// `muninn forward` and `muninn generate` once a model is loaded, written once over the model type:
// main.cpp runs them on the host model, cuda_commands.cu (built with CUDA) on the CUDA models.

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "muninn/io/tokenizer.hpp"
#include "muninn/muninn.hpp"

namespace muninn::cli {

/// \brief "1,2,3".
inline std::string join_ids(const std::vector<std::int32_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

/// \brief 1536 → "1.50 KiB".
inline std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  std::ostringstream os;
  os.precision(u ? 2 : 0);
  os << std::fixed << b << " " << units[u];
  return os.str();
}

/// \brief Where forward/generate run: `--device cpu|cuda`, `--dtype fp32|bf16`.
struct device_choice {
  bool cuda = false;  ///< --device cuda
  bool bf16 = false;  ///< --dtype bf16 (CUDA only)
};

/// \brief Reads --device and --dtype (defaults cpu, fp32) and rejects what this build cannot run.
inline device_choice parse_device(const args& a) {
  const std::string dev = a.get("--device", "cpu"), dt = a.get("--dtype", "fp32");
  MUNINN_CHECK(dev == "cpu" || dev == "cuda", "--device must be cpu or cuda, got '", dev, "'");
  MUNINN_CHECK(dt == "fp32" || dt == "bf16", "--dtype must be fp32 or bf16, got '", dt, "'");
  device_choice c;
  c.cuda = dev == "cuda";
  c.bf16 = dt == "bf16";
  MUNINN_CHECK(c.cuda || !c.bf16, "--dtype bf16 needs --device cuda (the host backend computes in fp32)");
#if !defined(MUNINN_CLI_CUDA)
  MUNINN_CHECK(!c.cuda, "this muninn was built without CUDA (configure with -DMUNINN_ENABLE_CUDA=ON)");
#endif
  return c;
}

/// \brief --steps, --init-state, --seed.
inline run_options run_options_from(const args& a, const model_config& cfg) {
  run_options opt;
  opt.steps = a.get_int("--steps", cfg.mean_recurrence);
  MUNINN_CHECK(opt.steps >= 0, "--steps must be >= 0, got ", opt.steps);
  const std::string init = a.get("--init-state", "random");
  if (init == "zero")
    opt.init = init_state::zero;
  else if (init == "random")
    opt.init = init_state::random;
  else
    fail("--init-state must be zero or random, got '", init, "'");
  const std::int64_t seed = a.get_int("--seed", 0);
  MUNINN_CHECK(seed >= 0, "--seed must be >= 0, got ", seed);
  opt.seed = std::uint64_t(seed);
  return opt;
}

/// \brief --kv-budget, --kv-fallback and the context size.
inline context_limits context_from(const args& a, const model_config& cfg, std::int64_t tokens, std::int64_t steps) {
  context_limits lim;
  lim.max_tokens = tokens;
  lim.max_steps = steps;
  lim.kv_budget = a.get_int("--kv-budget", 0);
  MUNINN_CHECK(lim.kv_budget >= 0, "--kv-budget must be >= 0, got ", lim.kv_budget);
  const std::string fb = a.get("--kv-fallback", "latest");
  if (fb == "latest")
    lim.fallback = kv_fallback::latest;
  else if (fb == "none")
    lim.fallback = kv_fallback::none;
  else
    fail("--kv-fallback must be latest or none, got '", fb, "'");
  MUNINN_CHECK(tokens <= cfg.block_size, "prompt + new tokens = ", tokens, " exceeds block_size ", cfg.block_size);
  return lim;
}

/// \brief `muninn forward` on a loaded model: logits of every position (optionally to --output).
template <class Model>
int forward_with(const Model& m, const args& a, const std::vector<std::int32_t>& ids) {
  const run_options opt = run_options_from(a, m.config());
  const std::vector<float> logits = m.forward(ids, opt);
  const std::int64_t V = m.config().vocab_size;
  if (a.has("--output")) {
    io::write_npy(a.get("--output"), logits.data(), {std::int64_t(ids.size()), V});
    std::cout << "wrote " << a.get("--output") << " [" << ids.size() << ", " << V << "] float32\n";
  }
  std::vector<std::int32_t> top;
  for (std::size_t i = 0; i < ids.size(); ++i) top.push_back(argmax_host(logits.data() + std::int64_t(i) * V, V));
  std::cout << "steps=" << opt.steps << " tokens=" << ids.size() << " vocab=" << V << "\n";
  std::cout << "argmax per position: " << join_ids(top) << "\n";
  return 0;
}

/// \brief `muninn generate` on a loaded model; `tok` decodes the output when the prompt was text.
template <class Model>
int generate_with(const Model& m, const args& a, const std::vector<std::int32_t>& ids, const io::tokenizer* tok,
                  std::int64_t max_new) {
  const model_config& cfg = m.config();
  generate_options g;
  g.run = run_options_from(a, cfg);
  g.max_new_tokens = max_new;
  g.run.halt.criterion = parse_halt_criterion(a.get("--exit", "none"));
  g.run.halt.threshold = a.get_double("--exit-threshold", -1);
  g.run.halt.min_steps = a.get_int("--min-steps", 0);
  g.run.halt.max_steps = a.get_int("--max-steps", g.run.steps);
  g.run.halt.check_every = a.get_int("--check-every", 1);
  if (g.run.halt.criterion != halt_criterion::none) g.run.steps = g.run.halt.max_steps;
  const std::string warm = a.get("--warm-start", "none");
  if (warm == "raw")
    g.run.warm = warm_start::raw;
  else if (warm == "normalized")
    g.run.warm = warm_start::normalized;
  else if (warm != "none")
    fail("--warm-start must be raw or normalized, got '", warm, "'");
  g.draft_steps = a.get_int("--draft-steps", 0);
  g.lookahead = a.get_int("--lookahead", a.has("--draft-steps") ? 8 : 0);
  const bool sampled = !a.has("--greedy") && (a.has("--temperature") || a.has("--top-k") || a.has("--top-p") ||
                                               a.has("--min-p") || a.has("--repetition-penalty"));
  g.sampling.greedy = !sampled;
  g.sampling.temperature = float(a.get_double("--temperature", 1.0));
  g.sampling.top_k = int(a.get_int("--top-k", 0));
  g.sampling.top_p = float(a.get_double("--top-p", 1.0));
  g.sampling.min_p = float(a.get_double("--min-p", 0.0));
  g.sampling.repetition_penalty = float(a.get_double("--repetition-penalty", 1.0));
  g.sampling.seed = g.run.seed;
  if (a.has("--stop")) g.stop_ids = args::parse_ids(a.get("--stop"), "--stop");

  const std::int64_t total = std::int64_t(ids.size()) + max_new;
  MUNINN_CHECK(total <= cfg.block_size, "prompt of ", ids.size(), " tokens + ", max_new, " new tokens = ", total,
               " exceeds block_size ", cfg.block_size);
  const std::int64_t max_steps = max_steps_needed(m, g);
  auto ctx = m.make_context(context_from(a, cfg, std::min(total + g.lookahead, cfg.block_size), max_steps));

  // Latent trajectories: state of every position at every step (NaN where a token had exited).
  std::vector<float> states;
  const std::int64_t h = cfg.n_embd;
  if (a.has("--dump-states")) {
    states.assign(std::size_t(total * max_steps * h), std::numeric_limits<float>::quiet_NaN());
    g.run.on_step = [&](std::int64_t pos, std::int64_t step, const float* x) {
      if (pos < total && step < max_steps) std::copy(x, x + h, states.begin() + (pos * max_steps + step) * h);
    };
  }
  const generate_result r = generate(m, ctx, ids, g);
  if (a.has("--dump-states")) {
    io::write_npy(a.get("--dump-states"), states.data(), {total, max_steps, h});
    std::cerr << "muninn: wrote " << a.get("--dump-states") << " [" << total << ", " << max_steps << ", " << h
              << "] (positions, steps, hidden)\n";
  }
  if (g.draft_steps > 0)
    std::cerr << "muninn: speculative: drafted " << r.drafted << ", accepted " << r.accepted << ", " << r.forward_calls
              << " model calls\n";
  std::cerr << "muninn: kv cache " << human_bytes(double(ctx.kv_bytes_per_token())) << "/token, "
            << human_bytes(double(ctx.kv_bytes())) << " reserved\n";
  if (tok) std::cout << tok->decode(r.tokens) << "\n";
  if (a.has("--show-steps")) std::cout << join_ids(r.steps) << "\n";
  std::cout << join_ids(r.tokens) << "\n";
  return 0;
}

#if defined(MUNINN_CLI_CUDA)
// Defined in cuda_commands.cu, the CLI's only nvcc translation unit.

/// \brief Throws "no CUDA device: <reason>" unless a CUDA device can be used.
void cuda_require_device();
/// \brief forward_with on model<cuda_backend, float|bf16, huginn_adaptive_arch> loaded from `dir`.
int cuda_forward(const std::string& dir, bool use_bf16, const args& a, const std::vector<std::int32_t>& ids);
/// \brief generate_with on model<cuda_backend, float|bf16, huginn_adaptive_arch> loaded from `dir`.
int cuda_generate(const std::string& dir, bool use_bf16, const args& a, const std::vector<std::int32_t>& ids,
                  const io::tokenizer* tok, std::int64_t max_new);
#endif

}  // namespace muninn::cli
