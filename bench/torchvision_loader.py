"""torchvision's side of bench/loader_vs_torch.sh: an ImageFolder of DIR/train read by a
DataLoader with the transforms clnet's loader applies, timed as bench_loader times clnet's:

    /usr/bin/python3 bench/torchvision_loader.py DIR [--resize N] [--pad P] [--flip]
                                                 [--workers W] [--batch B] [--batches N]

One batch to warm up (the workers start), then N batches timed; prints
    torchvision: images_per_s=<n> workers=<w> batch=<b> images=<n>
Gray folders are read as PIL's "L" images (clnet gives them 1 channel; torchvision's default
loader would convert them to RGB, three times the work), colour ones as "RGB".
"""
import argparse
import sys
import time

import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--resize", type=int, default=0)
    p.add_argument("--pad", type=int, default=0)
    p.add_argument("--flip", action="store_true")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--gray", action="store_true", help="read the images as 'L'")
    a = p.parse_args()
    torch.set_num_threads(1)
    mode = "L" if a.gray else "RGB"

    def loader(path):
        with open(path, "rb") as f:
            return Image.open(f).convert(mode)

    # the order of clnet's: to [0, 1] floats, resize (bilinear on the tensor, no antialias),
    # random crop with padding, flip
    steps = [transforms.ToTensor()]
    if a.resize:
        steps.append(transforms.Resize((a.resize, a.resize), antialias=False))
    ds = datasets.ImageFolder(f"{a.dir}/train", transform=transforms.Compose(steps), loader=loader)
    if a.pad:  # the crop keeps the size before the pad
        steps.append(transforms.RandomCrop(tuple(ds[0][0].shape[-2:]), padding=a.pad))
    if a.flip:
        steps.append(transforms.RandomHorizontalFlip())
    ds.transform = transforms.Compose(steps)
    dl = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                    persistent_workers=a.workers > 0)
    it = iter(dl)
    next(it)
    images = 0
    t0 = time.perf_counter()
    for _ in range(a.batches):
        try:
            x, _ = next(it)
        except StopIteration:
            it = iter(dl)
            x, _ = next(it)
        images += x.shape[0]
    secs = time.perf_counter() - t0
    print(f"torchvision: images_per_s={images / secs:.0f} workers={a.workers} batch={a.batch} "
          f"images={images} {tuple(x.shape[1:])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
