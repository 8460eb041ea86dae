#!/usr/bin/env bash
# Time-boxed fuzzing of the file readers (docs/architecture.md, "Hostile files").
#   bash tools/fuzz.sh [target...]      targets: json safetensors npy huginn_config llama_config shard_index
#                                       torch mor_config mor_yaml puzzle_dataset chat_template tokenizer
#                                       trm_config trm_dataset_json calm_config
#   FUZZ_SECONDS=300 bash tools/fuzz.sh json
# Needs clang with libFuzzer. Each target starts from tests/fuzz/corpus/<target> (with the dictionary
# tests/fuzz/dict/<target>.dict when there is one); new inputs and crash, leak, out-of-memory and
# timeout reproducers go to build/fuzz/findings/<target>/. An input that runs longer than FUZZ_TIMEOUT
# seconds (default 10) is a finding. Exit status 1 when any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
timeout=${FUZZ_TIMEOUT:-10}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(json safetensors npy huginn_config llama_config shard_index torch mor_config mor_yaml
                                     puzzle_dataset chat_template tokenizer trm_config trm_dataset_json calm_config)
command -v clang++ >/dev/null || { echo "tools/fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 2; }

cmake -S . -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMUNINN_FUZZ=ON \
  -DMUNINN_ENABLE_CUDA=OFF >/dev/null
cmake --build build/fuzz --target "${targets[@]/#/fuzz_}" -j "$(nproc)"

status=0
for t in "${targets[@]}"; do
  out=build/fuzz/findings/$t
  mkdir -p "$out/new"
  echo "== $t: ${seconds} s"
  dict=()
  [ -f tests/fuzz/dict/"$t".dict ] && dict=(-dict=tests/fuzz/dict/"$t".dict)
  # -rss_limit_mb: a reader that needs gigabytes for a small input is a finding too.
  if ! build/fuzz/tests/fuzz/fuzz_"$t" "$out/new" tests/fuzz/corpus/"$t" -max_total_time="$seconds" \
      -timeout="$timeout" -rss_limit_mb=2048 -max_len=65536 "${dict[@]}" -artifact_prefix="$out/" \
      -print_final_stats=1 2>"$out/log.txt"; then
    status=1
    echo "   crashed: see $out/log.txt and the crash-* file beside it"
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added" "$out/log.txt" | sed 's/^/   /' || true
done
exit $status
