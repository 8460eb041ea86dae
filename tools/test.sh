#!/usr/bin/env bash
# Sets up, builds everything (host, and the CUDA code too when nvcc is present: its tests report
# skipped without a GPU) and runs the whole test suite (the server tests with the Python of
# tools/server_venv.sh) and the Python module's (tools/python_test.sh),
# then the unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/server_venv.sh  # the openai client and pytest for the server tests
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake --preset release
cmake --build --preset release
ctest --preset release
# The Python module as `pip install .` builds it (host backend): pip into a fresh virtual
# environment, then its pytest suite; at most 25 minutes (about 10 on a cold 2-core machine).
timeout 1500 bash tools/python_test.sh
cmake --preset debug
cmake --build --preset debug --target muninn_unit_tests
ctest --preset debug -L unit
