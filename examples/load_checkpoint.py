#!/usr/bin/python3
"""Loads a clnet LeNet checkpoint into the equivalent PyTorch model and prints
its accuracy on the first N Fashion-MNIST test images, in the format of
`clnet eval`, so the two can be compared:

    /usr/bin/python3 examples/load_checkpoint.py lenet.safetensors 1000
    build/clnet eval examples/models/lenet.cfg --weights lenet.safetensors --test-limit 1000

Needs only torch (Debian: python3-torch); no safetensors package.
"""
import gzip
import json
import struct
import sys

import torch
from torch import nn


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    dtypes = {"F32": torch.float32, "I64": torch.int64}  # int64: counters, shape ()
    tensors = {name: torch.frombuffer(bytearray(data[t["data_offsets"][0]:t["data_offsets"][1]]),
                                      dtype=dtypes[t["dtype"]]).reshape(t["shape"])
               for name, t in header.items()}
    return tensors, meta


def lenet():
    model = nn.Sequential()
    model.add_module("conv1", nn.Conv2d(1, 20, 3)); model.add_module("relu1", nn.ReLU())
    model.add_module("pool1", nn.AvgPool2d(2, 2))
    model.add_module("conv2", nn.Conv2d(20, 50, 5)); model.add_module("relu2", nn.ReLU())
    model.add_module("pool2", nn.AvgPool2d(2, 2)); model.add_module("flatten1", nn.Flatten())
    model.add_module("fc1", nn.Linear(800, 128)); model.add_module("relu3", nn.ReLU())
    model.add_module("fc2", nn.Linear(128, 10))
    return model


def read_idx(path, offset):
    with gzip.open(path, "rb") as f:
        return f.read()[offset:]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "lenet.safetensors"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    folder = sys.argv[3] if len(sys.argv) > 3 else "/usr/share/datasets/fashion-mnist"
    tensors, meta = load_safetensors(path)
    model = lenet()
    model.load_state_dict({k: v for k, v in tensors.items() if not k.startswith("optimizer.")})
    model.eval()
    images = read_idx(folder + "/t10k-images-idx3-ubyte.gz", 16)[: n * 784]
    labels = read_idx(folder + "/t10k-labels-idx1-ubyte.gz", 8)[:n]
    x = torch.tensor(list(images), dtype=torch.float32).reshape(n, 1, 28, 28) / 255
    y = torch.tensor(list(labels))
    with torch.no_grad():
        correct = (model(x).argmax(1) == y).sum().item()
    print(f"checkpoint of step {meta.get('step', '?')}: {n} test images")
    print(f"test_accuracy={correct / n:.4f}")


if __name__ == "__main__":
    main()
