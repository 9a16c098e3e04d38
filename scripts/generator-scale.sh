#!/usr/bin/env bash
# Scale of httproute-nginx (issue 21): what the generator costs, and what NGINX then pays for
# its output. Prints tables; asserts only what does not depend on the machine's speed (sizes
# in bytes and their ratios), never a time.
#   scripts/generator-scale.sh          the three measurements below, full size
#   scripts/generator-scale.sh --quick  small sizes, for scripts/test.sh (under 30 s)
# 1. 1,000 HTTPRoutes x 10 rules on one listener (ROUTES, RULES): generation and `nginx -t`.
# 2. 300 HTTPRoutes x 64 listeners (one Gateway, 64 ports, one hostname; every route on every
#    listener): nginx.conf at most 20 times the input (asserted), matches.json, `nginx -t`
#    peak memory and time.
# 3. HTTPRoutes alone at 3 sizes (SIZES, default 12500 25000 50000; 500 hostnames, one rule
#    each, one listener): time and peak memory per route at each size and their ratios
#    between sizes (linear growth: ratios near 1), output bytes per route (asserted linear).
# Times are wall clock (`/usr/bin/time`: %e seconds, %M peak RSS); note the machine's load
# next to them (printed first).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=
[ "${1:-}" = --quick ] && quick=1
if [ -n "$quick" ]; then
  routes=${ROUTES:-100} rules=${RULES:-10} listener_routes=300 sizes=${SIZES:-1000 2000 4000}
else
  routes=${ROUTES:-1000} rules=${RULES:-10} listener_routes=300 sizes=${SIZES:-12500 25000 50000}
fi
work=$PWD/target/scale
rm -rf "$work"
mkdir -p "$work"
# shellcheck source=scripts/lib/built.sh
. scripts/lib/built.sh
build_module
cargo build -q --release -p httproute-nginx
gen=target/release/httproute-nginx
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"

fail() { echo "FAIL: $*" >&2; exit 1; }

# inputs SHAPE N DIR: writes DIR/gateway.yaml, DIR/routes.yaml and DIR.backends.
inputs() {
  python3 - "$@" <<'PY'
import os, sys
shape, n, d = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rules = int(os.environ.get("RULES", "10"))
os.makedirs(d, exist_ok=True)
gw = open(f"{d}/gateway.yaml", "w")
out = open(f"{d}/routes.yaml", "w")
gw.write("kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners:\n")
services = n
if shape == "rules":
    # n routes x RULES rules (header and regex query conditions) on one listener.
    gw.write("  - {name: http, port: 18600, protocol: HTTP, hostname: scale.test}\n")
    for r in range(n):
        out.write(f"---\nkind: HTTPRoute\nmetadata: {{name: route-{r}}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n")
        for j in range(rules):
            out.write(f"  - matches:\n    - path: {{type: PathPrefix, value: /svc-{r % 100}/v{j}}}\n"
                      f"      headers: [{{name: x-tenant, value: t{r}}}]\n"
                      f"      queryParams: [{{name: env, type: RegularExpression, value: '^(prod|stage)$'}}]\n"
                      f"    backendRefs: [{{name: svc-{r}, port: 80}}]\n")
elif shape == "listeners":
    # 64 listeners (ports), one hostname; n routes attached to the Gateway (every listener).
    for p in range(64):
        gw.write(f"  - {{name: l{p}, port: {18700 + p}, protocol: HTTP, hostname: scale.test}}\n")
    for r in range(n):
        out.write(f"---\nkind: HTTPRoute\nmetadata: {{name: route-{r}}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n"
                  f"  - matches:\n    - path: {{type: PathPrefix, value: /svc-{r}}}\n"
                  f"      headers: [{{name: x-tenant, value: t{r % 10}}}]\n"
                  f"    backendRefs: [{{name: svc-{r}, port: 80}}]\n")
else:
    # n routes, 500 hostnames, one rule each, one listener; 100 Services.
    services = 100
    gw.write("  - {name: http, port: 18600, protocol: HTTP}\n")
    for r in range(n):
        out.write(f"---\nkind: HTTPRoute\nmetadata: {{name: route-{r}}}\nspec:\n  parentRefs: [{{name: gw}}]\n"
                  f"  hostnames: [h{r % 500}.scale.test]\n  rules:\n"
                  f"  - matches:\n    - path: {{type: PathPrefix, value: /svc-{r}}}\n"
                  f"    backendRefs: [{{name: svc-{r % 100}, port: 80}}]\n")
with open(f"{d}.backends", "w") as f:
    for r in range(services):
        f.write(f"default/svc-{r}:80=127.0.0.1:9\n")
PY
}

# run NAME CMD...: runs CMD under /usr/bin/time; sets $secs and $kib (peak RSS).
run() {
  local name=$1
  shift
  /usr/bin/time -f "%e %M" -o "$work/$name.time" "$@" >"$work/$name.log" 2>&1 \
    || { cat "$work/$name.log" >&2; fail "$name: $*"; }
  read -r secs kib <"$work/$name.time"
}

