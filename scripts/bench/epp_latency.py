"""The EPP call's latency per request, NGF's shim path against the module's gRPC, in one run
(issue #47): one NGINX (BENCH_NGINX, one worker, BENCH_MODULE), one fake EPP (FAKE_EPP, mode
header, its record kept), one fake shim (FAKE_SHIM: NGF's Go shim, a new gRPC connection per
request), one backend (a second server of the same NGINX, `return 200`). Five locations:

  a  http_matches_epp http://SHIM          -> fake-shim -> fake-epp (NGF today)
  b  http_matches_epp grpc://epp_keepalive (upstream with keepalive 16, as generated)
  c  http_matches_epp grpc://epp_once      (the same upstream without keepalive: the
                                            connection's cost alone)
  d, e  as b and c over TLS (grpcs://, grpc_ssl_verify off as the Go shim's
        InsecureSkipVerify; e without session reuse, a full handshake each time as a new Go
        client does), NGINX's `stream` terminating TLS in front of the fake EPP

each redirecting to a location that proxies to the picked endpoint (the backend, a new
connection per request in all, as NGF's `proxy_pass http://$inference_workload_endpoint`).
N rounds, each a GET and a POST with a 1 KB body to a, b, c, d and e in turn (round robin
over one keep-alive client connection: a slowdown of the machine hits all alike), timed by the
client from sending to the answer's last byte. Prints median / p90 / p99 per mode and method
and their ratios to a, as a Markdown table. Then (CLIENTS > 0) a concurrent run: wrk with
CLIENTS connections, GET, RUN_SECONDS on each mode in turn, ROUNDS rounds; medians of the
rounds' requests/s and latency percentiles.

Asserted (counts only, never a time): every answer is the backend's 200, the fake EPP saw
every request in order, the error log has no [error]; EPP connections per request (from the
fake's connection counter in its record, request by request): a, c and e exactly one each, b
and d at most 16 each (the upstream's keepalive cache), whatever N. In the concurrent run, per
wrk run (the counter's step across it against the requests the fake recorded in it, either of which
may take in up to CLIENTS requests cut off at the previous run's end): a, c and e at least
one per request less CLIENTS, b and d at most 16 plus CLIENTS per round each.

usage: BENCH_NGINX=... BENCH_MODULE=... FAKE_EPP=... FAKE_SHIM=... [N=1000] [CLIENTS=8]
       [ROUNDS=3] [RUN_SECONDS=2] epp_latency.py
(scripts/bench/epp-latency.sh builds and sets them).
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

N = int(os.environ.get("N", "1000"))
CLIENTS = int(os.environ.get("CLIENTS", "8"))  # 0: no concurrent run
ROUNDS = int(os.environ.get("ROUNDS", "3"))
RUN_SECONDS = int(os.environ.get("RUN_SECONDS", "2"))
KEEPALIVE = 16  # httproute-nginx's default --upstream-keepalive
MODES = {
    "a": "http_matches_epp http://{shim}; set $epp_host {epp_host}; set $epp_port {epp_port};",
    "b": "http_matches_epp grpc://epp_keepalive;",
    "c": "http_matches_epp grpc://epp_once;",
    # The Go shim's TLS (NGF's default): certificate not verified, a new client's full handshake.
    "d": "grpc_ssl_verify off; http_matches_epp grpcs://epps_keepalive;",
    "e": "grpc_ssl_verify off; grpc_ssl_session_reuse off; http_matches_epp grpcs://epps_once;",
}
NAMES = {
    "a": "(a) shim: `http://` -> fake-shim -> EPP",
    "b": f"(b) `grpc://`, upstream `keepalive {KEEPALIVE}`",
    "c": "(c) `grpc://`, no keepalive",
    "d": f"(d) `grpcs://`, upstream `keepalive {KEEPALIVE}`",
    "e": "(e) `grpcs://`, no keepalive, no session reuse",
}
KEPT = ("b", "d")  # the others: one EPP connection per request
BODY = b"x" * 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(args):
    """A fake (fake-epp, fake-shim) and the address its `ready ADDR` line names."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("ready "):
        p.kill()
        raise RuntimeError(f"{args[0]} did not start: {line!r}")
    return p, line.split()[1]


