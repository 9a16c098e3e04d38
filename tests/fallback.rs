//! `http_matches_fallback` in a real NGINX: a request that no entry wins continues in the
//! server the directive names (same URI and query, byte for byte), `internal` locations of the
//! target stay internal, chains work, the name is looked up as NGINX looks up a host on the
//! socket the request came in on (and the configuration check agrees with NGINX's own
//! lookup), and `nginx -t` refuses the server itself on any socket, cycles, chains of more
//! than 128 servers and names that are not host names.

mod common;

use common::{Nginx, Prefix, Resp};

/// A request with its own `Host` (the harness's `get` always says `localhost`).
fn host_get(n: &Nginx, host: &str, target: &str, headers: &[(&str, &str)]) -> Resp {
    host_get_on(n.port(), host, target, headers)
}

/// As [`host_get`], on `port`.
fn host_get_on(port: u16, host: &str, target: &str, headers: &[(&str, &str)]) -> Resp {
    use std::io::{Read, Write};
    let mut r = format!("GET {target} HTTP/1.0\r\nHost: {host}\r\n");
    for (name, value) in headers {
        r.push_str(&format!("{name}: {value}\r\n"));
    }
    r.push_str("\r\n");
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(common::patience())).expect("timeout");
    s.write_all(r.as_bytes()).expect("send");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Resp { status, head: head.to_owned(), body: body.to_owned() }
}

/// The `server_name ""` server comes first, so it is also the default server of the port: a
/// request for a host no server names reaches it directly, to compare with a fallback.
const DEFAULT_SERVER: &str = r#"
    server {
      listen 127.0.0.1:{PORT};
      server_name "";
      error_page 404 /custom404;
      location = /custom404 { internal; return 404 "default-404\n"; }
      location /_httproute-internal/ { internal; return 200 "default-internal uri=$uri args=$args\n"; }
      location /x/ { return 200 "default-x uri=$uri args=$args request_uri=$request_uri\n"; }
      location = /fb { return 200 "fb=$matches_fallback\n"; }
      location /z { return 200 "default-z uri=$uri args=$args request_uri=$request_uri entry=$matches_entry\n"; }
      location = /inlist { http_matches '[{"headers":["x-in:Exact:1"],"redirectPath":"/_httproute-internal/3"}]'; }
      location / { return 200 "default-root uri=$uri args=$args request_uri=$request_uri\n"; }
    }
"#;

fn a_test(fallback: &str) -> String {
    format!(
        r#"
    server {{
      listen 127.0.0.1:{{PORT}};
      server_name a.test;
      error_log logs/debug.log debug;
      http_matches_fallback {fallback};
      location /t/ {{ internal; return 200 "a-target uri=$uri args=$args entry=$matches_entry\n"; }}
      location /list {{ http_matches '[{{"headers":["x-a:Exact:1"],"redirectPath":"/t/a"}}]'; }}
      location /inlist {{ http_matches '[{{"headers":["x-a:Exact:1"],"redirectPath":"/t/a"}}]'; }}
      location / {{ http_matches "[]"; }}
    }}
"#
    )
}

#[test]
fn no_winner_falls_back_to_the_named_server() {
    let body = format!("{DEFAULT_SERVER}{}", a_test("\"\""));
    let n = Nginx::start("fallback", &body, &[]);
    // A winner in a.test still redirects there, with the query string.
    let r = host_get(&n, "a.test", "/list?q=1", &[("x-a", "1")]);
    assert_eq!(r.body, "a-target uri=/t/a args=q=1 entry=0\n", "{r:?}");
    // No winner in /list: the default server answers, from the location the URI selects there.
    let r = host_get(&n, "a.test", "/list?q=1", &[]);
    assert_eq!(r.body, "default-root uri=/list args=q=1 request_uri=/list?q=1\n", "{r:?}");
    // The catch-all `http_matches "[]"` falls back too, and $matches_entry stays unset.
    let r = host_get(&n, "a.test", "/zz?k=v", &[]);
    assert_eq!(r.body, "default-z uri=/zz args=k=v request_uri=/zz?k=v entry=\n", "{r:?}");
    let r = host_get(&n, "A.Test", "/x/1", &[]);
    assert_eq!(r.body, "default-x uri=/x/1 args= request_uri=/x/1\n", "{r:?}");
    // The URI and the query reach the target as that server would have seen them itself.
    for target in ["/x%2Fy/../z?a=%41&b&&c=", "/x/%7e%20?%FF=%00&&+", "/list/../z?"] {
        let fell = host_get(&n, "a.test", target, &[]);
        let direct = host_get(&n, "other.test", target, &[]);
        assert_eq!(fell.status, 200, "{target}: {fell:?}");
        assert_eq!(fell.body, direct.body, "{target}: a fallback is not what the server sees");
        let query = target.split_once('?').map_or("", |(_, q)| q);
        assert!(fell.body.contains(&format!(" args={query} ")), "{target}: {fell:?}");
        assert!(fell.body.contains(&format!(" request_uri={target}")), "{target}: {fell:?}");
    }
    let r = host_get(&n, "a.test", "/x%2Fy/../z?a=%41&b&&c=", &[]);
    // (NGINX decodes %2F before it resolves "..": the URI is /x/z, a /x/ location answers.)
    assert!(r.body.starts_with("default-x uri=/x/z args=a=%41&b&&c= "), "{r:?}");
    if common::nginx_has_debug() {
        let debug =
            std::fs::read_to_string(n.prefix.dir.join("logs/debug.log")).unwrap_or_default();
        for want in [
            "http_matches: inline list: none of 1 entries matches, falls back to the server \"\" \
             (http_matches_fallback in ",
            "http_matches: inline list: it is empty, falls back to the server \"\" \
             (http_matches_fallback in ",
        ] {
            assert!(debug.contains(want), "{want}\n{debug}");
        }
    }
    n.finish();
}

