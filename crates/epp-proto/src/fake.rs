//! A fake EPP for tests (feature `fake`): a gRPC server of `ExternalProcessor/Process` that reads
//! the request stream with the types generated from Envoy's .proto files (envoy-types), records
//! what it received, and answers as its mode says. Messages cross tonic as raw bytes
//! ([`RawCodec`]), so that a mode can send a frame that is not a `ProcessingResponse`.

use std::convert::Infallible;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Buf, BufMut};
use envoy_types::pb::envoy::config::core::v3::{HeaderValue, HeaderValueOption};
use envoy_types::pb::envoy::service::ext_proc::v3 as pb;
use envoy_types::pb::envoy::r#type::v3::HttpStatus;
use envoy_types::pb::google::protobuf::{Struct, Value, value::Kind};
use pb::processing_request::Request as Req;
use pb::processing_response::Response as Resp;
use prost::Message;
use tokio::sync::mpsc;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::{BoxFuture, Service, http};
use tonic::server::NamedService;
use tonic::{Status, Streaming};

/// The bins' command line (`fake-epp`, `fake-shim`): `--flag value` pairs; an odd count prints
/// `usage` and exits 2 (as [`usage`]).
pub fn flags(usage_line: &str) -> Vec<(String, String)> {
    let mut args = std::env::args().skip(1);
    let mut out = Vec::new();
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage(usage_line));
        out.push((flag, value));
    }
    out
}

/// `usage: LINE` on stderr, exit 2.
pub fn usage(line: &str) -> ! {
    eprintln!("usage: {line}");
    std::process::exit(2)
}

/// The bins' `main`: a 2-thread runtime, a listener bound to `listen`, `ready ADDR` printed
/// once it accepts connections (what the tests and scripts wait for), then `serve` on it.
pub fn run_ready<F: std::future::Future<Output = ()>>(
    listen: &str,
    serve: impl FnOnce(tokio::net::TcpListener) -> F,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await.expect("bind --listen");
        println!("ready {}", listener.local_addr().expect("the bound address"));
        let _ = std::io::stdout().flush();
        serve(listener).await
    });
}

/// gRPC messages as their bytes, both ways.
#[derive(Clone, Copy, Debug, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;
    fn encoder(&mut self) -> Self {
        RawCodec
    }
    fn decoder(&mut self) -> Self {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let n = src.remaining();
        Ok(Some(src.copy_to_bytes(n).to_vec()))
    }
}

/// How the fake answers; a request's `x-fake-epp-mode` header overrides the default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The destination in the request headers response's header mutation.
    Header,
    /// An empty headers response, the destination in a request body response.
    Body,
    /// The destination only in `dynamic_metadata["envoy.lb"]`.
    Metadata,
    /// `ImmediateResponse` 429 with a header and a body.
    Immediate,
    /// The stream ends with grpc-status 14 (UNAVAILABLE).
    GrpcError,
    /// A frame whose bytes are not a `ProcessingResponse`.
    Malformed,
    /// Reads the request and never answers (until the client goes away).
    Slow,
    /// `Immediate` with lines that would reframe or split the answer (`content-length: 0`,
    /// `transfer-encoding: chunked`, a value with CR LF and a line after it).
    ImmediateFraming,
    /// As GIE's EPP: the destination in the headers response, then the request body echoed
    /// back in body responses' streamed body mutations of [`ECHO_CHUNK`] bytes (GIE's
    /// `bodyByteLimit`), the last with `end_of_stream`.
    Echo,
    /// `Immediate` with a body of [`BIG_IMMEDIATE_BODY`] bytes (the byte at `i` is `i % 251`).
    ImmediateBig,
    /// `Immediate` with [`MANY_IMMEDIATE_LINES`] more header lines `x-many-N: N`.
    ImmediateMany,
    /// The destination in the headers response, then body responses of 64 KB without end
    /// (until the client goes away): a broken EPP.
    Flood,
}

/// The largest body chunk the echo mode sends in one message, as GIE's EPP.
pub const ECHO_CHUNK: usize = 62_000;

/// The extra header lines of the `immediate-many` mode.
pub const MANY_IMMEDIATE_LINES: usize = 1000;

