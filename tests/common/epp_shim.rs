//! A fake NGF endpoint-picker shim (what `epp.js` and `http_matches_epp` call) and an echo
//! backend: plain threads on 127.0.0.1 ephemeral ports (std::net only), which record the raw
//! bytes of every request they receive and answer as the test's [`Mode`] says.
//!
//! ```ignore
//! let echo = Server::echo();
//! let shim = Server::shim(Mode::Endpoint(echo.endpoint()));
//! // ... NGINX with `http_matches_epp http://127.0.0.1:{shim.port()};` ...
//! let got = shim.wait_for(1);            // what the shim received
//! let seen = echo.take();                // what the backend received
//! ```
//!
//! Nothing here sleeps: [`Server::wait_for`] waits on a condition variable, up to
//! [`super::patience`]. A connection's thread parses requests one after another (keepalive),
//! HTTP/1.x with `Content-Length` or `Transfer-Encoding: chunked` bodies, and records each
//! exactly as it came off the socket.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// The response header the shim sets and the directive (and epp.js) reads.
pub const ENDPOINT_HEADER: &str = "X-Gateway-Destination-Endpoint";

/// How much of a request head the servers read before giving up on it (large-header tests send
/// tens of KiB; NGINX's own limit for a proxied request head is far below this).
pub const MAX_HEAD: usize = 1 << 20;

/// How the server answers each request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// 200 with `X-Gateway-Destination-Endpoint: VALUE` (see [`Server::endpoint`]) and the body
    /// `ok`.
    Endpoint(String),
    /// 200 with the body `no endpoint` and no endpoint header.
    NoEndpoint,
    /// STATUS with BODY (e.g. 500 and an error text).
    Status(u16, String),
    /// As `Endpoint(VALUE)`, but only once the test calls [`Server::release`] (or never, if it
    /// does not; the connection is closed when the server is dropped).
    Held(String),
    /// Reads the request and never answers; the connection stays open until the server is
    /// dropped.
    Never,
    /// Reads the request and closes the connection without a byte of answer.
    Close,
    /// What Go's net/http does for `Expect: 100-continue`: an interim `100 Continue` (only when
    /// the request asks for one), then `Endpoint(VALUE)`.
    Continue(String),
    /// `100 Continue` before every answer, asked for or not (an interim answer HTTP/1.1 allows),
    /// then `Endpoint(VALUE)`.
    ContinueAlways(String),
    /// The echo backend: 200, `Content-Type: application/octet-stream`, the body the raw bytes
    /// of the request as received (request line, headers, body), and `X-Echo-Request: N`.
    Echo,
    /// Nothing listens on the port (chosen free, then released). Only at start: [`Server::shim`].
    Down,
    /// These bytes as the whole answer (status line, headers, body), then the connection is
    /// closed: any answer a shim could send.
    Raw(Vec<u8>),
}

/// One request, as received.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Received {
    /// Everything read for this request: head and body, byte for byte.
    pub raw: Vec<u8>,
    /// The request line, without CRLF (`POST / HTTP/1.1`).
    pub request_line: String,
    /// The header lines in order, repeats kept, as (name, value) with the value's surrounding
    /// whitespace trimmed (names keep their case).
    pub headers: Vec<(String, String)>,
    /// The body as on the wire (chunked framing included).
    pub body_raw: Vec<u8>,
    /// The body decoded (chunked framing removed; same as `body_raw` otherwise).
    pub body: Vec<u8>,
    /// The request had `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// The framing was broken (e.g. `Transfer-Encoding: chunked` over a body that is not
    /// chunked, with a `Content-Length`: then `Content-Length` bytes are recorded and the
    /// server answers 400, as Go's does); what was wrong.
    pub malformed: Option<String>,
}

impl Received {
    pub fn method(&self) -> &str {
        self.request_line.split(' ').next().unwrap_or("")
    }

    /// The request target (`/path?query`).
    pub fn target(&self) -> &str {
        self.request_line.split(' ').nth(1).unwrap_or("")
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every value of header `name` (case-insensitive), in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        let named = self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name));
        named.map(|(_, v)| v.as_str()).collect()
    }
}

#[derive(Default)]
struct State {
    mode: Option<Mode>,
    received: Vec<Received>,
    /// Requests recorded since start (not reduced by `take`).
    total: usize,
    connections: usize,
    released: bool,
    stopped: bool,
    streams: Vec<TcpStream>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking connection thread must not hide what was recorded.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A fake shim or echo backend; stops (and closes every connection) when dropped.
pub struct Server {
    port: u16,
    shared: Arc<Shared>,
    listening: bool,
}

impl Server {
    /// A shim answering per `mode` (`Mode::Down`: nothing listens on [`Server::port`]).
    pub fn shim(mode: Mode) -> Server {
        Server::start(mode)
    }

    /// An echo backend ([`Mode::Echo`]).
    pub fn echo() -> Server {
        Server::start(Mode::Echo)
    }