#[test]
fn internal_locations_of_the_target_stay_internal() {
    let body = format!("{DEFAULT_SERVER}{}", a_test("\"\""));
    let n = Nginx::start("fallback-internal", &body, &[]);
    // A client URI naming the target's internal location: the fallback does not open it.
    for target in ["/_httproute-internal/3", "/_httproute-internal/3?x=1", "/_httproute-internal/"]
    {
        let r = host_get(&n, "a.test", target, &[]);
        assert_eq!(r.status, 404, "{target}: {r:?}");
        assert_eq!(r.body, "default-404\n", "{target}: the target's error_page: {r:?}");
        assert!(!r.body.contains("internal"), "{target}: {r:?}");
    }
    // Directly, of course, neither.
    assert_eq!(host_get(&n, "other.test", "/_httproute-internal/3", &[]).status, 404);
    // An internal redirect by the target's own list still reaches it.
    let r = host_get(&n, "a.test", "/inlist?k=1", &[("x-in", "1")]);
    assert_eq!(r.body, "default-internal uri=/_httproute-internal/3 args=k=1\n", "{r:?}");
    // ...which is the target's list, not a.test's: a.test's winner stays a.test's.
    let r = host_get(&n, "a.test", "/inlist?k=1", &[("x-a", "1")]);
    assert_eq!(r.body, "a-target uri=/t/a args=k=1 entry=0\n", "{r:?}");
    // No winner in the target either: its 404, through its error_page.
    let r = host_get(&n, "a.test", "/inlist", &[]);
    assert_eq!((r.status, r.body.as_str()), (404, "default-404\n"), "{r:?}");
    n.finish();
}

/// A list reached by an internal redirect (`try_files ... @name`, `error_page`) runs with
/// NGINX's `internal` flag set while the URI is still the client's: its fallback is the
/// client's request all the same, the target's `internal` locations out of reach.
#[test]
fn a_fallback_after_an_internal_redirect_is_still_the_clients() {
    let c_test = r#"
    server {
      listen 127.0.0.1:{PORT};
      server_name c.test;
      http_matches_fallback "";
      error_page 418 = @m;
      location /e/ { return 418; }
      location / { try_files /nonexistent @m; }
      location @m { http_matches "[]"; }
    }
"#;
    let body = format!("{DEFAULT_SERVER}{c_test}");
    let n = Nginx::start("fallback-after-redirect", &body, &[]);
    for target in
        ["/_httproute-internal/0", "/ep/../_httproute-internal/0", "/e/../_httproute-internal/3"]
    {
        let r = host_get(&n, "c.test", target, &[]);
        assert_eq!((r.status, r.body.as_str()), (404, "default-404\n"), "{target}: {r:?}");
    }
    // The fallback itself works from there: the URI selects the target's location.
    let r = host_get(&n, "c.test", "/x/1?q", &[]);
    assert_eq!(r.body, "default-x uri=/x/1 args=q request_uri=/x/1?q\n", "{r:?}");
    let r = host_get(&n, "c.test", "/e/2", &[]);
    assert_eq!(r.body, "default-root uri=/e/2 args= request_uri=/e/2\n", "{r:?}");
    n.finish();
}

