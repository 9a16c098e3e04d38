//! `explain` against the running NGINX: for every golden set of the generator
//! (crates/httproute-nginx/tests/data: cafe, reasons, and a TLS set made of its tls/ files)
//! and every upstream example shape (tests/common/shapes.rs), hundreds of generated requests
//! (dot segments, percent-encoded bytes, `%2F`, repeated slashes, case in host and path,
//! headers, query parameters, methods, absolute targets) go to NGINX running the generated
//! configuration, and for each one explain's answer (the backend, or the status) must be
//! NGINX's. The backends are servers of another NGINX that name themselves in a header.
//!
//! Requests are generated from a fixed seed (the same every run) out of the plan's own
//! hostnames, paths, header and parameter names and values, mutated. `EXPLAIN_DIFF_SHOW=1`
//! prints each request and explain's answer.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use common::{Nginx, Prefix, free_ports, patience};
use httproute_nginx::explain::{Request, explain_request};
use httproute_nginx::model::{Inputs, load};
use httproute_nginx::plan::{Loc, Plan, Target};
use httproute_nginx::{BackendMap, Options, plan_for};

/// Requests per set.
const REQUESTS: usize = 300;

fn data(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/httproute-nginx/tests/data").join(p)
}

/// The TLS set: tests/data/tls's certificate as a Secret among the manifests, the same files
/// as a Secret given with --certificate, and a listener whose Secret is given nowhere.
fn tls_set() -> (String, BTreeMap<String, (String, String)>) {
    use std::fmt::Write as _;
    let indent = |f: &str| {
        std::fs::read_to_string(data(f)).unwrap().lines().fold(String::new(), |mut s, l| {
            let _ = writeln!(s, "    {l}");
            s
        })
    };
    let yaml = format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: inline-cert, namespace: default}}
type: kubernetes.io/tls
stringData:
  tls.crt: |
{}  tls.key: |
{}---
kind: Gateway
metadata: {{name: gw}}
spec:
  listeners:
  - {{name: http, port: 80, protocol: HTTP}}
  - {{name: inline, port: 443, protocol: HTTPS, hostname: "*.secure.test", tls: {{certificateRefs: [{{name: inline-cert}}]}}}}
  - {{name: given, port: 443, protocol: HTTPS, hostname: given.test, tls: {{certificateRefs: [{{name: given-cert}}]}}}}
  - {{name: missing, port: 443, protocol: HTTPS, hostname: missing.test, tls: {{certificateRefs: [{{name: nowhere}}]}}}}
---
kind: HTTPRoute
metadata: {{name: secure}}
spec:
  parentRefs: [{{name: gw, sectionName: inline}}]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /app}}}}]
    backendRefs: [{{name: app, port: 80}}]
  - matches: [{{path: {{type: Exact, value: /app/login}}, method: POST}}]
    backendRefs: [{{name: login, port: 80}}]
---
kind: HTTPRoute
metadata: {{name: exact-secure}}
spec:
  parentRefs: [{{name: gw, sectionName: inline}}]
  hostnames: [a.secure.test]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /app}}, headers: [{{name: x-env, value: canary}}]}}]
    backendRefs: [{{name: exact-secure, port: 80}}]
---
kind: HTTPRoute
metadata: {{name: given}}
spec:
  parentRefs: [{{name: gw, sectionName: given}}, {{name: gw, sectionName: missing}}]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /}}, headers: [{{name: x-env, value: canary}}]}}]
    backendRefs: [{{name: canary, port: 80}}]
  - backendRefs: [{{name: given, port: 80}}]
---
kind: HTTPRoute
metadata: {{name: redirect}}
spec:
  parentRefs: [{{name: gw, sectionName: http}}]
  rules:
  - filters: [{{type: RequestRedirect, requestRedirect: {{scheme: https}}}}]
  - matches: [{{path: {{type: RegularExpression, value: "/static/[a-z]+\\.css"}}}}]
    backendRefs: [{{name: static, port: 80}}]
"#,
        indent("tls/test.crt"),
        indent("tls/test.key")
    );
    let files =
        (data("tls/test.crt").display().to_string(), data("tls/test.key").display().to_string());
    (yaml, BTreeMap::from([("default/given-cert".to_owned(), files)]))
}

