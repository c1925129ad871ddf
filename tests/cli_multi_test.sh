#!/usr/bin/env bash
# `clnet train` and `clnet bench` on two devices (run with PoCL posing as two):
# a fixed split repeats bit for bit, a failing device stops the run cleanly
# with the last checkpoint intact, each device's share is reported, async
# training runs, `bench` ends with its aggregate line, and unequal and changing
# splits take the steps of one device (issue 21's acceptance: they overran the
# convolutions' scratch and crashed).
# CI's extended step (CLNET_TEST_PARTS=extended, tests/parts.sh) runs ResNet-18
# (narrow) at two fixed unequal splits and a changing one (the suite's
# resnet_multi.pocl2 splits it through the library), and `clnet tune` on both
# devices, whose database --deterministic then repeats bit for bit (a cold tune
# compiles every candidate kernel: a minute here).
# usage: cli_multi_test.sh CLNET MODEL_DIR CKPT_COMPARE
set -u
clnet=$1 models=$2 compare=$3
. "$(dirname "$0")/need_fashion_mnist.sh"
. "$(dirname "$0")/parts.sh"
work=$(mktemp -d /tmp/clnet-cli-multi-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }
run=(train "$models/lenet.cfg" --train-limit 640 --test-limit 128 --batch 64 --epochs 2 --lr 0.05 --momentum 0.9 --no-eval)

# Unequal, empty and changing splits equal one device: every float tensor of
# the state (parameters, optimizer momentum, batch norm statistics) within 1e-4
# of one device's. The momentum buffers hold the sum of the steps' gradients;
# lr 1e-6 takes every step's gradient at the initial parameters, because a
# rounding difference moves a deep gradient of ResNet-18 by percents once a
# ReLU input lies within rounding of 0 (one device against itself with CLBlast
# for its GEMMs: 0.6% after 3 steps with seed 1), and seed 2's batches have
# none (1.1e-5 there). First the model that crashed with heap corruption at
# --split 1,4 (a pass over 51 samples ran a chunk larger than the scratch
# planned for 64), then d2l's ResNet-18 (narrow) with batch norm.
cat >"$work/two_convs.cfg" <<'M'
input channels=1 height=28 width=28
conv2d name=stem filters=8 size=3 pad=1
relu name=r0
conv2d name=a filters=8 size=3 pad=1
flatten
linear name=fc units=10
softmax_cross_entropy
M
same_as_one() { # name model batch tolerance splits...
  local name=$1 model=$2 batch=$3 tolerance=$4
  shift 4
  local base=(train "$model" --batch "$batch" --lr 1e-6 --momentum 0.9 --seed 2 --no-eval
              --train-limit 2048 --steps 3)
  if ! out=$("$clnet" "${base[@]}" --devices 0 --save "$work/$name.one.st" 2>&1); then
    bad "$name on one device" "$out"; return
  fi
  for split in "$@"; do
    if ! out=$("$clnet" "${base[@]}" --split "$split" --save "$work/$name.split.st" 2>&1); then
      bad "$name with --split $split" "$out"; continue
    fi
    if cmp=$("$compare" - "$work/$name.one.st" "$work/$name.split.st" "$tolerance" bias-by-weight 2>&1)
    then ok "$name, batch $batch, --split $split takes one device's steps ($(tail -1 <<<"$cmp"))"
    else bad "$name, --split $split against one device" "$cmp"; fi
  done
}

