#!/usr/bin/env bash
# Installs what clnet needs from Debian packages, only what is missing
# (apt-get; through sudo when not root). Safe to run again.
#   scripts/deps.sh          everything the test suite uses (scripts/test.sh), so that a fresh
#                            machine skips no test it could run
#   scripts/deps.sh --demo   what building clnet and training the demo need (scripts/demo.sh)
set -euo pipefail

packages=(
  cmake gcc make pkg-config          # build
  ocl-icd-opencl-dev opencl-c-headers # the OpenCL ICD loader and headers
  pocl-opencl-icd clinfo             # OpenCL on the CPU, and a lister
  libclblast-dev zlib1g-dev          # GEMM, gzip
  libpng-dev libjpeg-dev             # decoding PNG and JPEG images (src/image.c)
  check python3                      # unit tests (built by default); python3 for the checks
  libopenmpi-dev openmpi-bin         # training across machines (mpirun), and its tests
  dataset-fashion-mnist              # the data set the demo trains on
)
if [ "${1:-}" != --demo ]; then
  packages+=(
    clang-format                     # the format check (scripts/format.sh)
    clang                            # the fuzz targets (scripts/fuzz.sh: libFuzzer)
    oclgrind                         # a second OpenCL platform, for tests
    mesa-opencl-icd                  # Rusticl: a third OpenCL implementation, for tests
    python3-numpy python3-torch      # the tests' NumPy checks and PyTorch comparisons
    clang-15 libclc-15               # the GPU kernels compiled offline (scripts/gpu_offline.py)
  )
fi
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "clnet: not a Debian system; make sure these (or their equivalents) are installed:" >&2
  echo "  ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "clnet: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "clnet: installing ${missing[*]}" >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
