#!/bin/bash
# Issue 26's figures in one sitting: training and evaluation images/s of
# clnet against PyTorch (2 threads) on ResNet-18, resnet18_w16 and LeNet,
# interleaved over ROUNDS rounds, with the median ratio of each.
#   bench/bn_vs_torch.sh [ROUNDS] [STEPS] [EVAL_IMAGES]
# (LeNet trains 5 x STEPS steps and resnet18_w16 3 x STEPS: their steps
# are short, and the first ones carry the start; with 6 steps of its own,
# resnet18_w16 measured 0.59x PyTorch where 20 gave 0.80x.)
# Each round, for each model: clnet training with the fixed rules (no
# tuning database), clnet training with a database that `clnet tune` wrote
# before the first round (ResNets), PyTorch training; then clnet eval and
# PyTorch eval() under no_grad over the first EVAL_IMAGES test images. Run
# from the repository root after building (build/clnet); CLNET_DEVICES /
# POCL_DEVICES pick clnet's devices. Prints every figure as it goes.
set -euo pipefail
rounds=${1:-3}
steps=${2:-6}
eval_images=${3:-2000}
batch=128
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tuned="$work/tuned" # its own cache folder: the tuning database and the binaries
mkdir -p "$tuned"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
models=(resnet18 resnet18_w16 lenet)
recipe=(--lr 0.05 --momentum 0.9 --wd 5e-4)

field() { sed -n "s/.*images_per_s=\([0-9]*\).*/\1/p" | tail -n1; }
steps_of() {
    case $1 in
    lenet) echo $((5 * steps)) ;;
    resnet18_w16) echo $((3 * steps)) ;;
    *) echo "$steps" ;;
    esac
}
clnet_train() { build/clnet train "examples/models/$1.cfg" --batch "$2" "${recipe[@]}" \
    --steps "$(steps_of "$1")" --no-eval 2>/dev/null | field; }
torch_train() { /usr/bin/python3 bench/pytorch_lenet.py --model "$1" --batch "$2" "${recipe[@]}" \
    --steps "$(steps_of "$1")" --no-eval --threads 2 2>/dev/null | field; }
clnet_eval() { build/clnet eval "examples/models/$1.cfg" --weights "$work/$1.safetensors" \
    --batch "$2" --test-limit "$eval_images" 2>&1 >/dev/null | field; }
torch_eval() { /usr/bin/python3 bench/pytorch_lenet.py --model "$1" --batch "$2" --steps 1 \
    --eval-speed --test-limit "$eval_images" --threads 2 2>/dev/null | field; }
batch_of() { [ "$1" = lenet ] && echo 256 || echo "$batch"; }

echo "setting up: a checkpoint of each model, and clnet tune on the ResNets (own database)"
for m in "${models[@]}"; do
    b=$(batch_of "$m")
    build/clnet train "examples/models/$m.cfg" --batch "$b" --steps 2 --no-eval \
        --save "$work/$m.safetensors" >/dev/null 2>&1
    if [ "$m" != lenet ]; then
        CLNET_CACHE_DIR="$tuned" build/clnet tune "examples/models/$m.cfg" --batch "$b" \
            >"$work/tune-$m.txt" 2>&1
        CLNET_CACHE_DIR="$tuned" clnet_train "$m" "$b" >/dev/null # warm its binaries
    fi
done

declare -A fig
for r in $(seq 1 "$rounds"); do
    for m in "${models[@]}"; do
        b=$(batch_of "$m")
        a=$(clnet_train "$m" "$b")
        t=-
        [ "$m" != lenet ] && t=$(CLNET_CACHE_DIR="$tuned" clnet_train "$m" "$b")
        p=$(torch_train "$m" "$b")
        e=$(clnet_eval "$m" "$b")
        q=$(torch_eval "$m" "$b")
        echo "round $r $m: training clnet $a (tuned $t) PyTorch $p images/s;" \
            "evaluation clnet $e PyTorch $q images/s"
        fig[$m,train]+="$(awk "BEGIN{printf \"%.3f\", $a/$p}") "
        [ "$t" != - ] && fig[$m,tuned]+="$(awk "BEGIN{printf \"%.3f\", $t/$p}") "
        fig[$m,eval]+="$(awk "BEGIN{printf \"%.3f\", $e/$q}") "
    done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -n |
    awk '{v[NR]=$1} END{if (NR) printf "%.2f", (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
echo "median ratios, clnet / PyTorch ($rounds rounds, batch $batch; LeNet 256):"
for m in "${models[@]}"; do
    line="  $m: training $(median <<<"${fig[$m,train]}")x"
    [ "$m" != lenet ] && line+=", with clnet tune's database $(median <<<"${fig[$m,tuned]}")x"
    echo "$line, evaluation $(median <<<"${fig[$m,eval]}")x"
done
