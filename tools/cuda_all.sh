#!/usr/bin/env bash
# The fallback for a GPU machine where the folder built elsewhere cannot run (its libraries do not
# resolve there, or it was not carried): builds the same folder there with every core
# (tools/cuda_build.sh --jobs $(nproc)), then runs it (tools/cuda_run.sh). The prebuilt folder is
# the default path: building costs several minutes of the GPU machine's time (docs/performance.md
# gives the measured build times). Options after the folder go to tools/cuda_run.sh.
# Usage: tools/cuda_all.sh [DIR] [cuda_run.sh options]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/cuda-run}
shift || true
started=$(date +%s)
bash tools/cuda_build.sh --jobs "$(nproc)" "$dir"
built=$(( $(date +%s) - started ))
echo "cuda_all: built $dir in ${built} s on $(nproc) cores"
# The build took part of the run's 8 minutes: the run gets what is left of them.
exec bash tools/cuda_run.sh --budget $(( 480 - built > 120 ? 480 - built : 120 )) "$@" "$dir"
