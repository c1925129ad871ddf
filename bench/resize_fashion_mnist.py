#!/usr/bin/python3
"""Fashion-MNIST resized as d2l resizes it for its ResNet chapter, as .npy files for
`clnet train --data-npy` and `bench/pytorch_lenet.py --data-npy`.

    /usr/bin/python3 bench/resize_fashion_mnist.py [--size 96] [--train N] [--test N]
        [--data DIR] OUT_DIR

Writes OUT_DIR/x_train.npy (N, 1, S, S) uint8, y_train.npy (N,) int64, and the same for the
first --test images (x_test.npy, y_test.npy; none with --test 0). Each image is resized with
bilinear interpolation (torch.nn.functional.interpolate, align_corners=False; upsampling, so
what torchvision's Resize gives d2l up to rounding) and rounded back to bytes, which keeps the
files at a quarter of float32's size: 6,400 images of 96x96 take 59 MB. Needs Debian's
python3-torch and python3-numpy (run it with /usr/bin/python3).
"""

import argparse
import gzip
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


def read_idx(folder, stem, offset, count, size):
    """`count` records of `size` bytes of an IDX file (stem or stem.gz) past its header."""
    for name in (stem + ".gz", stem):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rb") as f:
                raw = f.read()
            data = np.frombuffer(raw, dtype=np.uint8, offset=offset)
            if data.size < count * size:
                sys.exit(f"resize_fashion_mnist: {path}: {data.size // size} records, asked for {count}")
            return data[: count * size]
    sys.exit(f"resize_fashion_mnist: no {stem}[.gz] in {folder}")


def resized(images, size, chunk=1024):
    """(n, 1, size, size) uint8 from (n, 28, 28) uint8, chunk by chunk."""
    out = np.empty((images.shape[0], 1, size, size), dtype=np.uint8)
    for i in range(0, images.shape[0], chunk):
        x = torch.from_numpy(images[i : i + chunk].astype(np.float32)).unsqueeze(1)
        y = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
        out[i : i + chunk] = y.round().clamp(0, 255).to(torch.uint8).numpy()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="folder for the .npy files (made if missing)")
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--train", type=int, default=6400, help="training images (6400)")
    p.add_argument("--test", type=int, default=0, help="test images (0)")
    p.add_argument("--data", default=os.environ.get("CLNET_DATA_DIR",
                                                    "/usr/share/datasets/fashion-mnist"))
    a = p.parse_args()
    if a.size < 1 or a.train < 1 or a.test < 0:
        p.error("need --size >= 1, --train >= 1 and --test >= 0")
    os.makedirs(a.out, exist_ok=True)
    for split, prefix, n in (("train", "train", a.train), ("test", "t10k", a.test)):
        if n == 0:
            continue
        images = read_idx(a.data, f"{prefix}-images-idx3-ubyte", 16, n, 784).reshape(n, 28, 28)
        labels = read_idx(a.data, f"{prefix}-labels-idx1-ubyte", 8, n, 1).astype(np.int64)
        np.save(os.path.join(a.out, f"x_{split}.npy"), resized(images, a.size))
        np.save(os.path.join(a.out, f"y_{split}.npy"), labels)
        print(f"resize_fashion_mnist: {n} {split} images of {a.size}x{a.size} in {a.out}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
