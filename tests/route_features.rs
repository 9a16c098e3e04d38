//! Gateway API features beyond matching, through a configuration written by httproute-nginx
//! and a real NGINX: WebSocket upgrades and rule timeouts, against backends the tests run.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, mpsc};

use common::{Nginx, free_port};
use httproute_nginx::{BackendMap, Options};

/// Generates from `yaml` with `backends`, checks `nginx -t`, starts (no warning expected).
fn gateway(name: &str, yaml: &str, port: u16, backends: &BackendMap) -> Nginx {
    gateway_with(name, yaml, port, backends, false)
}

fn gateway_with(
    name: &str,
    yaml: &str,
    port: u16,
    backends: &BackendMap,
    experimental: bool,
) -> Nginx {
    let opts = Options { experimental, ..common::generator_options() };
    let (p, warnings) = common::generated(name, yaml, port, backends, &opts);
    assert!(warnings.is_empty(), "{warnings:?}");
    p.start()
}

fn manifests(port: u16, rules: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: gw}}\nspec:\n  \
         gatewayClassName: nginx\n  listeners: [{{name: http, port: {port}, protocol: HTTP}}]\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: r}}\nspec:\n  \
         parentRefs: [{{name: gw}}]\n  rules:\n{rules}"
    )
}

/// Reads a request head (up to the blank line): its lines, lower-cased names.
fn read_head(r: &mut BufReader<TcpStream>) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            return lines;
        }
        lines.push(line.trim_end().to_owned());
    }
}

fn header<'a>(head: &'a [String], name: &str) -> Option<&'a str> {
    head.iter().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// A backend on a port of its own: each connection on a thread of its own, answered by
/// `answer` from its request head's lines (a reader past the head, the writer). Its port.
fn backend(
    answer: impl Fn(Vec<String>, BufReader<TcpStream>, TcpStream) + Clone + Send + 'static,
) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let head = read_head(&mut r);
                answer(head, r, conn)
            });
        }
    });
    port
}

