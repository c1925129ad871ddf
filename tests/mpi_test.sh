#!/usr/bin/env bash
# `clnet train` and `clnet eval` across MPI ranks, with Open MPI on this
# machine (each rank sees the PoCL device(s) of the configuration):
#   - 2 ranks x 1 device take the steps of 1 device (updates within 1e-4),
#     and so do 2 ranks x 2 devices, and 2 ranks clipping by the global norm;
#   - --deterministic twice gives identical checkpoints;
#   - every device of every rank is reported, --devices local-rank gives
#     ranks that share a machine a device each;
#   - evaluation split across ranks counts what one process counts;
#   - a checkpoint written by 2 ranks resumes on 1 rank and on 2;
#   - a rank killed (SIGKILL), or stopped by SIGINT, ends every rank within
#     30 s with a non-zero status, and the last checkpoint is byte for byte
#     what a clean run wrote at its step; so does a device failure on one
#     rank (CLNET_FAULT), whose message names the rank and the device;
#   - a rank too slow for --mpi-timeout is named by the others' message;
#   - predict, bench and tune refuse to run once per rank;
#   - --sync async across 2 ranks (rank 0 the parameter server) learns:
#     >= 0.70 test accuracy on 1,000 images after 300 updates of 64, with
#     the worst staleness within the bound and both ranks' devices pushing.
# In a build without MPI it checks instead that mpirun gets a clear message.
# The suite runs the parts of `suite` (tests/parts.sh); CI's extended step those of
# `extended` (the signals, the refusals, async training and `--deterministic` twice).
# usage: mpi_test.sh CLNET MODEL_DIR CKPT_COMPARE
set -u
clnet=$1 models=$2 compare=$3
. "$(dirname "$0")/need_fashion_mnist.sh"
. "$(dirname "$0")/parts.sh"
if ! command -v mpirun >/dev/null 2>&1; then
  echo "skipped: mpirun is not installed (apt-get install openmpi-bin)"
  exit 77
fi
work=$(mktemp -d /tmp/clnet-mpi-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }
# Open MPI as root, in a container (no cross-memory attach), on one machine
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(timeout 300 mpirun --bind-to none -np 2)
run=(train "$models/lenet.cfg" --train-limit 640 --test-limit 256 --batch 64 --lr 0.05 --momentum 0.9
     --no-eval)