# generate NAME: generates from $work/NAME into $work/NAME.out (a new directory: its lists are
# in generations/1/); sets $secs, $kib.
generate() {
  run "$1" "$gen" generate -f "$work/$1" --backends "$work/$1.backends" -o "$work/$1.out" \
    --module "$module" --listen-address 127.0.0.1
}

bytes() { stat -c %s "$@" | paste -sd+ | bc; }

echo
echo "== 1. $routes HTTPRoutes x $rules rules, one listener"
RULES=$rules inputs rules "$routes" "$work/rules"
generate rules
g_secs=$secs g_kib=$kib
run rules-t "$nginx" -p "$work/rules.out/" -c nginx.conf -t -q
printf '%-12s %12s %14s %10s %12s\n' "" "input" "nginx.conf" "matches" "time / peak"
printf '%-12s %12s %14s %10s %12s\n' generate "$(bytes "$work"/rules/*.yaml)" \
  "$(bytes "$work/rules.out/nginx.conf")" "$(bytes "$work/rules.out/generations/1/matches.json")" \
  "${g_secs} s / $((g_kib / 1024)) MB"
printf '%-12s %12s %14s %10s %12s\n' "nginx -t" "" "" "" "${secs} s / $((kib / 1024)) MB"

echo
echo "== 2. $listener_routes HTTPRoutes x 64 listeners"
inputs listeners "$listener_routes" "$work/listeners"
generate listeners
g_secs=$secs g_kib=$kib
run listeners-t "$nginx" -p "$work/listeners.out/" -c nginx.conf -t -q
input=$(bytes "$work"/listeners/*.yaml)
conf=$(bytes "$work/listeners.out/nginx.conf")
ratio=$(echo "scale=1; $conf / $input" | bc)
servers=$(grep -c '^    server {' "$work/listeners.out/nginx.conf")
listens=$(grep -c '^        listen ' "$work/listeners.out/nginx.conf")
printf '%-10s %10s %12s %8s %10s %8s %9s %16s %16s\n' routes input nginx.conf ratio matches servers listens \
  "generate" "nginx -t"
printf '%-10s %10s %12s %8s %10s %8s %9s %16s %16s\n' "$listener_routes" "$input" "$conf" "${ratio}x" \
  "$(bytes "$work/listeners.out/generations/1/matches.json")" "$servers" "$listens" \
  "${g_secs} s/$((g_kib / 1024)) MB" "${secs} s/$((kib / 1024)) MB"
[ "$conf" -le $((20 * input)) ] || fail "nginx.conf is ${ratio}x the input (at most 20x)"
# One server per hostname (and the catch-all), each listening on the 64 ports.
[ "$servers" -eq 2 ] || fail "$servers servers for one hostname on 64 ports (expected 2)"
[ "$listens" -eq 128 ] || fail "$listens listen lines (expected 2 x 64)"

echo
echo "== 3. HTTPRoutes alone (500 hostnames, one rule each, one listener)"
printf '%8s %12s %10s %10s %12s %12s %14s %14s\n' routes input seconds "peak MB" "us/route" "KB/route" \
  "conf B/route" "ratio t, mem"
prev_us= prev_kb= first_bpr= last_bpr=
for n in $sizes; do
  inputs hosts "$n" "$work/hosts-$n"
  generate "hosts-$n"
  us=$(echo "scale=1; $secs * 1000000 / $n" | bc)
  kb=$(echo "scale=2; $kib / $n" | bc)
  bpr=$(echo "scale=1; $(bytes "$work/hosts-$n.out/nginx.conf" "$work/hosts-$n.out/generations/1/matches.json") / $n" | bc)
  ratios=-
  [ -z "$prev_us" ] || ratios="$(echo "scale=2; $us / $prev_us" | bc), $(echo "scale=2; $kb / $prev_kb" | bc)"
  printf '%8s %12s %10s %10s %12s %12s %14s %14s\n' "$n" "$(bytes "$work/hosts-$n"/*.yaml)" "$secs" \
    "$((kib / 1024))" "$us" "$kb" "$bpr" "$ratios"
  prev_us=$us prev_kb=$kb
  [ -n "$first_bpr" ] || first_bpr=$bpr
  last_bpr=$bpr
  rm -rf "$work/hosts-$n" "$work/hosts-$n.out"
done
echo "(ratios: per-route time and peak memory against the size before; 1.00 is linear)"
# Output bytes per route: the same at every size, within 10%.
[ "$(echo "$last_bpr <= $first_bpr * 1.1" | bc)" = 1 ] \
  || fail "output grows faster than the routes: $first_bpr then $last_bpr bytes per route"
echo "generator-scale: ok"
