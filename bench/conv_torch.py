#!/usr/bin/python3
"""Forward + backward throughput of single convolution layers in PyTorch on
the CPU: the baseline of build/bench/bench_conv.

    /usr/bin/python3 bench/conv_torch.py [REPS] [SHAPE-FILTER] [--threads T]
                                         [--device cuda]

--device cuda runs the layers on the GPU instead (float32, TF32 off, cuDNN's
choice of algorithm with benchmark mode on; each timing ends with
torch.cuda.synchronize()): the baseline of bench_conv on an NVIDIA device.

The same shapes, batches and passes as bench_conv: y = conv(x, w, b), then
y.backward(dy) with x, w and b all wanting gradients (dx, dW, db), float32,
torch.set_num_threads(T) (default 2). Two untimed passes, then REPS timed
passes (default 10); per shape prints

    torch: <shape> | <samples/s> samples/s | <GFLOP/s> GFLOP/s | <ms> ms (forward
    <ms>, backward <ms>) | ...

from the median pass (and the median forward and backward), counting 2*MACs forward and 4*MACs backward, then the
shapes and the checksums (sums of |y|, |dx|, |dW|, |db|) of one pass on the
fixed inputs bench_conv uses, so that the two lines can be compared.
"""
import argparse
import os
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

# (name, batch, input shape (C, spatial...), function, filters, options):
# keep in step with SHAPES in bench_conv.c
SHAPES = [
    ("conv1d_64x1024_k3", 32, (64, 1024), "conv1d", 64,
     dict(kernel=3, padding=1)),
    ("conv1d_64x1024_k3_d4", 32, (64, 1024), "conv1d", 64,
     dict(kernel=3, dilation=4, padding="same")),
    ("conv3d_16x16x32x32_k3", 4, (16, 16, 32, 32), "conv3d", 32,
     dict(kernel=3, padding=1)),
    ("conv3d_3x8x64x64_k3_s122", 32, (3, 8, 64, 64), "conv3d", 16,
     dict(kernel=3, stride=(1, 2, 2), padding=1)),
    ("deconv2d_64x16x16_k4_s2", 32, (64, 16, 16), "conv_transpose2d", 32,
     dict(kernel=4, stride=2, padding=1)),
    ("deconv2d_32x32x32_k4_s2", 32, (32, 32, 32), "conv_transpose2d", 3,
     dict(kernel=4, stride=2, padding=1)),
    ("dwconv2d_64x56x56_k3", 32, (64, 56, 56), "conv2d", 64,
     dict(kernel=3, padding=1, groups=64)),
    ("dwconv2d_128x28x28_k3_s2", 32, (128, 28, 28), "conv2d", 128,
     dict(kernel=3, stride=2, padding=1, groups=128)),
    # ResNet-18's 3x3 convolutions (d2l's, on 28x28 Fashion-MNIST) at batch 128
    ("resnet_stem_1x28x28", 128, (1, 28, 28), "conv2d", 64, dict(kernel=3, padding=1)),
    ("resnet_64x28x28", 128, (64, 28, 28), "conv2d", 64, dict(kernel=3, padding=1)),
    ("resnet_64x28x28_s2", 128, (64, 28, 28), "conv2d", 128,
     dict(kernel=3, stride=2, padding=1)),
    ("resnet_128x14x14", 128, (128, 14, 14), "conv2d", 128, dict(kernel=3, padding=1)),
    ("resnet_128x14x14_s2", 128, (128, 14, 14), "conv2d", 256,
     dict(kernel=3, stride=2, padding=1)),
    ("resnet_256x7x7", 128, (256, 7, 7), "conv2d", 256, dict(kernel=3, padding=1)),
    ("resnet_256x7x7_s2", 128, (256, 7, 7), "conv2d", 512,
     dict(kernel=3, stride=2, padding=1)),
    ("resnet_512x4x4", 128, (512, 4, 4), "conv2d", 512, dict(kernel=3, padding=1)),
    # and its 1x1 stride-2 shortcuts
    ("resnet_1x1_64x28x28_s2", 128, (64, 28, 28), "conv2d", 128, dict(kernel=1, stride=2)),
    ("resnet_1x1_128x14x14_s2", 128, (128, 14, 14), "conv2d", 256, dict(kernel=1, stride=2)),
    # LeNet's (examples/models/lenet.cfg) at batch 256
    ("lenet_conv1_1x28x28", 256, (1, 28, 28), "conv2d", 20, dict(kernel=3)),
    ("lenet_conv2_20x13x13", 256, (20, 13, 13), "conv2d", 50, dict(kernel=5)),
]


