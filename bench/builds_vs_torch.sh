#!/usr/bin/env bash
# Two builds of clnet against each other and against PyTorch (2 threads), interleaved: for
# LeNet at batch 256, resnet18_w16.cfg and resnet18.cfg at 128, ROUNDS rounds (default 3) of
# `clnet train` with each build, then PyTorch, after a warm-up run of each build (kernel
# caches warm). Prints each round's images/s and ratios (A/B, A/PyTorch, B/PyTorch); the
# median of each ratio is the figure. For "did this change move the CPU's speed": build the
# old commit in a worktree (git worktree add /tmp/old COMMIT && (cd /tmp/old && scripts/build.sh)).
#   bench/builds_vs_torch.sh A_CLNET B_CLNET [ROUNDS]    (from the repository root)
set -euo pipefail
a=${1:?usage: bench/builds_vs_torch.sh A_CLNET B_CLNET [ROUNDS]} b=${2:?} rounds=${3:-3}
python=${TORCH_PYTHON:-/usr/bin/python3}
recipe() { echo --batch "$1" --lr 0.05 --momentum 0.9 --wd 5e-4 --steps "$2" --no-eval; }
speed() { sed -n 's/^final: .*images_per_s=\([0-9]*\).*/\1/p'; }
ratio() { awk "BEGIN{printf \"%.3f\", $1/$2}"; }
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
for m in "lenet 256 40" "resnet18_w16 128 20" "resnet18 128 6"; do
  read -r model batch steps <<<"$m"
  # shellcheck disable=SC2046
  for c in "$a" "$b"; do "$c" train "examples/models/$model.cfg" $(recipe "$batch" 2) >/dev/null 2>&1; done
  ab=() at=() bt=()
  for r in $(seq 1 "$rounds"); do
    # shellcheck disable=SC2046
    x=$("$a" train "examples/models/$model.cfg" $(recipe "$batch" "$steps") 2>/dev/null | speed)
    # shellcheck disable=SC2046
    y=$("$b" train "examples/models/$model.cfg" $(recipe "$batch" "$steps") 2>/dev/null | speed)
    # shellcheck disable=SC2046
    z=$("$python" bench/pytorch_lenet.py --model "$model" $(recipe "$batch" "$steps") --threads 2 \
        2>/dev/null | speed)
    ab+=("$(ratio "$x" "$y")") at+=("$(ratio "$x" "$z")") bt+=("$(ratio "$y" "$z")")
    echo "$model round $r: A $x B $y PyTorch $z images/s; A/B ${ab[-1]} A/PyTorch ${at[-1]} B/PyTorch ${bt[-1]}"
  done
  echo "$model medians: A/B $(printf '%s\n' "${ab[@]}" | median) A/PyTorch $(printf '%s\n' "${at[@]}" | median) B/PyTorch $(printf '%s\n' "${bt[@]}" | median)"
done
