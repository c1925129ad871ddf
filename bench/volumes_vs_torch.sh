#!/usr/bin/env bash
# The 3-D shape classifier (examples/models/volumes3d.cfg, issue 31) trained by
# clnet and by PyTorch (2 threads) on the same volumes from
# examples/make_volumes (spheres, cubes, tori, cylinders, 32^3, seed 1; made
# when missing), with the same recipe and initial parameters
# (bench/accuracy_vs_torch.sh): both test accuracies and seconds per epoch.
#   bench/volumes_vs_torch.sh [EPOCHS] [TRAIN] [TEST]
# Defaults: 8 epochs, 8000 training and 2000 test volumes. The data goes to
# $VOLUMES_DIR (default BUILD_DIR/volumes-TRAIN-TEST, BUILD_DIR default
# build). Run from anywhere after building; CLNET_DEVICES picks clnet's devices.
# The recipe: batch 32, SGD lr 0.05, momentum 0.9, weight decay 5e-4, cosine
# schedule, --mean 0.375 --std 0.25 (make_volumes' bytes back to its values).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "${BUILD_DIR:-$here/../build}" && pwd)
epochs=${1:-8}
train=${2:-8000}
test=${3:-2000}
data=${VOLUMES_DIR:-$build/volumes-$train-$test}
if [ ! -e "$data/y_test.npy" ]; then # make_volumes writes y_test.npy last
  "$build/examples/make_volumes" --seed 1 --train "$train" --test "$test" "$data" >&2
fi
exec "$here/accuracy_vs_torch.sh" "$root/examples/models/volumes3d.cfg" \
  --data-npy "$data/x_train.npy,$data/y_train.npy,$data/x_test.npy,$data/y_test.npy" \
  --epochs "$epochs" --batch 32 --lr 0.05 --momentum 0.9 --wd 5e-4 --schedule cosine \
  --mean 0.375 --std 0.25 --seed 1
