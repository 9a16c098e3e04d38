//! `fake-shim` does per request what NGF's Go shim does (cmd/gateway/endpoint_picker.go): a new
//! gRPC connection to the EPP each time, even over one client connection; the headers with
//! names lowercased and no `Host`, the body whole in one message; the destination answered in
//! a 200, an `ImmediateResponse` as its status and body. Run: `cargo test -p epp-proto
//! --features fake --test fake_shim`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A bin started with `args` and the address of its `ready ADDR` line.
fn spawn(bin: &str, args: &[&str]) -> (Killed, String) {
    let mut child = Command::new(bin).args(args).stdout(Stdio::piped()).spawn().expect(bin);
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("ready ").expect("says ready").to_string();
    (Killed(child), addr)
}

/// One request over `conn`; the answer's head (lowercased) and body.
fn exchange(conn: &mut BufReader<TcpStream>, request: &[u8]) -> (String, Vec<u8>) {
    conn.get_mut().write_all(request).unwrap();
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        assert_ne!(conn.read_line(&mut head).unwrap(), 0, "closed after {head:?}");
    }
    let head = head.to_ascii_lowercase();
    let length = head.split("content-length: ").nth(1).and_then(|r| r.split("\r\n").next());
    let mut body = vec![0; length.unwrap().parse().unwrap()];
    conn.read_exact(&mut body).unwrap();
    (head, body)
}

#[test]
fn each_request_dials_the_epp_anew_and_answers_as_the_go_shim() {
    let record = std::env::temp_dir().join(format!("fake-shim-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&record);
    let args = ["--mode", "header", "--endpoint", "10.1.2.3:8000", "--record"];
    let args: Vec<&str> = args.into_iter().chain([record.to_str().unwrap()]).collect();
    let (_epp, epp) = spawn(env!("CARGO_BIN_EXE_fake-epp"), &args);
    let (_shim, shim) = spawn(env!("CARGO_BIN_EXE_fake-shim"), &["--listen", "127.0.0.1:0"]);
    let (host, port) = epp.rsplit_once(':').unwrap();
    let to = format!("Host: shim\r\nX-EPP-Host: {host}\r\nX-EPP-Port: {port}\r\nX-Model: m\r\n");
    let mut conn = BufReader::new(TcpStream::connect(&shim).unwrap());
    let get = format!("GET /v1 HTTP/1.1\r\n{to}\r\n");
    let post = format!("POST /v1 HTTP/1.1\r\n{to}Content-Length: 5\r\n\r\nhello");
    let shed = format!("GET /v1 HTTP/1.1\r\n{to}X-Fake-Epp-Mode: immediate\r\n\r\n");
    for request in [&get, &post] {
        let (head, body) = exchange(&mut conn, request.as_bytes());
        assert!(head.starts_with("http/1.1 200 "), "{head}");
        assert!(head.contains("\r\nx-gateway-destination-endpoint: 10.1.2.3:8000\r\n"), "{head}");
        assert!(body.is_empty());
    }
    let (head, body) = exchange(&mut conn, shed.as_bytes());
    assert!(head.starts_with("http/1.1 429 "), "{head}");
    assert_eq!(body, b"shed by the fake EPP\n");

    let text = std::fs::read_to_string(&record).unwrap();
    let _ = std::fs::remove_file(&record);
    let rows: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // One new connection to the EPP per request, though the client kept one connection.
    let connections: Vec<_> = rows.iter().map(|r| r["connections"].as_u64().unwrap()).collect();
    assert_eq!(connections, [1, 2, 3]);
    let names: Vec<&str> =
        rows[1]["headers"].as_array().unwrap().iter().map(|h| h[0].as_str().unwrap()).collect();
    assert_eq!(names, ["x-epp-host", "x-epp-port", "x-model", "content-length"]);
    assert_eq!(rows[0]["headers_end_of_stream"], true);
    assert_eq!(rows[0]["body_messages"], 0);
    assert_eq!(rows[1]["headers_end_of_stream"], false);
    assert_eq!(rows[1]["body_messages"], 1);
    assert_eq!(rows[1]["body_bytes"], 5);
    assert_eq!(rows[1]["body_end_of_stream"], true);
}
