#!/usr/bin/env bash
# Sets up a fresh Debian machine (missing packages), builds clnet, lists the
# OpenCL devices, and trains LeNet on Fashion-MNIST for 10 epochs. The last
# line is `final: test_accuracy=... train_loss=... images_per_s=...`.
# Select devices with CLNET_DEVICES=gpu|cpu|0,2|platform=NAME; extra
# arguments go to `clnet train` (e.g. --epochs 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$root/build}
"$root/scripts/deps.sh" --demo
"$root/scripts/build.sh"
"$BUILD_DIR/clnet" devices
echo
"$BUILD_DIR/clnet" train "$root/examples/models/lenet.cfg" --epochs 10 --batch 256 --lr 0.1 \
  --momentum 0.9 --wd 5e-4 --schedule cosine --mean 0.286 --std 0.353 \
  --save "$BUILD_DIR/lenet.safetensors" --plot "$BUILD_DIR/lenet.svg" "$@"
