#!/usr/bin/env bash
# Coverage-guided fuzzing of the engine and the generator with libFuzzer, on stable Rust.
#   scripts/fuzz.sh [SECONDS] [TARGET...]    default: 60 s each of `parse`, `evaluate`,
#   `generate` and `json` (the JSON fast path against the YAML path), at once
# libyaml-safer 0.3.0 panics on some malformed YAML (`[!a,]`, a text ending `"a\`, a block
# scalar of `!:` lines): the loader catches the parser's panic (a refusal), and the `json`
# target lets those unwind to it (libFuzzer's hook aborts at any other panic). The build is
# --release: panic = unwind.
# cargo-fuzz needs nightly only for its sanitizer flag; the coverage instrumentation it adds
# (SanitizerCoverage through -C passes / -C llvm-args) is stable, so this builds the fuzz crate
# with those flags directly. No AddressSanitizer: the engine has no unsafe code
# (#![forbid(unsafe_code)]); what fuzzing looks for here is panics, assertion failures
# (index vs linear scan), overflow, runaway time and memory.
# Seeds live in fuzz/corpus/TARGET (committed); what a run finds goes to
# target/fuzz/corpus/TARGET; a crash is written to target/fuzz/artifacts/TARGET/ and fails
# the script.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parse evaluate generate json)

triple=$(rustc -vV | sed -n 's/^host: //p')
# --target keeps these flags off build scripts and proc macros (as cargo-fuzz does).
RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks" \
  cargo build --release --manifest-path fuzz/Cargo.toml --target "$triple" \
  --target-dir target/fuzz/build --bins >&2

# fuzz_one TARGET: SECONDS of TARGET; its log in target/fuzz/TARGET.log.
fuzz_one() {
  local t=$1 corpus=target/fuzz/corpus/$1 artifacts=target/fuzz/artifacts/$1 extra=()
  mkdir -p "$corpus" "$artifacts"
  # generate: a manifest set needs a few hundred bytes of structure; start at the full length.
  [ "$t" = generate ] && extra=(-len_control=0)
  # -rss_limit_mb: a list that makes the engine hold more than this is a finding too.
  # -timeout: one input taking seconds is a finding (the regex match limit should bound it).
  "target/fuzz/build/$triple/release/$t" "$corpus" "fuzz/corpus/$t" \
    -max_total_time="$secs" -rss_limit_mb=1024 -timeout=5 -max_len=4096 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 "${extra[@]}" 2> "target/fuzz/$t.log"
}
# The targets at once: each run is SECONDS of wall clock whatever else runs, so the step takes
# SECONDS, not SECONDS per target (the 2 cores are shared between them).
echo "==== fuzz ${targets[*]} for ${secs}s, at once" >&2
pids=()
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  echo "==== fuzz $t" >&2
  if ! wait "${pids[$i]}"; then
    tail -n 40 "target/fuzz/$t.log" >&2
    echo "fuzz $t FAILED: see target/fuzz/$t.log and target/fuzz/artifacts/$t/" >&2
    failed=1
    continue
  fi
  # The last status line and the final stats: runs, coverage, corpus size.
  grep -E '^#[0-9]+.*(DONE|pulse)' "target/fuzz/$t.log" | tail -n 1 >&2 || true
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "target/fuzz/$t.log" >&2 || true
done
exit "$failed"
