#!/usr/bin/env bash
# Sets up, builds everything and runs the whole test suite (the server tests with the Python of
# tools/server_venv.sh) and the Python module's
# (tools/python_test.sh), then the unit tests again under AddressSanitizer +
# UndefinedBehaviorSanitizer. When nvcc is present the CUDA code is compiled once, by
# tools/cuda_build.sh (the folder a GPU machine runs, docs/performance.md), and
# tools/cuda_run.sh --no-gpu checks that every binary in it loads and reports skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/server_venv.sh  # the openai client and pytest for the server tests
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
# No test runs a benchmark: they are compiled at -O0 as a check, not built (benchmarks/CMakeLists.txt).
cmake --preset host -DMUNINN_BENCHMARKS_COMPILE_ONLY=ON
cmake --build --preset host
ctest --preset host
if command -v nvcc >/dev/null; then
  bash tools/cuda_build.sh
  bash tools/cuda_run.sh --no-gpu --budget 900
fi
# The Python module as `pip install .` builds it (host backend): pip into a fresh virtual
# environment, then its pytest suite; at most 25 minutes (about 4 after the host build, whose
# front-end objects ccache hands to it: the binding and the tests are what is left).
timeout 1500 bash tools/python_test.sh
cmake --preset debug
cmake --build --preset debug --target muninn_unit_tests
ctest --preset debug -L unit
