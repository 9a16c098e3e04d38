//! Issue #47, first step: NGINX's own gRPC proxy (`grpc_pass` to an `upstream` with
//! `keepalive`, no module code in the path) carries the Endpoint Picker stream. The request is
//! `epp_proto`'s frames posted by curl over h2c; the answer body and `grpc-status` /
//! `grpc-message` go through `epp_proto::Decoder`; the EPP is `fake-epp` (envoy-types), each
//! mode chosen by a request header. Needs `FAKE_EPP_BIN` (or `target/release/fake-epp`:
//! `cargo build --release -p epp-proto --features fake --bin fake-epp`).

mod common;

use std::process::Command;

use common::Nginx;
use common::fake_epp::Fake;
use epp_proto::{MAX_BODY_CHUNK, MAX_MESSAGE, Outcome};

/// Posts the request stream for `headers` (+ `body`) to NGINX; decodes what comes back.
fn call(
    n: &Nginx,
    port: u16,
    name: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Outcome {
    let mut frames = Vec::new();
    let lines = headers.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes()));
    epp_proto::encode_headers(lines, body.is_none(), &mut frames).unwrap();
    if let Some(body) = body {
        epp_proto::encode_body(body, true, &mut frames);
    }
    let tmp = n.prefix.dir.join("tmp");
    let (req, head, out) = (
        tmp.join(format!("{name}.req")),
        tmp.join(format!("{name}.head")),
        tmp.join(format!("{name}.out")),
    );
    std::fs::write(&req, &frames).unwrap();
    let url = format!("http://127.0.0.1:{port}{}", epp_proto::GRPC_PATH);
    let _ = Command::new("curl")
        .args([
            "-s",
            "--http2-prior-knowledge",
            "-H",
            "content-type: application/grpc",
            "-H",
            "te: trailers",
        ])
        .arg("--data-binary")
        .arg(format!("@{}", req.display()))
        .arg("-D")
        .arg(&head)
        .arg("-o")
        .arg(&out)
        .arg(&url)
        .status()
        .expect("run curl");
    let head = std::fs::read_to_string(&head).unwrap_or_default();
    // grpc-status and grpc-message, from the trailers (or the headers of a trailers-only answer).
    let field = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    let status = field("grpc-status").and_then(|s| s.parse().ok());
    let message = epp_proto::grpc_message(field("grpc-message").unwrap_or_default().as_bytes());
    let answer = std::fs::read(&out).unwrap_or_default();
    epp_proto::decode(&answer, MAX_MESSAGE, status.map(|s| (s, message.as_str())))
}

#[test]
fn nginx_grpc_pass_carries_the_endpoint_picker_stream() {
    let fake = Fake::start("epp-grpc-proxy", "10.1.2.3:8000");
    // A second port gives up after 1 s, for the EPP that never answers; the first waits the
    // default 60 s, so that no answer depends on the machine's speed.
    let impatient = common::free_port();
    // `http2 on` from NGINX 1.25.1; before, a `listen` parameter (Debian 12's 1.22).
    let (h2, on) =
        if common::nginx_version() >= (1, 25, 1) { ("", "http2 on;") } else { (" http2", "") };
    let conf = format!(
        "upstream epp {{ server {}; keepalive 4; }}
        server {{
            listen 127.0.0.1:{{PORT}}{h2};
            {on}
            client_max_body_size 16m;
            location / {{ grpc_pass grpc://epp; }}
        }}
        server {{
            listen 127.0.0.1:{impatient}{h2};
            {on}
            location / {{ grpc_pass grpc://epp; grpc_read_timeout 1s; }}
        }}",
        fake.addr
    );
    let n = Nginx::start("epp-grpc-proxy", &conf, &[]);
    let port = n.port();
    let with = |mode: &'static str| {
        vec![(":method", "POST"), (":path", "/v1/completions"), ("x-fake-epp-mode", mode)]
    };
    let endpoint = Outcome::Endpoint("10.1.2.3:8000".into());
    assert_eq!(call(&n, port, "header", &with("header"), None), endpoint);
    assert_eq!(call(&n, port, "metadata", &with("metadata"), None), endpoint);
    // Over one message: two body messages, none over 4 MiB, all of it at the fake.
    let body: Vec<u8> = (0..MAX_BODY_CHUNK + 4096).map(|i| (i % 253) as u8).collect();
    assert_eq!(call(&n, port, "body", &with("body"), Some(&body)), endpoint);
    let want = Outcome::Immediate {
        status: 429,
        headers: vec![("x-fake-epp".into(), b"shed".to_vec())],
        body: b"shed by the fake EPP\n".to_vec(),
        dropped: 0,
    };
    assert_eq!(call(&n, port, "immediate", &with("immediate"), None), want);
    assert_eq!(
        call(&n, port, "error", &with("grpc-error"), None),
        Outcome::NoEndpoint("grpc-status 14: fake EPP: no capacity".into())
    );
    assert!(matches!(call(&n, port, "malformed", &with("malformed"), None), Outcome::Malformed(_)));
    // Slow: NGINX gives up at grpc_read_timeout and cuts the stream (no body, no status).
    let cut = Outcome::NoEndpoint("the stream ended with no grpc-status".into());
    assert_eq!(call(&n, impatient, "slow", &with("slow"), None), cut);
    n.wait_log("upstream timed out", 1);
    let records = fake.records();
    let modes: Vec<&str> = records.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(
        modes,
        ["Header", "Metadata", "Body", "Immediate", "GrpcError", "Malformed", "Slow"]
    );
    // keepalive: the six answered calls went over one connection to the EPP (six without it).
    assert_eq!(records[5]["connections"], 1, "{records:?}");
    let big = &records[2];
    assert_eq!(big["body_messages"], 2);
    assert_eq!(big["body_bytes"], body.len());
    assert_eq!(big["body_end_of_stream"], true);
    assert!(big["largest_message"].as_u64().unwrap() <= MAX_MESSAGE as u64);
    n.finish();
}
