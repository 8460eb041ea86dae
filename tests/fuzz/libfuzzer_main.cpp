// libFuzzer entry point for one target of fuzz_targets.hpp, chosen at compile time by
// MUNINN_FUZZ_TARGET (json, safetensors, npy, huginn_config, llama_config, shard_index, torch,
// mor_config, mor_yaml, puzzle_dataset, chat_template, tokenizer, trm_config, trm_dataset_json, calm_config).
#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)muninn_fuzz::MUNINN_FUZZ_TARGET(data, size);
  return 0;
}
