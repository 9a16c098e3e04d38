//! `http_matches_epp_endpoints;` end to end (issue #47 item 2): an `upstream` block whose peers
//! are the request's tries in the EndpointPicker's order, its own `server` lines the allowed
//! set. A real NGINX, the fake EPP (grpc://, the list per request in `x-fake-epp-endpoint`)
//! and the fake shim (http://), echo backends recording who answered. Nothing sleeps and
//! nothing is timed. Needs `FAKE_EPP_BIN` or `target/release/fake-epp`.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use common::epp_shim::{Mode, Server};
use common::fake_epp::Fake;
use common::{Nginx, Resp};

/// `/keep`: a gRPC call to `fake`, then the request to `upstream` over a kept-alive connection.
fn keep(fake: &str, upstream: &str) -> String {
    format!(
        r#"location /keep {{
            set $epp_internal_path /_keep;
            http_matches_epp grpc://{fake};
        }}
        location /_keep {{
            internal;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://{upstream};
        }}"#
    )
}

/// The pool `a`, `b` and `dead` (nothing listens), behind both modes.
fn conf(fake: &Fake, shim: &Server, a: &Server, b: &Server, dead: u16) -> String {
    format!(
        r#"
    large_client_header_buffers 4 64k;
    upstream pool {{
        http_matches_epp_endpoints;
        server {a};
        server {b};
        server 127.0.0.1:{dead};
        keepalive 2;
    }}
    server {{
        listen 127.0.0.1:{{PORT}};
        location /grpc {{
            set $epp_internal_path /_internal;
            http_matches_epp grpc://{fake};
        }}
        location /shim {{
            set $epp_internal_path /_internal;
            set $epp_host epp.default.svc;
            set $epp_port 9002;
            proxy_buffer_size 64k;
            proxy_buffers 4 64k;
            http_matches_epp {shim};
        }}
        location /first {{
            set $epp_internal_path /_first;
            http_matches_epp grpc://{fake};
        }}
        location /_internal {{
            internal;
            proxy_next_upstream error;
            proxy_pass http://pool;
        }}
        {keep}
        location /_first {{
            internal;
            proxy_pass http://$inference_workload_endpoint;
        }}
    }}
"#,
        fake = fake.addr,
        keep = keep(&fake.addr, "pool"),
        shim = shim.url(),
        a = a.endpoint(),
        b = b.endpoint(),
    )
}

struct Setup {
    n: Nginx,
    shim: Server,
    a: Server,
    b: Server,
    dead: u16,
    _fake: Fake,
}

fn setup(name: &str) -> Setup {
    let (a, b) = (Server::echo(), Server::echo());
    let shim = Server::shim(Mode::NoEndpoint);
    let fake = Fake::start(name, &a.endpoint());
    let dead = common::DEAD_PORT;
    let n = Nginx::start(name, &conf(&fake, &shim, &a, &b, dead), &[]);
    Setup { n, shim, a, b, dead, _fake: fake }
}

/// A GET through the grpc:// location, the EPP answering `list`.
fn grpc(s: &Setup, list: &str) -> Resp {
    s.n.get("/grpc", &[("X-Fake-Epp-Endpoint", list)])
}

/// Who answered: (a's, b's) requests since the last call.
fn who(s: &Setup) -> (usize, usize) {
    (s.a.take().len(), s.b.take().len())
}

fn errors(log: &str, needle: &str) -> usize {
    lines(log, "[error]", needle)
}

fn lines(log: &str, level: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(level) && l.contains(needle)).count()
}

#[test]
fn a_dead_first_endpoint_falls_to_the_next_in_the_epps_order_in_both_modes() {
    let s = setup("epp-endpoints-next");
    let dead = format!("127.0.0.1:{}", s.dead);
    // grpc://: dead first, then b (round robin would have started with a).
    let r = grpc(&s, &format!("{dead}, {}", s.b.endpoint()));
    assert_eq!(r.status, 200, "{r:?}\n{}", s.n.error_log());
    assert_eq!(who(&s), (0, 1));
    // The order is the EPP's: b then a goes to b, a then b to a.
    let r = grpc(&s, &format!("{},{}", s.b.endpoint(), s.a.endpoint()));
    assert_eq!((r.status, who(&s)), (200, (0, 1)));
    let r = grpc(&s, &format!("{},{}", s.a.endpoint(), s.b.endpoint()));
    assert_eq!((r.status, who(&s)), (200, (1, 0)));
    // http:// (the shim): the same list in X-Gateway-Destination-Endpoint.
    s.shim.set_mode(Mode::Endpoint(format!("{dead},{}", s.b.endpoint())));
    let r = s.n.get("/shim", &[]);
    assert_eq!(r.status, 200, "{r:?}\n{}", s.n.error_log());
    assert_eq!(who(&s), (0, 1));
    // Every listed endpoint fails: 502, the block's other servers are not tried.
    let r = grpc(&s, &dead);
    assert_eq!((r.status, who(&s)), (502, (0, 0)), "{r:?}");
    // `proxy_pass http://$inference_workload_endpoint` keeps taking the first one only.
    let r = s.n.get("/first", &[("X-Fake-Epp-Endpoint", &format!("{},{dead}", s.b.endpoint()))]);
    assert_eq!((r.status, who(&s)), (200, (0, 1)));
    assert_eq!(errors(&s.n.error_log(), "http_matches_epp_endpoints"), 0, "{}", s.n.error_log());
}

