#!/usr/bin/env bash
# Installs what is missing, builds everything, runs every test. Fails loudly on anything.
#   scripts/test.sh           format, clippy, engine tests (no NGINX), then the module against
#                             the vendored NGINX 1.28 and the end-to-end tests on a real NGINX
#   scripts/test.sh --system  the end-to-end tests against Debian's /usr/sbin/nginx (1.22),
#                             with the module built for it (installs nginx + nginx-dev)
#   scripts/test.sh --addon   the module built as an NGINX addon (configure
#                             --add-dynamic-module + make modules), loaded into NGINX 1.28,
#                             through the end-to-end tests
#   scripts/test.sh --package the Debian packages (scripts/package.sh) installed with apt:
#                             the stock `nginx -t` with the module enabled, the end-to-end
#                             tests against /usr/sbin/nginx and the installed module, then
#                             purge, and NGINX still loads and starts
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
  step "end-to-end tests: $module in $nginx (umask 077)"
  # umask 077 and a 0700 scratch root (tests/common): whatever the tests write is readable by
  # root alone, so a test that needs NGINX's worker user to read a file of the checkout
  # fails here, as it would for a user whose checkout is private.
  (umask 077 && NGX_MATCHES_MODULE=$module NGX_MATCHES_NGINX=$nginx cargo test -p ngx-http-matches --release)
}

field() { sed -n "s/^$1=//p" | tail -n 1; }

case "$mode" in
  --system)
    step "module build for Debian's NGINX"
    out=$(scripts/build.sh --system)
    e2e "$(echo "$out" | field module)" "$(echo "$out" | field nginx)"
    ;;
  --package)
    step "Debian packages"
    debs=$(scripts/package.sh | sed -n 's/^deb=//p')
    echo "$debs"
    step "install with apt"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $debs >/dev/null
    link=/etc/nginx/modules-enabled/50-mod-http-matches.conf
    [ -L "$link" ] || { echo "FAIL: $link was not created" >&2; exit 1; }
    /usr/sbin/nginx -t
    # Not `nginx -T | grep -q`: grep's early exit would fail the pipe (pipefail).
    full=$(/usr/sbin/nginx -T 2>/dev/null)
    grep -q "load_module modules/ngx_http_matches_module.so;" <<<"$full" \
      || { echo "FAIL: the stock configuration does not load the module" >&2; exit 1; }
    httproute-nginx --version
    # The installed generator writes for the installed NGINX: a GRPCRoute beside an HTTPRoute
    # passes its `nginx -t` (1.22 has no `http2` directive).
    gen=$(mktemp -d)
    cat >"$gen/routes.yaml" <<'YAML'
kind: Gateway
metadata: {name: gw}
spec: {listeners: [{name: web, port: 18081, protocol: HTTP}, {name: grpc, port: 18082, protocol: HTTP}]}
---
kind: HTTPRoute
metadata: {name: web}
spec: {parentRefs: [{name: gw, sectionName: web}], rules: [{backendRefs: [{name: web, port: 80}]}]}
---
kind: GRPCRoute
metadata: {name: echo}
spec: {parentRefs: [{name: gw, sectionName: grpc}], rules: [{matches: [{method: {service: a.B}}], backendRefs: [{name: g, port: 80}]}]}
YAML
    httproute-nginx generate -f "$gen/routes.yaml" --backend default/web:80=127.0.0.1:9 \
      --backend default/g:80=127.0.0.1:9 -o "$gen/out" \
      --module /usr/lib/nginx/modules/ngx_http_matches_module.so
    grep -q "listen 18082 http2" "$gen/out/nginx.conf" \
      || { echo "FAIL: the packaged generator did not write for the installed NGINX" >&2; exit 1; }
    /usr/sbin/nginx -t -p "$gen/out/" -c nginx.conf
    rm -rf "$gen"
    e2e /usr/lib/nginx/modules/ngx_http_matches_module.so /usr/sbin/nginx
    step "purge"
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq libnginx-mod-http-matches httproute-nginx >/dev/null
    if ls "$link"* 2>/dev/null; then echo "FAIL: $link left behind" >&2; exit 1; fi
    [ ! -e /usr/lib/nginx/modules/ngx_http_matches_module.so ] || { echo "FAIL: module left" >&2; exit 1; }
    /usr/sbin/nginx -t
    # NGINX still starts with the stock configuration (when its port 80 is free here).
    if (exec 3<>/dev/tcp/127.0.0.1/80) 2>/dev/null; then
      echo "port 80 is in use: not starting the stock NGINX"
    else
      /usr/sbin/nginx
      sleep 0.5
      (exec 3<>/dev/tcp/127.0.0.1/80) || { echo "FAIL: NGINX did not start" >&2; exit 1; }
      /usr/sbin/nginx -s quit
      echo "the stock NGINX started and stopped"
    fi
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
    step "the nginx.conf writer read back by crossplane (scripts/conf-roundtrip.sh)"
    scripts/conf-roundtrip.sh
    step "fuzz smoke: 15 s of each libFuzzer target (scripts/fuzz.sh)"
    scripts/fuzz.sh 15
    step "module build (vendored NGINX)"
    out=$(scripts/build.sh)
    echo "$out" | tail -n 2
    step "nginx -t on 200 configurations of the generator fuzz corpus (scripts/fuzz-nginx-t.sh)"
    scripts/fuzz-nginx-t.sh 200
    e2e "$(echo "$out" | field module)" "$(echo "$out" | field nginx)"
    step "panic containment (a module built --features panic-test, in target/panic)"
    CARGO_TARGET_DIR=$PWD/target/panic cargo build -p ngx-http-matches --release --features panic-test
    NGX_MATCHES_PANIC_MODULE=$PWD/target/panic/release/libngx_http_matches.so \
      NGX_MATCHES_NGINX=$(echo "$out" | field nginx) cargo test -p ngx-http-matches --release --test panic
    ;;
  *)
    echo "usage: scripts/test.sh [--system | --addon | --package]" >&2
    exit 2
    ;;
esac
step "all tests passed ($mode)"
