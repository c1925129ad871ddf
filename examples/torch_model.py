#!/usr/bin/python3
"""Builds the PyTorch network of any clnet model file, loads a clnet
checkpoint into it strictly, and runs it on samples from a .npy file, so
that its outputs can be compared with `clnet predict`'s:

    build/clnet predict MODEL.cfg --weights CKPT.safetensors --input X.npy --output clnet.npy
    /usr/bin/python3 examples/torch_model.py MODEL.cfg CKPT.safetensors X.npy torch.npy --logits

Without --logits the outputs are the loss layer's (`clnet predict
--probabilities`): softmax_cross_entropy's probabilities (with per=position,
over the channels at each position), bce_with_logits's
sigmoid, mse's and l1's prediction; with --logits they are what the loss
reads (`clnet predict`'s default). Samples are normalised as clnet predict
does: (x - mean) / std with the mean and std the checkpoint recorded, unless
--mean and --std are given; uint8 samples are first divided by 255.

From Python, build_model(path) gives the module (clnet_model.ClnetModel, an
nn.Module whose state_dict() keys are the checkpoint's: a layer named
"layer1.0.conv1" is the submodule layer1 -> 0 -> conv1):

    model = torch_model.build_model("net.cfg")
    model.load_state_dict(torch_model.read_checkpoint("net.safetensors")[0])
    model.eval()
    probabilities = model(x)             # x (N, C, spatial...), float32
    logits = model(x, logits=True)

The model file is read as clnet reads it (docs/model-files.md): one layer a
line, `input=` names (default the line before, 'input' the model's input),
lines in any order, sorted so that each layer runs after its inputs, default
names counted per kind. Needs torch (Debian: python3-torch) and NumPy for
the .npy files.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from load_checkpoint import load_safetensors  # noqa: E402  (next to this file)

# The stem of each kind's default names (conv1, deconv1, pool1, ...); a kind
# not listed is its own stem (relu1, add1, ...). Losses are named "loss".
STEMS = {"conv1d": "conv", "conv2d": "conv", "conv3d": "conv", "conv_transpose1d": "deconv",
         "conv_transpose2d": "deconv", "conv_transpose3d": "deconv", "maxpool": "pool",
         "avgpool": "pool", "global_avgpool": "pool", "global_maxpool": "pool",
         "batchnorm": "bn", "linear": "fc", "upsample": "up"}
LOSSES = ("softmax_cross_entropy", "mse", "l1", "bce_with_logits")
SHAPE_KEYS = ("channels", "depth", "height", "width", "length")


class ModelError(Exception):
    """A model file this loader cannot read, with its file and line."""


class Layer:
    """One line of a model file: its kind, options, name and inputs."""

    def __init__(self, kind, options, line):
        self.kind, self.options, self.line = kind, options, line
        self.name = options.pop("name", None)
        self.inputs = options.pop("input").split(",") if "input" in options else None


def parse_line(text):
    """(kind, {key: value}) of one line, or None for a blank or comment line."""
    words = text.split("#", 1)[0].split()
    if not words:
        return None
    options = {}
    for word in words[1:]:
        key, eq, value = word.partition("=")
        if not eq or not key or not value:
            raise ValueError(f"expected key=value, found '{word}'")
        if key in options:
            raise ValueError(f"option '{key}' is given twice")
        options[key] = value
    return words[0], options


def input_shape(options):
    """(C, spatial...) of the input line (or a reshape's options)."""
    v = {k: int(options[k]) for k in SHAPE_KEYS if k in options}
    for axes in (("length",), ("height", "width"), ("depth", "height", "width")):
        if "channels" in v and set(v) == {"channels", *axes}:
            return (v["channels"],) + tuple(v[a] for a in axes)
    raise ValueError("expected channels= with length=, height= width= or depth= height= width=")


def read_model(path):
    """The input shape and the layers of a model file, sorted so that each
    comes after its inputs (lowest line first where several may come next)."""
    shape, layers, last, counts = None, [], None, {}
    with open(path) as f:
        for number, text in enumerate(f, 1):
            try:
                parsed = parse_line(text)
                if parsed is None:
                    continue
                kind, options = parsed
                if kind == "input":
                    shape = input_shape(options)
                    continue
                if shape is None:
                    raise ValueError("the first line must declare the input")
                layer = Layer(kind, options, number)
                stem = "loss" if kind in LOSSES else STEMS.get(kind, kind)
                counts[stem] = counts.get(stem, 0) + 1
                if layer.name is None:
                    layer.name = stem if kind in LOSSES else f"{stem}{counts[stem]}"
                if layer.inputs is None:
                    layer.inputs = [last or "input"]
                if kind in LOSSES[1:] and "target" in options:  # else the data's targets
                    layer.inputs.append(options.pop("target"))
            except (ValueError, KeyError) as e:
                raise ModelError(f"{path}:{number}: {e}") from None
            layers.append(layer)
            last = layer.name
    if shape is None:
        raise ModelError(f"{path}: no input line")
    return shape, sort_layers(path, layers)


def sort_layers(path, layers):
    """Kahn's algorithm, lowest line first, as clnet sorts."""
    names = {layer.name for layer in layers}
    for layer in layers:
        for name in layer.inputs:
            if name != "input" and name not in names:
                raise ModelError(f"{path}:{layer.line}: unknown input '{name}'")
    done, order, waiting = {"input"}, [], list(layers)
    while waiting:
        ready = next((l for l in waiting if all(i in done for i in l.inputs)), None)
        if ready is None:
            raise ModelError(f"{path}: layers read each other in a cycle")
        waiting.remove(ready)
        order.append(ready)
        done.add(ready.name)
    return order


def dims(value, rank):
    """'3' or '3x5' as one int per spatial axis."""
    v = tuple(int(x) for x in value.split("x"))
    if len(v) == 1:
        return v * rank
    if len(v) != rank:
        raise ValueError(f"'{value}' gives {len(v)} values for {rank} spatial axes")
    return v


def on(options, key, default):
    return options.get(key, default) == "on"


def conv_layer(kind, o, shape):
    """(module, forward) of a convolution or transposed convolution; pad=causal
    puts span - 1 zeros before the signal with F.pad."""
    rank = int(kind[-2])
    transpose = kind.startswith("conv_transpose")
    k, s = dims(o["size"], rank), dims(o.get("stride", "1"), rank)
    d, groups = dims(o.get("dilation", "1"), rank), int(o.get("groups", "1"))
    bias, pad = o.get("bias", "on") == "on", o.get("pad", "0")
    conv = [nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
            nn.ConvTranspose3d][rank - 1 + 3 * transpose]
    if transpose:
        module = conv(shape[0], int(o["filters"]), k, s, dims(pad, rank),
                      dims(o.get("output_pad", "0"), rank), groups, bias, d)
        return module, module
    causal = pad == "causal"
    padding = 0 if causal else "same" if pad == "same" else dims(pad, rank)
    module = conv(shape[0], int(o["filters"]), k, s, padding, d, groups, bias)
    if not causal:
        return module, module
    before = d[0] * (k[0] - 1)
    return module, lambda x: module(F.pad(x, (before, 0)))


def pool_layer(kind, o, shape):
    rank = len(shape) - 1
    k = dims(o["size"], rank)
    s = dims(o["stride"], rank) if "stride" in o else k
    p, ceil = dims(o.get("pad", "0"), rank), on(o, "ceil", "off")
    if kind == "maxpool":
        d = dims(o.get("dilation", "1"), rank)
        return [nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d][rank - 1](k, s, p, d, ceil_mode=ceil)
    return [nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d][rank - 1](
        k, s, p, ceil_mode=ceil, count_include_pad=on(o, "count_pad", "on"))


def upsample_layer(o, shape):
    rank = len(shape) - 1
    scale = tuple(float(v) for v in dims(o.get("scale", "2"), rank))
    if o.get("mode", "nearest") == "nearest":
        return nn.Upsample(scale_factor=scale, mode="nearest")
    mode = ("linear", "bilinear", "trilinear")[rank - 1]
    return nn.Upsample(scale_factor=scale, mode=mode, align_corners=False)


def batchnorm_layer(o, shape):
    bn = [nn.BatchNorm1d, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d][len(shape) - 1]
    return bn(shape[0], eps=float(o.get("eps", "1e-5")), momentum=float(o.get("momentum", "0.1")))


ACTIVATIONS = {
    "relu": lambda o: nn.ReLU(),
    "sigmoid": lambda o: nn.Sigmoid(),
    "tanh": lambda o: nn.Tanh(),
    "leaky_relu": lambda o: nn.LeakyReLU(float(o.get("slope", "0.01"))),
    "elu": lambda o: nn.ELU(float(o.get("alpha", "1"))),
    "gelu": lambda o: nn.GELU(approximate=o.get("approximate", "none")),
    "silu": lambda o: nn.SiLU(),
    "hardswish": lambda o: nn.Hardswish(),
}


def make_layer(layer, shapes):
    """(module with state or None, forward(list of inputs), logits(inputs)
    for a loss) of one layer whose inputs have `shapes` (C, spatial...)."""
    kind, o, shape = layer.kind, layer.options, shapes[0]
    if kind.startswith("conv"):
        module, run = conv_layer(kind, o, shape)
        return module, lambda xs: run(xs[0]), None
    if kind == "linear":
        module = nn.Linear(math.prod(shape), int(o["units"]), o.get("bias", "on") == "on")
        return module, lambda xs: module(xs[0].flatten(1)), None
    if kind == "batchnorm":
        module = batchnorm_layer(o, shape)  # BatchNorm1d reads (N, C) and (N, C, L)
        return module, lambda xs: module(xs[0]), None
    if kind in ("maxpool", "avgpool"):
        pool = pool_layer(kind, o, shape)
        return None, lambda xs: pool(xs[0]), None
    if kind == "global_avgpool":
        return None, lambda xs: xs[0].mean(dim=tuple(range(2, xs[0].dim())), keepdim=True), None
    if kind == "global_maxpool":
        return None, lambda xs: xs[0].amax(dim=tuple(range(2, xs[0].dim())), keepdim=True), None
    if kind == "upsample":
        up = upsample_layer(o, shape)
        return None, lambda xs: up(xs[0]), None
    if kind == "dropout":
        p = float(o.get("p", "0.5"))
        return None, lambda xs: F.dropout(xs[0], p, training=False), None
    if kind in ACTIVATIONS:
        act = ACTIVATIONS[kind](o)
        return None, lambda xs: act(xs[0]), None
    if kind == "flatten":
        return None, lambda xs: xs[0].flatten(1), None
    if kind == "reshape":
        out = input_shape(o)
        return None, lambda xs: xs[0].reshape(xs[0].shape[0], *out), None
    if kind == "add":
        return None, lambda xs: sum(xs[1:], xs[0]), None
    if kind == "concat":
        return None, lambda xs: torch.cat(xs, dim=1), None
    if kind == "softmax_cross_entropy":
        per = o.get("per", "sample")
        if per not in ("sample", "position"):
            raise ValueError(f"per={per}: expected sample or position")

        def probabilities(xs):
            if per == "position":  # over the channels at each position
                return F.softmax(xs[0], dim=1)
            return F.softmax(xs[0].flatten(1), dim=1).reshape(xs[0].shape)
        return None, probabilities, lambda xs: xs[0]
    if kind in ("mse", "l1"):
        return None, lambda xs: xs[0], lambda xs: xs[0]
    if kind == "bce_with_logits":
        return None, lambda xs: torch.sigmoid(xs[0]), lambda xs: xs[0]
    raise ValueError(f"unknown layer kind '{kind}'")


class ClnetModel(nn.Module):
    """The network of a clnet model file. forward(x) gives the last layer's
    output (the loss's: see the module's doc), forward(x, logits=True) what
    the loss reads; a model without a loss gives its last layer's output."""

    def __init__(self, path):
        super().__init__()
        self.input_shape, self.layers = read_model(path)
        shapes = {"input": self.input_shape}
        self.runs = []
        probe = {"input": torch.zeros(1, *self.input_shape)}
        for layer in self.layers:
            try:
                module, run, logits = make_layer(layer, [shapes[i] for i in layer.inputs])
            except (ValueError, KeyError) as e:
                raise ModelError(f"{path}:{layer.line}: {layer.kind}: {e}") from None
            if module is not None:
                self.attach(layer.name, module)
                module.eval()
            self.runs.append((layer, run, logits))
            with torch.no_grad():  # the output's shape, from a sample of zeros
                probe[layer.name] = run([probe[i] for i in layer.inputs])
            shapes[layer.name] = tuple(probe[layer.name].shape[1:])
        self.eval()

    def attach(self, name, module):
        """Registers the module under its dotted name: "a.b" is child b of a
        (a plain module unless a layer is named a)."""
        parent, parts = self, name.split(".")
        for part in parts[:-1]:
            if part not in parent._modules:
                parent.add_module(part, nn.Module())
            parent = parent._modules[part]
        if parts[-1] in parent._modules:  # a placeholder made for "name.child": take its children
            for child_name, child in parent._modules[parts[-1]].named_children():
                module.add_module(child_name, child)
        parent._modules[parts[-1]] = module

    def forward(self, x, logits=False):
        outputs = {"input": x}
        last = len(self.runs) - 1
        for i, (layer, run, to_logits) in enumerate(self.runs):
            xs = [outputs[name] for name in layer.inputs]
            outputs[layer.name] = to_logits(xs) if logits and to_logits and i == last else run(xs)
        return outputs[self.layers[-1].name]


def build_model(path):
    """The ClnetModel of a model file, in evaluation mode."""
    return ClnetModel(path)


def read_checkpoint(path):
    """A clnet checkpoint's model tensors (the optimizer's left out) and its metadata."""
    tensors, meta = load_safetensors(path)
    return {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}, meta


def read_samples(path, shape, mean, std):
    """A .npy of (N, C, spatial...) or (N, spatial...) samples as clnet reads
    them: uint8 / 255, then (x - mean) / std, float32 (N, C, spatial...)."""
    x = np.load(path)
    if tuple(x.shape[1:]) != tuple(shape) and (shape[0] != 1 or tuple(x.shape[1:]) != shape[1:]):
        raise SystemExit(f"torch_model.py: {path}: samples of shape {x.shape[1:]}, the model "
                         f"takes {tuple(shape)}")
    scaled = x.astype(np.float32) / 255 if x.dtype == np.uint8 else x.astype(np.float32)
    x = torch.from_numpy(scaled).reshape(len(x), *shape)
    return (x - mean) / std


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a clnet model file")
    ap.add_argument("checkpoint", help="a clnet checkpoint (.safetensors)")
    ap.add_argument("input", help="samples, .npy: (N, C, spatial...) or (N, spatial...)")
    ap.add_argument("output", help="where the outputs go (.npy, float32)")
    ap.add_argument("--logits", action="store_true",
                    help="what the loss reads (clnet predict's default) instead of its output")
    ap.add_argument("--mean", type=float, help="normalise as (x - mean) / std (default: the "
                    "checkpoint's, else 0)")
    ap.add_argument("--std", type=float, help="(default: the checkpoint's, else 1)")
    ap.add_argument("--batch", type=int, default=256, help="samples per forward pass (256)")
    args = ap.parse_args()

    try:
        model = build_model(args.model)
    except ModelError as e:
        raise SystemExit(f"torch_model.py: {e}")
    state, meta = read_checkpoint(args.checkpoint)
    model.load_state_dict(state, strict=True)
    model.eval()
    mean = args.mean if args.mean is not None else float(meta.get("mean", 0))
    std = args.std if args.std is not None else float(meta.get("std", 1))
    x = read_samples(args.input, model.input_shape, mean, std)
    with torch.no_grad():
        out = torch.cat([model(x[i:i + args.batch], logits=args.logits)
                         for i in range(0, len(x), args.batch)])
    np.save(args.output, out.numpy().astype(np.float32))
    print(f"torch_model: count={len(out)} shape={'x'.join(map(str, out.shape[1:]))} "
          f"output={args.output}")


if __name__ == "__main__":
    main()
