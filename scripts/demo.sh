#!/usr/bin/env bash
# Sets up a fresh Debian machine (missing packages), builds clnet, and runs
# it on every OpenCL device: `clnet devices` lists them and checks that each
# runs clnet's kernels. (Training lands here with the LeNet issue.)
# Select devices with CLNET_DEVICES=gpu|cpu|0,2|platform=NAME.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$root/build}
"$root/scripts/deps.sh"
"$root/scripts/build.sh"
"$BUILD_DIR/clnet" devices "$@"