/// The body length of the `immediate-big` mode.
pub const BIG_IMMEDIATE_BODY: usize = 64 << 10;

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "header" => Mode::Header,
            "body" => Mode::Body,
            "metadata" => Mode::Metadata,
            "immediate" => Mode::Immediate,
            "grpc-error" => Mode::GrpcError,
            "malformed" => Mode::Malformed,
            "slow" => Mode::Slow,
            "echo" => Mode::Echo,
            "immediate-framing" => Mode::ImmediateFraming,
            "immediate-big" => Mode::ImmediateBig,
            "immediate-many" => Mode::ImmediateMany,
            "flood" => Mode::Flood,
            _ => return None,
        })
    }
}

/// The fake's settings.
#[derive(Debug)]
pub struct Config {
    pub mode: Mode,
    /// The destination answered (a request's `x-fake-epp-endpoint` header overrides it).
    pub endpoint: String,
    /// Where each stream's record goes, one JSON line per stream.
    pub record: Option<PathBuf>,
}

/// The body of the immediate response, and its status and header.
pub const IMMEDIATE_BODY: &[u8] = b"shed by the fake EPP\n";
pub const IMMEDIATE_STATUS: u32 = 429;
pub const IMMEDIATE_HEADER: (&str, &str) = ("x-fake-epp", "shed");
/// The grpc-message of the error mode (status 14).
pub const ERROR_MESSAGE: &str = "fake EPP: no capacity";

/// The `ExternalProcessor` service for `tonic::transport::Server::add_service`.
#[derive(Clone, Debug)]
pub struct Fake {
    config: Arc<Config>,
    record: Arc<Mutex<()>>,
    connections: Arc<AtomicUsize>,
}

impl Fake {
    pub fn new(config: Config) -> Self {
        let (record, connections) = (Arc::new(Mutex::new(())), Arc::new(AtomicUsize::new(0)));
        Fake { config: Arc::new(config), record, connections }
    }

    /// The count of connections accepted, which the server's accept loop increments; each
    /// record carries its value then (so a test counts connection reuse).
    pub fn connections(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.connections)
    }
}

impl NamedService for Fake {
    const NAME: &'static str = "envoy.service.ext_proc.v3.ExternalProcessor";
}

impl<B> Service<http::Request<B>> for Fake
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let fake = self.clone();
        Box::pin(async move {
            if req.uri().path() != crate::GRPC_PATH {
                return Ok(Status::unimplemented(req.uri().path().to_string()).into_http());
            }
            Ok(tonic::server::Grpc::new(RawCodec).streaming(Handler(fake), req).await)
        })
    }
}

type Replies = tokio_stream::wrappers::ReceiverStream<Result<Vec<u8>, Status>>;

/// The stream handler as a `StreamingService`.
#[derive(Clone)]
struct Handler(Fake);

impl Service<tonic::Request<Streaming<Vec<u8>>>> for Handler {
    type Response = tonic::Response<Replies>;
    type Error = Status;
    type Future = BoxFuture<Self::Response, Status>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: tonic::Request<Streaming<Vec<u8>>>) -> Self::Future {
        let fake = self.0.clone();
        Box::pin(async move {
            let (tx, rx) = mpsc::channel(16);
            tokio::spawn(fake.process(req.into_inner(), tx));
            Ok(tonic::Response::new(Replies::new(rx)))
        })
    }
}

/// What one stream carried.
#[derive(Default)]
struct Received {
    headers: Vec<(String, String)>,
    headers_end_of_stream: bool,
    body_messages: usize,
    body: Vec<u8>,
    body_end_of_stream: bool,
    largest_message: usize,
    other: Vec<String>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn ended(&self) -> bool {
        self.headers_end_of_stream || self.body_end_of_stream
    }

