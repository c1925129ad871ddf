#!/usr/bin/python3
"""Moves weights between clnet and PyTorch, and prints PyTorch's accuracy on
the first N Fashion-MNIST test images in the format of `clnet eval`, so the
two can be compared.

clnet -> PyTorch: loads a clnet checkpoint into the equivalent PyTorch model
(load_state_dict(strict=True); the optimizer's tensors are left out):

    /usr/bin/python3 examples/load_checkpoint.py lenet.safetensors 1000
    build/clnet eval examples/models/lenet.cfg --weights lenet.safetensors --test-limit 1000

PyTorch -> clnet: a state dict saved with torch.save(model.state_dict(), FILE)
is loaded the same way (the file's kind is told by its content) and
--save-clnet writes it as a checkpoint that `clnet eval --weights` and
`clnet train --resume` read:

    /usr/bin/python3 examples/load_checkpoint.py --model resnet18_w16 model.pt 1000 \\
        --save-clnet model.safetensors
    build/clnet eval examples/models/resnet18_w16.cfg --weights model.safetensors --test-limit 1000

--save-pytorch FILE writes the loaded model's state dict with torch.save.

Models (--model; lenet by default): lenet (examples/models/lenet.cfg),
resnet18 and resnet18_w16 (examples/models/resnet18.cfg and
resnet18_w16.cfg: "Dive into Deep Learning"'s resnet18(10, in_channels=1),
built as d2l builds it, at widths 64 and 16), resnet18_96 (resnet18_96.cfg:
the ResNet-18 of d2l's ResNet chapter, for 96x96 images), and the networks of
d2l's "Modern Convolutional Neural Networks" chapter from examples/d2l_models.py:
alexnet, vgg, nin, googlenet, bn_lenet, resnext18, densenet, regnetx32 (each
examples/models/NAME.cfg). Models for other inputs than 28x28 have no
Fashion-MNIST accuracy here: n must be 0 for them.

Needs only torch (Debian: python3-torch); no safetensors package. The
functions are imported by tests/fixtures/resnet/make_resnet_fixtures.py.
"""
import argparse
import gzip
import json
import os
import struct
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import d2l_models  # noqa: E402  (next to this file)

DTYPES = {"F32": torch.float32, "I64": torch.int64}  # int64: counters, shape ()
CLNET_FORMAT = "clnet-checkpoint-2"


def load_safetensors(path):
    """(tensors, metadata) of a safetensors file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {name: torch.frombuffer(bytearray(data[t["data_offsets"][0]:t["data_offsets"][1]]),
                                      dtype=DTYPES[t["dtype"]]).reshape(t["shape"])
               for name, t in header.items()}
    return tensors, meta


def save_safetensors(path, tensors, meta):
    """Writes float32 and int64 tensors (a dict, in its order) and string
    metadata as safetensors: the header padded with spaces to 8 bytes, the
    tensors one after another, little endian."""
    names = {torch.float32: "F32", torch.int64: "I64"}
    header, blobs, offset = {"__metadata__": meta}, [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        if t.dtype not in names:
            raise ValueError(f"{name}: dtype {t.dtype}; clnet reads float32 and int64 only")
        data = t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def save_clnet(path, state_dict, source):
    """A state dict as a clnet checkpoint: its parameters and buffers under
    their state_dict() names, metadata saying where it came from (no
    optimizer state, step 0)."""
    save_safetensors(path, dict(state_dict),
                     {"format": CLNET_FORMAT, "source": source, "torch": torch.__version__})


def lenet():
    model = nn.Sequential()
    model.add_module("conv1", nn.Conv2d(1, 20, 3)); model.add_module("relu1", nn.ReLU())
    model.add_module("pool1", nn.AvgPool2d(2, 2))
    model.add_module("conv2", nn.Conv2d(20, 50, 5)); model.add_module("relu2", nn.ReLU())
    model.add_module("pool2", nn.AvgPool2d(2, 2)); model.add_module("flatten1", nn.Flatten())
    model.add_module("fc1", nn.Linear(800, 128)); model.add_module("relu3", nn.ReLU())
    model.add_module("fc2", nn.Linear(128, 10))
    return model


class Residual(nn.Module):
    """d2l's residual block: relu(bn2(conv2(relu(bn1(conv1(X))))) + X), X
    through the 1x1 convolution conv3 when the block changes the shape."""

    def __init__(self, input_channels, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.Conv2d(input_channels, num_channels, kernel_size=3, padding=1,
                               stride=strides)
        self.conv2 = nn.Conv2d(num_channels, num_channels, kernel_size=3, padding=1)
        if use_1x1conv:
            self.conv3 = nn.Conv2d(input_channels, num_channels, kernel_size=1, stride=strides)
        else:
            self.conv3 = None
        self.bn1 = nn.BatchNorm2d(num_channels)
        self.bn2 = nn.BatchNorm2d(num_channels)

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return F.relu(Y)


def resnet18(num_classes=10, in_channels=1, width=64):
    """d2l's resnet18 (13.6, "a slightly modified ResNet-18"): 3x3 stem, no
    max pooling; width 64 is d2l's, width 16 resnet18_w16's."""

    def resnet_block(in_channels, out_channels, num_residuals, first_block=False):
        blk = []
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.append(Residual(in_channels, out_channels, use_1x1conv=True, strides=2))
            else:
                blk.append(Residual(out_channels, out_channels))
        return nn.Sequential(*blk)

    w = width
    net = nn.Sequential(nn.Conv2d(in_channels, w, kernel_size=3, stride=1, padding=1),
                        nn.BatchNorm2d(w), nn.ReLU())
    net.add_module("resnet_block1", resnet_block(w, w, 2, first_block=True))
    net.add_module("resnet_block2", resnet_block(w, 2 * w, 2))
    net.add_module("resnet_block3", resnet_block(2 * w, 4 * w, 2))
    net.add_module("resnet_block4", resnet_block(4 * w, 8 * w, 2))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(8 * w, num_classes)))
    return net


def resnet18_96(num_classes=10, in_channels=1):
    """d2l's ResNet-18 of its ResNet chapter (7.6 of the PyTorch edition 0.17),
    for 96x96 inputs: a 7x7 stride-2 stem and 3x3 stride-2 max pooling, then
    the stages of resnet18 as a Sequential of Sequentials."""

    def stage(in_channels, out_channels, first_block=False):
        if first_block:
            return nn.Sequential(Residual(in_channels, out_channels),
                                 Residual(out_channels, out_channels))
        return nn.Sequential(Residual(in_channels, out_channels, use_1x1conv=True, strides=2),
                             Residual(out_channels, out_channels))

    b1 = nn.Sequential(nn.Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3),
                       nn.BatchNorm2d(64), nn.ReLU(),
                       nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
    return nn.Sequential(b1, stage(64, 64, first_block=True), stage(64, 128), stage(128, 256),
                         stage(256, 512), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
                         nn.Linear(512, num_classes))


def d2l_init_weights(module):
    """d2l 13.6's initialisation: N(0, 0.01^2) weights for linear and
    convolution layers; the rest keeps PyTorch's defaults."""
    if type(module) in [nn.Linear, nn.Conv2d]:
        nn.init.normal_(module.weight, std=0.01)


