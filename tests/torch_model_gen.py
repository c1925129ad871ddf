#!/usr/bin/python3
"""Random clnet models for tests/torch_model_test.sh, drawn from a seed from
the layers examples/torch_model.py builds, and random data to train them on.

    torch_model_gen.py EXAMPLES model SEED OUT.cfg
        a random model (its output shapes come from torch_model.py's modules;
        clnet checks them again as it reads it)
    torch_model_gen.py EXAMPLES data MODEL.cfg N SEED X.npy Y.npy [N SEED X.npy Y.npy]...
        N samples in [0, 1) of the model's input shape (float32) and labels
        below its classes (int64), for each set named (one start of PyTorch)

EXAMPLES is the folder of examples/torch_model.py.
"""
import random
import sys
import warnings

import numpy as np
import torch

sys.path.insert(0, sys.argv[1])
import torch_model as tm  # noqa: E402  (examples/, the first argument)

# padding='same' with an even span pads a copy of the input: fine for probing shapes
warnings.filterwarnings("ignore", message=".*padding='same'")

ACTIVATIONS = ["relu", "sigmoid", "tanh", "leaky_relu slope={:.2f}", "elu alpha={:.2f}",
               "gelu", "gelu approximate=tanh", "silu", "hardswish"]


class Builder:
    """Lines of a model whose output shapes are known as they are added."""

    def __init__(self, rng, shape):
        self.rng, self.shapes, self.lines = rng, {"input": shape}, []
        self.probes = {"input": torch.zeros(1, *shape)}
        self.last, self.count = "input", 0

    def shape(self, name=None):
        return self.shapes[name or self.last]

    def add(self, text, inputs=None, keep=True):
        """Adds `kind options` reading `inputs` (default the last layer); None
        when torch refuses it or its output is empty or too big."""
        inputs = inputs or [self.last]
        self.count += 1
        name = f"l{self.count}.{text.split()[0]}"
        kind, options = tm.parse_line(text)
        layer = tm.Layer(kind, dict(options, name=name, input=",".join(inputs)), 0)
        try:
            _, run, _ = tm.make_layer(layer, [self.shapes[i] for i in inputs])
            with torch.no_grad():
                out = run([self.probes[i] for i in inputs])
        except (RuntimeError, ValueError):
            return None
        if out.numel() == 0 or out.numel() > 4096 or min(out.shape[1:], default=1) < 1:
            return None
        self.probes[name], self.shapes[name] = out, tuple(out.shape[1:])
        self.lines.append(f"{text} name={name} input={','.join(inputs)}")
        if keep:
            self.last = name
        return name


def conv(rng, rank, channels):
    k = rng.randint(1, 3)
    pad = rng.choice([str(rng.randint(0, k - 1)), "same"] + (["causal"] if rank == 1 else []))
    stride = 1 if pad in ("same", "causal") else rng.randint(1, 2)
    groups = rng.choice([g for g in (1, 2) if channels % g == 0])
    text = (f"conv{rank}d filters={groups * rng.randint(1, 4)} size={k} stride={stride} "
            f"pad={pad} dilation={rng.randint(1, 2)} groups={groups}")
    return text + rng.choice(["", " bias=off"])


def deconv(rng, rank, channels):
    k, s = rng.randint(1, 4), rng.randint(1, 2)
    return (f"conv_transpose{rank}d filters={rng.randint(1, 4)} size={k} stride={s} "
            f"pad={rng.randint(0, (k - 1) // 2)} output_pad={rng.randint(0, s - 1)}"
            + rng.choice(["", " bias=off"]))


def pool(rng, rank):
    k = rng.randint(1, 3)
    kind = rng.choice(["maxpool", "avgpool"])
    text = (f"{kind} size={k} stride={rng.randint(1, 2)} pad={rng.randint(0, k // 2)} "
            f"ceil={rng.choice(['on', 'off'])}")
    if kind == "maxpool":
        return text + f" dilation={rng.randint(1, 2)}"
    return text + f" count_pad={rng.choice(['on', 'off'])}"


