#!/usr/bin/env bash
# Sets up, builds everything (host, and CUDA code too when nvcc is present) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake --preset release
cmake --build --preset release
ctest --preset release
