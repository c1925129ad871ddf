#!/usr/bin/env bash
# Runs a test program as an MPI job of N ranks on this machine, with what
# Open MPI needs here: root allowed, no cross-memory attach (containers),
# more ranks than cores allowed. Skipped (77) without mpirun.
# usage: mpirun.sh N PROGRAM [ARGS...]
set -u
n=$1; shift
if ! command -v mpirun >/dev/null 2>&1; then
  echo "skipped: mpirun is not installed (apt-get install openmpi-bin)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
exec timeout 600 mpirun --bind-to none -np "$n" "$@"