/// The target's server-level `return`, `rewrite` and `if` apply, as to a request it received:
/// a server that refuses everything refuses a fallback too (it does not fall to its static
/// files).
#[test]
fn the_targets_server_level_rewrites_apply() {
    let body = r#"
    server {
      listen 127.0.0.1:{PORT};
      server_name "";
      return 403;
    }
    server {
      listen 127.0.0.1:{PORT};
      server_name b.test;
      http_matches_fallback "";
      location / { http_matches "[]"; }
    }
"#;
    let n = Nginx::start("fallback-server-return", body, &[]);
    std::fs::create_dir_all(n.prefix.dir.join("html")).unwrap();
    std::fs::write(n.prefix.dir.join("html/secret.txt"), "SECRET\n").unwrap();
    for host in ["b.test", "other.test"] {
        let r = host_get(&n, host, "/secret.txt", &[]);
        assert_eq!(r.status, 403, "{host}: {r:?}");
        assert!(!r.body.contains("SECRET"), "{host}: {r:?}");
    }
    n.finish();
}

#[test]
fn a_chain_of_fallbacks_is_followed() {
    let wildcard = r#"
    server {
      listen 127.0.0.1:{PORT};
      server_name *.test;
      http_matches_fallback "";
      if ($http_x_block) { return 421; }
      location /t/ { internal; return 200 "wild-target uri=$uri args=$args\n"; }
      location /list { return 200 "wild-list\n"; }
      location / { http_matches '[{"headers":["x-w:Exact:1"],"redirectPath":"/t/w"}]'; }
    }
"#;
    let body = format!("{DEFAULT_SERVER}{}{wildcard}", a_test("*.TEST"));
    let n = Nginx::start("fallback-chain", &body, &[]);
    // a.test -> *.test: its winner.
    let r = host_get(&n, "a.test", "/w?q=%20", &[("x-w", "1")]);
    assert_eq!(r.body, "wild-target uri=/t/w args=q=%20\n", "{r:?}");
    // a.test -> *.test -> "": the URI selects /list's neighbour in each server.
    let r = host_get(&n, "a.test", "/zq?q=%20", &[]);
    assert_eq!(r.body, "default-z uri=/zq args=q=%20 request_uri=/zq?q=%20 entry=\n", "{r:?}");
    // /list in *.test is a plain location: the fallback runs its location lookup.
    let r = host_get(&n, "a.test", "/list", &[]);
    assert_eq!(r.body, "wild-list\n", "{r:?}");
    // b.test reaches *.test directly, and falls back to "" from there.
    let r = host_get(&n, "b.test", "/x/y", &[]);
    assert_eq!(r.body, "default-x uri=/x/y args= request_uri=/x/y\n", "{r:?}");
    // $matches_fallback: the servers a request fell back through.
    assert_eq!(host_get(&n, "a.test", "/fb", &[]).body, "fb=2\n");
    assert_eq!(host_get(&n, "b.test", "/fb", &[]).body, "fb=1\n");
    assert_eq!(host_get(&n, "other.org", "/fb", &[]).body, "fb=\n");
    // The target's server-level rewrites apply, as to a request it receives: *.test's `if`
    // answers 421 to both, and $matches_fallback tells them apart.
    assert_eq!(host_get(&n, "b.test", "/list", &[("x-block", "1")]).status, 421);
    assert_eq!(host_get(&n, "a.test", "/list", &[("x-block", "1")]).status, 421);
    n.finish();
}

/// A server on two sockets falls back to each socket's own server: the one NGINX picks for
/// the name there (the first of two `""` servers on the first port, the wildcard only the
/// second port has).
#[test]
fn each_socket_falls_back_to_its_own_server() {
    let ports = common::free_ports(2);
    let other = ports[1];
    let body = format!(
        r#"
    server {{
      listen 127.0.0.1:{{PORT}};
      server_name "";
      location / {{ return 200 "one-port\n"; }}
    }}
    server {{
      listen 127.0.0.1:{{PORT}};
      listen 127.0.0.1:{other};
      server_name "";
      location / {{ return 200 "both-ports uri=$uri\n"; }}
    }}
    server {{
      listen 127.0.0.1:{other};
      server_name *.test;
      location / {{ return 200 "wild-second uri=$uri\n"; }}
    }}
    server {{
      listen 127.0.0.1:{{PORT}};
      listen 127.0.0.1:{other};
      server_name a.test;
      http_matches_fallback "";
      location / {{ http_matches "[]"; }}
    }}
    server {{
      listen 127.0.0.1:{{PORT}};
      listen 127.0.0.1:{other};
      server_name x.test;
      http_matches_fallback *.test;
      location / {{ http_matches "[]"; }}
    }}
"#
    );
    let p = Prefix::new_on("fallback-sockets", &body, &[], ports[0]);
    let (ok, out) = p.test();
    assert!(ok, "{out}");
    let n = p.start();
    let want = [
        (ports[0], "a.test", "one-port\n"),
        (other, "a.test", "both-ports uri=/q\n"),
        (ports[0], "x.test", "one-port\n"),
        (other, "x.test", "wild-second uri=/q\n"),
    ];
    for (port, host, body) in want {
        let r = host_get_on(port, host, "/q", &[]);
        assert_eq!((r.status, r.body.as_str()), (200, body), "{host} on {port}: {r:?}");
    }
    n.finish();
}

