#!/usr/bin/env bash
# `clnet train` and `clnet eval` as a user runs them, on a Fashion-MNIST
# subset: output format, CSV log and plot, checkpoints, resume bitwise,
# same seed twice, Ctrl-C, the per-step CSV log, clear failures on bad input, and the
# epoch figure watched (--plateau, --early-stop, --save-best, --keep-last) against PyTorch's.
# The suite runs the parts of `suite` (tests/parts.sh); CI's extended step those of
# `extended` (the models that learn further kinds of targets, and the examples).
# usage: cli_train_test.sh CLNET MODEL_DIR
set -u
clnet=$1 models=$2
. "$(dirname "$0")/need_fashion_mnist.sh"
. "$(dirname "$0")/parts.sh"
work=$(mktemp -d /tmp/clnet-cli-train-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }
expect_code() { # name code pattern args...: exits with code, its output matching pattern
  local name=$1 code=$2 pattern=$3; shift 3
  local out rc; out=$("$clnet" "$@" 2>&1); rc=$?
  if [ $rc -eq "$code" ] && grep -qE -- "$pattern" <<<"$out"; then ok "$name"
  else bad "$name (rc $rc, expected $code)" "$out"; fi
}
expect_error() { # what, words, command...: the command fails, its stderr saying the words
  local what=$1 words=$2; shift 2
  local err; err=$("$@" 2>&1 >/dev/null); local rc=$?
  if [ $rc -ne 0 ] && grep -q -- "$words" <<<"$err"; then ok "$what"; else bad "$what (rc $rc)" "$err"; fi
}
quick=(--train-limit 640 --test-limit 256 --batch 64)
npy=$(cd "$(dirname "$0")/fixtures/npy" && pwd)

