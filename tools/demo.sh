#!/usr/bin/env bash
# Sets up, builds the muninn CLI (host backend) and runs the demo: the embedded model answers
# held-out problems at recurrence depths 1..32 and with the KL exit criterion.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake --preset host >/dev/null
cmake --build --preset host --target muninn_cli
./build/host/bin/muninn demo "$@"
