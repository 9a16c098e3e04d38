//! The differential of #32: NGF's own `epp.js` on njs 1.0.1 (Debian's NGINX 1.22) against the
//! module's `http_matches_epp` (the NGINX under test), the same table of cases against the same
//! fake shim and echo backend (tests/common/epp_shim.rs). For each case: what the shim
//! received, what the backend received, the client's status and body. Equal, except the
//! deliberate differences listed in [`DIFFERENCES`], which are asserted to be differences.
//!
//! The njs side needs `/usr/sbin/nginx` (Debian's `nginx`, scripts/install-deps.sh), njs 1.0.1
//! built for it (`NGX_MATCHES_NJS_MODULE`, default `/work/shared/njs-1.0.1/...`) and NGF's
//! `epp.js` (`NGX_MATCHES_EPP_JS`, default `/work/shared/reference/ngf/epp.js`; not part of
//! this repository). Without one of them the test says so on stderr and passes without the
//! comparison (`NGX_MATCHES_REQUIRE_NJS=1` makes that a failure). The one change made to
//! epp.js: its `SHIM_URI` constant names the fake shim's port instead of 54800 (asserted to be
//! the only change).

mod common;

use common::epp_shim::{Mode, Received, Server};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const INTERNAL: &str = "/_ngf-internal-proxy-pass-rule0-route0-backend0-inference";

fn env_path(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| default.into())
}

/// The njs side's files, or why they are missing.
fn njs_side() -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let nginx = env_path("NGX_MATCHES_NJS_NGINX", "/usr/sbin/nginx");
    let module = env_path("NGX_MATCHES_NJS_MODULE", "/work/shared/njs-1.0.1/ngx_http_js_module.so");
    let epp = env_path("NGX_MATCHES_EPP_JS", "/work/shared/reference/ngf/epp.js");
    for (what, p) in [("Debian's nginx", &nginx), ("njs 1.0.1", &module), ("NGF's epp.js", &epp)] {
        if !p.exists() {
            return Err(format!("{what}: no {}", p.display()));
        }
    }
    Ok((nginx, module, epp))
}

/// One request of the table.
struct Case {
    name: &'static str,
    mode: Mode,
    /// The location asked (`/inference`; `/never`, the same with a 1 s timeout; `/no-host`,
    /// where `$epp_host` is not set).
    path: &'static str,
    query: &'static str,
    method: &'static str,
    headers: Vec<(String, String)>,
    body: Body,
    /// Sent by an HTTP/2 client (curl, prior knowledge) instead of raw HTTP/1.1.
    h2: bool,
}

enum Body {
    None,
    Length(Vec<u8>),
    Chunked(Vec<u8>),
}

/// The shim's endpoint value is filled in at run time (the echo's port).
const ECHO: &str = "@ECHO@";

fn case(name: &'static str, mode: Mode) -> Case {
    Case {
        name,
        mode,
        path: "/inference",
        query: "",
        method: "GET",
        headers: Vec::new(),
        body: Body::None,
        h2: false,
    }
}

