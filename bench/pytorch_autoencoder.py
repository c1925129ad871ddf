#!/usr/bin/python3
"""PyTorch baseline for clnet's autoencoders: the network of a clnet model file
(examples/models/autoencoder.cfg or denoiser.cfg, built by examples/torch_model.py, so it is
the same network layer for layer) trained on Fashion-MNIST on the CPU, reporting the test MSE.

    /usr/bin/python3 bench/pytorch_autoencoder.py MODEL.cfg [--init CKPT] [--epochs N]
        [--batch B] [--lr X] [--noise STD] [--seed S] [--threads T] [--train-limit N]
        [--test-limit N] [--data DIR]

The recipe mirrors `clnet train MODEL --optimizer adam`: Adam (betas 0.9 and 0.999, eps 1e-8,
no weight decay) at --lr (0.001), batches of --batch (128) reshuffled every epoch with the
last partial one kept, each batch's loss the mean squared error over its values. Images are
scaled to [0, 1] (clnet's --mean 0 --std 1). With --noise STD the inputs get Gaussian noise of
that standard deviation (on the [0, 1] pixels, new every epoch) and the target stays the
clean image, as `clnet train --noise` does; the test inputs get noise drawn once from a
generator of their own, so the test MSE is the denoising error. Without --noise the target is
the (clean) input: a plain autoencoder. --init loads a clnet checkpoint (`clnet train ...
--steps 0 --save CKPT`) as the starting weights, so both start from the same parameters;
without it PyTorch's default initialisation is used.

Per epoch one line goes to stderr; the last line on stdout is
    final: test_loss=<l> train_loss=<l> images_per_s=<n> seconds_per_epoch=<s>
where the test loss is the MSE over the test set in evaluation mode (batch norm's running
statistics), and images/s and seconds per epoch count the training steps alone (batch
gathering, forward, backward, update), as clnet reports images/s.

Needs Debian's python3-torch and python3-numpy (run it with /usr/bin/python3).
"""

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from pytorch_lenet import DEFAULT_DATA, load_split, positive_int  # noqa: E402
from torch_model import build_model, read_checkpoint  # noqa: E402


@torch.no_grad()
def test_mse(net, x, target, batch):
    """The mean squared error over every value of the test set, in evaluation mode."""
    net.eval()
    total = 0.0
    for i in range(0, x.shape[0], batch):
        total += F.mse_loss(net(x[i : i + batch]), target[i : i + batch], reduction="sum").item()
    return total / target.numel()


def main():
    p = argparse.ArgumentParser(description="PyTorch autoencoder on Fashion-MNIST")
    p.add_argument("model", help="the clnet model file (examples/models/autoencoder.cfg)")
    p.add_argument("--init", help="a clnet checkpoint to start from")
    p.add_argument("--epochs", type=positive_int, default=5)
    p.add_argument("--batch", type=positive_int, default=128)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--noise", type=float, default=0.0, help="input noise (0: none)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=positive_int, default=2)
    p.add_argument("--train-limit", type=positive_int)
    p.add_argument("--test-limit", type=positive_int)
    p.add_argument("--data", default=os.environ.get("CLNET_DATA_DIR") or DEFAULT_DATA)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    train_x, _ = load_split(args.data, "train")
    test_x, _ = load_split(args.data, "t10k")
    train_x, test_x = train_x[: args.train_limit], test_x[: args.test_limit]
    net = build_model(args.model)
    if args.init:
        net.load_state_dict(read_checkpoint(args.init)[0], strict=True)
    test_in = test_x
    if args.noise > 0:  # drawn once, from a generator of its own
        g = torch.Generator().manual_seed(0x7465737473657475)
        test_in = test_x + args.noise * torch.randn(test_x.shape, generator=g)
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    n, samples, train_seconds, last_loss = train_x.shape[0], 0, 0.0, float("nan")
    for epoch in range(args.epochs):
        net.train()
        order = torch.randperm(n)
        loss_sum, epoch_train = 0.0, 0.0
        for i in range(0, n, args.batch):
            t0 = time.perf_counter()
            clean = train_x[order[i : i + args.batch]]
            x = clean + args.noise * torch.randn_like(clean) if args.noise > 0 else clean
            loss = F.mse_loss(net(x), clean)
            opt.zero_grad()
            loss.backward()
            opt.step()
            epoch_train += time.perf_counter() - t0
            loss_sum += loss.item() * clean.shape[0]
        train_seconds += epoch_train
        samples += n
        last_loss = loss_sum / n
        test = test_mse(net, test_in, test_x, 1000)
        print(
            f"epoch {epoch + 1}: train_loss={last_loss:.4f} test_loss={test:.4f} "
            f"seconds={epoch_train:.1f} images_per_s={n / epoch_train:.0f}",
            file=sys.stderr,
        )
    print(
        f"final: test_loss={test:.4f} train_loss={last_loss:.4f} "
        f"images_per_s={samples / train_seconds:.0f} "
        f"seconds_per_epoch={train_seconds / args.epochs:.1f}"
    )


if __name__ == "__main__":
    main()
