//! `http_matches_epp grpc://ADDRESS;` end to end (issue #47): a real NGINX with the module, the
//! fake EPP (`fake-epp`, envoy-types; each request picks its mode with `x-fake-epp-mode`, which
//! the module forwards as it forwards every client line) and an echo backend recording what
//! it got behind `proxy_pass http://$inference_workload_endpoint`. Each case checks what the
//! client got, what the EPP received (its JSON record) and what the backend received. Nothing
//! sleeps and nothing is timed. Needs `FAKE_EPP_BIN` or `target/release/fake-epp`.

mod common;

use common::epp_shim::{Mode as ShimMode, Server};
use common::fake_epp::{Fake, fnv};
use common::{Nginx, Prefix, Resp};
use epp_proto::MAX_MESSAGE;
use std::process::Command;

fn conf(fake: &Fake, dead: u16) -> String {
    conf_h2(fake, dead, common::free_port())
}

/// Also HTTP/2 (h2c) on `h2`.
fn conf_h2(fake: &Fake, dead: u16, h2: u16) -> String {
    // `http2 on` from NGINX 1.25.1; before, a `listen` parameter (Debian 12's 1.22).
    let (listen_h2, http2_on) =
        if common::nginx_version() >= (1, 25, 1) { ("", "http2 on;") } else { (" http2", "") };
    format!(
        r#"
    upstream epp {{ server {fake}; keepalive 4; }}
    map $inference_workload_endpoint $epp_none {{ "" 1; default 0; }}
    server {{
        listen 127.0.0.1:{{PORT}};
        listen 127.0.0.1:{h2}{listen_h2};
        {http2_on}
        client_body_buffer_size 16k;
        client_max_body_size 16m;
        large_client_header_buffers 48 128k;
        location /infer {{
            set $epp_internal_path /_internal;
            http_matches_epp grpc://epp;
        }}
        location /ifgrpc {{
            set $epp_internal_path /_internal;
            if ($http_x_flag) {{
                set $epp_internal_path /_internal/flag;
            }}
            http_matches_epp grpc://epp;
        }}
        location /slow {{
            set $epp_internal_path /_internal;
            grpc_read_timeout 1s;
            http_matches_epp grpc://epp;
        }}
        location /down {{
            set $epp_internal_path /_internal;
            http_matches_epp grpc://127.0.0.1:{dead};
        }}
        {internal}
    }}
"#,
        internal = common::EPP_INTERNAL,
        fake = fake.addr
    )
}

fn start(name: &str, http_body: &str) -> Nginx {
    Nginx::start_keeping_bodies(name, http_body)
}

/// An HTTP/1.1 request with `Connection: close`, the fake's `mode`, and `body` as given (a
/// POST with its `Content-Length` unless `headers` give a `Transfer-Encoding`; else a GET).
fn send(n: &Nginx, target: &str, mode: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let method = if body.is_empty() { "GET" } else { "POST" };
    let framed = headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"));
    let mut r = format!(
        "{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         X-Fake-Epp-Mode: {mode}\r\n"
    );
    if method == "POST" && !framed {
        r.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        r.push_str(&format!("{name}: {value}\r\n"));
    }
    r.push_str("\r\n");
    let mut bytes = r.into_bytes();
    bytes.extend_from_slice(body);
    n.raw(&bytes).unwrap_or_else(|e| panic!("{target}: {e}"))
}

