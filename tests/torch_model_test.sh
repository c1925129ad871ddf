#!/usr/bin/env bash
# examples/torch_model.py builds the PyTorch network of a clnet model file and
# gives the outputs of `clnet predict`: models of the new activations and
# upsampling (a classifier, two autoencoders and examples/models/autoencoder.cfg, a class at each
# position) and random models from a seed
# (printed; CLNET_TORCH_MODEL_SEED sets it, default 30; part 4 below says how many) are trained a few steps by clnet on
# random data, and `clnet predict` (logits and --probabilities) and PyTorch,
# loading the checkpoint strictly, agree on new samples within
# 1e-4 * max(1, max |PyTorch|). Part 5: clnet summary's counts are PyTorch's for every example
# model; part 6: the model files of d2l's modern CNNs give PyTorch's logits and training step. Needs Debian's /usr/bin/python3 with torch
# (python3-torch) and NumPy; exits 77 (skipped) without them.
# The suite runs the parts of `suite` (tests/parts.sh: the classifier, a random model); CI's
# extended step those of `extended` (the mse and bce autoencoders,
# examples/models/autoencoder.cfg, the segmenter, six random models and more).
# usage: torch_model_test.sh CLNET EXAMPLES_DIR
set -u
clnet=$1 examples=$2
gen=$(dirname "$0")/torch_model_gen.py
. "$(dirname "$0")/parts.sh"
python=${CLNET_TORCH_PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import torch, numpy' >/dev/null 2>&1; then
  echo "skipped: $python cannot import torch and numpy (apt-get install python3-torch)"
  exit 77
fi
work=$(mktemp -d /tmp/clnet-torch-model-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }

# the largest |clnet - PyTorch| and its bound; exits 1 above it or on other shapes
compare() {
  "$python" - "$1" "$2" <<'EOF'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
if a.shape != b.shape:
    print(f"shapes differ: clnet {a.shape}, PyTorch {b.shape}")
    sys.exit(1)
diff, bound = float(np.abs(a - b).max()), 1e-4 * max(1.0, float(np.abs(b).max()))
print(f"max|diff|={diff:.3g} bound={bound:.3g} shape={a.shape}")
sys.exit(0 if diff <= bound else 1)
EOF
}

# check NAME [WHAT]: trains $work/NAME.cfg a few steps on random data, then compares
# clnet predict with torch_model.py, logits and the loss's outputs
check() {
  local name="$1${2:+ ($2)}" m=$work/$1.cfg d=$work/$1
  "$python" "$gen" "$examples" data "$m" 64 7 "$d.x.npy" "$d.y.npy" 24 8 "$d.tx.npy" "$d.ty.npy" \
    2>"$d.err" ||
    { bad "$name: data" "$(cat "$d.err")" "$(cat "$m")"; return; }
  "$clnet" train "$m" --data-npy "$d.x.npy,$d.y.npy" --steps 4 --batch 16 --lr 0.02 \
    --momentum 0.9 --no-eval --save "$d.safetensors" >"$d.out" 2>&1 ||
    { bad "$name: clnet train" "$(cat "$d.out")" "$(cat "$m")"; return; }
  local how out
  for how in logits outputs; do
    local pflag=() tflag=(--logits)
    [ $how = outputs ] && pflag=(--probabilities) tflag=()
    if ! "$clnet" predict "$m" --weights "$d.safetensors" --input "$d.tx.npy" --mean 0 --std 1 \
      --output "$d.c.npy" "${pflag[@]}" >"$d.out" 2>&1; then
      bad "$name: clnet predict" "$(cat "$d.out")" "$(cat "$m")"
      return
    fi
    if ! "$python" "$examples/torch_model.py" "$m" "$d.safetensors" "$d.tx.npy" "$d.t.npy" \
      --mean 0 --std 1 "${tflag[@]}" >"$d.out" 2>&1; then
      bad "$name: torch_model.py" "$(cat "$d.out")" "$(cat "$m")"
      return
    fi
    if out=$(compare "$d.c.npy" "$d.t.npy"); then ok "$name ($how): $out"
    else bad "$name ($how): $out" "$(cat "$m")"; fi
  done
}

# 1. a classifier of the new layers, default names and inputs, dotted names
cat >"$work/classifier.cfg" <<'END'
input channels=2 height=12 width=12
conv2d name=stem.conv filters=8 size=3 pad=1 bias=off
batchnorm name=stem.bn momentum=0.5
leaky_relu slope=0.2
conv2d name=block.0.conv1 filters=8 size=3 pad=same
elu alpha=0.5
conv2d name=block.0.conv2 filters=8 size=3 pad=1 groups=2
batchnorm name=block.0.bn2 eps=1e-3
add input=leaky_relu1,block.0.bn2            # a residual connection
silu
concat name=join input=pool2,silu1           # before the line that defines pool2
maxpool size=2 input=silu1                   # 8x6x6
upsample scale=2 mode=nearest                # 8x12x12
conv2d filters=8 size=3 stride=2 pad=1       # 8x6x6
hardswish
upsample scale=2 mode=linear                 # 8x12x12
conv_transpose2d filters=4 size=4 stride=2 pad=1    # 4x24x24
gelu
avgpool size=2                               # 4x12x12
global_avgpool input=join                    # 12x1x1
dropout p=0.2
linear units=5
softmax_cross_entropy
END
part suite && check classifier

# 2. autoencoders: mse and bce_with_logits against the input
cat >"$work/autoencoder.cfg" <<'END'
input channels=1 height=16 width=16
conv2d name=enc.conv1 filters=8 size=3 stride=2 pad=1    # 8x8x8
batchnorm name=enc.bn1
gelu approximate=tanh
conv2d name=enc.conv2 filters=16 size=3 stride=2 pad=1   # 16x4x4
leaky_relu slope=0.2
upsample scale=2 mode=linear                             # 16x8x8
conv2d name=dec.conv1 filters=8 size=3 pad=1
elu alpha=0.5
add input=elu1,enc.bn1
conv_transpose2d name=dec.up filters=4 size=4 stride=2 pad=1   # 4x16x16
hardswish
upsample scale=2 mode=nearest                            # 4x32x32
avgpool size=2                                           # 4x16x16
silu
conv2d name=dec.out filters=1 size=3 pad=same
mse target=input
END
sed 's/^mse target=input/bce_with_logits target=input/' "$work/autoencoder.cfg" >"$work/autoencoder_bce.cfg"
cp "$examples/models/autoencoder.cfg" "$work/autoencoder_example.cfg"
if part extended; then # (the suite's classifier holds most of these layers)
  check autoencoder
  check autoencoder_bce
  check autoencoder_example "examples/models/autoencoder.cfg"
fi

# 3. a class at each position: an encoder-decoder and cross-entropy per position
cat >"$work/segmenter.cfg" <<'END'
input channels=1 height=12 width=12
conv2d name=enc.conv filters=6 size=3 stride=2 pad=1     # 6x6x6
batchnorm name=enc.bn
silu
upsample scale=2 mode=linear                             # 6x12x12
conv2d name=dec.conv filters=6 size=3 pad=same
gelu
concat input=gelu1,input                                 # 7x12x12
conv2d name=dec.classes filters=4 size=1
softmax_cross_entropy per=position
END
part extended && check segmenter # (per=position against PyTorch: its fixtures in torch.*)

# 5. clnet summary against PyTorch's own counts for every model file in examples/models: the
# parameters and buffers its modules hold (num_batches_tracked aside), each layer's among them,
# and the multiply-adds of its convolutions and linear layers from forward hooks (a weight's
# numel times the output positions, a transposed convolution's input positions); and the same
# for resnet18.cfg at 96x96 (--input)
summaries=()
for m in "$examples"/models/*.cfg; do
  s=$work/$(basename "$m").sum
  "$clnet" summary "$m" >"$s" 2>&1 || bad "clnet summary $m" "$(cat "$s")"
  summaries+=("$m" "$s" "")
done
"$clnet" summary "$examples/models/resnet18.cfg" --input 96x96 >"$work/r96.sum" 2>&1 ||
  bad "clnet summary --input" "$(cat "$work/r96.sum")"
summaries+=("$examples/models/resnet18.cfg" "$work/r96.sum" 96)
if out=$("$python" - "$examples" "${summaries[@]}" <<'EOF'
import math, os, re, sys, tempfile
import torch
from torch import nn
sys.path.insert(0, sys.argv[1])
import torch_model
args, failed, macs = sys.argv[2:], 0, [0]
def hook(module, inputs, output):
    if isinstance(module, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
        macs[0] += module.weight.numel() * math.prod(inputs[0].shape[2:])
    elif isinstance(module, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        macs[0] += module.weight.numel() * math.prod(output.shape[2:])
    elif isinstance(module, nn.Linear):
        macs[0] += module.weight.numel()
for k in range(0, len(args), 3):
    path, summary, size = args[k:k + 3]
    if size:  # the model file at another input size, as clnet summary --input makes it
        text = re.sub(r"height=\d+ width=\d+", f"height={size} width={size}", open(path).read(), count=1)
        path = os.path.join(tempfile.mkdtemp(), "model.cfg")
        open(path, "w").write(text)
    model = torch_model.build_model(path)
    params = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() for n, b in model.named_buffers() if not n.endswith("num_batches_tracked"))
    macs[0] = 0
    for m in model.modules():
        m.register_forward_hook(hook)
    with torch.no_grad():
        model(torch.zeros(1, *model.input_shape))
    text = open(summary).read()
    got = {key: int(v) for key, v in re.findall(r"(\w+)=(\d+)", text.strip().splitlines()[-1])}
    want = {"params": params, "buffers": buffers, "mult_adds": macs[0]}
    modules, layer_bad = dict(model.named_modules()), []
    for line in text.splitlines()[1:]:  # each layer's row against its module's parameters
        cols = line.split()
        if len(cols) >= 6 and cols[0] in modules and cols[3].replace(",", "").isdigit():
            if sum(p.numel() for p in modules[cols[0]].parameters()) != int(cols[3].replace(",", "")):
                layer_bad.append(cols[0])
    same = all(got.get(key) == value for key, value in want.items())
    name = os.path.basename(args[k]) + (f" at {size}x{size}" if size else "")
    print(f"  {name}: clnet {got}, PyTorch {want}" + (f"; layers differ: {layer_bad}" if layer_bad else ""))
    failed |= not same or bool(layer_bad)
sys.exit(failed)
EOF
); then
  ok "clnet summary's parameters, buffers and multiply-adds are PyTorch's for every example model"
  printf '%s\n' "$out"
else bad "clnet summary against PyTorch" "$out"; fi

# 6. the model files of d2l's modern CNNs against the networks as d2l builds them in PyTorch
# (examples/d2l_models.py): logits from the same random weights and running statistics, and one
# training step (tests/d2l_models_check.py says how close and why). The weights come from a
# seed: CLNET_D2L_SEED, else CLNET_TEST_SEED, else 8 (CI's extended step, torch_model_more:
# random).
d2l_seed=${CLNET_D2L_SEED:-${CLNET_TEST_SEED:-8}}
[ "$d2l_seed" = random ] && d2l_seed=$(( $(date +%s%N) / 1000 % 1000000 ))
echo "d2l's networks from seed $d2l_seed (CLNET_D2L_SEED=$d2l_seed reruns them)"
mkdir -p "$work/d2l"
if out=$("$python" "$(dirname "$0")/d2l_models_check.py" "$clnet" "$examples" "$work/d2l" \
    "$d2l_seed" bn_lenet googlenet resnext18 densenet regnetx32 nin vgg alexnet 2>&1); then
  ok "d2l's modern CNNs: clnet's logits and one step are PyTorch's"
  printf '%s\n' "$out"
else bad "d2l's modern CNNs against PyTorch (seed $d2l_seed)" "$out"; fi

# 4. random models: every layer names its inputs, the lines shuffled. CLNET_TORCH_MODELS of
# them (default 1, in the suite: each takes four starts of PyTorch; CI's extended step runs
# torch_model_more.pocl with 6 and a budget); with CLNET_TEST_BUDGET=S (CI's extended step) more, until S seconds have
# passed; CLNET_TORCH_MODEL_SEED=random (or, where it is unset, CLNET_TEST_SEED=random: CI's
# extended step) draws the seed.
seed=${CLNET_TORCH_MODEL_SEED:-${CLNET_TEST_SEED:-30}}
[ "$seed" = random ] && seed=$(( $(date +%s%N) / 1000 % 1000000 ))
models=${CLNET_TORCH_MODELS:-1} budget=${CLNET_TEST_BUDGET:-0}
echo "random models from seed $seed (CLNET_TORCH_MODEL_SEED=$seed reruns them)"
i=0
while [ $i -lt "$models" ] || [ $SECONDS -lt "$budget" ]; do
  "$python" "$gen" "$examples" model $((seed + i)) "$work/random$i.cfg"
  check random$i "seed $((seed + i))"
  i=$((i + 1))
done
echo "$i random models, seeds $seed to $((seed + i - 1))"
exit $fail