def random_model(seed):
    rng = random.Random(seed)
    rank = rng.randint(1, 3)
    spatial = [rng.randint(6, 16), rng.randint(5, 9), rng.randint(4, 5)][rank - 1]
    shape = (rng.randint(1, 3),) + (spatial,) * rank
    keys = [("length",), ("height", "width"), ("depth", "height", "width")][rank - 1]
    head = "input channels=%d " % shape[0] + " ".join(f"{k}={spatial}" for k in keys)
    b = Builder(rng, shape)
    for _ in range(rng.randint(3, 9)):
        r, c = len(b.shape()) - 1, b.shape()[0]
        if r == 0:
            break
        pick = rng.random()
        if pick < 0.25:
            b.add(conv(rng, r, c))
        elif pick < 0.35:
            b.add(deconv(rng, r, c))
        elif pick < 0.45:
            b.add(pool(rng, r))
        elif pick < 0.55:
            b.add(f"upsample scale={rng.randint(1, 2)} mode={rng.choice(['nearest', 'linear'])}")
        elif pick < 0.65:
            b.add(f"batchnorm eps={rng.choice(['1e-5', '1e-3'])} momentum={rng.choice(['0.1', '0.5'])}")
        elif pick < 0.8:
            b.add(rng.choice(ACTIVATIONS).format(rng.uniform(0.05, 1.5)))
        elif pick < 0.85:
            b.add(f"dropout p={rng.choice(['0.1', '0.5'])}")
        elif pick < 0.93:  # a residual block: x + f(x)
            x = b.last
            if b.add(f"conv{r}d filters={c} size=3 pad=same"):
                b.add(rng.choice(ACTIVATIONS).format(rng.uniform(0.05, 1.5)))
                b.add("add", [x, b.last])
        else:  # two branches joined along channels
            x = b.last
            left = b.add(f"conv{r}d filters={rng.randint(1, 3)} size=1", [x], keep=False)
            if left:
                b.add("concat", [left, x])
    regress = rng.random() < 0.5
    positions = not regress and len(b.shape()) > 1 and rng.random() < 0.35
    if len(b.shape()) > 1 and not positions and rng.random() < 0.3:
        b.add(rng.choice(["global_avgpool", "global_maxpool"]))
    if not positions and rng.random() < 0.5:
        b.add("flatten")
    if positions:  # a class at each position: a 1x1 convolution to the classes
        b.add(f"conv{len(b.shape()) - 1}d filters={rng.randint(2, 5)} size=1")
        loss = "softmax_cross_entropy per=position"
    elif regress:  # back to the input's shape, and a loss against it
        b.add(f"linear units={np.prod(shape)}")
        b.add("reshape channels=%d " % shape[0] + " ".join(f"{k}={spatial}" for k in keys))
        loss = rng.choice(["mse", "l1", "bce_with_logits"]) + " target=input"
    else:
        b.add(f"linear units={rng.randint(2, 6)}" + rng.choice(["", " bias=off"]))
        loss = "softmax_cross_entropy"
    body = b.lines[:]
    rng.shuffle(body)  # every line names its inputs: any order reads the same
    return "\n".join([f"# random model, seed {seed}", head] + body + [f"{loss} input={b.last}"]) + "\n"


def data(model, n, seed, x_path, y_path):
    """n samples of the model's input and labels below its classes, from seed."""
    g = np.random.default_rng(int(seed))
    x = g.random((int(n),) + model.input_shape, dtype=np.float32)
    classes, labels = 1, (int(n),)
    loss = model.layers[-1]
    if loss.kind == "softmax_cross_entropy":
        with torch.no_grad():
            logits = model(torch.zeros(1, *model.input_shape), logits=True)[0]
        classes = logits.numel()
        if loss.options.get("per") == "position":  # (n, spatial...) of the channels
            classes, labels = logits.shape[0], (int(n),) + tuple(logits.shape[1:])
    np.save(x_path, x)
    np.save(y_path, g.integers(0, classes, labels).astype(np.int64))


def main():
    if sys.argv[2] == "model":
        with open(sys.argv[4], "w") as f:
            f.write(random_model(int(sys.argv[3])))
    else:
        model = tm.build_model(sys.argv[3])
        sets = sys.argv[4:]
        for i in range(0, len(sets) - 3, 4):
            data(model, *sets[i:i + 4])


if __name__ == "__main__":
    main()
