#!/usr/bin/env bash
# `clnet predict` as a user runs it, on a LeNet trained briefly here: the logits
# it writes give `clnet eval`'s accuracy, PyTorch's forward pass of the same
# weights gives the same logits, --probabilities, --input without labels,
# --picture (images, and what it draws for autoencoders, denoisers, volumes, signals and class
# maps), the normalisation recorded in the checkpoint, and clear errors.
# usage: cli_predict_test.sh CLNET MODEL_DIR
set -u
clnet=$1 models=$2
here=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/need_fashion_mnist.sh"
. "$(dirname "$0")/parts.sh"
work=$(mktemp -d /tmp/clnet-cli-predict-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }
py=/usr/bin/python3

"$clnet" train "$models/lenet.cfg" --batch 64 --epochs 1 --optimizer adam --lr 0.002 \
  --train-limit 3200 --test-limit 500 --mean 0.286 --std 0.353 --save "$work/lenet.safetensors" \
  >/dev/null 2>"$work/train.err" || bad "training the net to predict with" "$(cat "$work/train.err")"

# 1. the logits give eval's accuracy; the checkpoint's mean and std are the default
eval_acc=$("$clnet" eval "$models/lenet.cfg" --weights "$work/lenet.safetensors" --test-limit 500 \
  --mean 0.286 --std 0.353 | sed -n 's/^test_accuracy=//p')
line=$("$clnet" predict "$models/lenet.cfg" --weights "$work/lenet.safetensors" --count 500 \
  --output "$work/logits.npy" --picture "$work/p.svg" 2>"$work/p.err" | tail -n1)
if [[ $line == "predicted: count=500 shape=(500,10) output=$work/logits.npy accuracy=$eval_acc" ]]; then
  ok "predict's line gives eval's accuracy ($line)"
else bad "predict's line" "$line" "eval: $eval_acc" "$(cat "$work/p.err")"; fi

if ! $py -c 'import numpy' 2>/dev/null; then
  skip_part "the .npy checks: numpy is missing for $py (apt-get install python3-numpy)"
  finish
fi
acc=$($py - "$work/logits.npy" "$data" <<'PY'
import gzip, os, sys
import numpy as np
logits, data = np.load(sys.argv[1]), sys.argv[2]
path = os.path.join(data, "t10k-labels-idx1-ubyte")
raw = gzip.open(path + ".gz").read() if os.path.exists(path + ".gz") else open(path, "rb").read()
labels = np.frombuffer(raw, dtype=np.uint8, offset=8)[: len(logits)]
assert logits.dtype == np.float32 and logits.shape == (500, 10), (logits.dtype, logits.shape)
print(f"{(logits.argmax(1) == labels).mean():.4f}")
PY
)
if [ "$acc" = "$eval_acc" ]; then ok "the written logits' argmax gives eval's accuracy ($acc)"
else bad "accuracy from the logits" "npy: $acc" "eval: $eval_acc"; fi

# 2. PyTorch's forward pass of the same weights gives the same logits
if $py -c 'import torch' 2>/dev/null; then
  diff=$(cd "$here/examples" && $py - "$work/lenet.safetensors" "$work/logits.npy" "$data" <<'PY'
import sys
import numpy as np
import torch
import load_checkpoint as lc
state, _ = lc.read_state(sys.argv[1])
net = lc.lenet()
net.load_state_dict(state, strict=True)
net.eval()
x, _ = lc.fashion_mnist(sys.argv[3], "test", 500, 0.286, 0.353)
with torch.no_grad():
    want = net(x).numpy()
got = np.load(sys.argv[2])
print(f"{np.abs(got - want).max() / np.abs(want).max():.2e}")
PY
)
  if awk "BEGIN{exit !($diff <= 1e-5)}" 2>/dev/null; then
    ok "PyTorch's forward pass of the checkpoint gives the same logits (largest difference $diff of the largest)"
  else bad "logits against PyTorch" "relative difference: $diff"; fi
else
  skip_part "the PyTorch comparison: torch is missing for $py (apt-get install python3-torch)"
fi

# 3. --probabilities: rows of softmax, the same winners
"$clnet" predict "$models/lenet.cfg" --weights "$work/lenet.safetensors" --count 500 \
  --probabilities --output "$work/probs.npy" >/dev/null 2>&1
check=$($py - "$work/probs.npy" "$work/logits.npy" <<'PY'
import sys
import numpy as np
p, z = np.load(sys.argv[1]), np.load(sys.argv[2])
e = np.exp(z - z.max(1, keepdims=True))
print("same" if np.allclose(p, e / e.sum(1, keepdims=True), atol=1e-6) else "differ")
PY
)
if [ "$check" = same ]; then ok "--probabilities writes the softmax of the logits"
else bad "--probabilities" "$check"; fi

