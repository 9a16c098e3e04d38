//! Connections to backends are reused (issue #31): a loopback backend counts the TCP
//! connections it accepts and the requests on them. Through the generated configuration (its
//! default `keepalive 16`), many client requests reach it over few connections, with no
//! `Connection: close`; with `--upstream-keepalive 0` each request is a connection of its own
//! (so the count is what it claims to be); a WebSocket upgrade still gets `Connection:
//! upgrade` and its 101, and its bytes are tunnelled both ways.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{Nginx, free_port, patience};
use httproute_nginx::emit_global::{Global, Workers};
use httproute_nginx::{BackendMap, Options};

/// What the backend saw.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    requests: AtomicUsize,
    /// The `Connection` header of each request (`-` when it had none).
    connection_headers: Mutex<Vec<String>>,
}

/// An HTTP/1.1 backend on a loopback port: answers `200 ka PATH` with a Content-Length and
/// keeps the connection open; an `Upgrade` request gets a 101 and its bytes echoed.
fn backend() -> (u16, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the backend");
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            s.connections.fetch_add(1, Ordering::SeqCst);
            let s = s.clone();
            std::thread::spawn(move || serve(conn, &s));
        }
    });
    (port, seen)
}

fn serve(mut c: TcpStream, seen: &Seen) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match c.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end + 4);
        seen.requests.fetch_add(1, Ordering::SeqCst);
        let header = |name: &str| {
            head.lines().skip(1).find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
        };
        let connection = header("connection").unwrap_or_else(|| "-".into());
        seen.connection_headers.lock().unwrap().push(connection.clone());
        let path = head.split(' ').nth(1).unwrap_or("").to_owned();
        if header("upgrade").is_some() && connection.eq_ignore_ascii_case("upgrade") {
            let _ = c.write_all(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            );
            // Echo whatever comes, until the tunnel closes.
            let _ = c.write_all(&buf);
            while let Ok(n) = c.read(&mut chunk) {
                if n == 0 || c.write_all(&chunk[..n]).is_err() {
                    return;
                }
            }
            return;
        }
        let body = format!("ka {path}\n");
        let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        if c.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn gateway(name: &str, port: u16, backend: u16, keepalive: u32) -> Nginx {
    let yaml = format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners: [{{name: http, port: {port}, protocol: HTTP}}]\n---\n\
         kind: HTTPRoute\nmetadata: {{name: ka, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /ka}}}}]\n    backendRefs: [{{name: ka, port: 80}}]\n"
    );
    let mut map = BackendMap::new();
    map.insert("default/ka:80".into(), format!("127.0.0.1:{backend}"));
    // One worker: its pool is the only one, so reuse does not depend on which worker a
    // client reaches.
    let opts = Options {
        global: Global { worker_processes: Workers::Count(1), keepalive, ..Global::default() },
        ..common::generator_options()
    };
    let (p, warnings) = common::generated(name, &yaml, port, &map, &opts);
    assert!(warnings.is_empty(), "{warnings:?}");
    let conf = std::fs::read_to_string(p.dir.join("nginx.conf")).unwrap();
    assert_eq!(conf.contains(&format!("keepalive {keepalive};")), keepalive > 0, "{conf}");
    p.start()
}

const REQUESTS: usize = 200;

/// `REQUESTS` requests, each on a client connection of its own: every one answered by the
/// backend.
fn requests(n: &Nginx) {
    for i in 0..REQUESTS {
        let r = n.get(&format!("/ka/{i}"), &[]);
        assert_eq!((r.status, r.body.as_str()), (200, format!("ka /ka/{i}\n").as_str()));
    }
}

#[test]
fn backend_connections_are_reused() {
    let (backend_port, seen) = backend();
    let n = gateway("keepalive", free_port(), backend_port, 16);
    requests(&n);
    let connections = seen.connections.load(Ordering::SeqCst);
    assert_eq!(seen.requests.load(Ordering::SeqCst), REQUESTS);
    eprintln!("keepalive 16: {REQUESTS} requests over {connections} backend connection(s)");
    // One worker, one request at a time: one connection, reused; a few more would still be
    // reuse (the backend never closes, so none is expected).
    assert!(connections <= 4, "{connections} connections for {REQUESTS} requests");
    let headers = seen.connection_headers.lock().unwrap().clone();
    assert!(headers.iter().all(|h| h == "-"), "Connection headers sent: {headers:?}");

    // A WebSocket upgrade through the same route: the backend sees Connection: upgrade, the
    // client gets the 101 and its bytes come back through the tunnel.
    let mut c = TcpStream::connect(("127.0.0.1", n.port())).unwrap();
    c.set_read_timeout(Some(patience())).unwrap();
    c.write_all(
        b"GET /ka/ws HTTP/1.1\r\nHost: gw.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let k = c.read(&mut chunk).expect("the 101");
        assert!(k > 0, "closed before the 101: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&chunk[..k]);
    }
    let head = String::from_utf8_lossy(&got).into_owned();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    c.write_all(b"ping through the tunnel").unwrap();
    let mut echo = vec![0u8; b"ping through the tunnel".len()];
    c.read_exact(&mut echo).expect("the echo");
    assert_eq!(echo, b"ping through the tunnel");
    assert_eq!(seen.connection_headers.lock().unwrap().last().unwrap(), "upgrade");
    drop(c);
    n.finish();
}

#[test]
fn without_keepalive_each_request_is_a_connection() {
    let (backend_port, seen) = backend();
    let n = gateway("no-keepalive", free_port(), backend_port, 0);
    requests(&n);
    assert_eq!(seen.requests.load(Ordering::SeqCst), REQUESTS);
    assert_eq!(seen.connections.load(Ordering::SeqCst), REQUESTS);
    n.finish();
}
