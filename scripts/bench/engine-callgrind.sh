#!/usr/bin/env bash
# Instructions per evaluation of the engine alone (callgrind: exact, whatever the machine's
# load), for the cases of crates/route-match/examples/eval_loop.rs: two runs of each case with
# N1 and N2 evaluations, the difference divided by N2 - N1 (start-up and compiling cancel out).
#   scripts/bench/engine-callgrind.sh [CASE...]        default: header param any regex_header
#                                                caseless_200 mixed_1000
#   EVAL_LOOP=/path/to/eval_loop                 a binary built elsewhere (e.g. another commit)
#   N1=1000 N2=11000                             the two run lengths
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install-deps.sh valgrind >/dev/null
bin=${EVAL_LOOP:-}
if [ -z "$bin" ]; then
  cargo build --release -p route-match --example eval_loop >&2
  bin=target/release/examples/eval_loop
fi
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(header param any regex_header caseless_200 mixed_1000)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n1=${N1:-1000} n2=${N2:-11000}
total() {
  valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$bin" "$1" "$2" >/dev/null 2>&1
  sed -n 's/^totals: //p' "$tmp/out"
}
for c in "${cases[@]}"; do
  a=$(total "$c" $n1)
  b=$(total "$c" $n2)
  echo "$c $(( (b - a) / (n2 - n1) ))"
done
