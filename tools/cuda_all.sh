#!/usr/bin/env bash
# Every CUDA test and benchmark in one go, for a machine with an NVIDIA GPU: configure a CUDA
# build, build the CUDA targets, run the CUDA tests (they must pass, not skip), then every CUDA
# benchmark. Output goes to the terminal and to ${OUT:-cuda-results}/.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-cuda-results}"
mkdir -p "$OUT"
bash tools/setup.sh
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
nvidia-smi --query-gpu=name,memory.total,clocks.max.memory,driver_version --format=csv | tee "$OUT/gpu.csv"
cmake -S . -B build-cuda -DMUNINN_ENABLE_CUDA=ON -DCMAKE_BUILD_TYPE=Release
cmake --build build-cuda -j "$(nproc)" --target test_ops_cuda test_op_cases_cuda test_model_cuda test_calm_cuda test_chunk_sampling_cuda test_trm_cuda muninn_cli \
  npy_compare bench_cuda_ops bench_cuda_model
# A skipped CUDA test on a GPU machine is a failure: the device should be there.
for t in test_ops_cuda test_op_cases_cuda test_model_cuda test_calm_cuda test_chunk_sampling_cuda test_trm_cuda; do
  build-cuda/tests/$t --gtest_output="json:$OUT/$t.json" | tee "$OUT/$t.txt"
  if grep -q "SKIPPED" "$OUT/$t.txt"; then echo "cuda_all: $t skipped tests on a GPU machine" >&2; exit 1; fi
done
(cd build-cuda && ctest -R 'cli_golden_cuda|cli_device' --output-on-failure) | tee "$OUT/ctest_cli.txt"
build-cuda/benchmarks/bench_cuda_ops --benchmark_counters_tabular=true --benchmark_out="$OUT/bench_cuda_ops.json" | tee "$OUT/bench_cuda_ops.txt"
build-cuda/benchmarks/bench_cuda_model --benchmark_counters_tabular=true --benchmark_out="$OUT/bench_cuda_model.json" | tee "$OUT/bench_cuda_model.txt"
echo "cuda_all: results in $OUT/"
