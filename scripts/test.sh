#!/usr/bin/env bash
# Installs what is missing, builds everything, runs every test. Fails loudly on anything.
#   scripts/test.sh           format, clippy, engine tests (no NGINX), then the module against
#                             the vendored NGINX 1.28 and the end-to-end tests on a real NGINX
#   scripts/test.sh --system  the end-to-end tests against Debian's /usr/sbin/nginx (1.22),
#                             with the module built for it (installs nginx + nginx-dev)
#   scripts/test.sh --addon   the module built as an NGINX addon (configure
#                             --add-dynamic-module + make modules), loaded into NGINX 1.28,
#                             through the harness tests and a smoke subset of the end-to-end
#                             tests (the default mode runs all of them on the same source)
#   scripts/test.sh --package the Debian packages (scripts/package.sh) installed with apt:
#                             the stock `nginx -t` with the module enabled, the end-to-end
#                             and harness tests against /usr/sbin/nginx and the installed
#                             module, then purge, and NGINX still loads and starts
#   scripts/test.sh --static  NGINX 1.28 built with the module linked in (--add-module,
#                             scripts/build-addon.sh --static), through the harness tests
#   scripts/test.sh --nginx-suite
#                             NGINX's own test suite against the vendored 1.28, without and
#                             with the module loaded: no test may fail because of it
#                             (scripts/nginx-suite.sh)
# The default, --package, --addon and --static modes run the harness tests (t/*.t, by prove
# with nginx-tests' Test::Nginx) against their NGINX; nginx-tests is found as below
# (find_nginx_tests).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==== [%s s] %s\n' "$SECONDS" "$*"; }
mode=${1:-}

step "dependencies"
scripts/install-deps.sh
# One value for every cargo call, or nginx-sys rebuilds NGINX between them.
export NGX_CONFIGURE_ARGS=${NGX_CONFIGURE_ARGS:---with-debug}
# The test binaries, and the commands the tests run, are built by scripts/ci-cargo.sh: one
# selection and one NGINX tree for every call, so no step rebuilds another's crates. The
# module .so and the NGINX the tests load are built with `release` (scripts/build.sh), as
# they ship.
# shellcheck source=scripts/lib/built.sh
. scripts/lib/built.sh
bin=$PWD/target/ci

field() { sed -n "s/^$1=//p" | tail -n 1; }