def fill(shape, scale=1.0):
    """bench_conv's fixed inputs: element i is
    ((i * 2654435761 mod 2^32) >> 16 mod 1024) / 1024 - 0.5, times scale."""
    i = np.arange(int(np.prod(shape)), dtype=np.uint64)
    h = (i * np.uint64(2654435761)) % np.uint64(1 << 32)
    v = ((h >> np.uint64(16)) & np.uint64(1023)).astype(np.float32) / np.float32(1024) - \
        np.float32(0.5)
    return torch.from_numpy((np.float32(scale) * v).reshape(shape))


def dims(t):
    return "x".join(str(s) for s in t.shape)


DEVICE = "cpu"


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def bench(name, batch, in_shape, fn, filters, opt, reps):
    c, spatial = in_shape[0], in_shape[1:]
    k = (opt["kernel"],) * len(spatial)
    groups = opt.get("groups", 1)
    transpose = fn.startswith("conv_transpose")
    # PyTorch's weight layouts: (F, C/G, k...) or, transposed, (C, F/G, k...)
    w_shape = (c, filters // groups) + k if transpose else (filters, c // groups) + k
    fan_in = int(np.prod(w_shape[1:]))
    x = fill((batch,) + tuple(in_shape)).to(DEVICE).requires_grad_()
    w = fill(w_shape, 1.0 / np.sqrt(fan_in)).to(DEVICE).requires_grad_()
    b = fill((filters,)).to(DEVICE).requires_grad_()
    kw = {key: v for key, v in opt.items() if key != "kernel"}
    f = getattr(F, fn)

    def step(times=None):
        x.grad = w.grad = b.grad = None  # bench_conv overwrites its gradients too
        sync()
        t0 = time.perf_counter()
        y = f(x, w, b, **kw)
        sync()
        t1 = time.perf_counter()
        y.backward(dy)
        sync()
        if times is not None:
            times.append((t1 - t0, time.perf_counter() - t1))
        return y

    with torch.no_grad():
        dy = fill(f(x, w, b, **kw).shape).to(DEVICE)
    for _ in range(2):
        step()
    times = []
    for _ in range(reps):
        step(times)
    y = step()
    med = statistics.median(tf + tb for tf, tb in times)
    fwd, bwd = (statistics.median(t[i] for t in times) for i in (0, 1))
    # every weight meets every position of the side with one value per
    # window: the output of a convolution, the input of a transposed one
    small = x if transpose else y
    macs = w.numel() * batch * int(np.prod(small.shape[2:]))
    print("torch: %-26s | %9.1f samples/s | %7.2f GFLOP/s | %8.2f ms (forward %.2f, backward "
          "%.2f) | batch %d | x %s -> y %s | w %s | GFLOP %.3f | check y=%.6g dx=%.6g dw=%.6g "
          "db=%.6g" %
          (name, batch / med, 6 * macs / med * 1e-9, 1e3 * med, 1e3 * fwd, 1e3 * bwd, batch,
           dims(x), dims(y), dims(w), 6 * macs * 1e-9, y.detach().double().abs().sum(),
           x.grad.double().abs().sum(), w.grad.double().abs().sum(),
           b.grad.double().abs().sum()), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reps", nargs="?", type=int, default=10)
    ap.add_argument("filter", nargs="?", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    a = ap.parse_args()
    global DEVICE
    DEVICE = a.device
    torch.set_num_threads(a.threads)
    if DEVICE == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        print("torch %s, %s, cuDNN %s, TF32 off" % (torch.__version__,
              torch.cuda.get_device_name(0), torch.backends.cudnn.version()))
    else:
        print("torch %s, %d threads, oneDNN %s, OMP_WAIT_POLICY=%s" %
              (torch.__version__, torch.get_num_threads(), torch.backends.mkldnn.is_available(),
               os.environ.get("OMP_WAIT_POLICY", "(unset)")))
    for s in SHAPES:
        if (s[0].endswith(a.filter[:-1]) if a.filter.endswith("$") else a.filter in s[0]):
            bench(*s, max(a.reps, 1))


if __name__ == "__main__":
    main()