/// Routes of exact, nested wildcard and no hostnames on two listeners of no hostname (ports
/// whose servers would be written once if they did not fall back), and on a `*.test`
/// listener of a third port: each server holds its own hostname's routes and falls
/// back (`http_matches_fallback`) to the next less specific hostname's server, so requests
/// pass through up to four servers, with conditions that fail at each.
const HOSTNAME_TIERS: &str = "kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  listeners:
  - {name: any, port: 8080, protocol: HTTP}
  - {name: wild, port: 8081, protocol: HTTP, hostname: '*.test'}
  - {name: again, port: 8082, protocol: HTTP}
---
kind: HTTPRoute
metadata: {name: exact, namespace: default, creationTimestamp: '2024-01-01T00:00:00Z'}
spec:
  parentRefs: [{name: gw}]
  hostnames: [b.a.test, c.b.a.test]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}, headers: [{name: x-t, value: exact}]}]
    backendRefs: [{name: exact, port: 80}]
  - matches: [{path: {type: Exact, value: /x}, method: POST}]
    backendRefs: [{name: exact-x, port: 80}]
---
kind: HTTPRoute
metadata: {name: wild-a, namespace: default, creationTimestamp: '2024-01-01T00:01:00Z'}
spec:
  parentRefs: [{name: gw}]
  hostnames: ['*.a.test']
  rules:
  - matches: [{path: {type: PathPrefix, value: /x}, headers: [{name: x-t, value: wild-a}]}]
    backendRefs: [{name: wild-a, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /x/y}}]
    backendRefs: [{name: wild-a-y, port: 80}]
---
kind: HTTPRoute
metadata: {name: wild, namespace: default, creationTimestamp: '2024-01-01T00:02:00Z'}
spec:
  parentRefs: [{name: gw}]
  hostnames: ['*.test']
  rules:
  - matches: [{path: {type: PathPrefix, value: /x}, queryParams: [{name: q, value: wild}]}]
    backendRefs: [{name: wild, port: 80}]
---
kind: HTTPRoute
metadata: {name: none, namespace: default, creationTimestamp: '2024-01-01T00:03:00Z'}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /x}}, {path: {type: Exact, value: /}}]
    backendRefs: [{name: none, port: 80}]
---
# Port 8082's catch-all only: the host servers of 8080 and 8082 are alike and written once,
# and each port's fallback reaches its own catch-all.
kind: HTTPRoute
metadata: {name: only-again, namespace: default, creationTimestamp: '2024-01-01T00:04:00Z'}
spec:
  parentRefs: [{name: gw, sectionName: again}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /only}}]
    backendRefs: [{name: only-again, port: 80}]
";

/// One set: its manifests (directories or files), the --certificate Secrets, and the
/// backendRefs left without --backend (so that their status is compared too).
struct Set {
    name: String,
    inputs: Vec<PathBuf>,
    certificates: BTreeMap<String, (String, String)>,
    unresolved: &'static [&'static str],
}

fn sets() -> Vec<Set> {
    let scratch = |name: &str, yaml: &str| {
        let dir = Prefix::scratch(&format!("diff-{name}-in"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("set.yaml"), yaml).unwrap();
        dir
    };
    let mut out = vec![
        Set {
            name: "golden-cafe".into(),
            inputs: vec![data("cafe")],
            certificates: BTreeMap::new(),
            unresolved: &[],
        },
        Set {
            name: "golden-reasons".into(),
            inputs: vec![data("reasons")],
            certificates: BTreeMap::new(),
            // A Service without ready endpoints (503) and one that does not exist (500).
            unresolved: &["infra/idle:80", "infra/missing:80"],
        },
    ];
    out.push(Set {
        name: "hostname-tiers".into(),
        inputs: vec![scratch("tiers", HOSTNAME_TIERS)],
        certificates: BTreeMap::new(),
        unresolved: &[],
    });
    let (yaml, certificates) = tls_set();
    out.push(Set {
        name: "golden-tls".into(),
        inputs: vec![scratch("tls", &yaml)],
        certificates,
        unresolved: &[],
    });
    // The shapes' Secrets come from the cluster: given here with --certificate, but for one
    // set, whose HTTPS listener then refuses the handshake.
    let files =
        (data("tls/test.crt").display().to_string(), data("tls/test.key").display().to_string());
    for (name, yaml) in common::shapes::SETS {
        let inputs = vec![scratch(name, yaml)];
        let certificates = if name == "simple-http-https" {
            BTreeMap::new()
        } else {
            let model = load(&inputs).expect("load");
            listener_secrets(&model).into_iter().map(|s| (s, files.clone())).collect()
        };
        out.push(Set { name: name.into(), inputs, certificates, unresolved: &[] });
    }
    out
}

/// Every Secret a listener of `model` names, as `NAMESPACE/NAME`.
fn listener_secrets(model: &Inputs) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for gw in &model.gateways {
        for l in &gw.spec.listeners {
            for c in l.tls.iter().flat_map(|t| &t.certificate_refs) {
                let ns = c.namespace.as_deref().unwrap_or(&gw.metadata.namespace);
                out.insert(format!("{ns}/{}", c.name));
            }
        }
    }
    out
}

