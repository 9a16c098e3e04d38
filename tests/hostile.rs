//! Hostile requests against a live NGINX with the module: each gets the answer the contract
//! says, and no worker dies. The time each took is printed, never asserted (the machine's
//! speed is no property of the module; the regex work is bounded by a count, see
//! tests/pressure.rs and the engine's budget tests); a hang fails through the client's read
//! timeout.

mod common;

use std::time::Instant;

use common::Nginx;

const LIST: &str = r#"[{"headers":["x-tenant:Exact:t42"],"redirectPath":"/t/tenant"},
 {"headers":["x-re:RegularExpression:^(a+)+$"],"redirectPath":"/t/re"},
 {"params":["p=Exact=v"],"redirectPath":"/t/param"},
 {"params":["q=RegularExpression=^z"],"redirectPath":"/t/q"},
 {"any":true,"redirectPath":"/t/any"}]"#;

fn server() -> Nginx {
    let body = format!(
        r#"
        server {{
          listen 127.0.0.1:{{PORT}};
          large_client_header_buffers 64 256k;
          client_header_buffer_size 64k;
          location /t/ {{ internal; return 200 "$uri\n"; }}
          location = /h {{ http_matches '{}'; }}
        }}"#,
        LIST.replace('\n', "")
    );
    Nginx::start("hostile", &body, &[])
}

fn timed(n: &Nginx, what: &str, req: &[u8]) -> (u16, String) {
    let started = Instant::now();
    let r = n.raw(req).unwrap_or_else(|e| panic!("{what}: {e}"));
    let took = started.elapsed();
    eprintln!("{what}: {} in {took:?}", r.status);
    (r.status, r.body)
}

#[test]
fn hostile_requests_get_contract_answers() {
    let n = server();
    let mut cases: Vec<(&str, Vec<u8>, u16, &str)> = Vec::new();

    let big = "b".repeat(8 * 1024);
    let mut r = String::from("GET /h HTTP/1.0\r\n");
    for i in 0..100 {
        r.push_str(&format!("x-big-{i}: {big}\r\n"));
    }
    r.push_str("x-tenant: t42\r\n\r\n");
    cases.push(("100 headers of 8 KiB", r.into_bytes(), 200, "/t/tenant\n"));

    let repeated = |lines: usize| {
        let mut r = String::from("GET /h HTTP/1.0\r\n");
        for i in 0..lines {
            r.push_str(&format!("x-tenant: t{i}0\r\n"));
        }
        r.push_str("x-tenant: x, y,t42\r\n\r\n");
        r.into_bytes()
    };
    cases.push((
        "500 lines of a matched header, the last one matching",
        repeated(500),
        200,
        "/t/tenant\n",
    ));

    let q: Vec<String> = (0..5000).map(|i| format!("k{i}=v{i}")).collect();
    let r = format!("GET /h?{}&p=v HTTP/1.0\r\n\r\n", q.join("&"));
    cases.push(("5,000 query params", r.into_bytes(), 200, "/t/param\n"));

    let r = b"GET /h?p=%ff%fe%zz%&q=%00%01 HTTP/1.0\r\nx-tenant: \xff\xfe\x01t42\r\n\r\n".to_vec();
    cases.push(("invalid UTF-8, control bytes, broken escapes", r, 200, "/t/any\n"));

    let r = b"GET /h?q=z%00%ff HTTP/1.0\r\n\r\n".to_vec();
    cases.push(("NUL in a decoded param value", r, 200, "/t/q\n"));

    let r = b"GET /h HTTP/1.0\r\nx-tenant: t\x0042\r\n\r\n".to_vec();
    cases.push(("NUL in a header value (NGINX refuses it)", r, 400, ""));

    let long_uri = format!("/h?p=v&pad={}", "a".repeat(200 * 1024));
    let r = format!("GET {long_uri} HTTP/1.0\r\n\r\n");
    cases.push(("a 200 KiB URI", r.into_bytes(), 200, "/t/param\n"));

    let r = format!("GET /h HTTP/1.0\r\nx-re: {}!\r\n\r\n", "a".repeat(64 * 1024));
    cases.push(("catastrophic regex subject (64 KiB)", r.into_bytes(), 200, "/t/any\n"));

    for (what, req, status, body) in &cases {
        let (got_status, got_body) = timed(&n, what, req);
        assert_eq!(got_status, *status, "{what}");
        if !body.is_empty() {
            assert_eq!(got_body, *body, "{what}");
        }
    }
    // 10,000 lines: NGINX 1.28 hands them to the module; NGINX 1.22 refuses a request with more
    // than some hundreds of lines itself
    // ("client sent too many header lines", 400) before any module runs. Either is right.
    let (status, body) = timed(&n, "10,000 lines of a matched header", &repeated(10_000));
    match status {
        200 => assert_eq!(body, "/t/tenant\n"),
        400 => assert!(
            n.error_log().contains("client sent too many header lines"),
            "{}",
            n.error_log()
        ),
        other => panic!("10,000 lines: {other}"),
    }
    // Still serving, nothing crashed.
    assert_eq!(n.get("/h", &[("x-tenant", "t42")]).body, "/t/tenant\n");
    let log = n.error_log();
    assert!(log.contains("gave up"), "the catastrophic regex warning:\n{log}");
    n.finish();
}

