#!/usr/bin/env python3
"""NGF-shaped configurations, module vs njs vs plain (used by scripts/bench/ngf-scale.sh).

For each R, httproute-nginx writes one configuration from R HTTPRoutes of three rules each
(a header match, a query match, a path-only default; path /rI on one of ten hostnames), the way
NGF lays them out: one `location` per path that runs the matcher, one internal location per rule.
Three variants of that one file run on the same Debian NGINX, each in turn:

- module: as generated (`http_matches_load` + `set $match_key` + `http_matches`);
- njs:    the same with NGF's own httpmatches.js (`js_import`, `js_preload_object`,
          `js_content httpmatches.redirect`) in place of the module's three directives;
- plain:  the same with `return 200` in place of the matcher (no module, no njs): the floor;
- plain, njs loaded: plain with njs loaded and `js_import` at http level, nothing run: what
          njs costs before it matches anything.

Measured per variant: `nginx -t` time, startup (until the first route answers), master and worker
RSS/PSS after start and after traffic over every rule of every route (each answer checked against
the backend the rule names), one reload (SIGHUP until a new worker answers the new generation),
and the peak of the summed private memory (Private_Clean + Private_Dirty, all processes) while the
reload runs. Writes target/ngf-scale/results.json, docs/ngf-scale.png and the NGF section of
docs/BENCHMARKS.md (between its markers).
"""
import http.client
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from procs import children, measured_commit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
WORK = ROOT / "target" / "ngf-scale"
NGINX = os.environ.get("BENCH_NGINX", "/usr/sbin/nginx")
MODULE = os.environ["BENCH_MODULE"]
GENERATOR = os.environ["BENCH_GENERATOR"]
NJS_MODULE = os.environ.get("NJS_MODULE") or "/usr/lib/nginx/modules/ngx_http_js_module.so"
NJS_SCRIPT = os.environ.get("NJS_HTTPMATCHES")  # NGF's httpmatches.js (never committed)
NJS_VERSION = os.environ.get("NJS_VERSION", "?")  # njs.version of NJS_MODULE (scripts/bench/njs.sh)
SIZES = [int(x) for x in os.environ.get("NGF_SCALE_SIZES", "200,1000,3000,10000").split(",")]
PORT = int(os.environ.get("BENCH_PORT", "18700"))
CONTROL = PORT + 1  # the generation probe
BACKENDS = {"a": PORT + 2, "b": PORT + 3, "c": PORT + 4}
HOSTS = 10
# What the tables do not say by themselves (facts read from njs's CHANGES and sources, and from
# this benchmark's own plain-vs-module runs).
NOTES = [
    "Notes:",
    "- Worker growth during traffic: a worker's request pools and proxy buffers come from the",
    "  free chunks of the heap it shares with the master (NGINX's temporary pool and the",
    "  module's compile temporaries, freed between configuration data), one copied page after",
    "  another: plain's column. Right before the master forks workers of a configuration that",
    "  uses the module, the module frees PCRE2's unused JIT chunks and trims the heap",
    "  (src/prefork.rs; the fill that took the free chunks, `http_matches_prefork`, is gone).",
    "- **plain** answers `return 200` in the matcher location, so it proxies nothing; module and",
    "  njs redirect to the rule's internal location, which proxies to the backend.",
    "- njs 0.7.9 (Debian 12's) makes an `ngx.fetch()` TLS context (`SSL_CTX_new`) for every",
    "  `server` and `location` once njs is loaded with `js_import` at http level, used or not:",
    "  the \"njs loaded, unused\" column, nearly all of what 0.7.9 adds here. njs 0.8.8 and later",
    "  (NGF ships 1.0.x) inherit those contexts from the enclosing level.",
    "- `nginx -t`, startup and reload are dominated by NGINX reading R x 5 locations; the module",
    "  compiles `matches.json` within the noise of that (plain is the floor).",
]
BEGIN = "<!-- ngf-scale: begin (scripts/bench/ngf-scale.sh writes this section) -->"
END = "<!-- ngf-scale: end -->"


