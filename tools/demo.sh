#!/usr/bin/env bash
# Sets up, builds the muninn CLI and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake --preset host >/dev/null
cmake --build --preset host --target muninn_cli example_run_huginn
./build/host/bin/muninn info --model tests/data/huginn/tiny_f32
./build/host/examples/example_run_huginn tests/data/huginn/tiny_f32
