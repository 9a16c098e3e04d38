#!/usr/bin/env bash
# Builds the module, starts NGINX with it on the NGF blog example, shows a few requests.
#   scripts/run.sh            serve on 127.0.0.1:8080 until Ctrl-C
#   PORT=9090 scripts/run.sh  another port
#   scripts/run.sh --once     show the requests, then stop (used to check this script)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
port=${PORT:-8080}
once=${1:-}

scripts/install-deps.sh curl
export NGX_CONFIGURE_ARGS=${NGX_CONFIGURE_ARGS:---with-debug}
echo "building the module (the first build also builds NGINX 1.28, about a minute)..."
# shellcheck source=scripts/lib/built.sh
. scripts/lib/built.sh
# Quiet unless it fails; then again with the build's output.
build_module 2>/dev/null || { scripts/build.sh; exit 1; }

prefix=$root/.scratch/run
# shellcheck source=scripts/lib/prefix.sh
. scripts/lib/prefix.sh
write_prefix "$prefix" "$module" logs/access.log \
  "$(sed "s/{PORT}/$port/g" nginx-conf/example/http.conf | sed 's/^/    /')"
cp nginx-conf/example/matches.json "$prefix/conf/matches.json"

run_nginx() { "$nginx" -p "$prefix/" -c conf/nginx.conf "$@"; }
run_nginx -t -q
run_nginx &
pid=$!
stop() { run_nginx -s quit 2>/dev/null || kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
trap 'echo; echo "stopping NGINX"; stop; exit 0' INT TERM
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.05
done

echo
echo "NGINX $("$nginx" -v 2>&1 | sed 's/.*nginx\///') with $module"
echo "configuration: $prefix/conf/nginx.conf (lists in $prefix/conf/matches.json)"
echo
show() {
  local shown=""
  for a in "$@"; do case $a in *" "*|*"?"*|*"&"*) shown+=" '$a'";; *) shown+=" $a";; esac; done
  echo "\$ curl$shown"
  curl -s "$@" | sed 's/^/  /'
}
show "http://127.0.0.1:$port/coffee"
show -H "version: v2" "http://127.0.0.1:$port/coffee"
show "http://127.0.0.1:$port/coffee/latte?TEST=v2"
show -H "version: v1, v2" "http://127.0.0.1:$port/coffee?x=a+b%20c"
echo "\$ curl -i http://127.0.0.1:$port/tea   (no route: 404)"
curl -s -o /dev/null -w '  HTTP %{http_code}\n' "http://127.0.0.1:$port/tea"
echo
echo "error log: $prefix/logs/error.log"

if [ "$once" = "--once" ]; then
  stop
  exit 0
fi
echo "serving on 127.0.0.1:$port; Ctrl-C stops NGINX"
wait "$pid"