/// A subrequest falls back on its main request's socket (its own `http_connection` is null):
/// SSI's `include virtual` and `mirror` reach the default server's answer.
#[test]
fn a_subrequest_falls_back_too() {
    let body = format!(
        "{DEFAULT_SERVER}{}",
        r#"
    server {
      listen 127.0.0.1:{PORT};
      server_name a.test;
      http_matches_fallback "";
      location / { http_matches "[]"; }
      location = /page {
        ssi on; ssi_types *; default_type text/plain;
        return 200 '[<!--# include virtual="/x/inc?s=1" -->]\n';
      }
    }
"#
    );
    let n = Nginx::start("fallback-subrequest", &body, &[]);
    let r = host_get(&n, "a.test", "/page", &[]);
    assert_eq!(
        (r.status, r.body.as_str()),
        (200, "[default-x uri=/x/inc args=s=1 request_uri=/page\n]\n"),
        "{r:?}\n{}",
        n.error_log()
    );
    assert!(!n.error_log().contains("[error]"), "{}", n.error_log());
    n.finish();
}

/// `curl -k` https://SNI:PORT/PATH: the status and body.
fn https_get(port: u16, sni: &str, path: &str) -> (u16, String) {
    let out = std::process::Command::new("curl")
        .args(["-sk", "--max-time", &common::patience().as_secs().to_string()])
        .args(["-w", "\n%{http_code}", "--resolve"])
        .arg(format!("{sni}:{port}:127.0.0.1"))
        .arg(format!("https://{sni}:{port}{path}"))
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// A fallback does not enter a server that verifies client certificates on a TLS
/// connection: 421, as NGINX answers a `Host` of such a server on a connection negotiated for
/// another name (the handshake, and the certificate check, were the source server's).
#[test]
fn a_fallback_does_not_enter_a_server_that_verifies_clients() {
    let (crt, key) = common::self_signed("test", "*.test");
    let (crt, key) = (crt.display(), key.display());
    let body = format!(
        r#"
    ssl_certificate {crt};
    ssl_certificate_key {key};
    server {{
      listen 127.0.0.1:{{PORT}} ssl;
      server_name "";
      location / {{ return 200 "default\n"; }}
    }}
    server {{
      listen 127.0.0.1:{{PORT}} ssl;
      server_name b.test;
      ssl_verify_client on;
      ssl_client_certificate {crt};
      location / {{ return 200 "b-secret\n"; }}
    }}
    server {{
      listen 127.0.0.1:{{PORT}} ssl;
      server_name a.test;
      http_matches_fallback b.test;
      location / {{ http_matches "[]"; }}
    }}
    server {{
      listen 127.0.0.1:{{PORT}} ssl;
      server_name c.test;
      http_matches_fallback "";
      location / {{ http_matches "[]"; }}
    }}
"#
    );
    let n = Nginx::start("fallback-verify", &body, &[]);
    let port = n.port();
    // NGINX's own: b.test asks for a certificate, none is sent.
    assert_eq!(https_get(port, "b.test", "/q").0, 400);
    let (status, body) = https_get(port, "a.test", "/q");
    assert_eq!(status, 421, "{body}");
    assert!(!body.contains("b-secret"), "{body}");
    assert!(n.error_log().contains("reaches a server that verifies client certificates"));
    // A fallback to a server that does not verify goes on over TLS.
    assert_eq!(https_get(port, "c.test", "/q"), (200, "default\n".to_owned()));
    n.finish();
}

/// A small deterministic generator (xorshift64*), so a failing case can be replayed by seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

/// A host name of 1 to 3 labels of `a`, `b`, `c` under `t` (so names nest and collide).
fn random_host(rng: &mut Rng) -> String {
    let mut h = "t".to_owned();
    for _ in 0..=rng.below(3) {
        h = format!("{}.{h}", ["a", "b", "c"][rng.below(3)]);
    }
    h
}

/// The lookup at request time is NGINX's own, and the configuration check agrees with it
/// (a target it did not see answers 500): on random servers of exact, `*.` and `.` names
/// that nest and conflict (NGINX keeps the first), with or without a `default_server`, the
/// server a fallback to NAME reaches answers as a request with `Host: NAME` does.
/// `FALLBACK_CASES` configurations (8), each of 12 sockets with 6 fallbacks.
#[test]
fn a_fallback_reaches_the_server_a_host_of_its_name_reaches() {
    let cases: u64 = std::env::var("FALLBACK_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    const SOCKETS: usize = 12;
    const SOURCES: usize = 6;
    let mut compared = 0;
    for case in 0..cases {
        let seed = 0x9e37_79b9_7f4a_7c15 ^ (case + 1);
        let mut rng = Rng(seed);
        let ports = common::free_ports(SOCKETS);
        let mut body = String::new();
        let mut asks: Vec<(u16, usize, String)> = Vec::new();
        for (u, &port) in ports.iter().enumerate() {
            let servers = 2 + rng.below(6);
            let default = rng.below(servers + 2);
            for i in 0..servers {
                let names: Vec<String> = (0..=rng.below(3))
                    .map(|_| match rng.below(10) {
                        0 => "\"\"".to_owned(),
                        1..=5 => random_host(&mut rng),
                        6 | 7 => format!("*.{}", random_host(&mut rng)),
                        _ => format!(".{}", random_host(&mut rng)),
                    })
                    .collect();
                let flag = if i == default { " default_server" } else { "" };
                body.push_str(&format!(
                    "server {{ listen 127.0.0.1:{port}{flag}; server_name {}; \
                     location / {{ return 200 \"u{u}s{i}\\n\"; }} }}\n",
                    names.join(" ")
                ));
            }
            for j in 0..SOURCES {
                let name = match rng.below(3) {
                    0 => format!("*.{}", random_host(&mut rng)),
                    _ => random_host(&mut rng),
                };
                body.push_str(&format!(
                    "server {{ listen 127.0.0.1:{port}; server_name src{j}.fallback; \
                     http_matches_fallback {name}; location / {{ http_matches \"[]\"; }} }}\n"
                ));
                asks.push((port, j, name));
            }
        }
        let p = Prefix::new_on(&format!("fallback-differential-{case}"), &body, &[], ports[0]);
        let (ok, out) = p.test();
        assert!(ok, "seed {seed:#x}: nginx -t:\n{out}");
        let n = p.start();
        for (port, j, name) in &asks {
            let fell = host_get_on(*port, &format!("src{j}.fallback"), "/q", &[]);
            let direct = host_get_on(*port, name, "/q", &[]);
            assert_eq!(
                (fell.status, &fell.body),
                (200, &direct.body),
                "seed {seed:#x}, port {port}, fallback {name}:\n{}",
                n.error_log()
            );
            compared += 1;
        }
        n.finish();
    }
    assert_eq!(compared, cases as usize * SOCKETS * SOURCES);
}

#[test]
fn without_the_directive_no_winner_is_a_404_through_error_page() {
    let body = r#"
    server {
      listen 127.0.0.1:{PORT};
      server_name "";
      location / { return 200 "default-root\n"; }
    }
    server {
      listen 127.0.0.1:{PORT};
      server_name a.test;
      error_page 404 /custom404;
      location = /custom404 { internal; return 404 "a-404\n"; }
      location /t/ { internal; return 200 "a-target uri=$uri\n"; }
      location /list { http_matches '[{"headers":["x-a:Exact:1"],"redirectPath":"/t/a"}]'; }
      location / { http_matches "[]"; }
    }
"#;
    let n = Nginx::start("fallback-none", body, &[]);
    for target in ["/list", "/other?q=1"] {
        let r = host_get(&n, "a.test", target, &[]);
        assert_eq!((r.status, r.body.as_str()), (404, "a-404\n"), "{target}: {r:?}");
    }
    assert_eq!(host_get(&n, "a.test", "/list", &[("x-a", "1")]).body, "a-target uri=/t/a\n");
    n.finish();
}

// ---- nginx -t ----------------------------------------------------------------------------

/// Line of the first line containing `needle` in the generated nginx.conf (1-based).
fn line_of(p: &Prefix, needle: &str) -> usize {
    let conf = std::fs::read_to_string(p.dir.join("conf/nginx.conf")).unwrap_or_default();
    conf.lines().position(|l| l.contains(needle)).map(|i| i + 1).expect("needle in conf")
}

/// `nginx -t` of `body` fails with one `[emerg]` `message` at the line that contains `needle`.
fn refused(name: &str, body: &str, needle: &str, message: &str) {
    let p = Prefix::new(name, body, &[]);
    let (ok, out) = p.test();
    assert!(!ok, "{name}: nginx -t passed:\n{out}");
    let message = message.replace("{PORT}", &p.port.to_string());
    let want = format!("{message} in {}/conf/nginx.conf:{}", p.dir.display(), line_of(&p, needle));
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("[emerg] ")).collect();
    assert!(lines.iter().any(|l| l.ends_with(&want)), "{name}: want {want}\n{out}");
    assert_eq!(lines.len(), 1, "{name}: one [emerg]:\n{out}");
}

fn server(listen: &str, name: &str, extra: &str) -> String {
    format!(
        "server {{ {listen} server_name {name}; {extra}\n location / {{ http_matches \"[]\"; }} }}\n"
    )
}

/// The name is looked up as NGINX looks up a `Host` header: a name no server has goes to the
/// longest wildcard server that covers it, else to the default server (the generator names
/// `*.b.test` from `x.b.test` whether or not a route brings that wildcard).
#[test]
fn a_name_is_looked_up_as_nginx_looks_up_a_host() {
    let body = format!(
        "{DEFAULT_SERVER}{}{}{}",
        r#"
    server {
      listen 127.0.0.1:{PORT};
      server_name *.test;
      location / { return 200 "wild uri=$uri\n"; }
    }
"#,
        server("listen 127.0.0.1:{PORT};", "x.b.test", "\n http_matches_fallback *.b.test;"),
        server("listen 127.0.0.1:{PORT};", "y.other", "\n http_matches_fallback nope.other;"),
    );
    let n = Nginx::start("fallback-lookup", &body, &[]);
    let r = host_get(&n, "x.b.test", "/q", &[]);
    assert_eq!(r.body, "wild uri=/q\n", "{r:?}");
    let r = host_get(&n, "y.other", "/q", &[]);
    assert_eq!(r.body, "default-root uri=/q args= request_uri=/q\n", "{r:?}");
    n.finish();
}

#[test]
fn nginx_t_refuses_the_server_itself() {
    let listen = "listen 127.0.0.1:{PORT};";
    let body = format!(
        "{}{}",
        server(listen, "\"\"", ""),
        server(listen, "a.test alias.test", "\n http_matches_fallback ALIAS.test;")
    );
    refused(
        "t-self",
        &body,
        "http_matches_fallback ALIAS.test",
        "http_matches_fallback: \"ALIAS.test\" names this server itself on 127.0.0.1:{PORT}",
    );
}

#[test]
fn nginx_t_refuses_a_cycle() {
    let listen = "listen 127.0.0.1:{PORT};";
    // A -> B -> A, with C leading into it (said once, at A's directive).
    let body = format!(
        "{}{}{}{}",
        server(listen, "\"\"", ""),
        server(listen, "a.test", "\n http_matches_fallback b.test;"),
        server(listen, "b.test", "\n http_matches_fallback a.test;"),
        server(listen, "c.test", "\n http_matches_fallback a.test;"),
    );
    refused(
        "t-cycle",
        &body,
        "http_matches_fallback b.test",
        "http_matches_fallback: the fallbacks form a cycle: \"a.test\" -> \"b.test\" -> \"a.test\"",
    );
    // Longer: A -> B -> C -> A.
    let body = format!(
        "{}{}{}{}",
        server(listen, "\"\"", ""),
        server(listen, "a.test", "\n http_matches_fallback b.test;"),
        server(listen, "b.test", "\n http_matches_fallback c.test;"),
        server(listen, "c.test", "\n http_matches_fallback a.test;"),
    );
    refused(
        "t-cycle3",
        &body,
        "http_matches_fallback b.test",
        "http_matches_fallback: the fallbacks form a cycle: \"a.test\" -> \"b.test\" -> \
         \"c.test\" -> \"a.test\"",
    );
}

/// On a socket where the name finds no server, the socket's default server is the target:
/// here the source itself, the only server on the second port.
#[test]
fn nginx_t_refuses_a_server_that_is_its_own_fallback_on_one_socket() {
    let other = common::free_ports(1)[0];
    let body = format!(
        "{}{}",
        server("listen 127.0.0.1:{PORT};", "\"\"", ""),
        server(
            &format!("listen 127.0.0.1:{{PORT}}; listen 127.0.0.1:{other};"),
            "a.test",
            "\n http_matches_fallback \"\";"
        )
    );
    refused(
        "t-socket",
        &body,
        "http_matches_fallback \"\"",
        &format!("http_matches_fallback: \"\" names this server itself on 127.0.0.1:{other}"),
    );
}

#[test]
fn nginx_t_refuses_a_name_that_is_not_a_host() {
    let listen = "listen 127.0.0.1:{PORT};";
    for (i, name) in [".a.test", "a..test", "www.*", "\"~^a\"", "a.test."].iter().enumerate() {
        let body = format!(
            "{}{}",
            server(listen, "\"\"", ""),
            server(listen, "b.test", &format!("\n http_matches_fallback {name};"))
        );
        let shown = name.trim_matches('"');
        refused(
            &format!("t-name-{i}"),
            &body,
            &format!("http_matches_fallback {name}"),
            &format!(
                "http_matches_fallback: \"{shown}\" is not a host name, \"*.\" and a host name, \
                 or \"\""
            ),
        );
    }
}

#[test]
fn nginx_t_refuses_a_duplicate_and_a_wrong_context() {
    let listen = "listen 127.0.0.1:{PORT};";
    let body = format!(
        "{}{}",
        server(listen, "\"\"", ""),
        server(listen, "a.test", "http_matches_fallback \"\";\n http_matches_fallback x;")
    );
    refused(
        "t-duplicate",
        &body,
        "http_matches_fallback x",
        "\"http_matches_fallback\" directive is duplicate",
    );
    let body = format!("http_matches_fallback \"\";\n{}", server(listen, "\"\"", ""));
    refused(
        "t-context",
        &body,
        "http_matches_fallback",
        "\"http_matches_fallback\" directive is not allowed here",
    );
}

/// `urls` in one curl run (one connection, kept alive), `Host: host`: per transfer, its body
/// and "VERSION CODE NEW-CONNECTIONS".
fn curl_kept_alive(port: u16, http: &str, host: &str, urls: &[&str]) -> Vec<(String, String)> {
    let mut c = std::process::Command::new("curl");
    c.args(["-s", http, "-H", &format!("Host: {host}")]);
    c.args(["-w", "|%{http_version} %{http_code} %{num_connects}\n"]);
    for u in urls {
        c.arg(format!("http://127.0.0.1:{port}{u}"));
    }
    let out = c.output().expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "curl {http}: {:?} {text}", out.status);
    text.lines()
        .filter(|l| l.contains('|'))
        .map(|l| {
            let (body, tail) = l.rsplit_once('|').expect("curl's -w line");
            (body.to_owned(), tail.to_owned())
        })
        .collect()
}

