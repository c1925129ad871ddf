#!/usr/bin/env bash
# Every speed figure of the convolution work against PyTorch (2 threads) in
# one sitting, each interleaved with PyTorch for ROUNDS rounds (default 3):
#   1. single convolutions, forward + backward (bench/conv_vs_torch.sh): the
#      catalogue's shapes and ResNet-18's 3x3 layers at batch 128, with the
#      algorithm clnet ran and its share of the tiled GEMM's 1024^3 rate;
#   2. training (bench/resnet_vs_torch.sh): LeNet at batch 256,
#      resnet18_w16.cfg and resnet18.cfg at batch 128.
# Prints each figure and each median ratio. Run from the repository root
# after building; it takes about 15 minutes on a 2-core machine.
#   bench/speed_vs_torch.sh [ROUNDS]
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which some machines set for
# OpenBLAS, are unset for the whole run (clnet does not use OpenBLAS; PyTorch
# may), and the first line says whether they were set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-3}
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-(unset)}:" \
  "unset for this run"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
echo "== single convolutions, forward + backward"
"$here/conv_vs_torch.sh" "$rounds"
for run in "lenet 256 40" "resnet18_w16 128 20" "resnet18 128 6"; do
  read -r model batch steps <<<"$run"
  echo "== training $model, batch $batch, $steps steps a round"
  "$here/resnet_vs_torch.sh" "$model" "$batch" "$steps" "$rounds"
done
