#!/usr/bin/env bash
# Fashion-MNIST read as signals of 784 (examples/models/conv1d.cfg, issue 31)
# trained by clnet and by PyTorch (2 threads) with the same recipe and initial
# parameters (bench/accuracy_vs_torch.sh): both test accuracies and seconds
# per epoch.
#   bench/conv1d_vs_torch.sh [EPOCHS] [TRAIN_LIMIT] [TEST_LIMIT]
# Defaults: 5 epochs on all 60,000 training and 10,000 test images of
# $CLNET_DATA_DIR (default /usr/share/datasets/fashion-mnist). BUILD_DIR
# (default build) holds clnet; CLNET_DEVICES picks clnet's devices.
# The recipe: batch 128, SGD lr 0.1, momentum 0.9, weight decay 5e-4, cosine
# schedule, --mean 0.286 --std 0.353 (Fashion-MNIST's own).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
epochs=${1:-5}
limits=()
[ -n "${2:-}" ] && limits+=(--train-limit "$2")
[ -n "${3:-}" ] && limits+=(--test-limit "$3")
exec "$here/accuracy_vs_torch.sh" "$root/examples/models/conv1d.cfg" \
  --data "${CLNET_DATA_DIR:-/usr/share/datasets/fashion-mnist}" "${limits[@]}" \
  --epochs "$epochs" --batch 128 --lr 0.1 --momentum 0.9 --wd 5e-4 --schedule cosine \
  --mean 0.286 --std 0.353 --seed 1