#[test]
fn kept_alive_connections_and_http2_fall_back_too() {
    // HTTP/1.1 on the first port, h2c on the second: `http2 on` from NGINX 1.25.1; before, a
    // `listen` parameter (Debian 12's 1.22), which makes that port h2c only.
    let ports = common::free_ports(2);
    let h2_port = ports[1];
    let (listen_h2, http2_on) =
        if common::nginx_version() >= (1, 25, 1) { ("", "http2 on;") } else { (" http2", "") };
    let listen =
        format!("listen 127.0.0.1:{{PORT}}; listen 127.0.0.1:{h2_port}{listen_h2}; {http2_on}");
    let body = format!(
        r#"
    server {{
      {listen}
      server_name "";
      location / {{ return 200 "default uri=$uri args=$args"; }}
    }}
    server {{
      {listen}
      server_name a.test;
      http_matches_fallback "";
      location /t/ {{ internal; return 200 "a-target args=$args"; }}
      location / {{ http_matches '[{{"params":["w=Exact=1"],"redirectPath":"/t/w"}}]'; }}
    }}
"#
    );
    let p = Prefix::new_on("fallback-h2", &body, &[], ports[0]);
    let (ok, out) = p.test();
    assert!(ok, "{out}");
    let n = p.start();
    let urls = ["/one?x=%41", "/two?w=1", "/three?y&&z="];
    let want =
        ["default uri=/one args=x=%41", "a-target args=w=1", "default uri=/three args=y&&z="];
    let h2 = std::process::Command::new(common::nginx_binary()).arg("-V").output();
    let has_h2 = h2.is_ok_and(|o| String::from_utf8_lossy(&o.stderr).contains("http_v2_module"));
    let mut modes = vec![("--http1.1", "1.1", ports[0])];
    if has_h2 {
        modes.push(("--http2-prior-knowledge", "2", h2_port));
    }
    for (flag, version, port) in modes {
        // This curl (7.88) reuses an HTTP/2 prior-knowledge connection with a framing error
        // even where the module plays no part: one connection per request there.
        let runs: Vec<Vec<&str>> = if version == "2" {
            urls.iter().map(|u| vec![*u]).collect()
        } else {
            vec![urls.to_vec()]
        };
        let got: Vec<(String, String)> =
            runs.iter().flat_map(|run| curl_kept_alive(port, flag, "a.test", run)).collect();
        assert_eq!(got.len(), urls.len(), "{flag}: {got:?}");
        for (i, (body, tail)) in got.iter().enumerate() {
            assert_eq!(body, want[i], "{flag} {}", urls[i]);
            let connects = if i == 0 || version == "2" { 1 } else { 0 };
            assert_eq!(tail, &format!("{version} 200 {connects}"), "{flag} {}", urls[i]);
        }
    }
    n.finish();
}

