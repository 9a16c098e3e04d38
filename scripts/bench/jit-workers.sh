#!/usr/bin/env bash
# What PCRE2 JIT at first use costs each worker (issue #30, docs/BENCHMARKS.md "Worker memory
# of JIT at first use"). CI runs it at smoke size (scripts/bench/smoke.sh); builds nothing. Starts its own NGINX (2 workers, master on,
# a temporary prefix, a free port, `listen ... reuseport`) with the regex-heavy file of
# tests/reload_memory.rs (2,000 lists, 4,000 distinct regexes) under `http_matches_load`, and
# prints, for the master and each worker, /proc/PID/smaps_rollup's Rss, Pss and Private_Dirty
# the Rss of the anonymous rwxp mappings (sljit's JIT chunks) and the Private_Dirty of [heap]
# (pages of the master's heap this process wrote to, or its own), in KiB:
#   start    after start, no request yet;
#   round 0  after each worker looked up every list once with no regex run (no x-version
#            header, no q param: 404), the control;
#   round 1  after each worker served every list once (both regexes of each list run);
#   round 2  after a second such round (steady).
# Each round opens keep-alive connections until it holds one per worker (the body of
# `location = /pid` is `$pid`), sends the 2,000 requests on each, checks every answer (the
# route, and the pid of the worker it was sent to; a connection stays with its worker), closes
# them, and waits until the figures stop moving. The module has no switch for JIT (a worker JIT-compiles a configuration's
# pattern at its first match, always), so there is no JIT-off column.
#   NGX_MATCHES_MODULE  the module (default target/release/libngx_http_matches.so)
#   NGX_MATCHES_NGINX   the NGINX it was built for (default: the newest vendored build under
#                       target/release/build/nginx-sys-*/out/objs/nginx)
#   LISTS               lists in the file (default 2000; two regexes each)
set -euo pipefail
cd "$(dirname "$0")/../.."
module=${NGX_MATCHES_MODULE:-$PWD/target/release/libngx_http_matches.so}
nginx=${NGX_MATCHES_NGINX:-$(ls -t target/release/build/nginx-sys-*/out/objs/nginx 2>/dev/null | head -n 1 || true)}
lists=${LISTS:-2000}
[ -f "$module" ] || { echo "no module at '$module' (NGX_MATCHES_MODULE); this script builds nothing" >&2; exit 1; }
[ -x "$nginx" ] || { echo "no NGINX at '$nginx' (NGX_MATCHES_NGINX); this script builds nothing" >&2; exit 1; }
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")
nginx=$(cd "$(dirname "$nginx")" && pwd)/$(basename "$nginx")
p=$(mktemp -d "${TMPDIR:-/tmp}/jit-workers.XXXXXX")
trap 'rm -rf "$p"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# shellcheck source=scripts/lib/prefix.sh
. scripts/lib/prefix.sh
write_prefix "$p" "$module" off "    http_matches_load matches.json;
    server {
        listen 127.0.0.1:$port reuseport;
        keepalive_requests 1000000;
        location = /pid { return 200 \"\$pid\n\"; }
        location = /big { internal; return 200 \"\$pid big\n\"; }
        location = /small { internal; return 200 \"\$pid small\n\"; }
        location = /k { set \$match_key \$arg_k; http_matches; }
    }"
sed -i 's/^worker_processes 1;/worker_processes 2;/' "$p/conf/nginx.conf"
# tests/reload_memory.rs's regex_heavy_file: two distinct regexes per list.
python3 - "$lists" >"$p/conf/matches.json" <<'PY'
import json, sys
out = {}
for k in range(int(sys.argv[1])):
    out[f"k{k}"] = [
        {"headers": [f"x-version:RegularExpression:^v{k}\\.[0-9]+$"], "redirectPath": "/big"},
        {"params": [f"q=RegularExpression=^s{k}[a-z]*$"], "redirectPath": "/small"},
    ]
json.dump(out, sys.stdout, separators=(",", ":"))
PY
"$nginx" -V 2>&1 | sed -n 1p
echo "module: $module"
echo "matches.json: $lists lists, $((2 * lists)) regexes, $(($(stat -c %s "$p/conf/matches.json") / 1024)) KiB; 2 workers, port $port"
start_nginx "$nginx" "$p" "$port"
trap 'kill -QUIT $master 2>/dev/null || true; wait $master 2>/dev/null || true; rm -rf "$p"' EXIT
python3 - "$master" "$port" "$lists" <<'PY'
import http.client, os, sys, time
sys.path.insert(0, "scripts/lib")
from procs import children
master, port, lists = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

def figures(pid):
    f = {}
    for line in open(f"/proc/{pid}/smaps_rollup"):
        w = line.split()
        if w[0] in ("Rss:", "Pss:", "Private_Dirty:"):
            f[w[0][:-1]] = int(w[1])
    jit, heap, anon_rwx, in_heap = 0, 0, False, False
    for line in open(f"/proc/{pid}/smaps"):
        w = line.split()
        if "-" in w[0] and all(c in "0123456789abcdef-" for c in w[0]):
            anon_rwx = w[1] == "rwxp" and len(w) == 5
            in_heap = w[-1] == "[heap]"
        elif anon_rwx and w[0] == "Rss:":
            jit += int(w[1])
        elif in_heap and w[0] == "Private_Dirty:":
            heap += int(w[1])
    f["JIT"], f["heap"] = jit, heap
    return f

def settled(pids):
    last = None
    for _ in range(50):
        now = [figures(p) for p in pids]
        if now == last:
            return now
        last = now
        time.sleep(0.2)
    return last

pids = children(master)
if len(pids) != 2:
    sys.exit(f"FAIL: {len(pids)} workers, expected 2")
procs = [master] + pids
names = {master: "master"} | {p: f"worker {chr(65 + i)}" for i, p in enumerate(pids)}

def one_per_worker():
    held, spare = {}, []
    for _ in range(500):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/pid")
        pid = int(c.getresponse().read().decode().strip())
        if pid in held:
            spare.append(c)
        else:
            held[pid] = c
        if len(held) == len(pids):
            break
    for c in spare:
        c.close()
    if sorted(held) != pids:
        sys.exit(f"FAIL: connections reached workers {sorted(held)}, expected {pids}")
    return held

def round_(regex):
    took = {}
    for pid, c in sorted(one_per_worker().items()):
        t0 = time.monotonic()
        for k in range(lists):
            if regex:
                # The first entry's regex runs on "nope" and fails, the second's matches: both
                # patterns of the list are matched once in this worker.
                c.request("GET", f"/k?k=k{k}&q=s{k}x", headers={"x-version": "nope"})
            else:
                # Neither condition's header or param is there: the list is evaluated, no
                # regex runs, no entry wins.
                c.request("GET", f"/k?k=k{k}")
            r = c.getresponse()
            body = r.read().decode().strip()
            if (r.status, body) != (200, f"{pid} small") if regex else r.status != 404:
                sys.exit(f"FAIL: list k{k} on worker {pid} answered {r.status} {body!r}")
        took[pid] = time.monotonic() - t0
        c.close()
    return took

points = [("start", settled(procs), None)]
for name, regex in (("round 0", False), ("round 1", True), ("round 2", True)):
    took = round_(regex)
    points.append((name, settled(procs), took))

print(f"\nKiB, /proc/PID/smaps_rollup; from /proc/PID/smaps, JIT: Rss of the anonymous rwxp mappings,")
print("heap PD: Private_Dirty of [heap]")
print("| process | point | Rss | Pss | Private_Dirty | JIT | heap PD | round's requests |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for i, pid in enumerate(procs):
    for name, figs, took in points:
        f = figs[i]
        t = f"{lists} in {took[pid] * 1000:.0f} ms" if took and pid in took else ""
        print(f"| {names[pid]} | {name} | {f['Rss']:,} | {f['Pss']:,} | {f['Private_Dirty']:,} | {f['JIT']:,} | {f['heap']:,} | {t} |")
print("\nchanges (KiB): round 0 - start / round 1 - round 0 (the JIT at first use) / round 2 - round 1")
for i, pid in enumerate(procs):
    d = lambda key: " / ".join(f"{points[a][1][i][key] - points[a - 1][1][i][key]:+,}" for a in (1, 2, 3))
    print(f"  {names[pid]:8} Rss {d('Rss')}; Pss {d('Pss')}; Private_Dirty {d('Private_Dirty')}; JIT {d('JIT')}; heap PD {d('heap')}")
PY
if grep -qE "exited on signal|\[alert\]|\[emerg\]|interpreter in this worker" "$p/logs/error.log"; then
  echo "FAIL: error log:" >&2
  grep -E "exited on signal|\[alert\]|\[emerg\]|interpreter in this worker" "$p/logs/error.log" >&2
  exit 1
fi
echo "error log: no [alert], [emerg] or JIT refusal"