fn table() -> Vec<Case> {
    let ep = || Mode::Endpoint(ECHO.into());
    let post = |name, body: Body| Case { method: "POST", body, ..case(name, ep()) };
    let kib = |n: usize| (0..n * 1024).map(|i| b'a' + (i % 26) as u8).collect::<Vec<u8>>();
    vec![
        case("200 with the endpoint", ep()),
        case("200 without the endpoint", Mode::NoEndpoint),
        case("500 with a body", Mode::Status(500, "picker failed: no pods".into())),
        case("slow: answered after release", Mode::Held(ECHO.into())),
        Case { path: "/never", ..case("never answers (1s timeout)", Mode::Never) },
        case("closes without answering", Mode::Close),
        case("shim down", Mode::Down),
        Case {
            mode: Mode::Continue(ECHO.into()),
            headers: vec![("Expect".into(), "100-continue".into())],
            ..post("100 Continue then 200", Body::Length(b"x=1".to_vec()))
        },
        post("body 0 B", Body::Length(Vec::new())),
        post("body 1 KB", Body::Length(kib(1))),
        post("body 100 KB", Body::Length(kib(100))),
        post("body chunked", Body::Chunked(b"{\"prompt\":\"chunked\"}".to_vec())),
        Case {
            headers: vec![
                ("X-Rep".into(), "one".into()),
                ("X-Rep".into(), "two".into()),
                ("X-Other".into(), "o".into()),
            ],
            ..case("repeated headers", ep())
        },
        Case { headers: vec![("X-Large".into(), "L".repeat(6000))], ..case("large header", ep()) },
        Case {
            headers: vec![("x-epp-host".into(), "client.example".into())],
            ..case("a client's own x-epp-host", ep())
        },
        Case { path: "/no-host", ..case("missing $epp_host", ep()) },
        Case { query: "b=%7e&a=x+y&c&d=%2F", ..case("query bytes qs.stringify re-encodes", ep()) },
        Case { query: "a=1&b=2", ..case("plain query", ep()) },
        Case { h2: true, query: "a=1", ..case("HTTP/2 client GET", ep()) },
        Case { h2: true, ..post("HTTP/2 client, body 1 KB", Body::Length(kib(1))) },
        Case { h2: true, ..post("HTTP/2 client, body 100 KB", Body::Length(kib(100))) },
    ]
}

/// Cases whose answers differ on purpose (docs/NGF.md's deliberate differences), with the field that
/// differs: asserted to differ, not to be equal.
const DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "body chunked",
        "shim",
        "njs sends Transfer-Encoding: chunked and a Content-Length over an unchunked body \
         (malformed; the shim refuses it); the module sends the body with its Content-Length",
    ),
    (
        "100 Continue then 200",
        "client",
        "njs forwards Expect: 100-continue, takes the shim's 100 Continue for the answer and \
         fails; the module's proxy sends no Expect and reads the 200",
    ),
    (
        "a client's own x-epp-host",
        "shim",
        "njs copies r.headersIn and then sets X-EPP-Host, so a client's x-epp-host (another \
         case) goes beside the configured one; the module drops the client's",
    ),
    (
        "repeated headers",
        "shim lines",
        "njs joins a repeated request header into one line (`X-Rep: one,two`); the module \
         sends the client's lines as they came (the same field value, RFC 9110 5.3)",
    ),
    (
        "query bytes qs.stringify re-encodes",
        "backend",
        "njs rebuilds the query with qs.stringify (re-encoded); the module keeps the client's \
         bytes",
    ),
];

/// What one side did for one case, in the fields the two must agree on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Observed {
    client_status: u16,
    /// What the error log says of the call ([`logged`]).
    logged: String,
    /// The client's body when it came from the backend (NGINX's own error pages name the
    /// version, so they are compared by status only).
    client_body: Option<String>,
    shim: Vec<ShimSaw>,
    backend: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ShimSaw {
    method: String,
    target: String,
    epp_host: Vec<String>,
    epp_port: Vec<String>,
    /// The values of the case's own headers, in order.
    client_headers: Vec<(String, Vec<String>)>,
    body: Vec<u8>,
    malformed: bool,
}

fn shim_saw(r: &Received, case: &Case) -> ShimSaw {
    let own = |n: &str| r.all(n).iter().map(|v| v.to_string()).collect::<Vec<_>>();
    let mut names: Vec<&str> = case.headers.iter().map(|(n, _)| n.as_str()).collect();
    names.dedup();
    ShimSaw {
        method: r.method().into(),
        target: r.target().into(),
        epp_host: own("X-EPP-Host"),
        epp_port: own("X-EPP-Port"),
        client_headers: names.iter().map(|n| (n.to_string(), own(n))).collect(),
        body: r.body.clone(),
        malformed: r.malformed.is_some(),
    }
}

/// An NGINX for one side, in its own scratch prefix (0755, so the workers can write the
/// client body temp files a 100 KB body needs).
struct Run {
    dir: PathBuf,
    port: u16,
    /// The same server's HTTP/2 (prior knowledge) listener.
    h2_port: u16,
    child: Child,
}

