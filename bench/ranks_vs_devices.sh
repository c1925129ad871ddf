#!/usr/bin/env bash
# Two devices in one process against two MPI ranks of one device each, on
# this machine (PoCL's single-threaded `basic` devices, which really run at
# the same time): `clnet train` on LeNet and resnet18_w16, interleaved for
# ROUNDS rounds, --bind-to none. Prints per model and setup the median
# images/s, the ratio ranks/devices, and from the ranks' "mpi:" line the
# gradient bytes each rank all-reduces per step, how long the reductions
# were in flight, and how long the step waited for them after its devices
# finished: with the overlap (default) and with CLNET_MPI_OVERLAP=0 (every
# bucket starts after the backward pass), so the share of the all-reduce
# time the overlap hid is 1 - waited(overlap) / waited(no overlap). One
# `basic` device alone runs in each round too: the efficiency of a setup is
# its images/s over twice that of one device.
#   bench/ranks_vs_devices.sh [ROUNDS] [STEPS]
# BUILD_DIR (default build). Needs Fashion-MNIST and Open MPI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$here/../build}
rounds=${1:-3}
steps=${2:-60}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ips() { sed -n 's/^final: .*images_per_s=\([0-9]*\).*/\1/p'; }
mpi_field() { sed -n "s/^mpi: .*$1 \\([0-9.]*\\) $2.*/\\1/p"; }

for model in lenet:256 resnet18_w16:64; do
  name=${model%%:*} batch=${model##*:}
  run=(train "$here/../examples/models/$name.cfg" --batch "$batch" --steps "$steps" --lr 0.05
       --momentum 0.9 --no-eval --train-limit $((batch * steps)))
  : >/tmp/rvd.one; : >/tmp/rvd.dev; : >/tmp/rvd.rank; : >/tmp/rvd.kb; : >/tmp/rvd.fly; : >/tmp/rvd.wait
  : >/tmp/rvd.wait0
  for _ in $(seq 1 "$rounds"); do
    POCL_DEVICES=basic "$build/clnet" "${run[@]}" 2>/dev/null | ips >>/tmp/rvd.one
    POCL_DEVICES="basic basic" "$build/clnet" "${run[@]}" 2>/dev/null | ips >>/tmp/rvd.dev
    out=$(POCL_DEVICES=basic mpirun --bind-to none -np 2 -x POCL_DEVICES "$build/clnet" "${run[@]}" 2>&1)
    ips <<<"$out" >>/tmp/rvd.rank
    mpi_field "all-reduced" "KB" <<<"$out" >>/tmp/rvd.kb
    mpi_field "flight" "ms" <<<"$out" >>/tmp/rvd.fly
    mpi_field "which" "ms" <<<"$out" >>/tmp/rvd.wait
    out=$(CLNET_MPI_OVERLAP=0 POCL_DEVICES=basic mpirun --bind-to none -np 2 -x POCL_DEVICES \
          -x CLNET_MPI_OVERLAP "$build/clnet" "${run[@]}" 2>&1)
    mpi_field "which" "ms" <<<"$out" >>/tmp/rvd.wait0
  done
  one=$(median </tmp/rvd.one) d=$(median </tmp/rvd.dev) r=$(median </tmp/rvd.rank)
  w=$(median </tmp/rvd.wait) w0=$(median </tmp/rvd.wait0)
  eff() { awk -v a="$1" -v b="$one" 'BEGIN {printf "%.2f", a / (2 * b)}'; }
  echo "$name batch $batch: 1 device $one images/s; 1 rank x 2 devices $d images/s" \
    "(efficiency $(eff "$d")), 2 ranks x 1 device $r images/s (efficiency $(eff "$r"))," \
    "ratio $(awk -v a="$r" -v b="$d" 'BEGIN {printf "%.2f", a / b}');" \
    "per step each rank all-reduces $(median </tmp/rvd.kb) KB, in flight $(median </tmp/rvd.fly) ms," \
    "waited after the devices $w ms (without the overlap $w0 ms: the overlap hid" \
    "$(awk -v a="$w" -v b="$w0" 'BEGIN {printf "%.0f", (b > 0 ? 100 * (1 - a / b) : 0)}')%)"
done
rm -f /tmp/rvd.*
