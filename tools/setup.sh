#!/usr/bin/env bash
# Installs what building Muninn needs on a Debian/Ubuntu machine (run as root or with sudo).
# Skips the package manager when everything is already present.
set -euo pipefail
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v ccache >/dev/null || need+=(ccache)
command -v doxygen >/dev/null || need+=(doxygen)
command -v python3 >/dev/null || need+=(python3)  # tools/cuda_run.sh reads JSON reports with it
[ -f /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
[ -f /usr/include/gmock/gmock.h ] || need+=(libgmock-dev)
[ -f /usr/include/benchmark/benchmark.h ] || need+=(libbenchmark-dev)
[ -f /usr/include/pcre2.h ] || need+=(libpcre2-dev)
[ -f /usr/include/yaml-cpp/yaml.h ] || need+=(libyaml-cpp-dev)
[ -f /usr/include/httplib.h ] || need+=(libcpp-httplib-dev)
command -v pkg-config >/dev/null || need+=(pkg-config)
# The Python module (tools/python_test.sh) and the server tests (tools/server_venv.sh): a virtual
# environment with pip; the module also needs Python's headers.
command -v python3 >/dev/null || need+=(python3)
python3 -c "import ensurepip, venv" 2>/dev/null || need+=(python3-venv)
python3 -c "import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" \
  2>/dev/null || need+=(python3-dev)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
