#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, corpus/TARGET/seed-*, from real
files: the repository's fixtures (images too) and example models, the first samples of
Fashion-MNIST, and a kernel-cache entry and a tuning database that clnet
wrote (the build's test cache and doc cache).

    tests/fuzz/make_seeds.py BUILD_DIR

The seeds are committed; run this again only to remake them. Inputs that once
failed live beside them as corpus/TARGET/crash-* and are never remade."""
import glob
import gzip
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FASHION = "/usr/share/datasets/fashion-mnist"


def out(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "seed-" + name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def safetensors():
    fixtures = sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/*.safetensors")),
                      key=os.path.getsize)
    for path in fixtures[:4] + [p for p in fixtures if "batchnorm1d_b2" in p]:
        out("safetensors", os.path.basename(path), read(path))


def npy():
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/npy/*.npy"))):
        out("npy", os.path.basename(path), read(path))


def idx(samples=3):
    """[4-byte big-endian length of the images file][images][labels]."""
    images = gzip.open(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")).read()
    labels = gzip.open(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")).read()
    img = struct.pack(">IIII", 0x803, samples, 28, 28) + images[16:16 + samples * 784]
    lab = struct.pack(">II", 0x801, samples) + labels[8:8 + samples]
    out("idx", "raw", struct.pack(">I", len(img)) + img + lab)
    gz_img, gz_lab = gzip.compress(img, mtime=0), gzip.compress(lab, mtime=0)
    out("idx", "gzip", struct.pack(">I", len(gz_img)) + gz_img + gz_lab)


def image():
    """Every image fixture, and damaged copies of two: cut in half, a flipped byte in the data."""
    files = sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/images/*.png")) +
                   glob.glob(os.path.join(ROOT, "tests/fixtures/images/*.jpg")))
    for path in files:
        out("image", os.path.basename(path), read(path))
    for name in ("png_rgb_7x5.png", "jpg_rgb420_progressive_21x15.jpg"):
        data = read(os.path.join(ROOT, "tests/fixtures/images", name))
        out("image", "cut-" + name, data[:len(data) // 2])
        flipped = bytearray(data)
        flipped[len(data) * 2 // 3] ^= 0x5a
        out("image", "flipped-" + name, bytes(flipped))


def model():
    for path in sorted(glob.glob(os.path.join(ROOT, "examples/models/*.cfg"))):
        out("model", os.path.basename(path), read(path))


def kcache(build):
    """The smallest entry of the test cache, its binary kept, keyed "fuzz-key"."""
    entries = sorted(glob.glob(os.path.join(build, "test-cache/*.clbin")), key=os.path.getsize)
    f = read(entries[0])
    klen, plen = struct.unpack_from("<IQ", f, 12)
    payload = f[32 + klen:32 + klen + plen]
    key = b"fuzz-key"
    head = b"CLNETKC\0" + struct.pack("<IIQI", 1, len(key), len(payload), zlib.crc32(payload))
    check = zlib.crc32(key, zlib.crc32(head + b"\0\0\0\0"))  # its own field as zero
    out("kcache", "entry", head + struct.pack("<I", check) + key + payload)


def tunedb(build):
    """The doc cache's database: its lines made this device's ("fuzz-device",
    "fuzz-space"), but one left another device's, one stale, one damaged."""
    lines = read(os.path.join(build, "doc-cache/tune.db")).decode().splitlines()
    made = []
    for i, line in enumerate(lines):
        fields = line.split("\t")[:-1]
        if i != 1:
            fields[1] = "fuzz-device"
            fields[2] = "fuzz-space" if i != 2 else "other-space"
        body = "\t".join(fields)
        crc = zlib.crc32(body.encode()) ^ (1 if i == 3 else 0)
        made.append("%s\t%08x\n" % (body, crc))
    out("tunedb", "doc-cache", "".join(made).encode())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    for target in ("safetensors", "npy", "idx", "image", "model", "kcache", "tunedb"):
        for old in glob.glob(os.path.join(HERE, "corpus", target, "seed-*")):
            os.remove(old)
    safetensors()
    npy()
    idx()
    image()
    model()
    kcache(build)
    tunedb(build)


if __name__ == "__main__":
    main()
