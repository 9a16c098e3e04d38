//! `fake-shim --listen ADDR`: a stand-in for NGF's Go shim (`cmd/gateway/endpoint_picker.go`),
//! for benchmarks. Prints `ready ADDR` once it accepts connections. Per HTTP/1.1 request, as
//! the Go shim does: the EPP named by `X-EPP-Host` and `X-EPP-Port`, over a NEW gRPC
//! connection (dialled for the request, dropped after it); a `ProcessingRequest` with the
//! request's headers (names lowercased, `Host` left out, values in `value`), then one with the
//! whole body if there is one, then half-close; every answer read until the stream ends. A
//! 200 with `X-Gateway-Destination-Endpoint` when the headers response set it, the
//! `ImmediateResponse`'s status and body when there was one, 502 when the call failed.

use envoy_types::pb::envoy::config::core::v3::{HeaderMap, HeaderValue};
use envoy_types::pb::envoy::service::ext_proc::v3 as pb;
use epp_proto::fake::{self, RawCodec};
use pb::processing_request::Request as Req;
use pb::processing_response::Response as Resp;
use prost::Message;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Endpoint;

/// A request head's limit (Go's default `MaxHeaderBytes` is 1 MB; NGINX sends far less).
const MAX_HEAD: usize = 1 << 20;
/// A body's limit (the module's requests here are small; Go's shim reads any).
const MAX_BODY: usize = 64 << 20;

fn main() {
    let usage = "fake-shim --listen ADDR";
    let listen = match fake::flags(usage).as_slice() {
        [(flag, addr)] if flag == "--listen" => addr.clone(),
        _ => fake::usage(usage),
    };
    fake::run_ready(&listen, |listener| async move {
        while let Ok((conn, _)) = listener.accept().await {
            let _ = conn.set_nodelay(true); // as Go's net/http
            tokio::spawn(serve(conn));
        }
    });
}

/// One request as the shim reads it.
struct Request {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    close: bool,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Requests of one client connection, one after the other, until it closes or asks to.
async fn serve(conn: TcpStream) {
    let mut conn = BufReader::new(conn);
    while let Ok(Some(req)) = read_request(&mut conn).await {
        let (status, endpoint, body) = answer(&req).await;
        let mut head = format!("HTTP/1.1 {status} -\r\nContent-Length: {}\r\n", body.len());
        if let Some(endpoint) = endpoint {
            head.push_str(&format!("{}: {endpoint}\r\n", epp_proto::DESTINATION));
        }
        head.push_str(if req.close { "Connection: close\r\n\r\n" } else { "\r\n" });
        let wrote = conn.get_mut().write_all(&[head.into_bytes(), body].concat()).await;
        if wrote.is_err() || req.close {
            return;
        }
    }
}

/// The next request (head lines, a Content-Length body); None at the end of the connection.
async fn read_request(conn: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let (mut line, mut read, mut headers) = (Vec::new(), 0, Vec::new());
    let mut first = true;
    loop {
        line.clear();
        let n = conn.read_until(b'\n', &mut line).await?;
        read += n;
        if n == 0 || read > MAX_HEAD {
            return if first && n == 0 { Ok(None) } else { Err(bad("head cut or too long")) };
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if first {
            first = false;
            continue; // the request line: the shim uses no part of it
        }
        if text.is_empty() {
            break;
        }
        let (name, value) = text.split_once(':').ok_or_else(|| bad("a line without ':'"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut req = Request { headers, body: Vec::new(), close: false };
    req.close = req.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    if req.header("transfer-encoding").is_some() {
        return Err(bad("a chunked body (NGINX sends Content-Length)"));
    }
    let length: usize =
        req.header("content-length").unwrap_or("0").parse().map_err(|_| bad("length"))?;
    if length > MAX_BODY {
        return Err(bad("body too long"));
    }
    req.body.resize(length, 0);
    conn.read_exact(&mut req.body).await?;
    Ok(Some(req))
}

/// The messages the Go shim sends: the headers, then the body in one message if there is one.
fn messages(req: &Request) -> Vec<Vec<u8>> {
    let has_body = !req.body.is_empty();
    let headers = req.headers.iter().filter(|(k, _)| k != "host");
    let headers = headers.map(|(k, v)| HeaderValue {
        key: k.clone(),
        value: v.clone(),
        ..Default::default()
    });
    let first = Req::RequestHeaders(pb::HttpHeaders {
        headers: Some(HeaderMap { headers: headers.collect() }),
        end_of_stream: !has_body,
        ..Default::default()
    });
    let mut out = vec![pb::ProcessingRequest { request: Some(first), ..Default::default() }];
    if has_body {
        let body =
            pb::HttpBody { body: req.body.clone(), end_of_stream: true, ..Default::default() };
        out.push(pb::ProcessingRequest {
            request: Some(Req::RequestBody(body)),
            ..Default::default()
        });
    }
    out.iter().map(Message::encode_to_vec).collect()
}

/// (status, the destination, body) for one request: a new gRPC connection, one stream.
async fn answer(req: &Request) -> (u16, Option<String>, Vec<u8>) {
    let (Some(host), Some(port)) = (req.header("x-epp-host"), req.header("x-epp-port")) else {
        return (400, None, b"missing X-EPP-Host or X-EPP-Port\n".to_vec());
    };
    match call(&format!("http://{host}:{port}"), messages(req)).await {
        Ok(answer) => answer,
        Err(e) => (502, None, format!("{e}\n").into_bytes()),
    }
}

async fn call(
    uri: &str,
    messages: Vec<Vec<u8>>,
) -> Result<(u16, Option<String>, Vec<u8>), Box<dyn std::error::Error>> {
    // The Go shim's grpc.NewClient + conn.Close per request: a connection of this call only.
    let channel = Endpoint::from_shared(uri.to_string())?.connect().await?;
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await?;
    let path = PathAndQuery::from_static(epp_proto::GRPC_PATH);
    let outbound = tonic::Request::new(tokio_stream::iter(messages));
    let mut inbound = grpc.streaming(outbound, path, RawCodec).await?.into_inner();
    let mut endpoint = None;
    while let Some(bytes) = inbound.message().await? {
        match pb::ProcessingResponse::decode(bytes.as_slice())?.response {
            Some(Resp::ImmediateResponse(ir)) => {
                let status = ir.status.map_or(0, |s| s.code);
                return Ok((u16::try_from(status).unwrap_or(500), None, ir.body));
            }
            Some(Resp::RequestHeaders(h)) => {
                let set = h.response.and_then(|c| c.header_mutation).map(|m| m.set_headers);
                for line in set.unwrap_or_default().into_iter().filter_map(|o| o.header) {
                    if line.key == epp_proto::DESTINATION {
                        endpoint = Some(String::from_utf8_lossy(&line.raw_value).into_owned());
                    }
                }
            }
            _ => {}
        }
    }
    Ok((200, endpoint, Vec::new()))
}
