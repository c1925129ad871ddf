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
   vector) is within 1e-4 of its L2 norm, and each tensor within 1e-2 of its
   layer's largest update (a bias in front of batch norm has no gradient but
   rounding, so its layer's weight sets the scale), or within 4 times the
   error of PyTorch's own float32 step where that is larger, or within twice
   the step's noise floor. A step can be so ill-conditioned that float32
   cannot do better: a relu whose input lies within float32's rounding of
   zero, or a max-pooling window whose two largest values are that close,
   decides differently for different roundings, and where batch norm then
   normalizes 4 samples of 3x3 maps (resnext18, regnetx32) one such decision
   moves a convolution's update by 1e-2. PyTorch float32 takes one set of
   decisions; clnet, rounding in another order, may take others
   (CLNET_D2L_SEED=981245: resnext18's update 8.5e-3 from the exact step,
   PyTorch float32's 4.7e-4, both flipping decisions, at different places).
   So where the first two bounds fail, the check measures the floor: the
   largest distance from the exact step of 4 float64 steps whose every
   convolution, linear layer and batch norm output is multiplied by 1 +
   3e-7 N(0, 1) (about 2.5 float32 roundings a layer: PyTorch float32's
   outputs drift from float64's by 1e-6 to 1e-5 of their largest by
   resnext18's last stage), and of a float64 step for each of the 6
   max-pooling windows whose two largest values are nearest, within 1e-6 of
   the layer's largest input, with that window decided the other way
   (CLNET_D2L_SEED=961049: alexnet's update 1.2e-3 from the exact step,
   PyTorch float32's 8e-6, from one window after its second convolution
   whose two largest values differ by 2.9e-7: the exact step with that
   window flipped is clnet's within 4e-6). Each tensor's floor is its own,
   so a layer far from the ill-conditioned part keeps a tight bound. Floors
   seen (seeds 1000-3000): the whole update's 2e-5 (nin) to 1.6e-2
   (resnext18); an update taken at a learning rate 1% off still fails every
   network (seeds 1000 and 2000). Dropout is set to p=0 on both sides for
   this step (clnet's masks are a hash, PyTorch's a random stream: the
   masks are tested in tests/test_layers.c).

usage: d2l_models_check.py CLNET EXAMPLES_DIR WORK_DIR SEED NAME...
Exits 1 when a network differs, naming it and the largest difference.
"""
import math
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
NOISE, NOISE_DRAWS = 3e-7, 4
TIE, KINKS = 1e-6, 6


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
    exact = sgd_step(model, before, x, y, torch.float64)
    torch32 = sgd_step(model, before, x, y, torch.float32)
    got, _ = load_checkpoint.load_safetensors(base + ".after.safetensors")
    for key, t0 in before.items():
        if key not in got:
            return False, f"step: {key} missing from clnet's checkpoint"
        if t0.dtype == torch.int64 and not torch.equal(got[key], exact[key].to(torch.int64)):
            return False, f"step: {key} is {got[key]}, PyTorch's {exact[key]}"
    ours, theirs = errors(before, exact, got), errors(before, exact, torch32)
    floor = ({k: 0.0 for k in ours[0]}, 0.0)
    text = ""
    if not within(ours, theirs, floor):  # ill-conditioned, or wrong: measure how ill-conditioned
        floor = noise_floor(model, before, x, y, exact)
        text = (f"; float32-sized perturbations move the exact step by up to {floor[1]:.3g}, "
                f"a tensor by {max(floor[0].values()):.3g}")
    key = max(ours[0], key=ours[0].get)
    return within(ours, theirs, floor), (
        f"one step: the update's error {ours[1]:.3g} (PyTorch float32's {theirs[1]:.3g}); "
        f"a tensor's at most {ours[0][key]:.3g} ({key}; PyTorch's {theirs[0][key]:.3g}){text}")


def sgd_step(model, before, x, y, dtype, noise=0.0, seed=0, flip=None):
    """The parameters and buffers after PyTorch's SGD step in dtype from the
    weights `before`, as float64; with noise, every convolution's, linear
    layer's and batch norm's output multiplied by 1 + noise * N(0, 1); with
    flip (pool_kinks' (max-pooling layer, element, amount)), that element
    of the layer's input raised by the amount."""
    model.load_state_dict(before)
    model.to(dtype).train()
    hooks, g = [], torch.Generator().manual_seed(seed)
    for m in model.modules():
        if noise and isinstance(m, (nn.Conv2d, nn.Linear, nn.modules.batchnorm._BatchNorm)):
            hooks.append(m.register_forward_hook(
                lambda _m, _i, o: o * (1 + noise * torch.randn(o.shape, generator=g, dtype=o.dtype))))
    if flip:
        def raise_one(_m, i):
            t = i[0].clone()
            t.view(-1)[flip[1]] += flip[2]
            return (t,)
        hooks.append(max_pools(model)[flip[0]].register_forward_pre_hook(raise_one))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    opt.zero_grad()
    nn.functional.cross_entropy(model(x.to(dtype)), y).backward()
    opt.step()
    for h in hooks:
        h.remove()
    return {k: v.double().clone() for k, v in model.state_dict().items()}


def errors(before, exact, other):
    """other's distance from the exact step in the L2 norm: each float
    tensor's relative to its layer's largest update (a bias in front of batch
    norm has no gradient but rounding: its weight's update sets the scale),
    and the whole update's relative to all of it (every float tensor as one
    vector). As ({key: error}, whole)."""
    scales, sums, per = {}, [0.0, 0.0], {}
    for key, t0 in before.items():
        if t0.dtype != torch.int64:
            layer, update = key.rsplit(".", 1)[0], float((exact[key] - t0.double()).norm())
            scales[layer] = max(scales.get(layer, 0.0), update)
            sums[1] += update**2
    for key, t0 in before.items():
        if t0.dtype != torch.int64:
            error = float((other[key].double() - exact[key]).norm())
            sums[0] += error**2
            per[key] = error / scales[key.rsplit(".", 1)[0]]
    return per, (sums[0] / sums[1]) ** 0.5


def within(ours, theirs, floor):
    """clnet's errors within 1e-4 (whole) and 1e-2 (a tensor), or 4 times
    PyTorch float32's, or twice the noise floor's."""
    ok = ours[1] <= max(1e-4, 4 * theirs[1], 2 * floor[1])
    for key, e in ours[0].items():
        ok &= e <= max(1e-2, 4 * theirs[0][key], 2 * floor[0][key])
    return ok


def noise_floor(model, before, x, y, exact):
    """How far perturbations of float32's size move the exact step: the
    largest errors() of NOISE_DRAWS float64 steps with every layer's output
    perturbed by NOISE relative (about the error that a float32 engine's
    roundings accumulate over a network's layers), and of a float64 step
    for each of the KINKS max-pooling windows nearest a tie (pool_kinks)
    with that window decided the other way."""
    per, whole = {}, 0.0
    steps = [dict(noise=NOISE, seed=draw) for draw in range(NOISE_DRAWS)]
    steps += [dict(flip=k) for k in pool_kinks(model, before, x)]
    for how in steps:
        e = errors(before, exact, sgd_step(model, before, x, y, torch.float64, **how))
        whole = max(whole, e[1])
        for key, v in e[0].items():
            per[key] = max(per.get(key, 0.0), v)
    return per, whole


def max_pools(model):
    return [m for m in model.modules() if isinstance(m, nn.MaxPool2d)]


def pool_kinks(model, before, x):
    """The KINKS max-pooling windows of the float64 forward pass (train mode)
    whose two largest values are nearest, closer than TIE of the layer's
    largest input (a float32 engine may order them either way; not exact
    ties, nor windows whose second value is 0 or less, after a relu: no
    gradient goes there): each as
    (the layer's index in max_pools, the second value's element of its
    input, twice the gap: what makes it the largest)."""
    model.load_state_dict(before)
    model.to(torch.float64).train()
    inputs, pools = {}, max_pools(model)

    def keep(m, i):
        inputs[m] = i[0].detach()

    hooks = [m.register_forward_pre_hook(keep) for m in pools]
    with torch.no_grad():
        model(x.to(torch.float64))
    for h in hooks:
        h.remove()
    kinks = []
    for at, m in enumerate(pools):
        t = inputs[m]
        k, s, p = (m.kernel_size, m.stride, m.padding)
        N, C, H, W = t.shape
        padded = nn.functional.pad(t.reshape(N * C, 1, H, W), (p, p, p, p), value=-math.inf)
        u = nn.functional.unfold(padded, k, stride=s)  # (N*C, k*k, windows)
        top = u.topk(2, dim=1)
        gap = (top.values[:, 0] - top.values[:, 1]) / float(t.abs().max())
        gap[(gap == 0) | (top.values[:, 1] <= 0)] = math.inf  # ties of zeros pass no gradient
        ow = (W + 2 * p - k) // s + 1
        for j in torch.nonzero(gap < TIE).tolist():
            nc, w = j
            dy, dx = divmod(int(top.indices[nc, 1, w]), k)
            yy, xx = w // ow * s + dy - p, w % ow * s + dx - p
            g = float(top.values[nc, 0, w] - top.values[nc, 1, w])
            kinks.append((float(gap[nc, w]), at, (nc * H + yy) * W + xx, 2 * g))
    return [k[1:] for k in sorted(kinks)[:KINKS]]


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