    fn start(mode: Mode) -> Server {
        let state = State { mode: Some(mode.clone()), ..State::default() };
        let shared = Arc::new(Shared { state: Mutex::new(state), changed: Condvar::new() });
        if mode == Mode::Down {
            return Server { port: super::free_port(), shared, listening: false };
        }
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake server");
        let port = listener.local_addr().expect("bound").port();
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || accept_loop(listener, accepting));
        Server { port, shared, listening: true }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT` (the directive's URL argument).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:PORT` (the endpoint header's value that sends a request here).
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Changes how the following requests are answered (not `Mode::Down`).
    pub fn set_mode(&self, mode: Mode) {
        assert!(mode != Mode::Down, "Mode::Down only at start");
        self.shared.lock().mode = Some(mode);
    }

    /// Lets every `Mode::Held` answer go, now and from now on.
    pub fn release(&self) {
        self.shared.lock().released = true;
        self.shared.changed.notify_all();
    }

    /// The requests recorded so far (they stay recorded).
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().received.clone()
    }

    /// The requests recorded so far, removed.
    pub fn take(&self) -> Vec<Received> {
        std::mem::take(&mut self.shared.lock().received)
    }

    /// How many requests were recorded since start (`take` does not reduce it).
    pub fn total(&self) -> usize {
        self.shared.lock().total
    }

