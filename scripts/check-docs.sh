#!/usr/bin/env bash
# The docs cannot name what does not exist: every `FILE::TEST` docs/RELIABILITY.md and
# docs/ARCHITECTURE.md name is a file of this checkout holding `fn TEST`, every script they
# name exists, docs/ARCHITECTURE.md's map names every source file of src/ and crates/*/src, and
# README.md has a section for every directive of src/conf/directives.rs, in at most 500 lines.
# Cheap (grep only), run by scripts/test.sh, so the tables cannot rot.
#   scripts/check-docs.sh [DOC...]   default: docs/RELIABILITY.md docs/ARCHITECTURE.md
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- docs/RELIABILITY.md docs/ARCHITECTURE.md
fail=0
for doc in "$@"; do
  n=0
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
  echo "$doc: the $n tests it names exist"
done
if [ -f docs/ARCHITECTURE.md ]; then
  while read -r src; do
    grep -qF "\`$src\`" docs/ARCHITECTURE.md || { echo "docs/ARCHITECTURE.md's map does not name $src" >&2; fail=1; }
  done < <(find src crates/*/src -name '*.rs' | sort)
fi
# Every directive of the directive table has its own section in README.md.
while read -r d; do
  grep -qx "### $d" README.md || { echo "README.md has no section \"### $d\" (a directive of src/conf/directives.rs)" >&2; fail=1; }
done < <(grep -oE 'ngx_string!\("[a-z_]+"\)' src/conf/directives.rs | sed -E 's/.*\("([a-z_]+)"\)/\1/' | sort -u)
readme=$(wc -l < README.md)
[ "$readme" -le 500 ] || { echo "README.md has $readme lines (at most 500: detail goes to docs/ or crates/httproute-nginx/README.md)" >&2; fail=1; }
exit "$fail"
