#!/usr/bin/env bash
# Scale check of httproute-nginx: 1,000 HTTPRoutes x 10 rules on one listener. Measures the
# generation time and the `nginx -t` time of the result (module loaded, lists compiled).
#   ROUTES=1000 RULES=10 scripts/generator-scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
routes=${ROUTES:-1000}
rules=${RULES:-10}
work=$PWD/target/scale
rm -rf "$work"
mkdir -p "$work/in"
# shellcheck source=scripts/lib/built.sh
. scripts/lib/built.sh
build_module
cargo build -q --release -p httproute-nginx
python3 - "$work/in" "$routes" "$rules" <<'PY'
import sys
d, routes, rules = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(f"{d}/gateway.yaml", "w") as f:
    f.write("kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners: [{name: http, port: 18600, protocol: HTTP, hostname: scale.test}]\n")
with open(f"{d}/routes.yaml", "w") as f:
    for r in range(routes):
        f.write(f"---\nkind: HTTPRoute\nmetadata: {{name: route-{r}}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n")
        for j in range(rules):
            f.write(f"  - matches:\n    - path: {{type: PathPrefix, value: /svc-{r % 100}/v{j}}}\n"
                    f"      headers: [{{name: x-tenant, value: t{r}}}]\n"
                    f"      queryParams: [{{name: env, type: RegularExpression, value: '^(prod|stage)$'}}]\n"
                    f"    backendRefs: [{{name: svc-{r}, port: 80}}]\n")
with open(f"{d}/../backends.txt", "w") as f:
    for r in range(routes):
        f.write(f"default/svc-{r}:80=127.0.0.1:9\n")
PY
start=$(date +%s.%N)
target/release/httproute-nginx generate -f "$work/in" --backends "$work/backends.txt" \
  -o "$work/out" --module "$module" --listen-address 127.0.0.1
gen=$(echo "$(date +%s.%N) - $start" | bc)
start=$(date +%s.%N)
"$nginx" -p "$work/out/" -c nginx.conf -t -q
load=$(echo "$(date +%s.%N) - $start" | bc)
echo "routes=$routes rules=$rules matches.json=$(stat -c %s "$work/out/matches.json") bytes nginx.conf=$(stat -c %s "$work/out/nginx.conf") bytes"
printf 'generate: %.2f s\nnginx -t: %.2f s\n' "$gen" "$load"
