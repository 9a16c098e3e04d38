#!/usr/bin/env python3
# The 50,000-route List shapes of docs/BENCHMARKS.md (issue #45): one JSON `kind: List`.
#   scripts/bench/list-shapes.py SHAPE N DIR   (SHAPE: one | rules3 | hosts)
# one: a rule a route, 500 hostnames; rules3: three rules, each a header and a regex query match;
# hosts: a hostname a route. Writes DIR/gateway.yaml, DIR/routes.json and DIR.backends; then
#   /usr/bin/time -v target/release/httproute-nginx generate -f DIR --backends DIR.backends -o OUT \
#     --module M --listen-address 127.0.0.1
import json, os, sys
shape, n, d = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(d, exist_ok=True)
open(f"{d}/gateway.yaml","w").write("kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners:\n  - {name: http, port: 18600, protocol: HTTP}\n")
def route(r):
    host = f"h{r}.scale.test" if shape == "hosts" else f"h{r % 500}.scale.test"
    nrules = 3 if shape == "rules3" else 1
    rules = []
    for j in range(nrules):
        m = {"path": {"type": "PathPrefix", "value": f"/svc-{r}/v{j}"}}
        if shape == "rules3":
            m["headers"] = [{"name": "x-tenant", "value": f"t{r}"}]
            m["queryParams"] = [{"name": "env", "type": "RegularExpression", "value": "^(prod|stage)$"}]
        rules.append({"matches": [m], "backendRefs": [{"name": f"svc-{r % 100}", "port": 80}]})
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": f"route-{r}", "namespace": "default"},
            "spec": {"parentRefs": [{"name": "gw"}], "hostnames": [host], "rules": rules}}
with open(f"{d}/routes.json", "w") as f:
    json.dump({"apiVersion": "v1", "items": [route(r) for r in range(n)], "kind": "List", "metadata": {"resourceVersion": ""}}, f, indent=4)
with open(f"{d}.backends", "w") as f:
    for r in range(100): f.write(f"default/svc-{r}:80=127.0.0.1:9\n")
