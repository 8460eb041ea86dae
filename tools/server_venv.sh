#!/usr/bin/env bash
# Makes build/server-venv: a Python with the official openai client and pytest, which the server
# tests (tests/server, ctest -R server_openai) drive `muninn serve` with. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/server-venv
if ! "$venv/bin/python" -c "import openai, pytest" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "openai==3.57.0" "pytest==9.2.0"
fi