def manifests(d, routes):
    d.mkdir(parents=True, exist_ok=True)
    (d / "gateway.yaml").write_text(
        "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n"
        f"  listeners: [{{name: http, port: {PORT}, protocol: HTTP}}]\n")
    with open(d / "routes.yaml", "w") as f:
        for i in range(routes):
            f.write(f"---\nkind: HTTPRoute\nmetadata: {{name: route-{i}, namespace: default}}\n"
                    f"spec:\n  parentRefs: [{{name: gw}}]\n"
                    f"  hostnames: [h{i % HOSTS}.scale.test]\n  rules:\n"
                    f"  - matches: [{{path: {{value: /r{i}}}, headers: [{{name: x-version, value: v2}}]}}]\n"
                    f"    backendRefs: [{{name: svc-a, port: 80}}]\n"
                    f"  - matches: [{{path: {{value: /r{i}}}, queryParams: [{{name: env, value: canary}}]}}]\n"
                    f"    backendRefs: [{{name: svc-b, port: 80}}]\n"
                    f"  - matches: [{{path: {{value: /r{i}}}}}]\n"
                    f"    backendRefs: [{{name: svc-c, port: 80}}]\n")
    (d / "backends.txt").write_text("".join(f"default/svc-{k}:80=127.0.0.1:{p}\n"
                                            for k, p in BACKENDS.items()))


def without_module(conf):
    """A twin of the generated configuration with no other directive of the module: the reload
    report and the hostname fallbacks dropped (NGF has neither: every request here names an
    exact hostname), the catch-all `http_matches []` a plain 404."""
    conf = re.sub(r"\n *http_matches_(reload_report|fallback) [^;]*;", "", conf)
    conf = conf.replace("http_matches []; }", "return 404; }")
    assert "http_matches" not in conf.replace("$httproute", ""), "a twin still names the module"
    return conf


def generate(routes):
    base = WORK / f"r{routes}"
    shutil.rmtree(base, ignore_errors=True)
    manifests(base / "in", routes)
    out = base / "generated"
    version = re.search(r"nginx/(\d+\.\d+\.\d+)",
                        subprocess.run([NGINX, "-v"], capture_output=True, text=True).stderr)
    subprocess.run([GENERATOR, "generate", "-f", str(base / "in"), "--backends",
                    str(base / "in" / "backends.txt"), "-o", str(out), "--module", MODULE,
                    "--listen-address", "127.0.0.1", "--nginx-version", version.group(1)],
                   check=True, capture_output=True)
    # A new output directory: its lists are generation 1's; the prefixes below get their own
    # copy next to nginx.conf.
    conf = (out / "nginx.conf").read_text().replace(
        "http_matches_load generations/1/matches.json;", "http_matches_load matches.json;")
    assert "http_matches_load matches.json;" in conf, "the generator's layout changed"
    matches = out / "generations" / "1" / "matches.json"
    # The probe the reload waits for: a server of its own, its answer changed before each SIGHUP.
    probe = (f'    server {{ listen 127.0.0.1:{CONTROL}; '
             f'location = /generation {{ return 200 "@GEN@"; }} }}\n}}\n')
    conf = conf[:conf.rstrip().rfind("}")] + probe
    variants = {"module": conf}
    if NJS_SCRIPT:
        njs = conf.replace(f"load_module {MODULE};", f"load_module {NJS_MODULE};")
        # njs reads NGF's flat lists: the generator's shared runs ({"include": KEY}) expanded.
        lists = json.loads(matches.read_text())
        flat = {k: [e for item in v for e in (lists[item["include"]] if "include" in item else [item])]
                for k, v in lists.items()}
        flat_file = out / "matches-flat.json"
        flat_file.write_text(json.dumps(flat))
        njs = njs.replace("http_matches_load matches.json;",
                          f"js_import httpmatches from {NJS_SCRIPT};\n"
                          f"    js_preload_object matches from {flat_file};")
        njs = without_module(njs.replace(" http_matches; }", " js_content httpmatches.redirect; }"))
        variants["njs"] = njs
    plain = without_module(re.sub(r"set \$match_key \S+; http_matches; }", "return 200; }", conf)
                           .replace(f"load_module {MODULE};\n", "")
                           .replace("    http_matches_load matches.json;\n", ""))
    variants["plain"] = plain
    if NJS_SCRIPT:
        # What loading njs costs before it runs anything: plain with `js_import` at http level.
        variants["plain, njs loaded"] = (
            f"load_module {NJS_MODULE};\n" + plain.replace(
                "    access_log logs/access.log;\n",
                f"    access_log logs/access.log;\n    js_import httpmatches from {NJS_SCRIPT};\n", 1))
        assert "js_import" in variants["plain, njs loaded"]
    prefixes = {}
    for name, text in variants.items():
        p = base / name.replace(", ", "-").replace(" ", "-")
        (p / "logs").mkdir(parents=True)
        (p / "tmp").mkdir()
        shutil.copy(matches, p / "matches.json")
        (p / "nginx.conf").write_text(text.replace("@GEN@", "0"))
        (p / "template.conf").write_text(text)
        prefixes[name] = p
    return prefixes, matches.stat().st_size, len(conf.encode())