if part suite; then
  # 1. a short run: stdout ends with the final line; CSV, plot and checkpoint written
  out=$("$clnet" train "$models/lenet.cfg" "${quick[@]}" --epochs 2 --lr 0.1 --momentum 0.9 \
        --save "$work/a.safetensors" --log "$work/a.csv" --plot "$work/a.svg" 2>"$work/a.err")
  rc=$?
  last=$(tail -n1 <<<"$out")
  if [ $rc -eq 0 ] && [[ $last =~ ^final:\ test_accuracy=0\.[0-9]{4}\ train_loss=[0-9]+\.[0-9]{4}\ images_per_s=[0-9]+$ ]]; then
    ok "train prints the final line ($last)"
  else bad "train final line (rc $rc)" "$out" "$(cat "$work/a.err")"; fi
  if [ "$(head -n1 "$work/a.csv")" = "epoch,train_loss,train_accuracy,test_accuracy,seconds,images_per_s,test_loss,val_loss,val_accuracy" ] &&
     [ "$(wc -l <"$work/a.csv")" -eq 3 ]; then ok "CSV log has its header and one line per epoch"
  else bad "CSV log" "$(cat "$work/a.csv")"; fi
  if grep -q '^epoch 2: train_loss=' "$work/a.err"; then ok "one plain line per epoch on stderr"
  else bad "per-epoch lines" "$(cat "$work/a.err")"; fi
  if head -c 200 "$work/a.svg" | grep -q '<svg' && tail -c 20 "$work/a.svg" | grep -q '</svg>'; then ok "SVG plot written"
  else bad "SVG plot" "$(head -c 300 "$work/a.svg")"; fi
  acc=$("$clnet" eval "$models/lenet.cfg" --weights "$work/a.safetensors" --test-limit 256 --batch 64 | tail -n1)
  want=$(sed -n 's/.*test_accuracy=\([0-9.]*\).*/\1/p' <<<"$last")
  if [ "$acc" = "test_accuracy=$want" ]; then ok "eval of the checkpoint agrees ($acc)"
  else bad "eval agrees" "eval: $acc" "train: $want"; fi

  # 2. --steps 0 writes the initial parameters
  if "$clnet" train "$models/lenet.cfg" "${quick[@]}" --steps 0 --no-eval --save "$work/init.safetensors" >/dev/null 2>&1 &&
     [ -s "$work/init.safetensors" ]; then ok "--steps 0 --save writes the initialised net"
  else bad "--steps 0"; fi

  # 3. stopped and resumed == never stopped, byte for byte (same command + --resume)
  run=(train "$models/lenet.cfg" "${quick[@]}" --epochs 3 --lr 0.05 --momentum 0.9 --nesterov --wd 5e-4 --schedule cosine --no-eval --seed 5)
  "$clnet" "${run[@]}" --steps 14 --save "$work/full.safetensors" >/dev/null 2>&1
  "$clnet" "${run[@]}" --steps 6 --save "$work/half.safetensors" >/dev/null 2>&1
  "$clnet" "${run[@]}" --steps 14 --resume "$work/half.safetensors" --save "$work/resumed.safetensors" >/dev/null 2>&1
  if cmp -s "$work/full.safetensors" "$work/resumed.safetensors"; then ok "resume gives a byte-identical checkpoint"
  else bad "resume is not bitwise identical"; fi
  # a resume that takes no step saves what it was given (its GEMM choices too)
  "$clnet" "${run[@]}" --steps 14 --resume "$work/full.safetensors" --save "$work/noop.safetensors" >/dev/null 2>&1
  if cmp -s "$work/full.safetensors" "$work/noop.safetensors"; then ok "a resume that takes no step saves the same checkpoint"
  else bad "a resume without steps changed the checkpoint"; fi
  "$clnet" "${run[@]}" --steps 14 --save "$work/again.safetensors" >/dev/null 2>&1
  if cmp -s "$work/full.safetensors" "$work/again.safetensors"; then ok "the same seed twice gives the same parameters"
  else bad "same seed twice differs"; fi

  # 3b. a warm-up before cosine and one-cycle, both clipped by the global norm: stopped and
  #     resumed == never stopped, byte for byte; one-cycle's resume without its options
  #     takes them from the checkpoint
  warm=(train "$models/lenet.cfg" "${quick[@]}" --epochs 3 --lr 0.05 --momentum 0.9 --warmup 8
        --warmup-factor 0.2 --schedule cosine --clip-grad-norm 0.08 --no-eval --seed 5)
  "$clnet" "${warm[@]}" --steps 14 --save "$work/w_full.safetensors" >/dev/null 2>&1
  "$clnet" "${warm[@]}" --steps 5 --save "$work/w_half.safetensors" >/dev/null 2>&1
  "$clnet" "${warm[@]}" --steps 14 --resume "$work/w_half.safetensors" --save "$work/w_resumed.safetensors" >/dev/null 2>&1
  if [ -s "$work/w_full.safetensors" ] && cmp -s "$work/w_full.safetensors" "$work/w_resumed.safetensors" &&
     ! cmp -s "$work/w_full.safetensors" "$work/full.safetensors"; then
    ok "--warmup 8 --schedule cosine --clip-grad-norm resumes across the warm-up's end, byte for byte"
  else bad "warm-up and clipping: the resume is not bitwise identical"; fi
  cycle=(train "$models/lenet.cfg" "${quick[@]}" --epochs 2 --lr 0.1 --schedule onecycle --pct-start 0.4
         --div-factor 10 --clip-grad-norm 0.08 --no-eval --seed 5)
  "$clnet" "${cycle[@]}" --save "$work/c_full.safetensors" >/dev/null 2>&1
  "$clnet" "${cycle[@]}" --steps 7 --save "$work/c_half.safetensors" >/dev/null 2>&1
  "$clnet" train "$models/lenet.cfg" --resume "$work/c_half.safetensors" --no-eval     --save "$work/c_resumed.safetensors" >/dev/null 2>&1
  if [ -s "$work/c_full.safetensors" ] && cmp -s "$work/c_full.safetensors" "$work/c_resumed.safetensors"; then
    ok "--schedule onecycle --clip-grad-norm resumes bitwise, its settings from the checkpoint"
  else bad "one-cycle: the resume is not bitwise identical"; fi
  expect_code "a resume with another --clip-grad-norm is refused" 2 "trained with --clip-grad-norm 0.08, this command gives 1" \
    train "$models/lenet.cfg" --no-eval --resume "$work/c_half.safetensors" --clip-grad-norm 1
  # the step log: warm-up from 0.5 x --lr over 4 steps (lr(t) = 0.08 (0.5 + 0.5 t / 4)), then
  # --lr; the norm before clipping a last column; --warmup 1e is one epoch (10 steps here)
  "$clnet" train "$models/lenet.cfg" "${quick[@]}" --epochs 1 --lr 0.08 --warmup 4 --warmup-factor 0.5 \
    --clip-grad-norm 0.1 --no-eval --step-log "$work/warm.csv" >/dev/null 2>&1
  if [ "$(cut -d, -f4 "$work/warm.csv" | tr '\n' ' ')" = "lr 0.04 0.05 0.06 0.07 0.08 0.08 0.08 0.08 0.08 0.08 " ] &&
     [ "$(head -n1 "$work/warm.csv")" = "step,epoch,loss,lr,images_per_s,grad_norm" ] &&
     tail -n +2 "$work/warm.csv" | awk -F, '{ if (NF != 6 || !($6 > 0 && $6 < 1e30)) bad = 1 } END { exit bad || NR != 10 }'
  then ok "--warmup 4 --warmup-factor 0.5: the learning rates of LinearLR, the norms in grad_norm"
  else bad "--warmup in the step log" "$(cat "$work/warm.csv")"; fi
  "$clnet" train "$models/lenet.cfg" "${quick[@]}" --epochs 2 --lr 0.09 --warmup 1e --no-eval \
    --step-log "$work/warm1e.csv" >/dev/null 2>&1
  if awk -F, 'NR == 11 { d = $4 - 0.09 * (1 / 3 + 2 / 3 * 9 / 10); if (d > 1e-7 || d < -1e-7) bad = 1 }
              NR == 12 { if ($4 != 0.09) bad = 1 } END { exit bad || NR != 21 }' "$work/warm1e.csv"
  then ok "--warmup 1e warms up over the epoch's 10 steps, from --lr / 3"
  else bad "--warmup 1e" "$(cat "$work/warm1e.csv")"; fi
  expect_code "--warmup that does not read is refused" 2 "expected N steps \(100\) or X epochs" \
    train "$models/lenet.cfg" "${quick[@]}" --no-eval --warmup 2x
  expect_code "--warmup with --schedule onecycle is refused" 2 "onecycle warms up itself" \
    train "$models/lenet.cfg" "${quick[@]}" --no-eval --warmup 3 --schedule onecycle
  expect_code "a warm-up as long as the run is refused" 2 "must end before the run does" \
    train "$models/lenet.cfg" "${quick[@]}" --no-eval --epochs 2 --warmup 2e
  expect_code "--momentum with one-cycle's cycled momentum is refused" 2 "--no-cycle-momentum to keep --momentum" \
    train "$models/lenet.cfg" "${quick[@]}" --no-eval --schedule onecycle --momentum 0.9

  # 4. Ctrl-C: finishes the step, saves, exits non-zero with a message
  "$clnet" train "$models/lenet.cfg" --train-limit 6400 --test-limit 256 --batch 64 --epochs 50 --no-eval \
    --save "$work/int.safetensors" >/dev/null 2>"$work/int.err" &
  pid=$!
  for _ in $(seq 1 100); do grep -q '^epoch 1' "$work/int.err" 2>/dev/null && break; sleep 0.2; done
  kill -INT $pid; wait $pid; rc=$?
  if [ $rc -eq 130 ] && grep -q 'stopped by SIGINT' "$work/int.err" &&
     "$clnet" eval "$models/lenet.cfg" --weights "$work/int.safetensors" --test-limit 64 >/dev/null 2>&1; then
    ok "SIGINT saves a loadable checkpoint and exits 130"
  else bad "SIGINT (rc $rc)" "$(cat "$work/int.err")"; fi

  # 5. bad input: clear messages, non-zero exits, the checkpoint untouched
  expect_fail() { # name pattern args...
    local name=$1 pattern=$2; shift 2
    local out rc; out=$("$clnet" "$@" 2>&1); rc=$?
    if [ $rc -ne 0 ] && grep -qE -- "$pattern" <<<"$out" && ! grep -qiE 'segmentation|abort|core dumped|sanitizer' <<<"$out"; then ok "$name"
    else bad "$name (rc $rc)" "$out"; fi
  }
  cp "$work/a.safetensors" "$work/keep.safetensors"
  expect_fail "missing data folder" "/nonexistent/data" train "$models/lenet.cfg" --data /nonexistent/data
  printf 'input channels=1 height=28 width=28\nconv2d filters=2 size=3 stride=0\n' >"$work/bad.cfg"
  expect_fail "model file error names file and line" "bad.cfg:2: stride=0" train "$work/bad.cfg"
  printf 'input channels=1 length=784\nconv_transpose1d filters=2 size=3 stride=2 output_pad=2\n' >"$work/bad1d.cfg"
  expect_fail "output_pad too large: file, line, numbers" \
    "bad1d.cfg:2: layer 'deconv1' \(conv_transpose1d, input 1x784\): output_pad=2 must be smaller than the stride 2 or the dilation 1" \
    train "$work/bad1d.cfg"
  expect_fail "eval needs --weights" "--weights FILE is required" eval "$models/lenet.cfg"
  expect_fail "eval of another model's checkpoint" "conv1.weight" eval "$models/lenet5.cfg" --weights "$work/a.safetensors" --test-limit 64
  head -c 1000 "$work/a.safetensors" >"$work/trunc.safetensors"
  expect_fail "truncated checkpoint" "trunc.safetensors" eval "$models/lenet.cfg" --weights "$work/trunc.safetensors"
  expect_fail "resume from a damaged checkpoint" "trunc.safetensors" train "$models/lenet.cfg" "${quick[@]}" --resume "$work/trunc.safetensors"
  expect_fail "unknown option" "unknown option '--learning-rate'" train "$models/lenet.cfg" --learning-rate 1
  expect_fail "bad number" "--lr: expected a number" train "$models/lenet.cfg" --lr fast
  expect_fail "--save-every needs --save" "needs --save" train "$models/lenet.cfg" --save-every 5
  expect_fail "momentum is SGD's" "uses --beta1" train "$models/lenet.cfg" --optimizer adam --momentum 0.9
  expect_fail "unknown optimizer" "expected sgd, adam or adamw" train "$models/lenet.cfg" --optimizer lbfgs
  expect_fail "--log-every needs --step-log" "--log-every needs --step-log" train "$models/lenet.cfg" --log-every 3
  if cmp -s "$work/a.safetensors" "$work/keep.safetensors"; then ok "failures left the checkpoint untouched"
  else bad "checkpoint changed"; fi

  # 5b. a newcomer's pitfalls (issue 59): each exit status is the documented one
  # Adam keeps PyTorch's learning rate unless --lr says otherwise, and learns with it
  out=$("$clnet" train "$models/lenet.cfg" --train-limit 3200 --test-limit 256 --batch 64 --epochs 1 \
        --optimizer adam 2>&1)
  acc=$(sed -n 's/^final: test_accuracy=\([0-9.]*\).*/\1/p' <<<"$out")
  if awk -v a="${acc:-0}" 'BEGIN { exit !(a > 0.3) }'; then ok "adam learns with its default lr (test_accuracy $acc)"
  else bad "adam with defaults" "$out"; fi
  # every output path is checked before the first step: nothing trained, exit 2
  for opt in --save --log --plot --step-log; do
    expect_code "$opt into a missing folder is refused before training" 2 "^clnet: $opt /nonexistent/x: the folder /nonexistent does not exist$" \
      train "$models/lenet.cfg" "${quick[@]}" --epochs 1 "$opt" /nonexistent/x
  done
  expect_code "--save naming a folder is refused" 2 "that is a folder" train "$models/lenet.cfg" "${quick[@]}" --save "$work"
  expect_code "--devices that do not read exit 2" 2 "unknown device selection 'foo'" train "$models/lenet.cfg" "${quick[@]}" --devices foo
  expect_code "version takes no options" 2 "takes no options" version --foo
  # messages name what failed, without the source's [file.c:line] unless CLNET_DEBUG=1
  out=$("$clnet" train "$models/lenet.cfg" --data /nonexistent/data 2>&1)
  if grep -q '/nonexistent/data' <<<"$out" && ! grep -qE '\[[a-z_]+\.c:[0-9]+\]' <<<"$out"; then ok "no [file.c:line] in a user's message"
  else bad "message with a source place" "$out"; fi
  out=$(CLNET_DEBUG=1 "$clnet" train "$models/lenet.cfg" --data /nonexistent/data 2>&1)
  if grep -qE '\[[a-z_]+\.c:[0-9]+\]' <<<"$out"; then ok "CLNET_DEBUG=1 adds the source's [file.c:line]"
  else bad "CLNET_DEBUG=1" "$out"; fi
  # a final save that fails after the start's check (its folder removed meanwhile) still
  # writes the model, to a file of its own in the working folder, and says where
  mkdir -p "$work/gone" "$work/cwd"
  ( cd "$work/cwd" && "$clnet" train "$models/lenet.cfg" "${quick[@]}" --epochs 40 --no-eval \
      --save "$work/gone/x.safetensors" --step-log "$work/fb.csv" >/dev/null 2>"$work/fb.err" ) &
  fb=$!
  for i in $(seq 300); do [ "$(wc -l <"$work/fb.csv" 2>/dev/null || echo 0)" -gt 2 ] && break; sleep 0.1; done
  rm -rf "$work/gone"
  wait $fb; rc=$?
  saved=$(ls "$work/cwd"/clnet-unsaved-*.safetensors 2>/dev/null | head -n1)
  if [ $rc -eq 1 ] && [ -s "$saved" ] && grep -q "the model is saved to clnet-unsaved-" "$work/fb.err" &&
     "$clnet" eval "$models/lenet.cfg" --weights "$saved" --test-limit 64 --batch 64 >/dev/null 2>&1; then
    ok "a final save that fails writes the model to a fallback file that loads"
  else bad "fallback save (rc $rc, file '$saved')" "$(cat "$work/fb.err")"; fi
  # a batch larger than the training set: each step takes the whole set, and a note says so
  expect_code "a batch beyond the data set is clamped with a note" 0 "note: --batch 70000 is more than the 640 training samples" \
    train "$models/lenet.cfg" --train-limit 640 --batch 70000 --epochs 1 --no-eval
  # a resume takes the run's settings from the checkpoint, refuses other values unless
  # --override names them, and says when nothing is left to train
  set_run=(train "$models/lenet.cfg" --train-limit 640 --batch 64 --epochs 2 --lr 0.05 --momentum 0.9 --wd 5e-4 --no-eval --seed 5)
  "$clnet" "${set_run[@]}" --steps 14 --save "$work/s_full.safetensors" >/dev/null 2>&1
  "$clnet" "${set_run[@]}" --steps 6 --save "$work/s_half.safetensors" >/dev/null 2>&1
  "$clnet" train "$models/lenet.cfg" --no-eval --steps 14 --resume "$work/s_half.safetensors" \
    --save "$work/s_resumed.safetensors" >/dev/null 2>&1
  if cmp -s "$work/s_full.safetensors" "$work/s_resumed.safetensors"; then ok "a resume without the options takes the checkpoint's settings (byte-identical)"
  else bad "a resume without its options differs from the run"; fi
  expect_code "a resume with another lr and batch is refused, naming old and new" 2 \
    "trained with --lr 0.05, this command gives 0.5 \(--override lr" \
    train "$models/lenet.cfg" --no-eval --resume "$work/s_half.safetensors" --lr 0.5 --batch 128
  expect_code "--override lets a resume change them" 0 "note: --lr 0.02, where the checkpoint's run had 0.05 \(--override\)" \
    train "$models/lenet.cfg" --no-eval --resume "$work/s_half.safetensors" --lr 0.02 --override lr
  expect_code "--override of a setting no checkpoint records is refused" 2 "'bogus' is not a setting" \
    train "$models/lenet.cfg" --no-eval --resume "$work/s_half.safetensors" --override bogus
  "$clnet" "${set_run[@]}" --save "$work/s_done.safetensors" >/dev/null 2>&1
  out=$("$clnet" train "$models/lenet.cfg" --no-eval --resume "$work/s_done.safetensors" 2>&1); rc=$?
  if [ $rc -eq 0 ] && grep -q "has trained its 2 epochs: nothing to train" <<<"$out" && ! grep -q '^final:' <<<"$out"; then
    ok "a finished run resumed says so, exit 0, no final line"
  else bad "a finished run resumed (rc $rc)" "$out"; fi

  # 6. --no-eval: the lines say the test set was not evaluated (test_accuracy=-), with no
  #    number made up for it, whole epochs and partial alike; the CSV column stays empty
  out=$("$clnet" train "$models/lenet.cfg" "${quick[@]}" --epochs 2 --no-eval --log "$work/ne.csv" 2>"$work/ne.err")
  rc=$?
  last=$(tail -n1 <<<"$out")
  if [ $rc -eq 0 ] && [[ $last =~ ^final:\ test_accuracy=-\ train_loss=[0-9]+\.[0-9]{4}\ images_per_s=[0-9]+$ ]]; then
    ok "--no-eval: the final line says test_accuracy=- ($last)"
  else bad "--no-eval final line (rc $rc)" "$out" "$(cat "$work/ne.err")"; fi
  if [ "$(grep -cE '^epoch [12]: .* test_accuracy=- seconds=' "$work/ne.err")" -eq 2 ] &&
     ! { cat "$work/ne.err"; echo "$out"; } | grep -qE 'test_accuracy=-?[0-9]'; then ok "--no-eval: every epoch line says test_accuracy=-"
  else bad "--no-eval epoch lines" "$out" "$(cat "$work/ne.err")"; fi
  if [ "$(cut -d, -f4 "$work/ne.csv" | tail -n +2 | tr -d '\n')" = "" ] && [ "$(wc -l <"$work/ne.csv")" -eq 3 ]; then
    ok "--no-eval: the CSV's test_accuracy column is empty"
  else bad "--no-eval CSV" "$(cat "$work/ne.csv")"; fi
  out=$("$clnet" train "$models/lenet.cfg" "${quick[@]}" --epochs 2 --steps 3 --no-eval 2>&1)
  if grep -qE '^epoch 1 \(partial\): .* test_accuracy=- seconds=' <<<"$out" &&
     grep -qE '^final: test_accuracy=- ' <<<"$out" && ! grep -qE 'test_accuracy=-?[0-9]' <<<"$out"; then
    ok "--no-eval: a partial epoch's line says test_accuracy=- too"
  else bad "--no-eval partial epoch" "$out"; fi

  # 7. --step-log: a line every --log-every steps (10 steps an epoch here), epochs right,
  #    losses finite and positive, lr as given under a constant schedule
  check_steps() { # file want_steps want_epochs lr
    local file=$1 steps=$2 epochs=$3 lr=$4
    [ "$(head -n1 "$file")" = "step,epoch,loss,lr,images_per_s,grad_norm" ] &&
    [ "$(grep -c '^step,' "$file")" -eq 1 ] &&
    [ "$(tail -n +2 "$file" | cut -d, -f1 | tr '\n' ' ')" = "$steps" ] &&
    [ "$(tail -n +2 "$file" | cut -d, -f2 | tr '\n' ' ')" = "$epochs" ] &&
    tail -n +2 "$file" | awk -F, -v lr="$lr" '
      { d = $4 - lr; if (NF != 6 || $6 != "" || !($3 > 0 && $3 < 1e30) || (d > 1e-7 || d < -1e-7) || !($5 > 0)) bad = 1 }
      END { exit bad || NR == 0 }'
  }
  "$clnet" train "$models/lenet.cfg" "${quick[@]}" --epochs 2 --lr 0.05 --no-eval \
    --step-log "$work/steps.csv" --log-every 3 >/dev/null 2>"$work/steps.err"
  if check_steps "$work/steps.csv" "3 6 9 12 15 18 " "1 1 1 2 2 2 " 0.05; then
    ok "--step-log: header, steps 3, 6 ... 18, epochs, finite losses, lr 0.05"
  else bad "--step-log" "$(cat "$work/steps.csv" "$work/steps.err")"; fi
  rm -f "$work/steps.csv"
  "$clnet" train "$models/lenet.cfg" "${quick[@]}" --epochs 2 --no-eval --steps 7 --save "$work/sl.safetensors" \
    --step-log "$work/steps.csv" --log-every 3 >/dev/null 2>&1
  "$clnet" train "$models/lenet.cfg" "${quick[@]}" --epochs 2 --no-eval --steps 13 --resume "$work/sl.safetensors" \
    --step-log "$work/steps.csv" --log-every 3 >/dev/null 2>"$work/steps.err"
  if check_steps "$work/steps.csv" "3 6 9 12 " "1 1 1 2 " 0.1; then
    ok "--step-log with --resume appends to the file, one header"
  else bad "--step-log resumed" "$(cat "$work/steps.csv" "$work/steps.err")"; fi
  # async: chunks of at most 8 updates that end at epoch ends (0-8, 8-10, 10-18, 18-20):
  # a line at the end of each chunk that crossed a multiple of 3
  "$clnet" train "$models/lenet.cfg" "${quick[@]}" --epochs 2 --lr 0.05 --no-eval --sync async \
    --step-log "$work/async.csv" --log-every 3 >/dev/null 2>"$work/async.err"
  if check_steps "$work/async.csv" "8 10 18 " "1 1 2 " 0.05; then
    ok "--step-log --sync async: one line per chunk that crossed a multiple of 3"
  else bad "--step-log async" "$(cat "$work/async.csv" "$work/async.err")"; fi
  # .npy data: the same images as the IDX subset, written by NumPy, train to the same final line
  # (uint8 (N, 28, 28) with labels int64; float32 (N, 1, 28, 28) already divided by 255, labels
  # uint8); an evaluation reads a pair; bad lists and shapes are clear errors
  if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    /usr/bin/python3 - "$data" "$work" <<'PY'
