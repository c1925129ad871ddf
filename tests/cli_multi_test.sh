#!/usr/bin/env bash
# `clnet train` and `clnet bench` on two devices (run with PoCL posing as two):
# a fixed split repeats bit for bit, a failing device stops the run cleanly
# with the last checkpoint intact, each device's share is reported, async
# training runs, and `bench` ends with its aggregate line.
# usage: cli_multi_test.sh CLNET MODEL_DIR
set -u
clnet=$1 models=$2
. "$(dirname "$0")/need_fashion_mnist.sh"
work=$(mktemp -d /tmp/clnet-cli-multi-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }
run=(train "$models/lenet.cfg" --train-limit 640 --test-limit 128 --batch 64 --epochs 2 --lr 0.05 --momentum 0.9 --no-eval)

"$clnet" "${run[@]}" --deterministic --steps 8 --save "$work/a.safetensors" >/dev/null 2>"$work/a.err"
"$clnet" "${run[@]}" --deterministic --steps 8 --save "$work/b.safetensors" >/dev/null 2>&1
if cmp -s "$work/a.safetensors" "$work/b.safetensors"; then ok "--deterministic twice gives identical checkpoints"
else bad "--deterministic runs differ" "$(cat "$work/a.err")"; fi

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

out=$("$clnet" "${run[@]}" --steps 12 2>&1)
if [ "$(grep -cE '^  device [0-9]+ \(.*\): [0-9]+ samples, [0-9]+ images/s$' <<<"$out")" -ge 2 ]; then
  ok "each device's share and speed are reported"
else bad "per-device lines" "$out"; fi

# a device fails in step 5: the run stops, naming it; the checkpoint from step 4 stays
"$clnet" "${run[@]}" --deterministic --steps 4 --save "$work/step4.safetensors" >/dev/null 2>&1
out=$(CLNET_FAULT=1:5 "$clnet" "${run[@]}" --deterministic --steps 8 --save "$work/f.safetensors" --save-every 2 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q 'injected fault' <<<"$out" && grep -q 'device 1 (' <<<"$out" &&
   cmp -s "$work/f.safetensors" "$work/step4.safetensors"; then
  ok "a failing device stops the run; the last checkpoint is intact"
else bad "fault injection (rc $rc)" "$out"; fi

out=$("$clnet" "${run[@]}" --sync async --staleness 1 --steps 10 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q '^final: ' <<<"$out"; then ok "--sync async trains"
else bad "async" "$out"; fi

out=$("$clnet" "${run[@]}" --split 1,2,3 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q 'expected 2 weights' <<<"$out"; then ok "--split must give one weight per device"
else bad "--split check" "$out"; fi

out=$("$clnet" bench "$models/lenet.cfg" --batch 32 --steps 2 2>&1)
rc=$?
if [ $rc -eq 0 ] && tail -n1 <<<"$out" | grep -qE '^aggregate: images_per_s=[0-9]+ efficiency=[0-9.]+ equal_split_efficiency=[0-9.]+$'; then
  ok "bench ends with the aggregate line ($(tail -n1 <<<"$out"))"
else bad "bench" "$out"; fi
exit $fail