def backend():
    """One plain NGINX answering a/b/c on the three backend ports (which rule a request reached)."""
    p = WORK / "backend"
    shutil.rmtree(p, ignore_errors=True)
    (p / "logs").mkdir(parents=True)
    (p / "tmp").mkdir()
    servers = "".join(f'server {{ listen 127.0.0.1:{port}; location / {{ return 200 "{k}"; }} }}\n'
                      for k, port in BACKENDS.items())
    (p / "nginx.conf").write_text(
        "worker_processes 1; pid logs/nginx.pid; error_log logs/error.log;\n"
        "events { worker_connections 1024; }\n"
        "http { access_log off; client_body_temp_path tmp; proxy_temp_path tmp;\n"
        "fastcgi_temp_path tmp; uwsgi_temp_path tmp; scgi_temp_path tmp;\n"
        f"keepalive_requests 100000;\n{servers}}}\n")
    proc = subprocess.Popen([NGINX, "-p", f"{p}/", "-c", "nginx.conf", "-g", "daemon off;"])
    get(BACKENDS["a"], "/", deadline=10)
    return proc


def get(port, path, host="x", headers=None, deadline=None, timeout=5):
    """One request on a fresh connection; with a deadline, retried until it answers."""
    end = time.monotonic() + (deadline or 0)
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            c.request("GET", path, headers={"Host": host, **(headers or {})})
            r = c.getresponse()
            body = r.read().decode()
            c.close()
            return r.status, body
        except OSError:
            if deadline is None or time.monotonic() > end:
                raise
            time.sleep(0.01)


def rollup(pid):
    """(RSS, PSS, private) in KiB from smaps_rollup; zeros for a process that is gone."""
    v = {"Rss": 0, "Pss": 0, "Private_Clean": 0, "Private_Dirty": 0}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key = line.split(":")[0]
            if key in v:
                v[key] = int(line.split()[1])
    except OSError:
        pass
    return v["Rss"], v["Pss"], v["Private_Clean"] + v["Private_Dirty"]


def memory(master):
    """Master and workers (RSS, PSS, private per worker), once the numbers stop moving."""
    last = None
    for _ in range(100):
        workers = [rollup(p) for p in children(master)]
        now = (rollup(master), workers)
        if now == last:
            break
        last = now
        time.sleep(0.2)
    m, workers = last
    private = {str(p): rollup(p)[2] for p in children(master)}
    return {"master_rss": m[0], "master_pss": m[1], "worker_private": private,
            "worker_rss": max(w[0] for w in workers), "worker_pss": max(w[1] for w in workers),
            "total_pss": m[1] + sum(w[1] for w in workers), "workers": len(workers)}


def traffic(routes, check):
    """Every rule of every route once, on one keep-alive connection per hostname."""
    conns = {}
    for i in range(routes):
        host = f"h{i % HOSTS}.scale.test"
        c = conns.get(host)
        if c is None:
            c = conns[host] = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        for path, headers, want in ((f"/r{i}", {"x-version": "v2"}, "a"),
                                    (f"/r{i}?env=canary&x=1", {}, "b"),
                                    (f"/r{i}/more", {}, "c")):
            c.request("GET", path, headers={"Host": host, **headers})
            r = c.getresponse()
            body = r.read().decode()
            if r.status != 200 or (check and body != want):
                raise RuntimeError(f"{host}{path}: {r.status} {body!r}, expected 200 {want!r}")
    for c in conns.values():
        c.close()


