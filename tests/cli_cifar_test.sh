#!/usr/bin/env bash
# `clnet train`, `eval` and `predict` on CIFAR-10 and CIFAR-100 binary folders
# made up here (no download), and on that CIFAR-10 folder exported as an image folder: --data DIR finds the layout, a model of
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
# --confusion names the classes as the checkpoint records them; its counts sum to the 16 records
"$clnet" eval "$work/cifar10.cfg" --weights "$work/c10.safetensors" --data "$c10" \
  --confusion "$work/c10.csv" >/dev/null 2>"$work/conf.err"
header=$(head -n1 "$work/c10.csv")
total=$(tail -n +2 "$work/c10.csv" | cut -d, -f2- | tr ',' '\n' | awk '{ s += $1 } END { print s }')
if [ "$header" = 'true\predicted,airplane,automobile,bird,cat,deer,dog,frog,horse,ship,truck' ] &&
   [ "$(tail -n +2 "$work/c10.csv" | cut -d, -f1 | tr '\n' ' ')" = "airplane automobile bird cat deer dog frog horse ship truck " ] &&
   [ "$total" = 16 ] && grep -qE '^truck +9:' "$work/conf.err"; then
  ok "eval --confusion names CIFAR-10's classes, its 16 records counted"
else bad "eval --confusion on CIFAR-10" "$(cat "$work/c10.csv" "$work/conf.err")"; fi
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

# 2b. image folders: the CIFAR-10 folder exported as PNGs and, beside them, as 40x36 JPEGs
# (two formats, two sizes, ten named classes), then trained on, resumed, evaluated and
# predicted from by name
img=$work/images
out=$("$clnet" export "$img" --data "$c10" 2>&1) &&
  out2=$("$clnet" export "$img" --data "$c10" --format jpg --resize 40x36 2>&1)
if [ $? -eq 0 ] && [ "$(tail -n1 <<<"$out")" = "exported: train=40 test=16 folder=$img" ] &&
   [ -f "$img/train/cat/00.jpg" ] && [ -f "$img/test/cat/00.png" ]; then
  ok "export writes the CIFAR-10 folder as PNG and JPEG images, by class name"
else bad "export" "$out" "${out2:-}" "$(ls -R "$img" | head -20)"; fi
expect_error "images of two sizes need --resize" "are not all one size" \
  "$clnet" train "$work/cifar10.cfg" --data "$img" --steps 1 --batch 8
imgrun() { # name epochs [options]: train on the image folder
  local name=$1 epochs=$2; shift 2
  "$clnet" train "$work/cifar10.cfg" --data "$img" --resize 32 --batch 8 --epochs "$epochs" --lr 0.01 \
    --val-split 0.25 --augment flip,crop=2 --mean 0.5,0.4,0.3 --std 0.2,0.25,0.3 \
    --loader-threads 3 --save "$work/$name.safetensors" "$@" 2>"$work/$name.err"
}
out=$(imgrun img_full 2) && out1=$(imgrun img_half 1) &&
  out2=$("$clnet" train "$work/cifar10.cfg" --data "$img" --resume "$work/img_half.safetensors" \
         --epochs 2 --override epochs --save "$work/img_resumed.safetensors" 2>"$work/img_resumed.err")
if [ $? -eq 0 ] && cmp -s "$work/img_full.safetensors" "$work/img_resumed.safetensors" &&
   grep -qE '^epoch 2: .* val_loss=[0-9.]+ val_accuracy=[01]\.[0-9]{4} test_loss=[0-9.]+ test_accuracy=' "$work/img_full.err"; then
  ok "train on an image folder with --val-split, resumed byte-identical"
else bad "train on an image folder and resume" "$out" "$(cat "$work/img_full.err" "$work/img_resumed.err")"; fi
out=$("$clnet" train "$work/cifar10.cfg" --data "$img" --resize 32 --batch 8 --epochs 1 --lr 0.01 \
      --val-split 0.25 --augment flip,crop=2 --mean 0.5,0.4,0.3 --std 0.2,0.25,0.3 \
      --loader-threads 1 --save "$work/img_one.safetensors" 2>&1) &&
  out2=$(imgrun img_three 1)