def write_conf(prefix, epp, shim, backend):
    """nginx.conf; its `stream` server terminates TLS in front of the fake EPP (a connection
    to the EPP for each TLS connection: the counts hold for d and e)."""
    host, port = epp.rsplit(":", 1)
    tls = f"127.0.0.1:{free_port()}"
    locations = "\n".join(
        f"        location /{m} {{ set $epp_internal_path /_proxy; "
        f"{body.format(shim=shim, epp_host=host, epp_port=port)} }}"
        for m, body in MODES.items())
    for d in ("conf", "logs", "tmp"):
        (prefix / d).mkdir(parents=True, exist_ok=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=epp", "-days", "2",
                    "-keyout", "conf/epp.key", "-out", "conf/epp.crt"],
                   cwd=prefix, check=True, capture_output=True)
    stream = f"""stream {{
    server {{
        listen {tls} ssl;
        ssl_certificate {prefix}/conf/epp.crt;
        ssl_certificate_key {prefix}/conf/epp.key;
        proxy_pass {epp};
    }}
}}
"""
    conf = bench.preamble(
        LOADS=f"load_module {bench.MODULE};\n{stream}", MASTER="on", WORKERS="1", LOG_LEVEL="error",
        CONNECTIONS="1024", ACCESS_LOG="off",
        HTTP=f"""    keepalive_requests 1000000;
    upstream epp_keepalive {{ server {epp}; keepalive {KEEPALIVE}; keepalive_requests 1000000; }}
    upstream epp_once {{ server {epp}; }}
    upstream epps_keepalive {{ server {tls}; keepalive {KEEPALIVE}; keepalive_requests 1000000; }}
    upstream epps_once {{ server {tls}; }}
    server {{
        listen 127.0.0.1:{bench.PORT};
{locations}
        location /_proxy {{
            internal;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://$inference_workload_endpoint;
        }}
    }}
    server {{
        listen {backend};
        location / {{ return 200 "backend\\n"; }}
    }}""")
    (prefix / "conf" / "nginx.conf").write_text(conf)


def request(mode, method, tag):
    head = f"{method} /{mode}?a=1 HTTP/1.1\r\nHost: bench\r\nx-model: llama\r\nx-bench: {tag}\r\n"
    if method == "GET":
        return (head + "\r\n").encode()
    return (head + f"Content-Length: {len(BODY)}\r\n\r\n").encode() + BODY


def drive(rounds):
    """`rounds` rounds of GET and POST to a, b, c; returns [(mode, method, tag, ns)] in order."""
    sock = socket.create_connection(("127.0.0.1", bench.PORT), timeout=600)
    buf, out = b"", []
    for i in range(rounds):
        for method in ("GET", "POST"):
            for mode in MODES:
                tag = f"{mode}-{method}-{i}"
                req = request(mode, method, tag)
                t0 = time.perf_counter_ns()
                sock.sendall(req)
                buf = bench.read_answer(tag, sock, buf)
                out.append((mode, method, tag, time.perf_counter_ns() - t0))
    sock.close()
    return out


def records(record):
    return [json.loads(line) for line in record.read_text().splitlines()]


def connections(rows, sent):
    """New EPP connections per request (the fake's accept counter, request by request: the
    requests are one at a time, so a request's new connections are the counter's step at its
    record). Checks the record holds exactly the requests sent, in order."""
    tags = [dict(r["headers"]).get("x-bench") for r in rows]
    assert tags == [t for _, _, t, _ in sent], "the fake EPP's record is not the requests sent"
    steps = [r["connections"] for r in rows]
    return [b - a for a, b in zip([0] + steps, steps)]


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def table(timed, steps):
    stats, conns, count = {}, {}, {}
    for mode in MODES:
        for method in ("GET", "POST"):
            ns = [t for m, meth, _, t in timed if (m, meth) == (mode, method)]
            stats[mode, method] = [statistics.median(ns) / 1000, quantile(ns, 0.9) / 1000,
                                   quantile(ns, 0.99) / 1000]
    for (mode, method, _, _), step in zip(timed, steps):
        conns[mode, method] = conns.get((mode, method), 0) + step
        count[mode, method] = count.get((mode, method), 0) + 1
    print("| mode | request | median | p90 | p99 | EPP connections / requests |")
    print("|---|---|---:|---:|---:|---:|")
    for (mode, method), row in stats.items():
        base = stats["a", method]
        cells = " | ".join(f"{v:,.0f} µs ({v / b:.2f}x)" for v, b in zip(row, base))
        label = "GET" if method == "GET" else "POST 1 KB"
        print(f"| {NAMES[mode]} | {label} | {cells} "
              f"| {conns[mode, method]:,} / {count[mode, method]:,} |")
    return conns


