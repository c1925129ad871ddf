#!/usr/bin/python3
"""PyTorch baseline for clnet: the LeNet of examples/models/lenet.cfg on Fashion-MNIST, on the CPU.

    /usr/bin/python3 bench/pytorch_lenet.py [--epochs N] [--batch B] [--lr X] [--momentum M]
        [--nesterov] [--wd W] [--schedule constant|step|cosine] [--seed S] [--threads T]
        [--steps N] [--no-eval] [--data DIR | --data-npy X,Y[,TX,TY]] [--model NAME]
        [--device cpu|cuda] [--warmup N]

The options and their defaults mirror `clnet train`: 10 epochs, batch 256, lr 0.1, plain SGD
(momentum 0, no weight decay) with mean cross-entropy, batches reshuffled every epoch and the
last partial batch kept. Schedules are per optimizer step: cosine anneals from lr to 0 over all
epochs x batches steps, step multiplies by 0.1 every third of those steps. --steps stops after
that many optimizer steps (a partial epoch); --no-eval skips the test set (as `clnet train
--no-eval`: for timing a whole short process). --threads defaults to every core this process may
use. The net is built here directly (not parsed from the cfg): conv 20@3x3, ReLU, avgpool 2/2,
conv 50@5x5, ReLU, avgpool 2/2, flatten, linear 128, ReLU, linear 10; weights from N(0, 0.01^2),
biases zero. Images are scaled to [0, 1], nothing else. --model picks another of clnet's example
models built alike (lenet5, resnet18, resnet18_w16, resnet18_96: the last takes 96x96 images,
from bench/resize_fashion_mnist.py through --data-npy).

Per epoch one line goes to stderr; the last line on stdout is
    final: test_accuracy=<a> train_loss=<l> images_per_s=<n>
where images/s counts the training samples over the time of the training steps alone (batch
gathering, forward, backward, update), without evaluation, as clnet reports it.

Needs Debian's python3-torch and python3-numpy (run it with /usr/bin/python3); no torchvision.
"""