impl Run {
    fn start(nginx: &Path, name: &str, loads: &str, http: &str) -> Run {
        let dir = std::env::temp_dir().join(format!("epp-njs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["", "logs", "tmp"] {
            std::fs::create_dir_all(dir.join(sub)).expect("scratch dir");
            std::fs::set_permissions(dir.join(sub), std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        let (port, h2_port) = match common::free_ports(2)[..] {
            [a, b] => (a, b),
            _ => unreachable!("two ports asked"),
        };
        let conf = common::preamble(&[
            ("LOADS", loads),
            ("MASTER", "on"),
            ("WORKERS", "1"),
            ("LOG_LEVEL", "info"),
            ("CONNECTIONS", "256"),
            ("ACCESS_LOG", "off"),
            (
                "HTTP",
                &http
                    .replace("{PORT}", &port.to_string())
                    .replace("{H2PORT}", &h2_port.to_string()),
            ),
        ]);
        std::fs::write(dir.join("nginx.conf"), conf).expect("write nginx.conf");
        let child = Command::new(nginx)
            .arg("-p")
            .arg(format!("{}/", dir.display()))
            .args(["-c", "nginx.conf"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nginx");
        let run = Run { dir, port, h2_port, child };
        common::wait_until(format!("{name}'s nginx to listen"), || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        run
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("logs/error.log")).unwrap_or_default()
    }

    /// Sends the case's request (HTTP/1.1, `Connection: close`): (status, body).
    fn ask(&self, c: &Case) -> (u16, Vec<u8>) {
        if c.h2 {
            return self.ask_h2(c);
        }
        let target =
            if c.query.is_empty() { c.path.to_string() } else { format!("{}?{}", c.path, c.query) };
        let mut req =
            format!("{} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n", c.method);
        for (n, v) in &c.headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        let mut body = Vec::new();
        match &c.body {
            Body::None => {}
            Body::Length(b) => {
                req.push_str(&format!("Content-Length: {}\r\n", b.len()));
                body = b.clone();
            }
            Body::Chunked(b) => {
                req.push_str("Transfer-Encoding: chunked\r\n");
                for part in b.chunks(7) {
                    body.extend(format!("{:x}\r\n", part.len()).into_bytes());
                    body.extend_from_slice(part);
                    body.extend_from_slice(b"\r\n");
                }
                body.extend_from_slice(b"0\r\n\r\n");
            }
        }
        req.push_str("\r\n");
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to nginx");
        s.set_read_timeout(Some(common::patience())).expect("timeout");
        s.write_all(req.as_bytes()).expect("send the head");
        s.write_all(&body).expect("send the body");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        // Skip interim answers (NGINX's own 100 Continue to an Expect).
        let mut rest = out.as_slice();
        while rest.starts_with(b"HTTP/1.1 100") {
            let end = rest.windows(4).position(|w| w == b"\r\n\r\n").map_or(rest.len(), |p| p + 4);
            rest = &rest[end..];
        }
        let head_end = rest.windows(4).position(|w| w == b"\r\n\r\n").map_or(rest.len(), |p| p + 4);
        let head = String::from_utf8_lossy(&rest[..head_end]).into_owned();
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let mut body = rest[head_end..].to_vec();
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            body = dechunk(&body);
        }
        (status, body)
    }
}

impl Run {
    /// The case over HTTP/2 (curl --http2-prior-knowledge; the body from stdin, so curl sends
    /// it in DATA frames with a content-length): (status, body).
    fn ask_h2(&self, c: &Case) -> (u16, Vec<u8>) {
        let mut cmd = Command::new("curl");
        cmd.args([
            "-s",
            "--http2-prior-knowledge",
            "-o",
            "-",
            "-w",
            "\n%{http_code}",
            "-X",
            c.method,
        ]);
        for (n, v) in &c.headers {
            cmd.arg("-H").arg(format!("{n}: {v}"));
        }
        let body = match &c.body {
            Body::Length(b) | Body::Chunked(b) => Some(b.clone()),
            Body::None => None,
        };
        if body.is_some() {
            cmd.args(["--data-binary", "@-"]);
        }
        let sep = if c.query.is_empty() { "" } else { "?" };
        cmd.arg(format!("http://127.0.0.1:{}{}{sep}{}", self.h2_port, c.path, c.query));
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run curl");
        let mut stdin = child.stdin.take().expect("curl's stdin");
        stdin.write_all(&body.unwrap_or_default()).expect("write the body to curl");
        drop(stdin);
        let out = child.wait_with_output().expect("curl");
        let text = out.stdout;
        let nl = text.iter().rposition(|&b| b == b'\n').unwrap_or(0);
        let status = String::from_utf8_lossy(&text[nl + 1..]).trim().parse().unwrap_or(0);
        (status, text[..nl].to_vec())
    }
}

impl Drop for Run {
    /// A fast stop (TERM: NGINX's workers end at once), then the scratch prefix goes.
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(p) = b.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[..p]).trim(), 16).unwrap_or(0);
        if size == 0 || b.len() < p + 2 + size {
            break;
        }
        out.extend_from_slice(&b[p + 2..p + 2 + size]);
        b = &b[(p + 4 + size).min(b.len())..];
    }
    out
}

/// The locations both sides share: the inference location (`entry` is what asks the shim),
/// the same with a 1 s timeout (`short`, for the shim that never answers only: elsewhere the
/// default 60 s, so a slow machine cannot turn an answer into a timeout), the same without
/// `$epp_host`, and the internal location NGF proxies from.
fn locations(entry: &str, short: &str) -> String {
    format!(
        "server {{
    listen 127.0.0.1:{{PORT}};
    listen 127.0.0.1:{{H2PORT}} http2;
    client_body_buffer_size 16k;
    location /inference {{
        set $epp_internal_path {INTERNAL};
        set $epp_host epp.default.svc;
        set $epp_port 9002;
        {entry}
    }}
    location /never {{
        set $epp_internal_path {INTERNAL};
        set $epp_host epp.default.svc;
        set $epp_port 9002;
        {short}
        {entry}
    }}
    location /no-host {{
        set $epp_internal_path {INTERNAL};
        set $epp_port 9002;
        {entry}
    }}
    location {INTERNAL} {{
        internal;
        proxy_http_version 1.1;
        proxy_set_header Connection \"\";
        proxy_pass http://$inference_workload_endpoint;
    }}
}}
"
    )
}

