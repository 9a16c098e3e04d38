//! `http_matches_epp` end to end: a real NGINX, E2's fake shim and echo backend
//! (`common::epp_shim`). Each case sends a real request and checks three things: what the
//! client got (the internal location's answer), what the shim received, and what the backend
//! behind `proxy_pass http://$inference_workload_endpoint` received. Nothing sleeps and
//! nothing is timed: a "slow" shim never answers, and the test waits for NGINX's own
//! `proxy_read_timeout` to end the call.

mod common;

use std::process::Command;

use common::epp_shim::{Mode, Received, Server};
use common::{Nginx, Resp};

/// Headers NGINX's proxy sets itself on the call (the rest is the client's, in order).
const PROXY_OWN: [&str; 3] = ["host", "connection", "content-length"];

fn conf(shim: &Server, h2_port: u16) -> String {
    let (listen_h2, http2_on) =
        if common::nginx_version() >= (1, 25, 1) { ("", "http2 on;") } else { (" http2", "") };
    let url = shim.url();
    let endpoint = shim.endpoint();
    format!(
        r#"
    large_client_header_buffers 4 32k;
    upstream epp_shim {{ server {endpoint}; keepalive 2; }}
    map $inference_workload_endpoint $epp_none {{ "" 1; default 0; }}
    server {{
        listen 127.0.0.1:{{PORT}};
        listen 127.0.0.1:{h2_port}{listen_h2};
        {http2_on}
        location /infer {{
            set $epp_internal_path /_internal;
            set $epp_host epp.default.svc;
            set $epp_port 9002;
            client_body_buffer_size 1k;
            client_max_body_size 1m;
            proxy_read_timeout 1s;
            http_matches_epp {url};
        }}
        location /keep {{
            set $epp_internal_path /_internal;
            set $epp_host epp.default.svc;
            set $epp_port 9002;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            http_matches_epp http://epp_shim;
        }}
        location /ifepp {{
            set $epp_internal_path /_internal;
            set $epp_host epp.default.svc;
            set $epp_port 9002;
            if ($http_x_flag) {{
                set $epp_port 9003;
            }}
            http_matches_epp {url};
        }}
        location /v1/ {{
            set $epp_internal_path /_internal;
            set $epp_host epp.default.svc;
            set $epp_port 9002;
            http_matches_epp {url};
        }}
        location = /nohost {{
            set $epp_internal_path /_internal;
            set $epp_port 9002;
            http_matches_epp {url};
        }}
        location = /nopath {{
            set $epp_host epp.default.svc;
            set $epp_port "";
            http_matches_epp {url};
        }}
        {internal}
    }}
"#,
        internal = common::EPP_INTERNAL
    )
}

fn start(name: &str, http_body: &str) -> Nginx {
    Nginx::start_keeping_bodies(name, http_body)
}

/// An HTTP/1.1 request with `Connection: close`; `headers` are written as given.
fn send(n: &Nginx, method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let mut r = format!("{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (name, value) in headers {
        r.push_str(&format!("{name}: {value}\r\n"));
    }
    r.push_str("\r\n");
    let mut bytes = r.into_bytes();
    bytes.extend_from_slice(body);
    n.raw(&bytes).unwrap_or_else(|e| panic!("{method} {target}: {e}"))
}

/// The client's header lines the shim must see: epp.js sends every one of `r.headersIn`.
fn client_lines(got: &Received) -> Vec<(String, String)> {
    got.headers
        .iter()
        .filter(|(n, _)| !PROXY_OWN.contains(&n.to_ascii_lowercase().as_str()))
        .cloned()
        .collect()
}

fn pairs(lines: &[(&str, &str)]) -> Vec<(String, String)> {
    lines.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
}

fn errors(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains("[error]") && l.contains(needle)).count()
}

