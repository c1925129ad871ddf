#!/bin/bash
# Start-up: the seconds of a whole short process, clnet cold and warm against
# PyTorch's, interleaved. Each of ROUNDS rounds runs
#   cold:    clnet train MODEL --batch 64 --steps 1 --train-limit 128 --no-eval with
#            clnet's and PoCL's kernel caches in new, empty folders
#   warm:    the same again, with the caches the cold run filled
#   PyTorch: bench/pytorch_lenet.py --model MODEL --batch 64 --steps 4 --no-eval
#            (2 threads): importing torch, reading Fashion-MNIST, 4 steps
# then prints the medians and cold clnet over PyTorch.
#   bench/startup_vs_torch.sh [MODEL] [ROUNDS] [CLNET]
# MODEL: lenet (default), resnet18_w16, resnet18; CLNET: the clnet program
# (default build/clnet; another build's measures that build). Run from the
# repository root; needs Debian's python3-torch.
set -euo pipefail
model=${1:-lenet}
rounds=${2:-3}
clnet=${3:-build/clnet}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
seconds() { # COMMAND...: runs it quietly, prints its wall seconds
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
    t1=$(date +%s%N)
    awk "BEGIN{printf \"%.2f\", ($t1 - $t0) / 1e9}"
}
train() {
    CLNET_CACHE_DIR="$scratch/clnet" POCL_CACHE_DIR="$scratch/pocl" "$clnet" train \
        "examples/models/$model.cfg" --batch 64 --steps 1 --train-limit 128 --no-eval
}
torch() {
    /usr/bin/python3 bench/pytorch_lenet.py --model "$model" --batch 64 --steps 4 --no-eval \
        --threads 2
}
cold=() warm=() theirs=()
for r in $(seq 1 "$rounds"); do
    rm -rf "${scratch:?}/clnet" "$scratch/pocl"
    mkdir -p "$scratch/clnet" "$scratch/pocl"
    c=$(seconds train)
    w=$(seconds train)
    p=$(seconds torch)
    echo "round $r: clnet cold $c s, warm $w s; PyTorch $p s"
    cold+=("$c") warm+=("$w") theirs+=("$p")
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END{print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
mc=$(median "${cold[@]}") mw=$(median "${warm[@]}") mp=$(median "${theirs[@]}")
echo "median: clnet cold $mc s, warm $mw s; PyTorch $mp s; cold clnet / PyTorch $(awk "BEGIN{printf \"%.2f\", $mc / $mp}")"
