#!/usr/bin/env bash
# Every test docs/RELIABILITY.md names as `FILE::TEST` exists: FILE is a file of this checkout
# and holds `fn TEST`. Every script it names exists. Cheap (grep only), run by scripts/test.sh,
# so the table of guarantees cannot name a test that was renamed or deleted.
#   scripts/check-reliability-tests.sh [DOC]   default: docs/RELIABILITY.md
set -euo pipefail
cd "$(dirname "$0")/.."
doc=${1:-docs/RELIABILITY.md}
fail=0 n=0
while read -r ref; do
  file=${ref%%::*} test=${ref#*::}
  n=$((n + 1))
  if [ ! -f "$file" ]; then
    echo "$doc names $ref: no file $file" >&2; fail=1
  elif ! grep -Eq "^[[:space:]]*(pub(\([a-z]+\))? )?(async )?fn ${test}[[:space:]]*[(<]" "$file"; then
    echo "$doc names $ref: no fn $test in $file" >&2; fail=1
  fi
done < <(grep -oE '`[A-Za-z0-9_./-]+\.rs::[a-z0-9_]+`' "$doc" | tr -d '`' | sort -u)
while read -r script; do
  [ -f "$script" ] || { echo "$doc names $script: no such file" >&2; fail=1; }
done < <(grep -oE '`scripts/[A-Za-z0-9_./-]+\.(sh|py)' "$doc" | tr -d '`' | sort -u)
if [ "$n" -eq 0 ]; then echo "$doc names no FILE::TEST at all" >&2; fail=1; fi
[ "$fail" -eq 0 ] && echo "$doc: the $n tests it names exist"
exit "$fail"
