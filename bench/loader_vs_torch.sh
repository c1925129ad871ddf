#!/bin/bash
# The loader keeps up (issue 60): decode + augment images/s of clnet's loader against
# torchvision's DataLoader (the same transforms, as many workers as clnet's threads) and
# against resnet18_96.cfg's training images/s, on two image folders made here:
#   fm96:  Fashion-MNIST's training images at 96x96, gray PNGs (clnet export --resize 96),
#          augmented by a flip (d2l's ResNet recipe on Fashion-MNIST)
#   cifar: CIFAR-sized 32x32 colour JPEGs (quality 90, Fashion-MNIST's images tinted into
#          three channels by PIL), augmented by crop=4 and a flip (the CIFAR recipe)
# ROUNDS rounds, clnet then torchvision, interleaved; medians and their ratios.
#   bench/loader_vs_torch.sh [IMAGES] [ROUNDS] [THREADS]
# IMAGES per folder (default 8192), THREADS clnet's threads and torchvision's workers
# (default: the cores). Run from the repository root after building.
set -euo pipefail
images=${1:-8192} rounds=${2:-3} threads=${3:-$(nproc)}
clnet=${CLNET:-build/clnet} bench=${BENCH_LOADER:-build/bench/bench_loader}
python=${TORCH_PYTHON:-/usr/bin/python3}
work=$(mktemp -d /tmp/clnet-loader-XXXXXX)
trap 'rm -rf "$work"' EXIT
batches=$((images / 128 - 2))
[ "$batches" -gt 60 ] && batches=60

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) cores"
"$clnet" export "$work/fm96" --set train --count "$images" --resize 96 >/dev/null
"$python" - "$work/cifar" "$images" <<'PY'
import gzip, os, sys
import numpy as np
from PIL import Image
out, n = sys.argv[1], int(sys.argv[2])
d = "/usr/share/datasets/fashion-mnist"
x = np.frombuffer(gzip.open(f"{d}/train-images-idx3-ubyte.gz").read()[16:], np.uint8).reshape(-1, 28, 28)
y = np.frombuffer(gzip.open(f"{d}/train-labels-idx1-ubyte.gz").read()[8:], np.uint8)
for k in range(10):
    os.makedirs(f"{out}/train/{k}", exist_ok=True)
for i in range(n):
    g = np.asarray(Image.fromarray(x[i]).resize((32, 32), Image.BILINEAR), np.float32)
    rgb = np.stack([g, 255 - g, g * 0.5 + 60 * (i % 3)], -1).clip(0, 255).astype(np.uint8)
    Image.fromarray(rgb, "RGB").save(f"{out}/train/{y[i]}/{i:05d}.jpg", quality=90)
PY
echo "folders: $images 96x96 gray PNGs ($(du -sh "$work/fm96" | cut -f1)), $images 32x32 RGB JPEGs ($(du -sh "$work/cifar" | cut -f1))"

median() { sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.0f", m}'; }
value() { sed -n 's/.*images_per_s=\([0-9]*\).*/\1/p' | head -n1; }
run_set() { # name clnet-options -- torchvision-options
  local name=$1; shift
  local ours=() theirs=() ropt=() topt=() side=0
  for a in "$@"; do
    if [ "$a" = -- ]; then side=1; continue; fi
    if [ $side -eq 0 ]; then ropt+=("$a"); else topt+=("$a"); fi
  done
  for r in $(seq 1 "$rounds"); do
    a=$("$bench" "$work/$name" --threads "$threads" --batches "$batches" "${ropt[@]}" | value)
    b=$("$python" bench/torchvision_loader.py "$work/$name" --workers "$threads" \
        --batches "$batches" "${topt[@]}" | value)
    echo "  $name round $r: clnet $a images/s, torchvision $b images/s"
    ours+=("$a") theirs+=("$b")
  done
  local m1 m2
  m1=$(printf '%s\n' "${ours[@]}" | median) m2=$(printf '%s\n' "${theirs[@]}" | median)
  echo "$name: clnet median $m1 images/s, torchvision median $m2 images/s, ratio $(awk "BEGIN{printf \"%.2f\", $m1/$m2}")"
  eval "${name}_clnet=$m1"
}
run_set fm96 --flip -- --flip --gray
run_set cifar --flip --pad 4 -- --flip --pad 4
train=$("$clnet" bench examples/models/resnet18_96.cfg --batch 64 --steps 4 --rounds 1 2>/dev/null |
        sed -n 's/^aggregate: images_per_s=\([0-9]*\).*/\1/p')
echo "resnet18_96 training (clnet bench, batch 64, every device): $train images/s"
echo "fm96 loader / training: $(awk "BEGIN{printf \"%.1f\", $fm96_clnet/$train}")x"
