#!/usr/bin/env bash
# `clnet train`, `eval` and `predict` on CIFAR-10 and CIFAR-100 binary folders
# made up here (no download): --data DIR finds the layout, a model of
# `input channels=3 height=32 width=32` trains on it, and a model of another
# shape or fewer classes, or a damaged batch file, is refused with a message
# that names it. The bytes are written by the layout of
# https://www.cs.toronto.edu/~kriz/cifar.html: a record is the label byte
# (CIFAR-100: coarse, then fine) then 3072 pixel bytes (red, green, blue
# planes of 32x32); here every pixel of record i is one value.
# usage: cli_cifar_test.sh CLNET MODEL_DIR
set -u
clnet=$1 models=$2
work=$(mktemp -d /tmp/clnet-cli-cifar-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }
expect_error() { # what, words, command...: the command fails, its stderr saying the words
  local what=$1 words=$2; shift 2
  local err; err=$("$@" 2>&1 >/dev/null); local rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$words" <<<"$err"; then ok "$what"; else bad "$what (rc $rc)" "$err"; fi
}
byte() { printf "$(printf '\\%03o' "$1")"; }
# records FIRST N CLASSES [COARSE]: records of the samples FIRST.. (label i*7 mod CLASSES)
records() {
  local i
  for ((i = $1; i < $1 + $2; i++)); do
    if [ -n "${4:-}" ]; then byte $(((i * 3) % 20)); fi
    byte $(((i * 7 + 3) % $3))
    head -c 3072 /dev/zero | tr '\0' "$(printf '\\%03o' $(((i * 37 + 5) % 256)))"
  done
}

c10=$work/cifar-10-batches-bin c100=$work/cifar-100-binary
mkdir -p "$c10" "$c100"
for k in 1 2 3 4 5; do records $(((k - 1) * 8)) 8 10 >"$c10/data_batch_$k.bin"; done
records 0 16 10 >"$c10/test_batch.bin"
printf '%s\n' airplane automobile bird cat deer dog frog horse ship truck '' >"$c10/batches.meta.txt"
records 0 24 100 coarse >"$c100/train.bin"
records 0 8 100 coarse >"$c100/test.bin"
for k in $(seq 0 99); do echo "fine_$k"; done >"$c100/fine_label_names.txt"
if [ "$(wc -c <"$c10/data_batch_1.bin")" -ne $((8 * 3073)) ] ||
   [ "$(wc -c <"$c100/train.bin")" -ne $((24 * 3074)) ]; then
  bad "the made-up folders have whole records" "$(ls -l "$c10" "$c100")"
fi

model() { # classes: a small convolutional net for 3x32x32 images
  cat <<CFG
input channels=3 height=32 width=32
conv2d  name=conv1 filters=4 size=5
relu
maxpool size=2 stride=2
flatten
linear  name=fc units=$1
softmax_cross_entropy
CFG
}
model 10 >"$work/cifar10.cfg"
model 100 >"$work/cifar100.cfg"
model 5 >"$work/five.cfg"

# 1. CIFAR-10: two steps of 8, the test split evaluated; eval and predict read it too
out=$("$clnet" train "$work/cifar10.cfg" --data "$c10" --steps 2 --batch 8 \
      --save "$work/c10.safetensors" 2>"$work/c10.err")
rc=$? last=$(tail -n1 <<<"$out")
if [ $rc -eq 0 ] && [[ $last =~ ^final:\ test_accuracy=[01]\.[0-9]{4}\ train_loss=[0-9]+\.[0-9]{4} ]]; then
  ok "train on a CIFAR-10 folder ($last)"
else bad "train on CIFAR-10 (rc $rc)" "$out" "$(cat "$work/c10.err")"; fi
acc=$("$clnet" eval "$work/cifar10.cfg" --weights "$work/c10.safetensors" --data "$c10" 2>&1 | tail -n1)
if [[ $acc =~ ^test_accuracy=[01]\.[0-9]{4}$ ]]; then ok "eval on the CIFAR-10 test batch ($acc)"
else bad "eval on CIFAR-10" "$acc"; fi
line=$("$clnet" predict "$work/cifar10.cfg" --weights "$work/c10.safetensors" --data "$c10" \
       --output "$work/c10.npy" 2>&1 | tail -n1)
if [[ $line == "predicted: count=16 shape=(16,10) output=$work/c10.npy accuracy="* ]]; then
  ok "predict reads the 16 test records ($line)"
else bad "predict on CIFAR-10" "$line"; fi

# 2. CIFAR-100: the fine labels, 100 classes
out=$("$clnet" train "$work/cifar100.cfg" --data "$c100" --steps 2 --batch 8 2>"$work/c100.err")
rc=$?
if [ $rc -eq 0 ] && grep -q '^final: test_accuracy=' <<<"$out"; then ok "train on a CIFAR-100 folder"
else bad "train on CIFAR-100 (rc $rc)" "$out" "$(cat "$work/c100.err")"; fi
expect_error "CIFAR-100's 100 classes do not fit a model of 10" "the data has 100 classes" \
  "$clnet" train "$work/cifar10.cfg" --data "$c100" --steps 1 --batch 8

# 3. models that do not fit, and damaged or missing files
expect_error "a 1x28x28 model is refused, naming both shapes" \
  "takes 1x28x28 inputs (784 values) but the data set's samples are 3x32x32 (3072)" \
  "$clnet" train "$models/lenet.cfg" --data "$c10" --steps 1 --batch 8
expect_error "a model of 5 classes is refused" "the data has 10 classes but" \
  "$clnet" train "$work/five.cfg" --data "$c10" --steps 1 --batch 8
head -c $((3 * 3073 + 10)) "$c10/data_batch_2.bin" >"$work/cut" && mv "$work/cut" "$c10/data_batch_2.bin"
expect_error "a truncated batch is named" \
  "$c10/data_batch_2.bin: truncated: $((3 * 3073 + 10)) bytes are 3 whole records of 3073 bytes and 10 bytes left over" \
  "$clnet" train "$work/cifar10.cfg" --data "$c10" --steps 1 --batch 8
rm "$c10/data_batch_2.bin"
expect_error "a missing batch is named" "$c10/data_batch_2.bin" \
  "$clnet" train "$work/cifar10.cfg" --data "$c10" --steps 1 --batch 8
expect_error "a folder of no layout names them all" "CIFAR-100's (train.bin, test.bin)" \
  "$clnet" train "$work/cifar10.cfg" --data "$work" --steps 1 --batch 8

if [ $fail -ne 0 ]; then exit 1; fi
