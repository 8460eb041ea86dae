#!/usr/bin/env bash
# Installs the muninn Python module with pip (PyPI: scikit-build-core, nanobind, numpy, pytest)
# into a fresh virtual environment, build/pyvenv, and runs its pytest suite (python/tests).
# The build folder is build/python (pyproject.toml); with the compiler cache warm from a CMake
# build of the same configuration (the host preset), only the binding compiles. Extra pip
# arguments come from MUNINN_PIP_ARGS (e.g. -Ccmake.define.MUNINN_ENABLE_CUDA=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$PWD/build/pyvenv"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q numpy pytest
# The presets' generator and compiler (scikit-build-core would take Python's sysconfig CXX), so
# that the compiler cache matches their commands.
export CMAKE_GENERATOR="${CMAKE_GENERATOR:-Unix Makefiles}" CXX="${CXX:-c++}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
# shellcheck disable=SC2086  # MUNINN_PIP_ARGS is a list of arguments
"$venv/bin/python" -m pip install -q . ${MUNINN_PIP_ARGS:-}
# From outside the source tree, so that `import muninn` is the installed package.
cd build && "$venv/bin/python" -m pytest -q -p no:cacheprovider ../python/tests
