#!/bin/sh
# Stands in for a test this machine cannot run: says why and exits 77, which
# CTest reports as skipped (SKIP_RETURN_CODE), never as passed.
# usage: skip.sh REASON...
echo "skipped: $*"
exit 77
