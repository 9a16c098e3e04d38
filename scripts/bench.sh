#!/usr/bin/env bash
# Benchmarks the module against native NGINX routing and njs, side by side, in one run, on
# Debian's NGINX 1.22.1 (the module is built for it). Writes docs/BENCHMARKS.md and
# docs/benchmarks.png. Takes about 10-15 minutes on 2 cores.
#   NJS_HTTPMATCHES=/path/to/httpmatches.js       NGF's current script: adds the njs rows
#   NJS_HTTPMATCHES_BLOG=/path/to/httpmatches.js  NGF v1.2.0's (blog-era $http_matches) script
# Neither script is part of this repository (and must not be committed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh valgrind wrk libnginx-mod-http-js python3-matplotlib
out=$(scripts/build.sh --system)
export BENCH_MODULE BENCH_NGINX
BENCH_MODULE=$(echo "$out" | sed -n 's/^module=//p' | tail -n 1)
BENCH_NGINX=$(echo "$out" | sed -n 's/^nginx=//p' | tail -n 1)
# The engine alone first (criterion); bench.py puts its medians beside the NGINX figures.
rm -rf target/criterion
cargo bench -p route-match --bench evaluate >&2
# The system Python has matplotlib from Debian's python3-matplotlib.
exec /usr/bin/python3 scripts/bench.py
