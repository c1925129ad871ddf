#!/usr/bin/env bash
# Sets up a fresh Debian machine (missing packages), builds clnet with
# warnings as errors, and runs the test suite, then lists each skipped test
# with its reason.
#   scripts/test.sh                 the whole suite (10 minutes with empty caches on 2 cores: testing.md)
#   scripts/test.sh --quick         every layer on one device and the tests without a device
#                                   (about 2 minutes), for use between edits
#   scripts/test.sh --extended      CI's extended step: more generated cases, seeds and
#                                   kills than the suite, each test within its time budget
#   scripts/test.sh --sanitize      the suite under AddressSanitizer + UBSan (build-asan/),
#                                   built without MPI (CLNET_MPI=OFF): the suite's run
#                                   without it, and Open MPI's own leaks stay out of LSan
#   scripts/test.sh --record NAME   also keeps the run's times in tests/suite_runs.json as NAME
#                                   (plain-cold, ...: docs/testing.md, "How long it takes")
#   scripts/test.sh -R devices      only tests whose name matches (ctest options)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
began=$(date +%s.%N)
cmake_args=(-DCLNET_WERROR=ON)
select=(-LE extended)
record=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize)
      export BUILD_DIR=${BUILD_DIR:-$root/build-asan}
      cmake_args+=(-DCLNET_SANITIZE=ON -DCLNET_MPI=OFF) ;;
    --quick) select=(-L quick) ;;
    --extended) select=(-L extended) ;;
    --record) record=$2; shift ;;
    *) break ;;
  esac
  shift
done
export BUILD_DIR=${BUILD_DIR:-$root/build}

"$root/scripts/deps.sh"
"$root/scripts/build.sh" "${cmake_args[@]}"
built=$(date +%s.%N)
cd "$BUILD_DIR"
junit=$BUILD_DIR/Testing/junit.xml
status=0
# The whole output of every test goes into the JUnit file (CTest keeps 1 kB of a passed
# test's by default), so that the summary reads each one's skip lines.
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" --output-junit "$junit" \
  --test-output-size-passed 4000000 --test-output-size-failed 4000000 "${select[@]}" "$@" ||
  status=$?
python3 "$root/scripts/suite.py" summary "$junit" || status=1
ended=$(date +%s.%N)
echo "suite: $(awk "BEGIN { printf \"%.0f s in all, %.0f s building\", $ended - $began, $built - $began }")"
if [ -n "$record" ]; then
  python3 "$root/scripts/suite.py" record "$junit" "$record" --wall "$(awk "BEGIN { print $ended - $began }")" \
    --build "$(awk "BEGIN { print $built - $began }")" --machine "${CLNET_MACHINE:-$(nproc)-core $(uname -m)}"
fi
exit $status
