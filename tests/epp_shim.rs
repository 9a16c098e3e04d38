//! The fake EPP shim and echo backend of tests/common/epp_shim.rs, tested with raw clients (no
//! NGINX): what they record is what was sent, byte for byte, and each mode answers as it says.

mod common;

use common::epp_shim::{ENDPOINT_HEADER, Mode, Server};
use std::io::{Read, Write};
use std::net::TcpStream;

fn connect(s: &Server) -> TcpStream {
    let c = TcpStream::connect(("127.0.0.1", s.port())).expect("connect to the fake server");
    c.set_read_timeout(Some(common::patience())).expect("read timeout");
    c
}

/// Sends `req`, reads until the server closes.
fn exchange(s: &Server, req: &[u8]) -> Vec<u8> {
    let mut c = connect(s);
    c.write_all(req).expect("send");
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn records_raw_bytes_headers_in_order_and_repeats() {
    let shim = Server::shim(Mode::Endpoint("10.0.0.1:8080".into()));
    let body = b"x".repeat(1000);
    let mut req = format!(
        "POST /p?a=1 HTTP/1.1\r\nHost: h\r\nX-Rep: one\r\nx-rep:  two \r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    let answer = text(&exchange(&shim, &req));
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert!(answer.contains(&format!("{ENDPOINT_HEADER}: 10.0.0.1:8080\r\n")), "{answer}");
    let got = shim.wait_for(1);
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(r.raw, req, "raw bytes as sent");
    assert_eq!((r.method(), r.target()), ("POST", "/p?a=1"));
    assert_eq!(r.all("X-REP"), ["one", "two"]);
    let names: Vec<&str> = r.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Host", "X-Rep", "x-rep", "Content-Length", "Connection"]);
    assert_eq!((r.body.as_slice(), r.body_raw.as_slice()), (&body[..], &body[..]));
    assert!(!r.chunked && r.malformed.is_none());
}

#[test]
fn chunked_bodies_are_decoded_and_kept_raw_and_keepalive_serves_the_next() {
    let echo = Server::echo();
    let chunked = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\
        3\r\nabc\r\n5;ext=1\r\ndefgh\r\n0\r\n\r\n";
    let second = b"GET /two HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    let mut c = connect(&echo);
    // Both in one write: the second request's bytes arrive with the first's.
    c.write_all(&[&chunked[..], &second[..]].concat()).expect("send");
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    let got = echo.wait_for(2);
    assert!(got[0].chunked && got[0].malformed.is_none(), "{:?}", got[0]);
    assert_eq!(got[0].body, b"abcdefgh");
    assert_eq!(got[0].raw, chunked);
    let head_end = chunked.windows(4).position(|w| w == b"\r\n\r\n").expect("head") + 4;
    assert_eq!(got[0].body_raw, &chunked[head_end..]);
    assert_eq!(got[1].raw, second);
    // The echo answers each with the raw request as its body.
    let answers = text(&out);
    assert_eq!(answers.matches("HTTP/1.1 200 OK").count(), 2, "{answers}");
    assert!(answers.contains(&text(chunked)) && answers.ends_with(&text(second)), "{answers}");
    assert!(answers.contains("X-Echo-Request: 2\r\n"), "{answers}");
    assert_eq!(echo.connections(), 1);
}

#[test]
fn chunked_over_an_unchunked_body_with_a_length_is_recorded_and_refused() {
    // What njs 1.0.1 sends for a chunked client body (issue #32).
    let shim = Server::shim(Mode::Endpoint("e".into()));
    let req = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello";
    let answer = text(&exchange(&shim, req));
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    let r = &shim.wait_for(1)[0];
    assert!(r.malformed.is_some(), "{r:?}");
    assert_eq!((r.raw.as_slice(), r.body_raw.as_slice()), (&req[..], &b"hello"[..]));
}

#[test]
fn each_mode_answers_as_documented() {
    let get = b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    let s = Server::shim(Mode::NoEndpoint);
    let a = text(&exchange(&s, get));
    assert!(a.starts_with("HTTP/1.1 200 ") && !a.contains(ENDPOINT_HEADER), "{a}");
    s.set_mode(Mode::Status(500, "picker failed".into()));
    let a = text(&exchange(&s, get));
    assert!(a.starts_with("HTTP/1.1 500 ") && a.ends_with("\r\n\r\npicker failed"), "{a}");
    s.set_mode(Mode::Close);
    assert_eq!(exchange(&s, get), b"", "closed without a byte");
    assert_eq!(s.wait_for(3).len(), 3);
    assert_eq!(s.take().len(), 3);
    assert!(s.received().is_empty());
    assert_eq!(s.total(), 3);
}

#[test]
fn continue_is_sent_as_go_sends_it() {
    let s = Server::shim(Mode::Continue("1.2.3.4:5".into()));
    let plain = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx";
    let a = text(&exchange(&s, plain));
    assert!(a.starts_with("HTTP/1.1 200 "), "no 100 unless asked: {a}");
    let expect = b"POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\
        Connection: close\r\n\r\nx";
    let a = text(&exchange(&s, expect));
    assert!(a.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 "), "{a}");
    s.set_mode(Mode::ContinueAlways("1.2.3.4:5".into()));
    let a = text(&exchange(&s, plain));
    assert!(a.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 "), "{a}");
}

#[test]
fn held_answers_wait_for_release_and_never_answers_never() {
    let s = Server::shim(Mode::Held("9.9.9.9:1".into()));
    let mut c = connect(&s);
    c.write_all(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").expect("send");
    // Recorded before any answer: the request is in, the answer is not.
    s.wait_for(1);
    c.set_nonblocking(true).expect("nonblocking");
    let mut byte = [0u8; 1];
    assert!(c.read(&mut byte).is_err(), "a held answer came before release");
    c.set_nonblocking(false).expect("blocking");
    s.release();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    assert!(text(&out).contains("9.9.9.9:1"), "{}", text(&out));

    let never = Server::shim(Mode::Never);
    let mut c = connect(&never);
    c.write_all(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n").expect("send");
    never.wait_for(1);
    drop(never);
    // Dropping the server closes the connection, still without an answer.
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    assert_eq!(out, b"");
}

#[test]
fn down_has_nothing_listening() {
    let s = Server::shim(Mode::Down);
    assert!(TcpStream::connect(("127.0.0.1", s.port())).is_err());
    assert_eq!(s.url(), format!("http://127.0.0.1:{}", s.port()));
}
