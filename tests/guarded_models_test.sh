#!/usr/bin/env bash
# Every example model takes a training step and an evaluation under the
# memory guards (CLNET_GUARD=1, src/guard.h) at an odd batch, on every device
# of the configuration (`clnet warm`, made-up data). The end-to-end tests
# (cli_train, cli_multi, mpi, kill, ...) train these models without guards,
# which would make them 2-3x slower and check nothing more; the kernels'
# own tests (layers, splits, graph) run under guards too. The two ResNet-18s
# at their full sizes are test_resnet's, also under guards. NAME...: only those
# models (examples/models/NAME.cfg).
# usage: guarded_models_test.sh CLNET MODEL_DIR BATCH [NAME...]
set -u
clnet=$1 models=$2 batch=$3
shift 3
export CLNET_GUARD=1 CLNET_CACHE=on
fail=0
paths=()
for name in "$@"; do paths+=("$models/$name.cfg"); done
[ $# -gt 0 ] || paths=("$models"/*.cfg)
for m in "${paths[@]}"; do
  case $(basename "$m") in resnet18.cfg | resnet18_96.cfg) [ $# -gt 0 ] || continue ;; esac
  if out=$("$clnet" warm "$m" --batch "$batch" 2>&1) && grep -q "^warmed .* at batch $batch " <<<"$out"; then
    echo "ok   $(basename "$m"): $out"
  else
    echo "FAIL $(basename "$m")"
    printf '%s\n' "$out"
    fail=1
  fi
done
exit $fail
