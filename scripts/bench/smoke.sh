#!/usr/bin/env bash
# Every measurement script of scripts/bench/ at tiny sizes, so none of them can rot: each must
# run to its end and pass its own correctness checks (answers, error logs, counts). Their speed
# and memory thresholds are not judged here (SMOKE=1; tiny sizes say nothing about them).
# scripts/test.sh runs it (also `make smoke`). generator-scale.sh --quick asserts its sizes and
# instruction counts here as always.
#   scripts/bench/smoke.sh [NAME...]   default: every script below
set -euo pipefail
cd "$(dirname "$0")/../.."
export NGX_CONFIGURE_ARGS=${NGX_CONFIGURE_ARGS:---with-debug} SMOKE=1
# shellcheck source=scripts/lib/built.sh
. scripts/lib/built.sh
build_module >/dev/null
# The vendored NGINX's module and binary, for the scripts that build nothing.
export NGX_MATCHES_MODULE=$module NGX_MATCHES_NGINX=$nginx
shared=$(cd .. && pwd)/shared
njs=()
if [ -f "$shared/njs-1.0.1/ngx_http_js_module.so" ] && [ -f "$shared/reference/ngf/httpmatches.js" ]; then
  njs=(NJS_MODULE="$shared/njs-1.0.1/ngx_http_js_module.so" NJS_HTTPMATCHES="$shared/reference/ngf/httpmatches.js")
fi

smoke() { # NAME VAR=VALUE... COMMAND...: one script, its output kept in target/smoke/NAME.log
  local name=$1 start=$SECONDS
  shift
  case " ${only[*]} " in "  "|*" $name "*) ;; *) return 0 ;; esac
  if env "$@" >"target/smoke/$name.log" 2>&1; then
    echo "smoke: $name passed in $((SECONDS - start)) s"
  else
    tail -n 30 "target/smoke/$name.log" >&2
    echo "FAIL: smoke $name (target/smoke/$name.log)" >&2
    exit 1
  fi
}
only=("$@")
mkdir -p target/smoke
# The test build's binaries (scripts/ci-cargo.sh: shared with scripts/test.sh's).
scripts/ci-cargo.sh test -q --no-run
scripts/ci-cargo.sh test -q --no-run --example eval_loop
smoke generator-scale GEN=target/ci/httproute-nginx scripts/bench/generator-scale.sh --quick
smoke engine-callgrind EVAL_LOOP=target/ci/examples/eval_loop N1=10 N2=110 \
  scripts/bench/engine-callgrind.sh header mixed_1000
smoke h2-regex-cpu N=20 scripts/bench/h2-regex-cpu.sh
smoke jit-workers LISTS=20 scripts/bench/jit-workers.sh
smoke reload-memory LISTS=100 RELOADS=2 TRAFFIC=1 scripts/bench/reload-memory.sh
smoke rss-drift REQUESTS=2000 WARMUP_SECONDS=2 scripts/bench/rss-drift.sh
smoke soak DURATION=5 scripts/bench/soak.sh
smoke valgrind-routing ROUTING_LIST_N=50 scripts/bench/valgrind-routing.sh
smoke memcheck MEMCHECK_TESTS=example scripts/bench/memcheck.sh
smoke invariants-long GEN=target/ci/httproute-nginx scripts/bench/invariants-long.sh
smoke ngf-scale "${njs[@]}" BENCH_GENERATOR=$PWD/target/ci/httproute-nginx NGF_SCALE_SIZES=10 \
  scripts/bench/ngf-scale.sh
# One native row of each kind (plain, same request, long request, map) and the module rows
# compared with them (a carrier, a map carrier, a long list), so the report's Targets run.
smoke bench BENCH_SKIP_ENGINE=1 BENCH_ROUNDS=1 BENCH_WRK_SECONDS=1 \
  BENCH_ONLY='^(floor: return 200|native internal redirect(, (header request|long request v=0))?|native map, header rule wins|module inline, header rule wins|module \$http_matches from a map, header rule wins|module, 10 entries, winner first)$' \
  scripts/bench/bench.sh
smoke epp-latency N=5 ROUNDS=1 RUN_SECONDS=1 scripts/bench/epp-latency.sh
echo "smoke: every measurement script ran"
