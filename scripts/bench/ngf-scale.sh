#!/usr/bin/env bash
# NGF-shaped configurations (R HTTPRoutes x 3 rules, written by httproute-nginx), the module
# against njs and against a plain `return 200`, on Debian's NGINX 1.22.1: `nginx -t`, startup,
# RSS/PSS after start and traffic, reload time, private memory during a reload. Writes the NGF
# section of docs/BENCHMARKS.md and docs/ngf-scale.png. About 10 minutes on 2 cores.
#   NJS_HTTPMATCHES=/path/to/httpmatches.js   NGF's script (not part of this repository): adds njs
#   NJS_MODULE=/path/to/ngx_http_js_module.so  the njs to compare with (e.g. njs 1.0.1, what NGF
#                                             ships, built for Debian's 1.22.1), or
#   NJS_SRC=/path/to/njs                      an njs checkout, built here for Debian's NGINX
#                                             (scripts/bench/njs.sh); default: Debian's njs 0.7.9
#   NGF_SCALE_SIZES=200,1000,3000,10000       the values of R
#   NGF_SCALE_REPORT_ONLY=1                   rewrite the section and plot from the last results
#   BENCH_GENERATOR=/path/to/httproute-nginx  a generator built elsewhere (default: release)
#   SMOKE=1                                   leave docs/ as they are (scripts/bench/smoke.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install-deps.sh python3-matplotlib
out=$(scripts/build.sh --system)
export BENCH_MODULE BENCH_NGINX BENCH_GENERATOR
BENCH_MODULE=$(echo "$out" | sed -n 's/^module=//p' | tail -n 1)
BENCH_NGINX=$(echo "$out" | sed -n 's/^nginx=//p' | tail -n 1)
if [ -n "${NJS_HTTPMATCHES:-}" ] && [ -z "${NGF_SCALE_REPORT_ONLY:-}" ]; then
  # shellcheck source=scripts/bench/njs.sh
  . scripts/bench/njs.sh
  njs_select "$BENCH_NGINX"
fi
if [ -z "${BENCH_GENERATOR:-}" ]; then
  cargo build -q --release -p httproute-nginx
  BENCH_GENERATOR=$PWD/target/release/httproute-nginx
fi
# The system Python has matplotlib from Debian's python3-matplotlib.
exec /usr/bin/python3 scripts/bench/ngf_scale.py