# 3b. eval --top-k and --confusion on the same 500 samples: top-1 is test_accuracy, top-10 is 1,
# top-3 and the matrix are torch.topk's and argmax's on the logits predict wrote; the CSV has a
# header and 10 rows of 10 counts summing to 500; a K beyond the classes is refused
for k in 1 3 10; do
  "$clnet" eval "$models/lenet.cfg" --weights "$work/lenet.safetensors" --test-limit 500 \
    --top-k $k --confusion "$work/confusion$k.csv" >"$work/top$k.out" 2>"$work/top$k.err"
done
top1=$(sed -n 's/^test_top1_accuracy=//p' "$work/top1.out")
top3=$(sed -n 's/^test_top3_accuracy=//p' "$work/top3.out")
top10=$(sed -n 's/^test_top10_accuracy=//p' "$work/top10.out")
check=$($py - "$work/logits.npy" "$data" "$work/confusion3.csv" "$top3" <<'PY'
import csv, gzip, os, sys
import numpy as np
logits, data = np.load(sys.argv[1]), sys.argv[2]
path = os.path.join(data, "t10k-labels-idx1-ubyte")
raw = gzip.open(path + ".gz").read() if os.path.exists(path + ".gz") else open(path, "rb").read()
labels = np.frombuffer(raw, dtype=np.uint8, offset=8)[: len(logits)].astype(np.int64)
try:
    import torch
    top = torch.topk(torch.from_numpy(logits), 3, dim=1).indices.numpy()
except ImportError:  # numpy's order, for logits without ties
    top = np.argsort(-logits, axis=1, kind="stable")[:, :3]
want = f"{(top == labels[:, None]).any(1).mean():.4f}"
rows = list(csv.reader(open(sys.argv[3])))
header, counts = rows[0], np.array([[int(v) for v in r[1:]] for r in rows[1:]])
matrix = np.zeros((10, 10), np.int64)
np.add.at(matrix, (labels, logits.argmax(1)), 1)
problems = []
if header != ["true\\predicted"] + [str(k) for k in range(10)]: problems.append(f"header {header}")
if [r[0] for r in rows[1:]] != [str(k) for k in range(10)]: problems.append("row names")
if counts.shape != (10, 10) or counts.sum() != 500: problems.append(f"shape {counts.shape}, sum {counts.sum()}")
elif (counts != matrix).any(): problems.append(f"matrix {counts.tolist()} vs {matrix.tolist()}")
if sys.argv[4] != want: problems.append(f"top-3 {sys.argv[4]}, torch.topk {want}")
print("; ".join(problems) or "same")
PY
)
if [ "$check" = same ] && [ "$top1" = "$eval_acc" ] && [ "$top10" = "1.0000" ] &&
   awk -v a="$top3" -v b="$top1" 'BEGIN { exit !(a >= b) }' &&
   grep -q '^confusion (rows: true class, columns: predicted)' "$work/top3.err" &&
   cmp -s "$work/confusion1.csv" "$work/confusion3.csv"; then
  ok "eval --top-k: top-1 $top1 = test_accuracy, top-3 $top3 = torch.topk's, top-10 1; --confusion's CSV is argmax's matrix"
else bad "eval --top-k and --confusion" "$check" "top1 $top1 (eval $eval_acc) top3 $top3 top10 $top10" "$(cat "$work/top3.err")"; fi
out=$("$clnet" eval "$models/lenet.cfg" --weights "$work/lenet.safetensors" --test-limit 50 --top-k 11 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q -- "--top-k 11: .* has 10 classes (K is 1 to 10)" <<<"$out"; then
  ok "eval --top-k beyond the classes is refused (exit 2)"
else bad "eval --top-k 11 (rc $rc)" "$out"; fi

# 4. --input X.npy (no labels, uint8 (N, 28, 28)) gives the same logits, accuracy -
$py - "$data" "$work/x.npy" <<'PY'
import gzip, os, sys
import numpy as np
path = os.path.join(sys.argv[1], "t10k-images-idx3-ubyte")
raw = gzip.open(path + ".gz").read() if os.path.exists(path + ".gz") else open(path, "rb").read()
np.save(sys.argv[2], np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 28, 28)[:500])
PY
line=$("$clnet" predict "$models/lenet.cfg" --weights "$work/lenet.safetensors" --input "$work/x.npy" \
  --output "$work/input.npy" 2>/dev/null | tail -n1)
if [[ $line == *"accuracy=-" ]] && cmp -s "$work/input.npy" "$work/logits.npy"; then
  ok "--input X.npy without labels gives the same logits ($line)"
else bad "--input" "$line"; fi

