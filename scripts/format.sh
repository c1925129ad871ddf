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
bad=0
for f in "${files[@]}"; do
  if ! "$clang_format" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f"
    bad=$((bad + 1))
  fi
done
if [ $bad -gt 0 ]; then
  echo "$bad of ${#files[@]} files are not formatted: run scripts/format.sh"
  exit 1
fi
echo "all ${#files[@]} files are formatted"