/// The block's `keepalive` keeps working over the list's tries: three requests to b over one
/// connection.
#[test]
fn keepalive_reuses_the_connection_to_a_listed_endpoint() {
    let s = setup("epp-endpoints-keep");
    for _ in 0..3 {
        let r = s.n.get("/keep", &[("X-Fake-Epp-Endpoint", &s.b.endpoint())]);
        assert_eq!((r.status, who(&s)), (200, (0, 1)), "{r:?}");
    }
    assert_eq!((s.a.connections(), s.b.connections()), (0, 1));
}

/// A backend that answers the first request of each connection (`Connection: keep-alive`)
/// and closes the connection unanswered at its second: to NGINX, a cached connection the
/// server closed while the request was on its way. Its port and (connections, answers).
fn one_answer_per_connection() -> (u16, Arc<Mutex<(usize, usize)>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let counts = Arc::new(Mutex::new((0, 0)));
    let seen = Arc::clone(&counts);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let seen = Arc::clone(&seen);
            seen.lock().unwrap().0 += 1;
            std::thread::spawn(move || {
                let (mut buf, mut heads) = (Vec::new(), 0);
                let mut chunk = [0u8; 4096];
                while let Ok(k @ 1..) = stream.read(&mut chunk) {
                    buf.extend_from_slice(&chunk[..k]);
                    if !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        continue;
                    }
                    buf.clear();
                    heads += 1;
                    if heads > 1 {
                        return;
                    }
                    seen.lock().unwrap().1 += 1;
                    let answer =
                        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok";
                    let _ = stream.write_all(answer.as_bytes());
                }
            });
        }
    });
    (port, counts)
}

/// With `keepalive`, a failure on a cached connection is given a try back by NGINX: it goes
/// to the same endpoint of the list (a new connection), as round robin's one server, not
/// past the list's end (502 "no live upstreams").
#[test]
fn a_stale_keepalive_connection_retries_the_same_endpoint() {
    let (port, counts) = one_answer_per_connection();
    let endpoint = format!("127.0.0.1:{port}");
    let fake = Fake::start("epp-endpoints-stale", &endpoint);
    let conf = format!(
        r#"
    upstream one {{
        http_matches_epp_endpoints;
        server {endpoint};
        keepalive 2;
    }}
    server {{
        listen 127.0.0.1:{{PORT}};
        {keep}
    }}
"#,
        keep = keep(&fake.addr, "one"),
    );
    let n = Nginx::start("epp-endpoints-stale", &conf, &[]);
    for _ in 0..3 {
        let r = n.get("/keep", &[("X-Fake-Epp-Endpoint", &endpoint)]);
        assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    }
    // The 2nd and 3rd requests each met a stale connection, then a new one.
    assert_eq!(*counts.lock().unwrap(), (3, 3));
    let log = n.error_log();
    assert_eq!(log.matches("prematurely closed").count(), 2, "{log}");
}

#[test]
fn a_host_outside_the_block_is_never_contacted() {
    let s = setup("epp-endpoints-outside");
    let outside = Server::echo();
    // Outside, then b: b only, every time (round robin would alternate a and b).
    for _ in 0..2 {
        let r = grpc(&s, &format!("{},{}", outside.endpoint(), s.b.endpoint()));
        assert_eq!((r.status, who(&s)), (200, (0, 1)), "{r:?}");
    }
    // Only outside: the block's round robin answers (a or b; the dead server is passed over
    // by proxy_next_upstream error).
    for _ in 0..3 {
        let r = grpc(&s, &outside.endpoint());
        assert_eq!(r.status, 200, "{r:?}");
        let (a, b) = who(&s);
        assert_eq!(a + b, 1);
    }
    s.shim.set_mode(Mode::Endpoint(outside.endpoint()));
    assert_eq!(s.n.get("/shim", &[]).status, 200);
    let (a, b) = who(&s);
    assert_eq!(a + b, 1);
    assert_eq!(outside.total(), 0);
    let log = s.n.error_log();
    let refused = format!("{} is not a server of the block", outside.endpoint());
    // A stale view of the pool is the EPP's, logged once per request: [warn], not [error].
    assert_eq!(lines(&log, "[warn]", &refused), 6, "{log}");
    assert_eq!(lines(&log, "[warn]", "; round robin"), 4, "{log}");
    assert_eq!(errors(&log, "http_matches_epp_endpoints"), 0, "{log}");
}