/// Every `NAMESPACE/NAME:PORT` a route of `model` refers to.
fn backend_refs(model: &Inputs) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for r in &model.routes {
        for rule in &r.spec.rules {
            for b in &rule.backend_refs {
                if let Some(port) = b.port {
                    let ns = b.namespace.as_deref().unwrap_or(&r.metadata.namespace);
                    keys.insert(format!("{ns}/{}:{port}", b.name));
                }
            }
        }
    }
    keys
}

/// A deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What the plan is made of: the words requests are built from.
#[derive(Default)]
struct Vocabulary {
    /// The names of servers that serve routes (then `hosts`, all the others, weighted less).
    served: Vec<String>,
    hosts: Vec<String>,
    /// The routes' own paths (then `paths`, all the others, weighted less).
    route_paths: Vec<String>,
    paths: Vec<String>,
    headers: Vec<(String, String)>,
    params: Vec<(String, String)>,
    methods: Vec<String>,
}

fn vocabulary(plan: &Plan) -> Vocabulary {
    let mut v = Vocabulary::default();
    let mut hosts = BTreeSet::from(["other.test".to_owned(), "localhost".to_owned()]);
    let mut paths =
        BTreeSet::from(["/".to_owned(), "/x".to_owned(), "/_httproute-internal/0".to_owned()]);
    let (mut headers, mut params, mut methods) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    let mut served = BTreeSet::new();
    let mut route_paths = BTreeSet::new();
    for s in plan.ports.iter().flat_map(|p| &p.servers) {
        if !s.rules.is_empty() {
            let name = s.hostname.as_deref().unwrap_or("localhost");
            served.insert(name.strip_prefix("*.").map_or(name.to_owned(), |b| format!("a.{b}")));
        }
        if let Some(h) = &s.hostname {
            match h.strip_prefix("*.") {
                Some(base) => {
                    hosts.insert(format!("a.{base}"));
                    hosts.insert(format!("b.c.{base}"));
                    hosts.insert(base.to_owned());
                }
                None => {
                    hosts.insert(h.clone());
                }
            }
        }
        for l in &s.locations {
            match &l.loc {
                Loc::Exact(p) | Loc::Prefix(p) => paths.insert(p.clone()),
            };
            for c in l.candidates() {
                paths.insert(c.path.clone());
                if c.path_kind != httproute_nginx::plan::PathKind::Regex {
                    route_paths.insert(c.path.clone());
                }
                // The entry's `NAME:TYPE:VALUE` and `NAME=TYPE=VALUE` (names hold neither sign).
                for h in &c.entry.headers {
                    let mut it = h.splitn(3, ':');
                    if let (Some(n), Some(_), Some(value)) = (it.next(), it.next(), it.next()) {
                        headers.insert((n.to_owned(), value.to_owned()));
                    }
                }
                for q in &c.entry.params {
                    let mut it = q.splitn(3, '=');
                    if let (Some(n), Some(_), Some(value)) = (it.next(), it.next(), it.next()) {
                        params.insert((n.to_owned(), value.to_owned()));
                    }
                }
                if let Some(m) = &c.entry.method {
                    methods.insert(m.clone());
                }
            }
        }
    }
    // Regex paths: a few strings they match (and the pattern itself, which mostly does not).
    for p in ["/static/site.css", "/static/Site.css", "/api/v2/items/42"] {
        paths.insert(p.to_owned());
    }
    headers.insert(("x-env".into(), "canary".into()));
    params.insert(("great".into(), "example".into()));
    v.served = served.into_iter().collect();
    if v.served.is_empty() {
        v.served = hosts.iter().cloned().collect();
    }
    v.hosts = hosts.into_iter().collect();
    v.route_paths = route_paths.into_iter().collect();
    if v.route_paths.is_empty() {
        v.route_paths = paths.iter().cloned().collect();
    }
    v.paths = paths.into_iter().collect();
    v.headers = headers.into_iter().collect();
    v.params = params.into_iter().collect();
    v.methods = methods.into_iter().collect();
    v
}