if ! "$clnet" version | grep -q 'MPI: yes'; then
  out=$("${mpi[@]}" "$clnet" "${run[@]}" --steps 1 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && grep -q 'built without MPI' <<<"$out" && grep -q 'rank [01] of 2' <<<"$out"; then
    ok "a build without MPI says so under mpirun"
  else bad "no-MPI message (rc $rc)" "$out"; fi
  exit $fail
fi

if part suite; then
  # the updates of 5 steps: 2 ranks x 1 device, and 2 x 2, against 1 device
  "$clnet" "${run[@]}" --steps 0 --save "$work/start.st" >/dev/null 2>&1
  "$clnet" "${run[@]}" --steps 5 --save "$work/one.st" >/dev/null 2>"$work/one.err" ||
    bad "one device" "$(cat "$work/one.err")"
  "${mpi[@]}" "$clnet" "${run[@]}" --steps 5 --save "$work/two.st" >"$work/two.out" 2>&1
  if out=$("$compare" "$work/start.st" "$work/one.st" "$work/two.st" 1e-4); then
    ok "2 ranks x 1 device take the steps of 1 device: $out"
  else bad "2 ranks x 1 device against 1 device" "$out" "$(cat "$work/two.out")"; fi
  POCL_DEVICES="$POCL_TWO" "${mpi[@]}" -x POCL_DEVICES "$clnet" "${run[@]}" --steps 5 \
    --save "$work/four.st" >"$work/four.out" 2>&1
  if out=$("$compare" "$work/start.st" "$work/one.st" "$work/four.st" 1e-4) &&
     [ "$(grep -cE '^  rank [01] device [01] \(.*\): [0-9]+ samples, [0-9]+ images/s$' "$work/four.out")" = 4 ]
  then ok "2 ranks x 2 devices take the steps of 1 device, each device reported: $out"
  else bad "2 ranks x 2 devices" "$out" "$(cat "$work/four.out")"; fi

  # clipped by the gradient's global norm: the norm of the sum over the ranks, so every rank
  # clips alike (--check-replicas compares the ranks' parameters after every step)
  clip=("${run[@]}" --clip-grad-norm 0.05 --steps 5)
  "$clnet" "${clip[@]}" --save "$work/clip_one.st" >/dev/null 2>"$work/clip_one.err" ||
    bad "one device, clipped" "$(cat "$work/clip_one.err")"
  "${mpi[@]}" "$clnet" "${clip[@]}" --check-replicas 1 --save "$work/clip_two.st" \
    >"$work/clip_two.out" 2>&1
  if out=$("$compare" "$work/start.st" "$work/clip_one.st" "$work/clip_two.st" 1e-4) &&
     ! cmp -s "$work/one.st" "$work/clip_one.st"; then
    ok "2 ranks x 1 device take the clipped steps of 1 device: $out"
  else bad "--clip-grad-norm: 2 ranks against 1 device" "$out" "$(cat "$work/clip_two.out")"; fi

  out=$(POCL_DEVICES="$POCL_TWO" "${mpi[@]}" -x POCL_DEVICES "$clnet" "${run[@]}" --steps 2 \
        --devices local-rank 2>&1)
  if grep -qE '^  rank 0 device 0 \(' <<<"$out" && grep -qE '^  rank 1 device 1 \(' <<<"$out" &&
     [ "$(grep -cE '^  rank' <<<"$out")" = 2 ]; then
    ok "--devices local-rank gives each rank a device of its own"
  else bad "--devices local-rank" "$out"; fi

  # evaluation split across ranks: the same count of correct answers
  # (stdout's last line: under mpirun the ranks' stderr, with eval's speed, may come after it)
  want=$("$clnet" eval "$models/lenet.cfg" --weights "$work/one.st" --test-limit 500 \
         2>"$work/eval1.err" | tail -n1)
  got=$("${mpi[@]}" "$clnet" eval "$models/lenet.cfg" --weights "$work/one.st" --test-limit 500 \
        2>"$work/eval2.err" | tail -n1)
  if [ -n "$want" ] && [ "$want" = "$got" ]; then ok "evaluation across ranks: $got, as one process"
  else bad "evaluation across ranks" "one process: $want $(cat "$work/eval1.err")" \
    "2 ranks: $got $(cat "$work/eval2.err")"; fi

  # top-k and the confusion matrix across ranks: the ranks' logits counted as one process's
  want=$("$clnet" eval "$models/lenet.cfg" --weights "$work/one.st" --test-limit 500 --top-k 3 \
         --confusion "$work/conf1.csv" 2>"$work/eval1.err" | grep '^test_top3_accuracy=')
  got=$("${mpi[@]}" "$clnet" eval "$models/lenet.cfg" --weights "$work/one.st" --test-limit 500 \
        --top-k 3 --confusion "$work/conf2.csv" 2>"$work/eval2.err" | grep '^test_top3_accuracy=')
  if [ -n "$want" ] && [ "$want" = "$got" ] && [ -s "$work/conf1.csv" ] &&
     cmp -s "$work/conf1.csv" "$work/conf2.csv"; then
    ok "top-k and the confusion matrix across ranks: $got and the same CSV, as one process"
  else bad "top-k across ranks" "one process: $want $(cat "$work/eval1.err")" \
    "2 ranks: $got $(cat "$work/eval2.err")"; fi

  # resume: 3 steps on 2 ranks, then 3 more on 1 rank and on 2, against 6 uninterrupted
  "${mpi[@]}" "$clnet" "${run[@]}" --steps 6 --deterministic --save "$work/det1.st" >/dev/null 2>&1
  "${mpi[@]}" "$clnet" "${run[@]}" --steps 3 --deterministic --save "$work/mid.st" >/dev/null 2>&1
  cp "$work/mid.st" "$work/mid1.st"
  "$clnet" "${run[@]}" --steps 6 --deterministic --resume "$work/mid1.st" --save "$work/r1.st" \
    >/dev/null 2>&1
  "${mpi[@]}" "$clnet" "${run[@]}" --steps 6 --deterministic --resume "$work/mid.st" \
    --save "$work/r2.st" >/dev/null 2>&1
  if out=$("$compare" - "$work/r1.st" "$work/det1.st" 1e-5) && cmp -s "$work/r2.st" "$work/det1.st"
  then ok "a checkpoint of 2 ranks resumes on 1 rank ($out) and on 2 (bitwise)"
  else bad "resume across ranks" "$out"; fi

  # a device fails on rank 1 in step 3 (CLNET_FAULT, in rank 1's environment alone): its
  # message names the rank and the device, every rank stops, the step-2 checkpoint stands
  rm -f "$work/f.st"
  start=$(date +%s)
  timeout 300 mpirun --bind-to none -np 1 "$clnet" "${run[@]}" --steps 6 --deterministic \
    --on-device-failure stop --save-every 2 --save "$work/f.st" : -np 1 env CLNET_FAULT=0:3 \
    "$clnet" "${run[@]}" --steps 6 --deterministic --on-device-failure stop --save-every 2 \
    --save "$work/f.st" >"$work/f.out" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  "${mpi[@]}" "$clnet" "${run[@]}" --steps 2 --deterministic --save "$work/f2.st" >/dev/null 2>&1
  if [ $rc -ne 0 ] && [ "$took" -le 30 ] &&
     grep -qE '^clnet: rank 1: .*device 0 \(.*injected fault \(CLNET_FAULT\) in step 3' "$work/f.out" &&
     cmp -s "$work/f.st" "$work/f2.st"; then
    ok "a device failure on rank 1 names rank 1 and device 0, every rank gone in ${took} s (status $rc), the step-2 checkpoint stands"
  else bad "device failure on rank 1 (status $rc, ${took} s)" "$(tail -n 20 "$work/f.out")"; fi

  # rank 1 throttled far past --mpi-timeout 1 (an equal split: --deterministic): rank 0 names it
  start=$(date +%s)
  timeout 300 mpirun --bind-to none -np 1 "$clnet" "${run[@]}" --steps 4 --deterministic \
    --mpi-timeout 1 : -np 1 env CLNET_THROTTLE=0:400 "$clnet" "${run[@]}" --steps 4 \
    --deterministic --mpi-timeout 1 >"$work/slow.out" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  if [ $rc -ne 0 ] && [ "$took" -le 30 ] &&
     grep -qE '^clnet: rank 0: .*did not arrive within 1 s \(--mpi-timeout\): rank 1 \(' "$work/slow.out"
  then ok "a rank past --mpi-timeout is named: $(grep -oE 'rank 1 \([^)]*\)' "$work/slow.out" | head -n1)"
  else bad "--mpi-timeout naming a late rank (status $rc, ${took} s)" "$(tail -n 20 "$work/slow.out")"; fi
fi

if part extended; then
  for k in 1 2; do
    "${mpi[@]}" "$clnet" "${run[@]}" --steps 6 --deterministic --save "$work/det$k.st" >/dev/null 2>&1
  done
  if cmp -s "$work/det1.st" "$work/det2.st"; then ok "--deterministic on 2 ranks twice: identical checkpoints"
  else bad "--deterministic on 2 ranks differs"; fi

  # a rank dies (SIGKILL), or is stopped (SIGINT): every rank ends, the checkpoint stands
  for sig in KILL INT; do
    rm -f "$work/k.st"
    "${mpi[@]}" "$clnet" "${run[@]}" --steps 100000 --deterministic --save-every 20 \
      --save "$work/k.st" >"$work/k.out" 2>&1 &
    launcher=$!
    for _ in $(seq 600); do [ -s "$work/k.st" ] && break; sleep 0.1; done
    sleep 0.5
    victim=""
    # this job's processes alone (other tests may run clnet meanwhile): by its unique save path
    for p in $(pgrep -f -- "--save $work/k.st"); do
      if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
        victim=$p
      fi
    done
    start=$(date +%s)
    [ -n "$victim" ] && kill -s "$sig" "$victim"
    wait $launcher
    rc=$?
    took=$(( $(date +%s) - start ))
    left=$(pgrep -fc -- "--save $work/k.st" || true)
    step=$(grep -ao '"step":"[0-9]*"' "$work/k.st" | grep -o '[0-9]*')
    "${mpi[@]}" "$clnet" "${run[@]}" --steps "${step:-0}" --deterministic --save "$work/clean.st" \
      >/dev/null 2>&1
    if [ -n "$victim" ] && [ $rc -ne 0 ] && [ "$took" -le 30 ] && [ "$left" = 0 ] &&
       [ -n "$step" ] && cmp -s "$work/k.st" "$work/clean.st"; then
      ok "SIG$sig to rank 1: every rank gone in ${took} s (status $rc); the checkpoint of step $step is a clean run's"
    else bad "SIG$sig to rank 1 (victim '$victim', status $rc, ${took} s, $left left, step '$step')" \
      "$(tail -n 20 "$work/k.out")"; fi
  done

  # commands of one process refuse a job of several ranks (they would write the same files)
  for cmd in predict bench tune; do
    out=$("${mpi[@]}" "$clnet" $cmd "$models/lenet.cfg" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] && [ "$(grep -c "clnet: $cmd runs in one process, but mpirun started 2" <<<"$out")" = 1 ]
    then ok "clnet $cmd under mpirun -np 2 refuses, once"
    else bad "clnet $cmd under mpirun (status $rc)" "$out"; fi
  done

  # asynchronous training across ranks: rank 0 serves, every device of both ranks pushes
  printf '%s\n' "input channels=1 height=28 width=28" "conv2d filters=20 size=3" relu \
    "avgpool size=2 stride=2" "conv2d filters=50 size=5" relu "avgpool size=2 stride=2" flatten \
    "linear units=128" relu "linear units=10" softmax_cross_entropy >"$work/lenet_relu.cfg"
  "${mpi[@]}" "$clnet" train "$work/lenet_relu.cfg" --sync async --staleness 1 --steps 300 \
    --batch 64 --lr 0.1 --test-limit 1000 >"$work/async.out" 2>&1
  acc=$(grep -o 'final: test_accuracy=[0-9.]*' "$work/async.out" | grep -o '[0-9.]*$')
  worst=$(grep -o 'worst staleness [0-9]*' "$work/async.out" | grep -o '[0-9]*$')
  pushed=$(grep -cE '^  rank [01] device 0 \(.*\): [1-9][0-9]* samples' "$work/async.out")
  if [ -n "$acc" ] && awk -v a="$acc" 'BEGIN { exit !(a >= 0.70) }' && [ -n "$worst" ] &&
     [ "$worst" -le 1 ] && [ "$pushed" = 2 ]; then
    ok "async across 2 ranks: test accuracy $acc after 300 updates of 64, worst staleness $worst (bound 1), both ranks pushed"
  else bad "async across 2 ranks (accuracy '$acc', worst staleness '$worst', $pushed ranks pushed)" \
    "$(tail -n 20 "$work/async.out")"; fi
fi
exit $fail