# root_tests: --test NAME for each of the root crate's end-to-end test files (tests/*.rs).
root_tests() {
  local f
  for f in tests/*.rs; do printf -- '--test %s ' "$(basename "$f" .rs)"; done
}

# e2e MODULE NGINX [ARGS...]: `cargo test` (scripts/ci-cargo.sh: the whole workspace, so the
# engine tests too, unless ARGS narrow it, e.g. $(root_tests)) with the end-to-end tests
# against MODULE in NGINX.
e2e() {
  local module=$1 nginx=$2
  shift 2
  # sed, not head: head would close the pipe early and SIGPIPE (exit 141) would fail the
  # script under pipefail.
  "$nginx" -V 2>&1 | sed -n 1p
  step "tests (the end-to-end ones: $module in $nginx; umask 077)"
  # umask 077 and a 0700 scratch root (tests/common): whatever the tests write is readable by
  # root alone, so a test that needs NGINX's worker user to read a file of the checkout
  # fails here, as it would for a user whose checkout is private.
  # The generator command (tests/reload_flow.rs) and the fake EPP (tests/epp_grpc_proxy.rs:
  # tonic + envoy-types), built from this checkout with the test binaries.
  scripts/ci-cargo.sh test --no-run
  # tests/epp_njs.rs's njs side (NGF's epp.js on njs 1.0.1 for Debian's NGINX), from the
  # shared/ folder beside the checkout. .ci/run exports NGX_MATCHES_REQUIRE_NJS=1, so in CI a
  # missing njs side fails the test instead of skipping it; elsewhere it skips, loudly.
  local shared njs=()
  shared=$(cd .. && pwd)/shared
  if [ -f "$shared/njs-1.0.1/ngx_http_js_module.so" ]; then
    njs+=(NGX_MATCHES_NJS_MODULE="$shared/njs-1.0.1/ngx_http_js_module.so"
      NGX_MATCHES_EPP_JS="$shared/reference/ngf/epp.js")
  fi
  (umask 077 && env "${njs[@]}" NGX_MATCHES_MODULE="$module" NGX_MATCHES_NGINX="$nginx" \
    HTTPROUTE_NGINX_BIN="$bin/httproute-nginx" FAKE_EPP_BIN="$bin/fake-epp" \
    scripts/ci-cargo.sh test "$@")
}

# nginx-tests, the NGINX test harness (not on any registry): NGINX_TESTS_DIR when set (and it
# must hold the harness), else ../nginx-tests beside the checkout, else a shallow clone into
# target/nginx-tests. Not found: the harness tests are skipped, loudly; the rest still runs.
nginx_tests=
find_nginx_tests() {
  local clone=target/nginx-tests
  if [ -n "${NGINX_TESTS_DIR:-}" ]; then
    [ -f "$NGINX_TESTS_DIR/lib/Test/Nginx.pm" ] \
      || { echo "FAIL: NGINX_TESTS_DIR=$NGINX_TESTS_DIR holds no nginx-tests (lib/Test/Nginx.pm)" >&2; exit 1; }
    nginx_tests=$(cd "$NGINX_TESTS_DIR" && pwd)
  elif [ -f ../nginx-tests/lib/Test/Nginx.pm ]; then
    nginx_tests=$(cd ../nginx-tests && pwd)
  elif [ -f "$clone/lib/Test/Nginx.pm" ]; then
    nginx_tests=$PWD/$clone
  elif rm -rf "$clone" && timeout 30 git clone -q --depth 1 https://github.com/nginx/nginx-tests "$clone" 2>/dev/null \
    && [ -f "$clone/lib/Test/Nginx.pm" ]; then
    nginx_tests=$PWD/$clone
  else
    rm -rf "$clone"
  fi
  [ -z "$nginx_tests" ] || echo "nginx-tests: $nginx_tests"
}

# harness MODULE NGINX [VAR=VALUE...]: the t/*.t files against NGINX, with MODULE loaded
# (an absolute path; empty when NGINX has it built in). As root, the workers run as root:
# the harness writes its files in a private temp directory.
harness() {
  local module=$1 nginx=$2
  shift 2
  if [ -z "$nginx_tests" ]; then
    printf '\n==== SKIPPED: the harness tests (t/*.t): no nginx-tests. Set NGINX_TESTS_DIR=/path/to/nginx-tests, or: git clone https://github.com/nginx/nginx-tests ../nginx-tests\n'
    return 0
  fi
  step "harness tests (t/*.t, nginx-tests' Test::Nginx): $nginx"
  local globals=
  [ -z "$module" ] || globals="load_module $(realpath "$module");"
  [ "$(id -u)" -ne 0 ] || globals="$globals user root;"
  # t/http_matches_epp_grpc.t's EPP (tonic + envoy-types, feature fake).
  scripts/ci-cargo.sh test --no-run
  # TEST_NGINX_MATCHES_REQUIRED: a file that would skip for want of the module fails instead.
  env TEST_NGINX_BINARY="$nginx" TEST_NGINX_GLOBALS="$globals" TEST_NGINX_MATCHES_REQUIRED=1 \
    TEST_NGINX_FAKE_EPP="$bin/fake-epp" "$@" prove -j2 -I "$nginx_tests/lib" t/
}

find_nginx_tests

case "$mode" in
  --system)
    step "module build for Debian's NGINX"
    out=$(scripts/build.sh --system)
    # shellcheck disable=SC2046
    e2e "$(echo "$out" | field module)" "$(echo "$out" | field nginx)" $(root_tests)
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
    # shellcheck disable=SC2046
    e2e /usr/lib/nginx/modules/ngx_http_matches_module.so /usr/sbin/nginx $(root_tests)
    # The harness loads every module Debian's NGINX was configured with as dynamic
    # (`nginx -V`) from TEST_NGINX_MODULES: install the ones missing, purge them after.
    extra=()
    for p in libnginx-mod-http-geoip libnginx-mod-http-image-filter libnginx-mod-http-perl \
      libnginx-mod-http-xslt-filter libnginx-mod-mail libnginx-mod-stream libnginx-mod-stream-geoip; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || extra+=("$p")
    done
    purge_extra() {
      [ ${#extra[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${extra[@]}" >/dev/null
    }
    if [ -n "$nginx_tests" ] && [ ${#extra[@]} -gt 0 ]; then
      trap purge_extra EXIT
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${extra[@]}" >/dev/null
    fi
    harness /usr/lib/nginx/modules/ngx_http_matches_module.so /usr/sbin/nginx \
      TEST_NGINX_MODULES=/usr/lib/nginx/modules
    if [ -n "$nginx_tests" ]; then
      purge_extra
      trap - EXIT
    fi
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
    # The addon build differs from the default mode's only in how the .so is built: a smoke
    # subset here (routing, HTTP/2, bounds, hostile requests); the harness below is complete.
    e2e "$(echo "$out" | field module)" "$(echo "$out" | field nginx)" \
      --test http_matches --test http2 --test bounds --test hostile
    harness "$(echo "$out" | field module)" "$(echo "$out" | field nginx)"
    ;;
  --static)
    step "NGINX built with the module linked in (--add-module)"
    nginx=$(scripts/build-addon.sh --static | field nginx)
    "$nginx" -V 2>&1 | sed -n 1p
    [ -n "$nginx_tests" ] || { echo "FAIL: --static runs the harness tests: no nginx-tests" >&2; exit 1; }
    harness "" "$nginx"
    ;;
  --nginx-suite)
    step "module build (vendored NGINX)"
    out=$(scripts/build.sh)
    echo "$out" | tail -n 2
    [ -n "$nginx_tests" ] || { echo "FAIL: --nginx-suite needs nginx-tests" >&2; exit 1; }
    step "NGINX's own test suite, without and with the module (scripts/nginx-suite.sh)"
    NGINX_TESTS_DIR=$nginx_tests scripts/nginx-suite.sh "$(echo "$out" | field module)" "$(echo "$out" | field nginx)"
    ;;
  "")
    step "format"
    cargo fmt --all -- --check
    step "the docs name only tests and files that exist (scripts/check-docs.sh)"
    scripts/check-docs.sh
    # First, so that every later build binds to this NGINX instead of compiling its own
    # (scripts/ci-cargo.sh).
    step "module build (vendored NGINX)"
    out=$(scripts/build.sh)
    echo "$out" | tail -n 2
    module=$(echo "$out" | field module) nginx=$(echo "$out" | field nginx)
    step "clippy (with the fake EPP: tonic, envoy-types)"
    scripts/ci-cargo.sh clippy --all-targets -- -D warnings
    # Every test of the workspace at once: the engine's (no NGINX), the fake EPP's against
    # epp-proto's codec, and the end-to-end tests on the module and NGINX just built.
    e2e "$module" "$nginx"
    step "the nginx.conf writer read back by crossplane (scripts/conf-roundtrip.sh)"
    scripts/conf-roundtrip.sh
    step "fuzz smoke: 15 s of each libFuzzer target (scripts/fuzz.sh)"
    scripts/fuzz.sh 15
    step "every measurement script at tiny sizes (scripts/bench/smoke.sh)"
    scripts/bench/smoke.sh
    step "nginx -t on 200 configurations of the generator fuzz corpus (scripts/fuzz-nginx-t.sh)"
    scripts/fuzz-nginx-t.sh 200
    harness "$module" "$nginx"
    step "panic containment (a module built --features panic-test, in target/panic)"
    # Against the NGINX tree just built, so target/panic does not build NGINX a second time;
    # the `ci` profile, as the other test builds (no link-time optimisation).
    # shellcheck disable=SC2046
    env $(vendored_tree) CARGO_TARGET_DIR=$PWD/target/panic \
      cargo build -p ngx-http-matches --profile ci --features panic-test
    NGX_MATCHES_PANIC_MODULE=$PWD/target/panic/ci/libngx_http_matches.so NGX_MATCHES_NGINX=$nginx \
      scripts/ci-cargo.sh test --test panic -- --ignored
    ;;
  *)
    echo "usage: scripts/test.sh [--system | --addon | --package | --static | --nginx-suite]" >&2
    exit 2
    ;;
esac
step "all tests passed ($mode)"
