#!/usr/bin/env bash
# Formats every C source and header under src include tests bench examples
# with the repository's .clang-format, in place.
#   scripts/format.sh            format them
#   scripts/format.sh --check    change nothing; list the files that are not
#                                formatted and exit 1 if there are any (CI)
# CLANG_FORMAT=... picks the program (default clang-format). Versions format
# a little differently: CI's is Debian 12's clang-format 14.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
clang_format=${CLANG_FORMAT:-clang-format}
mapfile -t files < <(find src include tests bench examples -name '*.[ch]' | sort)

if [ "${1:-}" != --check ]; then
  "$clang_format" -i "${files[@]}"
  exit 0
fi
# One process for every file (a process per file took 11 s of the suite's 2 cores, one 3 s);
# its messages name each file that is not formatted.
if out=$("$clang_format" --dry-run -Werror "${files[@]}" 2>&1); then
  echo "all ${#files[@]} files are formatted"
  exit 0
fi
mapfile -t bad < <(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' <<<"$out" | sort -u)
if [ ${#bad[@]} -eq 0 ]; then # not a formatting complaint: say what clang-format said
  printf '%s\n' "$out" | head -n 20
  echo "$clang_format failed on the sources"
  exit 1
fi
printf 'not formatted: %s\n' "${bad[@]}"
echo "${#bad[@]} of ${#files[@]} files are not formatted: run scripts/format.sh"
exit 1
