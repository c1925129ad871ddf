#!/bin/bash
# Training images/s of clnet and of PyTorch (2 threads) on the same model,
# interleaved: ROUNDS rounds of STEPS optimizer steps each, clnet then PyTorch,
# on Fashion-MNIST with the same batch and recipe. Prints each run's images/s
# (training steps only, as both programs count them) and the median ratio.
#   bench/resnet_vs_torch.sh [MODEL] [BATCH] [STEPS] [ROUNDS] [-- clnet options]
# MODEL: resnet18_w16 (default), resnet18 or lenet; run from the repository root
# after building (build/clnet). CLNET_DEVICES / POCL_DEVICES pick clnet's devices.
set -euo pipefail
model=${1:-resnet18_w16}
batch=${2:-128}
steps=${3:-25}
rounds=${4:-4}
shift $(($# < 4 ? $# : 4))
[ "${1:-}" = "--" ] && shift
recipe=(--batch "$batch" --lr 0.05 --momentum 0.9 --wd 5e-4)
ours=() theirs=() ratios=()
for r in $(seq 1 "$rounds"); do
    a=$(build/clnet train "examples/models/$model.cfg" "${recipe[@]}" --steps "$steps" --no-eval \
        "$@" 2>/dev/null | sed -n 's/^final: .*images_per_s=\([0-9]*\).*/\1/p')
    b=$(/usr/bin/python3 bench/pytorch_lenet.py --model "$model" "${recipe[@]}" --steps "$steps" \
        --threads 2 2>/dev/null | sed -n 's/^final: .*images_per_s=\([0-9]*\).*/\1/p')
    ratio=$(awk "BEGIN{printf \"%.3f\", $a/$b}")
    echo "round $r: clnet $a images/s, PyTorch $b images/s, ratio $ratio"
    ours+=("$a") theirs+=("$b") ratios+=("$ratio")
done
printf '%s\n' "${ours[@]}" | sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "clnet median %.0f images/s\n", m}'
printf '%s\n' "${theirs[@]}" | sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "PyTorch median %.0f images/s\n", m}'
printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median ratio %.3f\n", m}'
