#!/usr/bin/env bash
# The autoencoder examples against PyTorch (2 threads) on Fashion-MNIST: the
# same network (examples/torch_model.py builds PyTorch's from the model file),
# the same starting weights (clnet's --steps 0 checkpoint, loaded into
# PyTorch), the same recipe (Adam, lr 0.001, batch 128, images in [0, 1]);
# only the shuffling and, with noise, the draws differ. Prints each side's
# test MSE after every epoch and at the end, and its training seconds per
# epoch (training steps alone, from images/s), then the ratios. Run from the
# repository root after building; on a 2-core machine clnet's 5 epochs take a
# few minutes, PyTorch 1.13's up to half an hour (its CPU transposed
# convolution is slow_conv_transpose2d).
#   bench/autoencoder_vs_torch.sh [EPOCHS] [NOISE]
# NOISE 0 (default) trains examples/models/autoencoder.cfg; NOISE > 0 trains
# examples/models/denoiser.cfg with --noise NOISE, its test MSE the error on
# noisy test images against clean ones. TRAIN_LIMIT and TEST_LIMIT cut the
# data sets for a short check; CLNET is the program (default build/clnet); PICTURE, an .svg
# path, gets clnet predict --picture of the trained model on the first test images.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
epochs=${1:-5}
noise=${2:-0}
clnet=${CLNET:-$root/build/clnet}
python=${CLNET_TORCH_PYTHON:-/usr/bin/python3}
model=$root/examples/models/autoencoder.cfg
noisy=()
if awk -v n="$noise" 'BEGIN { exit !(n > 0) }'; then
  model=$root/examples/models/denoiser.cfg
  noisy=(--noise "$noise")
fi
limits=()
[ -n "${TRAIN_LIMIT:-}" ] && limits+=(--train-limit "$TRAIN_LIMIT")
[ -n "${TEST_LIMIT:-}" ] && limits+=(--test-limit "$TEST_LIMIT")
recipe=(--epochs "$epochs" --batch 128 --optimizer adam --lr 0.001 --seed 1)
work=$(mktemp -d /tmp/clnet-ae-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-(unset)}:" \
  "unset for this run"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
echo "== $(basename "$model") ${noisy[*]}, ${recipe[*]} ${limits[*]}"

"$clnet" train "$model" "${recipe[@]}" "${noisy[@]}" "${limits[@]}" --steps 0 \
  --save "$work/init.safetensors" >/dev/null 2>&1
"$clnet" train "$model" "${recipe[@]}" "${noisy[@]}" "${limits[@]}" --save "$work/clnet.safetensors" \
  >"$work/clnet.out" 2>"$work/clnet.err" || { cat "$work/clnet.err"; exit 1; }
grep '^epoch' "$work/clnet.err" | sed 's/^/clnet   /'
if [ -n "${PICTURE:-}" ]; then # clnet's trained model on the first test images
  "$clnet" predict "$model" --weights "$work/clnet.safetensors" "${noisy[@]}" --count 16 \
    --probabilities --output "$work/out.npy" --picture "$PICTURE" 2>&1 | sed 's/^/clnet   /'
fi
"$python" "$here/pytorch_autoencoder.py" "$model" --init "$work/init.safetensors" \
  --epochs "$epochs" --batch 128 --lr 0.001 --noise "$noise" --seed 1 --threads 2 \
  "${limits[@]}" >"$work/torch.out" 2>"$work/torch.err" || { cat "$work/torch.err"; exit 1; }
sed 's/^/pytorch /' "$work/torch.err"

# the training seconds of an epoch: its samples over the final line's images/s
samples=$(grep -m1 -oE 'train-limit [0-9]+' <<<"${limits[*]:-}" | cut -d' ' -f2 || true)
samples=${samples:-60000}
summary() { # name, final line
  local loss ips
  loss=$(sed -nE 's/^final: test_loss=([0-9.]+) .*/\1/p' <<<"$2")
  ips=$(sed -nE 's/.* images_per_s=([0-9]+).*/\1/p' <<<"$2")
  awk -v n="$1" -v l="$loss" -v i="$ips" -v s="$samples" \
    'BEGIN { printf "%-8s test_mse=%s seconds_per_epoch=%.1f images_per_s=%s\n", n, l, s / i, i }'
}
c=$(summary clnet "$(tail -n1 "$work/clnet.out")")
t=$(summary pytorch "$(tail -n1 "$work/torch.out")")
echo "$c"
echo "$t"
awk -v c="$c" -v t="$t" 'BEGIN {
  split(c, a, /[= ]+/); split(t, b, /[= ]+/)
  printf "ratio   test_mse clnet/pytorch=%.3f speed clnet/pytorch=%.2f\n", a[3] / b[3], a[7] / b[7]
}'