import gzip, os, sys
import numpy as np
data, work = sys.argv[1], sys.argv[2]
def idx(name, offset):
    path = os.path.join(data, name)
    raw = gzip.open(path + ".gz").read() if os.path.exists(path + ".gz") else open(path, "rb").read()
    return np.frombuffer(raw, dtype=np.uint8, offset=offset)
x = idx("train-images-idx3-ubyte", 16).reshape(-1, 28, 28)[:640]
y = idx("train-labels-idx1-ubyte", 8)[:640]
tx = idx("t10k-images-idx3-ubyte", 16).reshape(-1, 28, 28)[:256]
ty = idx("t10k-labels-idx1-ubyte", 8)[:256]
np.save(os.path.join(work, "x.npy"), x)
np.save(os.path.join(work, "y.npy"), y.astype(np.int64))
np.save(os.path.join(work, "tx.npy"), tx)
np.save(os.path.join(work, "ty.npy"), ty.astype(np.int64))
np.save(os.path.join(work, "xf.npy"), (x.astype(np.float32) / np.float32(255)).reshape(-1, 1, 28, 28))
np.save(os.path.join(work, "yf.npy"), y)
np.save(os.path.join(work, "txf.npy"), (tx.astype(np.float32) / np.float32(255)).reshape(-1, 1, 28, 28))
np.save(os.path.join(work, "tyf.npy"), ty)
np.save(os.path.join(work, "rgb.npy"), np.zeros((4, 3, 28, 28), dtype=np.uint8))
np.save(os.path.join(work, "rgby.npy"), np.zeros(4, dtype=np.int64))
PY
    run=(train "$models/lenet.cfg" --batch 64 --epochs 3 --optimizer adam --lr 0.002 --deterministic)
    idx_line=$("$clnet" "${run[@]}" --train-limit 640 --test-limit 256 2>/dev/null | tail -n1)
    u8_line=$("$clnet" "${run[@]}" --data-npy "$work/x.npy,$work/y.npy,$work/tx.npy,$work/ty.npy" 2>/dev/null | tail -n1)
    f32_line=$("$clnet" "${run[@]}" --data-npy "$work/xf.npy,$work/yf.npy,$work/txf.npy,$work/tyf.npy" 2>/dev/null | tail -n1)
    strip() { sed 's/ images_per_s=.*//' <<<"$1"; }
    if [ -n "$idx_line" ] && [ "$(strip "$u8_line")" = "$(strip "$idx_line")" ] &&
       [ "$(strip "$f32_line")" = "$(strip "$idx_line")" ]; then
      ok "--data-npy (uint8 and float32) trains as the IDX files do ($(strip "$u8_line"))"
    else bad "--data-npy trains as IDX" "idx:  $idx_line" "u8:   $u8_line" "f32:  $f32_line"; fi
    "$clnet" train "$models/lenet.cfg" --batch 64 --steps 10 --optimizer adam --lr 0.002 --no-eval --save "$work/npy.safetensors" \
      --data-npy "$work/x.npy,$work/y.npy" >/dev/null 2>&1
    a=$("$clnet" eval "$models/lenet.cfg" --weights "$work/npy.safetensors" --batch 64 --data-npy "$work/tx.npy,$work/ty.npy" | tail -n1)
    b=$("$clnet" eval "$models/lenet.cfg" --weights "$work/npy.safetensors" --batch 64 --test-limit 256 | tail -n1)
    if [[ $a =~ ^test_accuracy= ]] && [ "$a" = "$b" ]; then ok "eval --data-npy X,Y evaluates that pair ($a)"
    else bad "eval --data-npy" "npy: $a" "idx: $b"; fi
    expect_error "--data-npy with three files is refused" "takes X.npy,Y.npy or" \
      "$clnet" train "$models/lenet.cfg" --data-npy "$work/x.npy,$work/y.npy,$work/tx.npy"
    expect_error "--data-npy without a test pair needs --no-eval" "add it, or --no-eval" \
      "$clnet" train "$models/lenet.cfg" --data-npy "$work/x.npy,$work/y.npy"
    expect_error "--data and --data-npy together are refused" "give one" \
      "$clnet" train "$models/lenet.cfg" --data "$data" --data-npy "$work/x.npy,$work/y.npy" --no-eval
    expect_error "samples of the wrong shape name both shapes" "takes 1x28x28 inputs (784 values) but the data set's samples are 3x28x28" \
      "$clnet" train "$models/lenet.cfg" --data-npy "$work/rgb.npy,$work/rgby.npy" --no-eval
    expect_error "a missing .npy file is named" "nothere.npy: cannot open" \
      "$clnet" train "$models/lenet.cfg" --data-npy "$work/nothere.npy,$work/y.npy" --no-eval
  else
    skip_part "--data-npy: numpy is missing for /usr/bin/python3 (apt-get install python3-numpy)"
  fi

  # IDX images feed any input of as many values: Fashion-MNIST as 784 values in a row
  printf 'input channels=1 length=784\nlinear units=10 init=xavier\nsoftmax_cross_entropy\n' >"$work/row.cfg"
  printf 'input channels=1 length=783\nlinear units=10 init=xavier\nsoftmax_cross_entropy\n' >"$work/short.cfg"
  line=$("$clnet" train "$work/row.cfg" --train-limit 640 --test-limit 256 --batch 64 --epochs 1 2>/dev/null | tail -n1)
  err=$("$clnet" train "$work/short.cfg" --train-limit 640 --no-eval --steps 1 2>&1 >/dev/null)
  if [[ $line =~ ^final:\ test_accuracy=0\.[0-9]{4} ]] && grep -q "takes 1x783 inputs (783 values) but the data set's samples are 1x28x28 (784)" <<<"$err"; then
    ok "IDX images feed a 1x784 input; a 1x783 one is refused naming both shapes"
  else bad "IDX images as rows" "$line" "$err"; fi
  # A diverging run (--lr 1e6) stops at its first step with a NaN, naming the step, the last
  # checkpoint intact; --skip-nonfinite N skips up to N such steps and counts them.
  div=(train "$models/lenet.cfg" --train-limit 2560 --batch 256 --lr 1e6 --epochs 1 --no-eval)
  out=$("$clnet" "${div[@]}" --save "$work/div.safetensors" --save-every 1 2>&1); rc=$?
  if [ $rc -eq 1 ] && grep -qE "training step [0-9]+: (the loss is nan|the gradient of '[a-z0-9.]+' .* is -?(nan|inf))" <<<"$out" &&
     grep -q "the last checkpoint saved stands" <<<"$out" && ! grep -q '^final:' <<<"$out" &&
     "$clnet" eval "$models/lenet.cfg" --weights "$work/div.safetensors" --test-limit 64 >/dev/null 2>&1; then
    ok "a non-finite step stops the run (exit 1), naming the step; the checkpoint loads"
  else bad "non-finite stop (rc $rc)" "$out"; fi
  out=$("$clnet" "${div[@]}" --skip-nonfinite 100 2>&1); rc=$?
  skips=$(grep -c '^clnet: skipped (' <<<"$out")
  if [ $rc -eq 0 ] && [ "$skips" -gt 0 ] &&
     grep -qE "^final: test_accuracy=- train_loss=[0-9.]+ images_per_s=[0-9]+ skipped_steps=$skips$" <<<"$out" &&
     grep -qE "^epoch 1: .* skipped=$skips$" <<<"$out"; then
    ok "--skip-nonfinite skips $skips steps and counts them in the epoch and final lines"
  else bad "--skip-nonfinite (rc $rc)" "$out"; fi
  out=$("$clnet" "${div[@]}" --skip-nonfinite 2 2>&1); rc=$?
  if [ $rc -eq 1 ] && [ "$(grep -c '^clnet: skipped (' <<<"$out")" -eq 2 ] &&
     grep -q "stopped: 2 steps skipped already (--skip-nonfinite 2)" <<<"$out"; then
    ok "the step after --skip-nonfinite's last allowed one stops the run"
  else bad "--skip-nonfinite 2 (rc $rc)" "$out"; fi
  # an autoencoder (mse against its own input): the lines give losses alone, the test loss falls
  # below a quarter of the untrained model's, eval and the CSV log agree
  cat >"$work/ae.cfg" <<'END'
