#!/usr/bin/env bash
# NGINX's own test suite (nginx-tests) run twice against one NGINX at once: without the module,
# and with it loaded through TEST_NGINX_GLOBALS. Fails when a test that passes without the module
# fails with it (or a file that passed fails, or its tests go missing); reports files, tests,
# skips and failures of both runs and every difference (scripts/lib/suite-compare.py).
#   scripts/nginx-suite.sh MODULE.so NGINX
# NGINX_TESTS_DIR: the nginx-tests checkout (scripts/test.sh finds it). SUITE_JOBS: files run
# at once (default 4: most of the suite waits on timers and sockets, not on the CPU).
# SUITE_FILES: a subset, e.g. "h2*.t proxy.t" (default: every *.t).
#
# As root, the suite runs as `nobody`: its files are written to private temp directories
# (mode 0700), which workers running as `nobody` cannot read unless the globals say
# `user root;`, and proxy_bind_transparent.t sets `user root wheel;` itself, which would then
# be a duplicate "user" (and Debian has no `wheel` group). Unprivileged, NGINX ignores `user`,
# and the two files that need root (proxy_bind_transparent*.t) skip in both runs.
# The records are kept in target/nginx-suite/ (base.tsv, with.tsv, compare.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
module=${1:?usage: scripts/nginx-suite.sh MODULE.so NGINX}
nginx=${2:?usage: scripts/nginx-suite.sh MODULE.so NGINX}
jobs=${SUITE_JOBS:-4}
tests=${NGINX_TESTS_DIR:?set NGINX_TESTS_DIR to an nginx-tests checkout}
[ -f "$tests/lib/Test/Nginx.pm" ] || { echo "nginx-suite: no nginx-tests harness in $tests" >&2; exit 1; }
[ -f "$module" ] && [ -x "$nginx" ] || { echo "nginx-suite: need a module and an nginx binary" >&2; exit 1; }
# IO::Socket::SSL: without it the suite skips its ~50 TLS files.
scripts/install-deps.sh libio-socket-ssl-perl

out=$root/target/nginx-suite
rm -rf "$out"
mkdir -p "$out"
# A scratch copy readable by the unprivileged user: the binary, the module and the suite
# (the checkout, or the suite's own directory, may be private to root).
scratch=$(mktemp -d /tmp/nginx-suite.XXXXXX)
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
chmod 755 "$scratch"
mkdir -p "$scratch/bin" "$scratch/tmp" "$scratch/rec"
cp "$nginx" "$scratch/bin/nginx"
cp "$module" "$scratch/bin/ngx_http_matches_module.so"
cp -a "$tests" "$scratch/nginx-tests"
chmod -R a+rX "$scratch/bin" "$scratch/nginx-tests"
cp "$root/scripts/lib/tap-record.pl" "$scratch/bin/"

as_user=()
if [ "$(id -u)" -eq 0 ]; then
  chown nobody "$scratch/tmp" "$scratch/rec"
  as_user=(runuser -u nobody --)
fi

"$scratch/bin/nginx" -V 2>&1 | sed -n 1p

# run NAME GLOBALS FILE...: one pass over FILES, recorded in $scratch/rec/NAME.tsv.
run() {
  local name=$1 globals=$2
  shift 2
  local start=$SECONDS
  (cd "$scratch/nginx-tests" && "${as_user[@]}" env -u TEST_NGINX_GLOBALS_HTTP -u TEST_NGINX_LEAVE \
    HOME="$scratch/tmp" TMPDIR="$scratch/tmp" TEST_NGINX_BINARY="$scratch/bin/nginx" \
    TEST_NGINX_GLOBALS="$globals" \
    perl "$scratch/bin/tap-record.pl" "$scratch/rec/$name.tsv" "$jobs" "$@")
  cp "$scratch/rec/$name.tsv" "$out/"
  echo "nginx-suite: $name: $# files in $((SECONDS - start)) s"
}

load="load_module $scratch/bin/ngx_http_matches_module.so;"
cd "$scratch/nginx-tests"
# shellcheck disable=SC2086
files=(${SUITE_FILES:-*.t})
cd "$root"
# Both runs at once: each waits on timers and sockets far more than it computes (~90 CPU
# seconds in ~165 s here), so side by side they take the time of one, and both see the same
# load. A test that fails with the module and passes without it is run again alone, both
# ways, below.
run base "" "${files[@]}" &
base=$!
run with "$load" "${files[@]}" &
with=$!
rc=0
wait "$base" || rc=$?
wait "$with" || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"

if python3 scripts/lib/suite-compare.py "$out/base.tsv" "$out/with.tsv" "$out/broken" | tee "$out/compare.txt"; then
  exit 0
fi
# A second look, one file at a time, at the files that differ: a suite test that depends on
# timing can fail once under load. Only a failure with the module that passes without it
# again counts.
mapfile -t again <"$out/broken"
[ ${#again[@]} -gt 0 ] || exit 1
echo "nginx-suite: running again, one at a time: ${again[*]}"
jobs=1
run base-again "" "${again[@]}"
run with-again "$load" "${again[@]}"
python3 scripts/lib/suite-compare.py "$out/base-again.tsv" "$out/with-again.tsv" | tee "$out/compare-again.txt"