import argparse
import gzip
import importlib.util
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path, want_magic):
    """An IDX file (gzipped or not) as a numpy uint8 array of its declared shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4:
        sys.exit(f"pytorch_lenet: {path}: too short for an IDX file")
    magic = struct.unpack(">I", raw[:4])[0]
    if magic != want_magic:
        sys.exit(f"pytorch_lenet: {path}: magic {magic:#x}, expected {want_magic:#x}")
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != math.prod(dims):
        sys.exit(f"pytorch_lenet: {path}: {data.size} bytes of data for shape {dims}")
    return data.reshape(dims)


def find(folder, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    sys.exit(f"pytorch_lenet: no {stem}[.gz] in {folder}")


def load_split(folder, prefix):
    """Images (n, 1, 28, 28) float32 in [0, 1] and labels (n,) int64."""
    images = read_idx(find(folder, f"{prefix}-images-idx3-ubyte"), 0x00000803)
    labels = read_idx(find(folder, f"{prefix}-labels-idx1-ubyte"), 0x00000801)
    if images.shape[0] != labels.shape[0]:
        sys.exit(f"pytorch_lenet: {prefix}: {images.shape[0]} images but {labels.shape[0]} labels")
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def load_npy(x_path, y_path):
    """Samples (n, C, ...) float32 (uint8 divided by 255, as clnet reads them) and int64 labels
    from .npy files (clnet train --data-npy's)."""
    x, y = np.load(x_path), np.load(y_path)
    if x.shape[0] != y.shape[0]:
        sys.exit(f"pytorch_lenet: {x_path}: {x.shape[0]} samples but {y.shape[0]} labels")
    x = torch.from_numpy(x.astype(np.float32) / (255.0 if x.dtype == np.uint8 else 1.0))
    if x.dim() == 3:  # (N, H, W): one channel
        x = x.unsqueeze(1)
    return x, torch.from_numpy(y.astype(np.int64))


def lenet():
    """examples/models/lenet.cfg: 1x28x28 -> 20x26x26 -> 20x13x13 -> 50x9x9 -> 50x4x4 -> 800
    -> 128 -> 10 (pooling floors, as in clnet)."""
    net = nn.Sequential(
        nn.Conv2d(1, 20, kernel_size=3),
        nn.ReLU(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Conv2d(20, 50, kernel_size=5),
        nn.ReLU(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Flatten(),
        nn.Linear(800, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.normal_(m.weight, mean=0.0, std=0.01)
            nn.init.zeros_(m.bias)
    return net


def lenet5():
    """examples/models/lenet5.cfg, d2l's LeNet (13.5): 1x28x28 -> 6x28x28 (pad 2) -> 6x14x14
    -> 16x10x10 -> 16x5x5 -> 400 -> 120 -> 84 -> 10, sigmoids, Xavier-uniform weights."""
    net = nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2),
        nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Conv2d(6, 16, kernel_size=5),
        nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Flatten(),
        nn.Linear(400, 120),
        nn.Sigmoid(),
        nn.Linear(120, 84),
        nn.Sigmoid(),
        nn.Linear(84, 10),
    )
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
    return net


class Residual(nn.Module):
    """d2l's residual block: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), the
    shortcut a 1x1 convolution (no batch norm) where the shape changes."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, stride=stride)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.conv3 = nn.Conv2d(cin, cout, 1, stride=stride) if stride != 1 else None
        self.bn1 = nn.BatchNorm2d(cout)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.conv3(x) if self.conv3 is not None else x))


def resnet18(width=64, classes=10):
    """d2l 13.6's resnet18(10, in_channels=1), stages of width, 2x, 4x, 8x channels (64 is
    d2l's; examples/models/resnet18_w16.cfg is 16); weights N(0, 0.01), biases PyTorch's."""
    w = [width, 2 * width, 4 * width, 8 * width]
    net = nn.Sequential(nn.Conv2d(1, w[0], 3, padding=1), nn.BatchNorm2d(w[0]), nn.ReLU())
    cin = w[0]
    for i, cout in enumerate(w):
        first = Residual(cin, cout) if i == 0 else Residual(cin, cout, stride=2)
        net.add_module(f"resnet_block{i + 1}", nn.Sequential(first, Residual(cout, cout)))
        cin = cout
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(cin, classes)))
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.normal_(m.weight, std=0.01)
    return net


def resnet18_96(classes=10):
    """examples/models/resnet18_96.cfg, the ResNet-18 of d2l's ResNet chapter for 96x96 images,
    as examples/load_checkpoint.py builds it (the network tests/load_checkpoint_test.sh checks
    against the model file); Xavier-uniform weights (d2l's train_ch6), biases PyTorch's."""
    spec = importlib.util.spec_from_file_location(
        "load_checkpoint", os.path.join(os.path.dirname(__file__), "..", "examples", "load_checkpoint.py"))
    lc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lc)
    net = lc.resnet18_96(classes)
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
    return net


MODELS = {"lenet": lenet, "lenet5": lenet5, "resnet18": resnet18, "resnet18_w16": lambda: resnet18(16),
          "resnet18_96": resnet18_96}


def learning_rate(args, step, total_steps):
    """The rate for optimizer step `step` (0-based), as clnet_sgd_lr computes it."""
    if args.schedule == "cosine":
        f = 1.0 if step >= total_steps else step / total_steps
        return args.lr * 0.5 * (1.0 + math.cos(math.pi * f))
    if args.schedule == "step":
        step_size = max(1, (total_steps + 2) // 3)
        return args.lr * 0.1 ** (step // step_size)
    return args.lr


@torch.no_grad()
def accuracy(net, x, y, batch):
    correct = 0
    for i in range(0, x.shape[0], batch):
        correct += (net(x[i : i + batch]).argmax(1) == y[i : i + batch]).sum().item()
    return correct / x.shape[0]


def positive_int(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text} is not >= 1")
    return v


def main():
    p = argparse.ArgumentParser(
        description="PyTorch LeNet on Fashion-MNIST, the baseline for clnet train"
    )
    p.add_argument("--model", choices=sorted(MODELS), default="lenet")
    p.add_argument("--epochs", type=positive_int, default=10)
    p.add_argument("--batch", type=positive_int, default=256)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--wd", type=float, default=0.0, help="weight decay")
    p.add_argument("--schedule", choices=("constant", "step", "cosine"), default="constant")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=positive_int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--steps", type=int, default=-1, help="stop after N optimizer steps")
    p.add_argument("--warmup", type=int, default=0,
                   help="leave the first N steps out of images_per_s (cuDNN's algorithm search)")
    p.add_argument("--no-eval", action="store_true", help="never evaluate the test set")
    p.add_argument("--eval-speed", action="store_true",
                   help="then time evaluation (eval(), no_grad) over the test set at --batch: "
                   "the final line's images_per_s")
    p.add_argument("--test-limit", type=positive_int, default=None,
                   help="use only the first N test images")
    p.add_argument("--train-limit", type=positive_int, default=None,
                   help="use only the first N training images")
    p.add_argument("--resize", type=positive_int, default=None, metavar="N",
                   help="resize the images to N x N first (bilinear, as clnet's --resize)")
    p.add_argument("--mean", type=float, default=0.0, help="images = (pixel/255 - mean) / std")
    p.add_argument("--std", type=float, default=1.0)
    p.add_argument("--data", default=os.environ.get("CLNET_DATA_DIR", DEFAULT_DATA))
    p.add_argument("--data-npy", metavar="X,Y[,TX,TY]",
                   help=".npy samples and labels instead of --data, as clnet train --data-npy "
                   "(the test pair is needed unless --no-eval)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: train on the GPU (float32, TF32 off; each step's time ends with a synchronize)")
    args = p.parse_args()
    if args.nesterov and args.momentum <= 0:
        p.error("--nesterov needs a --momentum > 0")
    if not (0 <= args.momentum < 1) or args.wd < 0 or not (args.lr > 0):
        p.error("need lr > 0, 0 <= momentum < 1 and wd >= 0")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    if args.data_npy:
        paths = args.data_npy.split(",")
        if len(paths) not in (2, 4) or (len(paths) == 2 and not args.no_eval):
            p.error("--data-npy takes X,Y (with --no-eval) or X,Y,TX,TY")
        train_x, train_y = load_npy(paths[0], paths[1])
        test_x, test_y = load_npy(*paths[2:]) if len(paths) == 4 else (train_x[:0], train_y[:0])
    else:
        train_x, train_y = load_split(args.data, "train")
        test_x, test_y = load_split(args.data, "t10k")
    test_x, test_y = test_x[: args.test_limit], test_y[: args.test_limit]
    train_x, train_y = train_x[: args.train_limit], train_y[: args.train_limit]
    if args.resize:  # once, before timing: clnet resizes on its loader's threads as it goes
        def resized(x):
            return torch.cat([torch.nn.functional.interpolate(
                x[i:i + 1024], size=(args.resize, args.resize), mode="bilinear",
                align_corners=False, antialias=False) for i in range(0, x.shape[0], 1024)]) \
                if x.shape[0] else x.new_zeros((0, x.shape[1], args.resize, args.resize))
        train_x, test_x = resized(train_x), resized(test_x)
    train_x = (train_x - args.mean) / args.std
    test_x = (test_x - args.mean) / args.std
    n = train_x.shape[0]
    per_epoch = (n + args.batch - 1) // args.batch
    total_steps = args.epochs * per_epoch
    max_steps = args.steps if args.steps >= 0 else math.inf
    print(
        f"pytorch_lenet: {args.model}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{n} training and {test_x.shape[0]} test images, {per_epoch} steps per epoch",
        file=sys.stderr,
    )

    train_x, train_y, test_x, test_y = (t.to(dev) for t in (train_x, train_y, test_x, test_y))
    net = MODELS[args.model]().to(dev)
    opt = torch.optim.SGD(
        net.parameters(),
        lr=args.lr,
        momentum=args.momentum,
        nesterov=args.nesterov,
        weight_decay=args.wd,
    )
    shuffle = torch.Generator().manual_seed(args.seed)

    step = 0
    train_seconds = 0.0
    samples = 0
    last_loss = math.nan
    test_acc = math.nan
    for epoch in range(args.epochs):
        if step >= max_steps:
            break
        epoch_start = time.perf_counter()
        order = torch.randperm(n, generator=shuffle).to(dev)
        loss_sum = 0.0
        correct = 0
        seen = 0
        timed = 0
        epoch_train = 0.0
        net.train()
        for b in range(per_epoch):
            if step >= max_steps:
                break
            t0 = time.perf_counter()
            idx = order[b * args.batch : (b + 1) * args.batch]
            x, y = train_x[idx], train_y[idx]
            for group in opt.param_groups:
                group["lr"] = learning_rate(args, step, total_steps)
            logits = net(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if args.device == "cuda":
                torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            step += 1
            k = y.shape[0]
            if step > args.warmup:
                epoch_train += dt
                timed += k
            loss_sum += loss.item() * k
            correct += (logits.argmax(1) == y).sum().item()
            seen += k
        train_seconds += epoch_train
        samples += timed
        done = seen == n
        last_loss = loss_sum / seen
        test_acc = accuracy(net.eval(), test_x, test_y, 1000) if done and not args.no_eval else math.nan
        print(
            f"epoch {epoch + 1}{'' if done else ' (partial)'}: train_loss={last_loss:.4f} "
            f"train_accuracy={correct / seen:.4f} "
            f"test_accuracy={'-' if math.isnan(test_acc) else f'{test_acc:.4f}'} "
            f"seconds={time.perf_counter() - epoch_start:.1f} "
            f"images_per_s={timed / epoch_train if epoch_train > 0 else 0:.0f}",
            file=sys.stderr,
        )
    if math.isnan(test_acc) and not args.no_eval:
        test_acc = accuracy(net.eval(), test_x, test_y, 1000)
    ips = samples / train_seconds if train_seconds > 0 else 0.0
    if args.eval_speed:
        accuracy(net.eval(), test_x[: args.batch], test_y[: args.batch], args.batch)  # warm
        t0 = time.perf_counter()
        test_acc = accuracy(net.eval(), test_x, test_y, args.batch)
        ips = test_x.shape[0] / (time.perf_counter() - t0)
    print(f"final: test_accuracy={test_acc:.4f} train_loss={last_loss:.4f} images_per_s={ips:.0f}")


if __name__ == "__main__":
    main()
