#!/usr/bin/env bash
# Installs clnet into a temporary prefix, then builds examples/consumer out of
# tree against it twice (CMake find_package, and pkg-config --static) and
# runs both. Neither program may load a libclnet.so: clnet is linked in.
# usage: install_test.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 src=$2
work=$(mktemp -d /tmp/clnet-install-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/clnet.h"
lib=$(find "$prefix" -name 'libclnet.a' | head -n1)
test -n "$lib" || { echo "FAIL: no libclnet.a installed"; exit 1; }
if find "$prefix" -name 'libclnet.so*' | grep -q .; then echo "FAIL: a libclnet.so was installed"; exit 1; fi

no_libclnet_so() { # program
  if ldd "$1" | grep -q 'libclnet'; then echo "FAIL: $1 loads a shared libclnet"; ldd "$1"; exit 1; fi
  # and at run time, what the loader really opens:
  if LD_DEBUG=libs "$1" 2>&1 >/dev/null | grep -q 'libclnet\.so'; then echo "FAIL: $1 opened libclnet.so"; exit 1; fi
}

# 1. CMake: find_package(clnet) and clnet::clnet
cmake -S "$src/examples/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"
no_libclnet_so "$work/cmake-build/consumer"
echo "ok   consumer built with find_package(clnet) runs"

# 2. pkg-config --static
pcdir=$(dirname "$(find "$prefix" -name clnet.pc | head -n1)")
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --static --cflags --libs clnet)
echo "pkg-config --static --cflags --libs clnet: $flags"
# shellcheck disable=SC2086 # the flags are words on purpose
cc -std=c11 -o "$work/consumer-pc" "$src/examples/consumer/main.c" $flags
"$work/consumer-pc"
no_libclnet_so "$work/consumer-pc"
echo "ok   consumer built with pkg-config --static runs"