input channels=1 height=28 width=28
conv2d filters=8 size=3 stride=2 pad=1
gelu
conv_transpose2d filters=1 size=4 stride=2 pad=1
mse target=input
END
  ae=(train "$work/ae.cfg" "${quick[@]}" --lr 0.05 --momentum 0.9 --seed 3)
  "$clnet" "${ae[@]}" --steps 0 --save "$work/ae0.safetensors" >/dev/null 2>&1
  before=$("$clnet" eval "$work/ae.cfg" --weights "$work/ae0.safetensors" --test-limit 256 2>/dev/null)
  out=$("$clnet" "${ae[@]}" --epochs 3 --log "$work/ae.csv" --plot "$work/ae.svg" \
        --save "$work/ae.safetensors" 2>"$work/ae.err"); rc=$?
  after=$("$clnet" eval "$work/ae.cfg" --weights "$work/ae.safetensors" --test-limit 256 2>/dev/null)
  last=$(tail -n1 <<<"$out")
  final=$(sed -E 's/^final: test_loss=([0-9.]+) .*/\1/' <<<"$last")
  if [ $rc -eq 0 ] && [[ $last =~ ^final:\ test_loss=[0-9]+\.[0-9]{4}\ train_loss=[0-9.]+\ images_per_s=[0-9]+$ ]] &&
     [[ $before =~ ^test_loss=[0-9.]+$ ]] && [ "$after" = "test_loss=$final" ] &&
     awk -v a="${after#test_loss=}" -v b="${before#test_loss=}" 'BEGIN { exit !(a < b / 4) }' &&
     grep -qE '^epoch 3: train_loss=[0-9.]+ test_loss=[0-9.]+ seconds=' "$work/ae.err" &&
     [ "$(head -n1 "$work/ae.csv")" = "epoch,train_loss,test_loss,seconds,images_per_s,val_loss" ] &&
     ! grep -q accuracy "$work/ae.svg"; then
    ok "an autoencoder reports losses alone; its test loss falls from ${before#test_loss=} to ${after#test_loss=}"
  else bad "autoencoder (rc $rc)" "$out" "before: $before" "after: $after" "$(cat "$work/ae.err")"; fi
  # --label-smoothing: changes the training, is the model file's label_smoothing=, a resume
  # without it keeps it (byte-identical), another value is refused, and so is a bad value or a
  # model without softmax_cross_entropy; eval takes it from the checkpoint (its test_loss is
  # the training's)
  ls_run=(train "$models/lenet.cfg" --train-limit 640 --test-limit 256 --batch 64 --epochs 2 --lr 0.05 --seed 5)
  "$clnet" "${ls_run[@]}" --no-eval --steps 14 --save "$work/ls_plain.safetensors" >/dev/null 2>&1
  "$clnet" "${ls_run[@]}" --no-eval --steps 14 --label-smoothing 0.2 --save "$work/ls_full.safetensors" >/dev/null 2>&1
  "$clnet" "${ls_run[@]}" --no-eval --steps 6 --label-smoothing 0.2 --save "$work/ls_half.safetensors" >/dev/null 2>&1
  "$clnet" train "$models/lenet.cfg" --no-eval --steps 14 --resume "$work/ls_half.safetensors" \
    --save "$work/ls_resumed.safetensors" >/dev/null 2>&1
  sed 's/^softmax_cross_entropy.*/softmax_cross_entropy label_smoothing=0.2/' "$models/lenet.cfg" >"$work/ls.cfg"
  "$clnet" train "$work/ls.cfg" --train-limit 640 --test-limit 256 --batch 64 --epochs 2 --lr 0.05 --seed 5 \
    --no-eval --steps 14 --save "$work/ls_file.safetensors" >/dev/null 2>&1
  same_tensors() { # A B: the same tensors, bit for bit (the metadata, the runs' settings, aside)
    /usr/bin/python3 - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    return header, raw[8 + n:]
sys.exit(tensors(sys.argv[1]) != tensors(sys.argv[2]))
PY
  }
  if [ -s "$work/ls_full.safetensors" ] && cmp -s "$work/ls_full.safetensors" "$work/ls_resumed.safetensors" &&
     ! same_tensors "$work/ls_full.safetensors" "$work/ls_plain.safetensors" &&
     same_tensors "$work/ls_full.safetensors" "$work/ls_file.safetensors"; then
    ok "--label-smoothing changes the training, is bitwise the model file's option, resumes byte-identical"
  else bad "--label-smoothing and its resume"; fi
  expect_code "a resume with another --label-smoothing is refused" 2 \
    "trained with --label-smoothing 0.2, this command gives 0.1 \(--override label-smoothing" \
    train "$models/lenet.cfg" --no-eval --resume "$work/ls_half.safetensors" --label-smoothing 0.1
  expect_code "--label-smoothing 1.5 is refused" 2 "--label-smoothing" \
    train "$models/lenet.cfg" "${quick[@]}" --label-smoothing 1.5
  expect_code "--label-smoothing on a model without softmax_cross_entropy is refused" 2 \
    "^clnet: --label-smoothing 0.1: clnet_net_set_label_smoothing: the model has no layer that takes label_smoothing" \
    train "$work/ae.cfg" "${quick[@]}" --label-smoothing 0.1
  out=$("$clnet" "${ls_run[@]}" --steps 10 --optimizer adam --lr 0.002 --label-smoothing 0.3 \
        --save "$work/ls_eval.safetensors" 2>&1 | grep "^epoch 1")
  trained=$(sed -n 's/.* test_loss=\([0-9.]*\) .*/\1/p' <<<"$out")
  evaluated=$("$clnet" eval "$models/lenet.cfg" --weights "$work/ls_eval.safetensors" --test-limit 256 --batch 64 2>/dev/null | sed -n 's/^test_loss=//p')
  if [ -n "$trained" ] && [ "$trained" = "$evaluated" ]; then
    ok "eval takes --label-smoothing from the checkpoint: its test_loss is the training's ($trained)"
  else bad "eval of a label-smoothed run" "train: $out" "eval: $evaluated"; fi

  # 4c. image transforms: --augment changes the training, resumes bitwise, and --resize feeds a
  # model of another size (tests/test_transform.c checks the pixels against PyTorch)
  aug=(train "$models/lenet.cfg" "${quick[@]}" --epochs 2 --lr 0.05 --no-eval --seed 3)
  "$clnet" "${aug[@]}" --steps 8 --save "$work/plain.safetensors" >/dev/null 2>&1
  "$clnet" "${aug[@]}" --augment crop=3,flip --steps 8 --save "$work/aug.safetensors" >/dev/null 2>&1
  "$clnet" "${aug[@]}" --augment crop=3,flip --steps 3 --save "$work/aug3.safetensors" >/dev/null 2>&1
  "$clnet" "${aug[@]}" --steps 8 --resume "$work/aug3.safetensors" --save "$work/aug8.safetensors" >/dev/null 2>&1
  if [ -s "$work/aug.safetensors" ] && ! cmp -s "$work/plain.safetensors" "$work/aug.safetensors" &&
     cmp -s "$work/aug.safetensors" "$work/aug8.safetensors"; then
    ok "--augment crop=3,flip changes the training and resumes bitwise (the checkpoint keeps it)"
  else bad "--augment and its resume"; fi
  printf 'input channels=1 height=40 width=36\nconv2d filters=4 size=5 stride=2\nrelu\nglobal_avgpool\nlinear units=10\nsoftmax_cross_entropy\n' >"$work/r.cfg"
  expect_error "a model of another size than the images suggests --resize" "(--resize 40x36 resizes them)" \
    "$clnet" train "$work/r.cfg" "${quick[@]}" --steps 1
  out=$("$clnet" train "$work/r.cfg" "${quick[@]}" --steps 4 --resize 44x40 --center-crop 40x36 \
        --augment resized-crop=0.3,flip --save "$work/r.safetensors" 2>&1 | tail -n1)
  acc=$("$clnet" eval "$work/r.cfg" --weights "$work/r.safetensors" --resize 44x40 --center-crop 40x36 \
        --test-limit 256 --batch 64 | tail -n1)
  if [ "$acc" = "test_accuracy=$(sed -n 's/.*test_accuracy=\([0-9.]*\).*/\1/p' <<<"$out")" ]; then
    ok "--resize and --center-crop feed a 40x36 model; eval with them agrees ($acc)"
  else bad "--resize" "$out" "$acc"; fi
  for bad_augment in "twist" "crop=-1" "resized-crop=2"; do
    "$clnet" train "$work/r.cfg" --resize 40x36 --augment "$bad_augment" --steps 1 >/dev/null 2>&1
    rc=$?
    if [ $rc -eq 2 ]; then ok "--augment $bad_augment is refused with exit 2"
    else bad "--augment $bad_augment (rc $rc)"; fi
  done

  # 8. the epoch figure watched (--monitor val_accuracy: k/320, the log's column is exact):
  # --plateau lowers the learning rate as torch's ReduceLROnPlateau does on the run's own
  # column (every --step-log line's lr), --early-stop ends the run where Lightning's
  # EarlyStopping would (tests/epoch_metrics_ref.py), --save-best keeps the best epoch's
  # checkpoint; stopped and resumed, mid-epoch or from a --save-every file at an epoch's
  # end, the run ends byte-identical across the reductions and the early stop
  watch=(train "$models/lenet.cfg" --train-limit 1280 --test-limit 128 --batch 64 --epochs 12
         --val-split 0.25 --optimizer adam --lr 0.003 --deterministic --seed 2
         --monitor val_accuracy --plateau 0 --plateau-factor 0.5 --plateau-threshold 0.01
         --early-stop 2 --min-delta 0.005)
  "$clnet" "${watch[@]}" --save "$work/w_full.safetensors" --save-best "$work/w_best.safetensors" \
    --log "$work/w.csv" --step-log "$work/w_steps.csv" >"$work/w.out" 2>"$work/w.err"; rc=$?
  stopped=$(sed -n 's/^clnet: early stop after epoch \([0-9]*\): val_accuracy has not improved.*/\1/p' "$work/w.err")
  if [ $rc -eq 0 ] && [ -n "$stopped" ] && [ "$stopped" -lt 12 ] && grep -q '^final: ' "$work/w.out" &&
     [ "$(tail -n1 "$work/w.csv" | cut -d, -f1)" = "$stopped" ] && grep -q -- '-> .* (--plateau 0)$' "$work/w.err"; then
    ok "--early-stop ends the run after epoch $stopped (exit 0, the final line), --plateau said its reductions"
  else bad "--plateau and --early-stop run (rc $rc)" "$(cat "$work/w.out" "$work/w.err")"; fi
  if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    if /usr/bin/python3 - "$work" "$(dirname "$0")" <<'PY'; then ok "the lr of every step is ReduceLROnPlateau's, the stop Lightning's, the best file the best epoch's"
