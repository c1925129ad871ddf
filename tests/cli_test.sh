#!/usr/bin/env bash
# Checks the clnet program as a user meets it: `clnet devices` on the test
# configuration's devices, and the clear failures on bad input.
# usage: cli_test.sh CLNET EMPTY_VENDOR_DIR
set -u
clnet=$1 empty_vendors=$2
fail=0
check() { # name, expected exit (0 or nonzero), pattern, command...
  local name=$1 want=$2 pattern=$3; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  printf '%s\n' "$out" >&2 # for a wrapper that reads stderr (oclgrind_check.sh)
  if [ "$want" = 0 ] && [ $rc -ne 0 ]; then echo "FAIL $name: exit $rc"; echo "$out"; fail=1; return; fi
  if [ "$want" != 0 ] && [ $rc -eq 0 ]; then echo "FAIL $name: exit 0, expected failure"; echo "$out"; fail=1; return; fi
  if ! grep -qE -- "$pattern" <<<"$out"; then echo "FAIL $name: output lacks /$pattern/"; echo "$out"; fail=1; return; fi
  if grep -qiE 'segmentation|core dumped|abort|sanitizer' <<<"$out"; then echo "FAIL $name: crashed"; echo "$out"; fail=1; return; fi
  echo "ok   $name"
}
check "devices lists and checks" 0 ' ok$' "$clnet" devices
check "devices footer" 0 'selected, 0 failed the check' "$clnet" devices
check "version" 0 '^clnet 0\.3\.0 \(MPI: (yes|no)' "$clnet" version
check "unknown device spec" 1 "unknown device selection 'nope'" "$clnet" devices --devices nope
check "spec via environment" 1 "unknown device selection 'bad'" env CLNET_DEVICES=bad "$clnet" devices
check "--devices wins over environment" 0 ' ok$' env CLNET_DEVICES=bad "$clnet" devices --devices all
check "device number out of range" 1 'there is no device 42' "$clnet" devices --devices=42
check "no platform at all" 1 'no OpenCL platform found' env OCL_ICD_VENDORS="$empty_vendors" "$clnet" devices
check "unknown command" 1 "unknown command 'frobnicate'" "$clnet" frobnicate
check "missing option value" 1 'needs a value' "$clnet" devices --devices
exit $fail
