#!/usr/bin/env bash
# Gets what bench/gpu_check.sh needs on a device machine that has a GPU, CMake and PyTorch
# but no apt and no network (the CUDA image of the `device` tool): the Debian packages of
# the OpenCL ICD loader and headers, CLBlast, Check (and subunit), zlib's headers,
# libpng's and libjpeg-turbo's (libraries and headers) and pkgconf, extracted into build-gpu-deps/root (ignored by git, about 6 MB), an ICD file
# naming NVIDIA's OpenCL driver (build-gpu-deps/icd/nvidia.icd), and Fashion-MNIST
# (build-gpu-deps/fashion-mnist, 30 MB). Run it here, from the repository root, then carry
# build-gpu-deps to the device machine (the tool's `carry`) and run bench/gpu_check.sh there.
#   bench/gpu_prepare.sh        (needs apt-get download: Debian, network)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build-gpu-deps
packages=(ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers libclblast1 libclblast-dev
  check libsubunit0 libsubunit-dev zlib1g zlib1g-dev libpng16-16 libpng-dev libjpeg62-turbo
  libjpeg62-turbo-dev pkgconf-bin libpkgconf3)
rm -rf "$out"
mkdir -p "$out/debs" "$out/root" "$out/icd" "$out/fashion-mnist"
(cd "$out/debs" && apt-get download "${packages[@]}" >/dev/null 2>&1) || {
  echo "gpu_prepare.sh: apt-get download ${packages[*]} failed" >&2
  exit 1
}
for deb in "$out"/debs/*.deb; do dpkg -x "$deb" "$out/root"; done
rm -rf "$out/debs" "$out/root/usr/share/doc" "$out/root/usr/share/man" \
  "$out/root/usr/lib/x86_64-linux-gnu/libclblast.a" "$out/root/usr/lib/x86_64-linux-gnu/libz.a" \
  "$out"/root/usr/lib/x86_64-linux-gnu/libpng*.a "$out/root/usr/lib/x86_64-linux-gnu/libjpeg.a"
# zlib's link for the linker points at /lib's file by its absolute path: at the extracted one
lib=$out/root/usr/lib/x86_64-linux-gnu
for zlib in "$out"/root/lib/x86_64-linux-gnu/libz.so.1.* "$lib"/libz.so.1.*; do
  [ -f "$zlib" ] && ln -sf "$(realpath --relative-to="$lib" "$zlib")" "$lib/libz.so"
done
# CLBlast's CMake file names the loader by its absolute path, which the device machine lacks:
# the bare name lets the linker find the extracted one (gpu_check.sh sets LIBRARY_PATH)
sed -i 's|"/usr/lib/x86_64-linux-gnu/libOpenCL.so"|"OpenCL"|' \
  "$lib/cmake/CLBlast/CLBlastConfig-none.cmake"
ln -sf pkgconf "$out/root/usr/bin/pkg-config"
echo libnvidia-opencl.so.1 >"$out/icd/nvidia.icd"
data=${CLNET_DATA_DIR:-/usr/share/datasets/fashion-mnist}
cp "$data"/*-ubyte.gz "$out/fashion-mnist/" || {
  echo "gpu_prepare.sh: no Fashion-MNIST in $data (apt-get install dataset-fashion-mnist)" >&2
  exit 1
}
echo "gpu_prepare.sh: $(du -sh "$out" | cut -f1) in $out; carry build-gpu-deps, then run" \
  "bench/gpu_check.sh there" >&2
