#!/usr/bin/env bash
# `clnet predict` as a user runs it, on a LeNet trained briefly here: the logits
# it writes give `clnet eval`'s accuracy, PyTorch's forward pass of the same
# weights gives the same logits, --probabilities, --input without labels,
# --picture, the normalisation recorded in the checkpoint, and clear errors.
# usage: cli_predict_test.sh CLNET MODEL_DIR
set -u
clnet=$1 models=$2
here=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/need_fashion_mnist.sh"
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
  echo "skip the .npy checks: numpy is missing for $py"
  exit $fail
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
  echo "skip the PyTorch comparison: torch is missing for $py"
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
   [ "$(grep -oE '>[0-9] \(true [0-9]\)<' "$work/p.svg" | wc -l)" -eq 16 ] && tail -c 10 "$work/p.svg" | grep -q '</svg>'; then
  ok "--picture draws 16 samples with their predicted and true classes"
else bad "--picture" "$(head -c 400 "$work/p.svg")"; fi

# 6. errors
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
exit $fail
