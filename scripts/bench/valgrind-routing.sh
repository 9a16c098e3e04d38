#!/usr/bin/env bash
# Load does not change routing (issue #22): the realistic 1,000-regex list (tenant ids,
# version strings, user-agent fragments, (?i) regions, hex build ids; the winner last) routes
# the same requests natively and with NGINX under valgrind memcheck (~30-50x slower). Fails on any
# difference. With the old wall-clock budget the last entry answered 404 under valgrind.
# ~1-2 minutes; CI runs it on 50 entries (scripts/bench/smoke.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/built.sh
. scripts/lib/prefix.sh
scripts/install-deps.sh valgrind
# NGX_MATCHES_MODULE / NGX_MATCHES_NGINX (as for the tests): another build, e.g. an older one.
if [ -n "${NGX_MATCHES_MODULE:-}" ] && [ -n "${NGX_MATCHES_NGINX:-}" ]; then
  module=$NGX_MATCHES_MODULE nginx=$NGX_MATCHES_NGINX
else
  build_module >/dev/null
fi
vg=$(command -v valgrind.bin || command -v valgrind)
port=${PORT:-18323}
route() {
  local wrapper=$1 dir
  dir=$(mktemp -d)
  write_prefix "$dir" "$module" off "
    http_matches_load matches.json;
    server {
      listen 127.0.0.1:$port;
      location /r/ { internal; return 200 \"\$uri\"; }
      location = /t { set \$match_key k; http_matches; }
    }"
  python3 scripts/bench/routing_list.py list >"$dir/conf/matches.json"
  $wrapper "$nginx" -p "$dir/" -c conf/nginx.conf &
  local master=$!
  for _ in $(seq 1200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  python3 scripts/bench/routing_list.py requests "$port"
  kill -QUIT "$master"; wait "$master" || true
  grep -h "gave up" "$dir/logs/error.log" >&2 || true
  rm -rf "$dir"
}
native=$(route "")
echo "native:"; echo "$native"
slow=$(route "$vg --tool=memcheck --trace-children=yes -q")
if [ "$native" != "$slow" ]; then
  echo "valgrind-routing: answers differ under valgrind:" >&2
  diff <(echo "$native") <(echo "$slow") >&2
  exit 1
fi
echo "valgrind-routing: $(echo "$native" | wc -l) requests, the same answers natively and under valgrind"
