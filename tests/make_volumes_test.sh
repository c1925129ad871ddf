#!/usr/bin/env bash
# examples/make_volumes, the 3-D data set of volumes3d.cfg: the same seed gives
# the same bytes and another seed others; a smaller set is the start of a
# larger one; the .npy files have the stated shapes and types; every block of
# four samples holds the four classes; decoded as documented ((b/255 - 0.375)
# / 0.25), the values are 1 + N(0, 0.3^2) inside the shape (its --masks
# volume) and N(0, 0.3^2) outside; the masks are the shapes named: spheres
# fill 4/3 pi of the cube of their largest distance from the centroid, cubes
# 8 / 3^1.5 (or a little more where cut off), the centroid lies inside
# spheres, cubes and cylinders and in the torus's hole. And bad arguments are
# refused. The NumPy checks need /usr/bin/python3 with NumPy (skipped, 77,
# without it).
# usage: make_volumes_test.sh MAKE_VOLUMES
set -u
make_volumes=$1
python=${CLNET_TORCH_PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import numpy' >/dev/null 2>&1; then
  echo "skipped: $python cannot import numpy (apt-get install python3-numpy)"
  exit 77
fi
work=$(mktemp -d /tmp/clnet-make-volumes-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@"; fail=1; }

# 1. determinism, seeds, prefixes
gen() { # NAME ARGS...: writes $work/NAME, its stdout in $work/NAME.out
  local name=$1; shift
  "$make_volumes" "$@" "$work/$name" 2>"$work/$name.err" >"$work/$name.out" ||
    bad "make_volumes $*" "$(cat "$work/$name.err")"
}
gen a --seed 7 --train 200 --test 40 --masks
gen b --seed 7 --train 200 --test 40 --masks
gen c --seed 8 --train 200 --test 40
gen d --seed 7 --train 60 --test 40
same=1
for f in x_train y_train x_test y_test m_train m_test; do
  cmp -s "$work/a/$f.npy" "$work/b/$f.npy" || same=0
done
if [ $same = 1 ]; then ok "the same seed gives the same bytes (all six files)"
else bad "the same seed gave different files"; fi
if ! cmp -s "$work/a/x_train.npy" "$work/c/x_train.npy" && ! cmp -s "$work/a/y_train.npy" "$work/c/y_train.npy"; then
  ok "another seed gives other volumes and labels"
else bad "seeds 7 and 8 gave the same data"; fi
if grep -q 'x_train.npy (200, 1, 32, 32, 32) uint8, .*y_train.npy (200,) int64: 50 sphere, 50 cube, 50 torus, 50 cylinder; bytes/255 have mean' "$work/a.out" &&
   grep -q 'make_volumes: train 200/200 volumes' "$work/a.err"; then
  ok "it says what it wrote (shapes, types, classes) and shows progress"
else bad "the summary line" "$(cat "$work/a.out" "$work/a.err")"; fi

# 2. the contents, with NumPy
"$python" - "$work" <<'EOF' || fail=1
import sys
import numpy as np

work = sys.argv[1]
failed = False


def check(ok, what, detail=""):
    global failed
    print(("ok   " if ok else "FAIL ") + what + (f" ({detail})" if detail else ""))
    failed |= not ok


a = {f: np.load(f"{work}/a/{f}.npy") for f in ("x_train", "y_train", "x_test", "y_test",
                                               "m_train", "m_test")}
d = {f: np.load(f"{work}/d/{f}.npy") for f in ("x_train", "y_train", "x_test")}
check(a["x_train"].shape == (200, 1, 32, 32, 32) and a["x_train"].dtype == np.uint8 and
      a["y_train"].shape == (200,) and a["y_train"].dtype == np.int64 and
      a["x_test"].shape == (40, 1, 32, 32, 32) and a["m_test"].shape == (40, 1, 32, 32, 32),
      "shapes and types: x (N, 1, 32, 32, 32) uint8, y (N,) int64",
      f"{a['x_train'].shape} {a['x_train'].dtype} {a['y_train'].shape} {a['y_train'].dtype}")
check(np.array_equal(d["x_train"], a["x_train"][:60]) and
      np.array_equal(d["y_train"], a["y_train"][:60]) and np.array_equal(d["x_test"], a["x_test"]),
      "--train 60 writes the first 60 samples of --train 200, and the same test set")
y = np.concatenate([a["y_train"], a["y_test"]])
blocks = np.sort(a["y_train"].reshape(-1, 4), axis=1)
check(bool((blocks == np.arange(4)).all()) and np.bincount(a["y_test"]).tolist() == [10] * 4,
      "every block of four training samples holds classes 0-3; the test set 10 of each")
check(not np.array_equal(a["y_train"][:40], np.tile(np.arange(4), 10)),
      "the order within the blocks is random")

x = np.concatenate([a["x_train"], a["x_test"]]).astype(np.float64)
m = np.concatenate([a["m_train"], a["m_test"]])
check(set(np.unique(m).tolist()) == {0, 1}, "masks hold 0 and 1 only")
v = (x / 255 - 0.375) / 0.25
for cls, name in enumerate(("sphere", "cube", "torus", "cylinder")):
    sel = y == cls
    inside, outside = v[sel][m[sel] == 1], v[sel][m[sel] == 0]
    good = (abs(inside.mean() - 1) < 0.01 and abs(outside.mean()) < 0.005 and
            abs(inside.std() - 0.3) < 0.01 and abs(outside.std() - 0.3) < 0.005)
    check(good, f"{name}: decoded values are 1 + noise inside, noise outside, std 0.3",
          f"inside mean {inside.mean():.4f} std {inside.std():.4f}, outside mean "
          f"{outside.mean():.4f} std {outside.std():.4f}")
noise = (v - m)[m == 0]
tails = [float((np.abs(noise) > k * 0.3).mean()) for k in (1, 2, 3)]
check(abs(tails[0] - 0.3173) < 0.01 and abs(tails[1] - 0.0455) < 0.004 and tails[2] < 0.006,
      "the noise is Gaussian: beyond 1, 2, 3 sigma", " ".join(f"{t:.4f}" for t in tails))

grid = np.indices((32, 32, 32)).reshape(3, -1).T
for cls, name, lo, hi, centre in ((0, "spheres", 3.6, 4.6, 1), (1, "cubes", 1.4, 2.3, 1),
                                  (2, "tori", 0.3, 2.5, 0), (3, "cylinders", 0.2, 3.0, 1)):
    fill, centred = [], []
    for i in np.flatnonzero(y == cls):
        p = grid[m[i, 0].reshape(-1) == 1]
        c = p.mean(0)
        fill.append(len(p) / np.sqrt(((p - c) ** 2).sum(1)).max() ** 3)
        centred.append(m[i, 0][tuple(np.round(c).astype(int))] == centre)
    check(lo <= min(fill) and max(fill) <= hi and all(centred),
          f"{name}: volume / (largest distance from the centroid)^3 in [{lo}, {hi}], "
          f"centroid {'inside' if centre else 'in the hole'}",
          f"{min(fill):.2f}..{max(fill):.2f}, {sum(centred)} of {len(centred)}")
sys.exit(1 if failed else 0)
EOF

# 3. bad arguments
expect_fail() { # what, words, args...
  local what=$1 words=$2; shift 2
  local err; err=$("$make_volumes" "$@" 2>&1 >/dev/null); local rc=$?
  if [ $rc -ne 0 ] && grep -q -- "$words" <<<"$err"; then ok "$what"; else bad "$what (rc $rc)" "$err"; fi
}
expect_fail "no folder" "name the output folder" --train 4
expect_fail "a size too small" "--size: expected a whole number from 8 to 256, got '4'" --size 4 "$work/f"
expect_fail "a count that is not a number" "--train: expected a whole number" --train many "$work/f"
expect_fail "an unknown option" "unknown option '--noise'" --noise 0.1 "$work/f"
expect_fail "a folder it cannot make" "cannot create /nonexistent/x" --train 4 --test 4 /nonexistent/x
if "$make_volumes" --help | grep -q '^usage: make_volumes'; then ok "--help prints the usage"
else bad "--help"; fi
exit $fail