def timed(cmd):
    """(wall seconds, CPU seconds: user + system) of one run of `cmd`. The CPU figure is the
    one to compare: on a shared machine the wall clock also counts other processes' turns."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """User + system CPU seconds `pid` has used so far (0 for a process that is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, ValueError, IndexError):
        return 0.0


def reload(prefix, master, gen):
    """SIGHUP with generation `gen`; (seconds until a new worker answers it, peak private KiB,
    CPU seconds the reload took)."""
    template = (prefix / "template.conf").read_text()
    (prefix / "nginx.conf").write_text(template.replace("@GEN@", str(gen)))
    before = set(children(master))
    peak = 0
    answered = None
    cpu0 = cpu_s(master)
    new_cpu = {}
    t0 = time.perf_counter()
    os.kill(master, signal.SIGHUP)
    while True:
        procs = [master] + children(master)
        peak = max(peak, sum(rollup(p)[2] for p in procs))
        for p in set(procs) - before - {master}:
            new_cpu[p] = max(new_cpu.get(p, 0.0), cpu_s(p))
        if answered is None:
            try:
                if get(CONTROL, "/generation", timeout=0.2) == (200, str(gen)):
                    answered = time.perf_counter() - t0
            except OSError:
                pass
        # Done once the new workers answer and the old ones are gone.
        if answered is not None and not before & set(procs):
            # CPU: the master's part (reading the configuration, forking) and the new workers'
            # (their start and the few /generation answers).
            return answered, peak, cpu_s(master) - cpu0 + sum(new_cpu.values())
        if time.perf_counter() - t0 > 300:
            raise RuntimeError(f"{prefix}: reload did not finish in 300 s")
        time.sleep(0.01)


ROUNDS = 5
RELOADS = 3


def nginx_t(prefixes):
    """`nginx -t` of every variant, ROUNDS rounds interleaved (a round runs each variant
    once, back to back), so a slow phase of the machine falls on all of them alike: per
    variant the median wall and CPU seconds."""
    runs = {name: [] for name in prefixes}
    for _ in range(ROUNDS):
        for name, prefix in prefixes.items():
            runs[name].append(timed([NGINX, "-p", f"{prefix}/", "-c", "nginx.conf", "-t", "-q"]))
    return {name: {"nginx_t_s": statistics.median(t[0] for t in ts),
                   "nginx_t_cpu_s": statistics.median(t[1] for t in ts)}
            for name, ts in runs.items()}