import csv, json, math, struct, sys
import torch
work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from epoch_metrics_ref import EarlyStopping
rows = list(csv.DictReader(open(f"{work}/w.csv")))
val = [float(r["val_accuracy"]) for r in rows]
opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.003)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=0,
                                                   threshold=0.01)
want = {1: 0.003}
es, stop_at = EarlyStopping("max", 0.005, 2), None
for e, v in enumerate(val, 1):
    sched.step(v)
    want[e + 1] = opt.param_groups[0]["lr"]
    if stop_at is None and es.evaluate(v):
        stop_at = e
worst, ok = 0.0, True
for s in csv.DictReader(open(f"{work}/w_steps.csv")):
    e, lr = int(s["epoch"]), float(s["lr"])
    worst = max(worst, abs(lr - want[e]) / want[e])
drops = sum(want[e + 1] < want[e] for e in range(1, len(val) + 1))
print(f"lr within {worst:.1e} of ReduceLROnPlateau's ({drops} reductions); Lightning stops after "
      f"epoch {stop_at}, clnet after {len(val)}")
ok = worst < 1e-6 and drops > 0 and stop_at == len(val)
b = open(f"{work}/w_best.safetensors", "rb").read()
meta = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])["__metadata__"]
mon = dict(kv.split("=") for kv in meta["monitor"].split())
best_epoch = max(range(len(val)), key=lambda i: (val[i], -i)) + 1
improved = sum(v > max(val[:i], default=-math.inf) for i, v in enumerate(val))
saves = open(f"{work}/w.err").read().count("the best so far: saved")
print(f"best checkpoint: epoch {meta['epoch']} val_accuracy {mon['best']}; the log's best: epoch "
      f"{best_epoch} {val[best_epoch - 1]}; {saves} saves for {improved} improvements")