fn chunked(body: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for c in body.chunks(size) {
        out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

fn errors(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains("[error]") && l.contains(needle)).count()
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// The header names the EPP got, in order.
fn names(record: &serde_json::Value) -> Vec<String> {
    let headers = record["headers"].as_array().expect("headers");
    headers.iter().map(|h| h[0].as_str().unwrap().to_owned()).collect()
}

#[test]
fn the_destination_reaches_the_backend_for_every_body_shape_over_few_connections() {
    let echo = Server::echo();
    let fake = Fake::start("epp-grpc-dest", &echo.endpoint());
    let n = start("epp-grpc-dest", &conf(&fake, common::DEAD_PORT));
    // 0 B, the destination in the headers response.
    let r = send(&n, "/infer/a?x=1", "header", &[], b"");
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    let got = echo.take();
    assert_eq!(got.len(), 1);
    assert!(got[0].request_line.contains("?x=1"), "{}", got[0].request_line);
    let rec = &fake.records()[0];
    let names = names(rec);
    assert_eq!(names[..4], [":method", ":path", ":authority", ":scheme"], "{rec}");
    assert_eq!(rec["headers"][1][1], "/infer/a?x=1");
    assert_eq!(rec["headers"][2][1], "localhost");
    assert!(names.contains(&"x-fake-epp-mode".to_owned()) && !names.contains(&"host".to_owned()));
    assert_eq!(
        (rec["headers_end_of_stream"].as_bool(), rec["body_messages"].as_u64()),
        (Some(true), Some(0))
    );
    // 1 KB in memory, the destination in the body response; only metadata.
    let kb = pattern(1024);
    for (mode, body) in [("body", &kb[..]), ("metadata", b"")] {
        let r = send(&n, "/infer/b", mode, &[], body);
        assert_eq!(r.status, 200, "{mode}: {r:?}");
        let got = echo.take();
        assert_eq!((got.len(), &got[0].body[..]), (1, body), "{mode}");
    }
    let rec = &fake.records()[1];
    assert_eq!(rec["body_bytes"], 1024);
    assert_eq!(rec["body_fnv"], fnv(&kb));
    assert_eq!(
        (rec["body_messages"].as_u64(), rec["body_end_of_stream"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(rec["headers_end_of_stream"], false);
    // 3 MB with a Content-Length and 5 MB chunked: both in a temp file (16k buffer), the
    // second over one message (two, none over 4 MiB), sent from ranges of the file.
    let three = pattern(3 << 20);
    let five = pattern(5 << 20);
    let r = send(&n, "/infer/c", "body", &[], &three);
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    let te = [("Transfer-Encoding", "chunked")];
    let r = send(&n, "/infer/d", "header", &te, &chunked(&five, 100_000));
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    let got = echo.take();
    assert_eq!((got[0].body.len(), got[1].body.len()), (three.len(), five.len()));
    assert!(got[0].body == three && got[1].body == five, "the backend got the bodies");
    let records = fake.records();
    for (rec, body, messages) in [(&records[3], &three, 1), (&records[4], &five, 2)] {
        assert_eq!(rec["body_bytes"], body.len());
        assert_eq!(rec["body_fnv"], fnv(body));
        assert_eq!(rec["body_messages"], messages);
        assert_eq!(rec["body_end_of_stream"], true);
        assert!(rec["largest_message"].as_u64().unwrap() <= MAX_MESSAGE as u64);
    }
    assert!(n.error_log().matches("buffered to a temporary file").count() >= 2);
    // An `if` block of the location keeps the call (and its own variables).
    let r = send(&n, "/ifgrpc", "header", &[("X-Flag", "1")], b"");
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    assert_eq!(echo.take()[0].target(), "/_internal/flag");
    // keepalive: 40 more calls, every one over the first connection to the EPP.
    for _ in 0..40 {
        assert_eq!(send(&n, "/infer/e", "header", &[], b"").status, 200);
    }
    let records = fake.records();
    assert_eq!(records.len(), 46);
    assert_eq!(records[45]["connections"], 1, "{}", records[45]);
    assert_eq!(echo.total(), 46);
    n.finish();
}

#[test]
fn an_immediate_response_answers_the_client_and_failures_redirect_with_no_endpoint() {
    let echo = Server::echo();
    let fake = Fake::start("epp-grpc-fail", &echo.endpoint());
    let n = start("epp-grpc-fail", &conf(&fake, common::DEAD_PORT));
    let r = send(&n, "/infer?q=1", "immediate", &[], b"");
    assert_eq!(r.status, 429, "{r:?}\n{}", n.error_log());
    assert!(r.head.to_ascii_lowercase().contains("\r\nx-fake-epp: shed"), "{}", r.head);
    assert_eq!(r.body, "shed by the fake EPP\n");
    let no_endpoint = "no endpoint, args=[q=1]\n";
    for (path, mode, error) in [
        (
            "/infer?q=1",
            "grpc-error",
            "no endpoint from the EndpointPicker: grpc-status 14: fake EPP: no capacity",
        ),
        ("/infer?q=1", "malformed", "the EndpointPicker's answer is malformed: message 1"),
        ("/down?q=1", "header", "no answer from the EndpointPicker (status: 502"),
        // NGINX's grpc_read_timeout ends the call (the EPP never answers).
        // after NGINX's own "upstream timed out".
        (
            "/slow?q=1",
            "slow",
            "no endpoint from the EndpointPicker: the stream ended with no grpc-status",
        ),
    ] {
        let r = send(&n, path, mode, &[], b"");
        assert_eq!((r.status, r.body.as_str()), (200, no_endpoint), "{mode}: {r:?}");
        assert_eq!(errors(&n.error_log(), error), 1, "{mode}:\n{}", n.error_log());
    }
    assert_eq!(echo.total(), 0, "no call reached the backend");
    let modes: Vec<_> =
        fake.records().iter().map(|r| r["mode"].as_str().unwrap().to_owned()).collect();
    assert_eq!(modes, ["Immediate", "GrpcError", "Malformed", "Slow"]);
    // Header lines over one message (4 MiB): no call, one [error].
    let big = "b".repeat(120_000);
    let names: Vec<String> = (0..36).map(|i| format!("X-Big-{i}")).collect();
    let lines: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), big.as_str())).collect();
    let before = errors(&n.error_log(), "http_matches_epp");
    let r = send(&n, "/infer?q=1", "header", &lines, b"");
    assert_eq!((r.status, r.body.as_str()), (200, no_endpoint), "{r:?}");
    let log = n.error_log();
    assert_eq!(errors(&log, "no call: the request's header lines make a message"), 1, "{log}");
    assert_eq!(errors(&log, "http_matches_epp") - before, 1, "{log}");
    // ImmediateResponse lines that would reframe or split the answer are dropped.
    let r = send(&n, "/infer", "immediate-framing", &[], b"");
    assert_eq!((r.status, r.body.as_str()), (429, "shed by the fake EPP\n"), "{r:?}");
    let head = r.head.to_ascii_lowercase();
    assert_eq!(head.matches("content-length").count(), 1, "{head}");
    assert!(head.contains("\r\ncontent-length: 21"), "{head}");
    assert!(!head.contains("transfer-encoding") && !head.contains("x-injected"), "{head}");
    assert!(head.contains("\r\nx-fake-epp: shed"), "{head}");
    n.finish();
}

/// curl over h2c: (status line and headers, body).
fn curl_h2(url: &str, mode: &str, body: Option<&str>) -> (String, String) {
    let mut c = Command::new("curl");
    c.args(["-s", "--http2-prior-knowledge", "-D", "-", "-H"])
        .arg(format!("x-fake-epp-mode: {mode}"));
    if let Some(body) = body {
        c.args(["--data-binary", body]);
    }
    let out = c.arg(url).output().expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_owned(), body.to_owned())
}

#[test]
fn http2_clients_get_the_same_call_and_the_same_immediate_answer() {
    let echo = Server::echo();
    let fake = Fake::start("epp-grpc-h2", &echo.endpoint());
    let h2 = common::free_port();
    let n = start("epp-grpc-h2", &conf_h2(&fake, common::DEAD_PORT, h2));
    let (head, _) = curl_h2(&format!("http://127.0.0.1:{h2}/infer?h=2"), "body", Some("h2 body"));
    assert!(head.starts_with("HTTP/2 200"), "{head}\n{}", n.error_log());
    let got = echo.take();
    assert_eq!((got[0].target(), &got[0].body[..]), ("/_internal?h=2", &b"h2 body"[..]));
    let rec = &fake.records()[0];
    assert_eq!(names(rec)[..4], [":method", ":path", ":authority", ":scheme"], "{rec}");
    assert_eq!(rec["headers"][0][1], "POST");
    assert_eq!(rec["headers"][1][1], "/infer?h=2");
    assert_eq!(rec["headers"][2][1], format!("127.0.0.1:{h2}"));
    assert_eq!(rec["body_fnv"], fnv(b"h2 body"));
    let (head, body) = curl_h2(&format!("http://127.0.0.1:{h2}/infer"), "immediate", None);
    assert!(head.starts_with("HTTP/2 429") && head.contains("x-fake-epp: shed"), "{head}");
    assert_eq!(body, "shed by the fake EPP\n");
    n.finish();
}

/// A server-level `if` on the client's lines, and `set` in the EPP's location: on
/// `{PORT}` every request needs `Authorization`; on `plain` nothing is required.
fn conf_rewrites(fake: &Fake, plain: u16) -> String {
    let location = r#"
        location /infer {
            set $epp_internal_path /_internal;
            set $seen "$request_method|$http_content_type|$http_x_user";
            http_matches_epp grpc://epp;
        }
        location /_internal {
            internal;
            if ($epp_none) {
                return 200 "no endpoint\n";
            }
            proxy_set_header X-Seen $seen;
            proxy_set_header X-Len $content_length;
            proxy_pass http://$inference_workload_endpoint;
        }"#;
    format!(
        r#"
    upstream epp {{ server {fake}; }}
    map $inference_workload_endpoint $epp_none {{ "" 1; default 0; }}
    server {{
        listen 127.0.0.1:{{PORT}};
        if ($http_authorization = "") {{
            return 401;
        }}
        {location}
    }}
    server {{
        listen 127.0.0.1:{plain};
        if ($content_length = "0") {{
            return 400;
        }}
        # The shim mode's call for /mixed is to /infer, a grpc:// location.
        location /mixed {{
            set $epp_internal_path /_internal;
            set $epp_host 127.0.0.1;
            set $epp_port 1;
            rewrite ^ /infer break;
            http_matches_epp http://127.0.0.1:1;
        }}
        {location}
    }}
"#,
        fake = fake.addr
    )
}

#[test]
fn the_calls_rewrite_phases_see_the_clients_lines_and_leave_its_variables_alone() {
    let echo = Server::echo();
    let fake = Fake::start("epp-grpc-rewrite", &echo.endpoint());
    let plain = common::free_port();
    let n = start("epp-grpc-rewrite", &conf_rewrites(&fake, plain));
    // The call passes the server's `if` as the client did (it got 401 with the call's own
    // lines: no endpoint).
    let r = send(&n, "/infer", "header", &[("Authorization", "Bearer x"), ("X-User", "al")], b"");
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    assert_ne!(r.body, "no endpoint\n", "{}", n.error_log());
    assert_eq!(echo.take().len(), 1);
    assert_eq!(fake.records().len(), 1);
    // `set $seen` ran again in the call, from the same method and lines: the client's value.
    let url = format!("http://127.0.0.1:{plain}/infer");
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-User: al", "-H"])
        .args(["x-fake-epp-mode: header", &url])
        .output()
        .expect("curl");
    let r = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(r, "200", "{}", n.error_log());
    let got = echo.take();
    assert_eq!(got.len(), 1, "{r:?}");
    assert_eq!(got[0].header("X-Seen"), Some("GET||al"));
    assert_eq!(fake.records()[1]["headers"][0][1], "GET");
    // The server's `if` evaluated the client's `$content_length` (1024): the call's own
    // length is not that (its stream is longer, HTTP/2 refuses the mismatch), and after the
    // call the client's request has its own again.
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-User: al", "-H"])
        .args(["x-fake-epp-mode: body", "--data-binary", &"k".repeat(1024), &url])
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200", "{}", n.error_log());
    let got = echo.take();
    assert_eq!(got.len(), 1, "no endpoint:\n{}", n.error_log());
    assert_eq!((got[0].body.len(), got[0].header("X-Len")), (1024, Some("1024")));
    assert_eq!(fake.records()[2]["body_bytes"], 1024);
    assert_eq!(errors(&n.error_log(), "http_matches_epp"), 0, "{}", n.error_log());
    // A shim-mode call landing in the grpc:// location is refused there: the EPP never gets
    // the shim's request (the client's raw body as its stream).
    let out = Command::new("curl")
        .args(["-s", "-H", "x-fake-epp-mode: header", "--data-binary", "raw body"])
        .arg(format!("http://127.0.0.1:{plain}/mixed"))
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "no endpoint\n", "{}", n.error_log());
    assert_eq!(fake.records().len(), 3, "{}", n.error_log());
    assert_eq!(errors(&n.error_log(), "landed in a location of the other mode"), 1);
    n.finish();
}