/// Runs the table's cases on one NGINX (those with a down shim, or the others): one
/// observation per case run.
fn run_table(run: &Run, shim: &Server, echo: &Server, down_cases: bool) -> Vec<Observed> {
    let mut out = Vec::new();
    for c in table().into_iter().filter(|c| (c.mode == Mode::Down) == down_cases) {
        let fill = |m: &Mode| match m {
            Mode::Endpoint(v) if v == ECHO => Mode::Endpoint(echo.endpoint()),
            Mode::Held(v) if v == ECHO => Mode::Held(echo.endpoint()),
            Mode::Continue(v) if v == ECHO => Mode::Continue(echo.endpoint()),
            m => m.clone(),
        };
        shim.take();
        echo.take();
        let log_before = run.log().len();
        let (status, body) = if c.mode == Mode::Down {
            run.ask(&c)
        } else {
            shim.set_mode(fill(&c.mode));
            if let Mode::Held(_) = c.mode {
                std::thread::scope(|s| {
                    let asked = s.spawn(|| run.ask(&c));
                    shim.wait_for(1);
                    shim.release();
                    asked.join().expect("the client thread")
                })
            } else {
                run.ask(&c)
            }
        };
        let backend: Vec<String> =
            echo.take().iter().map(|r| String::from_utf8_lossy(&r.raw).into_owned()).collect();
        let from_backend = !backend.is_empty() && status == 200;
        out.push(Observed {
            client_status: status,
            logged: logged(run.log().get(log_before..).unwrap_or("")),
            client_body: from_backend.then(|| String::from_utf8_lossy(&body).into_owned()),
            shim: shim.take().iter().map(|r| shim_saw(r, &c)).collect(),
            backend,
        });
    }
    out
}