/// A chain is a stack depth (each fallback runs the phases inside the one before): at most 128
/// servers from the first, itself and the last included; 127 fallbacks and the default pass.
#[test]
fn nginx_t_bounds_the_length_of_a_chain() {
    let listen = "listen 127.0.0.1:{PORT};";
    let chain = |k: usize| {
        let mut body = server(listen, "\"\"", "");
        for i in 0..k {
            let next = if i + 1 < k { format!("c{}.test", i + 1) } else { "\"\"".to_owned() };
            body += &server(
                listen,
                &format!("c{i}.test"),
                &format!("\n http_matches_fallback {next};"),
            );
        }
        body
    };
    let p = Prefix::new("t-chain-127", &chain(127), &[]);
    let (ok, out) = p.test();
    assert!(ok, "127 fallbacks: {out}");
    refused(
        "t-chain-128",
        &chain(128),
        "http_matches_fallback c1.test",
        "http_matches_fallback: a request may pass through 129 servers from \"c0.test\" (at most 128)",
    );
}

/// One regex budget per request (issue #46): a fallback hop gets what the hops before it left,
/// never a fresh budget. Each server's list has one regex condition on `x-v: zzz` (no literal
/// to skip it by); s1's does not match (its attempt is charged), s2's would. With a budget one
/// attempt fits in but two do not, s2's regex counts as not matched and the request falls
/// back on to s3; without the budget both servers' attempts fit and s2 wins.
#[test]
fn the_regex_budget_is_one_per_request_across_fallbacks() {
    let servers = |budget: &str| {
        format!(
            r#"
    server {{
      listen 127.0.0.1:{{PORT}};
      server_name s1.test;
      http_matches_regex_budget {budget};
      http_matches_fallback s2.test;
      location / {{ http_matches '[{{"headers":["x-v:RegularExpression:^(.)(?!\\\\1)"],"redirectPath":"/t/s1"}}]'; }}
    }}
    server {{
      listen 127.0.0.1:{{PORT}};
      server_name s2.test;
      http_matches_regex_budget {budget};
      http_matches_fallback s3.test;
      location /t/ {{ internal; return 200 "s2-target work=[$http_matches_work]\n"; }}
      location / {{ http_matches '[{{"headers":["x-v:RegularExpression:^(.)\\\\1"],"redirectPath":"/t/s2"}}]'; }}
    }}
    server {{
      listen 127.0.0.1:{{PORT}};
      server_name s3.test;
      location / {{ return 200 "s3 fb=$matches_fallback work=[$http_matches_work]\n"; }}
    }}
"#
        )
    };
    // Each hop's evaluation charges 5 units here ($http_matches_work of s2's: 1 attempt,
    // 2 steps, 5 units): 20 holds both hops, 8 only the first.
    for (budget, lands) in [("off", "s2-target"), ("20", "s2-target"), ("8", "s3 fb=2")] {
        let n = Nginx::start("fallback-budget", &servers(budget), &[]);
        let r = host_get(&n, "s1.test", "/a", &[("x-v", "zzz")]);
        assert!(r.body.starts_with(lands), "budget {budget}: {r:?}\n{}", n.error_log());
        // $http_matches_work is stored (its index found in the core module's `variables`).
        if lands == "s2-target" {
            assert_eq!(r.body, "s2-target work=[1/2/5]\n", "budget {budget}");
        }
        let spent = n.error_log().contains("regex budget of the request");
        assert_eq!(spent, budget == "8", "budget {budget}: {}", n.error_log());
        n.finish();
    }
}