/// A WebSocket backend: answers the upgrade with 101, then echoes each text frame it gets
/// back as "echo: TEXT". Without `Upgrade: websocket` and `Connection: upgrade` it answers 400.
fn websocket_backend() -> u16 {
    backend(|head, mut r, mut w| {
        let upgrade = header(&head, "upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
        let connection =
            header(&head, "connection").is_some_and(|v| v.to_ascii_lowercase().contains("upgrade"));
        if !(upgrade && connection) {
            let _ = w.write_all(
                        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\nConnection: close\r\n\r\nno upgrade\n",
                    );
            return;
        }
        let _ = w.write_all(
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
                );
        // Frames: FIN+text, masked payload (< 126 bytes) from the client.
        loop {
            let mut h = [0u8; 2];
            if r.read_exact(&mut h).is_err() {
                return;
            }
            let len = usize::from(h[1] & 0x7f);
            let mut mask = [0u8; 4];
            let mut data = vec![0u8; len];
            if r.read_exact(&mut mask).is_err() || r.read_exact(&mut data).is_err() {
                return;
            }
            for (i, b) in data.iter_mut().enumerate() {
                *b ^= mask[i % 4];
            }
            let reply = format!("echo: {}", String::from_utf8_lossy(&data));
            let mut frame = vec![0x81, reply.len() as u8];
            frame.extend_from_slice(reply.as_bytes());
            if w.write_all(&frame).is_err() {
                return;
            }
        }
    })
}

/// A client frame: FIN+text, masked.
fn text_frame(text: &str) -> Vec<u8> {
    let mask = [0x12, 0x34, 0x56, 0x78];
    let mut f = vec![0x81, 0x80 | text.len() as u8];
    f.extend_from_slice(&mask);
    f.extend(text.bytes().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    f
}

#[test]
fn websocket_upgrades_reach_the_backend_and_messages_flow_both_ways() {
    let (ws, port) = (websocket_backend(), free_port());
    let mut backends = BackendMap::new();
    backends.insert("default/ws:80".into(), format!("127.0.0.1:{ws}"));
    let rules = "  - matches: [{path: {type: PathPrefix, value: /chat}, headers: [{name: x-room, value: a}]}]\n    backendRefs: [{name: ws, port: 80}]\n";
    let gw = gateway("ws", &manifests(port, rules), port, &backends);

    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(common::patience())).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    w.write_all(
        b"GET /chat/room HTTP/1.1\r\nHost: any\r\nX-Room: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .unwrap();
    let head = read_head(&mut r);
    assert!(head.first().is_some_and(|l| l.starts_with("HTTP/1.1 101")), "{head:?}");
    for msg in ["hello", "second message"] {
        w.write_all(&text_frame(msg)).unwrap();
        let mut h = [0u8; 2];
        r.read_exact(&mut h).unwrap();
        assert_eq!(h[0], 0x81);
        let mut data = vec![0u8; usize::from(h[1])];
        r.read_exact(&mut data).unwrap();
        assert_eq!(String::from_utf8(data).unwrap(), format!("echo: {msg}"));
    }
    // A plain request on the same route is still a plain request (no upgrade asked for).
    let plain = gw.raw(b"GET /chat/x HTTP/1.0\r\nHost: any\r\nX-Room: a\r\n\r\n").unwrap();
    assert_eq!(plain.status, 400, "the backend says 'no upgrade'");
}

/// A backend that holds every request until `gate` opens, then answers 200 "slow"; it
/// reports each request line on `arrived` as the request comes in.
fn held_backend(gate: Arc<(Mutex<bool>, Condvar)>, arrived: mpsc::Sender<String>) -> u16 {
    backend(move |head, _, mut w| {
        let _ = arrived.send(head.first().cloned().unwrap_or_default());
        let (open, cv) = &*gate;
        let mut g = open.lock().unwrap();
        while !*g {
            g = cv.wait(g).unwrap();
        }
        drop(g);
        let _ =
            w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nslow\n");
    })
}

/// Ordered by events, not timed: the backend holds every request until the test opens its
/// gate. `/patient` (10 s) is sent first and is being held when `/hurry` (300 ms) is sent;
/// `/hurry` can only end by NGINX's timeout (504), and `/patient` is still waiting after it and
/// gets the backend's answer once the gate opens.
#[test]
fn a_backend_slower_than_the_rule_timeout_answers_504() {
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let (tx, arrived) = mpsc::channel();
    let (held, port) = (held_backend(gate.clone(), tx), free_port());
    let mut backends = BackendMap::new();
    backends.insert("default/slow:80".into(), format!("127.0.0.1:{held}"));
    let rules = "  - matches: [{path: {type: PathPrefix, value: /hurry}}]\n    backendRefs: [{name: slow, port: 80}]\n    timeouts: {request: 300ms}\n\
                 \x20 - matches: [{path: {type: PathPrefix, value: /patient}}]\n    backendRefs: [{name: slow, port: 80}]\n    timeouts: {request: 10s, backendRequest: 5s}\n";
    let gw = Arc::new(gateway("timeouts", &manifests(port, rules), port, &backends));
    let patient = {
        let gw = gw.clone();
        std::thread::spawn(move || gw.raw(b"GET /patient HTTP/1.0\r\nHost: any\r\n\r\n").unwrap())
    };
    let first = arrived.recv_timeout(common::patience()).expect("/patient reached the backend");
    assert!(first.starts_with("GET /patient "), "{first}");
    let r = gw.raw(b"GET /hurry HTTP/1.0\r\nHost: any\r\n\r\n").unwrap();
    assert_eq!(r.status, 504, "{}", r.head);
    let second = arrived.recv_timeout(common::patience()).expect("/hurry reached the backend");
    assert!(second.starts_with("GET /hurry "), "{second}");
    assert!(!patient.is_finished(), "/patient ended before the backend answered");
    {
        let (open, cv) = &*gate;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }
    let r = patient.join().expect("/patient client");
    assert_eq!((r.status, r.body.as_str()), (200, "slow\n"));
}

/// A backend that answers 200 with its name and the `x-` headers it got, sorted.
fn echo_backend(name: &'static str) -> u16 {
    backend(move |head, _, mut w| {
        let mut got: Vec<String> = head
            .into_iter()
            .filter(|l| l.to_ascii_lowercase().starts_with("x-"))
            .map(|l| l.to_ascii_lowercase())
            .collect();
        got.sort();
        let body = format!("{name} {}\n", got.join(" "));
        let _ = write!(
            w,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    })
}

#[test]
fn filters_on_a_backend_ref_apply_to_its_share_only() {
    let (a, b, port) = (echo_backend("a"), echo_backend("b"), free_port());
    let mut backends = BackendMap::new();
    backends.insert("default/a:80".into(), format!("127.0.0.1:{a}"));
    backends.insert("default/b:80".into(), format!("127.0.0.1:{b}"));
    let rules = "  - filters:\n    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-rule, value: r}, {name: x-who, value: rule}]}}\n    backendRefs:\n    - name: a\n      port: 80\n      filters:\n      - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-who, value: a}], remove: [x-drop]}}\n      - {type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: x-served-by, value: a}]}}\n    - name: b\n      port: 80\n      filters:\n      - {type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: x-extra, value: b}]}}\n";
    let gw = gateway("backend-filters", &manifests(port, rules), port, &backends);
    let (mut seen_a, mut seen_b) = (0, 0);
    for _ in 0..60 {
        let r = gw.raw(b"GET /x HTTP/1.0\r\nHost: any\r\nX-Drop: 1\r\n\r\n").unwrap();
        assert_eq!(r.status, 200, "{}", r.head);
        let served_by = r.head.lines().any(|l| l.eq_ignore_ascii_case("x-served-by: a"));
        match r.body.as_str() {
            "a x-rule: r x-who: a\n" => {
                assert!(served_by, "{}", r.head);
                seen_a += 1;
            }
            "b x-drop: 1 x-extra: b x-rule: r x-who: rule\n" => {
                assert!(!served_by, "{}", r.head);
                seen_b += 1;
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert!(seen_a > 10 && seen_b > 10, "a {seen_a}, b {seen_b} of 60 (weights 1:1)");
}

/// The response headers of `resp` named `name` (lower-cased), values in order.
fn headers_named(head: &str, name: &str) -> Vec<String> {
    head.lines()
        .filter_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
        .collect()
}

#[test]
fn cors_preflights_are_answered_at_the_gateway_and_answers_carry_the_headers() {
    let (echo, port) = (echo_backend("app"), free_port());
    let mut backends = BackendMap::new();
    backends.insert("default/app:80".into(), format!("127.0.0.1:{echo}"));
    let rules = r#"  - matches: [{path: {type: PathPrefix, value: /cors-1}}]
    filters:
    - type: CORS
      cors:
        allowOrigins: ["https://www.foo.com", "https://*.bar.com"]
        allowMethods: [GET, OPTIONS]
        allowHeaders: [x-header-1, x-header-2]
        exposeHeaders: [x-header-3, x-header-4]
        allowCredentials: true
        maxAge: 3600
    backendRefs: [{name: app, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /any-creds}}]
    filters:
    - {type: CORS, cors: {allowOrigins: ["*"], allowMethods: ["*"], allowHeaders: ["*"], allowCredentials: true}}
    backendRefs: [{name: app, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /any}}]
    filters:
    - {type: CORS, cors: {allowOrigins: ["*"], allowMethods: ["*"], allowHeaders: ["*"]}}
    backendRefs: [{name: app, port: 80}]
"#;
    let gw = gateway("cors", &manifests(port, rules), port, &backends);
    let ask = |method: &str, path: &str, headers: &[(&str, &str)]| {
        let mut req = format!("{method} {path} HTTP/1.0\r\nHost: any\r\n");
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        gw.raw(format!("{req}\r\n").as_bytes()).unwrap()
    };
    let one = |head: &str, name: &str| headers_named(head, name).join("|");
    let preflight = |path: &str, origin: &str, method: &str, headers: Option<&str>| {
        let mut h = vec![("Origin", origin), ("Access-Control-Request-Method", method)];
        h.extend(headers.map(|v| ("Access-Control-Request-Headers", v)));
        ask("OPTIONS", path, &h)
    };

    for origin in ["https://www.foo.com", "https://www.bar.com", "https://xpto.www.bar.com"] {
        let r = preflight("/cors-1", origin, "GET", Some("x-header-1, x-header-2"));
        assert_eq!(r.status, 204, "{}", r.head);
        assert_eq!(r.body, "", "a preflight never reaches the backend");
        assert_eq!(one(&r.head, "access-control-allow-origin"), origin);
        assert_eq!(one(&r.head, "access-control-allow-methods"), "GET, OPTIONS");
        assert_eq!(one(&r.head, "access-control-allow-headers"), "x-header-1, x-header-2");
        assert_eq!(one(&r.head, "access-control-expose-headers"), "x-header-3, x-header-4");
        assert_eq!(one(&r.head, "access-control-max-age"), "3600");
        assert_eq!(one(&r.head, "access-control-allow-credentials"), "true");
    }
    // Not an allowed origin (a port, another name, the bare wildcard domain): no CORS header.
    for origin in
        ["https://foobar.com", "https://www.foo.com:8443", "https://bar.com", "http://www.foo.com"]
    {
        let r = preflight("/cors-1", origin, "GET", None);
        assert!(matches!(r.status, 200 | 204 | 403), "{}", r.head);
        assert!(!r.head.to_ascii_lowercase().contains("access-control-"), "{origin}: {}", r.head);
    }
    // Actual requests reach the backend and carry the headers when the origin is allowed.
    let r = ask("GET", "/cors-1/x", &[("Origin", "https://www.bar.com")]);
    assert_eq!((r.status, r.body.as_str()), (200, "app \n"));
    assert_eq!(one(&r.head, "access-control-allow-origin"), "https://www.bar.com");
    assert_eq!(one(&r.head, "access-control-allow-credentials"), "true");
    assert_eq!(one(&r.head, "access-control-expose-headers"), "x-header-3, x-header-4");
    assert!(headers_named(&r.head, "access-control-allow-methods").is_empty(), "{}", r.head);
    let r = ask("GET", "/cors-1/x", &[("Origin", "https://foobar.com")]);
    assert_eq!(r.status, 200);
    assert!(!r.head.to_ascii_lowercase().contains("access-control-"), "{}", r.head);

    // "*" with credentials: the request's own origin, method and headers are echoed.
    let r = preflight(
        "/any-creds",
        "https://other.foo.com:12345",
        "PUT",
        Some("x-header-1, x-header-2"),
    );
    assert_eq!(r.status, 204);
    assert_eq!(one(&r.head, "access-control-allow-origin"), "https://other.foo.com:12345");
    assert_eq!(one(&r.head, "access-control-allow-methods"), "PUT");
    assert_eq!(one(&r.head, "access-control-allow-headers"), "x-header-1, x-header-2");
    assert_eq!(one(&r.head, "access-control-allow-credentials"), "true");
    assert_eq!(one(&r.head, "access-control-max-age"), "5");
    // Without credentials, "*" may stay "*", and no Allow-Credentials.
    let r = preflight("/any", "https://other.foo.com", "PUT", Some("x-header-1"));
    assert_eq!(r.status, 204);
    assert_eq!(one(&r.head, "access-control-allow-origin"), "https://other.foo.com");
    assert_eq!(one(&r.head, "access-control-allow-methods"), "*");
    assert_eq!(one(&r.head, "access-control-allow-headers"), "*");
    assert!(headers_named(&r.head, "access-control-allow-credentials").is_empty());
    // A plain OPTIONS (no Access-Control-Request-Method) is not a preflight: it is proxied.
    let r = ask("OPTIONS", "/any", &[("Origin", "https://other.foo.com")]);
    assert_eq!((r.status, r.body.as_str()), (200, "app \n"));
}

/// A backend whose every other answer is 503 (the first, third, ... request it gets).
fn flaky_backend() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let mut w = conn;
            read_head(&mut r);
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let answer: &[u8] = if n % 2 == 0 {
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"
            };
            let _ = w.write_all(answer);
        }
    });
    (port, seen)
}