    /// How many connections were accepted since start.
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Waits until at least `n` requests are recorded (not taken), up to
    /// [`super::patience`]; returns them (they stay recorded). Panics after that.
    pub fn wait_for(&self, n: usize) -> Vec<Received> {
        assert!(self.listening, "nothing listens on a Mode::Down shim");
        let deadline = Instant::now() + super::patience();
        let mut state = self.shared.lock();
        while state.received.len() < n {
            let now = Instant::now();
            assert!(now < deadline, "waited for {n} requests, got {}", state.received.len());
            state = match self.shared.changed.wait_timeout(state, deadline - now) {
                Ok((s, _)) => s,
                Err(e) => e.into_inner().0,
            };
        }
        state.received.clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let streams = {
            let mut state = self.shared.lock();
            state.stopped = true;
            std::mem::take(&mut state.streams)
        };
        self.shared.changed.notify_all();
        for s in streams {
            let _ = s.shutdown(Shutdown::Both);
        }
        if self.listening {
            // Wakes the accept loop, which then sees `stopped`.
            let _ = TcpStream::connect(("127.0.0.1", self.port));
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        {
            let mut state = shared.lock();
            if state.stopped {
                return;
            }
            state.connections += 1;
            if let Ok(clone) = stream.try_clone() {
                state.streams.push(clone);
            }
        }
        let serving = Arc::clone(&shared);
        std::thread::spawn(move || {
            let end = stream.try_clone();
            serve(stream, serving);
            // The clone kept for `Drop` would hold the socket open: close it for real.
            if let Ok(s) = end {
                let _ = s.shutdown(Shutdown::Both);
            }
        });
    }
}

/// A connection: requests one after another until the peer closes, the framing breaks, or the
/// mode says close.
fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let got = match read_request(&mut stream, &mut buf) {
            Ok(Some(r)) => r,
            Ok(None) | Err(_) => return,
        };
        let close_asked = got.header("Connection").is_some_and(|v| v.eq_ignore_ascii_case("close"))
            || got.request_line.ends_with("HTTP/1.0");
        let expect = got.header("Expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
        let malformed = got.malformed.is_some();
        let (mode, number) = {
            let mut state = shared.lock();
            state.total += 1;
            let number = state.total;
            state.received.push(got.clone());
            (state.mode.clone().unwrap_or(Mode::Echo), number)
        };
        shared.changed.notify_all();
        if malformed {
            let _ = stream.write_all(&response(400, &[], b"malformed request body"));
            return;
        }
        let answer = match mode {
            Mode::Endpoint(v) => response(200, &[(ENDPOINT_HEADER, &v)], b"ok"),
            Mode::NoEndpoint => response(200, &[], b"no endpoint"),
            Mode::Status(code, body) => response(code, &[], body.as_bytes()),
            Mode::Held(v) => {
                if !wait_release(&shared) {
                    return;
                }
                response(200, &[(ENDPOINT_HEADER, &v)], b"ok")
            }
            Mode::Never => {
                let mut state = shared.lock();
                while !state.stopped {
                    state = shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                return;
            }
            Mode::Close => return,
            Mode::Continue(v) => continue_then(expect, &v),
            Mode::ContinueAlways(v) => continue_then(true, &v),
            Mode::Echo => {
                let n = number.to_string();
                let headers =
                    [("Content-Type", "application/octet-stream"), ("X-Echo-Request", &n)];
                response(200, &headers, &got.raw)
            }
            Mode::Down => return,
            Mode::Raw(bytes) => {
                let _ = stream.write_all(&bytes);
                return;
            }
        };
        if stream.write_all(&answer).is_err() || close_asked {
            return;
        }
    }
}

/// Waits for [`Server::release`]; false if the server stopped first.
fn wait_release(shared: &Shared) -> bool {
    let mut state = shared.lock();
    while !state.released && !state.stopped {
        state = shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    !state.stopped
}

/// An optional `100 Continue`, then 200 with the endpoint header.
fn continue_then(interim: bool, endpoint: &str) -> Vec<u8> {
    let mut out = Vec::new();
    if interim {
        out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    out.extend(response(200, &[(ENDPOINT_HEADER, endpoint)], b"ok"));
    out
}

fn response(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut out = format!("HTTP/1.1 {status} {reason}\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// Reads more bytes into `buf`; false at end of stream.
fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut chunk = [0u8; 16 * 1024];
    let n = stream.read(&mut chunk)?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n > 0)
}

/// Makes `buf` hold at least `n` bytes; false if the stream ended first.
fn fill_to(stream: &mut TcpStream, buf: &mut Vec<u8>, n: usize) -> std::io::Result<bool> {
    while buf.len() < n {
        if !fill(stream, buf)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn text_of(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(64)]).into_owned()
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

/// The next request from `stream` (`buf` holds bytes already read past the previous one);
/// None at a clean end of stream or a head that never ends.
fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<Option<Received>> {
    let head_end = loop {
        if let Some(p) = find(buf, b"\r\n\r\n", 0) {
            break p + 4;
        }
        if buf.len() > MAX_HEAD || !fill(stream, buf)? {
            return Ok(None);
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end - 4]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("").to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.to_owned(), v.trim().to_owned()))
        .collect();
    let mut got = Received { request_line, headers, ..Received::default() };
    got.chunked = got.all("Transfer-Encoding").iter().any(|v| v.eq_ignore_ascii_case("chunked"));
    let length: Option<usize> = got.header("Content-Length").and_then(|v| v.parse().ok());
    let end = if got.chunked {
        match read_chunked(stream, buf, head_end)? {
            Ok((end, body)) => {
                got.body = body;
                end
            }
            Err(why) => {
                // Record what the sender meant by its Content-Length, if it gave one.
                got.malformed = Some(why);
                let end = head_end + length.unwrap_or(0);
                fill_to(stream, buf, end)?;
                end.min(buf.len())
            }
        }
    } else {
        let end = head_end + length.unwrap_or(0);
        if !fill_to(stream, buf, end)? {
            got.malformed = Some(format!("the stream ended inside a body of {length:?} bytes"));
        }
        let end = end.min(buf.len());
        got.body = buf[head_end..end].to_vec();
        end
    };
    got.body_raw = buf[head_end..end].to_vec();
    got.raw = buf.drain(..end).collect();
    Ok(Some(got))
}

/// Parses a chunked body starting at `at`: Ok(Ok((end, decoded))), or Ok(Err(what was wrong)).
fn read_chunked(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    mut at: usize,
) -> std::io::Result<Result<(usize, Vec<u8>), String>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(p) = find(buf, b"\r\n", at) {
                break p;
            }
            // Refuse a line that cannot become a chunk size as soon as it shows, rather than
            // wait for a CRLF that an unchunked body may never send.
            let partial = &buf[at..];
            let size_part = partial.split(|&b| b == b';').next().unwrap_or(partial);
            let hex_so_far =
                size_part.iter().all(|b| b.is_ascii_hexdigit() || b" \t\r".contains(b));
            if buf.len() - at > 1024 || !hex_so_far {
                return Ok(Err(format!("bad chunk-size line {:?}", text_of(partial))));
            }
            if !fill(stream, buf)? {
                return Ok(Err("the stream ended in a chunk-size line".into()));
            }
        };
        let line = String::from_utf8_lossy(&buf[at..line_end]).into_owned();
        let hex = line.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(hex, 16) else {
            return Ok(Err(format!("bad chunk-size line {line:?}")));
        };
        if hex.is_empty() {
            return Ok(Err("empty chunk-size line".into()));
        }
        at = line_end + 2;
        if size == 0 {
            // Trailers (none expected), then the final CRLF.
            loop {
                let Some(p) = find(buf, b"\r\n", at) else {
                    if !fill(stream, buf)? {
                        return Ok(Err("the stream ended in the trailer".into()));
                    }
                    continue;
                };
                let empty = p == at;
                at = p + 2;
                if empty {
                    return Ok(Ok((at, body)));
                }
            }
        }
        if !fill_to(stream, buf, at + size + 2)? {
            return Ok(Err("the stream ended inside a chunk".into()));
        }
        body.extend_from_slice(&buf[at..at + size]);
        if &buf[at + size..at + size + 2] != b"\r\n" {
            return Ok(Err("no CRLF after a chunk".into()));
        }
        at += size + 2;
    }
}
