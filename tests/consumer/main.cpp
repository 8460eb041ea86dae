// A downstream program: loads a checkpoint and runs one forward pass.
#include <cstdio>
#include <muninn/muninn.hpp>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  auto m = muninn::model<muninn::host_backend, float>::load(argv[1]);
  muninn::run_options opt;
  opt.init = muninn::state_init::zero{};
  const auto logits = m.forward({1, 2, 3}, opt);
  std::printf("logits: %zu values, first %.6f\n", logits.size(), double(logits[0]));
  return logits.size() == 3u * std::size_t(m.config().vocab_size) ? 0 : 1;
}