/// NGINX with the fake EPP and an echo backend behind it.
fn start_echo(name: &str) -> (Server, Fake, Nginx) {
    let echo = Server::echo();
    let fake = Fake::start(name, &echo.endpoint());
    let n = start(name, &conf(&fake, common::DEAD_PORT));
    (echo, fake, n)
}

#[test]
fn an_echoed_prompt_of_any_size_keeps_its_destination_read_as_it_arrives() {
    let (echo, fake, n) = start_echo("epp-grpc-echo");
    // GIE's EPP echoes the body back: every prompt over the 4k/8k subrequest_output_buffer_size
    // (5 KB in memory, 1 MB and 3 MB in temp files) keeps its destination, and NGINX never
    // refuses the answer (it used to: "too big subrequest response", the rest not read).
    for len in [5 << 10, 1 << 20, 3 << 20] {
        let prompt = pattern(len);
        let r = send(&n, "/infer", "echo", &[], &prompt);
        assert_eq!(r.status, 200, "{len}: {r:?}\n{}", n.error_log());
        let got = echo.take();
        assert_eq!(got.len(), 1, "{len}: no endpoint: {r:?}\n{}", n.error_log());
        assert!(got[0].body == prompt, "{len}: the backend got the prompt");
        let log = n.error_log();
        assert!(!log.contains("too big subrequest response"), "{len}: {log}");
        assert_eq!(log.matches("[error]").count(), 0, "{len}: {log}");
    }
    assert_eq!(fake.records().len(), 3);
    n.finish();
}