/// A generated request: port, Host (None: no Host header), target, method, headers.
#[derive(Debug, Clone)]
struct Req {
    port: u16,
    tls: bool,
    host: Option<String>,
    target: String,
    method: String,
    headers: Vec<(String, String)>,
}

fn flip_case(rng: &mut Rng, s: &str) -> String {
    s.chars()
        .map(|c| {
            if rng.chance(30) {
                if c.is_ascii_lowercase() { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() }
            } else {
                c
            }
        })
        .collect()
}

/// `s` with some bytes percent-encoded (upper or lower hex).
fn encode_some(rng: &mut Rng, s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b != b'/' && rng.chance(15) {
            if rng.chance(50) {
                out.push_str(&format!("%{b:02X}"));
            } else {
                out.push_str(&format!("%{b:02x}"));
            }
        } else {
            out.push(b as char);
        }
    }
    out
}

fn mutate_path(rng: &mut Rng, v: &Vocabulary) -> String {
    let mut p = if rng.chance(65) { rng.pick(&v.route_paths) } else { rng.pick(&v.paths) }.clone();
    // Paths as a client writes them: a space encoded (sent raw now and then: a 400).
    if rng.chance(90) {
        p = p.replace(' ', "%20");
    }
    if !p.starts_with('/') {
        p.insert(0, '/');
    }
    // A suffix: another segment, a non-boundary tail, a trailing slash.
    match rng.below(6) {
        0 => p.push_str("/latte"),
        1 => p.push('x'),
        2 => p.push('/'),
        _ => {}
    }
    // Splices NGINX resolves, inserted at a segment boundary mostly; now and then one it
    // refuses, or anywhere.
    let benign: &[&str] = &[
        "/../",
        "/./",
        "//",
        "/%2e%2e/",
        "/%2E%2E/",
        "/.%2e/",
        "%2F",
        "%2f",
        "/%2F/",
        "/x/../",
        "/./././",
        "/x/%2e%2e/",
        "/x/..%2F",
        "%2F%2F",
        "/.",
        "/x/..",
        "+",
        ";x",
        "%20",
        "%C3%A9",
        "%FF",
        "%25",
        "%3F",
        "%23",
        "#frag",
    ];
    let refused: &[&str] = &["/../../", "%00", "%zz", "%", "%2", "/..", "%2e%2e/"];
    let splices = if rng.chance(50) { 0 } else { 1 + rng.below(2) };
    for _ in 0..splices {
        let bounds: Vec<usize> = p.match_indices('/').map(|(i, _)| i).chain([p.len()]).collect();
        let at = if rng.chance(80) { *rng.pick(&bounds) } else { rng.below(p.len() + 1) };
        let s = if rng.chance(90) { rng.pick(benign) } else { rng.pick(refused) };
        p.insert_str(at, s);
    }
    if rng.chance(20) {
        p = encode_some(rng, &p);
    }
    if rng.chance(10) {
        p = flip_case(rng, &p);
    }
    if rng.chance(10) {
        p = format!("/{p}");
    }
    if !p.starts_with('/') && rng.chance(90) {
        p.insert(0, '/');
    }
    if rng.chance(35) {
        let mut q = Vec::new();
        for _ in 0..=rng.below(3) {
            let (n, val) = if rng.chance(70) && !v.params.is_empty() {
                rng.pick(&v.params).clone()
            } else {
                ("TEST".to_owned(), "v1".to_owned())
            };
            let n = if rng.chance(20) { flip_case(rng, &n) } else { n };
            let val = if rng.chance(20) { encode_some(rng, &val) } else { val };
            q.push(match rng.below(5) {
                0 => n,
                1 => format!("{n}="),
                _ => format!("{n}={val}"),
            });
        }
        p = format!("{p}?{}", q.join("&"));
    }
    p
}

