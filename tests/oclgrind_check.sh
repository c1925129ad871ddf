#!/usr/bin/env bash
# Runs a test with Oclgrind's checks on and fails it on any Oclgrind report:
# invalid memory accesses (always on), data races and OpenCL API errors.
# Oclgrind only prints its reports to stderr and never changes a program's
# exit status, so this reads them from there.
#   --expect-build-failures  the test builds broken kernels on purpose: allow
#                            clBuildProgram's CL_BUILD_PROGRAM_FAILURE reports
# Not OCLGRIND_UNINITIALIZED: Oclgrind 21.10's uninitialised-value check
# reports clnet's correct kernels (see docs/troubleshooting.md, "Oclgrind").
# usage: oclgrind_check.sh [--expect-build-failures] COMMAND...
set -u
export OCLGRIND_CHECK_API=1 OCLGRIND_DATA_RACES=1
expect_build_failures=0
if [ "${1:-}" = --expect-build-failures ]; then
  expect_build_failures=1
  shift
fi
log=$(mktemp /tmp/clnet-oclgrind-XXXXXX)
trap 'rm -f "$log"' EXIT

# Not OCLGRIND_LOG: Oclgrind reopens (truncates) that file for every OpenCL
# context, losing earlier reports. stdout passes straight through; stderr
# passes through tee into the log.
{ "$@" 2>&1 1>&3 3>&- | tee "$log" >&2; } 3>&1
rc=${PIPESTATUS[0]}

# Every report on a kernel has a "Kernel: NAME" line (invalid accesses, data
# races, uninitialised values, barrier divergence); API errors, Oclgrind's
# internal failures and its own warnings have headers of their own.
reports='^[[:space:]]+Kernel: |Oclgrind - OpenCL runtime error detected|OCLGRIND FATAL ERROR|^Oclgrind: '
found=$(grep -cE "$reports" "$log")
if [ $expect_build_failures = 1 ]; then
  found=$((found - $(grep -cE '^[[:space:]]+Error: +CL_BUILD_PROGRAM_FAILURE$' "$log")))
fi
if [ "$found" -gt 0 ]; then
  echo "FAIL: Oclgrind reported $found problem(s), printed above (exit status $rc)" >&2
  exit 1
fi
exit "$rc"
