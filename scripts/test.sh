#!/usr/bin/env bash
# Sets up a fresh Debian machine (missing packages), builds clnet with
# warnings as errors, and runs the whole test suite.
#   scripts/test.sh                 everything
#   scripts/test.sh -R devices      only tests whose name matches (ctest options)
#   scripts/test.sh --sanitize      the same under AddressSanitizer + UBSan (build-asan/),
#                                   built without MPI (CLNET_MPI=OFF): the suite's run
#                                   without it, and Open MPI's own leaks stay out of LSan
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmake_args=(-DCLNET_WERROR=ON)
if [ "${1:-}" = "--sanitize" ]; then
  shift
  export BUILD_DIR=${BUILD_DIR:-$root/build-asan}
  cmake_args+=(-DCLNET_SANITIZE=ON -DCLNET_MPI=OFF)
fi
export BUILD_DIR=${BUILD_DIR:-$root/build}

"$root/scripts/deps.sh"
"$root/scripts/build.sh" "${cmake_args[@]}"
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
