#!/usr/bin/env bash
# `nginx -t` on configurations the generator fuzz target accepted: the first N inputs of its
# corpus (target/fuzz/corpus/generate, then the committed seeds) are run through the target
# once, each accepted manifest set is written out with the module under test, and every
# configuration must pass `nginx -t` of the vendored NGINX.
#   scripts/fuzz-nginx-t.sh [N]     default 200
# Needs the fuzz build (scripts/fuzz.sh) and the module (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200}
triple=$(rustc -vV | sed -n 's/^host: //p')
bin=target/fuzz/build/$triple/release/generate
[ -x "$bin" ] || scripts/fuzz.sh 1 generate
out=$(scripts/build.sh)
module=$(echo "$out" | sed -n 's/^module=//p' | tail -n 1)
nginx=$(echo "$out" | sed -n 's/^nginx=//p' | tail -n 1)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mapfile -t inputs < <(find target/fuzz/corpus/generate fuzz/corpus/generate -type f 2>/dev/null | head -n "$n")
[ ${#inputs[@]} -gt 0 ] || { echo "no corpus: run scripts/fuzz.sh first" >&2; exit 1; }
FUZZ_WRITE_DIR=$dir/out FUZZ_MODULE=$module "$bin" "${inputs[@]}" >"$dir/run.log" 2>&1 \
  || { tail -n 20 "$dir/run.log" >&2; exit 1; }
pass=0 busy=0 fail=0
for conf in "$dir"/out/*/nginx.conf; do
  [ -e "$conf" ] || continue
  d=$(dirname "$conf")
  if text=$("$nginx" -t -p "$d/" -c nginx.conf 2>&1); then
    pass=$((pass + 1))
  elif grep -q "Address already in use" <<<"$text"; then
    busy=$((busy + 1))   # a port another program holds: not the configuration's fault
  else
    fail=$((fail + 1))
    echo "FAIL: $conf" >&2
    echo "$text" >&2
  fi
done
echo "nginx -t on fuzz samples: ${#inputs[@]} inputs, $((pass + busy + fail)) accepted by the generator, $pass passed, $busy skipped (port in use), $fail failed"
[ "$fail" -eq 0 ]