def concurrent(record):
    """ROUNDS rounds of a wrk run per mode; [(mode, wrk's figures, requests the fake recorded
    in the run, the connection counter's step across it)]."""
    runs, seen, counter = [], len(records(record)), records(record)[-1]["connections"]
    for _ in range(ROUNDS):
        for mode in MODES:
            headers = {"x-model": "llama", "x-bench": f"wrk-{mode}"}
            got = bench.wrk_run(mode, f"/{mode}?a=1", headers, CLIENTS, RUN_SECONDS)
            rows = records(record)
            last = rows[-1]["connections"] if len(rows) > seen else counter
            runs.append((mode, got, len(rows) - seen, last - counter))
            seen, counter = len(rows), last
    return runs


def concurrent_table(runs):
    print(f"\n{CLIENTS} clients (wrk, GET), rounds: {ROUNDS} of {RUN_SECONDS} s per mode, "
          "medians:\n")
    print("| mode | requests/s | p50 | p90 | p99 | EPP connections / requests |")
    print("|---|---:|---:|---:|---:|---:|")
    med = {m: {k: statistics.median(g[k] for mm, g, _, _ in runs if mm == m)
               for k in ("rps", 50, 90, 99)} for m in MODES}
    for mode in MODES:
        reqs = sum(n for m, _, n, _ in runs if m == mode)
        conns = sum(c for m, _, _, c in runs if m == mode)
        cells = " | ".join(f"{med[mode][k]:,.0f} µs ({med[mode][k] / med['a'][k]:.2f}x)"
                           for k in (50, 90, 99))
        rps = med[mode]["rps"]
        print(f"| {NAMES[mode]} | {rps:,.0f} ({rps / med['a']['rps']:.2f}x) | {cells} "
              f"| {conns:,} / {reqs:,} |")


def check_counts(timed, steps, conns, runs):
    for mode in (m for m in MODES if m not in KEPT):
        one_each = [t for (m, _, t, _), s in zip(timed, steps) if m == mode and s != 1]
        assert not one_each, f"({mode}) not one EPP connection per request: {one_each[:5]}"
    for mode in KEPT:
        kept = conns[mode, "GET"] + conns[mode, "POST"]
        assert kept <= KEEPALIVE, f"({mode}) {kept} EPP connections for {2 * N} requests"
        kept = sum(c for m, _, _, c in runs if m == mode)
        bound = KEEPALIVE + CLIENTS * ROUNDS
        assert kept <= bound, f"({mode}) {kept} EPP connections under {CLIENTS} clients (> {bound})"
    for mode, _, n, c in runs:
        assert mode in KEPT or c >= n - CLIENTS, f"({mode}) {c} EPP connections for {n} requests"


def loadavg():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main():
    load = loadavg()
    with tempfile.TemporaryDirectory() as d:
        prefix = Path(d)
        record = prefix / "epp.jsonl"
        backend = f"127.0.0.1:{free_port()}"
        epp, epp_addr = spawn([os.environ["FAKE_EPP"], "--mode", "header", "--endpoint", backend,
                               "--record", str(record)])
        shim, shim_addr = spawn([os.environ["FAKE_SHIM"], "--listen", "127.0.0.1:0"])
        nginx = None
        try:
            write_conf(prefix, epp_addr, shim_addr, backend)
            nginx = subprocess.Popen([bench.NGINX, "-p", f"{prefix}/", "-c", "conf/nginx.conf"])
            bench.wait_port()
            timed = drive(N)
            steps = connections(records(record), timed)
            runs = concurrent(record) if CLIENTS else []
        finally:
            if nginx:
                bench.stop(nginx)
            for p in (shim, epp):
                p.kill()
                p.wait()
        log = (prefix / "logs" / "error.log").read_text()
    bad = [line for line in log.splitlines() if any(
        f"[{lvl}]" in line for lvl in ("error", "crit", "alert", "emerg"))]
    assert not bad, f"the error log has {len(bad)} bad lines, the first: {bad[0]}"
    print(f"commit {bench.measured_commit()}, N={N} rounds, load {load} -> {loadavg()}\n")
    conns = table(timed, steps)
    if runs:
        concurrent_table(runs)
    check_counts(timed, steps, conns, runs)


if __name__ == "__main__":
    main()