# The suite's parts (tests/parts.sh); the extended step runs the rest.
if part suite; then
  "$clnet" "${run[@]}" --deterministic --steps 8 --save "$work/a.safetensors" >/dev/null 2>"$work/a.err"
  "$clnet" "${run[@]}" --deterministic --steps 8 --save "$work/b.safetensors" >/dev/null 2>&1
  if cmp -s "$work/a.safetensors" "$work/b.safetensors"; then ok "--deterministic twice gives identical checkpoints"
  else bad "--deterministic runs differ" "$(cat "$work/a.err")"; fi

  out=$("$clnet" "${run[@]}" --steps 12 2>&1)
  if [ "$(grep -cE '^  device [0-9]+ \(.*\): [0-9]+ samples, [0-9]+ images/s$' <<<"$out")" -ge 2 ]; then
    ok "each device's share and speed are reported"
  else bad "per-device lines" "$out"; fi

  # a device fails in step 5: the run stops, naming it; the checkpoint from step 4 stays
  "$clnet" "${run[@]}" --deterministic --steps 4 --save "$work/step4.safetensors" >/dev/null 2>&1
  out=$(CLNET_FAULT=1:5 "$clnet" "${run[@]}" --deterministic --steps 8 --save "$work/f.safetensors" --save-every 2 \
        --on-device-failure stop 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && grep -q 'injected fault' <<<"$out" && grep -q 'device 1 (' <<<"$out" &&
     cmp -s "$work/f.safetensors" "$work/step4.safetensors"; then
    ok "--on-device-failure stop: a failing device stops the run; the last checkpoint is intact"
  else bad "fault injection (rc $rc)" "$out"; fi

  # the default, continue: the device is dropped in step 5 and the others go on; the result is
  # that of a split that gives it nothing from step 5 on (--split rows, one per step in turn)
  out=$(CLNET_FAULT=1:5:kernels "$clnet" "${run[@]}" --deterministic --steps 8 --save "$work/c.safetensors" 2>&1)
  rc=$?
  "$clnet" "${run[@]}" --split 1,1/1,1/1,1/1,1/1,1/1,0/1,0/1,0 --steps 8 --save "$work/c.ref.safetensors" >/dev/null 2>&1
  if [ $rc -eq 0 ] && grep -qE "^clnet: warning: step 5: device 1 \(.*injected fault.*that device is dropped, and 1 device goes on" <<<"$out" &&
     grep -qE "^  device 1 \(.*\): dropped, having failed in step 5" <<<"$out" &&
     grep -qE "^final: .* dropped_devices=1$" <<<"$out" &&
     "$compare" - "$work/c.safetensors" "$work/c.ref.safetensors" 0 >/dev/null 2>&1; then
    ok "a failing device is dropped and the run goes on, as if the split had left it out"
  else bad "--on-device-failure continue (rc $rc)" "$out" "$("$compare" - "$work/c.safetensors" "$work/c.ref.safetensors" 0 2>&1)"; fi

  out=$("$clnet" "${run[@]}" --sync async --staleness 1 --steps 10 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && grep -q '^final: ' <<<"$out"; then ok "--sync async trains"
  else bad "async" "$out"; fi

  # the same fault under --sync async (in the update the device pulled at), before and after
  # its forward pass: stop names it; continue hands its batch to the other device and goes on
  for point in start kernels; do
    out=$(CLNET_FAULT=1:3:$point "$clnet" "${run[@]}" --sync async --staleness 1 --steps 10 \
          --on-device-failure stop 2>&1)
    rc=$?
    if [ $rc -eq 1 ] && grep -qE 'device 1 \(.*injected fault \(CLNET_FAULT\)' <<<"$out" && ! grep -q '^final: ' <<<"$out"; then
      ok "async: a device failing ($point) stops the run, naming it"
    else bad "async fault at $point (rc $rc)" "$out"; fi
    out=$(CLNET_FAULT=1:3:$point "$clnet" "${run[@]}" --sync async --staleness 1 --steps 10 \
          --save "$work/async.safetensors" 2>&1)
    rc=$?
    step=$(python3 -c "import json,struct,sys; b=open(sys.argv[1],'rb').read(); n=struct.unpack('<Q',b[:8])[0]; print(json.loads(b[8:8+n])['__metadata__']['step'])" "$work/async.safetensors" 2>/dev/null)
    if [ $rc -eq 0 ] && grep -qE '^clnet: warning: step [0-9]+: device 1 \(.*injected fault.*that device is dropped' <<<"$out" &&
       grep -qE '^final: .* dropped_devices=1$' <<<"$out" && [ "$step" = 10 ]; then
      ok "async: a device failing ($point) is dropped, and all 10 updates are applied"
    else bad "async continue at $point (rc $rc, step $step)" "$out"; fi
  done

  # --check-replicas: quiet on a clean run, stops naming the device whose parameters drifted
  out=$("$clnet" "${run[@]}" --steps 6 --check-replicas 1 2>&1); rc=$?
  out2=$(CLNET_FAULT=1:3:drift "$clnet" "${run[@]}" --steps 6 --check-replicas 2 2>&1); rc2=$?
  if [ $rc -eq 0 ] && grep -q '^final: ' <<<"$out" && [ $rc2 -eq 1 ] &&
     grep -qE "^clnet: --check-replicas: after step 4: device 1 \(.*\) has drifted from the host's copy: parameter 'conv1.weight' \(element 0, .*lenet.cfg:[0-9]+\)" <<<"$out2"; then
    ok "--check-replicas passes a clean run and stops at a drifted replica, naming it"
  else bad "--check-replicas (rc $rc, $rc2)" "$out" "$out2"; fi

  out=$("$clnet" "${run[@]}" --split 1,2,3 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && grep -q 'expected 2 weights' <<<"$out"; then ok "--split must give one weight per device"
  else bad "--split check" "$out"; fi

  out=$("$clnet" "${run[@]}" --split 1,4/3 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && grep -q "several such splits separated by '/'" <<<"$out"; then
    ok "--split rows must each give one weight per device"
  else bad "--split rows check" "$out"; fi

  same_as_one two_convs "$work/two_convs.cfg" 64 1e-4 1,4 4,1 1,3/3,1/0,1

  out=$("$clnet" bench "$models/lenet.cfg" --batch 32 --steps 2 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && tail -n1 <<<"$out" | grep -qE '^aggregate: images_per_s=[0-9]+ efficiency=[0-9.]+ equal_split_efficiency=[0-9.]+$'; then
    ok "bench ends with the aggregate line ($(tail -n1 <<<"$out"))"
  else bad "bench" "$out"; fi
  # the machine's ceiling, measured beside it: at least 5 rounds, each figure between
  # its min and max;
  # or, where the balanced split gave a device no share (a loaded machine can make
  # one look too slow to help at this batch), said to be not measured
  ceiling=$(tail -n2 <<<"$out" | head -n1)
  if grep -q '^all devices, balanced split: .* 0 samples a step' <<<"$out"; then
    if [[ $ceiling == "ceiling: not measured (a device alone is estimated, or has no share)" ]]; then
      ok "bench says the ceiling is not measured when a device has no share"
    else bad "bench ceiling without a share" "$out"; fi
  elif [[ $ceiling =~ ^ceiling:\ ratio=([0-9.]+)\ min=([0-9.]+)\ max=([0-9.]+)\ rounds=([0-9]+)\ share_efficiency=[0-9.]+\ efficiency_over_ceiling=([0-9.]+)\ over_min=([0-9.]+)\ over_max=([0-9.]+)$ ]] &&
    (( ${BASH_REMATCH[4]} >= 5 )) &&
    awk -v r="${BASH_REMATCH[1]}" -v lo="${BASH_REMATCH[2]}" -v hi="${BASH_REMATCH[3]}" \
      -v e="${BASH_REMATCH[5]}" -v elo="${BASH_REMATCH[6]}" -v ehi="${BASH_REMATCH[7]}" \
      'BEGIN { exit !(lo <= r && r <= hi && lo > 0 && elo <= e && e <= ehi && elo > 0) }'; then
    ok "bench measures the ceiling beside it ($ceiling)"
  else bad "bench ceiling" "$out"; fi
fi

if part extended; then
  # with a tuning database of this test's own (clnet tune on both devices): --deterministic
  # twice is still identical, and the checkpoint records the choices it used
  export CLNET_CACHE_DIR="$work/cache"
  if "$clnet" tune "$models/lenet.cfg" --batch 64 >"$work/tune.out" 2>&1 && [ -s "$work/cache/tune.db" ] &&
     grep -q 'chosen$' "$work/tune.out"; then ok "clnet tune measures and stores its choices"
  else bad "clnet tune" "$(cat "$work/tune.out")"; fi
  "$clnet" "${run[@]}" --deterministic --steps 8 --save "$work/c.safetensors" >/dev/null 2>"$work/c.err"
  "$clnet" "${run[@]}" --deterministic --steps 8 --save "$work/d.safetensors" >/dev/null 2>&1
  if cmp -s "$work/c.safetensors" "$work/d.safetensors" && grep -aq 'gemm_choices' "$work/c.safetensors"
  then ok "--deterministic twice with a tuning database gives identical checkpoints, choices recorded"
  else bad "--deterministic with a database" "$(cat "$work/c.err")"; fi
  unset CLNET_CACHE_DIR

  # ResNet-18 at init is ill-conditioned in float32: its convolutions' small
  # weights leave many activations within rounding of a relu's kink, and
  # batch norm's bias and weight gradients are sums that cancel, so the
  # rounding of another split (or another convolution algorithm on one
  # device) moves some of them by 1e-3 to 1e-2 relative. Measured on the EPYC
  # VM, 2026-11-26, seeds 2-5 with splits 1,4 and 3,1: the split beyond 1e-4
  # of one device in 3 of 6 runs with CLNET_CONV=im2col (up to 3.7e-3, the
  # algorithm of clnet 0.3) and 1 of 5 with implicit (3.8e-3).
  # A wrong share or a lost sample moves them by far more; the generated cases
  # of test_splits hold small graphs to 1e-4.
  same_as_one resnet18_w16 "$models/resnet18_w16.cfg" 32 2e-2 1,4 3,1 1,4/3,1/1,0
fi
exit $fail
