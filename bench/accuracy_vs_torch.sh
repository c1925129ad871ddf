#!/usr/bin/env bash
# One model file trained by `clnet train` and by PyTorch (bench/torch_train.py,
# which builds the same network with examples/torch_model.py) with the same
# options, from the same initial parameters (clnet's, saved by `--steps 0`),
# on the same data. Prints each program's epoch lines as they come, then
#   clnet:   test_accuracy=<a> seconds_per_epoch=<s> images_per_s=<n>
#   PyTorch: test_accuracy=<a> seconds_per_epoch=<s> images_per_s=<n>
# where seconds per epoch are the mean of the epoch lines' seconds= (training
# and evaluating the test set, wall clock) and images/s the final line's
# (training steps alone). Shared by volumes_vs_torch.sh
# and conv1d_vs_torch.sh.
#   bench/accuracy_vs_torch.sh MODEL.cfg OPTIONS...
# OPTIONS are what both take (torch_train.py mirrors clnet's names): --data or
# --data-npy X,Y,TX,TY, --epochs, --batch, --lr, --momentum, --nesterov, --wd,
# --schedule, --mean, --std, --seed, --train-limit, --test-limit. BUILD_DIR
# (default build) holds clnet; THREADS (default 2) PyTorch's threads;
# CLNET_DEVICES picks clnet's devices.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${BUILD_DIR:-$here/../build}" && pwd)
threads=${THREADS:-2}
model=$1
shift
work=$(mktemp -d /tmp/clnet-accuracy-vs-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(date +%F);" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "model: $model; options: $*"

"$build/clnet" train "$model" "$@" --steps 0 --no-eval --save "$work/init.safetensors" \
  >/dev/null 2>"$work/init.err" || { cat "$work/init.err" >&2; exit 1; }

# run NAME COMMAND...: its stderr lines prefixed with NAME as they come, its
# stderr in $work/NAME.err and its final line in $work/NAME.final
run() {
  local name=$1
  shift
  { "$@" 2>&1 >&3 | tee "$work/$name.err" | sed -u "s/^/$name: /" >&2; } 3>"$work/$name.out"
  grep '^final: ' "$work/$name.out" >"$work/$name.final" ||
    { echo "$name: no final line" >&2; exit 1; }
}
run clnet "$build/clnet" train "$model" "$@"
run PyTorch /usr/bin/python3 "$here/torch_train.py" "$model" "$@" --threads "$threads" \
  --init "$work/init.safetensors"

for name in clnet PyTorch; do
  acc=$(sed -n 's/.*test_accuracy=\([0-9.]*\).*/\1/p' "$work/$name.final")
  ips=$(sed -n 's/.*images_per_s=\([0-9]*\).*/\1/p' "$work/$name.final")
  secs=$(sed -n 's/^epoch [0-9]*: .* seconds=\([0-9.]*\) .*/\1/p' "$work/$name.err" |
    awk '{s += $1} END {if (NR) printf "%.1f", s / NR}')
  printf '%-8s test_accuracy=%s seconds_per_epoch=%s images_per_s=%s\n' "$name:" "$acc" "$secs" "$ips"
done