def run(name, prefix, routes, tested):
    cmd = [NGINX, "-p", f"{prefix}/", "-c", "nginx.conf"]
    r = dict(tested)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd + ["-g", "daemon off;"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        status, _ = get(PORT, "/r0/", host="h0.scale.test", deadline=300)
        r["startup_s"] = time.perf_counter() - t0
        r["start"] = memory(proc.pid)
        traffic(routes, check=not name.startswith("plain"))
        r["traffic"] = memory(proc.pid)
        # Each worker's private memory (Private_Clean + Private_Dirty): what the traffic made
        # it copy or allocate.
        before, after = r["start"]["worker_private"], r["traffic"]["worker_private"]
        r["worker_private_growth"] = max(after[p] - before.get(p, after[p]) for p in after)
        # RELOADS reloads (generations 1, 2, ...): the median time, the highest peak.
        reloads = [reload(prefix, proc.pid, gen) for gen in range(1, RELOADS + 1)]
        r["reload_s"] = statistics.median(x[0] for x in reloads)
        r["reload_peak_private"] = max(x[1] for x in reloads)
        r["reload_cpu_s"] = statistics.median(x[2] for x in reloads)
        r["after_reload"] = memory(proc.pid)
    finally:
        proc.send_signal(signal.SIGQUIT)
        proc.wait(timeout=120)
    errors = [line for line in (prefix / "logs" / "error.log").read_text().splitlines()
              if "[error]" in line or "[alert]" in line or "[emerg]" in line]
    if errors:
        raise RuntimeError(f"{name} R={routes}: {errors[:3]}")
    return r


def mib(kib):
    return f"{kib / 1024:.1f}"


def cpu(r, key):
    return f"{r[key]:.2f} s" if key in r else "-"


def smib(kib):
    return f"{kib / 1024:+.1f}"



def report(results, sizes):
    nginx_v = subprocess.run([NGINX, "-v"], capture_output=True, text=True).stderr.strip()
    njs_v = results.get("njs_version", NJS_VERSION)
    lines = [BEGIN, "", "## NGF-shaped configurations: module vs njs", "",
             f"Produced by `scripts/bench/ngf-scale.sh` in one run (2 cores, `worker_processes auto` = 2);",
             f"`{nginx_v}` (Debian), **njs {njs_v}** with NGF's own `httpmatches.js`.",
             f"Measured on commit {measured_commit()}.",
             "R HTTPRoutes of three rules each (a header match, a query match, a default), ten",
             "hostnames, written by `httproute-nginx`: one matcher location per path and one internal",
             "location per rule, as NGF lays them out. The njs twin is the same file with",
             "`js_import`/`js_preload_object`/`js_content httpmatches.redirect` in place of the",
             "module's directives; **plain** has `return 200` in place of the matcher (the floor).",
             "Worker figures are the larger of the two workers; total PSS is every process.",
             "Traffic: every rule of every route once, each answer checked against its backend.",
             "Reload: SIGHUP until a new worker answers, and the peak of all processes' private",
             "memory (Private_Clean + Private_Dirty) until the old workers have exited; three",
             "reloads per variant (median time, highest peak). `nginx -t`: five rounds that run",
             "every variant once, back to back (medians).", "",
             "Times: wall clock and CPU (user + system; reload: the master's and the new",
             "workers'). Compare the CPU figures: the wall clock of a shared machine also counts",
             "other processes' turns.", "",
             "| R | variant | `nginx -t` wall / CPU | startup | reload wall / CPU |",
             "|---:|---|---:|---:|---:|"]
    for routes in sizes:
        for name, r in variants(results, routes).items():
            lines.append(f"| {routes:,} | {name} | {r['nginx_t_s']:.2f} / {cpu(r, 'nginx_t_cpu_s')} | "
                         f"{r['startup_s']:.2f} s | {r['reload_s']:.2f} / {cpu(r, 'reload_cpu_s')} |")
    lines += ["", "Memory in MiB (RSS / PSS; the worker is the larger of two):", "",
              "| R | variant | master after start | worker after start | master after traffic | "
              "worker after traffic | total PSS after traffic | private during reload (peak) |",
              "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for routes in sizes:
        for name, r in variants(results, routes).items():
            s, t = r["start"], r["traffic"]
            lines.append(
                f"| {routes:,} | {name} | {mib(s['master_rss'])} / {mib(s['master_pss'])} | "
                f"{mib(s['worker_rss'])} / {mib(s['worker_pss'])} | "
                f"{mib(t['master_rss'])} / {mib(t['master_pss'])} | "
                f"{mib(t['worker_rss'])} / {mib(t['worker_pss'])} | {mib(t['total_pss'])} | "
                f"{mib(r['reload_peak_private'])} |")
    sizes_line = ", ".join(f"R = {n:,}: {results[str(n)]['matches_json'] / 1024:,.0f} KiB"
                           for n in sizes)
    lines += ["", f"matches.json: {sizes_line}."]
    lines += ["", f"What each adds over plain after traffic over every route, from the same run (total",
              f"PSS: every process; the njs-loaded column is njs's part that comes before any",
              f"matching); growth: the most any one worker's private memory grew during that traffic:", "",
              f"| R | module: worker / total PSS | njs {njs_v}: worker / total PSS | njs loaded, unused: "
              "total PSS | module / njs, total PSS | worker private growth: plain / module / njs "
              "| reload CPU: plain / module / njs | `nginx -t` CPU: plain / module / njs |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for routes in sizes:
        v = variants(results, routes)
        if "njs" not in v:
            continue
        p, m, n, nl = v["plain"], v["module"], v["njs"], v["plain, njs loaded"]

        def added(r, key):
            return r["traffic"][key] - p["traffic"][key]

        ratio = added(m, "total_pss") / added(n, "total_pss") if added(n, "total_pss") > 0 else 0
        ratio = f"{ratio:.2f}x" if added(m, "total_pss") > 0 else "<= 0 (below plain)"
        growth = " / ".join(f"{mib(r.get('worker_private_growth', 0))}" for r in (p, m, n))
        lines.append(
            f"| {routes:,} | {smib(added(m, 'worker_pss'))} / {smib(added(m, 'total_pss'))} MiB | "
            f"{smib(added(n, 'worker_pss'))} / {smib(added(n, 'total_pss'))} MiB | "
            f"{smib(added(nl, 'total_pss'))} MiB | {ratio} | {growth} MiB | "
            f"{' / '.join(cpu(r, 'reload_cpu_s') for r in (p, m, n))} | "
            f"{' / '.join(cpu(r, 'nginx_t_cpu_s') for r in (p, m, n))} |")
    lines += ["", *NOTES]
    lines += ["", "![NGF-shaped configurations: memory and reload time](ngf-scale.png)", "",
              "Reproduce: `NJS_HTTPMATCHES=/path/to/ngf/internal/controller/nginx/modules/src/httpmatches.js "
              "NJS_MODULE=/path/to/ngx_http_js_module.so scripts/bench/ngf-scale.sh` (or `NJS_SRC=/path/to/njs`, "
              "built for Debian's NGINX; neither: Debian's njs 0.7.9; `NGF_SCALE_SIZES=200,1000` for "
              "fewer sizes).", "", END]
    section = "\n".join(lines)
    doc = ROOT / "docs" / "BENCHMARKS.md"
    text = doc.read_text()
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(text)
    print(section)


def variants(results, routes):
    return results[str(routes)]["variants"]


def plot(results, sizes):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.5))
    panels = [("total PSS after traffic, all processes (MiB)",
               lambda r: r["traffic"]["total_pss"] / 1024),
              ("reload: CPU of master and new workers (s)",
               lambda r: r.get("reload_cpu_s", r["reload_s"])),
              ("private memory during reload (MiB)", lambda r: r["reload_peak_private"] / 1024)]
    for ax, (title, value) in zip(axes, panels):
        for name, style in (("njs", "s-"), ("plain, njs loaded", "x--"), ("module", "o-"),
                            ("plain", "^:")):
            pts = [(n, value(variants(results, n)[name])) for n in sizes
                   if name in variants(results, n)]
            if pts:
                label = name.replace("njs", f"njs {results.get('njs_version', NJS_VERSION)}")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
        ax.set_xscale("log")
        ax.set_xlabel("HTTPRoutes (3 rules each)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("NGF-shaped configurations on NGINX 1.22.1: module vs njs vs plain")
    fig.tight_layout()
    fig.savefig(ROOT / "docs" / "ngf-scale.png", dpi=100)


def main():
    WORK.mkdir(parents=True, exist_ok=True)
    if os.environ.get("NGF_SCALE_REPORT_ONLY"):
        results = json.loads((WORK / "results.json").read_text())
        sizes = [int(n) for n in results if n.isdigit()]
        report(results, sizes)
        plot(results, sizes)
        return
    if not NJS_SCRIPT:
        print("NJS_HTTPMATCHES not set: no njs rows", file=sys.stderr)
    results = {"njs_version": NJS_VERSION}
    back = backend()
    try:
        for routes in SIZES:
            prefixes, matches_json, conf_bytes = generate(routes)
            results[str(routes)] = {"matches_json": matches_json, "nginx_conf": conf_bytes,
                                    "variants": {}}
            order = [n for n in ("plain", "module", "njs", "plain, njs loaded") if n in prefixes]
            print(f"R={routes} nginx -t, {ROUNDS} interleaved rounds ...", file=sys.stderr, flush=True)
            tested = nginx_t({n: prefixes[n] for n in order})
            for name in order:
                if name in prefixes:
                    print(f"R={routes} {name} ...", file=sys.stderr, flush=True)
                    r = run(name, prefixes[name], routes, tested[name])
                    results[str(routes)]["variants"][name] = r
                    print(f"  {json.dumps(r)}", file=sys.stderr, flush=True)
            (WORK / "results.json").write_text(json.dumps(results, indent=1))
    finally:
        back.send_signal(signal.SIGQUIT)
        back.wait(timeout=30)
    if os.environ.get("SMOKE"):
        print("ngf-scale: smoke run, docs/ left as they are", file=sys.stderr)
        return
    report(results, SIZES)
    plot(results, SIZES)


if __name__ == "__main__":
    main()
