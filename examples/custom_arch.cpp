// Compose a different architecture from the same parts: pre-norm blocks, additive injection and a
// zero initial state, instead of Huginn's sandwich blocks, concat adapter and random state.
//
//   example_custom_arch
#include <cstdio>
#include <vector>

#include "muninn/model/random_weights.hpp"
#include "muninn/muninn.hpp"

// The policies are types; anything not named keeps Huginn's default (recurrent core sharing,
// no router, one KV slot per executed layer, fixed halting, softmax head).
using my_arch = muninn::arch<muninn::block::pre_norm, muninn::injection::add, muninn::state_init::zero>;
using my_model = muninn::model<muninn::host_backend, float, my_arch>;

int main() {
  muninn::huginn_config cfg;
  cfg.n_embd = 128;
  cfg.n_heads = 4;
  cfg.n_kv_heads = 2;  // grouped-query attention works the same way
  cfg.head_dim = 32;
  cfg.intermediate_size = 256;
  cfg.vocab_size = 512;
  cfg.n_layers_in_prelude = 1;
  cfg.n_layers_in_recurrent_block = 2;
  cfg.n_layers_in_coda = 1;
  cfg.mean_recurrence = 8;
  cfg.block_size = 128;
  cfg.qk_bias = false;
  cfg.injection_type = "add";
  cfg.block_type = "pre_norm";
  cfg.source = "custom_arch example";

  muninn::host_backend be;
  my_model m(be, cfg, muninn::make_random_weights<muninn::host_backend, float, muninn::block::pre_norm>(be, cfg, 42));
  std::printf("custom model: %lld parameters, %lld KV slots at r=8\n", (long long)m.parameter_count(),
              (long long)m.kv_slots(8));

  const std::vector<std::int32_t> prompt = {10, 20, 30};
  muninn::generate_options g;
  g.run.steps = 8;  // the policy default (state_init::zero) applies: no init given
  g.max_new_tokens = 6;
  std::printf("generated:");
  for (auto t : muninn::generate_greedy(m, prompt, g)) std::printf(" %d", t);
  std::printf("\n");
}
