//! The fake EPP (bin `fake-epp`, Envoy's generated types) and this crate's codec agree, over a
//! real gRPC stream driven by a plain tonic client: the request frames `encode_headers` and
//! `encode_body` write are read back by the fake as Envoy's types say, and every answer mode
//! decodes to the outcome it stands for. Run: `cargo test -p epp-proto --features fake`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use epp_proto::fake::{
    ERROR_MESSAGE, IMMEDIATE_BODY, IMMEDIATE_HEADER, IMMEDIATE_STATUS, RawCodec,
};
use epp_proto::{Decoder, FRAME_PREFIX, GRPC_PATH, MAX_BODY_CHUNK, MAX_MESSAGE, Outcome};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;

struct FakeEpp {
    child: Child,
    addr: String,
    record: std::path::PathBuf,
}

impl Drop for FakeEpp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.record);
    }
}

fn fake_epp(mode: &str) -> FakeEpp {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let name = format!("fake-epp-{}-{n}.jsonl", std::process::id());
    let record = std::env::temp_dir().join(name);
    let _ = std::fs::remove_file(&record);
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-epp"))
        .args(["--mode", mode, "--endpoint", "10.1.2.3:8000", "--record"])
        .arg(&record)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start fake-epp");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("ready ").expect("fake-epp says ready").to_string();
    FakeEpp { child, addr, record }
}

/// The messages of a frame stream (tonic frames them again).
fn messages(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let len = u32::from_be_bytes(bytes[1..5].try_into().unwrap()) as usize;
        out.push(bytes[FRAME_PREFIX..FRAME_PREFIX + len].to_vec());
        bytes = &bytes[FRAME_PREFIX + len..];
    }
    out
}

/// Sends what the codec encodes; feeds what comes back, framed as on the wire, to the decoder.
async fn call(addr: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Outcome {
    let mut frames = Vec::new();
    let lines = headers.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes()));
    epp_proto::encode_headers(lines, body.is_none(), &mut frames).unwrap();
    if let Some(body) = body {
        epp_proto::encode_body(body, true, &mut frames);
    }
    let channel = Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    let mut grpc = tonic::client::Grpc::new(channel)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    grpc.ready().await.unwrap();
    let outbound = tokio_stream::iter(messages(&frames));
    let path = PathAndQuery::from_static(GRPC_PATH);
    let mut decoder = Decoder::new(MAX_MESSAGE);
    let mut inbound = match grpc.streaming(tonic::Request::new(outbound), path, RawCodec).await {
        Ok(response) => response.into_inner(),
        Err(status) => return decoder.finish(Some((status.code() as u32, status.message()))),
    };
    loop {
        match inbound.message().await {
            Ok(Some(m)) => {
                let mut frame = vec![0];
                frame.extend_from_slice(&(m.len() as u32).to_be_bytes());
                frame.extend_from_slice(&m);
                decoder.feed(&frame);
            }
            Ok(None) => return decoder.finish(Some((0, ""))),
            Err(status) => return decoder.finish(Some((status.code() as u32, status.message()))),
        }
    }
}

/// The complete lines of the fake's record.
fn records(fake: &FakeEpp) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(&fake.record).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

const HEADERS: &[(&str, &str)] = &[
    (":authority", "gw.example"),
    (":method", "POST"),
    (":path", "/v1/completions?x=1"),
    (":scheme", "http"),
    ("Content-Type", "application/json"),
];