#[test]
fn retry_resends_a_503_to_the_backend_under_experimental_only() {
    use std::sync::atomic::Ordering;
    let rules =
        "  - backendRefs: [{name: flaky, port: 80}]\n    retry: {codes: [503], attempts: 2}\n";
    // With --experimental: the 503 is retried (the same endpoint: it is listed once per try).
    let ((flaky, seen), port) = (flaky_backend(), free_port());
    let mut backends = BackendMap::new();
    backends.insert("default/flaky:80".into(), format!("127.0.0.1:{flaky}"));
    let gw = gateway_with("retry", &manifests(port, rules), port, &backends, true);
    // Ten in a row: a retried 503 must not take the only endpoint out for fail_timeout.
    for i in 0..10 {
        let r = gw.raw(b"GET / HTTP/1.0\r\nHost: any\r\n\r\n").unwrap();
        assert_eq!((r.status, r.body.as_str()), (200, "ok\n"), "request {i}\n{}", gw.error_log());
    }
    assert_eq!(seen.load(Ordering::SeqCst), 20, "each request: a 503, then a 200");
    drop(gw);

    // Without it: the field is warned about and left out.
    let (_, warnings) = common::generated(
        "retry-off",
        &manifests(port, rules),
        port,
        &backends,
        &common::generator_options(),
    );
    assert_eq!(
        warnings,
        ["default/r rule 0: retry is an Experimental field; generated only with --experimental"]
    );
}
