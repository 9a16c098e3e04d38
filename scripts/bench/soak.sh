#!/usr/bin/env bash
# Reload soak: wrk at 64 connections for DURATION seconds (default 60) while matches.json
# alternates between two lists and NGINX reloads every 2 s. Passes when there are no socket
# errors, no non-2xx answers, every answer comes from the old or the new list, both were seen,
# and no worker died.
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=${DURATION:-60}
port=${PORT:-18700}
scripts/install-deps.sh wrk
# shellcheck source=scripts/lib/built.sh
. scripts/lib/built.sh
build_module
p=$PWD/target/soak
# shellcheck source=scripts/lib/prefix.sh
. scripts/lib/prefix.sh
write_prefix "$p" "$module" off "    http_matches_load matches.json;
    server {
        listen 127.0.0.1:$port;
        location /t/ { internal; return 200 \"\$uri\n\"; }
        location = /k { set \$match_key k; http_matches; }
    }"
old='{"k":[{"headers":["x:Exact:1"],"redirectPath":"/t/x"},{"any":true,"redirectPath":"/t/old"}]}'
new='{"k":[{"params":["y=Exact=1"],"redirectPath":"/t/y"},{"any":true,"redirectPath":"/t/new"}]}'
echo "$old" >"$p/conf/matches.json"
cat >"$p/check.lua" <<'LUA'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0; old = 0; new = 0 end
function response(status, headers, body)
  if status ~= 200 then bad = bad + 1
  elseif body == "/t/old\n" then old = old + 1
  elseif body == "/t/new\n" then new = new + 1
  else bad = bad + 1 end
end
function done(summary, latency, requests)
  local b, o, n = 0, 0, 0
  for _, t in ipairs(threads) do b = b + t:get("bad"); o = o + t:get("old"); n = n + t:get("new") end
  io.write(string.format("answers: old=%d new=%d bad=%d\n", o, n, b))
end
LUA
start_nginx "$nginx" "$p" "$port"
# Connection: close by default. With keep-alive, an old worker closing its idle connections at
# a reload races with the client's next request on them (HTTP/1.1 allows it; clients retry),
# which wrk counts as a read error whatever the module does: KEEPALIVE=1 shows it.
close=(-H "Connection: close")
[ "${KEEPALIVE:-0}" = 1 ] && close=()
wrk -t2 -c64 -d"${duration}s" "${close[@]}" -s "$p/check.lua" "http://127.0.0.1:$port/k" >"$p/wrk.txt" &
wrk_pid=$!
reloads=0
end=$((SECONDS + duration))
while [ $SECONDS -lt $end ]; do
  sleep 2
  if [ $((reloads % 2)) -eq 0 ]; then echo "$new" >"$p/conf/matches.json.tmp"; else echo "$old" >"$p/conf/matches.json.tmp"; fi
  mv "$p/conf/matches.json.tmp" "$p/conf/matches.json"
  kill -HUP $master
  reloads=$((reloads + 1))
done
wait $wrk_pid
cat "$p/wrk.txt"
echo "reloads: $reloads"
fail=0
grep -q "answers: old=[1-9][0-9]* new=[1-9][0-9]* bad=0$" "$p/wrk.txt" || { echo "FAIL: answers"; fail=1; }
if grep -q "Socket errors" "$p/wrk.txt"; then echo "FAIL: socket errors"; fail=1; fi
if grep -q "Non-2xx" "$p/wrk.txt"; then echo "FAIL: non-2xx answers"; fail=1; fi
if grep -qE "exited on signal|\[alert\]|\[emerg\]" "$p/logs/error.log"; then echo "FAIL: error log"; grep -E "exited on signal|\[alert\]|\[emerg\]" "$p/logs/error.log" | sed -n 1,10p; fail=1; fi
[ $fail -eq 0 ] && echo "soak passed"
exit $fail
