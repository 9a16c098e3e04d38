"""The endpoint picker call (#32) side by side in one run, on one NGINX (bench.py's
BENCH_NGINX, Debian's 1.22.1, with BENCH_MODULE built for it): NGF's epp.js on njs
(NJS_MODULE), the module's http_matches_epp, and NGINX's own auth_request to the shim plus
proxy_pass (what NGINX can do alone; it cannot send the body to the shim).

For each: instructions per request in the NGINX process (callgrind, master_process off, the
difference between two runs of N1 and N2 requests over one keep-alive client connection, as
bench.py does) for a GET and for a POST with a 1 KB body, and the worker's VmRSS after 2,000
GETs (master on, one worker). The fake
shim (200 with X-Gateway-Destination-Endpoint) and the backend (200, 2 bytes) are Python
threads in this process, so callgrind counts NGINX's work only.

usage: BENCH_NGINX=... BENCH_MODULE=... NJS_MODULE=... EPP_JS=.../epp.js bench_epp.py
Prints a Markdown table (docs/BENCHMARKS.md's epp section).
"""
import os
import re
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

EPP_JS = os.environ.get("EPP_JS", "/work/shared/reference/ngf/epp.js")
N1, N2 = 20, 120
RSS_REQUESTS = 2000


class Handler(socketserver.BaseRequestHandler):
    """HTTP/1.1 keep-alive: reads each request (head, Content-Length body), answers."""

    def handle(self):
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                chunk = self.request.recv(65536)
                if not chunk:
                    return
                buf += chunk
            head, buf = buf.split(b"\r\n\r\n", 1)
            m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            length = int(m.group(1)) if m else 0
            while len(buf) < length:
                chunk = self.request.recv(65536)
                if not chunk:
                    return
                buf += chunk
            buf = buf[length:]
            extra = self.server.extra
            self.request.sendall(b"HTTP/1.1 200 OK\r\n" + extra + b"Content-Length: 2\r\n\r\nok")
            if re.search(rb"(?i)\r\nconnection: *close", head):
                return


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, extra):
        super().__init__(("127.0.0.1", 0), Handler)
        self.extra = extra
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self):
        return self.server_address[1]


PROXY = """location /_proxy {
            internal;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://$inference_workload_endpoint;
        }"""
EPP_VARS = "set $epp_internal_path /_proxy; set $epp_host epp.default.svc; set $epp_port 9002;"


def scenarios(shim):
    """(name, load_module lines, http lines, the bench location's body, other locations)."""
    njs = (f"load_module {bench.NJS_MODULE};\n", "js_import epp from @PREFIX@/conf/epp.js;",
           f"js_var $inference_workload_endpoint; {EPP_VARS} js_content epp.getEndpoint;", PROXY)
    module = (f"load_module {bench.MODULE};\n", "",
              f"{EPP_VARS} http_matches_epp http://127.0.0.1:{shim};", PROXY)
    native = ("", "",
              "auth_request /_shim; auth_request_set $ep $upstream_http_x_gateway_destination_endpoint;"
              " proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_pass http://$ep;",
              f"""location = /_shim {{
            internal;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-EPP-Host epp.default.svc;
            proxy_set_header X-EPP-Port 9002;
            proxy_pass http://127.0.0.1:{shim}/;
        }}""")
    return [(f"njs {bench.NJS_VERSION} + NGF's epp.js", *njs),
            ("module, http_matches_epp", *module),
            ("NGINX's auth_request + proxy_pass (no body to the shim)", *native)]


def write(prefix, sc, shim_port, master):
    _, loads, http, location, others = sc
    for d in ("conf", "logs", "tmp"):
        (prefix / d).mkdir(parents=True, exist_ok=True)
    js = Path(EPP_JS).read_text()
    old = "const SHIM_URI = 'http://127.0.0.1:54800';"
    assert js.count(old) == 1, "epp.js changed"
    (prefix / "conf" / "epp.js").write_text(js.replace(old, f"const SHIM_URI = 'http://127.0.0.1:{shim_port}';"))
    if not master:
        loads += "timer_resolution 1h;\n"  # see bench.write_prefix
    conf = bench.preamble(
        LOADS=loads, MASTER="on" if master else "off", WORKERS="1", LOG_LEVEL="error",
        CONNECTIONS="1024", ACCESS_LOG="off",
        HTTP=f"""    keepalive_requests 1000000;
    {http.replace("@PREFIX@", str(prefix))}
    server {{
        listen 127.0.0.1:{bench.PORT};
        location = /bench {{ {location} }}
        {others}
    }}""")
    (prefix / "conf" / "nginx.conf").write_text(conf)


class Req:
    """What bench.send needs of a scenario."""
    name = "epp"
    request = ("/bench?a=1", {"x-model": "llama"})


BODY = b"x" * 1024


def send_post(count):
    """`count` POSTs with a 1 KB body over one keep-alive connection; checks every answer."""
    req = (b"POST /bench?a=1 HTTP/1.1\r\nHost: bench\r\nx-model: llama\r\n"
           b"Content-Length: %d\r\n\r\n" % len(BODY)) + BODY
    bench.send_raw("POST", req, count)


def callgrind(sc, shim_port, count, prefix, post=False):
    write(prefix, sc, shim_port, master=False)
    return bench.callgrind_run(prefix, lambda: send_post(count) if post else bench.send(Req, count))


def rss(sc, shim_port, prefix):
    write(prefix, sc, shim_port, master=True)
    p = subprocess.Popen([bench.NGINX, "-p", f"{prefix}/", "-c", "conf/nginx.conf"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        bench.wait_port()
        bench.send(Req, RSS_REQUESTS)
        return bench.rss_kib(p.pid)
    finally:
        bench.stop(p)


def main():
    shim_echo = Server(b"")
    shim = Server(f"X-Gateway-Destination-Endpoint: 127.0.0.1:{shim_echo.port}\r\n".encode())
    rows = []
    for sc in scenarios(shim.port):
        with tempfile.TemporaryDirectory() as d:
            a = callgrind(sc, shim.port, N1, Path(d) / "a")
            b = callgrind(sc, shim.port, N2, Path(d) / "b")
            pa = callgrind(sc, shim.port, N1, Path(d) / "pa", post=True)
            pb = callgrind(sc, shim.port, N2, Path(d) / "pb", post=True)
            kib = rss(sc, shim.port, Path(d) / "r")
        rows.append((sc[0], (b - a) / (N2 - N1), (pb - pa) / (N2 - N1), kib))
        print(f"{sc[0]}: {rows[-1][1]:,.0f} / {rows[-1][2]:,.0f} instr/req, worker {kib} KiB",
              file=sys.stderr, flush=True)
    njs, njs_post = rows[0][1], rows[0][2]
    print("| configuration | GET: instr/req (callgrind) | vs njs | POST 1 KB: instr/req | vs njs "
          "| worker VmRSS after 2,000 GETs |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, instr, post, kib in rows:
        print(f"| {name} | {instr:,.0f} | {instr / njs:.2f}x | {post:,.0f} | {post / njs_post:.2f}x "
              f"| {kib:,} KiB |")


if __name__ == "__main__":
    main()
