#!/usr/bin/env bash
# Fuzzes the library's file parsers with libFuzzer (tests/fuzz/README.md).
#   scripts/fuzz.sh TARGET SECONDS   one target for SECONDS
#   scripts/fuzz.sh all SECONDS      every target in turn, SECONDS each
#   scripts/fuzz.sh coverage         the lines of each target's reader that its
#                                    corpus reaches (the repository's and build-fuzz's)
# Targets: safetensors npy idx model kcache tunedb cli image.
# Builds build-fuzz/ (clang, ASan + UBSan + libFuzzer; $FUZZ_BUILD_DIR to move
# it) and starts from tests/fuzz/corpus/TARGET. Inputs that reach new code go
# to build-fuzz/corpus/TARGET, never into the repository. A crash, hang,
# leak or sanitizer report stops the target, keeps its input in
# build-fuzz/crashes/TARGET/ and makes this script fail: fix the bug, then
# copy the input to tests/fuzz/corpus/TARGET/crash-WHAT so that the suite
# replays it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
targets=(safetensors npy idx model kcache tunedb cli image)
usage() {
  echo "usage: scripts/fuzz.sh TARGET|all SECONDS | coverage   (targets: ${targets[*]})" >&2
  exit 2
}
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}

# The files of each target's reader, for the coverage report.
declare -A readers=([safetensors]="src/safetensors.c src/json.c" [npy]=src/npy.c
  [idx]=src/data.c [model]=src/model.c [kcache]=src/kcache.c [tunedb]=src/tune.c
  [cli]="src/cli/args.c src/cli/train_args.c" [image]=src/image.c)
if [ $# -eq 1 ] && [ "$1" = coverage ]; then
  cov=$build-coverage
  CC=clang CFLAGS="-fprofile-instr-generate -fcoverage-mapping" BUILD_DIR=$cov \
    "$root/scripts/build.sh" -DCLNET_MPI=OFF -DCLNET_BUILD_EXAMPLES=OFF >/dev/null
  for t in "${targets[@]}"; do
    dirs=("$root/tests/fuzz/corpus/$t")
    [ -d "$build/corpus/$t" ] && dirs+=("$build/corpus/$t")
    LLVM_PROFILE_FILE=$cov/$t.profraw "$cov/tests/fuzz/fuzz_$t" "${dirs[@]}" >/dev/null 2>&1
    llvm-profdata merge -o "$cov/$t.profdata" "$cov/$t.profraw"
    files=()
    for f in ${readers[$t]}; do files+=("$root/$f"); done
    llvm-cov report "$cov/tests/fuzz/fuzz_$t" -instr-profile="$cov/$t.profdata" "${files[@]}" |
      awk -v t="$t" '$1 ~ /\.c$/ {
        printf "coverage: %-11s %-22s lines %5d of %5d (%s)\n", t, $1, $8 - $9, $8, $10 }'
  done
  exit 0
fi
[ $# -eq 2 ] || usage
[[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] || usage
if [ "$1" = all ]; then
  chosen=("${targets[@]}")
elif [[ " ${targets[*]} " == *" $1 "* ]]; then
  chosen=("$1")
else
  usage
fi
seconds=$2

"$root/scripts/deps.sh"
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
  clang -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "clnet: clang cannot link libFuzzer (apt-get install clang libclang-rt-dev)" >&2
  exit 1
fi
CC=clang BUILD_DIR=$build "$root/scripts/build.sh" -DCLNET_FUZZ=ON -DCLNET_MPI=OFF \
  -DCLNET_BUILD_EXAMPLES=OFF >/dev/null

failed=()
for t in "${chosen[@]}"; do
  mkdir -p "$build/corpus/$t" "$build/crashes/$t"
  log=$build/fuzz-$t.log
  echo "fuzz: $t for $seconds s ..." >&2
  rc=0
  # allocator_may_return_null: a huge allocation is the reader's to refuse
  # (out of memory), not a crash; -malloc_limit_mb still catches runaway ones.
  ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -close_fd_mask=1 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$t/" "$build/corpus/$t" "$root/tests/fuzz/corpus/$t" \
    >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
  corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\)\/.*/\1/p')
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    grep -E 'ERROR|SUMMARY|==[0-9]+==|runtime error|Test unit written' "$log" | head -20 >&2
    echo "fuzz: $t FAILED after ${runs:-?} runs (log: $log)" >&2
  else
    echo "fuzz: $t: ${runs:-?} runs in $seconds s, ${cov:-?} coverage points, corpus ${corp:-?} inputs, nothing found"
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: failed: ${failed[*]}" >&2; exit 1; }
