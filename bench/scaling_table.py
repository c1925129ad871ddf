#!/usr/bin/env python3
"""Predicted data-parallel step time against the number of nodes, as Markdown.

Weak scaling: every node keeps the same batch, so its compute per step stays
what one node measured (`clnet bench`), and each step adds a ring all-reduce
of the gradient over N nodes:

    allreduce(N) = 2(N-1)/N * gradient_bytes / bandwidth + 2(N-1) * alpha
    step(N)      = compute + exposed all-reduce
    efficiency   = compute / step(N)

"No overlap" exposes the whole all-reduce. "With overlap" is the best
bucketing can do: a layer's gradient is reduced while the backward pass of
the layers before it still runs, so at most min(allreduce, backward) is
hidden, with backward = 2/3 of compute by default.

A second table per model looks inside one node with D devices. clnet sums
the devices' gradients in host memory (src/step.c: the first copy, then D-1
adds of dst += src), each device's gradient comes over PCIe and the updated
parameters go back; these stages run bucket by bucket next to the network's,
so the slowest of them bounds the step once it cannot hide.

The defaults are the figures measured on the 2-core Intel Xeon KVM VM (see
bench/README.md); every input can be given on the command line:

    python3 bench/scaling_table.py [--compute-resnet S] [--compute-100m S] [--batch B]
        [--measured-gbps X] [--alpha-us Y] [--host-gbps Z] [--pcie-gbs P]
"""
import argparse

NODES = (1, 2, 4, 8, 16, 32, 64)
DEVICES = (1, 2, 4, 8)

# Parameters counted from clnet's checkpoints of the two models (float
# gradients: 4 bytes each).
RESNET_PARAMS = 11_175_818   # examples/models/resnet18.cfg
MLP_PARAMS = 99_797_386      # bench/models/mlp100m.cfg


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--compute-resnet", type=float, default=0.86,
                   help="seconds of one ResNet-18 training step on one node (default 0.86)")
    p.add_argument("--compute-100m", type=float, default=0.47,
                   help="seconds of one step of the 100 M-parameter MLP (default 0.47)")
    p.add_argument("--batch", type=int, default=32,
                   help="per-node batch the compute times were measured at (default 32)")
    p.add_argument("--measured-gbps", type=float, default=9.2,
                   help="bus bandwidth bench_mpi_allreduce measured for "
                        "iallreduce+test, Gbit/s (default 9.2)")
    p.add_argument("--alpha-us", type=float, default=2.2,
                   help="latency of one ring step, microseconds (default 2.2)")
    p.add_argument("--host-gbps", type=float, default=24.1,
                   help="host add bandwidth, GB/s of memory traffic (default 24.1)")
    p.add_argument("--pcie-gbs", type=float, default=25.0,
                   help="PCIe bandwidth per device and direction, GB/s; assumed, not measured "
                        "(default 25: PCIe 4.0 x16)")
    p.add_argument("--backward-fraction", type=float, default=2 / 3,
                   help="share of compute that is the backward pass (default 2/3)")
    return p.parse_args()


def allreduce_s(n, grad_bytes, bytes_per_s, alpha_s):
    """Ring all-reduce of grad_bytes over n nodes; nothing to do on one."""
    if n == 1:
        return 0.0
    return 2 * (n - 1) / n * grad_bytes / bytes_per_s + 2 * (n - 1) * alpha_s


def links(args):
    """(name, bytes/s) of the three networks of the tables."""
    return (("10 Gbit/s", 10e9 / 8), ("100 Gbit/s", 100e9 / 8),
            (f"measured {args.measured_gbps:g} Gbit/s", args.measured_gbps * 1e9 / 8))


def ms(seconds):
    return f"{1e3 * seconds:,.1f}"