ok &= int(meta["epoch"]) == best_epoch and abs(float(mon["best"]) - val[best_epoch - 1]) < 1e-6
ok &= saves == improved and int(mon["best_epoch"]) == best_epoch and best_epoch < len(val)
sys.exit(0 if ok else 1)
PY
    else bad "--plateau, --early-stop or --save-best against PyTorch's" "$(cat "$work/w.err")"; fi
    best_epoch=$(/usr/bin/python3 -c 'import json,struct,sys; b=open(sys.argv[1],"rb").read(); print(json.loads(b[8:8+struct.unpack("<Q",b[:8])[0]])["__metadata__"]["epoch"])' "$work/w_best.safetensors")
    logged=$(awk -F, -v e="$best_epoch" '$1 == e { print $4 }' "$work/w.csv")
    acc=$("$clnet" eval "$models/lenet.cfg" --weights "$work/w_best.safetensors" --test-limit 128 --batch 64 2>/dev/null | tail -n1)
    if awk -v a="${acc#test_accuracy=}" -v b="${logged:-9}" 'BEGIN { d = a - b; exit !(d < 1e-4 && d > -1e-4) }'; then
      ok "eval of --save-best's checkpoint gives its epoch's test accuracy ($acc, epoch $best_epoch)"
    else bad "eval of the best checkpoint" "$acc" "epoch $best_epoch logged $logged"; fi
  else
    skip_part "--plateau and --early-stop against PyTorch: /usr/bin/python3 cannot import torch"
  fi
  "$clnet" "${watch[@]}" --steps 20 --save "$work/w_half.safetensors" >/dev/null 2>&1
  "$clnet" "${watch[@]}" --resume "$work/w_half.safetensors" --save "$work/w_resumed.safetensors" >/dev/null 2>&1
  "$clnet" "${watch[@]}" --steps 50 --save "$work/w_k.safetensors" --save-every 15 --keep-last 2 >/dev/null 2>&1
  kept=$(cd "$work" && ls w_k-step*.safetensors 2>/dev/null | tr '\n' ' ')
  "$clnet" "${watch[@]}" --resume "$work/w_k-step45.safetensors" --save "$work/w_from45.safetensors" >/dev/null 2>&1
  if cmp -s "$work/w_full.safetensors" "$work/w_resumed.safetensors" &&
     cmp -s "$work/w_full.safetensors" "$work/w_from45.safetensors"; then
    ok "resumed mid-epoch or at an epoch's end, the watched run ends byte-identical"
  else bad "a resume of --plateau and --early-stop differs from the unbroken run"; fi
  if [ "$kept" = "w_k-step30.safetensors w_k-step45.safetensors " ]; then
    ok "--keep-last 2 keeps FILE-step30 and FILE-step45 of --save-every 15's checkpoints"
  else bad "--keep-last 2" "kept: $kept"; fi
  expect_code "a resume of an early-stopped run says so, exit 0" 0 "stopped early after $stopped epochs .--early-stop 2.: nothing to train" \
    train "$models/lenet.cfg" --resume "$work/w_full.safetensors"
  # what the run does not compute, and options without the one they serve, are refused
  expect_code "--monitor val_loss without --val-split is refused" 2 "^clnet: --monitor val_loss needs --val-split" \
    train "$models/lenet.cfg" "${quick[@]}" --plateau 2 --monitor val_loss
  expect_code "the default monitor under --no-eval is refused" 2 "^clnet: --monitor test_loss \(the default\) is not computed under --no-eval" \
    train "$models/lenet.cfg" "${quick[@]}" --early-stop 2 --no-eval
  expect_code "an unknown --monitor is refused" 2 "^clnet: --monitor val_los is none of val_loss" \
    train "$models/lenet.cfg" "${quick[@]}" --early-stop 2 --monitor val_los
  expect_code "--monitor alone is refused" 2 "^clnet: --monitor names the figure" \
    train "$models/lenet.cfg" "${quick[@]}" --monitor train_loss
  expect_code "--plateau-factor without --plateau is refused" 2 "^clnet: --plateau-factor needs --plateau" \
    train "$models/lenet.cfg" "${quick[@]}" --plateau-factor 0.5
  expect_code "--min-delta without --early-stop is refused" 2 "^clnet: --min-delta needs --early-stop" \
    train "$models/lenet.cfg" "${quick[@]}" --min-delta 0.1
  expect_code "--keep-last without --save-every is refused" 2 "^clnet: --keep-last needs --save-every" \
    train "$models/lenet.cfg" "${quick[@]}" --keep-last 2 --save "$work/x.safetensors"
  expect_code "--plateau-factor 1 is refused" 2 "--plateau-factor" \
    train "$models/lenet.cfg" "${quick[@]}" --plateau 1 --plateau-factor 1
  expect_code "--save-best into a missing folder is refused before training" 2 "^clnet: --save-best /nonexistent/x: the folder /nonexistent does not exist$" \
    train "$models/lenet.cfg" "${quick[@]}" --save-best /nonexistent/x
fi

if part extended; then
  # 4b. a graph model: LeNet with a residual connection (add) trains, the loss falls
  out=$("$clnet" train "$models/lenet_residual.cfg" --train-limit 1280 --test-limit 256 --batch 64 --epochs 2 \
        --lr 0.05 --momentum 0.9 --mean 0.286 --std 0.353 2>&1)
  l1=$(sed -n 's/^epoch 1: train_loss=\([0-9.]*\).*/\1/p' <<<"$out")
  l2=$(sed -n 's/^epoch 2: train_loss=\([0-9.]*\).*/\1/p' <<<"$out")
  if [ -n "$l1" ] && [ -n "$l2" ] && awk "BEGIN { exit !($l2 < $l1) }"; then ok "the residual LeNet trains (loss $l1 -> $l2)"
  else bad "residual LeNet" "$out"; fi

  # Kernel binaries: PoCL keeps its own cache, so a plain run stores none in
  # clnet's (reading a binary back costs more than it saves); `clnet warm`
  # stores them, and the next run loads them and stores nothing more.
  cache="$work/kernel-cache"
  short=(train "$models/lenet.cfg" --batch 16 --steps 1 --train-limit 32 --no-eval)
  bins() { find "$cache" -name '*.clbin' 2>/dev/null | wc -l; }
  CLNET_CACHE_DIR=$cache "$clnet" "${short[@]}" >/dev/null 2>&1; plain=$(bins)
  warm=$(CLNET_CACHE_DIR=$cache "$clnet" warm "$models/lenet.cfg" --batch 16 2>&1); stored=$(bins)
  CLNET_CACHE_DIR=$cache "$clnet" "${short[@]}" >/dev/null 2>&1; after=$(bins)
  if [ "$plain" -eq 0 ] && [ "$stored" -gt 0 ] && [ "$after" -eq "$stored" ] &&
     grep -qE "^warmed .* at batch 16 on 1 device in .* s: [0-9]+ programs built" <<<"$warm"; then
    ok "a plain run stores no binary on PoCL; clnet warm stores $stored, which the next run uses"
  else bad "clnet warm (plain $plain, warmed $stored, after $after)" "$warm"; fi
  # 4c. Fashion-MNIST read as signals (input length=784): conv1d with causal dilated layers
  #     trains from the IDX files, the loss falls and the test set beats chance by far
  out=$("$clnet" train "$models/conv1d.cfg" --train-limit 1280 --test-limit 256 --batch 64 --epochs 2 \
        --lr 0.1 --momentum 0.9 2>&1)
  l1=$(sed -n 's/^epoch 1: train_loss=\([0-9.]*\).*/\1/p' <<<"$out")
  l2=$(sed -n 's/^epoch 2: train_loss=\([0-9.]*\).*/\1/p' <<<"$out")
  acc=$(sed -n 's/^final: test_accuracy=\([0-9.]*\).*/\1/p' <<<"$out")
  if [ -n "$l1" ] && [ -n "$l2" ] && [ -n "$acc" ] && awk "BEGIN { exit !($l2 < $l1 && $acc > 0.3) }"; then
    ok "the conv1d model trains on images read as signals (loss $l1 -> $l2, test accuracy $acc)"
  else bad "conv1d model" "$out"; fi

  # warm and bench take any loss: a denoiser's (float targets from the data) and a class at each
  # position's (labels for every position), with made-up targets or labels of their kinds
  seg=$work/warm_seg.cfg
  printf 'input channels=1 height=8 width=8\nconv2d filters=3 size=3 pad=1\nsoftmax_cross_entropy per=position\n' >"$seg"
  for m in "$models/denoiser.cfg" "$seg"; do
    out=$("$clnet" warm "$m" --batch 4 2>&1) && out2=$("$clnet" bench "$m" --batch 4 --steps 1 --rounds 1 2>&1) &&
      grep -qE "^warmed .* at batch 4" <<<"$out" && ok "clnet warm and bench train $(basename "$m")" ||
      bad "clnet warm / bench $(basename "$m")" "$out" "${out2:-}"
  done
  # float targets from .npy (mse without target=): the test loss falls below a tenth of the
  # untrained model's; a classifier refuses float targets, and the regression model labels
  cat >"$work/reg.cfg" <<'END'
