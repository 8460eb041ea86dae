#!/usr/bin/env bash
# Sets up, builds everything (host, and the CUDA code too when nvcc is present: its tests report
# skipped without a GPU) and runs the whole test suite, then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/server_venv.sh  # the openai client and pytest for the server tests
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake --preset release
cmake --build --preset release
ctest --preset release
cmake --preset debug
cmake --build --preset debug --target muninn_unit_tests
ctest --preset debug -L unit