#[test]
fn no_list_is_round_robin() {
    let s = setup("epp-endpoints-empty");
    // The EPP names no endpoint (shim) / an empty one (grpc://).
    let r = s.n.get("/shim", &[]);
    assert_eq!(r.status, 200, "{r:?}\n{}", s.n.error_log());
    let (a, b) = who(&s);
    assert_eq!(a + b, 1);
    let r = grpc(&s, "");
    assert_eq!(r.status, 200, "{r:?}\n{}", s.n.error_log());
    let (a, b) = who(&s);
    assert_eq!(a + b, 1);
    // No list is normal under a FailOpen picker's load shedding: http_matches_epp already
    // logged the call's [error]; the balancer's round robin is an [info] line, no [warn].
    let log = s.n.error_log();
    let rr = "no endpoint list from the EndpointPicker; round robin";
    assert_eq!(lines(&log, "[info]", rr), 2, "{log}");
    assert_eq!(lines(&log, "[warn]", "http_matches_epp_endpoints"), 0, "{log}");
}

/// A grpc:// call evaluates only `$epp_internal_path`: the shim's `$epp_host` / `$epp_port`
/// (declared by the server's shim location, unset here) are not read, so no "using
/// uninitialized variable" `[warn]` per request.
#[test]
fn a_grpc_call_reads_none_of_the_shims_variables() {
    let s = setup("epp-endpoints-grpc-vars");
    let r = grpc(&s, &s.b.endpoint());
    assert_eq!((r.status, who(&s)), (200, (0, 1)), "{r:?}");
    let log = s.n.error_log();
    assert_eq!(lines(&log, "[warn]", "using uninitialized"), 0, "{log}");
}

/// The work per request is bounded by the block's size, not the list's: a list of n and of
/// 2n addresses outside the pool are read up to the block's 3 addresses + 4 (7 refused,
/// then "more than 7 elements"), and round robin answers.
#[test]
fn a_long_list_is_read_up_to_the_blocks_size() {
    let s = setup("epp-endpoints-long");
    for n in [500, 1000] {
        let list: Vec<String> =
            (0..n).map(|i| format!("10.9.{}.{}:80", i / 250, i % 250)).collect();
        s.shim.set_mode(Mode::Endpoint(list.join(",")));
        let r = s.n.get("/shim", &[]);
        assert_eq!(r.status, 200, "{r:?}\n{}", s.n.error_log());
        let (a, b) = who(&s);
        assert_eq!(a + b, 1);
    }
    let log = s.n.error_log();
    let line = "10.9.0.0:80 is not a server of the block (and 7 more); round robin";
    assert_eq!(lines(&log, "[warn]", line), 2, "{log}");
}

#[test]
fn the_directive_stands_only_in_an_upstream_block_before_keepalive() {
    for (body, why) in [
        (
            "server { listen 127.0.0.1:{PORT}; http_matches_epp_endpoints; }",
            "\"http_matches_epp_endpoints\" directive is not allowed here",
        ),
        (
            "server { listen 127.0.0.1:{PORT}; location / { http_matches_epp_endpoints; } }",
            "\"http_matches_epp_endpoints\" directive is not allowed here",
        ),
        (
            "upstream u { server 127.0.0.1:1; keepalive 2; http_matches_epp_endpoints; }",
            "http_matches_epp_endpoints must come before keepalive",
        ),
        (
            "upstream u { http_matches_epp_endpoints; server 127.0.0.1:1; hash $uri; }",
            "a later load balancing method in upstream \"u\" replaced it",
        ),
        (
            "upstream u { http_matches_epp_endpoints; http_matches_epp_endpoints; server 127.0.0.1:1; }",
            "\"http_matches_epp_endpoints\" directive is duplicate",
        ),
        (
            "upstream u { http_matches_epp_endpoints; server unix:/tmp/x.sock; }",
            "no server of the block is an ip:port address that is up",
        ),
    ] {
        let (ok, out) = common::Prefix::new("epp-endpoints-conf", body, &[]).test();
        assert!(!ok, "{body}: {out}");
        assert!(out.contains("[emerg]") && out.contains(why), "{body}: {out}");
        assert!(out.contains("nginx.conf:"), "file:line: {out}");
    }
    // `server ... resolve` (NGINX 1.27.3): its addresses change at run time.
    if common::nginx_version() >= (1, 27, 3) {
        let body = "resolver 127.0.0.1:1; upstream u { zone u 64k; http_matches_epp_endpoints; \
                    server 127.0.0.1:1; server localhost:2 resolve; }";
        let (ok, out) = common::Prefix::new("epp-endpoints-resolve", body, &[]).test();
        assert!(!ok && out.contains("a server with \"resolve\" is not supported"), "{out}");
    }
    let body = "upstream u { http_matches_epp_endpoints; server 127.0.0.1:1; server [::1]:2; }";
    let (ok, out) = common::Prefix::new("epp-endpoints-ok", body, &[]).test();
    assert!(ok, "{out}");
}