input channels=1 height=8 width=8
conv2d filters=4 size=3 pad=1
silu
conv2d filters=1 size=1
mse
END
  regdata=(--data-npy "$npy/x_f32_regress.npy,$npy/y_f32_regress.npy,$npy/x_f32_regress.npy,$npy/y_f32_regress.npy")
  "$clnet" train "$work/reg.cfg" "${regdata[@]}" --steps 0 --save "$work/reg0.safetensors" >/dev/null 2>&1
  before=$("$clnet" eval "$work/reg.cfg" "${regdata[@]}" --weights "$work/reg0.safetensors" 2>/dev/null)
  reg=(train "$work/reg.cfg" "${regdata[@]}" --epochs 20 --batch 16 --lr 0.05 --momentum 0.9 --seed 2)
  out=$("$clnet" "${reg[@]}" --save "$work/reg.safetensors" 2>&1); rc=$?
  # stopped after 3 epochs and a half, then resumed: the same checkpoint, byte for byte
  "$clnet" "${reg[@]}" --steps 14 --save "$work/reg_half.safetensors" >/dev/null 2>&1
  "$clnet" "${reg[@]}" --resume "$work/reg_half.safetensors" --save "$work/reg_resumed.safetensors" \
    >/dev/null 2>&1
  if cmp -s "$work/reg.safetensors" "$work/reg_resumed.safetensors"; then
    ok "a run on float targets resumes to a byte-identical checkpoint"
  else bad "float targets: resume is not bitwise identical"; fi
  final=$(sed -nE 's/^final: test_loss=([0-9.]+) .*/\1/p' <<<"$out")
  if [ $rc -eq 0 ] && [ -n "$final" ] && [[ $before =~ ^test_loss=[0-9.]+$ ]] &&
     awk -v a="$final" -v b="${before#test_loss=}" 'BEGIN { exit !(a < b / 10) }'; then
    ok "float targets: the test loss falls from ${before#test_loss=} to $final"
  else bad "float targets (rc $rc)" "$out" "before: $before"; fi
  printf 'input channels=1 height=8 width=8\nflatten\nlinear units=3\nsoftmax_cross_entropy\n' \
    >"$work/cls.cfg"
  out=$("$clnet" train "$work/cls.cfg" --data-npy "$npy/x_f32_regress.npy,$npy/y_f32_regress.npy" \
        --steps 1 --no-eval 2>&1); rc=$?
  if [ $rc -ne 0 ] && grep -q "takes labels, but the data set holds float targets (64 values a sample)" <<<"$out"
  then ok "a classifier refuses float targets, saying so"
  else bad "classifier with float targets (rc $rc)" "$out"; fi
  sed 's/^conv2d filters=1 size=1/conv2d filters=2 size=1/' "$work/reg.cfg" >"$work/reg2.cfg"
  out=$("$clnet" train "$work/reg2.cfg" "${regdata[@]}" --steps 1 --no-eval 2>&1); rc=$?
  if [ $rc -ne 0 ] && grep -q "compares the output of its loss 'loss' (line 5), 2x8x8 (128 values a sample), with the data's targets, 1x8x8 (64 values)" <<<"$out"
  then ok "targets of another shape than the output are refused, naming both shapes and the line"
  else bad "targets of another shape (rc $rc)" "$out"; fi
  sed 's/height=8 width=8/height=28 width=28/' "$work/reg.cfg" >"$work/reg28.cfg"
  out=$("$clnet" train "$work/reg28.cfg" "${quick[@]}" --steps 1 --no-eval 2>&1); rc=$?
  if [ $rc -ne 0 ] && grep -q "compares its output with float targets (784 values a sample" <<<"$out"
  then ok "a model that wants float targets refuses labels, saying so"
  else bad "regression with labels (rc $rc)" "$out"; fi
  # class maps (an integer y of shape (N, 8, 8), softmax_cross_entropy per=position): 3 classes
  # by where each value lies; the test accuracy over positions rises from the untrained model's
  # (about a third) above 0.9, and eval agrees; predict writes probabilities (N, 3, 8, 8) whose
  # argmax gives its accuracy; resume is bitwise; data and models that do not fit are refused
  printf 'input channels=1 height=8 width=8\nflatten\nlinear units=3\nsoftmax_cross_entropy per=position\n' \
    >"$work/flat.cfg"
  expect_error "per=position on an input without positions is a model-file error naming the line" \
    "flat.cfg:4: layer 'loss' (softmax_cross_entropy, input 3): per=position: its input, 3, has no positions" \
    "$clnet" train "$work/flat.cfg" --steps 1 --no-eval
  if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    /usr/bin/python3 - "$work" <<'PY'
import os, sys
import numpy as np
work = sys.argv[1]
rng = np.random.default_rng(5)
for split, n in (("", 256), ("t", 64)):
    x = rng.uniform(0, 1, (n, 1, 8, 8)).astype(np.float32)
    y = (x[:, 0] > 1 / 3).astype(np.int64) + (x[:, 0] > 2 / 3)  # (n, 8, 8) in 0, 1, 2
    np.save(os.path.join(work, split + "segx.npy"), x)
    np.save(os.path.join(work, split + "segy.npy"), y)
y = np.load(os.path.join(work, "segy.npy"))
np.save(os.path.join(work, "seg_labels.npy"), y[:, 0, 0].copy())  # a label per sample
np.save(os.path.join(work, "seg_f32.npy"), y.astype(np.float32))
np.save(os.path.join(work, "seg_plus2.npy"), y + 2)  # classes 2 to 4
np.save(os.path.join(work, "seg_4x4.npy"), y[:, :4, :4].copy())
np.save(os.path.join(work, "seg_4x16.npy"), y.reshape(-1, 4, 16))  # as many positions
PY
    cat >"$work/seg.cfg" <<'END'