    fn take(&mut self, bytes: &[u8]) {
        self.largest_message = self.largest_message.max(bytes.len());
        match pb::ProcessingRequest::decode(bytes).map(|r| r.request) {
            Ok(Some(Req::RequestHeaders(h))) => {
                self.headers_end_of_stream = h.end_of_stream;
                for v in h.headers.map(|m| m.headers).unwrap_or_default() {
                    let value =
                        if v.raw_value.is_empty() { v.value.into_bytes() } else { v.raw_value };
                    self.headers.push((v.key, String::from_utf8_lossy(&value).into_owned()));
                }
            }
            Ok(Some(Req::RequestBody(b))) => {
                self.body_messages += 1;
                self.body.extend_from_slice(&b.body);
                self.body_end_of_stream = b.end_of_stream;
            }
            Ok(other) => self.other.push(format!("{other:?}")),
            Err(e) => self.other.push(format!("undecodable: {e}")),
        }
    }

    fn json(&self, mode: Mode) -> serde_json::Value {
        // FNV-1a: enough to tell bodies apart in a test.
        let fnv = self.body.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
        });
        serde_json::json!({
            "mode": format!("{mode:?}"),
            "headers": self.headers,
            "headers_end_of_stream": self.headers_end_of_stream,
            "body_messages": self.body_messages,
            "body_bytes": self.body.len(),
            "body_fnv": format!("{fnv:016x}"),
            "body_end_of_stream": self.body_end_of_stream,
            "largest_message": self.largest_message,
            "other": self.other,
        })
    }
}

impl Fake {
    async fn process(
        self,
        mut inbound: Streaming<Vec<u8>>,
        tx: mpsc::Sender<Result<Vec<u8>, Status>>,
    ) {
        let mut got = Received::default();
        while !got.ended() {
            match inbound.message().await {
                Ok(Some(bytes)) => got.take(&bytes),
                _ => break,
            }
        }
        let mode = got.header("x-fake-epp-mode").and_then(Mode::parse).unwrap_or(self.config.mode);
        let endpoint =
            got.header("x-fake-epp-endpoint").unwrap_or(&self.config.endpoint).to_string();
        let mut record = got.json(mode);
        record["connections"] = self.connections.load(Ordering::Relaxed).into();
        self.write_record(&record);
        for reply in replies(mode, &endpoint, &got) {
            if tx.send(reply).await.is_err() {
                return;
            }
        }
        if mode == Mode::Flood {
            let chunk: Vec<u8> = (0..64 << 10).map(|i| (i % 251) as u8).collect();
            while tx.send(echo(&chunk)).await.is_ok() {}
            return;
        }
        if mode == Mode::Slow {
            tx.closed().await;
            return;
        }
        // As the EPP does: the stream ends (OK) when the client half-closes its side.
        while let Ok(Some(_)) = inbound.message().await {}
    }

    fn write_record(&self, line: &serde_json::Value) {
        let Some(path) = &self.config.record else { return };
        let _guard = self.record.lock().unwrap_or_else(|e| e.into_inner());
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
        if let Ok(mut file) = file {
            // One write of the whole line: a reader never sees half a record.
            let _ = file.write_all(format!("{line}\n").as_bytes());
        }
    }
}

