#!/usr/bin/env bash
# The generator's invariants (issue #29 "Must show"), run for minutes instead of the seconds
# the normal test run gives them. One process at a time, rounds until the minutes are spent:
#   1. innocent tenant (crates/httproute-nginx/tests/innocent_tenant.rs): random CRD-valid
#      mutations of tenant b never change tenant a's servers, locations and lists, and every
#      output passes `nginx -t` (NGX_MATCHES_NGINX / NGX_MATCHES_MODULE are set here);
#   2. size (tests/shared_lists.rs): output <= C x input bytes, the lists the plan's;
#   3. the generator fuzz target (fuzz/fuzz_targets/generate.rs), built as scripts/fuzz.sh
#      builds it, its corpus in target/fuzz/corpus/generate kept from round to round;
#   4. work, before the rounds: scripts/bench/generator-scale.sh section 7, the adversarial shapes
#      at COUNTED (5000) and 2 x COUNTED routes under valgrind, 2n at most 2.25 times the
#      instructions of n (asserted; CI runs it at 1000, --quick); and section 5, the same shapes timed
#      at ADVERSARIAL routes (a measurement, never an assertion).
# Everything is built before the clock starts and the rounds run the binaries built (no cargo
# in the loop: an edit of the checkout meanwhile does not change what is tested).
# Usage: scripts/bench/invariants-long.sh            (INVARIANT_MINUTES, default 30)
#   INNOCENT_CASES (48), SIZE_CASES (64), FUZZ_SECONDS (120) per round; ADVERSARIAL (10000).
#   SMOKE=1 (scripts/bench/smoke.sh): one round at tiny sizes (2 cases each, 2 s of fuzzing,
#   ADVERSARIAL 200, COUNTED 100 on the deep shape only), about a minute of CPU once built;
#   any of the variables above still wins.
# Prints each round's result and a summary: cases, failures, fuzz runs and coverage, ratios.
# A failing round's log is kept in target/invariants/; the script exits 1 if any round failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
export NGX_CONFIGURE_ARGS=--with-debug
if [ -n "${SMOKE:-}" ]; then
  minutes=${INVARIANT_MINUTES:-0} innocent=${INNOCENT_CASES:-2} size=${SIZE_CASES:-2}
  fuzz_secs=${FUZZ_SECONDS:-2} adversarial=${ADVERSARIAL:-200}
  export COUNTED=${COUNTED:-100} SHAPES=${SHAPES:-deep}
else
  minutes=${INVARIANT_MINUTES:-30}
  innocent=${INNOCENT_CASES:-48} size=${SIZE_CASES:-64} fuzz_secs=${FUZZ_SECONDS:-120}
  adversarial=${ADVERSARIAL:-10000}
fi
log=$PWD/target/invariants
rm -rf "$log"
mkdir -p "$log"
# shellcheck source=scripts/lib/built.sh
. scripts/lib/built.sh
scripts/install-deps.sh valgrind >"$log/deps.log" 2>&1 || { cat "$log/deps.log" >&2; exit 1; }
build_module
export NGX_MATCHES_NGINX=$nginx NGX_MATCHES_MODULE=$module
# test_binary NAME: builds the test NAME of httproute-nginx and prints its executable.
test_binary() {
  scripts/ci-cargo.sh test -q --test "$1" --no-run --message-format=json 2>>"$log/build.log" \
    | python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$1" | tail -n 1
}
innocent_bin=$(test_binary innocent_tenant) size_bin=$(test_binary shared_lists)
[ -x "$innocent_bin" ] && [ -x "$size_bin" ] || { cat "$log/build.log" >&2; exit 1; }
scripts/fuzz.sh 1 generate >"$log/fuzz-build.log" 2>&1 || { cat "$log/fuzz-build.log" >&2; exit 1; }
fuzz_bin=target/fuzz/build/$(rustc -vV | sed -n 's/^host: //p')/release/generate
corpus=target/fuzz/corpus/generate artifacts=target/fuzz/artifacts/generate
# The smoke run fuzzes from the committed seeds alone: the kept corpus (hundreds of inputs)
# takes half a minute to replay, and scripts/fuzz.sh replays it in the same CI run.
[ -z "${SMOKE:-}" ] || corpus=$log/corpus
mkdir -p "$corpus" "$artifacts"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores); $minutes minutes"

failures=0
echo "== work and time: generator-scale.sh sections 5 (timed) and 7 (counted)"
SECTIONS="5 7" ADVERSARIAL=$adversarial scripts/bench/generator-scale.sh >"$log/time.txt" 2>&1 \
  || { echo "work: generator-scale.sh failed, see $log/time.txt"; failures=$((failures + 1)); }
sed -n '/== 5/,$p' "$log/time.txt"

rounds=0 innocent_total=0 size_total=0 fuzz_runs=0 fuzz_cov=-
# The tests' working directory, as cargo test gives it.
crate=crates/httproute-nginx
end=$(($(date +%s) + minutes * 60))
while [ "$rounds" -eq 0 ] || [ "$(date +%s)" -lt "$end" ]; do
  rounds=$((rounds + 1))
  if (cd "$crate" && HTTPROUTE_INNOCENT_CASES=$innocent "$innocent_bin" -q) \
      >"$log/innocent-$rounds.log" 2>&1; then
    innocent_total=$((innocent_total + innocent)); rm -f "$log/innocent-$rounds.log"; r1=ok
  else
    failures=$((failures + 1)); r1="FAILED ($log/innocent-$rounds.log)"
  fi
  if (cd "$crate" && SHARED_LISTS_CASES=$size "$size_bin" -q) >"$log/size-$rounds.log" 2>&1; then
    size_total=$((size_total + size)); rm -f "$log/size-$rounds.log"; r2=ok
  else
    failures=$((failures + 1)); r2="FAILED ($log/size-$rounds.log)"
  fi
  # As scripts/fuzz.sh runs it.
  if "$fuzz_bin" "$corpus" fuzz/corpus/generate -max_total_time="$fuzz_secs" -rss_limit_mb=1024 \
      -timeout=5 -max_len=4096 -artifact_prefix="$artifacts/" -print_final_stats=1 \
      -len_control=0 >"$log/fuzz-$rounds.log" 2>&1; then
    r3=ok
  else
    failures=$((failures + 1)); r3="FAILED ($log/fuzz-$rounds.log, $artifacts/)"
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log/fuzz-$rounds.log" | tail -n 1)
  fuzz_runs=$((fuzz_runs + ${runs:-0}))
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log/fuzz-$rounds.log" | tail -n 1)
  [ -z "$cov" ] || fuzz_cov=$cov
  [ "$r3" != ok ] || rm -f "$log/fuzz-$rounds.log"
  echo "round $rounds: innocent $r1, size $r2, fuzz $r3 (${runs:-0} runs, ${cov:-no coverage line})"
done
echo "== summary: $rounds rounds in $minutes minutes"
echo "innocent tenant: $innocent_total cases passed (nginx -t on each output)"
echo "size: $size_total cases passed"
echo "fuzz generate: $fuzz_runs runs; last: $fuzz_cov (corpus in $corpus)"
echo "failures: $failures"
[ "$failures" -eq 0 ]
