# Sourced by the shell tests that check several parts.
#
# A part this machine cannot run makes the whole test a skip (exit 77, its
# reason printed) unless another part failed; it never passes with a part left
# out (testing.md).
#   skip_part REASON   say that a part did not run, and why
#   finish             exit 1 after any failure (the caller's $fail), else 77
#                      after a skipped part, else 0
#
# The longer parts of a test run in CI's extended step, not in the suite: the
# suite's test runs the parts of `suite`, its twin in the extended step (the
# label `extended`) those of `extended`; CLNET_TEST_PARTS names which (default
# "suite"; "suite extended" runs them all).
#   part WHICH         true when this run includes the parts of WHICH
skipped_parts=()
skip_part() {
  echo "skipped: $*"
  skipped_parts+=("$*")
}
part() {
  [[ " ${CLNET_TEST_PARTS:-suite} " == *" $1 "* ]]
}
finish() {
  if [ "${fail:-0}" -ne 0 ]; then exit 1; fi
  if [ ${#skipped_parts[@]} -gt 0 ]; then
    echo "skipped: ${#skipped_parts[@]} part(s) of this test did not run (above); the rest passed"
    exit 77
  fi
  exit 0
}