# 5. the picture: 16 samples, each a PNG, with predicted and true classes
if [ "$(grep -o 'data:image/png;base64,' "$work/p.svg" | wc -l)" -eq 16 ] &&
   grep -q -- "--picture: drew 16 images to $work/p.svg" "$work/p.err" &&
   [ "$(grep -oE '>[0-9] \(true [0-9]\)<' "$work/p.svg" | wc -l)" -eq 16 ] && tail -c 10 "$work/p.svg" | grep -q '</svg>'; then
  ok "--picture draws 16 samples with their predicted and true classes"
else bad "--picture" "$(head -c 400 "$work/p.svg")"; fi

# 6. what --picture draws for other models, each trained a few steps on random data here:
# reconstructions (input | output, and | target for a denoiser's float targets), volumes'
# central slices, signals, class maps, and nothing for an output not shaped as the input
$py - "$work" <<'PY'
import os, sys
import numpy as np
w, rng = sys.argv[1], np.random.default_rng(7)
clean = rng.uniform(0, 1, (32, 1, 8, 8)).astype(np.float32)
np.save(os.path.join(w, "img.npy"), clean)
np.save(os.path.join(w, "img_y.npy"), np.zeros(32, np.int64))
np.save(os.path.join(w, "noisy.npy"), clean + rng.normal(0, 0.3, clean.shape).astype(np.float32))
np.save(os.path.join(w, "clean.npy"), clean)
vol = rng.normal(0, 1, (32, 1, 8, 8, 8)).astype(np.float32)
np.save(os.path.join(w, "vol.npy"), vol)
np.save(os.path.join(w, "vol_y.npy"), (vol[:, 0, :4].mean((1, 2, 3)) > 0).astype(np.int64))
sig = rng.normal(0, 1, (32, 2, 50)).astype(np.float32)
np.save(os.path.join(w, "sig.npy"), sig)
np.save(os.path.join(w, "sig_y.npy"), (sig[:, 0].mean(1) > 0).astype(np.int64))
np.save(os.path.join(w, "map_y.npy"), (clean[:, 0] > 0.5).astype(np.int64))
np.save(os.path.join(w, "three.npy"), rng.normal(0, 1, (32, 3)).astype(np.float32))
PY
model() { # name, lines...: a model file in $work
  local name=$1; shift; printf '%s\n' "$@" >"$work/$name.cfg"
}
model ae "input channels=1 height=8 width=8" "conv2d filters=4 size=3 stride=2 pad=1" gelu \
  "conv_transpose2d filters=1 size=4 stride=2 pad=1" "bce_with_logits target=input"
model denoise "input channels=1 height=8 width=8" "conv2d filters=4 size=3 pad=1" relu \
  "conv2d filters=1 size=3 pad=1" mse
model vol "input channels=1 depth=8 height=8 width=8" "conv3d filters=4 size=3 pad=1" relu \
  global_avgpool flatten "linear units=2" softmax_cross_entropy
model sig "input channels=2 length=50" "conv1d filters=4 size=3 pad=1" relu global_avgpool \
  flatten "linear units=2" softmax_cross_entropy
model map "input channels=1 height=8 width=8" "conv2d filters=2 size=3 pad=1" \
  "softmax_cross_entropy per=position"
model three "input channels=1 height=8 width=8" flatten "linear units=3" mse
picture() { # name, X,Y: trains the model 3 steps, then predicts with --picture $work/name.svg
  local name=$1 data=$2
  "$clnet" train "$work/$name.cfg" --data-npy "$data" --steps 3 --batch 16 --no-eval \
    --save "$work/$name.safetensors" >/dev/null 2>"$work/$name.err" &&
  "$clnet" predict "$work/$name.cfg" --weights "$work/$name.safetensors" --data-npy "$data" \
    --output "$work/$name.npy" --picture "$work/$name.svg" >/dev/null 2>"$work/$name.err"
}
tally() { grep -o -- "$2" "$work/$1.svg" | wc -l; } # name, pattern: how often it is in the picture
drew() { grep -q -- "--picture: drew $2 to $work/$1.svg" "$work/$1.err"; } # name, what
wellformed() { $py -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$work/$1.svg"; }
picture ae "$work/img.npy,$work/img_y.npy"
# the output column shows sigmoid(logits), as --probabilities writes them, on the scale [0, 1]
err=$($py - "$work/ae.svg" "$work/ae.npy" <<'PY'
import base64, re, struct, sys, zlib
import numpy as np
svg, logits = open(sys.argv[1]).read(), np.load(sys.argv[2])
pngs = [base64.b64decode(b) for b in re.findall(r'data:image/png;base64,([^"]+)', svg)]
worst = 0
for i in range(16):
    png = pngs[2 * i + 1]  # sample i's output
    w, h = struct.unpack(">II", png[16:24])
    at, idat = 8, b""
    while at < len(png):
        n, kind = struct.unpack(">I4s", png[at:at + 8])
        idat += png[at + 8:at + 8 + n] if kind == b"IDAT" else b""
        at += 12 + n
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, w + 1)[:, 1:]
    want = np.rint(255 / (1 + np.exp(-logits[i, 0].astype(np.float64))))
    worst = max(worst, np.abs(rows - want).max())
print(int(worst))
PY
)
if drew ae "16 reconstructions (input | output)" && wellformed ae && [ "$(tally ae '<image ')" -eq 32 ] &&
   [ "$(tally ae 'class="caption"')" -eq 16 ] && [ "$err" = 0 ]; then
  ok "--picture draws an autoencoder's 16 inputs and outputs (bce_with_logits: its sigmoid, to the grey level)"
