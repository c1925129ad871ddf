#!/usr/bin/python3
"""OpenBLAS sgemm GFLOP/s through NumPy, on the shapes of bench_gemm.

    OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/openblas_sgemm.py [reps]

The reference for clnet's GEMM on a CPU: same shapes, same transposes,
float32, median of `reps` timed calls after one untimed call. Refuses to run
when NumPy's BLAS is not OpenBLAS (the reference BLAS would be no yardstick).
"""
import contextlib
import io
import os
import statistics
import sys
import time

import numpy as np

# (what, ta, tb, M, N, K): keep in step with SHAPES in bench_gemm.c
SHAPES = [
    ("square 1024", 0, 0, 1024, 1024, 1024),
    ("conv1 forward  W.col", 0, 0, 20, 173056, 9),
    ("conv2 forward  W.col", 0, 0, 50, 20736, 500),
    ("conv2 dcol     Wt.dY", 1, 0, 500, 20736, 50),
    ("conv2 dW       dY.colt", 0, 1, 50, 500, 20736),
    ("fc1 forward    X.Wt", 0, 1, 256, 128, 800),
    ("fc1 dX         dY.W", 0, 0, 256, 800, 128),
    ("fc1 dW         dYt.X", 1, 0, 128, 800, 256),
    ("resnet conv3x3 128", 0, 0, 128, 25088, 1152),
    ("resnet dcol 128", 1, 0, 1152, 25088, 128),
    ("resnet dW 128", 0, 1, 128, 1152, 25088),
    ("resnet conv3x3 512", 0, 0, 512, 1568, 4608),
]


def blas_name():
    """The BLAS library NumPy calls, from its build config and the loaded maps."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        np.show_config()
    text = out.getvalue().lower()
    try:
        with open("/proc/self/maps") as f:
            maps = f.read().lower()
    except OSError:
        maps = ""
    return text, maps


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    text, maps = blas_name()
    if "openblas" not in maps:
        real = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
        if "openblas" not in real:
            sys.exit("openblas_sgemm.py: NumPy's BLAS is %s, not OpenBLAS; "
                     "apt-get install libopenblas0-pthread" % real)
    print("numpy %s, libblas.so.3 -> %s, OPENBLAS_NUM_THREADS=%s" %
          (np.__version__, os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3"),
           os.environ.get("OPENBLAS_NUM_THREADS", "(unset)")))
    print("OpenBLAS sgemm, GFLOP/s (median of %d):" % reps)
    rng = np.random.default_rng(0)
    for what, ta, tb, m, n, k in SHAPES:
        a = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
        opa = a.T if ta else a
        opb = b.T if tb else b
        c = np.empty((m, n), dtype=np.float32)
        np.matmul(opa, opb, out=c)
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            np.matmul(opa, opb, out=c)
            times.append(time.perf_counter() - t)
        gf = 2.0 * m * n * k / statistics.median(times) * 1e-9
        print("openblas: %s | %.1f" % (what, gf))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
