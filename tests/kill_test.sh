#!/usr/bin/env bash
# kill -9 at any moment: `clnet train --save-every 1` is killed with SIGKILL
# at random moments, and every third one inside a save (CLNET_SAVE_PAUSE
# makes each save sleep half-way through it), and resumed each time. After every
# kill the checkpoint is whole and loads; a temporary file the kill left is
# removed by the next save (clnet_atomic_clean_stale); and the run, resumed
# to its end, gives the checkpoint of a run never interrupted, byte for byte.
# usage: kill_test.sh CLNET MODEL_DIR [KILLS] (seed: CLNET_KILL_SEED). With
# CLNET_TEST_BUDGET=S (CI's extended step) it goes on killing past KILLS until
# S seconds have passed.
set -u
clnet=$1 models=$2 kills=${3:-24}
budget=${CLNET_TEST_BUDGET:-0}
. "$(dirname "$0")/need_fashion_mnist.sh"
work=$(mktemp -d /tmp/clnet-kill-XXXXXX)
[ -n "${CLNET_KILL_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
export CLNET_GUARD=0 # not a memory test: full speed, so that kills land in steps and saves
seed=${CLNET_KILL_SEED:-$(date +%s)}
RANDOM=$seed
echo "seed $seed (replay: CLNET_KILL_SEED=$seed)"
fail=0
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }
steps=150
run=(train "$models/lenet.cfg" --train-limit 640 --batch 32 --lr 0.05 --momentum 0.9 --epochs 10
     --no-eval --seed 11 --steps $steps)
ck=$work/ck.safetensors

"$clnet" "${run[@]}" --save "$work/ref.safetensors" >/dev/null 2>"$work/ref.err" ||
  { bad "the uninterrupted run" "$(cat "$work/ref.err")"; exit 1; }

inside=0 valid=0 stale=0 i=0
[ "$budget" -gt 0 ] && echo "at least $kills kills, then more until $budget s have passed"
while [ $i -lt "$kills" ] || [ $SECONDS -lt "$budget" ]; do
  i=$((i + 1))
  resume=()
  [ -f "$ck" ] && resume=(--resume "$ck")
  CLNET_SAVE_PAUSE=50 "$clnet" "${run[@]}" --save "$ck" --save-every 1 "${resume[@]}" \
    >/dev/null 2>"$work/run.err" &
  pid=$!
  if [ $((i % 3)) -eq 0 ]; then # aimed inside this run's second save, whatever the load
    saw=0                         # 1: inside its first save, 2: after it
    for _ in $(seq 1 2000); do
      if compgen -G "$ck.tmp.$pid.*" >/dev/null; then
        [ $saw -eq 2 ] && break
        saw=1
      elif [ $saw -eq 1 ]; then saw=2; fi
      sleep 0.01
    done
  else
    sleep "$((RANDOM % 2)).$(printf '%03d' $((RANDOM % 1000)))"
  fi
  if compgen -G "$ck.tmp.$pid.*" >/dev/null; then inside=$((inside + 1)); fi
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  stale=$((stale + $(compgen -G "$ck.tmp.$pid.*" | wc -l)))
  if [ -f "$ck" ]; then
    if "$clnet" eval "$models/lenet.cfg" --weights "$ck" --test-limit 32 --batch 32 >/dev/null 2>"$work/eval.err"; then
      valid=$((valid + 1))
    else
      bad "kill $i: the checkpoint does not load" "$(cat "$work/eval.err")"
    fi
  fi
done
kills=$i
echo "$kills kills, $inside inside a save, $valid left a checkpoint (all of them loaded)"
[ "$inside" -ge $((kills / 8)) ] && [ "$inside" -ge 1 ] ||
  bad "only $inside of $kills kills landed inside a save"

resume=()
[ -f "$ck" ] && resume=(--resume "$ck")
out=$("$clnet" "${run[@]}" --save "$ck" --save-every 1 "${resume[@]}" 2>&1) ||
  bad "the last resume" "$out"
if compgen -G "$ck.tmp.*" >/dev/null; then bad "temporary files remain" "$(ls "$work")"; fi
echo "$stale temporary files left by kills; each save removes those of dead processes: none remain"
if cmp -s "$ck" "$work/ref.safetensors"; then
  echo "ok   resumed after $kills kills: the checkpoint of the uninterrupted run, byte for byte"
else bad "the resumed run differs from the uninterrupted one"; fi
exit $fail