#[test]
fn the_shim_and_the_backend_get_what_epp_js_sends_and_every_failure_still_redirects() {
    let echo = Server::echo();
    let shim = Server::shim(Mode::Endpoint(echo.endpoint()));
    let h2_port = common::free_port();
    let n = start("epp", &conf(&shim, h2_port));

    // 200 with the header, GET: the headers byte for byte, the query kept as the client wrote
    // it, a client's own X-EPP-* lines dropped.
    let sent = [
        ("X-Custom", "a b\tc"),
        ("x-epp-host", "evil.example"),
        ("X-EPP-Port", "1"),
        ("Accept", "*/*"),
    ];
    let r = send(&n, "GET", "/infer/v1/chat?a=%41&b=1+2&b=x&=&c", &sent, b"");
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    let call = shim.take();
    assert_eq!(call.len(), 1);
    let call = &call[0];
    assert_eq!(call.request_line, "GET / HTTP/1.0");
    let mut expected = pairs(&[("X-Custom", "a b\tc"), ("Accept", "*/*")]);
    expected.extend(pairs(&[("X-EPP-Host", "epp.default.svc"), ("X-EPP-Port", "9002")]));
    assert_eq!(client_lines(call), expected, "{:?}", call.headers);
    assert!(call.body.is_empty());
    let backend = echo.take();
    assert_eq!(backend.len(), 1);
    assert_eq!(backend[0].target(), "/_internal?a=%41&b=1+2&b=x&=&c");
    assert_eq!(backend[0].header("X-Custom"), Some("a b\tc"));
    assert!(errors(&n.error_log(), "http_matches_epp") == 0, "{}", n.error_log());
    let found = format!("found inference endpoint from EndpointPicker: {}", echo.endpoint());
    assert!(n.error_log().contains(&found));

    // Bodies: 0 B, 1 KB, 100 KB (past client_body_buffer_size: a temp file), and chunked. The
    // shim and the backend both get the body with its Content-Length and no
    // Transfer-Encoding (epp.js sends both over a chunked one).
    let kb: Vec<u8> = (0..1024u32).map(|i| b"abcdefghij\x00\xff"[i as usize % 12]).collect();
    let big: Vec<u8> = (0..100 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
    for body in [&b""[..], &kb, &big] {
        let len = body.len().to_string();
        let r = send(&n, "POST", "/infer?k=1", &[("Content-Length", &len)], body);
        assert_eq!(r.status, 200, "{} bytes: {r:?}\n{}", body.len(), n.error_log());
        let call = shim.take();
        assert_eq!(call[0].method(), "POST");
        assert_eq!(call[0].body, body, "the shim's body of {} bytes", body.len());
        assert_eq!(call[0].header("Content-Length"), Some(len.as_str()));
        assert!(!call[0].chunked);
        let backend = echo.take();
        assert_eq!(backend[0].body, body, "the backend's body of {} bytes", body.len());
        assert_eq!(backend[0].target(), "/_internal?k=1");
    }
    assert!(n.error_log().contains("a client request body is buffered to a temporary file"));
    let mut chunked = Vec::new();
    for part in big.chunks(7000) {
        chunked.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        chunked.extend_from_slice(part);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let r = send(&n, "PUT", "/infer", &[("Transfer-Encoding", "chunked")], &chunked);
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    let call = shim.take();
    assert_eq!(call[0].method(), "PUT");
    assert!(!call[0].chunked && call[0].malformed.is_none(), "{:?}", call[0].headers);
    assert_eq!(call[0].header("Content-Length"), Some(big.len().to_string().as_str()));
    assert_eq!(call[0].body, big);
    assert_eq!(echo.take()[0].body, big);

    // Repeated and large headers: every line, in order, whole.
    let large = "v".repeat(20 * 1024);
    let lines = [("X-Rep", "1"), ("X-Rep", "2"), ("x-rep", "3"), ("X-Large", large.as_str())];
    let r = send(&n, "GET", "/infer", &lines, b"");
    assert_eq!(r.status, 200, "{r:?}");
    let call = shim.take();
    assert_eq!(call[0].all("X-Rep"), ["1", "2", "3"]);
    assert_eq!(call[0].header("X-Large"), Some(large.as_str()));
    assert_eq!(echo.take()[0].header("X-Large"), Some(large.as_str()));

    // A client's Expect: 100-continue is NGINX's to answer; the shim never sees it (Go's
    // would send a 100 Continue, which epp.js took for the final answer: 500).
    shim.set_mode(Mode::Continue(echo.endpoint()));
    let r =
        send(&n, "POST", "/infer", &[("Content-Length", "2"), ("Expect", "100-continue")], b"hi");
    // NGINX's own interim answer to the client, then the backend's.
    assert_eq!(r.status, 100, "{r:?}\n{}", n.error_log());
    assert!(r.body.starts_with("HTTP/1.1 200 OK\r\n"), "{r:?}");
    let call = shim.take();
    assert_eq!(call[0].header("Expect"), None);
    assert_eq!(echo.take()[0].body, b"hi");

    // Every failure: an [error] with the status (and the start of the body), and the redirect
    // with the variable empty and the query kept.
    let cases: [(Mode, &str); 4] = [
        (Mode::NoEndpoint, "status: 200; body: \"no endpoint\""),
        (Mode::Status(503, "no pods\u{1}\n".into()), "status: 503; body: \"no pods\\x01\\x0a\""),
        (Mode::Close, "no answer from the EndpointPicker shim (status: 502"),
        (Mode::Never, "no answer from the EndpointPicker shim (status: 504"),
    ];
    for (mode, line) in cases {
        shim.set_mode(mode.clone());
        let r = send(&n, "GET", "/infer?q=%20", &[], b"");
        assert_eq!((r.status, r.body.as_str()), (200, "no endpoint, args=[q=%20]\n"), "{mode:?}");
        assert_eq!(errors(&n.error_log(), line), 1, "{mode:?}: {line}\n{}", n.error_log());
    }
    assert!(n.error_log().contains("upstream prematurely closed connection"));
    assert_eq!(echo.total(), 7, "no failed call reached the backend");

    // HTTP/2 clients: the same call (the headers as h2 carried them).
    if has_http2_curl() {
        shim.set_mode(Mode::Endpoint(echo.endpoint()));
        shim.take();
        let out = Command::new("curl")
            .args(["-s", "--http2-prior-knowledge", "-H", "X-Rep: 1", "-H", "X-Rep: 2"])
            .args(["--data-binary", "h2 body"])
            .arg(format!("http://127.0.0.1:{h2_port}/infer?h=2"))
            .output()
            .expect("curl");
        assert!(out.status.success());
        let call = shim.take();
        assert_eq!(call[0].all("x-rep"), ["1", "2"]);
        assert_eq!(call[0].body, b"h2 body");
        assert_eq!(call[0].all("X-EPP-Host"), ["epp.default.svc"]);
        let backend = echo.take();
        assert_eq!(backend[0].target(), "/_internal?h=2");
        assert_eq!(backend[0].body, b"h2 body");
    }

    // The call is NGINX's proxy: an upstream block with keepalive keeps one connection to the
    // shim for every call; HEAD goes as HEAD.
    shim.set_mode(Mode::Endpoint(echo.endpoint()));
    shim.take();
    echo.take();
    let r = send(&n, "GET", "/keep?k", &[], b"");
    assert_eq!(r.status, 200, "{r:?}");
    let connections = shim.connections();
    for i in 0..3 {
        let r = send(&n, "POST", "/keep?k", &[("Content-Length", "1")], b"x");
        assert_eq!(r.status, 200, "{i}: {r:?}");
    }
    assert_eq!(shim.connections(), connections, "keepalive: no new connection to the shim");
    let calls = shim.take();
    assert_eq!(calls.len(), 4);
    assert!(calls.iter().all(|c| c.request_line.ends_with("HTTP/1.1")));
    let r = send(&n, "HEAD", "/infer?h", &[], b"");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(shim.take()[0].method(), "HEAD");
    assert_eq!(echo.take().last().map(|e| e.method().to_owned()), Some("HEAD".to_owned()));

    // Missing variables: 500, one [error] naming each, no call.
    let before = shim.total();
    assert_eq!(n.get("/nohost", &[]).status, 500);
    assert_eq!(n.get("/nopath", &[]).status, 500);
    assert_eq!(shim.total(), before);
    let log = n.error_log();
    assert_eq!(errors(&log, "missing required variable $epp_host (unset"), 1, "{log}");
    assert_eq!(
        errors(&log, "missing required variables $epp_port and $epp_internal_path (unset"),
        1,
        "{log}"
    );
    n.finish();
}

/// A small deterministic generator (xorshift), so that a failure names its case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Up to `max - 1` characters of `alphabet`, plus `min`.
    fn text(&mut self, alphabet: &[u8], min: usize, max: usize) -> String {
        let len = min + self.below(max);
        (0..len).map(|_| char::from(alphabet[self.below(alphabet.len())])).collect()
    }
}

/// Invariants over generated requests (60 by default, `NGX_MATCHES_EPP_CASES`): the shim gets every client header line in order
/// (names and values byte for byte) except the client's own X-EPP-* lines, exactly one
/// configured X-EPP-Host and X-EPP-Port, the method and the body; the backend gets the
/// client's query string byte for byte and the body.
#[test]
fn every_generated_request_reaches_the_shim_and_the_backend_whole() {
    let echo = Server::echo();
    let shim = Server::shim(Mode::Endpoint(echo.endpoint()));
    let n = start("epp-gen", &conf(&shim, common::free_port()));
    // No "_": NGINX drops such lines itself (ignore_invalid_headers), for epp.js too.
    let name_chars = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-";
    // What a request line may carry in a query (NGINX refuses controls, space and '#').
    let query_chars: Vec<u8> = (0x21u8..0x7f).filter(|b| *b != b'#').collect();
    let value_chars: Vec<u8> = (0x20u8..0x7f).collect();
    let epp_names = ["X-EPP-Host", "x-epp-host", "X-Epp-Port", "x-epp-port"];
    let seed = std::env::var("NGX_MATCHES_EPP_SEED").ok().and_then(|v| v.parse().ok());
    let mut rng = Rng(seed.unwrap_or(0x9e37_79b9_7f4a_7c15) | 1);
    // NGX_MATCHES_EPP_CASES=N for a longer run (and NGX_MATCHES_EPP_SEED for another seed).
    let cases =
        std::env::var("NGX_MATCHES_EPP_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    for case in 0..cases {
        let query = rng.text(&query_chars, 0, 40);
        let mut lines: Vec<(String, String)> = Vec::new();
        for _ in 0..rng.below(12) {
            let name = if rng.below(6) == 0 {
                epp_names[rng.below(epp_names.len())].to_owned()
            } else {
                format!("X-G{}", rng.text(name_chars, 1, 10))
            };
            // Values as NGINX stores them: no leading or trailing space.
            let value = rng.text(&value_chars, 0, 60).trim().to_owned();
            lines.push((name, value));
        }
        let size = [0, 1, 500, 5000][rng.below(4)];
        let body = rng.text(&value_chars, size, 1);
        let method = ["GET", "POST", "PUT", "PATCH", "DELETE"][rng.below(5)];
        let mut headers: Vec<(&str, &str)> =
            lines.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let len = body.len().to_string();
        headers.push(("Content-Length", &len));
        let r = send(&n, method, &format!("/infer?{query}"), &headers, body.as_bytes());
        assert_eq!(r.status, 200, "case {case}: {r:?}\n{}", n.error_log());
        let call = shim.take();
        assert_eq!(call.len(), 1, "case {case}");
        let mut want: Vec<(String, String)> = lines
            .iter()
            .filter(|(name, _)| !name.to_ascii_lowercase().starts_with("x-epp-"))
            .cloned()
            .collect();
        want.extend(pairs(&[("X-EPP-Host", "epp.default.svc"), ("X-EPP-Port", "9002")]));
        assert_eq!(client_lines(&call[0]), want, "case {case}");
        assert_eq!(call[0].method(), method, "case {case}");
        assert_eq!(call[0].body, body.as_bytes(), "case {case}");
        let backend = echo.take();
        let target =
            if query.is_empty() { "/_internal".to_owned() } else { format!("/_internal?{query}") };
        assert_eq!(backend[0].target(), target, "case {case}");
        assert_eq!(backend[0].body, body.as_bytes(), "case {case}");
    }
    n.finish();
}

#[test]
fn a_shim_that_is_down_or_answers_too_much_still_redirects() {
    let shim = Server::shim(Mode::Down);
    let n = start("epp-down", &conf(&shim, common::free_port()));
    let r = send(&n, "POST", "/infer?x=1", &[("Content-Length", "3")], b"abc");
    assert_eq!((r.status, r.body.as_str()), (200, "no endpoint, args=[x=1]\n"));
    let log = n.error_log();
    assert!(log.contains("connect() failed"), "{log}");
    assert_eq!(errors(&log, "no answer from the EndpointPicker shim (status: 502"), 1, "{log}");
    n.finish();

    // An answer far longer than subrequest_output_buffer_size: read as it arrives, its first
    // 256 bytes kept, the call ended there; the client's request goes on.
    let shim = Server::shim(Mode::Status(500, "e".repeat(64 * 1024)));
    let n = start("epp-big", &conf(&shim, common::free_port()));
    let r = send(&n, "GET", "/infer?y", &[], b"");
    assert_eq!((r.status, r.body.as_str()), (200, "no endpoint, args=[y]\n"), "{}", n.error_log());
    let log = n.error_log();
    assert!(!log.contains("too big subrequest response"), "{log}");
    let shown = format!("status: 500; body: \"{}...(more)\"", "e".repeat(256));
    assert_eq!(errors(&log, &shown), 1, "{log}");
    n.finish();
}

#[test]
fn a_shims_long_answer_is_not_read_past_the_shown_bytes() {
    // The shim (here NGINX itself) answers 500 with a body of 64 MB (a sparse file as its
    // error page): the call stops once the 256 bytes shown are in. What the shim sent is
    // logged to the error log ($bytes_sent) once its answer ends.
    let dir = std::env::temp_dir().join(format!("epp-shim-500-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = 64usize << 20;
    std::fs::File::create(dir.join("big")).unwrap().set_len(big as u64).unwrap();
    let (shim, d) = (common::free_port(), dir.display());
    let body = format!(
        r#"
    map $inference_workload_endpoint $epp_none {{ "" 1; default 0; }}
    log_format shim "shim-sent=$bytes_sent.";
    server {{
        listen 127.0.0.1:{shim};
        access_log logs/error.log shim;
        location / {{ error_page 500 /big; return 500; }}
        location = /big {{ internal; root {d}; }}
    }}
    server {{
        listen 127.0.0.1:{{PORT}};
        location /infer {{
            set $epp_internal_path /_internal;
            set $epp_host epp.default.svc;
            set $epp_port 9002;
            http_matches_epp http://127.0.0.1:{shim};
        }}
        {internal}
    }}
"#,
        internal = common::EPP_INTERNAL
    );
    let n = start("epp-shim-500", &body);
    let r = send(&n, "GET", "/infer?q=5", &[], b"");
    assert_eq!((r.status, r.body.as_str()), (200, "no endpoint, args=[q=5]\n"), "{r:?}");
    n.wait_log("shim-sent=", 1);
    let log = n.error_log();
    let sent: usize =
        log.split("shim-sent=").nth(1).unwrap().split('.').next().unwrap().parse().unwrap();
    // Before: the whole 64 MB read. Now what the sockets held when the call ended.
    assert!(sent < big / 2, "the shim sent {sent} bytes");
    let shown = format!("status: 500; body: \"{}...(more)\"", "\\x00".repeat(256));
    assert_eq!(errors(&log, &shown), 1, "{log}");
    let _ = std::fs::remove_dir_all(&dir);
    n.finish();
}

#[test]
fn the_url_is_checked_at_load() {
    for (url, why) in [
        ("http://127.0.0.1:1/epp", "a path is not allowed"),
        ("127.0.0.1:1", "expected http://, https://, grpc:// or grpcs://"),
        ("grpc://127.0.0.1:1/x", "a path is not allowed"),
        ("grpcs://127.0.0.1:1/x", "a path is not allowed"),
        ("http://$host", "variables are not allowed"),
        ("http://127.0.0.1:1?a=1", "a query or fragment is not allowed"),
        ("http://127.0.0.1:1#f", "a query or fragment is not allowed"),
    ] {
        let body = format!(
            "server {{ listen 127.0.0.1:{{PORT}}; location / {{ http_matches_epp {url}; }} }}"
        );
        let p = common::Prefix::new("epp-url", &body, &[]);
        let (ok, out) = p.test();
        assert!(!ok, "{url}");
        assert!(out.contains(&format!("http_matches_epp: invalid URL \"{url}\": {why}")), "{out}");
        assert!(out.contains("nginx.conf:"), "file:line: {out}");
    }
    // Another content handler after ours, and limit_except (the proxy's merge would give its
    // block the proxy's own handler): refused, with the directive's file:line.
    for (inner, why) in [
        ("http_matches_epp; empty_gif;", "replaced its content handler"),
        (
            r#"http_matches_epp; http_matches '[{"any":true,"redirectPath":"/t"}]';"#,
            "replaced its content handler",
        ),
        ("http_matches_epp; limit_except GET { deny all; }", "limit_except is not supported"),
        ("limit_except GET { deny all; } http_matches_epp;", "limit_except is not supported"),
        // The proxy's own refusal, after the directive's name, as NGINX would print it.
        (
            "proxy_pass http://127.0.0.1:1; http_matches_epp;",
            "http_matches_epp: proxy_pass is duplicate",
        ),
        // The call is unbuffered (its answer is not read past the bytes shown).
        ("proxy_buffering on; http_matches_epp;", "http_matches_epp: proxy_buffering is duplicate"),
        ("http_matches_epp; proxy_buffering on;", "\"proxy_buffering\" directive is duplicate"),
    ] {
        let body = format!("server {{ listen 127.0.0.1:{{PORT}}; location /e {{ {inner} }} }}");
        let (ok, out) = common::Prefix::new("epp-handler", &body, &[]).test();
        assert!(!ok, "{inner}: {out}");
        assert!(out.contains("[emerg]") && out.contains(why), "{inner}: {out}");
        assert!(out.contains("nginx.conf:"), "file:line: {out}");
    }
    // A named location: the call to the request's URI would land elsewhere.
    let body = "server { listen 127.0.0.1:{PORT}; location @epp { http_matches_epp; } }";
    let (ok, out) = common::Prefix::new("epp-named", body, &[]).test();
    assert!(!ok, "{out}");
    assert!(out.contains("http_matches_epp: not allowed in a named location"), "{out}");
    assert!(out.contains("nginx.conf:"), "file:line: {out}");
    let body =
        "server { listen 127.0.0.1:{PORT}; location / { http_matches_epp; http_matches_epp; } }";
    let (ok, out) = common::Prefix::new("epp-dup", body, &[]).test();
    assert!(!ok && out.contains("\"http_matches_epp\" directive is duplicate"), "{out}");
    // The default URL and a js_var of the same name load.
    let body = "server { listen 127.0.0.1:{PORT}; location / { set $inference_workload_endpoint x; \
                http_matches_epp; } }";
    let (ok, out) = common::Prefix::new("epp-default", body, &[]).test();
    assert!(ok, "{out}");
}

/// A client that goes away while the shim holds its answer: NGINX ends the request (499) and
/// never redirects it, over HTTP/1 (the connection closed) and HTTP/2 (RST_STREAM, which sets
/// only the stream's `fc->error`). A later request, on the same single worker, is the sync
/// point: nothing is timed.
#[test]
fn a_client_that_goes_away_during_the_call_is_never_redirected() {
    use std::io::Write;
    use std::net::TcpStream;
    let echo = Server::echo();
    let shim = Server::shim(Mode::Held(echo.endpoint()));
    let h2_port = common::free_port();
    let n = start("epp-abort", &conf(&shim, h2_port));

    let mut s = TcpStream::connect(("127.0.0.1", n.port())).expect("connect");
    s.write_all(b"GET /infer?a=1 HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("write");
    shim.wait_for(1);
    drop(s);
    n.wait_log("client prematurely closed", 1);

    // HTTP/2 with prior knowledge: SETTINGS, a GET of /infer (HPACK literals, no Huffman),
    // then RST_STREAM(CANCEL) once the shim has the call.
    let mut h = TcpStream::connect(("127.0.0.1", h2_port)).expect("connect h2");
    let frame = |kind: u8, flags: u8, stream: u32, payload: &[u8]| {
        let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        f.extend_from_slice(&[kind, flags]);
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    };
    let mut block = vec![0x82, 0x86, 0x04, 6];
    block.extend_from_slice(b"/infer");
    block.extend_from_slice(&[0x01, 9]);
    block.extend_from_slice(b"localhost");
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(4, 0, 0, &[]));
    out.extend(frame(1, 0x5, 1, &block));
    h.write_all(&out).expect("write h2");
    shim.wait_for(2);
    h.write_all(&frame(3, 0, 1, &8u32.to_be_bytes())).expect("rst");
    n.wait_log("client canceled stream 1", 1);

    shim.release();
    let r = send(&n, "GET", "/infer?after", &[], b"");
    assert_eq!(r.status, 200, "{}", n.error_log());
    let backend = echo.wait_for(1);
    let log = n.error_log();
    assert_eq!(backend.len(), 1, "only the last request reaches the backend: {log}");
    assert_eq!(backend[0].target(), "/_internal?after", "{log}");
    assert_eq!(errors(&log, "EndpointPicker"), 0, "a cancelled call was finished: {log}");
    assert_eq!(log.matches("found inference endpoint").count(), 1, "{log}");
    drop(h);
    n.finish();
}

/// An `if` block inside an `http_matches_epp` location keeps the directive (it inherits the
/// proxy handler, as the proxy module inherits its upstream): the call happens with what the
/// block set.
#[test]
fn an_if_block_in_an_epp_location_keeps_the_call() {
    let echo = Server::echo();
    let shim = Server::shim(Mode::Endpoint(echo.endpoint()));
    let n = start("epp-if", &conf(&shim, common::free_port()));
    for (flag, port) in [(None, "9002"), (Some("1"), "9003")] {
        let headers: Vec<(&str, &str)> = flag.map(|f| ("X-Flag", f)).into_iter().collect();
        let r = send(&n, "GET", "/ifepp?q=1", &headers, b"");
        assert_eq!(r.status, 200, "{flag:?}: {r:?} {}", n.error_log());
        let got = shim.take();
        assert_eq!(got.len(), 1, "{flag:?}");
        assert_eq!(got[0].header("X-EPP-Port"), Some(port), "{flag:?}");
        let backend = echo.take();
        assert_eq!(backend.len(), 1, "{flag:?}");
        assert_eq!(backend[0].target(), "/_internal?q=1", "{flag:?}");
    }
    n.finish();
}

/// A location whose name ends in "/" gets no 301 for the name without it (proxy_pass turns
/// that on for its own locations; epp.js's js_content did not).
#[test]
fn a_location_ending_in_a_slash_does_not_redirect_the_name_without_it() {
    let echo = Server::echo();
    let shim = Server::shim(Mode::Endpoint(echo.endpoint()));
    let n = start("epp-slash", &conf(&shim, common::free_port()));
    let r = send(&n, "GET", "/v1", &[], b"");
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!(shim.total(), 0);
    let r = send(&n, "GET", "/v1/x?k", &[], b"");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(echo.take()[0].target(), "/_internal?k");
    n.finish();
}

fn has_http2_curl() -> bool {
    Command::new("curl")
        .arg("-V")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("HTTP2"))
}

/// The shim's answer is checked (issue #46): `X-Gateway-Destination-Endpoint` must be an
/// `ip:port` list (the EPP protocol); anything else leaves the variable empty with an `[error]`.
/// A valid list, in one line or several, takes its first (preferred) endpoint; the answer's
/// `X-Accel-*` headers never act; a 1xx answer is never final.
#[test]
fn the_shims_answer_is_checked_before_it_is_used() {
    let echo = Server::echo();
    let e = echo.endpoint();
    let shim = Server::shim(Mode::Endpoint(e.clone()));
    let n = start("epp-checked", &conf(&shim, common::free_port()));
    let raw = |head: &str| {
        Mode::Raw(format!("HTTP/1.1 {head}\r\nContent-Length: 2\r\n\r\nok").into_bytes())
    };
    let bad = [
        "unix:/tmp/epp.sock".to_owned(),
        format!("http://{e}/"),
        "epp_shim".to_owned(),
        "127.0.0.1".to_owned(),
        "127.0.0.1:0".to_owned(),
        "127.0.0.1:70000".to_owned(),
        "::1:80".to_owned(),
        format!("{e},"),
        format!("{e} x"),
    ];
    for (i, v) in bad.iter().enumerate() {
        shim.set_mode(Mode::Endpoint(v.clone()));
        let r =
            send(&n, "POST", "/infer?q", &[("Content-Length", "2"), ("Authorization", "s")], b"hi");
        assert_eq!((r.status, r.body.as_str()), (200, "no endpoint, args=[q]\n"), "{v}: {r:?}");
        let log = n.error_log();
        assert_eq!(errors(&log, "is not an ip:port list"), i + 1, "{v}: {log}");
    }
    assert_eq!(echo.total(), 0, "an invalid destination was reached");
    assert_eq!(shim.take().len(), bad.len(), "the epp_shim upstream was called as a backend");
    let good = [
        Mode::Endpoint(format!(" {e} ,10.255.255.1:9, [::1]:9")),
        raw(&format!(
            "200 OK\r\nX-Gateway-Destination-Endpoint: {e}\r\n\
                      X-Gateway-Destination-Endpoint: 10.255.255.1:9"
        )),
        raw(&format!(
            "200 OK\r\nX-Gateway-Destination-Endpoint: {e}\r\nX-Accel-Redirect: /_internal\r\n\
                      X-Accel-Buffering: no\r\nX-Accel-Limit-Rate: 1"
        )),
    ];
    for (i, mode) in good.into_iter().enumerate() {
        shim.set_mode(mode.clone());
        let r = send(&n, "POST", "/infer?q", &[("Content-Length", "2")], b"hi");
        assert_eq!(r.status, 200, "{mode:?}: {r:?}\n{}", n.error_log());
        let got = echo.wait_for(i + 1);
        assert_eq!(
            (got[i].target(), got[i].body.as_slice()),
            ("/_internal?q", &b"hi"[..]),
            "{mode:?}"
        );
    }
    // An interim answer (100, 102, 103) and then nothing, or a 103 and then a 200 with an
    // endpoint: NGINX 1.28's proxy takes the interim answer as the final one, and the module
    // takes no endpoint from a non-200 answer, so the request takes the no-endpoint path (the
    // 200 after it is that answer's body, never read as headers).
    let interim = |status: &str, then: &str| {
        let head = format!("HTTP/1.1 {status}\r\nX-Gateway-Destination-Endpoint: {e}\r\n\r\n");
        Mode::Raw([head.as_str(), then].concat().into_bytes())
    };
    let final_200 = format!("HTTP/1.1 200 OK\r\nX-Gateway-Destination-Endpoint: {e}\r\n\r\n");
    for (code, mode) in [
        (100, interim("100 Continue", "")),
        (102, interim("102 Processing", "")),
        (103, interim("103 Early Hints", "")),
        (103, interim("103 Early Hints", &final_200)),
    ] {
        shim.set_mode(mode.clone());
        let before = errors(&n.error_log(), &format!("status: {code};"));
        let r = send(&n, "GET", "/infer?q", &[], b"");
        assert_eq!(
            (r.status, r.body.as_str()),
            (200, "no endpoint, args=[q]\n"),
            "{mode:?}: {r:?}"
        );
        let log = n.error_log();
        assert_eq!(errors(&log, &format!("status: {code};")), before + 1, "{mode:?}: {log}");
    }
    assert_eq!(echo.total(), 3);
    n.finish();
}
