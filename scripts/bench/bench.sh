#!/usr/bin/env bash
# Benchmarks the module against native NGINX routing and njs, side by side, in one run, on
# Debian's NGINX 1.22.1 (the module is built for it). Writes docs/BENCHMARKS.md and
# docs/benchmarks.png. Takes about 10-15 minutes on 2 cores.
#   NJS_HTTPMATCHES=/path/to/httpmatches.js       NGF's current script: adds the njs rows
#   NJS_HTTPMATCHES_BLOG=/path/to/httpmatches.js  NGF v1.2.0's (blog-era $http_matches) script
#   NJS_MODULE=/path/to/ngx_http_js_module.so    the njs to run them with (e.g. njs 1.0.1, what
#                                                 NGF ships, built for Debian's 1.22.1), or
#   NJS_SRC=/path/to/njs                          an njs checkout, built here for Debian's NGINX
#                                                 (scripts/bench/njs.sh); default: Debian's 0.7.9
#   BENCH_SKIP_ENGINE=1                           no criterion run (keeps the last one's figures)
#   BENCH_EPP=1                                   only the endpoint-picker comparison (#32):
#                                                 NGF's epp.js on njs vs http_matches_epp vs
#                                                 auth_request + proxy_pass, instructions per
#                                                 request and worker RSS, printed as the table
#                                                 of docs/BENCHMARKS.md's epp section
#                                                 (scripts/bench/bench_epp.py; EPP_JS=/path/to/epp.js,
#                                                 NJS_MODULE as above); a minute or two
# Neither script is part of this repository (and must not be committed).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install-deps.sh valgrind wrk python3-matplotlib
out=$(scripts/build.sh --system)
export BENCH_MODULE BENCH_NGINX
BENCH_MODULE=$(echo "$out" | sed -n 's/^module=//p' | tail -n 1)
BENCH_NGINX=$(echo "$out" | sed -n 's/^nginx=//p' | tail -n 1)
if [ -n "${BENCH_EPP:-}" ]; then
  # shellcheck source=scripts/bench/njs.sh
  . scripts/bench/njs.sh
  njs_select "$BENCH_NGINX"
  exec /usr/bin/python3 scripts/bench/bench_epp.py
fi
if [ -n "${NJS_HTTPMATCHES:-}${NJS_HTTPMATCHES_BLOG:-}" ]; then
  # shellcheck source=scripts/bench/njs.sh
  . scripts/bench/njs.sh
  njs_select "$BENCH_NGINX"
fi
# The engine alone first (criterion); bench.py puts its medians beside the NGINX figures.
if [ -z "${BENCH_SKIP_ENGINE:-}" ]; then
  rm -rf target/criterion
  cargo bench -p route-match --bench evaluate >&2
fi
# The system Python has matplotlib from Debian's python3-matplotlib.
exec /usr/bin/python3 scripts/bench/bench.py
