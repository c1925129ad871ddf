#!/usr/bin/env bash
# Configures and builds clnet in $BUILD_DIR (default: build/). Extra
# arguments go to CMake's configure step, e.g. -DCLNET_WERROR=ON.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" "$@" >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
