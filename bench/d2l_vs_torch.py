#!/usr/bin/python3
"""Training and evaluation images/s of d2l's modern CNNs (examples/models:
alexnet, vgg, nin, googlenet, bn_lenet, resnext18, densenet, regnetx32,
resnet18_96) and of LeNet, resnet18_w16 and ResNet-18 at 28x28, clnet
against PyTorch on the CPU (2 threads), each at its own input size,
interleaved: ROUNDS rounds of clnet then PyTorch per network, the same batch,
SGD (lr 0.01, momentum 0.9) on the same random images and labels (.npy files
written once). Prints each run and, per network, the median images/s of each
side and the median of the rounds' ratios, as a Markdown table at the end.

    /usr/bin/python3 bench/d2l_vs_torch.py [--rounds 3] [--steps N] [--batch 128]
        [--eval-images N] [--models alexnet,vgg,...] [--profile] [--gemm-rate GFLOPS]

A second table says where the time goes: the share of the machine that each
side's training step and evaluation pass use, as the network's floating-point
operations a second over the rate of clnet's tiled GEMM at 1024^3 on the same
device (`build/bench/bench_gemm 10 1024`, run before the first network and
after the last; the median of the two, or --gemm-rate). A sample's forward
pass counts 2 x `clnet summary`'s multiply-adds (the weights of convolutions
and linear layers at every position), a training step's 3 times that (the
forward, the input gradient and the weight gradient: an upper count, as the
first layer needs no input gradient); batch norm, pooling, activations and
the optimizer count nothing.

clnet's training figure is `clnet train --steps N`'s (the training steps alone,
its first step included: kernels come from its cache after the first run);
its evaluation figure `clnet eval`'s (images/s on stderr). PyTorch's: a
child process (this script with --torch-side) building the network with
examples/d2l_models.py, timing N training steps after one step of warm-up,
then evaluation under torch.no_grad() in the batch. --profile runs
CLNET_PROFILE=1 once per network after the rounds and prints clnet's three
costliest kernels. Run from the repository root after building (build/clnet).

    /usr/bin/python3 bench/d2l_vs_torch.py --curves N [--models ...]

instead trains each network one epoch on the first N Fashion-MNIST training
images resized to its input size, with d2l's learning rate (plain SGD, as
d2l's Trainer), batch --batch, by clnet (`clnet train --resize S --train-limit
N --epochs 1 --step-log`) and by PyTorch from the same initial weights (clnet's
for --seed 1, loaded strictly into examples/d2l_models.py's network), the
images resized alike (interpolate, bilinear, align_corners=False) and
shuffled by each its own way, dropout drawn by each its own way. Prints both
loss curves (the mean of every 4 steps) and each epoch's mean loss.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))  # d2l_models, load_checkpoint (PyTorch's side)
MODELS = ("lenet", "resnet18_w16", "resnet18", "bn_lenet", "googlenet", "resnext18", "densenet",
          "regnetx32", "resnet18_96", "nin", "vgg", "alexnet")
SIZE = {"alexnet": 224, "vgg": 224, "nin": 224, "bn_lenet": 28, "lenet": 28, "resnet18": 28,
        "resnet18_w16": 28}  # the rest: 96
# (timed training steps, evaluated images) by input size, unless --steps/--eval-images (or, for
# the networks named, WORK_OF) say
WORK = {28: (30, 8192), 96: (6, 1024), 224: (3, 512)}
WORK_OF = {"resnet18": (6, 1024), "resnet18_w16": (10, 2048)}
LR = {"alexnet": 0.01, "vgg": 0.01, "nin": 0.05, "googlenet": 0.01, "bn_lenet": 0.1,
      "resnext18": 0.01, "densenet": 0.01, "regnetx32": 0.05, "resnet18_96": 0.01,
      "lenet": 0.1, "resnet18": 0.01, "resnet18_w16": 0.01}  # d2l's
DATA = os.environ.get("CLNET_DATA_DIR", "/usr/share/datasets/fashion-mnist")


def torch_model(name):
    import d2l_models
    import load_checkpoint
    built = {"resnet18_96": load_checkpoint.resnet18_96, "lenet": load_checkpoint.lenet,
             "resnet18": load_checkpoint.resnet18,
             "resnet18_w16": lambda: load_checkpoint.resnet18(width=16)}
    return built[name]() if name in built else d2l_models.MODELS[name]()


def torch_curve(args):
    """PyTorch's side of --curves: one epoch from clnet's initial weights; the step losses."""
    import torch
    import load_checkpoint
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = torch_model(args.model)
    state, _ = load_checkpoint.read_state(args.x)
    model.load_state_dict(state, strict=True)
    size = SIZE.get(args.model, 96)
    x, y = load_checkpoint.fashion_mnist(DATA, "train", args.curves)
    if size != 28:
        x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear",
                                            align_corners=False)
    opt = torch.optim.SGD(model.parameters(), lr=LR[args.model])
    model.train()
    order, losses = torch.randperm(len(y)), []
    for lo in range(0, len(y), args.batch):
        idx = order[lo:lo + args.batch]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("losses=" + ",".join(f"{v:.5f}" for v in losses))


def curves(args, work):
    for model in args.models.split(","):
        cfg = os.path.join(ROOT, "examples", "models", model + ".cfg")
        size, init = SIZE.get(model, 96), os.path.join(work, model + ".init.safetensors")
        common = [cfg, "--batch", str(args.batch), "--lr", str(LR[model]), "--seed", "1",
                  "--train-limit", str(args.curves), "--no-eval"]
        if size != 28:
            common += ["--resize", str(size)]
        run = subprocess.run([args.clnet, "train", *common, "--steps", "0", "--save", init],
                             capture_output=True, text=True)
        log = os.path.join(work, model + ".steps.csv")
        run = run.returncode or subprocess.run(
            [args.clnet, "train", *common, "--epochs", "1", "--step-log", log],
            capture_output=True, text=True).returncode
        if run:
            raise SystemExit(f"clnet train {model} failed")
        ours = [float(line.split(",")[2]) for line in open(log).read().splitlines()[1:]]
        out = subprocess.run([sys.executable, __file__, "--torch-curve", "--model", model,
                              "--x", init, "--curves", str(args.curves), "--batch",
                              str(args.batch), "--threads", str(args.threads)],
                             capture_output=True, text=True)
        m = re.search(r"^losses=(.*)$", out.stdout, re.M)
        if out.returncode or not m:
            raise SystemExit(f"PyTorch {model} failed:\n{out.stdout}{out.stderr}")
        theirs = [float(v) for v in m.group(1).split(",")]

        def fours(v):
            return " ".join(f"{statistics.mean(v[i:i + 4]):.3f}" for i in range(0, len(v), 4))
        print(f"{model} (lr {LR[model]}, {args.curves} images at {size}x{size}, batch "
              f"{args.batch}): epoch mean loss clnet {statistics.mean(ours):.4f} PyTorch "
              f"{statistics.mean(theirs):.4f}\n  clnet   {fours(ours)}\n  PyTorch {fours(theirs)}",
              flush=True)


def torch_side(args):
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = torch_model(args.model)
    x = torch.from_numpy(np.load(args.x).astype(np.float32) / 255)
    y = torch.from_numpy(np.load(args.y).astype(np.int64))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    n, b = len(y), args.batch

    def step(i):
        lo = (i * b) % n
        xb, yb = x[lo:lo + b], y[lo:lo + b]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
        return len(yb)

    step(0)
    t0, images = time.perf_counter(), 0
    for i in range(args.steps):
        images += step(i + 1)
    train = images / (time.perf_counter() - t0)
    model.eval()
    tx = x[:args.eval_images]
    with torch.no_grad():
        model(tx[:b])
        t0 = time.perf_counter()
        for lo in range(0, len(tx), b):
            model(tx[lo:lo + b])
        evaluate = len(tx) / (time.perf_counter() - t0)
    print(f"train_images_per_s={train:.1f} eval_images_per_s={evaluate:.1f}")


def clnet_side(clnet, model, x, y, args, env=None):
    cfg = os.path.join(ROOT, "examples", "models", model + ".cfg")
    out = subprocess.run([clnet, "train", cfg, "--data-npy", f"{x},{y}", "--steps",
                          str(args.steps), "--batch", str(args.batch), "--lr", "0.01",
                          "--momentum", "0.9", "--no-eval", "--save", x + ".ckpt.safetensors"],
                         capture_output=True, text=True, env=env)
    m = re.search(r"^final: .*images_per_s=([0-9.]+)", out.stdout, re.M)
    if out.returncode or not m:
        raise SystemExit(f"clnet train {model} failed:\n{out.stdout}{out.stderr}")
    train, log = float(m.group(1)), out.stderr
    out = subprocess.run([clnet, "eval", cfg, "--weights", x + ".ckpt.safetensors", "--data-npy",
                          f"{x},{y}", "--batch", str(args.batch), "--test-limit",
                          str(args.eval_images)], capture_output=True, text=True, env=env)
    m = re.search(r"images_per_s=([0-9.]+)", out.stderr)
    if out.returncode or not m:
        raise SystemExit(f"clnet eval {model} failed:\n{out.stdout}{out.stderr}")
    return train, float(m.group(1)), log


def data_for(model, work, n):
    import numpy as np
    size = SIZE.get(model, 96)
    x, y = os.path.join(work, f"x{size}_{n}.npy"), os.path.join(work, f"y{size}_{n}.npy")
    if not os.path.exists(x):
        rng = np.random.default_rng(1)
        np.save(x, rng.integers(0, 256, (n, 1, size, size), dtype=np.uint8))
        np.save(y, rng.integers(0, 10, n, dtype=np.int64))
    return x, y


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, help="timed steps (by input size: 30, 6, 3)")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--eval-images", type=int,
                   help="images evaluated (by input size: 8192, 1024, 512)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--profile", action="store_true")
    p.add_argument("--gemm-rate", type=float, metavar="GFLOPS",
                   help="clnet's GEMM rate at 1024^3 (default: measured by bench_gemm)")
    p.add_argument("--clnet", default=os.path.join(ROOT, "build", "clnet"))
    p.add_argument("--curves", type=int, metavar="N", help="loss curves on N training images")
    p.add_argument("--torch-side", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--torch-curve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--x", help=argparse.SUPPRESS)
    p.add_argument("--y", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.torch_side:
        return torch_side(args)
    if args.torch_curve:
        return torch_curve(args)
    if args.curves:
        with tempfile.TemporaryDirectory(prefix="clnet-d2l-curves-") as work:
            return curves(args, work)
    rows, given = [], argparse.Namespace(steps=args.steps, eval_images=args.eval_images)
    rates = [args.gemm_rate] if args.gemm_rate else [gemm_rate(args.clnet)]
    with tempfile.TemporaryDirectory(prefix="clnet-d2l-bench-") as work:
        for model in args.models.split(","):
            steps, images = WORK_OF.get(model, WORK[SIZE.get(model, 96)])
            args.steps, args.eval_images = given.steps or steps, given.eval_images or images
            x, y = data_for(model, work, max(args.batch * (args.steps + 1), args.eval_images))
            runs = []
            for r in range(args.rounds):
                ct, ce, _ = clnet_side(args.clnet, model, x, y, args)
                out = subprocess.run([sys.executable, __file__, "--torch-side", "--model", model,
                                      "--x", x, "--y", y, "--steps", str(args.steps), "--batch",
                                      str(args.batch), "--eval-images", str(args.eval_images),
                                      "--threads", str(args.threads)],
                                     capture_output=True, text=True)
                m = re.search(r"train_images_per_s=([0-9.]+) eval_images_per_s=([0-9.]+)",
                              out.stdout)
                if out.returncode or not m:
                    raise SystemExit(f"PyTorch {model} failed:\n{out.stdout}{out.stderr}")
                tt, te = float(m.group(1)), float(m.group(2))
                runs.append((ct, tt, ce, te))
                print(f"{model} round {r + 1}: train clnet {ct:.1f} PyTorch {tt:.1f} "
                      f"({ct / tt:.2f}x); eval clnet {ce:.1f} PyTorch {te:.1f} ({ce / te:.2f}x)",
                      flush=True)
            med = [statistics.median(v) for v in zip(*runs)]
            ratio_t = statistics.median(a / b for a, b, _, _ in runs)
            ratio_e = statistics.median(c / d for _, _, c, d in runs)
            top = ""
            if args.profile:
                env = dict(os.environ, CLNET_PROFILE="1")
                _, _, err = clnet_side(args.clnet, model, x, y, args, env)
                top = profile_top(err)
            rows.append((model, med, ratio_t, ratio_e, top))
    if not args.gemm_rate:
        rates.append(gemm_rate(args.clnet))
    print(f"\n| network | batch | train clnet | train PyTorch | ratio | eval clnet | "
          f"eval PyTorch | ratio |\n|---|---|---|---|---|---|---|---|")
    for model, med, rt, re_, top in rows:
        print(f"| {model} | {args.batch} | {med[0]:.1f} | {med[1]:.1f} | {rt:.2f}x | "
              f"{med[2]:.1f} | {med[3]:.1f} | {re_:.2f}x |")
    for model, _, rt, _, top in rows:
        if top:
            print(f"{model}: {top}")
    rate = statistics.median(rates)
    print(f"\nShare of clnet's tiled GEMM at 1024^3 ({rate:.0f} GFLOP/s; measured "
          f"{', '.join(f'{r:.0f}' for r in rates)}) that each side's medians reach:\n\n"
          f"| network | GFLOP a sample (forward) | train clnet | train PyTorch | eval clnet | "
          f"eval PyTorch |\n|---|---|---|---|---|---|")
    for model, med, _, _, _ in rows:
        flops = 2e-9 * mult_adds(args.clnet, model)
        share = [v * flops * k / rate for v, k in zip(med, (3, 3, 1, 1))]
        print(f"| {model} | {flops:.3f} | " + " | ".join(f"{100 * v:.0f}%" for v in share) + " |")


def gemm_rate(clnet):
    """clnet's best GEMM at 1024^3 on the first device, GFLOP/s (bench_gemm's best line)."""
    exe = os.path.join(os.path.dirname(clnet), "bench", "bench_gemm")
    out = subprocess.run([exe, "10", "1024"], capture_output=True, text=True,
                         env=dict(os.environ, BENCH_SKIP_CLBLAST="1"))
    m = re.search(r"^best: .*\|\s*\S+\s+([0-9.]+)\s*$", out.stdout, re.M)
    if out.returncode or not m:
        raise SystemExit(f"{exe} failed:\n{out.stdout}{out.stderr}")
    print(f"clnet's GEMM at 1024^3: {m.group(1)} GFLOP/s", flush=True)
    return float(m.group(1))


def mult_adds(clnet, model):
    """A sample's multiply-adds, as `clnet summary` counts them."""
    cfg = os.path.join(ROOT, "examples", "models", model + ".cfg")
    out = subprocess.run([clnet, "summary", cfg], capture_output=True, text=True)
    m = re.search(r"mult_adds=([0-9]+)", out.stdout)
    if out.returncode or not m:
        raise SystemExit(f"clnet summary {model} failed:\n{out.stdout}{out.stderr}")
    return int(m.group(1))


def profile_top(text):
    """The three kernels of CLNET_PROFILE's report (its training run's) with the most time."""
    kernels = []
    for line in text.splitlines():
        m = re.match(r"\s+(\S.*?)\s+(\d+) calls?\s+([0-9.]+) s\s+([0-9.]+)%", line)
        if m:
            kernels.append((float(m.group(4)), m.group(1)))
    kernels.sort(reverse=True)
    return ", ".join(f"{k} {t:.0f}%" for t, k in kernels[:3]) or "(no profile lines)"


if __name__ == "__main__":
    main()