fn request(rng: &mut Rng, v: &Vocabulary, ports: &[(u16, bool)]) -> Req {
    let &(port, tls) = rng.pick(ports);
    let mut host = if rng.chance(70) { rng.pick(&v.served) } else { rng.pick(&v.hosts) }.clone();
    if rng.chance(25) {
        host = flip_case(rng, &host);
    }
    if !tls {
        match rng.below(12) {
            0 => host.push('.'),
            1 => host.push_str(&format!(":{port}")),
            2 => host.push_str(".:80"),
            3 if rng.chance(30) => host = format!("{host}..x"),
            _ => {}
        }
    }
    let host = (tls || !rng.chance(2)).then_some(host);
    let mut target = mutate_path(rng, v);
    if rng.chance(5) {
        let named = rng.pick(&v.hosts).clone();
        target = format!("http://{}{target}", flip_case(rng, &named));
    }
    let methods = ["GET", "GET", "GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"];
    let mut method = if !v.methods.is_empty() && rng.chance(25) {
        rng.pick(&v.methods).clone()
    } else {
        rng.pick(&methods).to_string()
    };
    if rng.chance(2) {
        method = "TRACE".into();
    }
    let mut headers = Vec::new();
    for _ in 0..rng.below(3) {
        let (n, val) = if !v.headers.is_empty() && rng.chance(80) {
            rng.pick(&v.headers).clone()
        } else {
            ("version".into(), "v2".into())
        };
        let n = match rng.below(6) {
            0 => flip_case(rng, &n),
            1 => n.replace('-', "_"),
            _ => n,
        };
        let val = if rng.chance(20) { flip_case(rng, &val) } else { val };
        headers.push((n, val));
    }
    Req { port, tls, host, target, method, headers }
}

/// What came back: the status and the backend that answered (its X-Echo-Backend header),
/// or `None` for no HTTP answer (connection or handshake refused).
type Answer = Option<(u16, Option<String>)>;

/// A keep-alive connection to the gateway, plain or through `openssl s_client`.
enum Conn {
    Plain(BufReader<TcpStream>, TcpStream),
    Tls(Child, BufReader<ChildStdout>, ChildStdin),
}

impl Conn {
    fn open(port: u16, sni: Option<&str>) -> Option<Conn> {
        match sni {
            None => {
                let s = TcpStream::connect(("127.0.0.1", port)).ok()?;
                s.set_read_timeout(Some(patience())).ok()?;
                Some(Conn::Plain(BufReader::new(s.try_clone().ok()?), s))
            }
            Some(name) => {
                let mut child = Command::new("openssl")
                    .args(["s_client", "-quiet", "-no_ign_eof", "-connect"])
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("-servername")
                    .arg(name)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("run openssl s_client");
                let out = BufReader::new(child.stdout.take().expect("piped stdout"));
                let inp = child.stdin.take().expect("piped stdin");
                Some(Conn::Tls(child, out, inp))
            }
        }
    }

    fn io(&mut self) -> (&mut dyn BufRead, &mut dyn Write) {
        match self {
            Conn::Plain(r, w) => (r, w),
            Conn::Tls(_, r, w) => (r, w),
        }
    }

