#!/bin/sh
# A configuration's warm-up (tests/CMakeLists.txt, clnet_warm_up): `clnet warm` on each named
# example model, on every device of the configuration, so that the tests after it find their
# programs in PoCL's cache.
# usage: warm_models.sh CLNET MODEL_DIR NAME...
clnet=$1 models=$2
shift 2
for m in "$@"; do
  "$clnet" warm "$models/$m.cfg" --batch 64 || exit 1
done