else bad "--picture of an autoencoder" "$(cat "$work/ae.err")" "largest grey difference: $err"; fi
picture denoise "$work/noisy.npy,$work/clean.npy"
if drew denoise "16 reconstructions (input | output | target)" && wellformed denoise &&
   [ "$(tally denoise '<image ')" -eq 48 ] && [ "$(tally denoise '>target<')" -eq 3 ]; then
  ok "--picture draws a denoiser's noisy input, output and clean target"
else bad "--picture of a denoiser" "$(cat "$work/denoise.err")"; fi
picture vol "$work/vol.npy,$work/vol_y.npy"
if drew vol "16 volumes (central slices)" && wellformed vol && [ "$(tally vol '<image ')" -eq 48 ] &&
   [ "$(grep -oE '>[0-9] \(true [0-9]\)<' "$work/vol.svg" | wc -l)" -eq 16 ] &&
   [ "$(tally vol '>sagittal w=4<')" -eq 3 ]; then
  ok "--picture draws a conv3d classifier's volumes as three central slices with their classes"
else bad "--picture of volumes" "$(cat "$work/vol.err")"; fi
picture sig "$work/sig.npy,$work/sig_y.npy"
if drew sig "16 signals" && wellformed sig && [ "$(tally sig 'class="signal"')" -eq 32 ] &&
   [ "$(grep -oE '>[0-9] \(true [0-9]\)<' "$work/sig.svg" | wc -l)" -eq 16 ]; then
  ok "--picture draws a conv1d classifier's signals, a line a channel, with their classes"
else bad "--picture of signals" "$(cat "$work/sig.err")"; fi
picture map "$work/img.npy,$work/map_y.npy"
if drew map "16 class maps (input | predicted | true)" && wellformed map &&
   [ "$(tally map '<image ')" -eq 48 ] && [ "$(grep -oE '>[0-9]+ of 64 right<' "$work/map.svg" | wc -l)" -eq 16 ]; then
  ok "--picture draws a classifier of positions' images with their predicted and true class maps"
else bad "--picture of class maps" "$(cat "$work/map.err")"; fi
picture three "$work/img.npy,$work/three.npy"
if grep -q "three.cfg gives outputs not shaped as its inputs; nothing drawn" "$work/three.err" &&
   [ ! -e "$work/three.svg" ]; then
  ok "--picture says why it draws nothing for outputs not shaped as the inputs"
else bad "--picture of a regression onto 3 values" "$(cat "$work/three.err")"; fi

# 7. errors
expect_error() { # what, words, command...
  local what=$1 words=$2; shift 2
  local err; err=$("$@" 2>&1 >/dev/null); local rc=$?
  if [ $rc -ne 0 ] && grep -q -- "$words" <<<"$err"; then ok "$what"; else bad "$what (rc $rc)" "$err"; fi
}
expect_error "predict needs --output" "needs --output OUT.npy" \
  "$clnet" predict "$models/lenet.cfg" --weights "$work/lenet.safetensors"
expect_error "one source of inputs" "give one of --input, --data and --data-npy" \
  "$clnet" predict "$models/lenet.cfg" --weights "$work/lenet.safetensors" --output "$work/o.npy" \
  --input "$work/x.npy" --data "$data"
expect_error "a missing checkpoint is named" "nothere.safetensors" \
  "$clnet" predict "$models/lenet.cfg" --weights "$work/nothere.safetensors" --output "$work/o.npy"
$py -c "import numpy as np; np.save('$work/wide.npy', np.zeros((2, 3, 28, 28), np.float32))"
expect_error "inputs of another shape name both shapes" "takes 1x28x28 inputs (784 values) but the data set's samples are 3x28x28" \
  "$clnet" predict "$models/lenet.cfg" --weights "$work/lenet.safetensors" --output "$work/o.npy" --input "$work/wide.npy"
if [ ! -e "$work/o.npy" ]; then ok "a failed prediction writes no output"; else bad "o.npy written"; fi
finish