#[test]
fn epp_js_on_njs_and_the_directive_answer_alike() {
    let (nginx, njs, epp) = match njs_side() {
        Ok(found) => found,
        Err(why) => {
            assert!(std::env::var_os("NGX_MATCHES_REQUIRE_NJS").is_none(), "{why}");
            eprintln!("SKIPPED epp_njs: the njs side is missing ({why})");
            return;
        }
    };
    let echo = Server::echo();
    let shim = Server::shim(Mode::NoEndpoint);
    let down = Server::shim(Mode::Down);

    // Each side runs two NGINX: one calling the shim, one calling a port nothing listens on
    // (the Down case).
    let original = std::fs::read_to_string(&epp).expect("read epp.js");
    let js_for = |port: u16| {
        let from = "const SHIM_URI = 'http://127.0.0.1:54800';";
        assert_eq!(original.matches(from).count(), 1, "epp.js changed: no single {from}");
        original.replace(from, &format!("const SHIM_URI = 'http://127.0.0.1:{port}';"))
    };
    let js_dir = std::env::temp_dir().join(format!("epp-njs-{}-js", std::process::id()));
    std::fs::create_dir_all(&js_dir).expect("js dir");
    let js_path = |name: &str, port: u16| {
        let p = js_dir.join(name);
        std::fs::write(&p, js_for(port)).expect("write epp.js");
        p
    };
    let njs_http = |js: &Path| {
        format!(
            "js_import epp from {};\n{}",
            js.display(),
            locations(
                "js_var $inference_workload_endpoint;\n        js_content epp.getEndpoint;",
                "js_fetch_timeout 1s;",
            )
        )
    };
    let module_http = |port: u16| {
        locations(&format!("http_matches_epp http://127.0.0.1:{port};"), "proxy_read_timeout 1s;")
    };
    let njs_loads = format!("load_module {};\n", njs.display());
    let module_loads = format!("load_module {};\n", common::module_path().display());

    let njs_up = Run::start(&nginx, "njs", &njs_loads, &njs_http(&js_path("up.js", shim.port())));
    let njs_down =
        Run::start(&nginx, "njs-down", &njs_loads, &njs_http(&js_path("down.js", down.port())));
    let mod_up =
        Run::start(&common::nginx_binary(), "module", &module_loads, &module_http(shim.port()));
    let mod_down = Run::start(
        &common::nginx_binary(),
        "module-down",
        &module_loads,
        &module_http(down.port()),
    );

    let njs_rows = run_both(&njs_up, &njs_down, &shim, &echo);
    let mod_rows = run_both(&mod_up, &mod_down, &shim, &echo);
    let cases = table();
    let mut failures = Vec::new();
    for ((c, n), m) in cases.iter().zip(&njs_rows).zip(&mod_rows) {
        eprintln!("== {}\n   njs:    {}\n   module: {}", c.name, show(n), show(m));
        let differs = DIFFERENCES.iter().find(|(name, _, _)| *name == c.name);
        match differs {
            None if n != m => failures.push(format!("{}: njs {n:?}\nmodule {m:?}", c.name)),
            Some((_, field, why)) => {
                let same = match *field {
                    "shim" => n.shim == m.shim,
                    "shim lines" => {
                        let (jn, jm) = (joined(&n.shim), joined(&m.shim));
                        if jn != jm {
                            failures.push(format!("{}: not even the joined values agree", c.name));
                        }
                        n.shim == m.shim
                    }
                    "client" => {
                        (n.client_status, &n.client_body) == (m.client_status, &m.client_body)
                    }
                    _ => n.backend == m.backend,
                };
                if same {
                    failures.push(format!("{}: expected to differ in {field} ({why})", c.name));
                }
                if let Some(wrong) = module_right(c, m) {
                    failures.push(format!("{}: the module is not right either: {wrong}", c.name));
                }
            }
            None => {}
        }
    }
    let _ = std::fs::remove_dir_all(&js_dir);
    assert!(
        failures.is_empty(),
        "{}\n\nnjs log:\n{}\nmodule log:\n{}",
        failures.join("\n\n"),
        njs_up.log(),
        mod_up.log()
    );
}

