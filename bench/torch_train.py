#!/usr/bin/python3
"""PyTorch baseline for any clnet classifier: trains the network of a clnet model file, built by
examples/torch_model.py's build_model, as `clnet train` trains it, on the CPU.

    /usr/bin/python3 bench/torch_train.py MODEL.cfg [--data DIR | --data-npy X,Y,TX,TY]
        [--epochs N] [--batch B] [--lr X] [--momentum M] [--nesterov] [--wd W]
        [--schedule constant|step|cosine] [--mean X] [--std Y] [--seed S] [--threads T]
        [--train-limit N] [--test-limit N] [--init CKPT]

The options and their defaults mirror `clnet train`'s: 10 epochs, batch 256, lr 0.1, plain SGD
with mean cross-entropy, batches reshuffled every epoch and the last partial batch kept, the
schedules per optimizer step (bench/pytorch_lenet.py's learning_rate). Samples are read as
clnet reads them: IDX images (default: Fashion-MNIST in $CLNET_DATA_DIR or
/usr/share/datasets/fashion-mnist) or .npy files, uint8 divided by 255 (float32 as they are),
then (x - mean) / std, reshaped to the model's input (784 pixels feed `length=784`). They stay
in their file's type in memory and become float32 a batch at a time.

Parameters start from PyTorch's own initialisation for each module (what init=uniform_fan_in
asks clnet for), or with --init from a clnet checkpoint (`clnet train MODEL --steps 0 --save
CKPT` writes clnet's initial one), so that both start from the same weights. Batch norm
trains on batch statistics and evaluates on running ones, as clnet's. The model's loss must
be softmax_cross_entropy (one class a sample) and it may have no dropout (torch_model.py's
dropout is evaluation's only).

Per epoch one line goes to stderr, as clnet's; the last line on stdout is
    final: test_accuracy=<a> train_loss=<l> images_per_s=<n>
where images/s counts the training samples over the time of the training steps alone (batch
gathering and conversion, forward, backward, update), without evaluation.

Needs Debian's python3-torch and python3-numpy (run it with /usr/bin/python3).
"""

import argparse
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from pytorch_lenet import DEFAULT_DATA, find, learning_rate, positive_int, read_idx  # noqa: E402
from torch_model import ModelError, build_model, read_checkpoint  # noqa: E402


def load_idx(folder, prefix):
    """IDX images (n, H, W) uint8 and labels (n,) int64 of one split."""
    images = read_idx(find(folder, f"{prefix}-images-idx3-ubyte"), 0x00000803)
    labels = read_idx(find(folder, f"{prefix}-labels-idx1-ubyte"), 0x00000801)
    if images.shape[0] != labels.shape[0]:
        sys.exit(f"torch_train: {prefix}: {images.shape[0]} images but {labels.shape[0]} labels")
    return torch.from_numpy(images.copy()), torch.from_numpy(labels.astype(np.int64))


def load_npy(x_path, y_path):
    x, y = np.load(x_path), np.load(y_path)
    if x.dtype not in (np.uint8, np.float32):
        sys.exit(f"torch_train: {x_path}: {x.dtype} samples (clnet's: uint8 or float32)")
    if y.ndim != 1 or y.dtype.kind not in "iu" or len(y) != len(x):
        sys.exit(f"torch_train: {y_path}: expected one integer label per sample, found "
                 f"{y.dtype} {y.shape} for {len(x)} samples")
    return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y.astype(np.int64))


def load_data(args, shape):
    """(train x, train y, test x, test y), x in the file's type, shaped (n, *shape)."""
    if args.data_npy:
        paths = args.data_npy.split(",")
        if len(paths) != 4:
            sys.exit("torch_train: --data-npy takes X,Y,TEST_X,TEST_Y")
        splits = [load_npy(paths[0], paths[1]), load_npy(paths[2], paths[3])]
    else:
        splits = [load_idx(args.data, "train"), load_idx(args.data, "t10k")]
    out = []
    for (x, y), limit in zip(splits, (args.train_limit, args.test_limit)):
        x, y = x[:limit], y[:limit]
        if math.prod(x.shape[1:]) != math.prod(shape):
            sys.exit(f"torch_train: samples of shape {tuple(x.shape[1:])}, the model takes "
                     f"{tuple(shape)}")
        out += [x.reshape(len(x), *shape), y]
    return out


def to_float(x, args):
    """A batch as clnet's loader makes it: uint8 / 255, then (x - mean) / std."""
    x = x.float() / 255 if x.dtype == torch.uint8 else x.float()
    return (x - args.mean) / args.std