#[tokio::test(flavor = "current_thread")]
async fn each_mode_decodes_to_its_outcome() {
    let endpoint = Outcome::Endpoint("10.1.2.3:8000".into());
    for (mode, body) in
        [("header", None), ("header", Some(&b"{}"[..])), ("body", Some(b"{}")), ("metadata", None)]
    {
        let fake = fake_epp(mode);
        assert_eq!(call(&fake.addr, HEADERS, body).await, endpoint, "{mode} {body:?}");
    }
    let fake = fake_epp("immediate");
    let want = Outcome::Immediate {
        status: IMMEDIATE_STATUS as u16,
        headers: vec![(IMMEDIATE_HEADER.0.into(), IMMEDIATE_HEADER.1.as_bytes().to_vec())],
        body: IMMEDIATE_BODY.to_vec(),
        dropped: 0,
    };
    assert_eq!(call(&fake.addr, HEADERS, None).await, want);
    let fake = fake_epp("grpc-error");
    assert_eq!(
        call(&fake.addr, HEADERS, None).await,
        Outcome::NoEndpoint(format!("grpc-status 14: {ERROR_MESSAGE}"))
    );
    let fake = fake_epp("malformed");
    assert!(matches!(call(&fake.addr, HEADERS, None).await, Outcome::Malformed(_)));
    let fake = fake_epp("echo");
    assert_eq!(call(&fake.addr, HEADERS, Some(&[7; 20_000])).await, endpoint);
}

#[tokio::test(flavor = "current_thread")]
async fn the_fake_reads_the_codecs_request_as_envoy_types_say() {
    let fake = fake_epp("header");
    // Over one message: two body messages, none over Go's (and tonic's) 4 MiB.
    let body: Vec<u8> = (0..MAX_BODY_CHUNK + 1000).map(|i| (i % 251) as u8).collect();
    let mut headers = HEADERS.to_vec();
    headers.push(("X-Fake-Epp-Endpoint", "10.9.9.9:1,10.9.9.8:2"));
    let got = call(&fake.addr, &headers, Some(&body)).await;
    assert_eq!(got, Outcome::Endpoint("10.9.9.9:1,10.9.9.8:2".into()));
    assert_eq!(call(&fake.addr, HEADERS, None).await, Outcome::Endpoint("10.1.2.3:8000".into()));
    let records = records(&fake);
    assert_eq!(records.len(), 2);
    let first = &records[0];
    let names: Vec<&str> =
        first["headers"].as_array().unwrap().iter().map(|h| h[0].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [":authority", ":method", ":path", ":scheme", "content-type", "x-fake-epp-endpoint"]
    );
    assert_eq!(first["headers"][2][1], "/v1/completions?x=1");
    assert_eq!(first["headers_end_of_stream"], false);
    assert_eq!(first["body_messages"], 2);
    assert_eq!(first["body_bytes"], body.len());
    assert_eq!(first["body_end_of_stream"], true);
    assert!(first["largest_message"].as_u64().unwrap() <= MAX_MESSAGE as u64);
    assert_eq!(first["other"].as_array().unwrap().len(), 0);
    assert_eq!(records[1]["headers_end_of_stream"], true);
    assert_eq!(records[1]["body_messages"], 0);
    // Each call of this test opens its own channel.
    assert_eq!(records[0]["connections"], 1);
    assert_eq!(records[1]["connections"], 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_header_picks_the_mode_and_slow_never_answers_but_stays_up() {
    let fake = fake_epp("header");
    let mut headers = HEADERS.to_vec();
    headers.push(("x-fake-epp-mode", "metadata"));
    assert_eq!(call(&fake.addr, &headers, None).await, Outcome::Endpoint("10.1.2.3:8000".into()));
    // Slow: the call is dropped once the fake has recorded the request (no clock involved).
    headers.pop();
    headers.push(("x-fake-epp-mode", "slow"));
    let slow = tokio::spawn({
        let addr = fake.addr.clone();
        async move { call(&addr, &headers, None).await }
    });
    // Patience, not a deadline: a minute for what takes a millisecond.
    for _ in 0..6000 {
        if records(&fake).len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(records(&fake).len(), 2, "the fake recorded the slow request");
    assert!(!slow.is_finished());
    slow.abort();
    assert_eq!(call(&fake.addr, HEADERS, None).await, Outcome::Endpoint("10.1.2.3:8000".into()));
    assert_eq!(records(&fake)[1]["mode"], "Slow");
}
