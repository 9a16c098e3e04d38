#!/usr/bin/env bash
# Installs what is missing, builds everything, runs every test. Fails loudly on anything.
#   engine tests (no NGINX) -> module build (vendored NGINX 1.28) -> end-to-end tests that start
#   a real NGINX with the module loaded.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==== %s\n' "$*"; }

step "dependencies"
scripts/install-deps.sh
# One value for every cargo call, or nginx-sys rebuilds NGINX between them.
export NGX_CONFIGURE_ARGS=${NGX_CONFIGURE_ARGS:---with-debug}

step "format"
cargo fmt --all -- --check

step "clippy"
cargo clippy --workspace --all-targets --release -- -D warnings

step "engine tests (no NGINX)"
cargo test --release

step "module build"
out=$(scripts/build.sh)
echo "$out" | tail -n 2
module=$(echo "$out" | sed -n 's/^module=//p' | tail -n 1)
nginx=$(echo "$out" | sed -n 's/^nginx=//p' | tail -n 1)
"$nginx" -V 2>&1 | head -n 1

step "end-to-end tests against $nginx"
NGX_MATCHES_MODULE=$module NGX_MATCHES_NGINX=$nginx cargo test -p ngx-http-matches --release

step "all tests passed"