MODELS = {"lenet": lenet, "resnet18": lambda: resnet18(10, 1, 64),
          "resnet18_w16": lambda: resnet18(10, 1, 16), "resnet18_96": resnet18_96,
          **d2l_models.MODELS}


def read_state(path):
    """The tensors of a clnet checkpoint (without the optimizer's) or of a
    torch.save'd state dict, and a description of the file."""
    with open(path, "rb") as f:
        head = f.read(9)
    if len(head) == 9 and head[8:9] == b"{":  # safetensors: a length, then JSON
        tensors, meta = load_safetensors(path)
        state = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
        return state, f"clnet checkpoint of step {meta.get('step', '?')}"
    state = torch.load(path, map_location="cpu")
    if not isinstance(state, dict):
        raise SystemExit(f"{path}: not a state dict (save model.state_dict(), not the model)")
    return state, "PyTorch state dict"


def read_idx(path, offset):
    """An IDX file's bytes past its header: path.gz when it exists, as clnet reads them."""
    if os.path.exists(path + ".gz"):
        with gzip.open(path + ".gz", "rb") as f:
            return f.read()[offset:]
    with open(path, "rb") as f:
        return f.read()[offset:]


def fashion_mnist(folder, split, n, mean=0.0, std=1.0):
    """The first n images (n, 1, 28, 28) as (pixel / 255 - mean) / std, and labels."""
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(f"{folder}/{prefix}-images-idx3-ubyte", 16)[: n * 784]
    labels = read_idx(f"{folder}/{prefix}-labels-idx1-ubyte", 8)[:n]
    n = len(labels)
    x = torch.frombuffer(bytearray(images), dtype=torch.uint8).to(torch.float32)
    x = (x.reshape(n, 1, 28, 28) / 255 - mean) / std
    return x, torch.tensor(list(labels), dtype=torch.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", nargs="?", default="lenet.safetensors",
                    help="a clnet checkpoint or a torch.save'd state dict")
    ap.add_argument("n", nargs="?", type=int, default=10000, help="test images (10000)")
    ap.add_argument("data", nargs="?", help="Fashion-MNIST folder ($CLNET_DATA_DIR, else "
                    "/usr/share/datasets/fashion-mnist)",
                    default=os.environ.get("CLNET_DATA_DIR", "/usr/share/datasets/fashion-mnist"))
    ap.add_argument("--model", choices=sorted(MODELS), default="lenet")
    ap.add_argument("--mean", type=float, default=0.0, help="as clnet eval --mean (0)")
    ap.add_argument("--std", type=float, default=1.0, help="as clnet eval --std (1)")
    ap.add_argument("--batch", type=int, default=256, help="images per forward pass (256)")
    ap.add_argument("--save-clnet", metavar="FILE", help="write the weights as a clnet checkpoint")
    ap.add_argument("--save-pytorch", metavar="FILE", help="write the state dict (torch.save)")
    args = ap.parse_args()

    state, what = read_state(args.checkpoint)
    model = MODELS[args.model]()
    model.load_state_dict(state, strict=True)
    model.eval()
    if args.save_clnet:
        save_clnet(args.save_clnet, model.state_dict(), f"{what}: {args.checkpoint}")
    if args.save_pytorch:
        torch.save(model.state_dict(), args.save_pytorch)
    if args.n <= 0:
        return
    shape = getattr(model, "input_shape", (1, 96, 96) if args.model == "resnet18_96" else None)
    if shape not in (None, (1, 28, 28)):
        raise SystemExit(f"{args.model} takes {shape[1]}x{shape[2]} images: give n 0 (no "
                         "Fashion-MNIST accuracy)")
    x, y = fashion_mnist(args.data, "test", args.n, args.mean, args.std)
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), args.batch):
            correct += (model(x[i:i + args.batch]).argmax(1) == y[i:i + args.batch]).sum().item()
    print(f"{what}: {len(y)} test images")
    print(f"test_accuracy={correct / len(y):.4f}")


if __name__ == "__main__":
    main()
