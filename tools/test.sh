#!/usr/bin/env bash
# Sets up, builds everything and runs the whole test suite (the server tests with the Python of
# tools/server_venv.sh) and the Python module's
# (tools/python_test.sh), then the unit tests again under AddressSanitizer +
# UndefinedBehaviorSanitizer. When nvcc is present the CUDA code is compiled once, by
# tools/cuda_build.sh (the folder a GPU machine runs, docs/performance.md), and
# tools/cuda_run.sh --no-gpu checks that every binary in it loads and reports skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
# Elapsed wall seconds per phase on stderr ("test.sh: phase <name> <s> s, total <s> s"), so that a
# CI log shows where the time goes; the phase that fails prints nothing (set -e ends the script).
t_start=$(date +%s)
t_phase=$t_start
phase_done() {
  local now
  now=$(date +%s)
  echo "test.sh: phase $1 $((now - t_phase)) s, total $((now - t_start)) s" >&2
  t_phase=$now
}
bash tools/setup.sh
bash tools/server_venv.sh  # the openai client and pytest for the server tests
phase_done setup
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
# No test runs a benchmark: they are compiled at -O0 as a check, not built (benchmarks/CMakeLists.txt).
cmake --preset host -DMUNINN_BENCHMARKS_COMPILE_ONLY=ON
cmake --build --preset host
phase_done host_build
ctest --preset host
phase_done host_ctest
if command -v nvcc >/dev/null; then
  bash tools/cuda_build.sh
  phase_done cuda_build
  bash tools/cuda_run.sh --no-gpu --budget 900
  phase_done cuda_run
fi
# The Python module as `pip install .` builds it (host backend): pip into a fresh virtual
# environment, then its pytest suite; at most 25 minutes (about 4 after the host build, whose
# front-end objects ccache hands to it: the binding and the tests are what is left).
timeout 1500 bash tools/python_test.sh
phase_done python
cmake --preset debug
cmake --build --preset debug --target muninn_unit_tests
phase_done debug_build
ctest --preset debug -L unit
phase_done debug_ctest