def check_model(model, path):
    kinds = [layer.kind for layer in model.layers]
    last = model.layers[-1]
    if kinds[-1] != "softmax_cross_entropy" or last.options.get("per", "sample") != "sample":
        sys.exit(f"torch_train: {path}: trains classifiers (softmax_cross_entropy, one class a "
                 "sample) only")
    if "dropout" in kinds:
        sys.exit(f"torch_train: {path}: torch_model.py's dropout only evaluates")


@torch.no_grad()
def accuracy(net, x, y, args, batch=256):
    net.eval()
    correct = 0
    for i in range(0, len(x), batch):
        logits = net(to_float(x[i:i + batch], args), logits=True).flatten(1)
        correct += (logits.argmax(1) == y[i:i + batch]).sum().item()
    return correct / len(x)


def train_epoch(net, opt, data, args, state):
    """One epoch; returns (mean loss, accuracy, samples, training seconds)."""
    x, y = data
    n = len(x)
    per_epoch = (n + args.batch - 1) // args.batch
    order = torch.randperm(n, generator=state["shuffle"])
    loss_sum, correct, seconds = 0.0, 0, 0.0
    net.train()
    for b in range(per_epoch):
        t0 = time.perf_counter()
        idx = order[b * args.batch:(b + 1) * args.batch]
        xb, yb = to_float(x[idx], args), y[idx]
        for group in opt.param_groups:
            group["lr"] = learning_rate(args, state["step"], state["total"])
        logits = net(xb, logits=True).flatten(1)
        loss = F.cross_entropy(logits, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        seconds += time.perf_counter() - t0
        state["step"] += 1
        loss_sum += loss.item() * len(yb)
        correct += (logits.argmax(1) == yb).sum().item()
    return loss_sum / n, correct / n, n, seconds


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a clnet model file")
    p.add_argument("--data", default=os.environ.get("CLNET_DATA_DIR", DEFAULT_DATA))
    p.add_argument("--data-npy", help="X,Y,TEST_X,TEST_Y .npy files")
    p.add_argument("--epochs", type=positive_int, default=10)
    p.add_argument("--batch", type=positive_int, default=256)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--wd", type=float, default=0.0, help="weight decay")
    p.add_argument("--schedule", choices=("constant", "step", "cosine"), default="constant")
    p.add_argument("--mean", type=float, default=0.0, help="samples = (byte/255 - mean) / std")
    p.add_argument("--std", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=positive_int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--train-limit", type=positive_int, default=None)
    p.add_argument("--test-limit", type=positive_int, default=None)
    p.add_argument("--init", help="start from this clnet checkpoint's parameters")
    args = p.parse_args()
    if args.nesterov and args.momentum <= 0:
        p.error("--nesterov needs a --momentum > 0")
    if not (0 <= args.momentum < 1) or args.wd < 0 or not (args.lr > 0) or not (args.std > 0):
        p.error("need lr > 0, 0 <= momentum < 1, wd >= 0 and std > 0")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    try:
        net = build_model(args.model)
    except ModelError as e:
        sys.exit(f"torch_train: {e}")
    check_model(net, args.model)
    if args.init:
        net.load_state_dict(read_checkpoint(args.init)[0], strict=True)
    train_x, train_y, test_x, test_y = load_data(args, net.input_shape)
    per_epoch = (len(train_x) + args.batch - 1) // args.batch
    print(f"torch_train: {os.path.basename(args.model)}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {len(train_x)} training and {len(test_x)} test "
          f"samples, {per_epoch} steps per epoch", file=sys.stderr)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum,
                          nesterov=args.nesterov, weight_decay=args.wd)
    state = {"step": 0, "total": args.epochs * per_epoch,
             "shuffle": torch.Generator().manual_seed(args.seed)}
    samples, seconds, loss, test_acc = 0, 0.0, math.nan, math.nan
    for epoch in range(args.epochs):
        start = time.perf_counter()
        loss, train_acc, n, dt = train_epoch(net, opt, (train_x, train_y), args, state)
        samples, seconds = samples + n, seconds + dt
        test_acc = accuracy(net, test_x, test_y, args)
        print(f"epoch {epoch + 1}: train_loss={loss:.4f} train_accuracy={train_acc:.4f} "
              f"test_accuracy={test_acc:.4f} seconds={time.perf_counter() - start:.1f} "
              f"images_per_s={n / dt:.0f}", file=sys.stderr)
    print(f"final: test_accuracy={test_acc:.4f} train_loss={loss:.4f} "
          f"images_per_s={samples / seconds:.0f}")


if __name__ == "__main__":
    main()
