#!/usr/bin/python3
"""The model files of d2l's modern CNNs (examples/models/NAME.cfg) against
the same networks built as d2l builds them in PyTorch (examples/d2l_models.py),
run by tests/torch_model_test.sh (part 6):

1. PyTorch's weights (d2l's initialisation from a seed) with batch norm's
   weights, biases and running statistics drawn at random, written as a
   clnet checkpoint: `clnet predict` gives PyTorch's logits (evaluation
   mode) on 3 random inputs at the network's own input size, within
   1e-5 * max |PyTorch's logits|.
2. One training step from those weights on a batch of 4 random inputs and
   labels, SGD at lr 0.05 (`clnet train --resume --steps 1 --batch 4`),
   against the same step taken by PyTorch (train mode, CrossEntropyLoss,
   torch.optim.SGD) in float64 from the same float32 weights, the exact step.
   The whole update (every tensor, running statistics included, as one
   vector) is within 1e-4 of its L2 norm, or within 4 times the error of
   PyTorch's own float32 step where that is larger: a step can be so
   ill-conditioned that float32 cannot do better (batch norm over 4 samples
   of 3x3 maps in resnext18 and regnetx32 gives PyTorch float32 errors of
   1e-3 for some seeds). Each tensor is within 1e-2 of its layer's largest
   update (a bias in front of batch norm has no gradient but rounding, so its
   layer's weight sets the scale), or 4 times PyTorch float32's error: one
   max-pooling window whose two largest values are closer than float32
   resolves can route its gradient elsewhere than the exact step does, and
   that moves a small layer's update by a few thousandths. A wrong gradient
   misses both by orders of magnitude. Dropout is set to p=0 on both sides
   for this step (clnet's masks are a hash, PyTorch's a random stream: the
   masks are tested in tests/test_layers.c).

usage: d2l_models_check.py CLNET EXAMPLES_DIR WORK_DIR SEED NAME...
Exits 1 when a network differs, naming it and the largest difference.
"""
import os
import re
import subprocess
import sys

import numpy as np
import torch
from torch import nn

clnet, examples, work, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, examples)
import d2l_models  # noqa: E402  (examples/)
import load_checkpoint  # noqa: E402

LR, BATCH = 0.05, 4


def run(args, what):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {p.returncode}):\n{p.stdout}")
    return p.stdout


def random_model(name, s):
    torch.manual_seed(s)
    model = d2l_models.MODELS[name]()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return model


def logits(name, s):
    model = random_model(name, s)
    model.eval()
    base = os.path.join(work, name)
    load_checkpoint.save_clnet(base + ".safetensors", model.state_dict(), f"seed {s}")
    x = torch.randn(3, *model.input_shape)
    np.save(base + ".x.npy", x.numpy())
    run([clnet, "predict", os.path.join(examples, "models", name + ".cfg"), "--weights",
         base + ".safetensors", "--input", base + ".x.npy", "--mean", "0", "--std", "1",
         "--output", base + ".c.npy"], "clnet predict")
    with torch.no_grad():
        want = model(x).numpy()
    got = np.load(base + ".c.npy")
    if got.shape != want.shape:
        return False, f"logits: clnet {got.shape}, PyTorch {want.shape}"
    diff, bound = float(np.abs(got - want).max()), 1e-5 * float(np.abs(want).max())
    return diff <= bound, f"logits max|diff|={diff:.3g} (bound {bound:.3g})"


def step(name, s):
    model = random_model(name, s)
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    base = os.path.join(work, name + ".step")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    load_checkpoint.save_clnet(base + ".safetensors", before, f"seed {s}")
    x = torch.randn(BATCH, *model.input_shape)
    y = torch.randint(0, 10, (BATCH,))
    np.save(base + ".x.npy", x.numpy())
    np.save(base + ".y.npy", y.numpy().astype(np.int64))
    text = open(os.path.join(examples, "models", name + ".cfg")).read()
    cfg = base + ".cfg"
    with open(cfg, "w") as f:
        f.write(re.sub(r"(?m)^(dropout\s.*)\bp=[0-9.]+", r"\1p=0", text))
    run([clnet, "train", cfg, "--resume", base + ".safetensors", "--data-npy",
         f"{base}.x.npy,{base}.y.npy", "--steps", "1", "--batch", str(BATCH), "--lr", str(LR),
         "--no-eval", "--deterministic", "--save", base + ".after.safetensors"], "clnet train")
    state = {}
    for dtype in (torch.float32, torch.float64):  # PyTorch's step, and the same in float64
        model.load_state_dict(before)
        model.to(dtype).train()
        opt = torch.optim.SGD(model.parameters(), lr=LR)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x.to(dtype)), y).backward()
        opt.step()
        state[dtype] = {k: v.double() for k, v in model.state_dict().items()}
    got, _ = load_checkpoint.load_safetensors(base + ".after.safetensors")
    exact, torch32 = state[torch.float64], state[torch.float32]
    # errors in the L2 norm, clnet's and PyTorch float32 step's against the exact step: each
    # tensor's relative to its layer's largest update (a bias in front of batch norm has no
    # gradient but rounding: its weight's update sets the scale), the whole update's relative
    # to all of it (every float tensor as one vector)
    scales, sums = {}, [0.0, 0.0, 0.0]
    for key, t0 in before.items():
        if t0.dtype != torch.int64:
            layer, update = key.rsplit(".", 1)[0], float((exact[key] - t0.double()).norm())
            scales[layer] = max(scales.get(layer, 0.0), update)
    worst, ok = (0.0, 0.0, ""), True
    for key, t0 in before.items():
        if key not in got:
            return False, f"step: {key} missing from clnet's checkpoint"
        if t0.dtype == torch.int64:
            if not torch.equal(got[key], exact[key].to(torch.int64)):
                return False, f"step: {key} is {got[key]}, PyTorch's {exact[key]}"
            continue
        scale = scales[key.rsplit(".", 1)[0]]
        ours = float((got[key].double() - exact[key]).norm())
        theirs = float((torch32[key] - exact[key]).norm())
        sums[0] += ours**2
        sums[1] += theirs**2
        sums[2] += float((exact[key] - t0.double()).norm()) ** 2
        if ours / scale > worst[0]:
            worst = (ours / scale, theirs / scale, key)
        ok &= ours <= max(1e-2 * scale, 4 * theirs)
    whole, whole32 = (sums[0] / sums[2]) ** 0.5, (sums[1] / sums[2]) ** 0.5
    ok &= whole <= max(1e-4, 4 * whole32)
    return ok, (f"one step: the update's error {whole:.3g} (PyTorch float32's {whole32:.3g}); "
                f"a tensor's at most {worst[0]:.3g} ({worst[2]}; PyTorch's {worst[1]:.3g})")


failed = 0
for i, name in enumerate(sys.argv[5:]):
    for check in (logits, step):
        try:
            good, text = check(name, seed + i)
        except RuntimeError as e:
            good, text = False, str(e)
        print(f"{'ok  ' if good else 'FAIL'} {name}: {text}", flush=True)
        failed |= not good
sys.exit(failed)
