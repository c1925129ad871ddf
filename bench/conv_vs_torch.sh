#!/usr/bin/env bash
# Single convolution layers, forward + backward, clnet against PyTorch on the
# same cores: build/bench/bench_conv (on PoCL's pthread device, which uses all
# cores) and bench/conv_torch.py (PyTorch on the CPU, 2 threads) in turn for
# ROUNDS rounds, and in each round clnet's tiled GEMM at 1024^3
# (build/bench/bench_gemm, its best point). Prints per shape the median
# samples/s of each and the median of the rounds' ratios clnet/PyTorch, the
# algorithm clnet ran and its GFLOP/s as a percent of the GEMM's rate, and
# whether the two computed the same thing (shapes, and checksums of one pass
# on the same fixed inputs). CLNET_CONV=ALGO runs every shape with ALGO.
#   bench/conv_vs_torch.sh [ROUNDS] [SHAPE-FILTER]
# BUILD_DIR (default build) holds bench/bench_conv; REPS (default 10) timed
# passes per shape and program; THREADS (default 2) PyTorch's threads.
# PyTorch's OpenMP threads spin while they wait: on a busy machine
# OMP_WAIT_POLICY=PASSIVE can make it several times faster (its first line
# says which policy ran).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$here/../build}
rounds=${1:-3}
filter=${2:-}
reps=${REPS:-10}
threads=${THREADS:-2}
work=$(mktemp -d /tmp/clnet-conv-vs-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) (a busy machine slows both)"
for r in $(seq 1 "$rounds"); do
  if ! CLNET_DEVICES=platform=portable POCL_DEVICES=pthread "$build/bench/bench_conv" "$reps" \
    "$filter" >"$work/clnet.$r" 2>"$work/clnet.err"; then
    cat "$work/clnet.$r" "$work/clnet.err" >&2
    exit 1
  fi
  /usr/bin/python3 "$here/conv_torch.py" "$reps" "$filter" --threads "$threads" \
    >"$work/torch.$r"
  CLNET_DEVICES=platform=portable POCL_DEVICES=pthread BENCH_SKIP_CLBLAST=1 \
    "$build/bench/bench_gemm" 3 "square 1024" | sed -n 's/^best: .* \([0-9.]*\)$/\1/p' \
    >"$work/gemm.$r"
  if [ "$r" = 1 ]; then
    grep '^device' "$work/clnet.$r" | sed 's/^/clnet /'
    head -1 "$work/torch.$r"
  fi
  echo "round $r of $rounds done" >&2
done
/usr/bin/python3 - "$work" "$rounds" <<'PY'
import re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
line = re.compile(r"(clnet|torch): (\S+) +\| +([\d.]+) samples/s \| +([\d.]+) GFLOP/s \| +[\d.]+ ms"
                  r" \(forward ([\d.]+), backward ([\d.]+)\) \| (batch \d+ \| x \S+ -> y \S+ \| w \S+)"
                  r"(?: \| algo (\S+))? \| GFLOP [\d.]+ \| check (.*)")
runs = {"clnet": {}, "torch": {}}
what, checks, algo = {}, {}, {}
gemm = []
for r in range(1, rounds + 1):
    text = open(f"{work}/gemm.{r}").read().split()
    gemm += [float(text[0])] if text else []
gemm_rate = statistics.median(gemm) if gemm else 0
for r in range(1, rounds + 1):
    for who in runs:
        for text in open(f"{work}/{who}.{r}"):
            m = line.match(text)
            if not m: continue
            runs[who].setdefault(m[2], []).append((float(m[3]), float(m[4]), float(m[5]),
                                                   float(m[6])))
            what.setdefault(who, {})[m[2]] = m[7]
            if m[8]: algo[m[2]] = m[8]
            checks.setdefault(who, {})[m[2]] = [float(v.split("=")[1]) for v in m[9].split()]
def same(name):
    a, b = what["clnet"][name], what["torch"][name]
    if a != b: return "DIFFERENT shapes: %s / %s" % (a, b)
    worst = max(abs(x - y) / max(abs(y), 1e-30)
                for x, y in zip(checks["clnet"][name], checks["torch"][name]))
    return ("same (checksums within %.1e)" if worst < 1e-3 else "DIFFERENT checksums (%.1e)") % worst
print("medians of %d rounds; ratio: the median of the rounds' clnet/PyTorch samples/s" % rounds)
print("clnet's tiled GEMM at 1024^3: %.1f GFLOP/s (rounds: %s); gemm%%: a shape's GFLOP/s "
      "as a percent of it" % (gemm_rate, " ".join("%.0f" % g for g in gemm)))
print("%-26s %9s %19s %19s %7s %15s %15s" % ("", "", "clnet", "PyTorch", "", "clnet ms",
      "PyTorch ms"))
print("%-26s %9s %10s %8s %6s %10s %8s %7s %7s %7s %7s %7s  %s" % ("shape", "algorithm",
      "samples/s", "GFLOP/s", "gemm%", "samples/s", "GFLOP/s", "ratio", "fwd", "bwd", "fwd", "bwd",
      "computation"))
med = lambda runs, i: statistics.median(r[i] for r in runs)
for name, c in runs["clnet"].items():
    t = runs["torch"].get(name)
    if not t: continue
    ratios = [a[0] / b[0] for a, b in zip(c, t)]
    share = 100 * med(c, 1) / gemm_rate if gemm_rate else 0
    print("%-26s %9s %10.1f %8.2f %6.0f %10.1f %8.2f %7.2f %7.2f %7.2f %7.2f %7.2f  %s" % (name,
          algo.get(name, "?"), med(c, 0), med(c, 1), share, med(t, 0), med(t, 1),
          statistics.median(ratios), med(c, 2), med(c, 3), med(t, 2), med(t, 3), same(name)))
    print("%-26s %s; rounds: clnet %s, PyTorch %s" % ("", what["clnet"][name].replace(" | ", ", "),
          " ".join("%.0f" % r[0] for r in c), " ".join("%.0f" % r[0] for r in t)))
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
