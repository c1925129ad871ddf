#!/bin/bash
# Training images/s of clnet and of PyTorch (2 threads) on the same model,
# interleaved: ROUNDS rounds of STEPS optimizer steps each, clnet then PyTorch,
# on Fashion-MNIST with the same batch and recipe. Prints each run's images/s
# (training steps only, as both programs count them) and the median ratio.
#   bench/resnet_vs_torch.sh [MODEL] [BATCH] [STEPS] [ROUNDS] [-- clnet options]
# MODEL: resnet18_w16 (default), resnet18, resnet18_96 or lenet; run from the
# repository root after building (build/clnet). CLNET_DEVICES / POCL_DEVICES pick
# clnet's devices. resnet18_96 trains on the first BATCH x STEPS Fashion-MNIST
# images resized to 96x96: clnet's loader resizes them as it goes (--resize 96, on
# its prefetch thread), PyTorch once before it starts timing (the same bilinear).
# TORCH_DEVICE=cuda runs PyTorch on the GPU (float32, TF32 off, cudnn.benchmark on,
# its first 3 steps left out of its images/s). CLNET_SIDE=bench times clnet with
# `clnet bench --rounds 1` (random data, after a step of warm-up; its aggregate line)
# instead of `clnet train`, whose figure includes the first step. CLNET (build/clnet)
# and TORCH_PYTHON (/usr/bin/python3) name the two programs.
set -euo pipefail
clnet=${CLNET:-build/clnet} python=${TORCH_PYTHON:-/usr/bin/python3}
model=${1:-resnet18_w16}
batch=${2:-128}
steps=${3:-25}
rounds=${4:-4}
shift $(($# < 4 ? $# : 4))
[ "${1:-}" = "--" ] && shift
recipe=(--batch "$batch" --lr 0.05 --momentum 0.9 --wd 5e-4)
torch_extra=()
if [ "${TORCH_DEVICE:-cpu}" = cuda ]; then
    torch_extra=(--device cuda --warmup 3) steps_torch=$((steps + 3))
else steps_torch=$steps; fi
data=() data_torch=()
if [ "$model" = resnet18_96 ]; then
    data=(--resize 96 --train-limit $((batch * steps)))
    data_torch=(--resize 96 --train-limit $((batch * steps_torch)))
fi
ours=() theirs=() ratios=()
for r in $(seq 1 "$rounds"); do
    if [ "${CLNET_SIDE:-train}" = bench ]; then
        a=$("$clnet" bench "examples/models/$model.cfg" --batch "$batch" --steps "$steps" \
            --rounds 1 "$@" 2>/dev/null | sed -n 's/^aggregate: images_per_s=\([0-9]*\).*/\1/p')
    else
        a=$("$clnet" train "examples/models/$model.cfg" "${recipe[@]}" --steps "$steps" --no-eval \
            "${data[@]}" "$@" 2>/dev/null | sed -n 's/^final: .*images_per_s=\([0-9]*\).*/\1/p')
    fi
    b=$("$python" bench/pytorch_lenet.py --model "$model" "${recipe[@]}" \
        --steps "$steps_torch" --no-eval --threads 2 "${data_torch[@]}" "${torch_extra[@]}" 2>/dev/null |
        sed -n 's/^final: .*images_per_s=\([0-9]*\).*/\1/p')
    ratio=$(awk "BEGIN{printf \"%.3f\", $a/$b}")
    echo "round $r: clnet $a images/s, PyTorch $b images/s, ratio $ratio"
    ours+=("$a") theirs+=("$b") ratios+=("$ratio")
done
printf '%s\n' "${ours[@]}" | sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "clnet median %.0f images/s\n", m}'
printf '%s\n' "${theirs[@]}" | sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "PyTorch median %.0f images/s\n", m}'
printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median ratio %.3f\n", m}'
