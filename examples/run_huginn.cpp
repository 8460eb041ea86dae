// Load a Huginn checkpoint, run it at several recurrence depths, and generate greedily.
//
//   example_run_huginn [MODEL_DIR]     (default: the repository's tiny test checkpoint)
#include <cstdio>
#include <string>
#include <vector>

#include "muninn/muninn.hpp"

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : MUNINN_EXAMPLE_MODEL;
  try {
    // The default Arch is huginn_arch: sandwich blocks, concat adapter, random state, recurrent core.
    auto m = muninn::model<muninn::host_backend, float>::load(dir);
    const auto& cfg = m.config();
    std::printf("loaded %s: h=%lld, layers (%lld, %lld, %lld), %lld parameters\n", dir.c_str(),
                (long long)cfg.n_embd, (long long)cfg.n_layers_in_prelude, (long long)cfg.n_layers_in_recurrent_block,
                (long long)cfg.n_layers_in_coda, (long long)m.parameter_count());

    const std::vector<std::int32_t> prompt = {1, 2, 3, 4, 5};
    muninn::run_options opt;
    opt.init = muninn::state_init::zero{};  // deterministic; state_init::truncated_normal{} is Huginn's default
    for (std::int64_t r : {1, 2, 4, 8, 16}) {
      opt.steps = r;
      const auto logits = m.forward(prompt, opt);
      const float* last = logits.data() + (prompt.size() - 1) * cfg.vocab_size;
      std::printf("r=%-3lld next token %d (logit %.4f)\n", (long long)r, muninn::argmax_host(last, cfg.vocab_size),
                  double(last[muninn::argmax_host(last, cfg.vocab_size)]));
    }

    muninn::generate_options g;
    g.run = opt;
    g.run.steps = cfg.mean_recurrence;
    g.max_new_tokens = 8;
    std::printf("greedy continuation at r=%lld:", (long long)g.run.steps);
    for (auto t : muninn::generate_greedy(m, prompt, g)) std::printf(" %d", t);
    std::printf("\n");
  } catch (const muninn::error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
