#!/usr/bin/env bash
# examples/load_checkpoint.py both ways with resnet18_w16: a clnet checkpoint
# loads strictly into d2l's PyTorch model, its state dict (torch.save) comes
# back as a clnet checkpoint with the same tensors bit for bit, `clnet eval`
# reads that, and PyTorch and clnet agree on the test accuracy. CI's extended
# step (CLNET_TEST_PARTS=extended, tests/parts.sh): the old usage (a LeNet
# checkpoint, positional arguments) still works, and resnet18_96.cfg is d2l's
# ResNet-18 at 96x96 (the two: 23 s alone with a cold cache, EPYC VM). Needs Debian's
# /usr/bin/python3 with torch (python3-torch) and Fashion-MNIST; exits 77
# (skipped) without them.
# usage: load_checkpoint_test.sh CLNET MODEL_DIR SCRIPT
set -u
clnet=$1 models=$2 script=$3
. "$(dirname "$0")/need_fashion_mnist.sh"
. "$(dirname "$0")/parts.sh"
python=${CLNET_TORCH_PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import torch' >/dev/null 2>&1; then
  echo "skipped: $python cannot import torch (apt-get install python3-torch)"
  exit 77
fi
work=$(mktemp -d /tmp/clnet-load-checkpoint-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }
n=200

if part suite; then
  # 1. a few steps of clnet, then PyTorch's accuracy on the same images as clnet eval's
  "$clnet" train "$models/resnet18_w16.cfg" --steps 4 --batch 16 --lr 0.05 --momentum 0.9 --no-eval \
    --train-limit 64 --save "$work/a.safetensors" >/dev/null 2>"$work/train.err" ||
    bad "clnet train" "$(cat "$work/train.err")"
  want=$("$clnet" eval "$models/resnet18_w16.cfg" --weights "$work/a.safetensors" --test-limit $n | tail -n1)
  got=$("$python" "$script" --model resnet18_w16 "$work/a.safetensors" $n \
        --save-pytorch "$work/a.pt" 2>&1 | tail -n1)
  if [[ $want =~ ^test_accuracy=0\.[0-9]{4}$ ]] && [ "$got" = "$want" ]; then
    ok "PyTorch loads the clnet checkpoint strictly and agrees with clnet eval ($got)"
  else bad "clnet -> PyTorch" "clnet eval: $want" "PyTorch: $got"; fi

  # 2. the state dict back as a clnet checkpoint: the same tensors, and clnet eval agrees
  "$python" "$script" --model resnet18_w16 "$work/a.pt" 0 --save-clnet "$work/b.safetensors" \
    >"$work/convert.out" 2>&1 || bad "PyTorch -> clnet" "$(cat "$work/convert.out")"
  same=$("$python" - "$script" "$work/a.safetensors" "$work/b.safetensors" <<'EOF' 2>&1
import importlib.util, sys
spec = importlib.util.spec_from_file_location("lc", sys.argv[1])
lc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lc)
a, _ = lc.load_safetensors(sys.argv[2])
b, meta = lc.load_safetensors(sys.argv[3])
a = {k: v for k, v in a.items() if not k.startswith("optimizer.")}
diff = [k for k in a if k not in b or a[k].dtype != b[k].dtype or not a[k].equal(b[k])]
print("same" if not diff and len(a) == len(b) and meta["format"] == "clnet-checkpoint-2"
      else f"differ: {diff[:5]} {len(a)} {len(b)} {meta}")
EOF
  )
  if [ "$same" = same ]; then ok "the state dict converts back to the same tensors (num_batches_tracked int64)"
  else bad "round trip tensors" "$same"; fi
  again=$("$clnet" eval "$models/resnet18_w16.cfg" --weights "$work/b.safetensors" --test-limit $n \
          2>"$work/again.err" | tail -n1)
  if [ "$again" = "$want" ]; then ok "clnet eval reads the converted checkpoint ($again)"
  else bad "clnet eval of the converted checkpoint" "$again $(cat "$work/again.err")"; fi

  # 3. a tensor missing from the state dict is refused by clnet, naming it
  "$python" - "$work/a.pt" "$work/c.pt" <<'EOF'
import sys, torch
state = torch.load(sys.argv[1])
del state["resnet_block2.0.conv3.bias"]
torch.save(state, sys.argv[2])
EOF
  msg=$("$python" "$script" --model resnet18_w16 "$work/c.pt" 0 --save-clnet "$work/c.safetensors" 2>&1)
  if [ $? -ne 0 ] && grep -q 'resnet_block2.0.conv3.bias' <<<"$msg"; then
    ok "load_state_dict(strict=True) refuses an incomplete state dict"
  else bad "strict loading" "$msg"; fi
fi

# CI's extended step (tests/parts.sh)
if part extended; then
  # 4. the old usage: a LeNet checkpoint and positional arguments
  "$clnet" train "$models/lenet.cfg" --steps 0 --no-eval --save "$work/lenet.safetensors" >/dev/null 2>&1
  want=$("$clnet" eval "$models/lenet.cfg" --weights "$work/lenet.safetensors" --test-limit $n | tail -n1)
  got=$("$python" "$script" "$work/lenet.safetensors" $n 2>&1 | tail -n1)
  if [ "$got" = "$want" ]; then ok "load_checkpoint.py CHECKPOINT N still reads LeNet ($got)"
  else bad "LeNet" "clnet eval: $want" "PyTorch: $got"; fi

  # 5. resnet18_96.cfg is d2l's ResNet-18 of its ResNet chapter: PyTorch's model with random
  #    weights and running statistics (seed 5) converts to a clnet checkpoint, and clnet
  #    predict's logits on five random 96x96 inputs are PyTorch's in evaluation
  "$python" - "$script" "$work" <<'EOF' >"$work/r96.out" 2>&1 || bad "resnet18_96 in PyTorch" "$(cat "$work/r96.out")"
import importlib.util, sys
import numpy as np, torch
spec = importlib.util.spec_from_file_location("lc", sys.argv[1])
lc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lc)
torch.manual_seed(5)
net = lc.resnet18_96()
with torch.no_grad():
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2), m.running_var.uniform_(0.5, 2)
            m.weight.uniform_(0.5, 1.5), m.bias.uniform_(-0.3, 0.3)
torch.save(net.state_dict(), f"{sys.argv[2]}/r96.pt")
x = torch.rand(5, 1, 96, 96)
np.save(f"{sys.argv[2]}/x96.npy", x.numpy())
with torch.no_grad():
    np.save(f"{sys.argv[2]}/want96.npy", net.eval()(x).numpy())
EOF
  "$python" "$script" --model resnet18_96 "$work/r96.pt" 0 --save-clnet "$work/r96.safetensors" \
    >"$work/r96.out" 2>&1 || bad "resnet18_96 -> clnet" "$(cat "$work/r96.out")"
  "$clnet" predict "$models/resnet18_96.cfg" --weights "$work/r96.safetensors" --input "$work/x96.npy" \
    --output "$work/got96.npy" >"$work/r96.out" 2>&1 || bad "clnet predict resnet18_96" "$(cat "$work/r96.out")"
  diff96=$("$python" -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
print(abs(a - b).max() / abs(a).max() if a.shape == b.shape else 1)' \
    "$work/want96.npy" "$work/got96.npy" 2>/dev/null)
  if [ -n "$diff96" ] && awk "BEGIN { exit !($diff96 < 1e-5) }"; then
    ok "resnet18_96.cfg's logits are d2l's ResNet-18's at 96x96 (relative difference $diff96)"
  else bad "resnet18_96 logits: relative difference ${diff96:-?}"; fi
fi
exit $fail
