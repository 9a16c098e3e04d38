#!/usr/bin/env bash
# The EPP call's latency per request, NGF's shim path (a new gRPC connection per request)
# against the module's grpc:// and grpcs:// with and without upstream keepalive, in one run on the vendored
# NGINX (issue #47; docs/BENCHMARKS.md's endpoint picker section): scripts/bench/epp_latency.py.
# Asserts counts only (EPP connections per request, answers, error log), never a time.
#   N=1000 scripts/bench/epp-latency.sh      N rounds of GET + POST 1 KB to each mode, then
#   CLIENTS=8 ROUNDS=3 RUN_SECONDS=2     wrk runs of CLIENTS connections per mode (0: none)
set -euo pipefail
cd "$(dirname "$0")/../.."
export NGX_CONFIGURE_ARGS=${NGX_CONFIGURE_ARGS:---with-debug}
scripts/install-deps.sh wrk
# shellcheck source=scripts/lib/built.sh
. scripts/lib/built.sh
build_module >/dev/null
scripts/ci-cargo.sh test -q --no-run
BENCH_MODULE=$module BENCH_NGINX=$nginx BENCH_PORT=${BENCH_PORT:-18490} \
  FAKE_EPP=$PWD/target/ci/fake-epp FAKE_SHIM=$PWD/target/ci/fake-shim \
  exec /usr/bin/python3 scripts/bench/epp_latency.py