#[test]
fn an_immediate_response_of_64_kb_is_answered_whole() {
    let (echo, _fake, n) = start_echo("epp-grpc-big");
    let r = send(&n, "/infer", "immediate-big", &[], b"");
    assert_eq!(r.status, 429, "{r:?}\n{}", n.error_log());
    assert!(r.head.to_ascii_lowercase().contains("\r\ncontent-length: 65536\r\n"), "{}", r.head);
    assert!(r.body == String::from_utf8_lossy(&pattern(64 << 10)), "the 64 KB body, whole");
    assert_eq!(echo.total(), 0);
    assert_eq!(n.error_log().matches("[error]").count(), 0, "{}", n.error_log());
    n.finish();
}

#[test]
fn an_immediate_response_sends_its_first_100_header_lines_and_one_warn() {
    let (echo, _fake, n) = start_echo("epp-grpc-many");
    // The fake's own line and 1,000 `x-many-N`: the first 100 lines are answered.
    let r = send(&n, "/infer", "immediate-many", &[], b"");
    assert_eq!(r.status, 429, "{r:?}\n{}", n.error_log());
    let head = r.head.to_ascii_lowercase();
    assert_eq!(head.matches("\r\nx-many-").count(), 99, "{}", r.head);
    assert!(head.contains("\r\nx-many-98: 98") && !head.contains("x-many-99:"), "{}", r.head);
    assert_eq!(echo.total(), 0);
    let log = n.error_log();
    assert_eq!(log.matches("[warn]").count(), 1, "{log}");
    assert_eq!(
        log.matches("has 901 header lines past 100 lines or 65536 bytes").count(),
        1,
        "{log}"
    );
    assert_eq!(log.matches("[error]").count(), 0, "{log}");
    n.finish();
}