fn destination(endpoint: &str) -> pb::HeaderMutation {
    pb::HeaderMutation {
        set_headers: vec![HeaderValueOption {
            header: Some(HeaderValue {
                key: crate::DESTINATION.into(),
                raw_value: endpoint.as_bytes().to_vec(),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn common(mutation: Option<pb::HeaderMutation>) -> pb::CommonResponse {
    pb::CommonResponse { header_mutation: mutation, ..Default::default() }
}

fn message(response: Resp, metadata: Option<Struct>) -> Result<Vec<u8>, Status> {
    Ok(pb::ProcessingResponse {
        response: Some(response),
        dynamic_metadata: metadata,
        ..Default::default()
    }
    .encode_to_vec())
}

fn headers_reply(
    mutation: Option<pb::HeaderMutation>,
    metadata: Option<Struct>,
) -> Result<Vec<u8>, Status> {
    let r = pb::HeadersResponse { response: Some(common(mutation)) };
    message(Resp::RequestHeaders(r), metadata)
}

fn body_reply(mutation: Option<pb::HeaderMutation>) -> Result<Vec<u8>, Status> {
    let r = pb::BodyResponse { response: Some(common(mutation)) };
    message(Resp::RequestBody(r), None)
}

fn echo(body: &[u8]) -> Result<Vec<u8>, Status> {
    echo_chunk(body, false)
}

fn echo_chunk(body: &[u8], end_of_stream: bool) -> Result<Vec<u8>, Status> {
    let streamed =
        pb::StreamedBodyResponse { body: body.into(), end_of_stream, ..Default::default() };
    let mutation = pb::BodyMutation {
        mutation: Some(pb::body_mutation::Mutation::StreamedResponse(streamed)),
    };
    let r = pb::BodyResponse {
        response: Some(pb::CommonResponse { body_mutation: Some(mutation), ..Default::default() }),
    };
    message(Resp::RequestBody(r), None)
}

fn lb_metadata(endpoint: &str) -> Struct {
    let string = Value { kind: Some(Kind::StringValue(endpoint.into())) };
    let inner = Struct { fields: [(crate::DESTINATION.to_string(), string)].into() };
    let lb = Value { kind: Some(Kind::StructValue(inner)) };
    Struct { fields: [(crate::METADATA_NAMESPACE.to_string(), lb)].into() }
}

fn immediate(more: &[(&str, &str)], body: Vec<u8>) -> Result<Vec<u8>, Status> {
    let line = |(name, value): (&str, &str)| HeaderValueOption {
        header: Some(HeaderValue {
            key: name.into(),
            raw_value: value.as_bytes().to_vec(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut headers = destination("");
    headers.set_headers = [IMMEDIATE_HEADER].iter().chain(more).map(|l| line(*l)).collect();
    let r = pb::ImmediateResponse {
        status: Some(HttpStatus { code: IMMEDIATE_STATUS as i32 }),
        headers: Some(headers),
        body,
        ..Default::default()
    };
    message(Resp::ImmediateResponse(r), None)
}

/// The messages (or the error) a mode answers with, once the request has been read.
fn replies(mode: Mode, endpoint: &str, got: &Received) -> Vec<Result<Vec<u8>, Status>> {
    let no_body = got.headers_end_of_stream;
    match mode {
        Mode::Echo => {
            let n = got.body.len().div_ceil(ECHO_CHUNK).max(1);
            let chunks = (0..n).map(|i| {
                let end = ((i + 1) * ECHO_CHUNK).min(got.body.len());
                echo_chunk(&got.body[(i * ECHO_CHUNK).min(end)..end], i + 1 == n)
            });
            std::iter::once(headers_reply(Some(destination(endpoint)), None))
                .chain(chunks)
                .collect()
        }
        Mode::Header if no_body => vec![headers_reply(Some(destination(endpoint)), None)],
        Mode::Header => vec![headers_reply(Some(destination(endpoint)), None), body_reply(None)],
        Mode::Body => vec![headers_reply(None, None), body_reply(Some(destination(endpoint)))],
        Mode::Metadata => vec![headers_reply(None, Some(lb_metadata(endpoint)))],
        Mode::Immediate => vec![immediate(&[], IMMEDIATE_BODY.to_vec())],
        Mode::ImmediateBig => {
            vec![immediate(&[], (0..BIG_IMMEDIATE_BODY).map(|i| (i % 251) as u8).collect())]
        }
        Mode::ImmediateMany => {
            let lines: Vec<(String, String)> =
                (0..MANY_IMMEDIATE_LINES).map(|i| (format!("x-many-{i}"), i.to_string())).collect();
            let lines: Vec<(&str, &str)> =
                lines.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            vec![immediate(&lines, IMMEDIATE_BODY.to_vec())]
        }
        Mode::ImmediateFraming => vec![immediate(
            &[
                ("content-length", "0"),
                ("transfer-encoding", "chunked"),
                ("x-split", "a\r\nx-injected: 1"),
            ],
            IMMEDIATE_BODY.to_vec(),
        )],
        Mode::Flood => vec![headers_reply(Some(destination(endpoint)), None)],
        Mode::GrpcError => vec![Err(Status::unavailable(ERROR_MESSAGE))],
        // Field 1 (a message) claiming 127 bytes that are not there.
        Mode::Malformed => vec![Ok(vec![0x0a, 0x7f, 0x01])],
        Mode::Slow => vec![],
    }
}