input channels=1 height=8 width=8
conv2d filters=8 size=3 pad=1
relu
conv2d filters=3 size=1
softmax_cross_entropy per=position
END
    segdata=(--data-npy "$work/segx.npy,$work/segy.npy,$work/tsegx.npy,$work/tsegy.npy")
    "$clnet" train "$work/seg.cfg" "${segdata[@]}" --seed 5 --steps 0 --save "$work/seg0.safetensors" \
      >/dev/null 2>&1
    before=$("$clnet" eval "$work/seg.cfg" "${segdata[@]}" --weights "$work/seg0.safetensors" 2>/dev/null |
             sed -n 's/^test_accuracy=//p')
    seg=(train "$work/seg.cfg" "${segdata[@]}" --epochs 10 --batch 32 --lr 0.1 --momentum 0.9 --seed 5)
    out=$("$clnet" "${seg[@]}" --save "$work/seg.safetensors" 2>&1); rc=$?
    final=$(sed -nE 's/^final: test_accuracy=([0-9.]+) .*/\1/p' <<<"$out")
    after=$("$clnet" eval "$work/seg.cfg" "${segdata[@]}" --weights "$work/seg.safetensors" 2>/dev/null |
            sed -n 's/^test_accuracy=//p')
    if [ $rc -eq 0 ] && [ -n "$final" ] && [ "$after" = "$final" ] && [ -n "$before" ] &&
       awk -v a="$final" -v b="$before" 'BEGIN { exit !(b < 0.6 && a > 0.9) }'; then
      ok "class maps: the test accuracy over positions rises from $before to $final, as eval says"
    else bad "class maps (rc $rc)" "$out" "before: $before" "eval after: $after"; fi
    # stopped after 3 epochs and a half, then resumed: the same checkpoint, byte for byte
    "$clnet" "${seg[@]}" --steps 28 --save "$work/seg_half.safetensors" >/dev/null 2>&1
    "$clnet" "${seg[@]}" --resume "$work/seg_half.safetensors" --save "$work/seg_resumed.safetensors" \
      >/dev/null 2>&1
    if cmp -s "$work/seg.safetensors" "$work/seg_resumed.safetensors"; then
      ok "a run on class maps resumes to a byte-identical checkpoint"
    else bad "class maps: resume is not bitwise identical"; fi
    line=$("$clnet" predict "$work/seg.cfg" --weights "$work/seg.safetensors" "${segdata[@]}" \
           --probabilities --output "$work/segp.npy" 2>&1 | tail -n1)
    acc=$(/usr/bin/python3 - "$work/segp.npy" "$work/tsegy.npy" <<'PY'
import sys
import numpy as np
p, y = np.load(sys.argv[1]), np.load(sys.argv[2])
assert p.dtype == np.float32 and p.shape == (64, 3, 8, 8), (p.dtype, p.shape)
assert np.abs(p.sum(axis=1) - 1).max() < 1e-5, "not a softmax over the channels"
print(f"{(p.argmax(axis=1) == y).mean():.4f}")
PY
    )
    if [[ $line == "predicted: count=64 shape=(64,3,8,8) output=$work/segp.npy accuracy=$acc" ]] &&
       [ "$acc" = "$final" ]; then
      ok "predict on class maps writes (64,3,8,8) whose argmax gives its accuracy ($acc)"
    else bad "predict on class maps" "$line" "from the .npy: $acc" "train: $final"; fi
    fit() { "$clnet" train "$work/$1" --data-npy "$work/segx.npy,$work/$2" --steps 1 --no-eval; }
    expect_error "a model per position refuses a label per sample, saying so" \
      "predicts a class at each of 64 positions (its loss 'loss' has per=position), but the data set has one label per sample" \
      fit seg.cfg seg_labels.npy
    expect_error "a model per position refuses float32 targets, saying so" \
      "takes the class of each position (its loss 'loss' has per=position), as integers, but the data set's targets are float32" \
      fit seg.cfg seg_f32.npy
    expect_error "a model per position refuses more classes than it predicts" \
      "predicts 3 classes at each position but the data has 5" fit seg.cfg seg_plus2.npy
    expect_error "class maps of fewer positions are refused, naming both shapes and the line" \
      "loss 'loss' (line 5), 3x8x8 (64 positions a sample), with the data's targets, 4x4 (16 values): they must have one spatial shape" \
      fit seg.cfg seg_4x4.npy
    expect_error "class maps of as many positions in another shape are refused" \
      "3x8x8 (64 positions a sample), with the data's targets, 4x16 (64 values): they must have one spatial shape" \
      fit seg.cfg seg_4x16.npy
    expect_error "a regression refuses class maps, saying so" \
      "compares its output with float targets (its loss 'loss', mse), but the data set's targets are classes" \
      fit reg.cfg segy.npy
    expect_error "a classifier per sample refuses class maps, saying so" \
      "takes labels, but the data set holds classes per position (64 values a sample)" \
      fit cls.cfg segy.npy
  else
    skip_part "class maps: numpy is missing for /usr/bin/python3 (apt-get install python3-numpy)"
  fi
  # 5. the examples autoencoder.cfg and denoiser.cfg (--noise): 80 Adam steps with a fixed seed on a
  # subset bring the test loss below a fifth of the untrained net's (about 0.23 to 0.03); the
  # denoiser's test loss is its error on noisy test inputs against clean ones: eval --noise and the
  # outputs of predict --noise against the clean images (NumPy) give it too; the checkpoint records
  # the noise; a resumed denoising run is byte-identical; and the refusals
  learn() { # name, then the options: "before after" test losses, untrained and after the run
    local m=$1; shift
    "$clnet" train "$models/$m.cfg" "$@" --steps 0 --save "$work/$m.0.safetensors" >/dev/null 2>&1
    local b; b=$("$clnet" eval "$models/$m.cfg" --weights "$work/$m.0.safetensors" --test-limit 256 \
                 "${noise[@]}" 2>/dev/null | sed -n 's/^test_loss=//p')
    local a; a=$("$clnet" train "$models/$m.cfg" "$@" --steps 80 --save "$work/$m.safetensors" \
                 2>"$work/$m.err" | sed -nE 's/^final: test_loss=([0-9.]+) .*/\1/p')
    echo "$b $a"
  }
  ex=(--train-limit 1280 --test-limit 256 --batch 32 --epochs 10 --optimizer adam --lr 0.01 --seed 4)
  noise=()
  read -r before after < <(learn autoencoder "${ex[@]}")
  if [ -n "$after" ] && awk -v a="$after" -v b="$before" 'BEGIN { exit !(a < b / 5) }'; then
    ok "examples/models/autoencoder.cfg: 80 steps take the test loss from $before to $after"
  else bad "autoencoder.cfg: $before -> $after" "$(cat "$work/autoencoder.err")"; fi
  noise=(--noise 0.3)
  read -r before after < <(learn denoiser "${ex[@]}" "${noise[@]}")
  evaluated=$("$clnet" eval "$models/denoiser.cfg" --weights "$work/denoiser.safetensors" \
              --test-limit 256 --noise 0.3 2>/dev/null | tail -n1)
  if [ -n "$after" ] && awk -v a="$after" -v b="$before" 'BEGIN { exit !(a < b / 5) }' &&
     [ "$evaluated" = "test_loss=$after" ]; then
    ok "examples/models/denoiser.cfg --noise 0.3: the noisy test loss falls from $before to $after, as eval --noise says"
  else bad "denoiser.cfg: $before -> $after" "eval: $evaluated" "$(cat "$work/denoiser.err")"; fi
  if grep -aq '"noise":"0.300000012","noise_seed":"4"' "$work/denoiser.safetensors"; then
    ok "the checkpoint records the noise and its seed"
  else bad "noise in the metadata" "$(head -c 2000 "$work/denoiser.safetensors" | tr -c '[:print:]' ' ')"; fi
  if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    "$clnet" predict "$models/denoiser.cfg" --weights "$work/denoiser.safetensors" --count 256 \
      --noise 0.3 --output "$work/denoised.npy" >/dev/null 2>&1
    mse=$(/usr/bin/python3 - "$work/denoised.npy" "$data" <<'PY'
import gzip, os, sys
import numpy as np
path = os.path.join(sys.argv[2], "t10k-images-idx3-ubyte")
raw = gzip.open(path + ".gz").read() if os.path.exists(path + ".gz") else open(path, "rb").read()
clean = np.frombuffer(raw, np.uint8, offset=16)[: 256 * 784].reshape(256, 1, 28, 28) / 255.0
print(f"{((np.load(sys.argv[1]).astype(np.float64) - clean) ** 2).mean():.6f}")
PY
    )
    if [ -n "$mse" ] && awk -v a="$after" -v m="$mse" 'BEGIN { exit !(m - a < 1e-4 && a - m < 1e-4) }'
    then ok "predict --noise denoises the same noisy inputs (its MSE against the clean images: $mse)"
    else bad "predict --noise: MSE $mse against the clean images, eval says $after"; fi
  fi
  den=(train "$models/denoiser.cfg" "${ex[@]}" --no-eval --noise 0.3)
  "$clnet" "${den[@]}" --steps 30 --save "$work/den_half.safetensors" >/dev/null 2>&1
  "$clnet" "${den[@]}" --steps 80 --resume "$work/den_half.safetensors" \
    --save "$work/den_resumed.safetensors" >/dev/null 2>&1
  "$clnet" "${den[@]}" --steps 80 --save "$work/den_full.safetensors" >/dev/null 2>&1
  if cmp -s "$work/den_full.safetensors" "$work/den_resumed.safetensors"; then
    ok "a denoising run resumes to a byte-identical checkpoint"
  else bad "denoising: resume is not bitwise identical"; fi
  expect_error "--noise with target=input is refused, saying to drop target=" \
    "the loss 'loss' of $models/autoencoder.cfg compares its output with target=input, which would be the noisy input: drop target=" \
    "$clnet" train "$models/autoencoder.cfg" "${quick[@]}" --noise 0.3 --steps 1
  expect_error "a denoising run resumed with another --noise is refused" \
    "the run was trained with --noise 0.3: resume it with --noise 0.3" \
    "$clnet" "${den[@]}" --noise 0.2 --steps 40 --resume "$work/den_half.safetensors"
  "$clnet" train "$models/denoiser.cfg" "${ex[@]}" --no-eval --noise 0 --steps 2 \
    --save "$work/den_clean.safetensors" >/dev/null 2>&1
  expect_error "a run without noise resumed with --noise is refused" \
    "the run was trained without --noise: resume it without --noise" \
    "$clnet" "${den[@]}" --steps 40 --resume "$work/den_clean.safetensors"
  expect_error "the denoiser without --noise (labels, no targets) names --noise" \
    "for a denoising autoencoder, --noise STD makes the clean samples the targets" \
    "$clnet" train "$models/denoiser.cfg" "${quick[@]}" --steps 1
  if "$clnet" train "$models/lenet.cfg" "${quick[@]}" --noise 0.2 --steps 2 --no-eval >/dev/null 2>&1
  then ok "a classifier trains on noisy inputs with its labels"
  else bad "a classifier with --noise"; fi
  # The start-up report: one line per program built and per first launch, as
  # many as the summary counts, and a cold build (an empty PoCL cache) whose
  # kernels compile without a warning (a cold build: here, not in the suite, for its 10 s).
  report=$(CLNET_CACHE_DIR="$work/startup-cache" POCL_CACHE_DIR="$work/startup-pocl" \
    "$clnet" bench "$models/lenet.cfg" --startup --batch 16 2>&1)
  built=$(sed -nE 's/^first step and evaluation of .* ([0-9]+) programs built, ([0-9]+) kernels first launched$/\1/p' <<<"$report")
  launched=$(sed -nE 's/^first step and evaluation of .* ([0-9]+) programs built, ([0-9]+) kernels first launched$/\2/p' <<<"$report")
  rows=$(grep -cE '^ +[0-9]+  [a-z_]+ +[0-9.]+ +[0-9.]+  (source|cache) ' <<<"$report")
  firsts=$(grep -cE '^ +[0-9]+  [a-z_]+ +[0-9.]+  [a-z_0-9]+ \[' <<<"$report")
  if [ -n "$built" ] && [ "$built" -gt 0 ] && [ "$rows" -eq "$built" ] && [ "$firsts" -eq "$launched" ] &&
     grep -qE "^total: opening [0-9]+ devices?" <<<"$report" && ! grep -qi "warning" <<<"$report"; then
    ok "clnet bench --startup lists its $built programs and $launched first launches, no compiler warning"
  else bad "clnet bench --startup (programs $built/$rows, launches $launched/$firsts)" "$report"; fi
fi
finish