def step_table(name, params, compute, args):
    """Step time and efficiency against N for each network, no overlap and with."""
    grad = 4 * params
    hideable = args.backward_fraction * compute
    print(f"### {name}: {params:,} parameters, {grad / 1e6:,.1f} MB of gradient, "
          f"compute {ms(compute)} ms per step at batch {args.batch} per node\n")
    print("| network | N | all-reduce ms | step ms, no overlap | efficiency | "
          "step ms, with overlap | efficiency |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for link, bw in links(args):
        for n in NODES:
            ar = allreduce_s(n, grad, bw, args.alpha_us * 1e-6)
            plain = compute + ar
            overlapped = compute + ar - min(ar, hideable)
            print(f"| {link} | {n} | {ms(ar)} | {ms(plain)} | {compute / plain:.2f} | "
                  f"{ms(overlapped)} | {compute / overlapped:.2f} |")
    # Below this compute even the best overlap leaves part of the all-reduce
    # exposed at the largest N: what a faster device (a GPU) runs into.
    need = [allreduce_s(NODES[-1], grad, bw, args.alpha_us * 1e-6) / args.backward_fraction
            for _, bw in links(args)]
    print(f"\nThe overlap hides the whole all-reduce at N = {NODES[-1]} only while compute is at "
          "least " + ", ".join(f"{ms(t)} ms at {link}" for t, (link, _) in zip(need, links(args))) +
          ".\n")


def node_table(name, params, args):
    """Per-node stages with D devices against the network's bound per node."""
    grad = 4 * params
    nets = links(args)
    print(f"### {name} inside one node: D devices, per step\n")
    print("| D | host reduce ms | PCIe ms per device | " +
          " | ".join(f"network ms at {link}" for link, _ in nets) +
          " | slowest at 10 / 100 Gbit/s |")
    print("|---:|---:|---:|" + "---:|" * len(nets) + "---|")
    for d in DEVICES:
        # memcpy of the first copy (read + write), then D-1 adds (read 2, write 1)
        host = (2 + 3 * (d - 1)) * grad / (args.host_gbps * 1e9)
        # the gradient down, the updated parameters up; each device on its own link
        pcie = 2 * grad / (args.pcie_gbs * 1e9)
        # the ring's bound per node for large N: 2 x gradient through its link
        net = [2 * grad / bw for _, bw in nets]
        slowest = []
        for bound in net[:2]:
            stages = {"host reduce": host, "PCIe": pcie, "network": bound}
            slowest.append(max(stages, key=stages.get))
        print(f"| {d} | {ms(host)} | {ms(pcie)} | " + " | ".join(ms(t) for t in net) +
              f" | {slowest[0]} / {slowest[1]} |")
    print()


def main():
    args = parse_args()
    print("## Predicted step time against nodes (weak scaling, ring all-reduce)\n")
    print(f"inputs: compute ResNet-18 {args.compute_resnet:g} s, 100M MLP "
          f"{args.compute_100m:g} s per step at batch {args.batch} per node; measured bus "
          f"bandwidth {args.measured_gbps:g} Gbit/s; alpha {args.alpha_us:g} us; host add "
          f"bandwidth {args.host_gbps:g} GB/s; PCIe {args.pcie_gbs:g} GB/s per device (assumed); "
          f"backward = {args.backward_fraction:.2f} of compute\n")
    print("all-reduce = 2(N-1)/N x gradient bytes / bandwidth + 2(N-1) x alpha; "
          "with overlap, min(all-reduce, backward) is hidden; efficiency = compute / step.\n")
    step_table("ResNet-18", RESNET_PARAMS, args.compute_resnet, args)
    step_table("100M MLP", MLP_PARAMS, args.compute_100m, args)
    print("host reduce = (2 + 3(D-1)) x gradient bytes / host add bandwidth (the first copy, "
          "then D-1 adds); PCIe = 2 x gradient bytes / PCIe bandwidth; network = 2 x gradient "
          "bytes / bandwidth, the ring's bound per node for large N. The three run bucket by "
          "bucket side by side: the slowest bounds the step when the backward pass cannot "
          "hide it.\n")
    node_table("ResNet-18", RESNET_PARAMS, args)
    node_table("100M MLP", MLP_PARAMS, args)


if __name__ == "__main__":
    main()
