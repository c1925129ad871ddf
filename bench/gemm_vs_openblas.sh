#!/usr/bin/env bash
# clnet's GEMM against OpenBLAS's sgemm on the same cores, side by side:
# build/bench/bench_gemm (every candidate, on PoCL's pthread device, which
# uses all cores) and bench/openblas_sgemm.py (NumPy with OpenBLAS,
# OPENBLAS_NUM_THREADS = the cores), interleaved for ROUNDS rounds. Prints
# per shape the best candidate's GFLOP/s, OpenBLAS's, and the median ratio,
# and ends with "ratio_to_openblas: <r>" for 1024 x 1024 x 1024.
#   bench/gemm_vs_openblas.sh [BUILD_DIR] [ROUNDS] [SHAPE-FILTER]
# Needs libopenblas0-pthread (the script refuses NumPy's reference BLAS).
# BENCH_SKIP_CLBLAST=1 leaves CLBlast out (slow to compile on PoCL).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
rounds=${2:-3}
filter=${3:-}
cores=$(nproc)
work=$(mktemp -d /tmp/clnet-gemm-vs-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $cores cores"
for r in $(seq 1 "$rounds"); do
  CLNET_DEVICES=platform=portable POCL_DEVICES=pthread "$build/bench/bench_gemm" 5 "$filter" \
    >"$work/clnet.$r"
  OPENBLAS_NUM_THREADS=$cores /usr/bin/python3 "$here/openblas_sgemm.py" 5 >"$work/blas.$r"
  [ "$r" = 1 ] && head -1 "$work/blas.$r"
  echo "round $r done" >&2
done
/usr/bin/python3 - "$work" "$rounds" <<'PY'
import re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
best, blas = {}, {}
for r in range(1, rounds + 1):
    for line in open(f"{work}/clnet.{r}"):
        m = re.match(r"best: (.*?) \| (\S+) ([\d.]+)", line)
        if m: best.setdefault(m[1].strip(), []).append((float(m[3]), m[2]))
    for line in open(f"{work}/blas.{r}"):
        m = re.match(r"openblas: (.*?) \| ([\d.]+)", line)
        if m: blas.setdefault(m[1].strip(), []).append(float(m[2]))
square = None
print("%-24s %10s %10s %7s  %s" % ("shape", "clnet", "OpenBLAS", "ratio", "clnet's best candidate"))
for what, runs in best.items():
    if what not in blas: continue
    ratios = [g / b for (g, _), b in zip(runs, blas[what])]
    r = statistics.median(ratios)
    print("%-24s %10.1f %10.1f %7.2f  %s" % (what, statistics.median(g for g, _ in runs),
          statistics.median(blas[what]), r, runs[-1][1]))
    if what == "square 1024": square = r
if square is not None: print("ratio_to_openblas: %.2f" % square)
PY