/// Five entries with catastrophic patterns, four 64 KiB header lines of ~2,980 comma elements
/// each: about 60,000 match attempts that each run into the step limit, seconds of work
/// without a per-request bound. The request's regex budget (1,000,000 match steps by default)
/// ends it: the
/// answer is the `any` entry, well under 50 ms, with one `[warn]` naming the budget, and the
/// worker serves the next request as usual.
#[test]
fn catastrophic_patterns_on_many_elements_answer_within_the_budget() {
    const PATTERNS: [&str; 5] = ["^(a+)+$", "^(a|aa)+$", "^(a|a?)+$", "^(a*)*$", "^([a-z]+a?)*$"];
    let entries: Vec<String> = PATTERNS
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(r#"{{"headers":["x:RegularExpression:{p}"],"redirectPath":"/t/r{i}"}}"#)
        })
        .collect();
    let list = format!(r#"[{},{{"any":true,"redirectPath":"/t/any"}}]"#, entries.join(","));
    let body = format!(
        r#"
        server {{
          listen 127.0.0.1:{{PORT}};
          large_client_header_buffers 8 128k;
          location /t/ {{ internal; return 200 "$uri\n"; }}
          location = /h {{ http_matches '{list}'; }}
        }}"#
    );
    let n = Nginx::start("budget", &body, &[]);
    let line = "aaaaaaaaaaaaaaaaaaaa!,".repeat(64 * 1024 / 22);
    let mut r = String::from("GET /h HTTP/1.0\r\n");
    for _ in 0..4 {
        r.push_str(&format!("x: {line}\r\n"));
    }
    r.push_str("\r\n");
    // Three times, each answered: the work is bounded by the budget's count of steps (the
    // `[warn]` below says it was spent), never by the clock; a hang fails through the
    // client's read timeout. Without the budget each of them takes seconds.
    for i in 0..3 {
        let resp = n.raw(r.as_bytes()).expect("hostile request");
        assert_eq!((resp.status, resp.body.as_str()), (200, "/t/any\n"), "request {i}");
    }
    assert_eq!(n.get("/h", &[("x", "aaaa")]).body, "/t/r0\n");
    let log = n.error_log();
    let warns: Vec<&str> =
        log.lines().filter(|l| l.contains("[warn]") && l.contains("gave up")).collect();
    assert_eq!(warns.len(), 3, "one warning per request:\n{log}");
    assert!(
        warns[0].contains("regex budget of the request (1000000 steps) was spent"),
        "{}",
        warns[0]
    );
    n.finish();
}
