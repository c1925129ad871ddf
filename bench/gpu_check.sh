#!/usr/bin/env bash
# The checks of clnet on an NVIDIA GPU, run on a device machine that has the GPU, CMake and
# PyTorch with CUDA but no apt (after bench/gpu_prepare.sh here, build-gpu-deps carried there):
#   bench/gpu_check.sh STEP...     from the repository root; the steps in the order given
# Steps (each prints what it ran; a step that fails does not stop the ones after it):
#   build     configure and build build-gpu/ (Release) against build-gpu-deps/root
#   devices   clnet devices: the GPU is found and runs clnet's kernels
#   system    the suite's tests of the machine's own OpenCL (ctest -R '\.system$')
#   tune      clnet tune resnet18.cfg at batch 128 (the database in build-gpu/cache)
#   speed     training images/s against PyTorch CUDA (float32, TF32 off, cudnn.benchmark on),
#             3 interleaved rounds each (bench/resnet_vs_torch.sh: clnet bench's 20 steps on
#             random data beside 20 of PyTorch's after 3 of warm-up): LeNet (batch 256),
#             resnet18_w16 and resnet18 (128) at 28x28, resnet18_96 (128) at 96x96
#   profile   CLNET_PROFILE=1 of resnet18 and resnet18_96 at batch 128: each step's wall time
#             beside the time its kernels took, and the kernels that took the most
#   layers    ResNet-18's convolutions at batch 128, forward + backward, with the rules'
#             algorithms and with each of im2col, implicit (local-memory tiles) and winograd
#             forced (build-gpu/bench/bench_conv), beside cuDNN's (bench/conv_torch.py)
#   all       build devices system tune speed profile layers
# Device time is short: give each call a few steps (build devices system, then tune speed,
# then profile) and a timeout. Environment: TORCH_PYTHON (default python3), ROUNDS (3); for a
# rehearsal on a CPU, GPU_ICD=build/icd/pocl (the ICD folder, default build-gpu-deps/icd) and
# TORCH_DEVICE=cpu.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
deps=$root/build-gpu-deps
lib=$deps/root/usr/lib/x86_64-linux-gnu
if [ ! -d "$lib" ]; then
  echo "gpu_check.sh: no $lib: run bench/gpu_prepare.sh on a Debian machine and carry build-gpu-deps" >&2
  exit 2
fi
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LIBRARY_PATH=$lib
export PATH=$deps/root/usr/bin:$PATH PKG_CONFIG_LIBDIR=$lib/pkgconfig:$deps/root/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$deps/root OCL_ICD_VENDORS=${GPU_ICD:-$deps/icd}
export CLNET_DATA_DIR=$deps/fashion-mnist CLNET_CACHE_DIR=$root/build-gpu/cache
export TORCH_PYTHON=${TORCH_PYTHON:-python3} CLNET=$root/build-gpu/clnet CK_FORK=no
rounds=${ROUNDS:-3}
status=0

step() { # step NAME COMMAND...: runs it, says how it ended and how long it took
  local name=$1 start=$SECONDS rc=0
  shift
  echo "== $name: $*"
  "$@" || rc=$?
  echo "== $name: exit $rc after $((SECONDS - start)) s"
  [ $rc -eq 0 ] || status=1
}

build() { # its output in build-gpu/build.log, the end of it on failure
  mkdir -p build-gpu
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$deps/root/usr" \
    -DOpenCL_INCLUDE_DIR="$deps/root/usr/include" -DOpenCL_LIBRARY="$lib/libOpenCL.so" \
    -DCLNET_MPI=OFF >build-gpu/build.log 2>&1 &&
    cmake --build build-gpu -j "$(nproc)" >>build-gpu/build.log 2>&1 ||
    { tail -40 build-gpu/build.log; return 1; }
}

speed() {
  local m b
  for m in lenet:256 resnet18_w16:128 resnet18:128 resnet18_96:128; do
    b=${m#*:} m=${m%:*}
    echo "-- $m, batch $b"
    CLNET_SIDE=bench TORCH_DEVICE=${TORCH_DEVICE:-cuda} bench/resnet_vs_torch.sh "$m" "$b" 20 "$rounds"
  done
}

profile_one() { # the wall time of the timed steps beside the kernels' time, and the top kernels
  local model=$1 out
  shift
  out=$(CLNET_PROFILE=1 "$CLNET" train "examples/models/$model.cfg" --batch 128 --steps 12 \
    --no-eval --lr 0.05 --momentum 0.9 "$@" 2>&1) || { echo "$out" | tail -20; return 1; }
  awk -v model="$model" '
    /^final:/ { for (i = 1; i <= NF; i++) if ($i ~ /^images_per_s=/) { split($i, a, "="); ips = a[2] } }
    / calls / { for (i = 1; i <= NF; i++) if ($i == "s") { t += $(i - 1); line[++n] = $0; sec[n] = $(i - 1) } }
    END {
      printf "%s: %.0f images/s (12 steps of 128: %.2f s of wall time in the timed steps); kernels %.2f s\n",
        model, ips, (ips > 0 ? 12 * 128 / ips : 0), t
      for (k = 1; k <= 12 && k <= n; k++) { best = 0
        for (j = 1; j <= n; j++) if (!(j in shown) && (best == 0 || sec[j] > sec[best])) best = j
        shown[best] = 1; print line[best] }
    }' <<<"$out"
}

profile() {
  profile_one resnet18 || return 1
  profile_one resnet18_96 --resize 96 --train-limit 1536 || return 1
}

layers() {
  local algo
  for algo in auto im2col implicit winograd; do
    echo "-- clnet, CLNET_CONV=$algo"
    CLNET_CONV=$algo "$root/build-gpu/bench/bench_conv" 10 resnet_ || return 1
  done
  echo "-- PyTorch CUDA (cuDNN)"
  "$TORCH_PYTHON" bench/conv_torch.py 10 resnet_ --device "${TORCH_DEVICE:-cuda}"
}

[ $# -gt 0 ] || { sed -n '2,24p' "$0"; exit 2; }
[ "$*" = all ] && set -- build devices system tune speed profile layers
for s in "$@"; do
  case $s in
  build) step build build ;;
  devices) step devices "$CLNET" devices ;;
  system) step system ctest --test-dir build-gpu -R '\.system$' --output-on-failure ;;
  tune) step tune "$CLNET" tune examples/models/resnet18.cfg --batch 128 ;;
  speed) step speed speed ;;
  profile) step profile profile ;;
  layers) step layers layers ;;
  *) echo "gpu_check.sh: unknown step '$s'" >&2; status=2 ;;
  esac
done
exit $status