if cmp -s "$work/img_one.safetensors" "$work/img_three.safetensors"; then
  ok "one loader thread or three: the same parameters"
else bad "loader threads change the result" "$out" "$(cat "$work/img_three.err")"; fi
expect_error "--mean of 2 values for 3 channels is refused" "--mean gives 2 values, but the data has 3 channels" \
  "$clnet" train "$work/cifar10.cfg" --data "$img" --resize 32 --steps 1 --batch 8 --mean 0.1,0.2
# eval takes the run's --resize and normalisation from the checkpoint
a=$("$clnet" eval "$work/cifar10.cfg" --data "$img" --weights "$work/img_full.safetensors" 2>&1 | tail -n1)
b=$("$clnet" eval "$work/cifar10.cfg" --data "$img" --weights "$work/img_full.safetensors" \
    --resize 32 --mean 0.5,0.4,0.3 --std 0.2,0.25,0.3 2>&1 | tail -n1)
if [[ $a =~ ^test_accuracy=[01]\.[0-9]{4}$ ]] && [ "$a" = "$b" ]; then
  ok "eval reads the run's resize and per-channel normalisation from the checkpoint ($a)"
else bad "eval with the checkpoint's settings" "$a" "$b"; fi
out=$("$clnet" predict "$work/cifar10.cfg" --weights "$work/img_full.safetensors" \
      --input "$img/test/cat" --top 3 --output "$work/cats.csv" 2>&1)
n=$(grep -cE "^$img/test/cat/[0-9]+\.(png|jpg): (airplane|automobile|bird|cat|deer|dog|frog|horse|ship|truck) [01]\.[0-9]{4}, [a-z]+ [01]\.[0-9]{4}, [a-z]+ [01]\.[0-9]{4}$" <<<"$out")
files=$(ls "$img/test/cat" | wc -l)
if [ "$n" -eq "$files" ] && [ "$(head -n1 "$work/cats.csv")" = "file,class,name,probability,class_2,name_2,probability_2,class_3,name_3,probability_3" ] &&
   [ "$(wc -l <"$work/cats.csv")" -eq $((files + 1)) ]; then
  ok "predict --input DIR names each image's three likeliest classes, and writes them as CSV"
else bad "predict on a folder of images ($n of $files lines)" "$out" "$(cat "$work/cats.csv")"; fi
one=$(ls "$img/test/cat" | head -n1)
out=$("$clnet" predict "$work/cifar10.cfg" --weights "$work/img_full.safetensors" --input "$img/test/cat/$one" 2>&1)
if grep -qE "^$img/test/cat/$one: [a-z]+ [01]\.[0-9]{4}$" <<<"$out" && grep -q "^predicted: count=1 " <<<"$out"; then
  ok "predict --input IMAGE"
else bad "predict on one image" "$out"; fi
printf 'not an image\n' >"$img/train/dog/bad.png"
expect_error "a bad image is named" "$img/train/dog/bad.png: not a PNG or JPEG file" \
  "$clnet" train "$work/cifar10.cfg" --data "$img" --resize 32 --steps 1 --batch 8
out=$("$clnet" train "$work/cifar10.cfg" --data "$img" --resize 32 --steps 1 --batch 8 --skip-bad-images 2>&1)
if [ $? -eq 0 ] && grep -qF "clnet: skipped $img/train/dog/bad.png: not a PNG or JPEG file" <<<"$out" &&
   grep -qF "clnet: skipped 1 image that do not decode" <<<"$out"; then
  ok "--skip-bad-images leaves it out, with a line"
else bad "--skip-bad-images" "$out"; fi
rm "$img/train/dog/bad.png"

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
