#!/usr/bin/python3
"""How well PyTorch itself reproduces d2l's ResNet gradient in float32: for batches of 8
Fashion-MNIST training images at d2l's initialisation, the largest difference between the
float32 and the float64 gradient of each parameter tensor, relative to the tensor's largest
float64 value (biases of convolutions read by batch norm left out: their gradient is 0 in
exact arithmetic). Explains why tests/test_resnet.c uses chosen batches.

    /usr/bin/python3 bench/resnet_conditioning.py [--width 16] [--batches 5] [--batch 8]
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_lenet import DEFAULT_DATA, load_split, resnet18  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--batches", type=int, default=5)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default=os.environ.get("CLNET_DATA_DIR", DEFAULT_DATA))
    args = p.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    x, y = load_split(args.data, "train")
    net64 = resnet18(args.width).double()
    net32 = resnet18(args.width)
    net32.load_state_dict({k: v.float() for k, v in net64.state_dict().items()})
    skip = {n + ".bias" for n, m in net64.named_modules()
            if isinstance(m, torch.nn.Conv2d) and (n == "0" or n.endswith(("conv1", "conv2")))}
    for b in range(args.batches):
        xb, yb = x[b * args.batch:(b + 1) * args.batch], y[b * args.batch:(b + 1) * args.batch]
        grads = []
        for net, dtype in ((net32, torch.float32), (net64, torch.float64)):
            net.train()
            net.zero_grad()
            F.cross_entropy(net(xb.to(dtype)), yb, reduction="sum").backward()
            grads.append({k: p.grad.double() for k, p in net.named_parameters()})
            for m in net.modules():  # keep the running statistics of the start
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.reset_running_stats()
        worst, where = max(((grads[0][k] - grads[1][k]).abs().max().item()
                            / grads[1][k].abs().max().item(), k)
                           for k in grads[0] if k not in skip)
        print(f"images {b * args.batch}-{(b + 1) * args.batch - 1}: float32 vs float64 "
              f"gradient, largest difference {worst:.1e} of the tensor's largest ({where})")


if __name__ == "__main__":
    main()