/// The table on a side, in table order: the Down cases on the NGINX whose shim is down, the
/// others on the other.
fn run_both(up: &Run, down_run: &Run, shim: &Server, echo: &Server) -> Vec<Observed> {
    let mut rows = run_table(up, shim, echo, false).into_iter();
    let mut down_rows = run_table(down_run, shim, echo, true).into_iter();
    let mut pick = |c: &Case| if c.mode == Mode::Down { down_rows.next() } else { rows.next() };
    table().iter().map(|c| pick(c).expect("a row per case")).collect()
}

/// The kind of what one request's error log lines say about the call, in terms both sides
/// log (their words differ): the endpoint found; the shim's refusal with its status, and
/// whether its body is quoted; no answer (timeout, closed, refused); a missing variable.
fn logged(log: &str) -> String {
    const REFUSED: &str = "could not get specific inference endpoint from EndpointPicker; status: ";
    let mut kinds = Vec::new();
    for line in log.lines() {
        if line.contains("found inference endpoint from EndpointPicker") {
            kinds.push("found".to_string());
        } else if let Some(at) = line.find(REFUSED) {
            let rest = &line[at + REFUSED.len()..];
            let status: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let quoted = rest.contains("picker failed: no pods");
            kinds.push(format!("refused {status}{}", if quoted { " with its body" } else { "" }));
        } else if line.contains("Error in ngx.fetch")
            || line.contains("no answer from the EndpointPicker shim")
        {
            kinds.push("no answer".to_string());
        } else if line.to_ascii_lowercase().contains("missing required variable") {
            kinds.push("missing variable".to_string());
        }
    }
    kinds.join(", ")
}

/// Where the two differ on purpose, what the module must do instead (None: it does).
fn module_right(c: &Case, m: &Observed) -> Option<String> {
    let target =
        |o: &Observed| o.backend.first().and_then(|b| b.split(' ').nth(1)).map(str::to_owned);
    let ok = match c.name {
        "body chunked" => {
            let Body::Chunked(sent) = &c.body else { return Some("not a chunked case".into()) };
            m.shim.len() == 1 && !m.shim[0].malformed && &m.shim[0].body == sent
        }
        "100 Continue then 200" => m.client_status == 200 && m.backend.len() == 1,
        "query bytes qs.stringify re-encodes" => {
            target(m) == Some(format!("{INTERNAL}?{}", c.query))
        }
        "a client's own x-epp-host" => {
            m.shim.len() == 1 && m.shim[0].epp_host == ["epp.default.svc"]
        }
        "repeated headers" => m.shim.len() == 1 && m.shim[0].client_headers[0].1 == ["one", "two"],
        _ => return Some("a difference without a check of the module's side".into()),
    };
    (!ok).then(|| format!("{m:?}"))
}

/// The shim's view with every repeated header's values joined with `,` (one field value).
fn joined(saw: &[ShimSaw]) -> Vec<ShimSaw> {
    let mut saw = saw.to_vec();
    for s in &mut saw {
        for (_, values) in &mut s.client_headers {
            *values = vec![values.join(",")];
        }
    }
    saw
}

fn show(o: &Observed) -> String {
    let shim: Vec<String> = o
        .shim
        .iter()
        .map(|s| {
            format!(
                "{} {} host={:?} port={:?} own={:?} body={}B{}",
                s.method,
                s.target,
                s.epp_host,
                s.epp_port,
                s.client_headers
                    .iter()
                    .map(|(n, v)| format!(
                        "{n}={}",
                        v.iter().map(|x| &x[..x.len().min(12)]).collect::<Vec<_>>().join("|")
                    ))
                    .collect::<Vec<_>>(),
                s.body.len(),
                if s.malformed { " MALFORMED" } else { "" }
            )
        })
        .collect();
    let backend: Vec<String> =
        o.backend.iter().map(|b| b.lines().next().unwrap_or("").to_string()).collect();
    format!("client {} | log [{}] | shim {shim:?} | backend {backend:?}", o.client_status, o.logged)
}
