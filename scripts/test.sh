#!/usr/bin/env bash
# Installs what is missing, builds everything, runs every test. Fails loudly on anything.
#   scripts/test.sh           format, clippy, engine tests (no NGINX), then the module against
#                             the vendored NGINX 1.28 and the end-to-end tests on a real NGINX
#   scripts/test.sh --system  the end-to-end tests against Debian's /usr/sbin/nginx (1.22),
#                             with the module built for it (installs nginx + nginx-dev)
#   scripts/test.sh --addon   the module built as an NGINX addon (configure
#                             --add-dynamic-module + make modules), loaded into NGINX 1.28,
#                             through the end-to-end tests
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==== %s\n' "$*"; }
mode=${1:-}

step "dependencies"
scripts/install-deps.sh
# One value for every cargo call, or nginx-sys rebuilds NGINX between them.
export NGX_CONFIGURE_ARGS=${NGX_CONFIGURE_ARGS:---with-debug}

e2e() {
  local module=$1 nginx=$2
  # sed, not head: head would close the pipe early and SIGPIPE (exit 141) would fail the
  # script under pipefail.
  "$nginx" -V 2>&1 | sed -n 1p
  step "end-to-end tests: $module in $nginx"
  NGX_MATCHES_MODULE=$module NGX_MATCHES_NGINX=$nginx cargo test -p ngx-http-matches --release
}

field() { sed -n "s/^$1=//p" | tail -n 1; }

case "$mode" in
  --system)
    step "module build for Debian's NGINX"
    out=$(scripts/build.sh --system)
    e2e "$(echo "$out" | field module)" "$(echo "$out" | field nginx)"
    ;;
  --addon)
    step "module build as an NGINX addon"
    out=$(scripts/build-addon.sh)
    e2e "$(echo "$out" | field module)" "$(echo "$out" | field nginx)"
    ;;
  "")
    step "format"
    cargo fmt --all -- --check
    step "clippy"
    cargo clippy --workspace --all-targets --release -- -D warnings
    step "engine tests (no NGINX)"
    cargo test --release
    step "fuzz smoke: 15 s of each libFuzzer target (scripts/fuzz.sh)"
    scripts/fuzz.sh 15
    step "module build (vendored NGINX)"
    out=$(scripts/build.sh)
    echo "$out" | tail -n 2
    e2e "$(echo "$out" | field module)" "$(echo "$out" | field nginx)"
    step "panic containment (a module built --features panic-test, in target/panic)"
    CARGO_TARGET_DIR=$PWD/target/panic cargo build -p ngx-http-matches --release --features panic-test
    NGX_MATCHES_PANIC_MODULE=$PWD/target/panic/release/libngx_http_matches.so \
      NGX_MATCHES_NGINX=$(echo "$out" | field nginx) cargo test -p ngx-http-matches --release --test panic
    ;;
  *)
    echo "usage: scripts/test.sh [--system | --addon]" >&2
    exit 2
    ;;
esac
step "all tests passed ($mode)"