#[test]
fn an_epp_streaming_without_end_is_cut_at_the_budget_and_fails_open() {
    let (echo, fake, n) = start_echo("epp-grpc-flood");
    // The destination, then 64 KB messages without end: past epp_proto::answer_budget (4 MiB
    // and 5 bytes for a GET) the call ends, one [error], the redirect with no endpoint.
    let r = send(&n, "/infer?q=2", "flood", &[], b"");
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    assert_eq!(r.body, "no endpoint, args=[q=2]\n");
    assert_eq!(echo.total(), 0);
    let log = n.error_log();
    assert_eq!(log.matches("[error]").count(), 1, "{log}");
    assert_eq!(errors(&log, "the answer is longer than 4194309 bytes"), 1, "{log}");
    // The next call is served (a new connection to the EPP: the cut one is not kept).
    let r = send(&n, "/infer", "header", &[], b"");
    assert_eq!((r.status, echo.total()), (200, 1), "{r:?}\n{}", n.error_log());
    assert_eq!(fake.records().len(), 2);
    n.finish();
}

#[test]
fn a_non_200_answer_with_a_long_body_is_not_read_on() {
    // What stands before the EPP (here NGINX itself, h2c) answers 503 with a body of 64 MB
    // (a sparse file as its error page): the call stops at its first piece. What the front
    // sent is logged to the error log ($bytes_sent) once its stream ends.
    let dir = std::env::temp_dir().join(format!("epp-grpc-503-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = 64usize << 20;
    std::fs::File::create(dir.join("big")).unwrap().set_len(big as u64).unwrap();
    let (front, d) = (common::free_port(), dir.display());
    let (listen_h2, http2_on) =
        if common::nginx_version() >= (1, 25, 1) { ("", "http2 on;") } else { (" http2", "") };
    let body = format!(
        r#"
    map $inference_workload_endpoint $epp_none {{ "" 1; default 0; }}
    log_format front "front-sent=$bytes_sent.";
    server {{
        listen 127.0.0.1:{front}{listen_h2};
        {http2_on}
        access_log logs/error.log front;
        location / {{ error_page 503 /big; return 503; }}
        location = /big {{ internal; root {d}; }}
    }}
    server {{
        listen 127.0.0.1:{{PORT}};
        location /infer {{
            set $epp_internal_path /_internal;
            http_matches_epp grpc://127.0.0.1:{front};
        }}
        location /_internal {{
            internal;
            if ($epp_none) {{ return 200 "no endpoint, args=[$args]\n"; }}
            return 500;
        }}
    }}
"#
    );
    let n = start("epp-grpc-503", &body);
    let r = send(&n, "/infer?q=5", "header", &[], b"");
    assert_eq!((r.status, r.body.as_str()), (200, "no endpoint, args=[q=5]\n"), "{r:?}");
    n.wait_log("front-sent=", 1);
    let log = n.error_log();
    assert_eq!(errors(&log, "HTTP status 503 from the EndpointPicker"), 1, "{log}");
    let sent: usize =
        log.split("front-sent=").nth(1).unwrap().split('.').next().unwrap().parse().unwrap();
    // Before: the whole 64 MB read. Now what the sockets held when the call ended.
    assert!(sent < big / 2, "the front sent {sent} bytes");
    let _ = std::fs::remove_dir_all(&dir);
    n.finish();
}

/// A CA (`ca`), a second one (`other`), and `epp.crt` / `epp.key` for the name `epp.test`
/// signed by `ca`, in `dir`.
fn make_certs(dir: &std::path::Path) {
    common::certs::ca(dir, "ca");
    common::certs::ca(dir, "other");
    common::certs::leaf(dir, "ca", "epp", "epp.test", "sha256");
}

#[test]
fn grpcs_to_the_epp_is_verified_and_a_wrong_ca_fails_open() {
    let echo = Server::echo();
    let fake = Fake::start("epp-grpcs", &echo.endpoint());
    let dir = std::env::temp_dir().join(format!("epp-grpcs-{}", std::process::id()));
    make_certs(&dir);
    let (tls, d) = (common::free_port(), dir.display());
    let (listen_h2, http2_on) =
        if common::nginx_version() >= (1, 25, 1) { ("", "http2 on;") } else { (" http2", "") };
    // NGINX itself terminates TLS in front of the fake EPP (h2 over TLS, ALPN). No
    // grpc_ssl_verify in the locations but the opted-out one: the directive turns it on. No
    // TLS session reuse: the locations share one implicit upstream, whose session a verified
    // call would leave for another to resume (no verification then), whatever their order.
    let location = |path: &str, ca: &str, own: &str| {
        format!(
            "location {path} {{ set $epp_internal_path /_internal; {own} \
             grpc_ssl_session_reuse off; grpc_ssl_trusted_certificate {d}/{ca}.crt; \
             grpc_ssl_name epp.test; http_matches_epp grpcs://127.0.0.1:{tls}; }}"
        )
    };
    let body = format!(
        r#"
    map $inference_workload_endpoint $epp_none {{ "" 1; default 0; }}
    server {{
        listen 127.0.0.1:{tls} ssl{listen_h2};
        {http2_on}
        ssl_certificate {d}/epp.crt;
        ssl_certificate_key {d}/epp.key;
        location / {{ grpc_pass grpc://{fake}; }}
    }}
    server {{
        listen 127.0.0.1:{{PORT}};
        {verified}
        {wrong}
        {opted_out}
        {internal}
    }}
"#,
        internal = common::EPP_INTERNAL,
        fake = fake.addr,
        verified = location("/infer", "ca", ""),
        wrong = location("/wrongca", "other", ""),
        opted_out = location("/optout", "other", "grpc_ssl_verify off;"),
    );
    let n = start("epp-grpcs", &body);
    let r = send(&n, "/infer?q=1", "header", &[], b"{}");
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    let got = echo.take();
    assert_eq!(got.len(), 1, "no endpoint: {r:?}\n{}", n.error_log());
    assert_eq!(got[0].target(), "/_internal?q=1");
    assert_eq!(n.error_log().matches("[error]").count(), 0, "{}", n.error_log());
    let r = send(&n, "/wrongca?q=2", "header", &[], b"{}");
    let no = (200, "no endpoint, args=[q=2]\n");
    assert_eq!((r.status, r.body.as_str()), no, "{}", n.error_log());
    let log = n.error_log();
    assert_eq!(errors(&log, "upstream SSL certificate verify error"), 1, "{log}");
    assert_eq!(errors(&log, "no answer from the EndpointPicker (status: 502"), 1, "{log}");
    assert_eq!(log.matches("[error]").count(), 2, "{log}");
    assert_eq!(fake.records().len(), 1, "the EPP got only the verified call");
    // The operator's own `grpc_ssl_verify off` before the directive stays.
    let r = send(&n, "/optout?q=3", "header", &[], b"{}");
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    assert_eq!(echo.take().len(), 1, "no endpoint: {r:?}\n{}", n.error_log());
    assert_eq!(n.error_log().matches("[error]").count(), 2, "{}", n.error_log());
    let _ = std::fs::remove_dir_all(&dir);
    n.finish();
}

#[test]
fn grpcs_without_a_trusted_certificate_or_with_verify_off_after_the_directive_is_refused() {
    let load = |name: &str, location: &str| {
        let body =
            format!("server {{ listen 127.0.0.1:{{PORT}}; location /infer {{ {location} }} }}");
        Prefix::new(name, &body, &[]).test()
    };
    let directive = "http_matches_epp grpcs://127.0.0.1:1;";
    // The directive turns verification on: NGINX then wants the CAs to verify with.
    let (ok, out) = load("epp-grpcs-no-ca", directive);
    assert!(!ok && out.contains("no grpc_ssl_trusted_certificate for grpc_ssl_verify"), "{out}");
    // An opt-out after the directive would be silently ignored: NGINX refuses it.
    let (ok, out) = load("epp-grpcs-off-after", &format!("{directive} grpc_ssl_verify off;"));
    assert!(!ok && out.contains("\"grpc_ssl_verify\" directive is duplicate"), "{out}");
    let (ok, out) = load("epp-grpcs-off-before", &format!("grpc_ssl_verify off; {directive}"));
    assert!(ok, "{out}");
}

/// One NGINX with both modes: `/s...` asks the shim, `/g...` the fake EPP; both redirect to
/// the same `/_internal`, whose answer shows what the client gets.
fn conf_both(shim: &Server, fake: &Fake, dead: u16) -> String {
    format!(
        r#"
    map $inference_workload_endpoint $epp_none {{ "" 1; default 0; }}
    server {{
        listen 127.0.0.1:{{PORT}};
        client_body_buffer_size 1k;
        set $epp_internal_path /_internal;
        set $epp_host epp.example;
        set $epp_port 9002;
        location /s {{ http_matches_epp {shim}; }}
        location /g {{ http_matches_epp grpc://{fake}; }}
        location /down-s {{ http_matches_epp http://127.0.0.1:{dead}; }}
        location /down-g {{ http_matches_epp grpc://127.0.0.1:{dead}; }}
        {internal}
    }}
"#,
        internal = common::EPP_INTERNAL,
        shim = shim.url(),
        fake = fake.addr
    )
}

/// (case, the shim's answer, the fake's mode, its destination, the client's body, the
/// [error] both log)
type Case<'a> = (&'a str, ShimMode, &'a str, String, &'a [u8], &'a str);

#[test]
fn the_shim_and_grpc_modes_answer_every_shared_case_alike() {
    let echo = Server::echo();
    let shim = Server::shim(ShimMode::NoEndpoint);
    let fake = Fake::start("epp-both", &echo.endpoint());
    let n = start("epp-both", &conf_both(&shim, &fake, common::DEAD_PORT));
    let e = echo.endpoint();
    let body = pattern(3000);
    // (case, the shim's answer, the fake's mode and destination, the client's body, the
    // [error] both log): README's side-by-side table, row by row.
    let cases: Vec<Case> = vec![
        ("destination", ShimMode::Endpoint(e.clone()), "header", e.clone(), b"", ""),
        ("a body (temp file)", ShimMode::Endpoint(e.clone()), "header", e.clone(), &body, ""),
        (
            "a list: the first",
            ShimMode::Endpoint(format!("{e}, 10.0.0.9:1")),
            "header",
            format!("{e}, 10.0.0.9:1"),
            b"",
            "",
        ),
        (
            "not ip:port",
            ShimMode::Endpoint("unix:/x".into()),
            "header",
            "unix:/x".into(),
            b"",
            "is not an ip:port list",
        ),
        ("no destination", ShimMode::NoEndpoint, "header", String::new(), b"", "http_matches_epp"),
        (
            "an error",
            ShimMode::Status(503, "busy".into()),
            "grpc-error",
            e.clone(),
            b"",
            "http_matches_epp",
        ),
    ];
    let mut seen = 0;
    for (case, shim_mode, fake_mode, dest, body, error) in cases {
        shim.set_mode(shim_mode);
        let mut answers = Vec::new();
        for path in ["/s?q=1", "/g?q=1"] {
            let before = n.error_log().matches("[error]").count();
            let r = send(&n, path, fake_mode, &[("X-Fake-Epp-Endpoint", &dest)], body);
            let log = n.error_log();
            let new: Vec<&str> =
                log.lines().filter(|l| l.contains("[error]")).skip(before).collect();
            let expected = usize::from(!error.is_empty());
            assert_eq!(new.len(), expected, "{case} {path}: {new:?}");
            assert!(new.iter().all(|l| l.contains(error)), "{case} {path}: {new:?}");
            answers.push((r.status, r.body));
        }
        assert_eq!(answers[0], answers[1], "{case}: the shim and the gRPC mode differ");
        seen += echo.take().len();
    }
    assert_eq!(seen, 6, "the three cases with a destination reached the backend in both modes");
    // The deliberate difference: a shed request (the shim's 429, the EPP's ImmediateResponse)
    // is no endpoint in the shim mode, the EPP's own answer in the gRPC mode.
    shim.set_mode(ShimMode::Status(429, "shed".into()));
    let s = send(&n, "/s?q=1", "immediate", &[], b"");
    let g = send(&n, "/g?q=1", "immediate", &[], b"");
    assert_eq!((s.status, s.body.as_str()), (200, "no endpoint, args=[q=1]\n"));
    assert_eq!((g.status, g.body.as_str()), (429, "shed by the fake EPP\n"));
    assert!(echo.take().is_empty(), "no endpoint in either mode");
    // The EPP down: both fail open with one [error].
    let r =
        [send(&n, "/down-s?q=1", "header", &[], b""), send(&n, "/down-g?q=1", "header", &[], b"")];
    assert_eq!((r[0].status, &r[0].body), (r[1].status, &r[1].body));
    assert_eq!(r[0].body, "no endpoint, args=[q=1]\n");
    let log = n.error_log();
    assert_eq!(errors(&log, "no answer from the EndpointPicker shim (status: 502"), 1, "{log}");
    assert_eq!(errors(&log, "no answer from the EndpointPicker (status: 502"), 1, "{log}");
    n.finish();
}
