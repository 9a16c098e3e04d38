"""The realistic 1,000-regex list of issue #22 and the requests sent against it, for
scripts/bench/valgrind-routing.sh.

usage: routing_list.py list            prints the matches.json ({"k": [...]})
       routing_list.py requests PORT   sends every request, prints "name status body" lines
"""
import http.client
import json
import os
import sys

KINDS = [
    # (header, pattern template, a value that matches entry i)
    ("x-tenant", r"^tenant-{i:04d}-[a-z]{{2}}$", "tenant-{i:04d}-eu"),
    ("x-version", r"^v{i}\.[0-9]+\.[0-9]+(-rc[0-9]+)?$", "v{i}.2.3-rc1"),
    ("user-agent", r"Mozilla/5\.0 .*Build/{i}[a-z]+", "Mozilla/5.0 (X11; Linux) Build/{i}abc Safari"),
    ("x-region", r"(?i)^region-{i}-(eu|us|ap)-(north|south|east|west)-[0-9]$", "REGION-{i}-EU-WEST-3"),
    ("x-build", r"^[0-9a-f]{{8}}-{i:x}-[0-9a-f]{{4}}$", "deadbeef-{i:x}-cafe"),
]
N = int(os.environ.get("ROUTING_LIST_N", "1000"))  # entries (scripts/bench/smoke.sh: fewer)


def entries():
    out = []
    for i in range(N):
        header, pattern, _ = KINDS[i % len(KINDS)]
        out.append({"headers": [f"{header}:RegularExpression:{pattern.format(i=i)}"],
                    "redirectPath": f"/r/{i}"})
    out.append({"any": True, "redirectPath": "/r/none"})
    return out


def requests():
    reqs = []
    for i in (0, 1, 2, 3, 4, 500, 777, 995, 996, 997, 998, N - 1):
        header, _, value = KINDS[i % len(KINDS)]
        reqs.append((f"entry{i}", {header: value.format(i=i)}))
    # The winner last, with every other kind of header present and matching nothing.
    last = N - 1
    hdrs = {h: v.format(i=N + 7) for h, _, v in KINDS}
    hdrs[KINDS[last % len(KINDS)][0]] = KINDS[last % len(KINDS)][2].format(i=last)
    reqs.append(("last-with-noise", hdrs))
    reqs.append(("none", {h: v.format(i=N + 7) for h, _, v in KINDS}))
    return reqs


def main():
    if sys.argv[1] == "list":
        print(json.dumps({"k": entries()}))
        return
    port = int(sys.argv[2])
    for name, hdrs in requests():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        c.request("GET", "/t", headers=hdrs)
        r = c.getresponse()
        print(name, r.status, r.read().decode().strip())
        c.close()


if __name__ == "__main__":
    main()