    /// Sends one request, reads one answer: (answer, whether the connection stays open).
    fn exchange(&mut self, bytes: &[u8], head_only: bool) -> (Answer, bool) {
        let (r, w) = self.io();
        if w.write_all(bytes).and_then(|()| w.flush()).is_err() {
            return (None, false);
        }
        let mut status_line = String::new();
        if r.read_line(&mut status_line).unwrap_or(0) == 0 {
            return (None, false);
        }
        let status: u16 = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let (mut length, mut chunked, mut close, mut backend) = (0usize, false, false, None);
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return (Some((status, backend)), false);
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let Some((n, val)) = line.split_once(':') else { continue };
            let val = val.trim();
            match n.to_ascii_lowercase().as_str() {
                "content-length" => length = val.parse().unwrap_or(0),
                "transfer-encoding" => chunked = val.eq_ignore_ascii_case("chunked"),
                "connection" => close = val.eq_ignore_ascii_case("close"),
                "x-echo-backend" => backend = Some(val.to_owned()),
                _ => {}
            }
        }
        if !head_only {
            if chunked {
                loop {
                    let mut size = String::new();
                    if r.read_line(&mut size).unwrap_or(0) == 0 {
                        return (Some((status, backend)), false);
                    }
                    let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                    let mut chunk = vec![0; n + 2];
                    if r.read_exact(&mut chunk).is_err() {
                        return (Some((status, backend)), false);
                    }
                    if n == 0 {
                        break;
                    }
                }
            } else {
                let mut body = vec![0; length];
                if r.read_exact(&mut body).is_err() {
                    return (Some((status, backend)), false);
                }
            }
        }
        (Some((status, backend)), !close)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Conn::Tls(child, ..) = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn wire(r: &Req) -> Vec<u8> {
    let mut s = format!("{} {} HTTP/1.1\r\n", r.method, r.target);
    if let Some(h) = &r.host {
        s.push_str(&format!("Host: {h}\r\n"));
    }
    for (n, v) in &r.headers {
        s.push_str(&format!("{n}: {v}\r\n"));
    }
    s.push_str("\r\n");
    s.into_bytes()
}

/// The SNI for a TLS request: its host as NGINX reads it.
fn sni(host: &str) -> String {
    httproute_nginx::nginx_request::validate_host(host.as_bytes())
        .unwrap_or_else(|_| host.to_owned())
}

/// The backends' NGINX: a server per backend that names itself in `X-Echo-Backend`.
fn backends(keys: &BTreeSet<String>) -> (Nginx, BackendMap, Vec<u16>) {
    let ports = free_ports(keys.len() + 1 + 64);
    let mut body = String::new();
    let mut map = BackendMap::new();
    for (key, port) in keys.iter().zip(&ports) {
        body.push_str(&format!(
            "server {{ listen 127.0.0.1:{port}; add_header X-Echo-Backend \"{key}\" always; return 200 \"{key}\\n\"; }}\n"
        ));
        map.insert(key.clone(), format!("127.0.0.1:{port}"));
    }
    body.push_str("server { listen 127.0.0.1:{PORT}; return 404; }\n");
    let p = Prefix::new_on("diff-backends", &body, &[], ports[keys.len()]);
    let (ok, text) = p.test();
    assert!(ok, "{text}");
    (p.start(), map, ports[keys.len() + 1..].to_vec())
}

/// Whether explain's answer is NGINX's.
fn agrees(
    e: &httproute_nginx::explain::Explanation,
    got: &Answer,
    who: &BTreeMap<String, String>,
) -> bool {
    match (e.status, got) {
        (0, None) => true,
        (200, Some((status, backend))) => e.backends.iter().any(|t| match t {
            Target::Upstream { servers, .. } => {
                *status == 200 && servers.iter().any(|s| who.get(s) == backend.as_ref())
            }
            Target::Status(code) => status == code,
            Target::Resolve(_) => *status == 502,
            // The manifests here have no InferencePool: an answer naming one is wrong.
            Target::Inference(_) => false,
        }),
        (code, Some((status, backend))) => code == *status && backend.is_none(),
        _ => false,
    }
}

#[test]
fn explain_answers_as_the_running_nginx_does() {
    let sets = sets();
    let models: Vec<Inputs> = sets.iter().map(|s| load(&s.inputs).expect("load")).collect();
    let all_keys: BTreeSet<String> = models.iter().flat_map(backend_refs).collect();
    let (backend, full_map, mut spare_ports) = backends(&all_keys);
    let who: BTreeMap<String, String> =
        full_map.iter().map(|(k, v)| (v.clone(), k.clone())).collect();
    let mut report = Vec::new();
    let mut disagreements = Vec::new();
    for (set, mut model) in sets.into_iter().zip(models) {
        // The set's listener ports become free loopback ports.
        let mut port_of: BTreeMap<u16, u16> = BTreeMap::new();
        for gw in &mut model.gateways {
            for l in &mut gw.spec.listeners {
                let next = *port_of
                    .entry(l.port)
                    .or_insert_with(|| spare_ports.pop().expect("a spare port"));
                l.port = next;
            }
        }
        let map: BackendMap = full_map
            .iter()
            .filter(|(k, _)| !set.unresolved.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let opts =
            Options { certificates: set.certificates.clone(), ..common::generator_options() };
        let (generated, _) = httproute_nginx::generate_from(&model, &map, &opts).expect("generate");
        let plan = plan_for(&model, &map, &opts);
        let out = Prefix::scratch(&format!("diff-{}-out", set.name));
        httproute_nginx::write_dir(&out, &generated).unwrap();
        let first = plan.ports.first().expect("a port").port;
        let p = Prefix::existing(out, "nginx.conf", first);
        let (ok, text) = p.test();
        assert!(ok, "{}: nginx -t:\n{text}\n{}", set.name, generated.nginx_conf);
        let n = p.start();

        // In the order of the set's own ports: the same requests whatever ports were free.
        let original: BTreeMap<u16, u16> = port_of.iter().map(|(&a, &b)| (b, a)).collect();
        let mut ports: Vec<(u16, bool)> = plan.ports.iter().map(|p| (p.port, p.tls)).collect();
        ports.sort_by_key(|p| original.get(&p.0).copied());
        let vocabulary = vocabulary(&plan);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15
            ^ set.name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))));
        let mut conns: BTreeMap<(u16, Option<String>), Conn> = BTreeMap::new();
        let mut wrong = 0;
        // What explain answered, by kind: a backend, or the status.
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        // The issue's examples first, each with the backend NGINX must answer from.
        let fixed: Vec<(Req, &str)> = if set.name == "golden-cafe" {
            [
                ("/coffee/../tea", "default/tea-svc:80"),
                ("/coffee/%2e%2e/tea", "default/tea-svc:80"),
                ("/coffee%2Flatte", "default/coffee-v1-svc:80"),
            ]
            .into_iter()
            .map(|(target, want)| {
                let r = Req {
                    port: ports[0].0,
                    tls: false,
                    host: Some("cafe.example.com".into()),
                    target: target.into(),
                    method: "GET".into(),
                    headers: vec![],
                };
                (r, want)
            })
            .collect()
        } else {
            Vec::new()
        };
        let count = fixed.len() + REQUESTS;
        let mut fixed = fixed.into_iter();
        for _ in 0..count {
            let (r, want) = match fixed.next() {
                Some((r, want)) => (r, Some(want)),
                None => (request(&mut rng, &vocabulary, &ports), None),
            };
            let e = explain_request(
                &plan,
                &Request {
                    port: Some(r.port),
                    method: r.method.clone(),
                    host: r.host.clone().unwrap_or_default(),
                    path: r.target.clone(),
                    headers: r.headers.clone(),
                    query: String::new(),
                },
            );
            let key = (r.port, r.tls.then(|| sni(r.host.as_deref().unwrap_or(""))));
            let got = loop {
                let pooled = conns.remove(&key);
                let fresh = pooled.is_none();
                let Some(mut conn) = pooled.or_else(|| Conn::open(key.0, key.1.as_deref())) else {
                    break None;
                };
                let (got, open) = conn.exchange(&wire(&r), r.method == "HEAD");
                if open {
                    conns.insert(key.clone(), conn);
                }
                // A kept-alive connection the server had closed: once more on a new one.
                if got.is_none() && !fresh {
                    continue;
                }
                break got;
            };
            let kind = match e.status {
                200 => "backend".to_owned(),
                0 => "no answer".to_owned(),
                code => code.to_string(),
            };
            if std::env::var_os("EXPLAIN_DIFF_SHOW").is_some() {
                eprintln!(
                    "{}: {kind}: {} {} Host: {:?} {:?}",
                    set.name, r.method, r.target, r.host, r.headers
                );
            }
            *seen.entry(kind).or_default() += 1;
            if let Some(want) = want {
                assert_eq!(got, Some((200, Some(want.to_owned()))), "{r:?}");
            }
            if !agrees(&e, &got, &who) {
                wrong += 1;
                disagreements.push(format!(
                    "{}: {r:?}\n  NGINX: {got:?}\n  explain: {} {:?}\n{}",
                    set.name, e.status, e.backends, e.text
                ));
            }
        }
        drop(conns);
        report.push(format!("{}: {count} requests ({seen:?}), {wrong} disagreements", set.name));
        n.finish();
    }
    backend.finish();
    for d in &disagreements {
        eprintln!("{d}");
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}\n{}",
        disagreements.len(),
        report.join("\n"),
        disagreements.iter().take(15).cloned().collect::<Vec<_>>().join("\n")
    );
}
